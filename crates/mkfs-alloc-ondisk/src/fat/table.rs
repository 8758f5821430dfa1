//! The File Allocation Table itself: where entry `n` lies and how its bits
//! are packed, for FAT12 (two entries in three bytes), FAT16, FAT32 (28
//! bits used) and exFAT (32 bits). The one copy of the packing: the writer
//! fills FAT bytes with [`fill`], `info` reads entries with [`read_entry`].
//!
//! Sources: fatgen103 §4 "FAT Data Structure" (FAT12 entry `n` at byte
//! `n + n/2`, the low 12 bits of the 16-bit word for even `n`, the high 12
//! for odd; FAT32's high 4 bits reserved); exFAT specification §4.1.

use crate::FsKind;

/// Byte offset of entry `n` in the FAT of a `fs` volume.
pub fn entry_offset(fs: FsKind, n: u64) -> u64 {
    match fs {
        FsKind::Fat12 => n + n / 2,
        FsKind::Fat16 => n * 2,
        FsKind::Fat32 | FsKind::Exfat => n * 4,
    }
}

/// Bytes from [`entry_offset`] that hold entry `n`'s bits (a FAT12 entry
/// spans two bytes, sharing one with its neighbour).
pub fn entry_span(fs: FsKind) -> u64 {
    match fs {
        FsKind::Fat12 | FsKind::Fat16 => 2,
        FsKind::Fat32 | FsKind::Exfat => 4,
    }
}

/// The value of entry `n`, from `bytes` that start at its
/// [`entry_offset`] (at least [`entry_span`] long; `None` if shorter). FAT32
/// entries are masked to their 28 bits.
pub fn read_entry(fs: FsKind, bytes: &[u8], n: u64) -> Option<u32> {
    Some(match fs {
        FsKind::Fat12 => {
            let v = u16::from_le_bytes(*bytes.first_chunk::<2>()?);
            u32::from(if n % 2 == 0 { v & 0x0FFF } else { v >> 4 })
        }
        FsKind::Fat16 => u32::from(u16::from_le_bytes(*bytes.first_chunk::<2>()?)),
        FsKind::Fat32 => u32::from_le_bytes(*bytes.first_chunk::<4>()?) & 0x0FFF_FFFF,
        FsKind::Exfat => u32::from_le_bytes(*bytes.first_chunk::<4>()?),
    })
}

/// Sets entry `n` to `value` in `bytes` that start at its
/// [`entry_offset`] (at least [`entry_span`] long; `false`, nothing
/// written, if shorter), keeping the bits a FAT12 neighbour shares and
/// FAT32's reserved high four.
pub fn write_entry(fs: FsKind, bytes: &mut [u8], n: u64, value: u32) -> bool {
    match fs {
        FsKind::Fat12 | FsKind::Fat16 => {
            let Some(b) = bytes.first_chunk_mut::<2>() else {
                return false;
            };
            let old = u16::from_le_bytes(*b);
            let v = (value & 0xFFFF) as u16;
            let new = match (fs, n % 2) {
                (FsKind::Fat12, 0) => (old & 0xF000) | (v & 0x0FFF),
                (FsKind::Fat12, _) => (old & 0x000F) | ((v & 0x0FFF) << 4),
                _ => v,
            };
            *b = new.to_le_bytes();
        }
        FsKind::Fat32 | FsKind::Exfat => {
            let Some(b) = bytes.first_chunk_mut::<4>() else {
                return false;
            };
            let keep = if fs == FsKind::Fat32 { 0xF000_0000 } else { 0 };
            let old = u32::from_le_bytes(*b);
            *b = ((old & keep) | (value & !keep)).to_le_bytes();
        }
    }
    true
}

/// The `(bad cluster, first end-of-chain)` values of a `fs` FAT: larger
/// values also end a chain.
pub fn bad_and_end(fs: FsKind) -> (u32, u32) {
    match fs {
        FsKind::Fat12 => (0xFF7, 0xFF8),
        FsKind::Fat16 => (0xFFF7, 0xFFF8),
        FsKind::Fat32 => (0x0FFF_FFF7, 0x0FFF_FFF8),
        FsKind::Exfat => (0xFFFF_FFF7, 0xFFFF_FFF8),
    }
}

