//! What every geometry computation of one plan shares, and the questions
//! the planner asks of it (valid cluster sizes, the FAT width at a size).

use super::Geometry;
use crate::error::{ClusterSizes, PlanError};
use crate::geometry::{exfat, fat};
use crate::options::{FsKind, Medium};

/// What every geometry computation of one plan shares.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ctx<'a> {
    /// The medium (whole sectors).
    pub(super) medium: &'a Medium,
    /// Alignment of the FAT and data region, from the medium start.
    pub(super) align: u64,
    /// FAT12/16 fixed root directory entries.
    pub(super) root_entries: u32,
    /// Number of FATs on FAT12/16/32.
    pub(super) num_fats: u8,
}

impl Ctx<'_> {
    pub(super) fn geometry(&self, fs: FsKind, cluster: u64) -> Result<Geometry, PlanError> {
        let m = self.medium;
        let (v, bps, start) = (
            m.volume_bytes(),
            m.sector_size().get(),
            m.partition_offset(),
        );
        Ok(match fs {
            FsKind::Exfat => Geometry::Exfat(exfat::geometry(v, bps, cluster, start, self.align)?),
            _ => Geometry::Fat(fat::geometry(
                fs,
                v,
                bps,
                cluster,
                fat::Placement {
                    start,
                    align: self.align,
                    root_entries: self.root_entries,
                    num_fats: self.num_fats,
                },
            )?),
        })
    }

    /// Cluster sizes from the sector size up to `fs`'s maximum.
    pub(super) fn sizes(&self, fs: FsKind) -> impl Iterator<Item = u64> {
        let bps = self.medium.sector_size().bytes();
        let max = crate::rules::max_cluster(fs, self.medium.sector_size().get());
        core::iter::successors(Some(bps), |c| Some(c * 2)).take_while(move |&c| c <= max)
    }

    pub(super) fn valid_sizes(&self, fs: FsKind) -> ClusterSizes {
        self.sizes(fs)
            .filter(|&c| self.geometry(fs, c).is_ok())
            .collect()
    }

    /// The FAT width whose accepted cluster-count range holds the count at
    /// `cluster` (at most one does: the ranges are disjoint).
    pub(super) fn fat_width_at(&self, cluster: u64) -> Option<(FsKind, Geometry)> {
        FAT_WIDTHS
            .iter()
            .find_map(|&fs| self.geometry(fs, cluster).ok().map(|g| (fs, g)))
    }

    /// Cluster sizes at which some FAT width is valid.
    pub(super) fn any_fat_sizes(&self) -> ClusterSizes {
        self.sizes(FsKind::Fat32)
            .filter(|&c| self.fat_width_at(c).is_some())
            .collect()
    }

    /// The error for a cluster size at which no FAT width fits.
    pub(super) fn no_fat_width(&self, cluster: u64) -> PlanError {
        // The count as the width the spec would give it computes it (that
        // width rejected it only for the margin).
        let counts = FAT_WIDTHS
            .iter()
            .filter_map(|&fs| match self.geometry(fs, cluster) {
                Err(PlanError::TooFewClusters { clusters, .. })
                | Err(PlanError::TooManyClusters { clusters, .. }) => Some((fs, clusters)),
                _ => None,
            });
        let clusters = counts
            .clone()
            .find(|&(fs, c)| FsKind::fat_width(c) == fs)
            .or(counts.clone().next())
            .map_or(0, |(_, c)| c);
        PlanError::NoFatWidth {
            volume: self.medium.volume_bytes(),
            cluster,
            clusters,
            valid: self.any_fat_sizes(),
        }
    }
}

/// FAT widths, widest first.
pub(super) const FAT_WIDTHS: [FsKind; 3] = [FsKind::Fat32, FsKind::Fat16, FsKind::Fat12];

/// Every cluster size (a power of two) for which `fs` can lay out this medium
/// (FAT12/16 with the default 512 root directory entries).
pub fn valid_cluster_sizes(fs: FsKind, medium: &Medium, align: u64) -> ClusterSizes {
    Ctx {
        medium,
        align,
        root_entries: fat::DEFAULT_ROOT_ENTRIES,
        num_fats: fat::NUM_FATS,
    }
    .valid_sizes(fs)
}
