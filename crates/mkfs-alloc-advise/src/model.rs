//! The footprint model: how many clusters the scanned data takes once copied
//! onto a freshly formatted volume.
//!
//! Assumptions (checked against exfat-fuse and mtools in
//! `tests/reality.rs`):
//! - **File data**: a file of `n` bytes takes `ceil(n / cluster)` clusters;
//!   an empty file takes none (exFAT: FirstCluster 0, FAT32: cluster 0).
//! - **exFAT directories**: each file or subdirectory takes one entry set of
//!   32-byte entries: File + Stream Extension + `ceil(name_units / 15)` File
//!   Name entries (spec §6.3, §7.6, §7.7). A directory's size is its entries
//!   rounded up to whole clusters, at least one cluster even when empty
//!   (spec §6.2). exFAT directories have no "." or ".." entries.
//! - **FAT32 directories**: each name takes one short (8.3) entry plus
//!   `ceil(name_units / 13)` long-name entries unless it is an 8.3 name the
//!   NT case bits can express, as Windows and mtools store it (see
//!   [`crate::names::fat32_lfn_entries`]). Every
//!   subdirectory also holds "." and "..". Its size is rounded up to whole
//!   clusters.
//! - **Root directory**: holds what the format wrote (exFAT: volume label,
//!   allocation bitmap and up-case table entries, plus the volume GUID entry
//!   if written; FAT32: the volume label entry if there is a label) and one
//!   entry (set) per PATH argument. Its first clusters were allocated by the
//!   format and are part of the volume's overhead; only clusters beyond them
//!   count in the footprint.
//! - Directories only grow: the model assumes a copy into an empty volume,
//!   with no deletions (deleted entries would leave holes a later copy may
//!   or may not reuse).
//! - Each hard link counts as a file (see [`crate::scan`](mod@crate::scan)): FAT and exFAT
//!   have no hard links, so a copy stores each link as a file of its own.

use crate::names::DIR_ENTRY_BYTES;
use crate::scan::{DirRecord, ScanResult};
use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::{FsKind, Layout};
#[cfg(feature = "serde")]
use serde::Serialize;

/// exFAT root entries every format writes: volume label, allocation bitmap,
/// up-case table.
pub const EXFAT_ROOT_SYSTEM_ENTRIES: u32 = 3;
/// FAT32 holds at most 65,536 entries in a directory (fatgen103 §6: a
/// directory may not exceed 2 MiB), "." and ".." included.
pub const FAT32_MAX_DIR_ENTRIES: u64 = 65_536;

/// What the format left in the root directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct RootDir {
    /// 32-byte entries written at format time.
    pub system_entries: u32,
    /// Clusters the format allocated to the root directory.
    pub clusters_at_format: u64,
}

impl RootDir {
    /// The root directory of a planned layout.
    pub fn of(layout: &Layout) -> Self {
        match &layout.geometry() {
            Geometry::Exfat(g) => RootDir {
                system_entries: EXFAT_ROOT_SYSTEM_ENTRIES
                    + u32::from(layout.volume_guid().is_some()),
                clusters_at_format: u64::from(g.root_clusters),
            },
            Geometry::Fat(g) if g.fs == FsKind::Fat32 => RootDir {
                system_entries: u32::from(layout.label().is_some()),
                clusters_at_format: 1,
            },
            // FAT12/16: a fixed root region outside the data region; it
            // takes no cluster and holds at most `root_entries` entries.
            Geometry::Fat(_) => RootDir {
                system_entries: u32::from(layout.label().is_some()),
                clusters_at_format: 0,
            },
        }
    }
}

/// The data's footprint at one cluster size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Footprint {
    /// Cluster size in bytes.
    pub cluster_size: u64,
    /// Clusters of file data.
    pub file_clusters: u64,
    /// Clusters of the directories below the root.
    pub dir_clusters: u64,
    /// Clusters the root directory needs after the copy (format-time ones included).
    pub root_clusters: u64,
    /// Clusters the format gave the root directory.
    pub root_clusters_at_format: u64,
}

