//! The read-back's plan: the pieces [`WriteDigest::verify`] reads, in
//! runs of consecutive pieces of at most [`VERIFY_READ`] bytes.

use std::ops::Range;

use super::{WriteDigest, PIECE, VERIFY_READ};

/// The pieces to read, in runs of consecutive pieces.
pub(super) struct ReadPlan {
    pieces: Vec<u64>,
    device_end: u64,
}

impl ReadPlan {
    pub(super) fn new(d: &WriteDigest, zero_ranges: &[Range<u64>], device_end: u64) -> ReadPlan {
        let mut pieces: Vec<u64> = d.pieces.keys().copied().collect();
        let spans = d
            .zeros
            .iter()
            .map(|(&s, &e)| s..e)
            .chain(zero_ranges.iter().cloned());
        for r in spans.filter(|r| r.start < r.end) {
            pieces.extend(r.start / PIECE..=(r.end - 1) / PIECE);
        }
        pieces.sort_unstable();
        pieces.dedup();
        pieces.retain(|&p| p * PIECE < device_end);
        ReadPlan { pieces, device_end }
    }

    pub(super) fn total(&self) -> u64 {
        self.runs().map(|r| r.end - r.start).sum()
    }

    /// Byte ranges of at most [`VERIFY_READ`] bytes, whole pieces (the last
    /// one clipped to the device's end).
    pub(super) fn runs(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        let per = (VERIFY_READ / PIECE) as usize;
        let mut i = 0;
        std::iter::from_fn(move || {
            let first = *self.pieces.get(i)?;
            let mut n = 1;
            while n < per && self.pieces.get(i + n) == Some(&(first + n as u64)) {
                n += 1;
            }
            i += n;
            let start = first * PIECE;
            Some(start..(start + n as u64 * PIECE).min(self.device_end))
        })
    }
}
