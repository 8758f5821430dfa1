//! A small blkid-style probe: file system type and label from superblocks.
//!
//! Only cheap, fixed-position signatures are checked (a few 4 KiB reads).
//! Names follow blkid: `vfat`, `exfat`, `ntfs`, `ext2`/`ext3`/`ext4`,
//! `xfs`, `btrfs`, `iso9660`, `swap`, `crypto_LUKS`.
//!
//! Sources: Microsoft FAT specification 1.03 §3 (BPB, labels at 43/71);
//! Microsoft exFAT specification §3.1 (main boot region) and §7.3 (volume
//! label directory entry); ext4 disk layout (superblock at 1024, magic at
//! 0x38, label at 0x78); XFS superblock (magic `XFSB`, label at 108); btrfs
//! superblock at 64 KiB (magic at 0x40, label at 0x12B); ECMA-119 §8.4
//! (primary volume descriptor at 32 KiB); util-linux `swapheader.h`;
//! LUKS2 on-disk format (label at 24).

use std::io;

/// Reads are done in aligned units of this many bytes, which every logical
/// block size of 512..=4096 divides.
pub(crate) const PROBE_UNIT: u64 = 4096;

/// Reads `buf.len()` bytes at `offset`; both are multiples of
/// [`PROBE_UNIT`].
pub(crate) trait ProbeRead {
    /// Reads exactly `buf.len()` bytes at byte `offset`.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

impl<F: FnMut(u64, &mut [u8]) -> io::Result<()>> ProbeRead for F {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self(offset, buf)
    }
}

/// File system type and label of the `size` bytes at `base` (a partition's
/// start, or 0). Read errors give `(None, None)`: probing is best effort.
pub(crate) fn probe(
    r: &mut dyn ProbeRead,
    base: u64,
    size: u64,
) -> (Option<String>, Option<String>) {
    let mut p = Prober { r, base, size };
    p.run().unwrap_or((None, None))
}

struct Prober<'a> {
    r: &'a mut dyn ProbeRead,
    base: u64,
    size: u64,
}