impl Footprint {
    /// Clusters the copy allocates: file data, subdirectories, and root
    /// growth beyond what the format allocated.
    pub fn new_clusters(&self) -> u64 {
        self.file_clusters
            + self.dir_clusters
            + self
                .root_clusters
                .saturating_sub(self.root_clusters_at_format)
    }

    /// Bytes the copy allocates ([`Footprint::new_clusters`] × cluster size).
    pub fn bytes_on_disk(&self) -> u64 {
        self.new_clusters() * self.cluster_size
    }

    /// Bytes of file data clusters.
    pub fn file_bytes(&self) -> u64 {
        self.file_clusters * self.cluster_size
    }

    /// Bytes of directory clusters the copy allocates.
    pub fn directory_bytes(&self) -> u64 {
        self.bytes_on_disk() - self.file_bytes()
    }
}

/// 32-byte entries in a directory: its names' entries, plus "." and ".." in
/// a FAT32 subdirectory.
pub fn dir_entries(fs: FsKind, rec: &DirRecord, subdir: bool) -> u64 {
    match fs {
        FsKind::Exfat => u64::from(rec.exfat_entries),
        _ => u64::from(rec.fat32_entries) + if subdir { 2 } else { 0 },
    }
}

/// Clusters a directory of `entries` 32-byte entries takes: at least one.
pub fn dir_clusters(entries: u64, cluster: u64) -> u64 {
    (entries * DIR_ENTRY_BYTES).div_ceil(cluster).max(1)
}

/// Clusters of file data: `Σ ceil(size / cluster)`.
pub fn file_clusters(sizes: &[u64], cluster: u64) -> u64 {
    debug_assert!(cluster.is_power_of_two());
    let shift = cluster.trailing_zeros();
    let mask = cluster - 1;
    sizes
        .iter()
        .map(|&s| (s >> shift) + u64::from(s & mask != 0))
        .sum()
}

/// The footprint of `data` on `fs` at `cluster` bytes per cluster, with the
/// root directory as the format left it.
pub fn footprint(fs: FsKind, cluster: u64, root: RootDir, data: &ScanResult) -> Footprint {
    let subdirs = data
        .dirs
        .iter()
        .map(|d| dir_clusters(dir_entries(fs, d, true), cluster))
        .sum();
    let root_entries = u64::from(root.system_entries) + dir_entries(fs, &data.root, false);
    Footprint {
        cluster_size: cluster,
        file_clusters: file_clusters(&data.file_sizes, cluster),
        dir_clusters: subdirs,
        root_clusters: dir_clusters(root_entries, cluster).max(root.clusters_at_format),
        root_clusters_at_format: root.clusters_at_format,
    }
}

/// The footprint of `data` on the volume `layout` describes.
pub fn footprint_for(layout: &Layout, data: &ScanResult) -> Footprint {
    let mut f = footprint(
        layout.fs(),
        layout.cluster_size().bytes(),
        RootDir::of(layout),
        data,
    );
    if layout.fs().is_small_fat() {
        // The fixed root directory never takes clusters.
        f.root_clusters = 0;
    }
    f
}

/// FAT12/16: the root entries `data` needs and the fixed root directory's
/// capacity, when they do not fit (the copy would fail with "root full").
pub fn root_overflow(layout: &Layout, data: &ScanResult) -> Option<(u64, u64)> {
    let Geometry::Fat(g) = &layout.geometry() else {
        return None;
    };
    if !layout.fs().is_small_fat() {
        return None;
    }
    let needed =
        u64::from(RootDir::of(layout).system_entries) + dir_entries(layout.fs(), &data.root, false);
    let capacity = u64::from(g.root_entries);
    (needed > capacity).then_some((needed, capacity))
}

