//! The byte ranges of a volume that a format writes or relies on being
//! zero ([`Layout::extents`]): what a block map or a sparse image must
//! carry, and what a verifying read-back must compare.

use super::{Layout, RegionKind};
use core::ops::Range;

impl Layout {
    /// The byte ranges of the volume (offsets from its first byte) that the
    /// format writes or relies on being zero, in order, adjacent ones
    /// merged: every region the writer writes or zeroes (the boot regions,
    /// the padding before the FAT, the FATs, the exFAT heap padding, bitmap
    /// and up-case table, the root directory) and, for a populated format,
    /// the `content_clusters` clusters from the first free one on (the
    /// content's directories and files with their zero-padded ends, holes
    /// in files included). Free clusters beyond them and the volume's tail
    /// are not in it: the file system never reads them as anything.
    ///
    /// No allocation: a handful of ranges, computed from the regions.
    pub fn extents(&self, content_clusters: u64) -> impl Iterator<Item = Range<u64>> + '_ {
        let regions = self.regions();
        let content = regions
            .iter()
            .find(|r| r.kind == RegionKind::FreeClusters)
            .map(|r| {
                r.offset
                    ..r.offset
                        + content_clusters
                            .saturating_mul(self.cluster_size.bytes())
                            .min(r.len)
            })
            .filter(|r| !r.is_empty());
        let written = regions
            .into_iter()
            .filter(|r| r.written)
            .map(|r| r.offset..r.offset + r.len);
        merge_adjacent(written.chain(content))
    }
}

/// Merges ranges (in order) that touch or overlap.
fn merge_adjacent(it: impl Iterator<Item = Range<u64>>) -> impl Iterator<Item = Range<u64>> {
    let mut it = it.peekable();
    core::iter::from_fn(move || {
        let mut cur = it.next()?;
        while let Some(next) = it.peek() {
            if next.start > cur.end {
                break;
            }
            cur.end = cur.end.max(next.end);
            it.next();
        }
        Some(cur)
    })
}

#[cfg(test)]
mod tests {
    use crate::{plan, FormatOptions, FsKind, Medium};
    use std::vec::Vec;

    #[test]
    fn metadata_then_content() {
        for fs in [FsKind::Exfat, FsKind::Fat32, FsKind::Fat16, FsKind::Fat12] {
            let size = if fs == FsKind::Fat32 {
                64 << 20
            } else {
                16 << 20
            };
            let opts = FormatOptions::new().fs(fs);
            let l = plan(&opts, &Medium::whole(size, 512).expect("medium"))
                .unwrap_or_else(|e| panic!("{fs:?}: {e}"));
            let plain: Vec<_> = l.extents(0).collect();
            // Everything from the first byte to the end of the root directory.
            let regions = l.regions();
            let root = regions
                .iter()
                .find(|r| r.kind == super::RegionKind::RootDirectory);
            let root_end = root.map(|r| r.offset + r.len).unwrap_or(0);
            assert_eq!(plain.first().map(|r| r.start), Some(0), "{fs:?}");
            assert_eq!(
                plain.last().map(|r| r.end),
                Some(root_end),
                "{fs:?}: {plain:?}"
            );
            // Ten clusters of content follow it, merged into the last range.
            let with: Vec<_> = l.extents(10).collect();
            assert_eq!(with.len(), plain.len(), "{fs:?}");
            let end = with.last().map(|r| r.end).unwrap_or(0);
            let regions = l.regions();
            let free = regions
                .iter()
                .find(|r| r.kind == super::RegionKind::FreeClusters);
            let free_start = free.map(|r| r.offset).unwrap_or(0);
            assert_eq!(end, free_start + 10 * l.cluster_size().bytes(), "{fs:?}");
        }
    }
}
