//! Choosing the file system and the cluster size.

use super::ctx::Ctx;
use super::Geometry;
use crate::error::PlanError;
use crate::options::{ClusterChoice, FormatOptions, FsChoice, FsKind};
use crate::rules::{self, ClusterRule, FsRule};

/// How the file system was chosen, before the cluster size.
pub(super) enum FsPick {
    /// This file system; pick the cluster size by its rules.
    Fs(FsKind, FsRule),
    /// This file system with this geometry at this cluster size (chosen together).
    Done(FsKind, FsRule, u64, ClusterRule, Geometry),
}

/// The file system and cluster size chosen, with their geometry.
pub(super) struct Chosen {
    pub(super) fs: FsKind,
    pub(super) fs_rule: FsRule,
    pub(super) cluster: u64,
    pub(super) cluster_rule: ClusterRule,
    pub(super) geometry: Geometry,
}

impl FsPick {
    /// The file system picked.
    pub(super) fn fs(&self) -> FsKind {
        match self {
            FsPick::Fs(fs, _) | FsPick::Done(fs, ..) => *fs,
        }
    }

    /// Completes the pick with the cluster size (by its rules when the file
    /// system was picked alone).
    pub(super) fn with_cluster(
        self,
        ctx: &Ctx<'_>,
        cluster: ClusterChoice,
    ) -> Result<Chosen, PlanError> {
        let (fs, fs_rule, cluster, cluster_rule, geometry) = match self {
            FsPick::Done(fs, fs_rule, c, rule, g) => (fs, fs_rule, c, rule, g),
            FsPick::Fs(fs, fs_rule) => {
                let (c, rule, g) = pick_cluster(ctx, fs, cluster)?;
                (fs, fs_rule, c, rule, g)
            }
        };
        Ok(Chosen {
            fs,
            fs_rule,
            cluster,
            cluster_rule,
            geometry,
        })
    }
}

/// The FAT width for `--fs fat` (and `--fs auto` up to 32 GiB).
fn pick_fat(
    ctx: &Ctx<'_>,
    cluster: ClusterChoice,
    why: FatWhy,
) -> Result<Option<FsPick>, PlanError> {
    let auto = why == FatWhy::Auto;
    match cluster.explicit() {
        Some((c, cluster_rule)) => {
            crate::error::check_cluster(FsKind::Fat32, c, ctx.medium.sector_size().get())?;
            match ctx.fat_width_at(c) {
                Some((fs, g)) => {
                    let rule = if auto && fs == FsKind::Fat32 {
                        FsRule::AutoFat32UpTo32GiB
                    } else {
                        FsRule::FatWidthFromClusterCount
                    };
                    Ok(Some(FsPick::Done(fs, rule, c, cluster_rule, g)))
                }
                None => Err(ctx.no_fat_width(c)),
            }
        }
        None => {
            if !ctx.valid_sizes(FsKind::Fat32).is_empty() {
                let rule = match why {
                    FatWhy::Auto => FsRule::AutoFat32UpTo32GiB,
                    FatWhy::Fat => FsRule::FatFat32Fits,
                    FatWhy::Esp => FsRule::EspFat32Fits,
                };
                return Ok(Some(FsPick::Fs(FsKind::Fat32, rule)));
            }
            // Too small for FAT32: the field-evidence size if some width
            // takes it, else the nearest size below, else above.
            let bps = ctx.medium.sector_size().bytes();
            let want = rules::auto_cluster(FsKind::Fat16, ctx.medium.volume_bytes()).max(bps);
            let below = core::iter::successors(Some(want), |&c| (c > bps).then_some(c / 2));
            let above = ctx.sizes(FsKind::Fat16).filter(|&c| c > want);
            for c in below.chain(above) {
                if let Some((fs, g)) = ctx.fat_width_at(c) {
                    let rule = match c.cmp(&want) {
                        core::cmp::Ordering::Equal => ClusterRule::FieldEvidence,
                        core::cmp::Ordering::Less => ClusterRule::FieldEvidenceReduced,
                        core::cmp::Ordering::Greater => ClusterRule::FieldEvidenceRaised,
                    };
                    return Ok(Some(FsPick::Done(fs, FsRule::AutoSmallFat, c, rule, g)));
                }
            }
            if auto {
                Ok(None)
            } else {
                Err(ctx.no_fat_width(want))
            }
        }
    }
}