impl Prober<'_> {
    /// The 4 KiB unit at `offset` (aligned), or `None` past the end.
    fn unit(&mut self, offset: u64) -> Option<Vec<u8>> {
        if offset.checked_add(PROBE_UNIT)? > self.size || (self.base + offset) % PROBE_UNIT != 0 {
            return None;
        }
        let mut buf = vec![0u8; PROBE_UNIT as usize];
        self.r.read_exact_at(self.base + offset, &mut buf).ok()?;
        Some(buf)
    }

    fn run(&mut self) -> Option<(Option<String>, Option<String>)> {
        let first = self.unit(0)?;
        let b = first.as_slice();
        if &b[3..11] == b"EXFAT   " {
            return Some((Some("exfat".into()), self.exfat_label(b)));
        }
        if &b[3..11] == b"NTFS    " {
            return Some((Some("ntfs".into()), None));
        }
        if &b[0..6] == b"LUKS\xba\xbe" {
            return Some((Some("crypto_LUKS".into()), text(&b[24..72])));
        }
        if &b[0..4] == b"XFSB" {
            return Some((Some("xfs".into()), text(&b[108..120])));
        }
        if &b[4086..4096] == b"SWAPSPACE2" {
            return Some((Some("swap".into()), text(&b[1052..1068])));
        }
        if b[510..512] == [0x55, 0xAA] {
            let fat32 = &b[82..90] == b"FAT32   ";
            let fat16 = matches!(&b[54..62], b"FAT12   " | b"FAT16   " | b"FAT     ");
            if fat32 || fat16 {
                let at = if fat32 { 71 } else { 43 };
                let label = text(&b[at..at + 11]).filter(|l| l != "NO NAME");
                return Some((Some("vfat".into()), label));
            }
        }
        if b[1024 + 0x38..1024 + 0x3A] == [0x53, 0xEF] {
            let sb = &b[1024..];
            let compat = le32(sb, 0x5C);
            let incompat = le32(sb, 0x60);
            // EXTENTS, 64BIT, FLEX_BG are ext4 only; HAS_JOURNAL makes ext3.
            let t = if incompat & (0x40 | 0x80 | 0x200) != 0 {
                "ext4"
            } else if compat & 0x4 != 0 {
                "ext3"
            } else {
                "ext2"
            };
            return Some((Some(t.into()), text(&sb[0x78..0x88])));
        }
        if let Some(u) = self.unit(64 * 1024) {
            if &u[0x40..0x48] == b"_BHRfS_M" {
                return Some((Some("btrfs".into()), text(&u[0x12B..0x12B + 256])));
            }
        }
        if let Some(u) = self.unit(32 * 1024) {
            if &u[1..6] == b"CD001" {
                return Some((Some("iso9660".into()), text(&u[40..72])));
            }
        }
        Some((None, None))
    }

    /// The label from the exFAT root directory's volume label entry (type
    /// 0x83), searched in the first 4 KiB of the root directory.
    fn exfat_label(&mut self, boot: &[u8]) -> Option<String> {
        let heap = u64::from(le32(boot, 88));
        let root_cluster = u64::from(le32(boot, 96));
        let bps_shift = u32::from(boot[108]);
        let spc_shift = u32::from(boot[109]);
        if !(9..=12).contains(&bps_shift) || spc_shift > 25 || root_cluster < 2 {
            return None;
        }
        let root = heap
            .checked_shl(bps_shift)?
            .checked_add((root_cluster - 2).checked_shl(bps_shift + spc_shift)?)?;
        let aligned = root - root % PROBE_UNIT;
        let mut dir = self.unit(aligned)?;
        dir.extend(self.unit(aligned + PROBE_UNIT).unwrap_or_default());
        let start = usize::try_from(root - aligned).ok()?;
        for e in dir.get(start..)?.chunks_exact(32).take(128) {
            match e[0] {
                0x00 => return None,
                0x83 => {
                    let n = usize::from(e[1]).min(11);
                    let units: Vec<u16> = e[2..2 + 2 * n]
                        .chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect();
                    return super::clean(&String::from_utf16_lossy(&units));
                }
                _ => {}
            }
        }
        None
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A NUL- or space-padded text field.
fn text(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    super::clean(&String::from_utf8_lossy(&b[..end]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn probe_buf(img: &[u8], base: u64) -> (Option<String>, Option<String>) {
        let mut r = |off: u64, buf: &mut [u8]| {
            let off = off as usize;
            buf.copy_from_slice(&img[off..off + buf.len()]);
            Ok(())
        };
        probe(&mut r, base, img.len() as u64 - base)
    }

    #[test]
    fn exfat_with_label() {
        let mut img = vec![0u8; 64 * 1024];
        img[3..11].copy_from_slice(b"EXFAT   ");
        img[88..92].copy_from_slice(&16u32.to_le_bytes()); // heap at sector 16
        img[96..100].copy_from_slice(&4u32.to_le_bytes()); // root = cluster 4
        img[108] = 9; // 512-byte sectors
        img[109] = 3; // 4 KiB clusters
        let root = 16 * 512 + 2 * 4096;
        img[root] = 0x81; // allocation bitmap entry first
        let e = root + 32;
        img[e] = 0x83;
        img[e + 1] = 4;
        for (i, c) in "DATA".encode_utf16().enumerate() {
            img[e + 2 + 2 * i..e + 4 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        assert_eq!(
            probe_buf(&img, 0),
            (Some("exfat".into()), Some("DATA".into()))
        );
    }

    #[test]
    fn fat32_and_partition_base() {
        let mut img = vec![0u8; 8192 + 4096];
        let s = 8192;
        img[s + 510] = 0x55;
        img[s + 511] = 0xAA;
        img[s + 82..s + 90].copy_from_slice(b"FAT32   ");
        img[s + 71..s + 82].copy_from_slice(b"MYSTICK    ");
        assert_eq!(
            probe_buf(&img, 8192),
            (Some("vfat".into()), Some("MYSTICK".into()))
        );
        img[s + 71..s + 82].copy_from_slice(b"NO NAME    ");
        assert_eq!(probe_buf(&img, 8192), (Some("vfat".into()), None));
        // Nothing at 0: no signature.
        img.truncate(8192);
        assert_eq!(probe_buf(&img, 0), (None, None));
    }

    #[test]
    fn ext4_and_short_devices() {
        let mut img = vec![0u8; 4096];
        img[1024 + 0x38] = 0x53;
        img[1024 + 0x39] = 0xEF;
        img[1024 + 0x60] = 0x40;
        img[1024 + 0x78..1024 + 0x7C].copy_from_slice(b"root");
        assert_eq!(
            probe_buf(&img, 0),
            (Some("ext4".into()), Some("root".into()))
        );
        assert_eq!(probe_buf(&[0u8; 1024], 0), (None, None));
    }
}
