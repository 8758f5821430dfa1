//! Why a re-cluster, a resize or a conversion did not run or stopped.

use super::state::Intent;
use super::{AutoChoice, Refusal};
use mkfs_alloc_blockio::IoError;
use mkfs_alloc_inspect::InspectError;

/// Why a re-cluster did not run or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReclusterError {
    /// Refused before the first write.
    #[error("{0}")]
    Refused(Refusal),
    /// The medium holds no single exFAT or FAT volume.
    #[error("{0}")]
    NoVolume(String),
    /// An unfinished resize is on the medium (a re-cluster waits for it).
    #[error("an unfinished resize is on this volume: run `mkfs-alloc resize` again with the same size to finish it")]
    UnfinishedResize,
    /// An unfinished conversion is on the medium (a re-cluster waits for
    /// it).
    #[error("an unfinished conversion is on this volume: run `mkfs-alloc convert` again with the same file system to finish it")]
    UnfinishedConversion,
    /// An unfinished re-cluster to another size is on the medium.
    #[error("an unfinished re-cluster to {cluster}-byte clusters is on this volume: run it again with that size to finish it")]
    OtherJob {
        /// The cluster size that job goes to.
        cluster: u64,
    },
    /// The advice recommends no cluster size for the files on the volume
    /// ([`plan_auto`](super::plan_auto)).
    #[error("no cluster size is recommended for the files on this volume: {why}")]
    NoRecommendation {
        /// The advice's reason.
        why: String,
    },
    /// The size [`plan_auto`](super::plan_auto) chose is refused.
    #[error("the recommended cluster size is {} bytes ({}); {refusal}", choice.cluster, choice.reason)]
    AutoRefused {
        /// What was chosen, and why.
        choice: Box<AutoChoice>,
        /// Why it cannot be done.
        refusal: Refusal,
    },
    /// The volume cannot be read.
    #[error(transparent)]
    Inspect(#[from] InspectError),
    /// A read or write failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

impl ReclusterError {
    pub(super) fn unsupported(what: String) -> Self {
        ReclusterError::Refused(Refusal::Unsupported { what })
    }

    /// The error for a record of another kind of job (a resize's, a
    /// conversion's): the re-cluster waits until that job is finished.
    pub(super) fn other_kind(intent: Option<&Intent>) -> Result<(), Self> {
        match intent {
            Some(i) if i.resizing() => Err(ReclusterError::UnfinishedResize),
            Some(i) if i.conversion() => Err(ReclusterError::UnfinishedConversion),
            _ => Ok(()),
        }
    }
}
