//! Why a re-cluster is refused: the reasons, worded for the user.

use std::fmt;

use mkfs_alloc_inspect::model::{Finding, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::plan::MAX_CLUSTERS;

/// Why a volume is not re-clustered (nothing was written).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A FAT volume given to the exFAT planner [`super::plan_from`]
    /// ([`super::plan()`] takes every kind).
    NotExfat {
        /// What it is.
        kind: FsKind,
    },
    /// The volume is damaged or inconsistent: what the reader found.
    Damaged {
        /// The first finding that refuses the change.
        finding: Finding,
    },
    /// More findings than the reader keeps.
    TooManyFindings,
    /// The size is not a power of two in the sector size..32 MiB range.
    InvalidSize {
        /// The size asked.
        cluster: u64,
        /// The sector size.
        sector: u32,
    },
    /// The volume already has that cluster size.
    SameSize {
        /// The cluster size.
        cluster: u64,
    },
    /// A larger cluster: [`super::plan_from`] plans only the smaller sizes (the
    /// larger ones read the files' chains: [`super::plan()`]).
    LargerNotSupported {
        /// The cluster size now.
        old: u64,
        /// The cluster size asked.
        new: u64,
    },
    /// More clusters than exFAT allows.
    TooManyClusters {
        /// The cluster count the new size gives.
        clusters: u64,
    },
    /// The new FAT does not fit into the free space between the old FAT and
    /// the heap, and the heap's start cannot move (no free sector for the
    /// intent record between the backup boot region and the FAT, or the
    /// heap too small).
    FatDoesNotFit {
        /// Bytes the new FAT and the intent record need.
        need: u64,
        /// Bytes free between the old FAT and the heap.
        free: u64,
        /// Old clusters at the heap's start the new FAT would cover (they
        /// would have to move first).
        clusters: u64,
        /// Of those, the ones in use.
        in_use: u64,
    },
    /// Too little free space for the new bitmap and the directory copies.
    TooLittleSpace {
        /// Bytes needed (in runs of whole old clusters).
        need: u64,
        /// Bytes free.
        free: u64,
    },
    /// FAT32: what only a FAT volume refuses.
    Fat(super::fat::FatRefusal),
    /// A resize: what only a change of the volume's size refuses.
    Resize(super::grow::ResizeRefusal),
    /// A structure this version does not handle.
    Unsupported {
        /// What.
        what: String,
    },
    /// A file or directory the file system converted to cannot hold (the
    /// first one found, by its path).
    DoesNotFit {
        /// `/dir/name`.
        path: String,
        /// Why.
        why: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotExfat { kind } => write!(
                f,
                "the volume is {kind:?}: plan_from plans exFAT volumes only (recluster::plan takes FAT12, FAT16 and FAT32 too)"
            ),
            Refusal::Damaged { finding } => {
                write!(f, "the volume is damaged or inconsistent: {finding}")
            }
            Refusal::TooManyFindings => f.write_str("the volume has more problems than were kept"),
            Refusal::InvalidSize { cluster, sector } => write!(
                f,
                "{cluster} bytes is not a valid exFAT cluster size: a power of two from the sector size ({sector} bytes) to 32 MiB"
            ),
            Refusal::SameSize { cluster } => {
                write!(f, "the volume already has {cluster}-byte clusters")
            }
            Refusal::LargerNotSupported { old, new } => write!(
                f,
                "larger clusters are not supported yet (now {old} bytes, asked {new}; only a size that divides the current one)"
            ),
            Refusal::TooManyClusters { clusters } => write!(
                f,
                "{clusters} clusters is more than exFAT's {MAX_CLUSTERS}"
            ),
            Refusal::FatDoesNotFit { need, free, clusters, in_use } => write!(
                f,
                "the new FAT needs {need} bytes but only {free} are free between the old FAT and the cluster heap: it would cover the heap's first {clusters} clusters ({in_use} in use), and moving them needs a free sector between the backup boot region and the FAT for the intent record"
            ),
            Refusal::TooLittleSpace { need, free } => write!(
                f,
                "too little free space: the new bitmap, the directory copies and the data that moves need {need} bytes, {free} are free; free at least {} bytes",
                need.saturating_sub(*free)
            ),
            Refusal::Fat(r) => r.fmt(f),
            Refusal::Resize(r) => r.fmt(f),
            Refusal::Unsupported { what } => write!(f, "not supported yet: {what}"),
            Refusal::DoesNotFit { path, why } => write!(f, "{path}: {why}"),
        }
    }
}

/// The findings that refuse a change of the volume `model` describes,
/// first one first: a damaged or inconsistent volume (unless `allowed`:
/// the marks an unfinished run of this job leaves), more findings than the
/// reader keeps, and bad clusters (which only [`super::plan()`] carries
/// over, after listing them, and a shrink checks against its new end:
/// those callers allow them).
///
/// # Errors
///
/// [`Refusal::Damaged`], [`Refusal::TooManyFindings`] or
/// [`Refusal::Unsupported`].
pub(super) fn refuse_findings(
    model: &VolumeModel,
    allowed: impl Fn(&Finding) -> bool,
) -> Result<(), Refusal> {
    if let Some(f) = model
        .findings
        .iter()
        .find(|f| f.refuses_change() && !allowed(f))
    {
        return Err(Refusal::Damaged { finding: f.clone() });
    }
    if model.findings_dropped > 0 {
        return Err(Refusal::TooManyFindings);
    }
    if let Some(f) = model
        .findings
        .iter()
        .find(|f| matches!(f, Finding::BadClusters { .. }) && !allowed(f))
    {
        return Err(Refusal::Unsupported {
            what: format!("a volume with bad clusters ({f})"),
        });
    }
    Ok(())
}
