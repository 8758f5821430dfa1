//! The specs' geometry rules, written apart from the planner: what makes a
//! written boot sector's layout valid, and the cluster count it declares.
//! Suites check the CLI's volumes against these instead of asking the
//! planner (the code under test) what the count should be.

use crate::boot::{ExfatBoot, Fat32Boot};
use mkfs_alloc_layout::FsKind;
use std::path::Path;

/// FAT12 below this many clusters, FAT16 below [`FAT16_LIMIT`], else FAT32
/// (fatgen103, "FAT Type Determination").
pub const FAT12_LIMIT: u64 = 4085;
/// See [`FAT12_LIMIT`].
pub const FAT16_LIMIT: u64 = 65525;
/// The largest exFAT ClusterCount (exFAT specification §3.1.9: 2^32 - 11).
pub const EXFAT_MAX_CLUSTERS: u64 = (1 << 32) - 11;

/// The FAT width a cluster count gives (fatgen103).
pub fn width_of(clusters: u64) -> FsKind {
    if clusters < FAT12_LIMIT {
        FsKind::Fat12
    } else if clusters < FAT16_LIMIT {
        FsKind::Fat16
    } else {
        FsKind::Fat32
    }
}

/// Decodes the boot sector of the `fs` volume at byte `offset` of `image`
/// (`volume_bytes` long), asserts every geometry rule of its spec and
/// returns its cluster count:
/// - FAT (fatgen103 "Boot Sector and BPB", "FAT Data Structure"): sector
///   size a power of two of 512 to 4096, sectors per cluster a power of two
///   up to 128, the count from the BPB's own fields, the width that count
///   gives equal to `fs`, a fixed root on FAT12/16 only, each FAT long
///   enough for count + 2 entries, the volume within `volume_bytes`;
/// - exFAT (§3.1): FatOffset ≥ 24, the FAT before the heap and long
///   enough for ClusterCount + 2 entries, ClusterCount at most the heap's
///   clusters and [`EXFAT_MAX_CLUSTERS`], VolumeLength within
///   `volume_bytes`.
#[track_caller]
pub fn checked_cluster_count(image: &Path, offset: u64, volume_bytes: u64, fs: FsKind) -> u64 {
    if fs == FsKind::Exfat {
        return exfat_count(&ExfatBoot::read(image, offset), volume_bytes);
    }
    let b = Fat32Boot::read(image, offset);
    let bps = u64::from(b.bytes_per_sector);
    assert!(
        bps.is_power_of_two() && (512..=4096).contains(&bps),
        "BytsPerSec {bps}"
    );
    let spc = u64::from(b.sectors_per_cluster);
    assert!(spc.is_power_of_two() && spc <= 128, "SecPerClus {spc}");
    assert!(b.reserved_sectors > 0, "RsvdSecCnt 0");
    assert!(b.num_fats >= 1, "NumFATs 0");
    let total = b.total_sectors();
    assert!(
        total * bps <= volume_bytes,
        "TotSec {total} past the volume"
    );
    // The decoder's fatgen103 arithmetic: reserved, FATs, fixed root.
    assert!(b.data_offset() / bps < total, "no data region");
    let count = b.cluster_count();
    let width = width_of(count);
    assert_eq!(
        width, fs,
        "{count} clusters make {width}, the volume is {fs}"
    );
    if fs == FsKind::Fat32 {
        assert_eq!(b.root_ent_cnt, 0, "FAT32 with a fixed root");
        assert_eq!(b.fat_sz16, 0, "FAT32 with FATSz16");
    } else {
        assert!(b.root_ent_cnt > 0, "{fs} without a root directory");
    }
    let bits = match fs {
        FsKind::Fat12 => 12,
        FsKind::Fat16 => 16,
        _ => 32,
    };
    let need = ((count + 2) * bits).div_ceil(8);
    assert!(
        b.fat_sectors() * bps >= need,
        "a FAT of {} bytes for {count} clusters ({need} needed)",
        b.fat_sectors() * bps
    );
    count
}

#[track_caller]
fn exfat_count(b: &ExfatBoot, volume_bytes: u64) -> u64 {
    assert_eq!(&b.file_system_name, b"EXFAT   ");
    let shift = u32::from(b.bytes_per_sector_shift);
    assert!((9..=12).contains(&shift), "BytesPerSectorShift {shift}");
    assert!(
        u32::from(b.sectors_per_cluster_shift) <= 25 - shift,
        "cluster over 32 MiB"
    );
    let bps = 1u64 << shift;
    assert!(
        b.volume_length * bps <= volume_bytes,
        "VolumeLength past the volume"
    );
    let (fat_offset, fat_length) = (u64::from(b.fat_offset), u64::from(b.fat_length));
    let heap = u64::from(b.cluster_heap_offset);
    assert!(fat_offset >= 24, "FatOffset {fat_offset}");
    assert!(
        fat_offset + fat_length * u64::from(b.number_of_fats) <= heap,
        "FAT past the heap"
    );
    let count = u64::from(b.cluster_count);
    let heap_clusters = (b.volume_length - heap) >> b.sectors_per_cluster_shift;
    assert!(
        count <= heap_clusters,
        "{count} clusters, the heap holds {heap_clusters}"
    );
    assert!(count <= EXFAT_MAX_CLUSTERS);
    assert!(
        fat_length * bps >= (count + 2) * 4,
        "FAT too short for {count} clusters"
    );
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{require_tool, run, TempDir};
    use std::os::unix::fs::FileExt;

    /// dosfstools' volume passes; the same volume with a FAT too short for
    /// its clusters, or a FAT16 count under a FAT32 label, does not.
    #[test]
    #[ignore = "tool tier: cargo xtask test"]
    fn mkfs_fat_volumes_pass_and_broken_ones_do_not() {
        require_tool("mkfs.fat");
        let dir = TempDir::new("geometry");
        let img = dir.path().join("v.img");
        let size: u64 = 80 << 20;
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(size))
            .expect("image");
        let out = run(
            "mkfs.fat",
            &["-F", "32", "-s", "1", img.to_str().expect("utf-8")],
        );
        out.assert_success();
        let count = checked_cluster_count(&img, 0, size, FsKind::Fat32);
        assert!(count > FAT16_LIMIT);
        let wrong_width =
            std::panic::catch_unwind(|| checked_cluster_count(&img, 0, size, FsKind::Fat16));
        assert!(wrong_width.is_err(), "a FAT32 count passed as FAT16");
        // FATSz32 (offset 36) shrunk to 8 sectors: 1,024 entries for the
        // volume's 160,000 clusters.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&img)
            .expect("open");
        f.write_all_at(&8u32.to_le_bytes(), 36).expect("patch");
        let short =
            std::panic::catch_unwind(|| checked_cluster_count(&img, 0, size, FsKind::Fat32));
        assert!(short.is_err(), "a FAT too short for its clusters passed");
    }
}
