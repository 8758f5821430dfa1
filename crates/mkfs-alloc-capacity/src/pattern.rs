//! Probe blocks: every unit written carries a header with a magic, the run's
//! salt and its own unit number, followed by pseudo-random bytes derived from
//! both. A read-back unit is classified as the expected block, as another
//! unit's block of this run (the two addresses share storage), as a block of
//! another run (stale data the medium kept), or as anything else. The block
//! format is `mkfs_alloc_ondisk::testblock`.

use mkfs_alloc_ondisk::testblock::{self, TestBlockHeader, TEST_BLOCK_HEADER as HEADER};

/// What a unit read back holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The block written there in this run.
    Good,
    /// The block this run wrote at another unit: the two share storage.
    Alias(u64),
    /// A probe block of another run (old data the medium kept or returned).
    Stale,
    /// Anything else (zeros, garbage, a torn block).
    Other,
}

/// Fills `buf` (one unit) with the probe block of `unit` for run `salt`.
pub(crate) fn fill(buf: &mut [u8], salt: u64, unit: u64) {
    testblock::fill(buf, salt, unit);
}

/// The salt and unit of `buf` if it is a complete, intact probe block of
/// any run. `scratch` is a unit-sized buffer.
pub(crate) fn identify(buf: &[u8], scratch: &mut [u8]) -> Option<(u64, u64)> {
    let h = TestBlockHeader::read(buf).filter(|h| h.intact())?;
    if buf.len() < HEADER || scratch.len() != buf.len() {
        return None;
    }
    let (s, u) = (h.salt.get(), h.unit.get());
    fill(scratch, s, u);
    (scratch == buf).then_some((s, u))
}

/// Classifies `buf` (one unit, read back from `unit`) for run `salt`.
/// `scratch` is a unit-sized buffer used to regenerate the expected body.
pub(crate) fn classify(buf: &[u8], salt: u64, unit: u64, scratch: &mut [u8]) -> Seen {
    let Some(h) = TestBlockHeader::read(buf) else {
        return Seen::Other;
    };
    let (s, u) = (h.salt.get(), h.unit.get());
    if s != salt {
        return if h.intact() { Seen::Stale } else { Seen::Other };
    }
    if !h.intact() {
        return Seen::Other;
    }
    fill(scratch, salt, u);
    if scratch != buf {
        return Seen::Other;
    }
    if u == unit {
        Seen::Good
    } else {
        Seen::Alias(u)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_ondisk::rng::{mix, SplitMix64};

    #[test]
    fn blocks_are_recognised_by_position_and_salt() {
        let mut a = vec![0u8; 4096];
        let mut s = vec![0u8; 4096];
        fill(&mut a, 11, 5);
        assert_eq!(classify(&a, 11, 5, &mut s), Seen::Good);
        assert_eq!(classify(&a, 11, 6, &mut s), Seen::Alias(5));
        assert_eq!(classify(&a, 12, 5, &mut s), Seen::Stale);
        assert_eq!(identify(&a, &mut s), Some((11, 5)));
        a[100] ^= 1;
        assert_eq!(classify(&a, 11, 5, &mut s), Seen::Other);
        assert_eq!(identify(&a, &mut s), None);
        assert_eq!(classify(&[0u8; 4096], 11, 5, &mut s), Seen::Other);
        let mut b = vec![0u8; 4096];
        fill(&mut b, 11, 6);
        assert_ne!(a[HEADER..], b[HEADER..]);
        // The body is SplitMix64 from mix(salt ^ unit.rotl(17)), word by
        // word: blocks written by earlier versions still classify.
        let mut g = SplitMix64::new(mix(11 ^ 6u64.rotate_left(17)));
        assert_eq!(b[HEADER..HEADER + 8], g.next_u64().to_le_bytes());
        let mut odd = vec![0u8; 45];
        fill(&mut odd, 11, 6);
        assert_eq!(odd[..], b[..45]);
    }
}