/// Fills `buf` with the bytes of a `fs` FAT starting at byte `at` of the
/// FAT, entry `n` having the value `entry(n)`. `at` may be any byte: the
/// writer's chunks do not fall on FAT12 entry pairs.
pub fn fill(fs: FsKind, at: u64, buf: &mut [u8], entry: impl Fn(u64) -> u32) {
    if fs.entry_bits() == 32 && at % 4 == 0 && buf.len() % 4 == 0 {
        // Whole entries: one call per entry.
        for (n, word) in (at / 4..).zip(buf.chunks_exact_mut(4)) {
            word.copy_from_slice(&entry(n).to_le_bytes());
        }
        return;
    }
    for (i, b) in (at..).zip(buf.iter_mut()) {
        *b = match fs {
            FsKind::Fat12 => {
                let pair = i / 3;
                let (e0, e1) = (entry(2 * pair) & 0xFFF, entry(2 * pair + 1) & 0xFFF);
                match i % 3 {
                    0 => e0 as u8,
                    1 => ((e0 >> 8) | ((e1 & 0xF) << 4)) as u8,
                    _ => (e1 >> 4) as u8,
                }
            }
            FsKind::Fat16 => (entry(i / 2) >> (8 * (i % 2))) as u8,
            FsKind::Fat32 | FsKind::Exfat => (entry(i / 4) >> (8 * (i % 4))) as u8,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn entry(n: u64) -> u32 {
        // Distinct 12-bit values, so any nibble mix-up shows.
        (0x100 + n as u32 * 0x0AB) & 0xFFF
    }

    #[test]
    fn write_entry_is_read_entry_s_inverse_and_keeps_the_neighbours() {
        for fs in [FsKind::Fat12, FsKind::Fat16, FsKind::Fat32] {
            let mut buf = [0xAAu8; 128];
            for n in 0..20u64 {
                let at = entry_offset(fs, n) as usize;
                assert!(write_entry(fs, &mut buf[at..], n, entry(n)));
            }
            for n in 0..20u64 {
                let at = entry_offset(fs, n) as usize;
                let mask = if fs == FsKind::Fat16 {
                    0xFFFF
                } else {
                    0x0FFF_FFFF
                };
                assert_eq!(
                    read_entry(fs, &buf[at..], n),
                    Some(entry(n) & mask),
                    "{fs:?} {n}"
                );
            }
        }
        assert!(!write_entry(FsKind::Fat16, &mut [0u8; 1], 0, 1));
    }

    #[test]
    fn fat12_packing_matches_the_spec_at_any_chunk_boundary() {
        // Reference packing, written out: entry n at byte n + n/2; odd
        // entries take the high nibble of the first byte.
        let len = 3 * 50 + 2;
        let mut want = vec![0u8; len];
        for n in 0..(len as u64 * 2 / 3 + 1) {
            let off = (n + n / 2) as usize;
            let v = entry(n) as u16;
            let (lo, hi) = if n % 2 == 0 {
                (v & 0xFF, v >> 8)
            } else {
                ((v & 0xF) << 4, v >> 4)
            };
            if off < len {
                want[off] |= lo as u8;
            }
            if off + 1 < len {
                want[off + 1] |= hi as u8;
            }
        }
        for split in [0, 1, 2, 3, 4, 5, 7, 100, len] {
            let mut got = vec![0u8; len];
            let (a, b) = got.split_at_mut(split);
            fill(FsKind::Fat12, 0, a, entry);
            fill(FsKind::Fat12, split as u64, b, entry);
            assert_eq!(got, want, "split at {split}");
        }
        for n in 0..(len as u64 * 2 / 3 - 1) {
            let at = entry_offset(FsKind::Fat12, n) as usize;
            assert_eq!(read_entry(FsKind::Fat12, &want[at..], n), Some(entry(n)));
        }
    }

    #[test]
    fn wide_entries_round_trip() {
        for fs in [FsKind::Fat16, FsKind::Fat32, FsKind::Exfat] {
            let mut b = vec![0u8; 64];
            fill(fs, 0, &mut b, |n| 0x0ABC_0000 + n as u32);
            for n in 0..64 / entry_span(fs) {
                let at = entry_offset(fs, n) as usize;
                let want = match fs {
                    FsKind::Fat16 => n as u32,
                    _ => 0x0ABC_0000 + n as u32,
                };
                assert_eq!(read_entry(fs, &b[at..], n), Some(want), "{fs} {n}");
            }
        }
        assert_eq!(read_entry(FsKind::Fat32, &[0xFF; 4], 0), Some(0x0FFF_FFFF));
        assert_eq!(read_entry(FsKind::Fat16, &[0], 0), None);
    }

    #[test]
    fn wide_entries_from_any_byte() {
        // Entry n at byte 4n, little-endian (fatgen103 §4, exFAT §4.1):
        // a buffer that starts inside an entry gets the same bytes.
        for fs in [FsKind::Fat32, FsKind::Exfat] {
            let value = |n: u64| 0x0A0B_0C00 + n as u32;
            let mut want = [0u8; 72];
            for (n, w) in want.chunks_exact_mut(4).enumerate() {
                w.copy_from_slice(&value(n as u64).to_le_bytes());
            }
            // Whole words' worth of bytes and not, from any byte.
            for (at, len) in [(1, 60), (2, 62), (3, 64), (5, 59), (8, 56)] {
                let mut got = vec![0u8; len];
                fill(fs, at as u64, &mut got, value);
                assert_eq!(got, want[at..at + len], "{fs}: {len} from byte {at}");
            }
        }
    }

    #[test]
    fn bad_cluster_and_end_of_chain_values() {
        // fatgen103 §4 (BAD CLUSTER, EOC from ...8); exFAT §4.1.4.
        assert_eq!(bad_and_end(FsKind::Fat12), (0xFF7, 0xFF8));
        assert_eq!(bad_and_end(FsKind::Fat16), (0xFFF7, 0xFFF8));
        assert_eq!(bad_and_end(FsKind::Fat32), (0x0FFF_FFF7, 0x0FFF_FFF8));
        assert_eq!(bad_and_end(FsKind::Exfat), (0xFFFF_FFF7, 0xFFFF_FFF8));
    }
}
