//! [`ExtentMap`]: the byte ranges of a medium that a format writes or
//! relies on being zero, from the plan (not from the medium's holes).

use core::ops::Range;

use mkfs_alloc_partition::wipe_ranges;

use crate::{Found, MediumPlan};

/// The byte ranges of a medium (offsets from its first byte) that a format
/// writes or relies on being zero, sorted and merged; everything else may
/// hold anything without changing what the medium reads as.
///
/// Made from the plan: the ranges the wipe zeroes (everything before the
/// partition, the medium's last MiB, the volume's first MiB, 128 KiB at
/// every old signature [`Found`] lists; the partition table lies inside
/// them), and the volume's extents ([`Layout::extents`]: its metadata
/// regions and, for a populated plan, the clusters of the tree's
/// directories and files). A handful of ranges whatever the medium's size.
///
/// Uses: a bmaptool block map or an Android sparse image of an image
/// (`mkfs-alloc-export`) carries exactly these ranges, so a device flashed
/// with it reads as the image does; a read-back check after the format
/// compares them.
///
/// ```
/// use mkfs_alloc::blockio::MemDisk;
/// use mkfs_alloc::{Found, MediumOptions};
///
/// let mut disk = MemDisk::new(512, 2048 * 64)?; // 64 MiB
/// let plan = MediumOptions::new().plan_for(&disk)?;
/// let found = Found::probe(&mut disk)?;
/// let map = plan.extents(&found);
/// assert_eq!(map.ranges()[0].start, 0); // the table and the volume's start
/// assert!(map.mapped_bytes() < map.medium_bytes() / 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`Layout::extents`]: mkfs_alloc_layout::Layout::extents
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtentMap {
    ranges: Vec<Range<u64>>,
    medium_bytes: u64,
}

impl ExtentMap {
    /// The map of `plan` on a medium where `found` was found, with
    /// `content_clusters` clusters of content after the format's own.
    pub(crate) fn new(plan: &MediumPlan, found: &Found, content_clusters: u64) -> ExtentMap {
        let offset = plan.table.partition_start();
        let mut ranges = wipe_ranges(&plan.table, found.signatures());
        ranges.extend(
            plan.layout
                .extents(content_clusters)
                .map(|r| r.start + offset..r.end + offset),
        );
        ranges.sort_unstable_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
        for r in ranges.into_iter().filter(|r| !r.is_empty()) {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        ExtentMap {
            ranges: merged,
            medium_bytes: plan.medium_bytes,
        }
    }

    /// The ranges, sorted, not touching one another.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Bytes of the medium.
    pub fn medium_bytes(&self) -> u64 {
        self.medium_bytes
    }

    /// Bytes inside the ranges.
    pub fn mapped_bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// True when byte `offset` is inside a range.
    pub fn contains(&self, offset: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.end <= offset);
        self.ranges.get(i).is_some_and(|r| r.start <= offset)
    }
}

impl MediumPlan {
    /// What a format of this plan writes or relies on being zero on the
    /// target where `found` was found ([`Found::probe`] of it): the
    /// format's own regions and the tree's clusters, if it holds one.
    pub fn extents(&self, found: &Found) -> ExtentMap {
        let clusters = crate::write::content_clusters(self.content.as_ref());
        ExtentMap::new(self, found, clusters)
    }
}
