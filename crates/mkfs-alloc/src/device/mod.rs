//! A format target that is a file or a raw device (the `device` feature):
//! the steps around the format of one opened target, the same for every
//! target of a batch and for a single target run as a batch of one.
//!
//! [`DeviceTarget`] is the [`BatchTarget`](crate::batch::BatchTarget) for a
//! target inspected by `mkfs_alloc_device::target`: it opens and locks it
//! (or takes the handle held since before the first write of the run), and
//! runs, in this order:
//!
//! 1. the capacity probe ([`Steps::probe`]; it opens the target itself, so
//!    the held handle of a device is closed first): a counterfeit with less
//!    real capacity than the planned size is refused;
//! 2. a device larger than the planned size is limited to it, after an old
//!    backup GPT header beyond that size is zeroed (it would let
//!    partitioning tools restore the old table over the new volume;
//!    [`wipe_backup_gpt_beyond`](crate::wipe_backup_gpt_beyond));
//! 3. once the format knows the old signatures, the discard (TRIM) of the
//!    planned size ([`Discard`]), then the zeroing of the whole target
//!    ([`Steps::full`]);
//! 4. the format itself (the batch's);
//! 5. after it, the kernel's re-read of a new partition table.
//!
//! Each step's note is a [`StepNote`] and each failure a [`StepFailure`];
//! a [`Front`] (the caller's front end) words them and may run the probe
//! with its own progress display. A failed target cleans up after itself:
//! an image the run created is removed, one it grew gets its old length
//! back when nothing was written.

mod steps;
mod target;
#[cfg(test)]
mod tests;

use std::fmt;

use mkfs_alloc_blockio::IoError;
use mkfs_alloc_capacity::ProbeReport;
pub use mkfs_alloc_device::target::{Opened, Target};

use crate::batch::{TargetError, Verdict};

pub use steps::{open_checked, ProbeSummary};
#[cfg(feature = "populate")]
pub use steps::{target_inside, InsideTree};
pub use target::DeviceTarget;

/// Whether the planned size is discarded (TRIM) before the format writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Discard {
    /// Where the device says it can (a discard granularity above zero).
    #[default]
    Auto,
    /// Tried on every device.
    Always,
    /// Never.
    Never,
}

/// The steps asked of every target (every value is valid).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Steps {
    /// Probe the real capacity first (it writes test blocks across the
    /// whole target).
    pub probe: bool,
    /// The discard before the format.
    pub discard: Discard,
    /// Zero the whole target before the format.
    pub full: bool,
    /// Open devices uncached (`O_DIRECT`).
    pub uncached: bool,
}

/// What a step did, for the target's report. `Display` gives the note's
/// text; a front end that names its own options words
/// [`StepNote::BackupGptZeroed`] and [`StepNote::Discarded`] of a part.
#[derive(Debug)]
#[non_exhaustive]
pub enum StepNote {
    /// The capacity probe found enough real capacity.
    Probed(ProbeReport),
    /// An old backup GPT header beyond the planned size was zeroed.
    BackupGptZeroed {
        /// Its byte offset.
        offset: u64,
    },
    /// The discard succeeded.
    Discarded {
        /// The whole device (else its first `size` bytes).
        whole: bool,
        /// The bytes discarded.
        size: u64,
    },
    /// The device does not support discard.
    DiscardUnsupported,
    /// The discard failed; the format went on without it.
    DiscardFailed(IoError),
    /// The whole target was zeroed.
    Zeroed,
    /// The kernel re-read the new partition table.
    Reread,
    /// The kernel could not re-read it.
    RereadFailed(IoError),
}

impl fmt::Display for StepNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use mkfs_alloc_layout::units::format_size;
        match self {
            StepNote::Probed(r) => write!(f, "probed first: {}", ProbeSummary(r)),
            StepNote::BackupGptZeroed { offset } => write!(
                f,
                "zeroed the old backup GPT header at byte {offset}, beyond the planned size (partitioning tools would offer to restore the old table from it)"
            ),
            StepNote::Discarded { whole: true, .. } => {
                f.write_str("discarded (TRIM) the whole device before writing")
            }
            StepNote::Discarded { size, .. } => write!(
                f,
                "discarded (TRIM) the first {} of the device before writing",
                format_size(*size)
            ),
            StepNote::DiscardUnsupported => {
                f.write_str("the device does not support discard; not discarded")
            }
            StepNote::DiscardFailed(e) => write!(
                f,
                "discard failed, continuing without it: {e}: {}",
                e.source
            ),
            StepNote::Zeroed => f.write_str("full format: zeroed the whole medium"),
            StepNote::Reread => f.write_str("the kernel re-read the partition table"),
            StepNote::RereadFailed(e) => write!(
                f,
                "the kernel could not re-read the partition table ({}); replug the device or run partprobe",
                e.source
            ),
        }
    }
}

/// Why a step stopped a target.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// The capacity probe found less real capacity than the planned size.
    #[error("the probe found it {}; not formatted", ProbeSummary(.0.as_ref()))]
    Fake(Box<ProbeReport>),
    /// The target could not be opened (and locked) for the format.
    #[error(transparent)]
    Open(#[from] mkfs_alloc_device::target::TargetError),
    /// Zeroing an old backup GPT header beyond the planned size failed.
    #[error("zeroing the old backup GPT")]
    BackupGpt(#[source] crate::FormatError),
    /// Limiting the device to the planned size failed.
    #[error("limiting the device")]
    Limit(#[source] IoError),
    /// Zeroing the whole target failed.
    #[error("zeroing failed")]
    Zeroing(#[source] IoError),
}

/// A step's failure: the error, and what it means for the target.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepFailure {
    /// The verdict it gives the target.
    pub verdict: Verdict,
    /// Something had been written to the target (by the probe or a step).
    pub wrote: bool,
    /// It came once the target was open for the format (a front end that
    /// calls a failure before the first write a refusal may do so).
    pub opened: bool,
    /// What failed.
    pub error: StepError,
}

impl From<StepFailure> for TargetError {
    fn from(f: StepFailure) -> TargetError {
        TargetError::new(f.verdict, f.wrote, f.error)
    }
}

/// The caller's front end around the steps: how failures and notes are
/// worded, the probe's progress display, a tree's file data. Every method
/// has the library's default.
pub trait Front: Send {
    /// The capacity probe of `target`, which it opens itself (exclusively).
    /// The default runs `mkfs_alloc_capacity::probe` with its default
    /// options and no progress.
    ///
    /// # Errors
    ///
    /// The target's failure (the probe may have written).
    fn probe(&mut self, target: &Target) -> Result<ProbeReport, TargetError> {
        steps::probe(target.path())
    }

    /// A step's failure as the target's error.
    fn fail(&mut self, _target: &Target, failure: StepFailure) -> TargetError {
        failure.into()
    }

    /// A note's text.
    fn note(&self, note: &StepNote) -> String {
        note.to_string()
    }

    /// [`BatchTarget::before_content`](crate::batch::BatchTarget::before_content)
    /// of the target.
    ///
    /// # Errors
    ///
    /// The target's failure.
    #[cfg(feature = "populate")]
    fn before_content(
        &mut self,
        _target: &Target,
        _io: &mut Opened,
        _content: &mut crate::batch::TargetContent<'_>,
    ) -> Result<(), TargetError> {
        Ok(())
    }
}

/// The library's own words for everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Front for Plain {}
