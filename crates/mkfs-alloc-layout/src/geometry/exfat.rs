//! exFAT geometry: where the FAT, the cluster heap and the system clusters of
//! a fresh volume lie (the bytes are `writer::exfat`'s, the structures
//! `mkfs-alloc-ondisk`'s).
//!
//! ```text
//!  volume start (PartitionOffset on the medium)
//!  │ sector 0      main boot sector
//!  │ 1..=8         main extended boot sectors (… 00 00 55 AA)
//!  │ 9, 10         OEM parameters (zero, or the SD layout's Flash
//!  │               Parameters record), reserved (zero)
//!  │ 11            main boot checksum (u32 repeated)
//!  │ 12..=23       backup boot region (copy of 0..=11)
//!  │ …             zero up to FatOffset (aligned)
//!  ├ FatOffset     FAT: [F8FFFFFF, FFFFFFFF, bitmap chain, up-case chain, root EOC, 0…]
//!  │ …             zero up to ClusterHeapOffset (aligned)
//!  ├ heap cluster 2: allocation bitmap, then up-case table, then root directory
//!  │ …             free clusters (not touched by a quick format)
//!  └ VolumeLength
//! ```

use mkfs_alloc_ondisk::exfat::upcase;

use crate::error::{ClusterSizes, PlanError};
use crate::geometry::{ClusterIndex, Clusters};
use crate::options::FsKind;
use crate::units::MIB;

/// Largest exFAT cluster: 32 MiB (spec §3.1.16).
pub const MAX_CLUSTER: u64 = 32 * MIB;
/// Smallest exFAT volume: 1 MiB (spec §3.1.5: VolumeLength >= 2^20 / BPS).
pub const MIN_VOLUME: u64 = MIB;
/// First cluster of the heap.
pub const FIRST_CLUSTER: u32 = 2;

/// The computed exFAT geometry, in sectors unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExfatGeometry {
    /// Bytes per sector.
    pub bps: u32,
    /// Cluster size in bytes.
    pub cluster: u64,
    /// Volume length in sectors.
    pub volume_sectors: u64,
    /// FAT offset.
    pub fat_offset: u32,
    /// FAT length.
    pub fat_length: u32,
    /// Cluster heap offset.
    pub heap_offset: u32,
    /// Cluster count.
    pub cluster_count: u32,
    /// Allocation bitmap length in bytes.
    pub bitmap_bytes: u64,
    /// Clusters taken by the bitmap.
    pub bitmap_clusters: u32,
    /// Clusters taken by the up-case table.
    pub upcase_clusters: u32,
    /// Clusters taken by the root directory.
    pub root_clusters: u32,
}

