//! Mapped byte ranges → runs of whole blocks.

use crate::ExportError;
use std::ops::Range;

/// Checks that `ranges` are sorted, do not overlap and end inside an image
/// of `size` bytes. Empty ranges are allowed (and ignored).
pub(crate) fn check_ranges(ranges: &[Range<u64>], size: u64) -> Result<(), ExportError> {
    let mut prev_end = 0u64;
    for (index, r) in ranges.iter().enumerate() {
        let err = |why| ExportError::Range {
            index,
            start: r.start,
            end: r.end,
            why,
        };
        if r.end < r.start {
            return Err(err("it ends before it starts"));
        }
        if r.end > size {
            return Err(err("it ends beyond the image"));
        }
        if r.start == r.end {
            continue;
        }
        if r.start < prev_end {
            return Err(err(
                "it starts before the previous range ends (unsorted or overlapping)",
            ));
        }
        prev_end = r.end;
    }
    Ok(())
}

/// The runs of `block_size`-byte blocks that hold the bytes of `ranges`
/// (sorted, not overlapping), as block ranges: each byte range rounded
/// outwards to whole blocks, runs that then touch or overlap merged.
///
/// ```
/// let runs: Vec<_> = mkfs_alloc_export::block_runs(&[0..10, 4000..4100, 13000..13001], 4096).collect();
/// assert_eq!(runs, [0..2, 3..4]); // the first two share block 0 and touch
/// ```
pub fn block_runs(ranges: &[Range<u64>], block_size: u64) -> impl Iterator<Item = Range<u64>> + '_ {
    let mut ranges = ranges.iter().filter(|r| r.end > r.start).peekable();
    std::iter::from_fn(move || {
        let first = ranges.next()?;
        let start = first.start / block_size;
        let mut end = first.end.div_ceil(block_size);
        while let Some(next) = ranges.peek() {
            if next.start / block_size > end {
                break;
            }
            end = end.max(next.end.div_ceil(block_size));
            ranges.next();
        }
        Some(start..end)
    })
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn runs_round_outwards_and_merge() {
        let r: Vec<_> = block_runs(&[1..2, 512..513, 2048..2048, 5000..6000], 512).collect();
        assert_eq!(r, [0..2, 9..12]);
        let r: Vec<_> = block_runs(&[0..4096, 4096..8192], 4096).collect();
        assert_eq!(r, [0..2]);
    }

    #[test]
    fn bad_ranges_are_named() {
        assert!(check_ranges(&[0..10, 10..20], 20).is_ok());
        assert!(check_ranges(&[0..10, 5..20], 20).is_err());
        assert!(check_ranges(&[10..20, 0..5], 20).is_err());
        assert!(check_ranges(&[0..21], 20).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = [5..4];
        assert!(check_ranges(&backwards, 20).is_err());
        // Empty ranges anywhere are ignored.
        assert!(check_ranges(&[0..10, 3..3, 10..20], 20).is_ok());
    }
}
