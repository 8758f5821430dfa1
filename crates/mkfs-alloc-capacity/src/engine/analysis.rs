//! What the reads say: runs of units, the wrap, the bounds of real storage.

use super::*;

/// Greatest common divisor (`gcd(0, b) == b`).
pub(super) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Groups sorted distinct `units` into runs of consecutive units of at most
/// `max` units: `(first, count)`.
pub(super) fn runs(units: &[u64], max: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &u in units {
        match out.last_mut() {
            Some((first, count)) if *first + *count == u && *count < max => *count += 1,
            _ => out.push((u, 1)),
        }
    }
    out
}

/// The wrap: the greatest common divisor of the distances between a unit
/// and the unit whose block it returned, if below `n`. Under the wrap model
/// (unit `u` stored at `u % m`) every such distance is a multiple of `m`,
/// so `m` divides the result; [`Engine::refine_wrap`] narrows it to `m`.
pub(super) fn wrap_of<'a>(all: impl Iterator<Item = &'a (u64, Seen)>, n: u64) -> Option<u64> {
    all.filter_map(|&(u, s)| match s {
        Seen::Alias(v) if v != u => Some(u.abs_diff(v)),
        _ => None,
    })
    .reduce(gcd)
    .filter(|&m| m < n)
}

/// What the cache search found.
pub(super) struct CacheSearch {
    /// What the end region read back.
    pub(super) end_results: Vec<(u64, Seen)>,
    /// The cache size, if the device has one within the search.
    pub(super) cache: Option<u64>,
    /// How many units a round must write to flush the cache.
    pub(super) flush: u64,
}

/// The units a bisect round writes after its samples to push them out of
/// the device cache, on real storage below the samples.
pub(super) struct Filler {
    /// The units written (at least the flush length, all different
    /// addresses: a cache holds blocks by the address written).
    pub(super) units: Vec<u64>,
    /// The units read back after the first round, which must hold their
    /// block (the filler's storage is real).
    pub(super) check: Vec<u64>,
    /// The filler's storage is `[0, storage)`; the samples lie above.
    pub(super) storage: u64,
}

impl Filler {
    /// The filler of a bisect below `hi` (the first unit known bad, or the
    /// wrap): `flush` units at the start when the real storage may hold
    /// twice that; else, under a wrap `m`, the same count of addresses that
    /// share a few cells at the start (`r + j·m` for `r < k`, `k·(n / m)`
    /// of them), checked by the alias of each cell written last. A real
    /// size of at most twice the flush length (the cache search's limit
    /// when the device's end reads back, as every wraparound fake's does)
    /// is bisected too. `None`: no room for it (no usable start).
    pub(super) fn for_bisect(hi: u64, flush: u64, wrap: Option<u64>, n: u64) -> Option<Filler> {
        if hi < MIN_UNITS {
            return None;
        }
        if hi > flush.saturating_mul(2) {
            let units: Vec<u64> = (0..flush).collect();
            return Some(Filler {
                check: units.clone(),
                units,
                storage: flush,
            });
        }
        let m = wrap.filter(|&m| m >= hi && m > 0)?;
        let per_cell = n / m;
        let k = flush.div_ceil(per_cell.max(1));
        if per_cell < 2 || k.saturating_mul(2) >= hi {
            return None;
        }
        let units: Vec<u64> = (0..per_cell)
            .flat_map(|j| (0..k).map(move |r| r + j * m))
            .collect();
        let check = (0..k).map(|r| r + (per_cell - 1) * m).collect();
        Some(Filler {
            units,
            check,
            storage: k,
        })
    }
}

/// What round 1 and the end region say about where real storage ends.
pub(super) enum Bounds {
    /// Every unit read back: a genuine device.
    Genuine,
    /// The bad units are not one tail: damaged, from this unit.
    Damaged(u64),
    /// The boundary lies in `[lo, hi)`.
    Between(u64, u64),
}

/// Step 3: the first bad unit (`hi`) not explained by the wrap, and the unit
/// after the last good one below it (`lo`). `r1` is round 1, `all` round 1
/// and the end region.
pub(super) fn bounds(
    r1: &[(u64, Seen)],
    all: &[(u64, Seen)],
    n: u64,
    wrap: Option<u64>,
    end_start: u64,
) -> Bounds {
    // An alias inside [0, wrap) with a partner congruent modulo the wrap
    // is explained by the wrap: the storage works, a later write to the
    // other address overwrote it.
    let explained = |u: u64, s: Seen| match (wrap, s) {
        (Some(m), Seen::Alias(v)) => u % m == v % m,
        _ => false,
    };
    let limit = wrap.unwrap_or(n);
    let mut hi = limit;
    for &(u, s) in all {
        if u < limit && s != Seen::Good && !explained(u, s) {
            hi = hi.min(u);
        }
    }
    if wrap.is_none() && hi == n {
        return Bounds::Genuine;
    }
    // Good sampled units above the first bad one (outside the end region,
    // whose cache may answer): the bad units are not one tail.
    let tail_broken = r1
        .iter()
        .any(|&(u, s)| s == Seen::Good && u > hi && u < limit && u < end_start);
    if tail_broken {
        return Bounds::Damaged(hi);
    }
    let lo = r1
        .iter()
        .filter(|&&(u, s)| u < hi && (s == Seen::Good || explained(u, s)))
        .map(|&(u, _)| u + 1)
        .max()
        .unwrap_or(0);
    Bounds::Between(lo, hi)
}
