//! The recommendation rule (see [`recommend`]).

use crate::advise::{
    compat_max_cluster, Candidate, Policy, Recommendation, RecommendationRule,
    MIN_PREFERRED_CLUSTER,
};
use crate::rows::FsNote;
use mkfs_alloc_layout::units::format_size;
use mkfs_alloc_layout::FsKind;

/// The compatibility limit in words ("FAT32 up to 32 KiB").
pub(crate) fn compat_text(fs: FsKind) -> String {
    format!("{fs} up to {}", format_size(compat_max_cluster(fs)))
}

/// The candidates up to the compatibility `ceiling`, the floor (4 KiB, or
/// the largest compatible size when none reaches it) and the compatible
/// candidates from the floor up.
fn candidate_sets(cands: &[Candidate], ceiling: u64) -> (Vec<&Candidate>, u64, Vec<&Candidate>) {
    let compatible: Vec<&Candidate> = cands
        .iter()
        .filter(|c| c.row.cluster_size <= ceiling)
        .collect();
    let floor = if compatible
        .iter()
        .any(|c| c.row.cluster_size >= MIN_PREFERRED_CLUSTER)
    {
        MIN_PREFERRED_CLUSTER
    } else {
        compatible.last().map_or(0, |c| c.row.cluster_size)
    };
    let preferred: Vec<&Candidate> = compatible
        .iter()
        .copied()
        .filter(|c| c.row.cluster_size >= floor)
        .collect();
    (compatible, floor, preferred)
}

/// Why nothing fits: the candidate closest to fitting (the compatible ones
/// first), and the largest size beyond the ceiling that would fit.
fn does_not_fit(cands: &[Candidate], compatible: &[&Candidate], ceiling: u64) -> FsNote {
    let fits = |c: &Candidate| c.row.fits == Some(true);
    let shortfall = |c: &&Candidate| {
        c.footprint
            .map_or(u64::MAX, |f| f.bytes_on_disk())
            .saturating_sub(c.row.usable_bytes)
    };
    let pool: Vec<&Candidate> = if compatible.is_empty() {
        cands.iter().collect()
    } else {
        compatible.to_vec()
    };
    let best = pool
        .iter()
        .copied()
        .min_by_key(shortfall)
        .unwrap_or(&cands[0]);
    FsNote::DoesNotFit {
        cluster_size: best.row.cluster_size,
        needed_bytes: best.row.data_bytes_on_disk.unwrap_or(0),
        free_bytes: best.row.usable_bytes,
        fits_beyond_compat: cands
            .iter()
            .rfind(|c| c.row.cluster_size > ceiling && fits(c))
            .map(|c| c.row.cluster_size),
    }
}

/// The recommendation rule with data (rows sorted by cluster size, data
/// with a non-zero apparent size):
///
/// 1. candidates: valid sizes up to the compatibility ceiling
///    ([`compat_max_cluster`]; every valid size with
///    [`Policy::beyond_compat`]), and not below [`MIN_PREFERRED_CLUSTER`]
///    unless no candidate is that large;
/// 2. the largest candidate whose waste is within the limit and where the
///    data fits ([`RecommendationRule::WithinMaxWaste`]);
/// 3. else the fitting candidate that wastes least, i.e. the smallest
///    ([`RecommendationRule::LeastWaste`]);
/// 4. else the largest size up to the ceiling (below the floor too) where
///    the data fits ([`RecommendationRule::OnlyFitting`]);
/// 5. else no recommendation: the [`FsNote::DoesNotFit`] note says how much
///    is missing, and whether a size beyond the ceiling would do.
///
/// Waste never shrinks as clusters grow (each file and directory rounds up
/// to a multiple of the previous size), so "largest within the limit" is a
/// threshold.
pub(crate) fn recommend(
    fs: FsKind,
    cands: &[Candidate],
    policy: &Policy,
) -> Result<Recommendation, FsNote> {
    let max_waste = policy.max_waste_percent;
    let ceiling = if policy.beyond_compat {
        u64::MAX
    } else {
        compat_max_cluster(fs)
    };
    let (compatible, floor, preferred) = candidate_sets(cands, ceiling);
    let fits = |c: &Candidate| c.row.fits == Some(true);
    let waste = |c: &Candidate| c.row.waste_percent.unwrap_or(0.0);
    let ceiling_text = if policy.beyond_compat {
        "cluster sizes beyond the compatibility limit allowed".to_string()
    } else {
        compat_text(fs)
    };
    let below_floor = if floor < MIN_PREFERRED_CLUSTER {
        format!("; clusters of 4 KiB and more are not valid for {fs} on this volume")
    } else {
        String::new()
    };
    let make = |c: &Candidate, rule, reason: String| Recommendation {
        cluster_size: c.row.cluster_size,
        rule,
        reason: format!("{reason}{below_floor}"),
    };

    if let Some(c) = preferred
        .iter()
        .copied()
        .rfind(|c| fits(c) && waste(c) <= max_waste)
    {
        return Ok(make(
            c,
            RecommendationRule::WithinMaxWaste,
            format!(
                "the largest cluster size whose waste ({:.2}%) stays within {}% and that every common system handles ({ceiling_text})",
                waste(c),
                trim_float(max_waste)
            ),
        ));
    }
    if let Some(c) = preferred.iter().copied().find(|c| fits(c)) {
        return Ok(make(
            c,
            RecommendationRule::LeastWaste,
            format!(
                "no cluster size of {} or more keeps the waste within {}%; {} wastes least ({:.1}%, {} more than the data's size)",
                format_size(floor.max(512)),
                trim_float(max_waste),
                format_size(c.row.cluster_size),
                waste(c),
                format_size(c.row.waste_bytes.unwrap_or(0)),
            ),
        ));
    }
    if let Some(c) = compatible.iter().copied().rfind(|c| fits(c)) {
        return Ok(make(
            c,
            RecommendationRule::OnlyFitting,
            format!(
                "the data fits only with clusters of {} or less (waste {:.1}%)",
                format_size(c.row.cluster_size),
                waste(c)
            ),
        ));
    }
    Err(does_not_fit(cands, &compatible, ceiling))
}

/// `1` rather than `1.0`, `2.5` as is.
fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
