//! What other tools and specifications pick, shown next to our advice.
//!
//! Sources: Microsoft, "Default cluster size for NTFS, FAT, and exFAT"
//! (KB140365, <https://support.microsoft.com/en-us/help/140365>); exfatprogs
//! `mkfs/mkfs.c` and `lib/libexfat.c` (<https://github.com/exfatprogs/exfatprogs>);
//! dosfstools `src/mkfs.fat.c` (<https://github.com/dosfstools/dosfstools>);
//! the SD Association's Physical Layer Simplified Specification Part 2,
//! File System Specification (<https://www.sdcard.org/downloads/pls/>), whose
//! cluster table mkfs.exfat(8) reprints.

use mkfs_alloc_layout::units::{GIB, KIB, MIB, TIB};
use mkfs_alloc_layout::FsKind;

pub use mkfs_alloc_layout::rules::windows_default;

/// The cluster size the SD specification recommends for a card of this
/// capacity, or `None` above 2 TiB (not in the table).
pub fn sd_recommended(volume_bytes: u64) -> Option<u64> {
    let v = volume_bytes;
    Some(match v {
        _ if v <= 8 * MIB => 8 * KIB,
        _ if v <= GIB => 16 * KIB,
        _ if v <= 32 * GIB => 32 * KIB,
        _ if v <= 128 * GIB => 128 * KIB,
        _ if v <= 512 * GIB => 256 * KIB,
        _ if v <= 2 * TIB => 512 * KIB,
        _ => return None,
    })
}

/// The tool whose default [`mkfs_default`] gives.
pub fn mkfs_tool(fs: FsKind) -> &'static str {
    match fs {
        FsKind::Exfat => "mkfs.exfat",
        _ => "mkfs.fat",
    }
}

/// The cluster size `mkfs.exfat` (exfatprogs) or `mkfs.fat -F 32|16|12`
/// (dosfstools) picks by default.
///
/// - mkfs.exfat: under 7 MiB 512 B; up to 256 MiB 4 KiB; up to 32 GiB 32 KiB;
///   above 128 KiB (never below the sector size).
/// - mkfs.fat counts in sectors, whatever their size, with the volume in
///   whole MiB rounded up: above 32 GiB 64 sectors, above 16 GiB 32, above
///   8 GiB 16, above 260 MiB 8, else 1 (so 4 KiB with 512-byte sectors, but
///   32 KiB with 4096-byte sectors).
/// - mkfs.fat -F 16 / -F 12 start at 4 sectors per cluster and double until
///   the cluster count is below the width's limit (65,525 / 4,085), counted
///   with one reserved sector, 512 root entries and two FATs (measured with
///   dosfstools 4.2: FAT16 128 MiB 2 KiB, 200 MiB 4 KiB, 1 GiB 16 KiB;
///   FAT12 16 MiB 8 KiB, 128 MiB 64 KiB).
pub fn mkfs_default(fs: FsKind, volume_bytes: u64, sector_size: u32) -> u64 {
    let bps = u64::from(sector_size);
    match fs {
        FsKind::Exfat => {
            let v = volume_bytes;
            let c = match v {
                _ if v < 7 * MIB => 512,
                _ if v <= 256 * MIB => 4 * KIB,
                _ if v <= 32 * GIB => 32 * KIB,
                _ => 128 * KIB,
            };
            c.max(bps)
        }
        FsKind::Fat32 => {
            let mib = volume_bytes.div_ceil(MIB);
            let sectors = match mib {
                _ if mib > 32 * 1024 => 64,
                _ if mib > 16 * 1024 => 32,
                _ if mib > 8 * 1024 => 16,
                _ if mib > 260 => 8,
                _ => 1,
            };
            sectors * bps
        }
        FsKind::Fat16 | FsKind::Fat12 => {
            let bits = fs.entry_bits();
            let limit = fs.max_clusters() + 1;
            let total = volume_bytes / bps;
            let fixed = 1 + (512 * 32u64).div_ceil(bps);
            let mut spc = 4;
            while spc < 128 {
                let fat = ((total / spc + 2) * bits).div_ceil(8 * bps);
                if total.saturating_sub(fixed + 2 * fat) / spc < limit {
                    break;
                }
                spc *= 2;
            }
            spc * bps
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_fat_small_defaults_as_measured() {
        for (fs, size, cluster) in [
            (FsKind::Fat16, 16 * MIB, 2 * KIB),
            (FsKind::Fat16, 128 * MIB, 2 * KIB),
            (FsKind::Fat16, 200 * MIB, 4 * KIB),
            (FsKind::Fat16, 256 * MIB, 4 * KIB),
            (FsKind::Fat16, 300 * MIB, 8 * KIB),
            (FsKind::Fat16, GIB, 16 * KIB),
            (FsKind::Fat16, 2047 * MIB, 32 * KIB),
            (FsKind::Fat12, 8 * MIB, 2 * KIB),
            (FsKind::Fat12, 16 * MIB, 8 * KIB),
            (FsKind::Fat12, 64 * MIB, 32 * KIB),
            (FsKind::Fat12, 128 * MIB, 64 * KIB),
        ] {
            assert_eq!(mkfs_default(fs, size, 512), cluster, "{fs} {size}");
        }
    }

    #[test]
    fn tables() {
        assert_eq!(sd_recommended(8 * MIB), Some(8 * KIB));
        assert_eq!(sd_recommended(64 * MIB), Some(16 * KIB));
        assert_eq!(sd_recommended(2 * GIB), Some(32 * KIB));
        assert_eq!(sd_recommended(64 * GIB), Some(128 * KIB));
        assert_eq!(sd_recommended(128 * GIB), Some(128 * KIB));
        assert_eq!(sd_recommended(256 * GIB), Some(256 * KIB));
        assert_eq!(sd_recommended(TIB), Some(512 * KIB));
        assert_eq!(sd_recommended(4 * TIB), None);
        assert_eq!(mkfs_default(FsKind::Exfat, 6 * MIB, 512), 512);
        assert_eq!(mkfs_default(FsKind::Exfat, 256 * MIB, 512), 4 * KIB);
        assert_eq!(mkfs_default(FsKind::Exfat, 32 * GIB, 512), 32 * KIB);
        assert_eq!(mkfs_default(FsKind::Exfat, 128 * GIB, 512), 128 * KIB);
        assert_eq!(mkfs_default(FsKind::Fat32, 256 * MIB, 512), 512);
        assert_eq!(mkfs_default(FsKind::Fat32, GIB, 512), 4 * KIB);
        assert_eq!(mkfs_default(FsKind::Fat32, GIB, 4096), 32 * KIB);
        assert_eq!(mkfs_default(FsKind::Fat32, 16 * GIB, 512), 8 * KIB);
        assert_eq!(mkfs_default(FsKind::Fat32, 64 * GIB, 512), 32 * KIB);
    }
}