/// Directories with more entries than FAT32 allows (they cannot be copied whole).
pub fn fat32_dirs_over_limit(data: &ScanResult) -> u64 {
    data.dirs
        .iter()
        .filter(|d| dir_entries(FsKind::Fat32, d, true) > FAT32_MAX_DIR_ENTRIES)
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn data(sizes: &[u64], dirs: &[&[&str]], root: &[&str]) -> ScanResult {
        let rec = |names: &[&str]| {
            let mut r = DirRecord::default();
            for n in names {
                r.add(OsStr::new(n));
            }
            r
        };
        ScanResult {
            file_sizes: sizes.to_vec(),
            dirs: dirs.iter().map(|d| rec(d)).collect(),
            root: rec(root),
            apparent_bytes: sizes.iter().sum(),
            ..ScanResult::default()
        }
    }

    #[test]
    fn file_data_rounds_up_and_empty_files_take_nothing() {
        let sizes = [0, 1, 4095, 4096, 4097, 32768, 1 << 40];
        assert_eq!(file_clusters(&sizes, 4096), 1 + 1 + 1 + 2 + 8 + (1 << 28));
        assert_eq!(file_clusters(&sizes, 512), 1 + 8 + 8 + 9 + 64 + (1 << 31));
        assert_eq!(file_clusters(&[], 4096), 0);
    }

    #[test]
    fn exfat_directories() {
        let root = RootDir {
            system_entries: 3,
            clusters_at_format: 1,
        };
        // One directory "d" with an empty subdirectory "e": "d" holds one
        // entry set (3 entries), "e" none but still takes a cluster.
        let d = data(&[], &[&["e"], &[]], &["d"]);
        let f = footprint(FsKind::Exfat, 4096, root, &d);
        assert_eq!(f.dir_clusters, 2);
        assert_eq!(f.root_clusters, 1);
        assert_eq!(f.new_clusters(), 2);
        // 512-byte clusters hold 16 entries: 3 system entries + 5 sets of 3 = 18.
        let d = data(&[1, 1, 1, 1, 1], &[], &["a", "b", "c", "d", "e"]);
        let f = footprint(FsKind::Exfat, 512, root, &d);
        assert_eq!(f.root_clusters, 2);
        assert_eq!(f.new_clusters(), 5 + 1);
        // A 16-unit name needs a second File Name entry.
        let long = "x".repeat(16);
        let d = data(&[], &[&[long.as_str()]], &["d"]);
        assert_eq!(dir_entries(FsKind::Exfat, &d.dirs[0], true), 4);
    }

    #[test]
    fn fat32_directories() {
        let root = RootDir {
            system_entries: 1,
            clusters_at_format: 1,
        };
        // "README.TXT" needs no LFN: 1 entry; "ReadMe.txt" 2; plus . and ..
        let d = data(&[], &[&["README.TXT", "ReadMe.txt"]], &["DIR"]);
        assert_eq!(dir_entries(FsKind::Fat32, &d.dirs[0], true), 5);
        assert_eq!(dir_entries(FsKind::Fat32, &d.root, false), 1);
        let f = footprint(FsKind::Fat32, 512, root, &d);
        assert_eq!(f.new_clusters(), 1);
        // 512-byte root: label + 15 upper-case names fill it; one more spills.
        let names: Vec<String> = (0..16).map(|i| format!("F{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let d = data(&[0; 16], &[], &refs);
        let f = footprint(FsKind::Fat32, 512, root, &d);
        assert_eq!(f.root_clusters, 2);
        assert_eq!(f.new_clusters(), 1);
        let f = footprint(FsKind::Fat32, 512, root, &data(&[0; 15], &[], &refs[..15]));
        assert_eq!(f.new_clusters(), 0);
    }

    #[test]
    fn fat32_entry_limit() {
        let big = DirRecord {
            fat32_entries: 65_535,
            ..DirRecord::default()
        };
        let d = ScanResult {
            dirs: vec![big, DirRecord::default()],
            ..ScanResult::default()
        };
        assert_eq!(fat32_dirs_over_limit(&d), 1);
    }
}
