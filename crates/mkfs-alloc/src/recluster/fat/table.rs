//! A FAT12 or FAT16 table read and written entry by entry through one
//! window of 48 KiB: a whole number of FAT12 entry pairs (3 bytes each)
//! and of FAT16 entries, so no entry straddles a window. A FAT16 FAT is at
//! most 128 KiB, a FAT12 one 6 KiB (fatgen103 §4).

use mkfs_alloc_blockio::{BlockIo, IoError};

use mkfs_alloc_ondisk::fat::table as fat_table;
use mkfs_alloc_ondisk::FsKind;

use super::super::disk;
use super::super::groups::entries_by_own_methods;

/// Bytes of the window.
const WINDOW: u64 = 48 << 10;

/// One FAT of 12- or 16-bit entries at an absolute byte offset.
pub(super) struct Table {
    base: u64,
    bytes: u64,
    bits: u8,
    at: Option<u64>,
    buf: Vec<u8>,
    dirty: bool,
}

impl Table {
    /// The FAT of `bytes` bytes at absolute byte `base`, entries of `bits`
    /// (12 or 16) bits.
    pub(super) fn new(base: u64, bytes: u64, bits: u8) -> Self {
        Table {
            base,
            bytes,
            bits,
            at: None,
            buf: Vec::new(),
            dirty: false,
        }
    }

    /// End of chain as mkfs.fat writes it.
    pub(super) fn eoc(&self) -> u32 {
        if self.bits == 12 {
            0xFFF
        } else {
            0xFFFF
        }
    }

    /// The window holding entry `n` loaded; the entry's first byte in it.
    fn load<D: BlockIo + ?Sized>(&mut self, dev: &mut D, n: u32) -> Result<usize, IoError> {
        let pos = fat_table::entry_offset(self.kind(), u64::from(n));
        let win = pos / WINDOW * WINDOW;
        if self.at != Some(win) {
            self.write_back(dev)?;
            let len = WINDOW.min(self.bytes.saturating_sub(win));
            self.buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
            disk::read_at(dev, self.base + win, &mut self.buf)?;
            self.at = Some(win);
        }
        Ok(usize::try_from(pos - win).unwrap_or(usize::MAX))
    }

    /// Entry `n` (past the FAT's end: end of chain).
    pub(super) fn get<D: BlockIo + ?Sized>(&mut self, dev: &mut D, n: u32) -> Result<u32, IoError> {
        let i = self.load(dev, n)?;
        let kind = self.kind();
        Ok(self
            .buf
            .get(i..)
            .and_then(|b| fat_table::read_entry(kind, b, u64::from(n)))
            .unwrap_or(self.eoc()))
    }

    /// Sets entry `n` to `value` (kept in the window until another one is
    /// needed or [`Table::write_back`]).
    pub(super) fn set<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        n: u32,
        value: u32,
    ) -> Result<(), IoError> {
        let i = self.load(dev, n)?;
        let kind = self.kind();
        if let Some(b) = self.buf.get_mut(i..) {
            self.dirty |= fat_table::write_entry(kind, b, u64::from(n), value);
        }
        Ok(())
    }

    /// The width as its kind.
    fn kind(&self) -> FsKind {
        if self.bits == 12 {
            FsKind::Fat12
        } else {
            FsKind::Fat16
        }
    }

    /// Writes the window held, if changed.
    pub(super) fn write_back<D: BlockIo + ?Sized>(&mut self, dev: &mut D) -> Result<(), IoError> {
        if let (Some(win), true) = (self.at, self.dirty) {
            disk::write_at(dev, self.base + win, &self.buf)?;
            self.dirty = false;
        }
        Ok(())
    }
}

entries_by_own_methods!(Table);
entries_by_own_methods!(Table, write);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Table;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn fat12_entries_share_bytes_and_keep_their_neighbours() {
        let mut d = MemDisk::new(512, 32).unwrap();
        let mut t = Table::new(1024, 2048, 12);
        for n in 0..1300u32 {
            t.set(&mut d, n, (n * 7 + 3) & 0xFFF).unwrap();
        }
        t.write_back(&mut d).unwrap();
        let mut r = Table::new(1024, 2048, 12);
        for n in 0..1300u32 {
            assert_eq!(r.get(&mut d, n).unwrap(), (n * 7 + 3) & 0xFFF, "{n}");
        }
        // Entries 2 and 3: bytes 3, 4, 5 as fatgen103 §4 packs them.
        let b = &d.as_bytes()[1024 + 3..1024 + 6];
        let (two, three) = (17u32, 24u32);
        assert_eq!(u32::from(b[0]) | (u32::from(b[1] & 0x0F) << 8), two);
        assert_eq!(u32::from(b[1] >> 4) | (u32::from(b[2]) << 4), three);
    }

    #[test]
    fn fat16_entries_cross_windows() {
        let mut d = MemDisk::new(512, 512).unwrap();
        let mut t = Table::new(0, 128 << 10, 16);
        for n in (0..65_000u32).step_by(997) {
            t.set(&mut d, n, n ^ 0xA5A5).unwrap();
        }
        t.write_back(&mut d).unwrap();
        let mut r = Table::new(0, 128 << 10, 16);
        for n in (0..65_000u32).step_by(997) {
            assert_eq!(r.get(&mut d, n).unwrap(), (n ^ 0xA5A5) & 0xFFFF);
        }
        assert_eq!(r.get(&mut d, 1).unwrap(), 0);
    }
}