/// Why the planner looks for a FAT width (it names the rule reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FatWhy {
    /// `--fs auto` up to 32 GiB.
    Auto,
    /// `--fs fat`.
    Fat,
    /// `--esp` (with `--fs auto` or `fat`).
    Esp,
}

/// The file system, by [`FormatOptions::fs`].
pub(super) fn pick_fs(ctx: &Ctx<'_>, opts: &FormatOptions) -> Result<FsPick, PlanError> {
    let (choice, why) = match (opts.esp, opts.fs) {
        (true, FsChoice::Fixed(FsKind::Exfat)) => return Err(PlanError::EspNotFat),
        (true, FsChoice::Auto | FsChoice::Fat) => (FsChoice::Fat, FatWhy::Esp),
        (_, c) => (c, FatWhy::Fat),
    };
    Ok(match choice {
        FsChoice::Fixed(fs) => FsPick::Fs(fs, FsRule::Explicit),
        FsChoice::Fat => match pick_fat(ctx, opts.cluster, why)? {
            Some(p) => p,
            None => return Err(ctx.no_fat_width(ctx.medium.sector_size().bytes())),
        },
        FsChoice::Auto => match rules::auto_fs(ctx.medium.volume_bytes()) {
            FsKind::Exfat => FsPick::Fs(FsKind::Exfat, FsRule::AutoExfatAbove32GiB),
            _ => match pick_fat(ctx, opts.cluster, FatWhy::Auto)? {
                Some(p) => p,
                None => FsPick::Fs(FsKind::Exfat, FsRule::AutoExfatTooSmallForFat32),
            },
        },
    })
}

/// The cluster size for a chosen file system: the one asked for, or the
/// field-evidence size, or the nearest valid size to it.
fn pick_cluster(
    ctx: &Ctx<'_>,
    fs: FsKind,
    cluster: ClusterChoice,
) -> Result<(u64, ClusterRule, Geometry), PlanError> {
    let bps = ctx.medium.sector_size().bytes();
    match cluster.explicit() {
        Some((c, rule)) => {
            let g = ctx
                .geometry(fs, c)
                .map_err(|e| with_valid_sizes(e, ctx, fs))?;
            Ok((c, rule, g))
        }
        None => {
            let want = rules::auto_cluster(fs, ctx.medium.volume_bytes()).max(bps);
            match ctx.geometry(fs, want) {
                Ok(g) => Ok((want, ClusterRule::FieldEvidence, g)),
                Err(first) => {
                    let valid = ctx.valid_sizes(fs);
                    let below = valid.iter().rev().find(|&c| c < want);
                    let pick = match below {
                        Some(c) => Some((c, ClusterRule::FieldEvidenceReduced)),
                        None => valid.first().map(|c| (c, ClusterRule::FieldEvidenceRaised)),
                    };
                    match pick {
                        Some((c, rule)) => Ok((c, rule, ctx.geometry(fs, c)?)),
                        None => Err(with_valid_sizes(first, ctx, fs)),
                    }
                }
            }
        }
    }
}

/// Fills in the list of valid cluster sizes of a cluster-count error.
fn with_valid_sizes(e: PlanError, ctx: &Ctx<'_>, fs: FsKind) -> PlanError {
    match e {
        PlanError::TooFewClusters {
            fs,
            volume,
            cluster,
            clusters,
            min_clusters,
            ..
        } => PlanError::TooFewClusters {
            fs,
            volume,
            cluster,
            clusters,
            min_clusters,
            valid: ctx.valid_sizes(fs),
        },
        PlanError::TooManyClusters {
            fs,
            volume,
            cluster,
            clusters,
            max_clusters,
            ..
        } => PlanError::TooManyClusters {
            fs,
            volume,
            cluster,
            clusters,
            max_clusters,
            valid: ctx.valid_sizes(fs),
        },
        other => {
            let _ = fs;
            other
        }
    }
}