impl ExfatGeometry {
    /// First cluster of the allocation bitmap.
    pub fn bitmap_cluster(&self) -> ClusterIndex {
        ClusterIndex::FIRST
    }
    /// First cluster of the up-case table.
    pub fn upcase_cluster(&self) -> ClusterIndex {
        self.after(self.bitmap_cluster(), self.bitmap_clusters)
    }
    /// First cluster of the root directory.
    pub fn root_cluster(&self) -> ClusterIndex {
        self.after(self.upcase_cluster(), self.upcase_clusters)
    }
    /// The cluster `count` after `c`: inside the heap, whose cluster count
    /// the planner holds far below the 32-bit range.
    fn after(&self, c: ClusterIndex, count: u32) -> ClusterIndex {
        c.after(Clusters(count)).unwrap_or(c)
    }
    /// Clusters in use after formatting.
    pub fn used_clusters(&self) -> u32 {
        self.bitmap_clusters + self.upcase_clusters + self.root_clusters
    }
}

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// Computes the exFAT geometry for a volume of `volume_bytes` at byte offset
/// `start` on its medium, aligning the FAT and the heap to `align` bytes
/// measured from the start of the medium (exfatprogs' formulas, reference
/// A.5, with one FAT).
///
/// # Errors
///
/// [`PlanError`] naming the limit: a volume below
/// exFAT's 1 MiB minimum, too few or too many clusters, a cluster or
/// sector size out of range.
pub fn geometry(
    volume_bytes: u64,
    bps: u32,
    cluster: u64,
    start: u64,
    align: u64,
) -> Result<ExfatGeometry, PlanError> {
    let fs = FsKind::Exfat;
    let bps64 = u64::from(bps);
    crate::error::check_cluster(fs, cluster, bps)?;
    let volume_sectors = volume_bytes / bps64;
    let len = volume_sectors * bps64;
    if len < MIN_VOLUME {
        return Err(PlanError::VolumeTooSmall {
            fs,
            volume: volume_bytes,
            min: MIN_VOLUME,
        });
    }
    let too_few = |clusters: u64, min_clusters: u64| PlanError::TooFewClusters {
        fs,
        volume: volume_bytes,
        cluster,
        clusters,
        min_clusters,
        valid: ClusterSizes::new(),
    };
    let fat_off_bytes = round_up(start + 24 * bps64, align) - start;
    if fat_off_bytes + bps64 >= len {
        return Err(too_few(0, 1));
    }
    // Upper bound of the cluster count: every byte after the FAT offset is either
    // FAT (4 bytes per cluster, plus two reserved entries) or heap.
    let max_clu = (len - fat_off_bytes - 9) / (cluster + 4) + 1;
    let fat_len_bytes = round_up((max_clu + 2) * 4, bps64);
    let heap_bytes = round_up(start + fat_off_bytes + fat_len_bytes, align) - start;
    let clusters = len.saturating_sub(heap_bytes) / cluster;
    let max_clusters = const { FsKind::Exfat.max_clusters() };
    if clusters > max_clusters {
        return Err(PlanError::TooManyClusters {
            fs,
            volume: volume_bytes,
            cluster,
            clusters,
            max_clusters,
            valid: ClusterSizes::new(),
        });
    }
    let bitmap_bytes = clusters.div_ceil(8);
    let bitmap_clusters = bitmap_bytes.div_ceil(cluster).max(1);
    let upcase_len = u64::try_from(upcase::UPCASE_TABLE_LEN).unwrap_or(u64::MAX);
    let upcase_clusters = upcase_len.div_ceil(cluster);
    let used = bitmap_clusters + upcase_clusters + 1;
    // Room for the system clusters plus at least one free cluster.
    if clusters < used + 1 {
        return Err(too_few(clusters, used + 1));
    }
    let to_u32 = |v: u64| {
        u32::try_from(v).map_err(|_| PlanError::VolumeTooLarge {
            fs,
            volume: volume_bytes,
            sector: bps,
            max: u64::from(u32::MAX) * bps64,
        })
    };
    Ok(ExfatGeometry {
        bps,
        cluster,
        volume_sectors,
        fat_offset: to_u32(fat_off_bytes / bps64)?,
        fat_length: to_u32(fat_len_bytes / bps64)?,
        heap_offset: to_u32(heap_bytes / bps64)?,
        cluster_count: to_u32(clusters)?,
        bitmap_bytes,
        bitmap_clusters: to_u32(bitmap_clusters)?,
        upcase_clusters: to_u32(upcase_clusters)?,
        root_clusters: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, KIB};
    #[allow(unused_imports)]
    use std::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };

    #[test]
    fn matches_mkfs_exfat_on_1gib_32k() {
        // Reference A.5: `truncate -s 1G a.img && mkfs.exfat -c 32K a.img`:
        // FatOffset 2048, FatLength 256, CHO 4096, CC 32704.
        let g = geometry(GIB, 512, 32 * KIB, 0, MIB).expect("valid");
        assert_eq!(g.fat_offset, 2048);
        assert_eq!(g.fat_length, 256);
        assert_eq!(g.heap_offset, 4096);
        assert_eq!(g.cluster_count, 32704);
        assert_eq!(g.bitmap_bytes, 4088);
        assert_eq!(
            (
                g.bitmap_cluster().get(),
                g.upcase_cluster().get(),
                g.root_cluster().get()
            ),
            (2, 3, 4)
        );
    }
}
