//! [`PartitionGrow`]: one MBR or GPT entry made longer, into the free space
//! after it, or shorter, down to its volume's new end, with every write
//! ordered so that a cut leaves a valid table.
//!
//! ```text
//!  MBR  LBA 0: the entry's sector count and ending CHS (255/63, as
//!       `write_table` writes them): one block, one write.
//!  GPT  1. the backup array and header at the medium's end (moved there
//!          when the medium grew), flushed: the primary is still valid;
//!       2. the primary array, then the primary header (its backup LBA,
//!          last usable LBA, both CRCs), flushed: a cut between the two
//!          leaves the primary's array CRC wrong, and readers take the
//!          backup at the last LBA, which is the new table;
//!       3. the protective MBR's entry (from LBA 1) made to span the
//!          medium, flushed. (The old backup header, when it moved, is
//!          left where it was: inside the grown partition, in clusters the
//!          volume has free.)
//! ```
//!
//! A grow is written before its volume grows, a shrink after its volume
//! has shrunk ([`PartitionGrow::shrink_to`]): either way the volume fits
//! both the old and the new entry, so it stays valid whatever subset of the
//! writes survives (a shrink's GPT: the backup, written first, is already
//! the smaller table; the backup stays at the medium's end, which does not
//! move). Writing the same plan again writes the same bytes: a rerun of a
//! cut job reads the table it left and finishes.
//!
//! Sources: UEFI Specification 2.10, 5.2.1 (legacy MBR), 5.3.2 (GPT header:
//! the backup header is at the last LBA, its array just before it), 5.3.3.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::gpt::{crc32, GptEntry, GptHeader};
use mkfs_alloc_ondisk::mbr::{chs_address, Mbr, MBR_TYPE_PROTECTIVE};
use mkfs_alloc_ondisk::probe::table;
use zerocopy::{FromBytes, IntoBytes};

use crate::{PartitionError, TableKind, DEFAULT_ALIGN};

/// One partition's entry, read, and the size it is to have: planned by
/// [`PartitionGrow::read`] and [`PartitionGrow::set_new_bytes`], written by
/// [`PartitionGrow::write`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionGrow {
    kind: TableKind,
    number: u32,
    block_size: u32,
    start_lba: u64,
    old_blocks: u64,
    max_blocks: u64,
    new_blocks: u64,
    disk_blocks: u64,
    /// LBA 0 as read (the MBR or protective MBR).
    lba0: Vec<u8>,
    /// GPT: the primary header's block and the entry array as read.
    header: Vec<u8>,
    array: Vec<u8>,
    /// GPT: the primary is damaged and is rebuilt from the backup.
    repair: bool,
}

fn refuse(number: u32, reason: impl Into<String>) -> PartitionError {
    PartitionError::CannotGrow {
        number,
        reason: reason.into(),
    }
}

impl PartitionGrow {
    /// Reads partition `number` (1-based, as `fdisk` counts) of the MBR or
    /// GPT of `dev` in the device's block size, and the most it may grow
    /// to: up to the next partition, or the medium's end (for a GPT, before
    /// the backup array and header, moved to the medium's end), the end
    /// aligned down to 1 MiB. Reads only.
    ///
    /// # Errors
    ///
    /// [`PartitionError::CannotGrow`]: no MBR or valid primary GPT, no such
    /// partition, a table this crate does not change; or the read error.
    pub fn read<D: BlockIo + ?Sized>(dev: &mut D, number: u32) -> Result<Self, PartitionError> {
        let bs = dev.block_size();
        let bs64 = u64::from(bs);
        let disk_blocks = dev.num_blocks();
        let mut lba0 = vec![0u8; bs as usize];
        dev.read_blocks(0, &mut lba0)?;
        let Some(mbr) = table::mbr(&lba0) else {
            return Err(refuse(number, "the medium has no MBR or GPT"));
        };
        let align = (DEFAULT_ALIGN / bs64).max(1);
        let mut p = PartitionGrow {
            kind: TableKind::Mbr,
            number,
            block_size: bs,
            start_lba: 0,
            old_blocks: 0,
            max_blocks: 0,
            new_blocks: 0,
            disk_blocks,
            lba0: lba0.clone(),
            header: Vec::new(),
            array: Vec::new(),
            repair: false,
        };
        let (starts, end) = if table::is_protective(mbr) {
            p.kind = TableKind::Gpt;
            p.read_gpt(dev)?
        } else {
            let slot = usize::try_from(number.wrapping_sub(1)).unwrap_or(usize::MAX);
            let Some(e) = mbr.partitions.get(slot).filter(|e| table::holds_volume(e)) else {
                return Err(refuse(number, "no such partition in the MBR"));
            };
            p.start_lba = u64::from(e.starting_lba.get());
            p.old_blocks = u64::from(e.size_in_lba.get());
            let starts = mbr
                .partitions
                .iter()
                .filter(|e| e.os_type != 0 && e.size_in_lba.get() != 0)
                .map(|e| u64::from(e.starting_lba.get()))
                .collect::<Vec<_>>();
            (starts, disk_blocks.min(1 << 32))
        };
        let next = starts
            .into_iter()
            .filter(|&s| s > p.start_lba)
            .min()
            .unwrap_or(u64::MAX);
        let limit = next.min(end / align * align);
        if p.start_lba + p.old_blocks > end {
            return Err(refuse(number, "it runs past the end of the medium"));
        }
        p.max_blocks = limit.saturating_sub(p.start_lba).max(p.old_blocks);
        p.new_blocks = p.old_blocks;
        Ok(p)
    }

    /// The GPT part of [`PartitionGrow::read`]: the entry, the other
    /// partitions' starts and the end of the usable space (exclusive) with
    /// the backup at the medium's end.
    fn read_gpt<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
    ) -> Result<(Vec<u64>, u64), PartitionError> {
        let n = self.number;
        let last = self.disk_blocks.saturating_sub(1);
        let (mut h, header, array) = match read_header(dev, 1)? {
            Some(found) => found,
            // A cut between the primary's array and its header: the backup
            // at the last LBA is the table, the primary is rebuilt from it.
            None => match read_header(dev, last)? {
                Some((mut h, header, array)) => {
                    self.repair = true;
                    h.my_lba = 1.into();
                    h.alternate_lba = last.into();
                    h.partition_entry_lba = 2.into();
                    (h, header, array)
                }
                None => return Err(refuse(n, "neither GPT header (primary, backup) is valid")),
            },
        };
        let bs = u64::from(self.block_size);
        let array_blocks = array.len() as u64 / bs;
        let Some((entry_size, count)) = table::gpt_array(&h) else {
            return Err(refuse(n, "the GPT's entry array has a size not supported"));
        };
        let len = usize::try_from(entry_size * count).unwrap_or(0);
        let used = table::gpt_used_entries(&array[..len], entry_size).collect::<Vec<_>>();
        let Some((_, e)) = used.iter().find(|(slot, _)| *slot == n) else {
            return Err(refuse(n, "no such partition in the GPT"));
        };
        self.start_lba = e.starting_lba.get();
        self.old_blocks = (e.ending_lba.get() + 1).saturating_sub(self.start_lba);
        let starts = used.iter().map(|(_, e)| e.starting_lba.get()).collect();
        // The backup array and header at the medium's end.
        let end = self.disk_blocks.saturating_sub(1 + array_blocks);
        h.header_crc32 = 0.into();
        self.header = header;
        self.header[..h.as_bytes().len()].copy_from_slice(h.as_bytes());
        self.array = array;
        Ok((starts, end))
    }

    /// Asks for a partition of at least `bytes` bytes: rounded up so that
    /// its end is aligned to 1 MiB, within [`PartitionGrow::max_bytes`],
    /// never smaller than it is.
    ///
    /// # Errors
    ///
    /// [`PartitionError::CannotGrow`] when `bytes` is beyond the most.
    pub fn set_new_bytes(&mut self, bytes: u64) -> Result<(), PartitionError> {
        let bs = u64::from(self.block_size);
        if bytes > self.max_bytes() {
            return Err(refuse(
                self.number,
                format!(
                    "{bytes} bytes is beyond the most it can have ({} bytes, up to the next partition or the medium's end)",
                    self.max_bytes()
                ),
            ));
        }
        let align = (DEFAULT_ALIGN / bs).max(1);
        let end = (self.start_lba + bytes.div_ceil(bs)).next_multiple_of(align);
        let blocks = (end - self.start_lba).min(self.max_blocks);
        self.new_blocks = blocks.max(self.old_blocks);
        Ok(())
    }

    /// Asks for a partition that ends at the 1 MiB boundary at or after
    /// its first `bytes` bytes (the end of a volume shrunk to `bytes`),
    /// when that is shorter than it is; it is never made longer here, so
    /// a volume of at most `bytes` bytes fits the entry before and after
    /// [`PartitionGrow::write`].
    pub fn shrink_to(&mut self, bytes: u64) {
        let bs = u64::from(self.block_size);
        let align = (DEFAULT_ALIGN / bs).max(1);
        let end = (self.start_lba + bytes.div_ceil(bs)).next_multiple_of(align);
        self.new_blocks = (end - self.start_lba).min(self.old_blocks);
    }

    /// True when [`PartitionGrow::write`] makes the entry shorter.
    pub fn shrinks(&self) -> bool {
        self.new_blocks < self.old_blocks
    }

    /// GPT: the primary is damaged (a cut between its array and its
    /// header) and [`PartitionGrow::write`] rebuilds it from the backup.
    pub fn repairs(&self) -> bool {
        self.repair
    }

    /// The partition's sectors (blocks of the medium) now and after
    /// [`PartitionGrow::write`].
    pub fn sectors(&self) -> (u64, u64) {
        (self.old_blocks, self.new_blocks)
    }

    /// The table's kind.
    pub fn kind(&self) -> TableKind {
        self.kind
    }

    /// The partition's number (1-based).
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Byte offset of the partition.
    pub fn start_bytes(&self) -> u64 {
        self.start_lba * u64::from(self.block_size)
    }

    /// Bytes of the partition now.
    pub fn old_bytes(&self) -> u64 {
        self.old_blocks * u64::from(self.block_size)
    }

    /// Bytes of the partition after [`PartitionGrow::write`].
    pub fn new_bytes(&self) -> u64 {
        self.new_blocks * u64::from(self.block_size)
    }

    /// The most bytes the partition can have on this medium.
    pub fn max_bytes(&self) -> u64 {
        self.max_blocks * u64::from(self.block_size)
    }

    /// GPT: the backup array and header move to the medium's end (the
    /// medium grew since the table was written).
    pub fn moves_backup(&self) -> bool {
        self.kind == TableKind::Gpt && self.old_backup_lba() != self.disk_blocks.saturating_sub(1)
    }

    /// True when [`PartitionGrow::write`] changes the table.
    pub fn changes(&self) -> bool {
        self.new_blocks != self.old_blocks
            || self.moves_backup()
            || self.repair
            || (self.kind == TableKind::Gpt && self.protective_mbr().is_some())
    }

    /// The medium's bytes a partition of `bytes` bytes needs (its aligned
    /// end, and for a GPT the backup array and header after it).
    pub fn medium_bytes_for(&self, bytes: u64) -> u64 {
        let bs = u64::from(self.block_size);
        let align = (DEFAULT_ALIGN / bs).max(1);
        let end = (self.start_lba + bytes.div_ceil(bs)).next_multiple_of(align);
        let tail = match self.kind {
            TableKind::Gpt => 1 + self.array.len() as u64 / bs,
            _ => 0,
        };
        (end + tail) * bs
    }

    /// GPT: LBA 0 with its protective entry (from LBA 1) spanning the
    /// medium, when it does not yet.
    fn protective_mbr(&self) -> Option<Vec<u8>> {
        let mut lba0 = self.lba0.clone();
        let span = u32::try_from(self.disk_blocks.saturating_sub(1)).unwrap_or(u32::MAX);
        {
            let (m, _) = Mbr::mut_from_prefix(&mut lba0).ok()?;
            let e = m
                .partitions
                .iter_mut()
                .find(|e| e.os_type == MBR_TYPE_PROTECTIVE && e.starting_lba.get() == 1)?;
            if e.size_in_lba.get() == span {
                return None;
            }
            e.size_in_lba = span.into();
        }
        Some(lba0)
    }

    fn old_backup_lba(&self) -> u64 {
        GptHeader::read_from_prefix(&self.header).map_or(0, |(h, _)| h.alternate_lba.get())
    }

    /// Writes the entry grown or shrunk (module docs: the order), and flushes; writes
    /// nothing when [`PartitionGrow::changes`] is false.
    ///
    /// # Errors
    ///
    /// [`PartitionError::DeviceMismatch`] on another medium than the one
    /// read, or the write error.
    pub fn write<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), PartitionError> {
        if dev.block_size() != self.block_size || dev.num_blocks() != self.disk_blocks {
            return Err(PartitionError::DeviceMismatch {
                plan_block_size: self.block_size,
                plan_blocks: self.disk_blocks,
                dev_block_size: dev.block_size(),
                dev_blocks: dev.num_blocks(),
            });
        }
        if !self.changes() {
            return Ok(());
        }
        match self.kind {
            TableKind::Gpt => self.write_gpt(dev),
            _ => {
                let mut lba0 = self.lba0.clone();
                if let Ok((m, _)) = Mbr::mut_from_prefix(&mut lba0) {
                    let slot = usize::try_from(self.number - 1).unwrap_or(0);
                    let last = u32::try_from(self.start_lba + self.new_blocks - 1)
                        .map_err(|_| refuse(self.number, "past the MBR's 2^32 sectors"))?;
                    let e = &mut m.partitions[slot.min(3)];
                    e.size_in_lba = u32::try_from(self.new_blocks).unwrap_or(u32::MAX).into();
                    e.ending_chs = chs_address(last, 255, 63);
                }
                dev.write_blocks(0, &lba0)?;
                dev.flush()?;
                Ok(())
            }
        }
    }

    fn write_gpt<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), PartitionError> {
        let bs = u64::from(self.block_size);
        let (mut h, _) = GptHeader::read_from_prefix(&self.header)
            .map_err(|_| refuse(self.number, "the GPT header"))?;
        let mut array = self.array.clone();
        let (entry_size, count) = table::gpt_array(&h).unwrap_or((128, 0));
        let at = usize::try_from(u64::from(self.number - 1) * entry_size).unwrap_or(0);
        if let Ok((e, _)) = GptEntry::mut_from_prefix(&mut array[at..]) {
            e.ending_lba = (self.start_lba + self.new_blocks - 1).into();
        }
        let len = usize::try_from(entry_size * count).unwrap_or(0);
        let array_crc = crc32(&array[..len]);
        let last = self.disk_blocks - 1;
        let array_blocks = array.len() as u64 / bs;
        h.last_usable_lba = (last - array_blocks - 1).into();
        h.partition_entry_array_crc32 = array_crc.into();
        // 1. The backup, at the medium's end.
        let mut backup = h;
        backup.my_lba = last.into();
        backup.alternate_lba = 1.into();
        backup.partition_entry_lba = (last - array_blocks).into();
        dev.write_blocks(last - array_blocks, &array)?;
        dev.write_blocks(last, &header_block(&self.header, backup))?;
        dev.flush()?;
        // 2. The primary: its array, then its header.
        h.alternate_lba = last.into();
        dev.write_blocks(h.partition_entry_lba.get(), &array)?;
        dev.write_blocks(1, &header_block(&self.header, h))?;
        dev.flush()?;
        // 3. The protective MBR's size.
        if let Some(lba0) = self.protective_mbr() {
            dev.write_blocks(0, &lba0)?;
        }
        dev.flush()?;
        Ok(())
    }
}

/// A valid GPT header, its block and its entry array.
type Found = (GptHeader, Vec<u8>, Vec<u8>);

/// The GPT header at `lba` if it is valid (signature, MyLBA, both CRCs),
/// its block and its entry array (whole blocks).
fn read_header<D: BlockIo + ?Sized>(
    dev: &mut D,
    lba: u64,
) -> Result<Option<Found>, PartitionError> {
    let bs = u64::from(dev.block_size());
    let mut block = vec![0u8; usize::try_from(bs).unwrap_or(512)];
    dev.read_blocks(lba, &mut block)?;
    let h = match table::gpt_header(&block) {
        Some(h) if h.crc_ok(&block) && h.my_lba.get() == lba => *h,
        _ => return Ok(None),
    };
    let Some((entry_size, count)) = table::gpt_array(&h) else {
        return Ok(None);
    };
    let len = entry_size * count;
    let first = h.partition_entry_lba.get();
    let blocks = len.div_ceil(bs);
    if first.saturating_add(blocks) > dev.num_blocks() {
        return Ok(None);
    }
    let mut array = vec![0u8; usize::try_from(blocks * bs).unwrap_or(0)];
    dev.read_blocks(first, &mut array)?;
    let ok =
        crc32(&array[..usize::try_from(len).unwrap_or(0)]) == h.partition_entry_array_crc32.get();
    Ok(ok.then_some((h, block, array)))
}

/// The header block `block` with the header `h`, its CRC computed.
fn header_block(block: &[u8], mut h: GptHeader) -> Vec<u8> {
    let mut out = block.to_vec();
    h.header_crc32 = 0.into();
    out[..h.as_bytes().len()].copy_from_slice(h.as_bytes());
    let crc = h.computed_crc32(&out).unwrap_or(0);
    h.header_crc32 = crc.into();
    out[..h.as_bytes().len()].copy_from_slice(h.as_bytes());
    out
}
