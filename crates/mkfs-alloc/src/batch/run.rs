//! Running a batch: `jobs` workers, each target on its own (an error stops
//! that target only), every write recorded for the read-back check.

use std::fmt;
use std::time::{Duration, SystemTime};

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::WriteReport;

#[cfg(feature = "populate")]
use crate::populated::TargetContent;
use crate::verify::VerifyReport;
use crate::{ExtentMap, FormatError, Found};

/// What a target's caller does around the format: open it (and probe its
/// capacity, say), prepare it once its old signatures are known (discard,
/// zero), make it read from the medium before the read-back, finish.
/// Every method runs on the target's own worker thread.
pub trait BatchTarget: Send {
    /// The opened target.
    type Io: BlockIo;

    /// Opens the target for writing (and whatever must come first).
    ///
    /// # Errors
    ///
    /// The target's failure, with its verdict ([`Verdict::Refused`] when
    /// nothing was written, [`Verdict::Fake`] for a counterfeit).
    fn open(&mut self, progress: &mut dyn FnMut(Stage, u64, u64)) -> Result<Self::Io, TargetError>;

    /// After [`BatchTarget::open`], before the old signatures are looked
    /// for, when the target writes a part of a tree: how its file data
    /// reaches the target ([`TargetContent::copy_into`] an image file, say).
    ///
    /// # Errors
    ///
    /// The target's failure.
    #[cfg(feature = "populate")]
    fn before_content(
        &mut self,
        _io: &mut Self::Io,
        _content: &mut TargetContent<'_>,
    ) -> Result<(), TargetError> {
        Ok(())
    }

    /// After the old signatures were found, before the format writes.
    ///
    /// # Errors
    ///
    /// The target's failure.
    fn before_format(
        &mut self,
        _io: &mut Self::Io,
        _progress: &mut dyn FnMut(Stage, u64, u64),
    ) -> Result<(), TargetError> {
        Ok(())
    }

    /// Before the read-back: make reads come from the medium, not from a
    /// cache of the operating system.
    ///
    /// # Errors
    ///
    /// The target's failure.
    fn before_verify(&mut self, _io: &mut Self::Io) -> Result<(), TargetError> {
        Ok(())
    }

    /// After the format (and the read-back): notes for the report.
    fn finish(&mut self, _io: &mut Self::Io) -> Vec<String> {
        Vec::new()
    }

    /// The target failed with `error` (its opened handle is closed by
    /// now): clean up (remove an image this run created, say).
    fn failed(&mut self, _error: &TargetError) {}

    /// The verdict of a format that failed with `e` once writing had begun
    /// ([`Verdict::Failed`]; a caller that can tell a removed device says
    /// [`Verdict::Removed`]).
    fn classify(&self, _e: &FormatError) -> Verdict {
        Verdict::Failed
    }
}

/// A target lent to a run: the caller keeps it, and reads what its hooks
/// kept once the run is over.
impl<T: BatchTarget + ?Sized> BatchTarget for &mut T {
    type Io = T::Io;

    fn open(&mut self, progress: &mut dyn FnMut(Stage, u64, u64)) -> Result<Self::Io, TargetError> {
        (**self).open(progress)
    }

    #[cfg(feature = "populate")]
    fn before_content(
        &mut self,
        io: &mut Self::Io,
        content: &mut TargetContent<'_>,
    ) -> Result<(), TargetError> {
        (**self).before_content(io, content)
    }

    fn before_format(
        &mut self,
        io: &mut Self::Io,
        progress: &mut dyn FnMut(Stage, u64, u64),
    ) -> Result<(), TargetError> {
        (**self).before_format(io, progress)
    }

    fn before_verify(&mut self, io: &mut Self::Io) -> Result<(), TargetError> {
        (**self).before_verify(io)
    }

    fn finish(&mut self, io: &mut Self::Io) -> Vec<String> {
        (**self).finish(io)
    }

    fn failed(&mut self, error: &TargetError) {
        (**self).failed(error);
    }

    fn classify(&self, e: &FormatError) -> Verdict {
        (**self).classify(e)
    }
}

/// What happened to a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Formatted (and, if asked, read back equal).
    Ok,
    /// Not touched: refused before anything was written (or not planned).
    Refused,
    /// A counterfeit: its capacity is less than it says; not formatted.
    Fake,
    /// An I/O error stopped it.
    Failed,
    /// The device went away.
    Removed,
    /// Written, but it reads back differently.
    VerifyFailed,
}

impl Verdict {
    /// The verdict in one word, as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Refused => "refused",
            Verdict::Fake => "fake",
            Verdict::Failed => "failed",
            Verdict::Removed => "removed",
            Verdict::VerifyFailed => "verify-failed",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a target did not succeed.
#[derive(Debug)]
pub struct TargetError {
    /// The verdict it gives the target.
    pub verdict: Verdict,
    /// True when something had been written to the target.
    pub wrote: bool,
    /// What went wrong.
    pub error: Box<dyn std::error::Error + Send + Sync>,
}

impl TargetError {
    /// A failure of `verdict`.
    pub fn new(
        verdict: Verdict,
        wrote: bool,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        TargetError {
            verdict,
            wrote,
            error: error.into(),
        }
    }
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for TargetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// A step of a target's run, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Opening (and what the caller does first).
    Opening,
    /// The caller probing the capacity.
    Probing,
    /// The caller zeroing the medium.
    Zeroing,
    /// The format writing.
    Writing,
    /// The read-back.
    Verifying,
    /// Finished with this verdict.
    Done(Verdict),
}

/// Progress of one target: `(done, total)` bytes of its stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Index of the target.
    pub index: usize,
    /// Its stage.
    pub stage: Stage,
    /// Bytes done in the stage.
    pub done: u64,
    /// Bytes of the stage.
    pub total: u64,
}

/// How a batch runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunOptions {
    /// Targets at work at once (0: all).
    pub jobs: usize,
    /// Read every target back after the format and compare.
    pub verify: bool,
}

impl RunOptions {
    /// All targets at once, no read-back.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` targets at once (0: all).
    #[must_use]
    pub fn jobs(mut self, n: usize) -> Self {
        self.jobs = n;
        self
    }

    /// Read every target back after its format and compare.
    #[must_use]
    pub fn verify(mut self, yes: bool) -> Self {
        self.verify = yes;
        self
    }
}

/// What happened to one target.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// Index of the target.
    pub index: usize,
    /// The verdict.
    pub verdict: Verdict,
    /// Why it did not succeed.
    pub error: Option<TargetError>,
    /// The format's report, if it finished.
    pub write: Option<WriteReport>,
    /// Bytes the format wrote (zeroed ranges included).
    pub bytes_written: u64,
    /// Time the format took.
    pub write_time: Duration,
    /// What was on the target before the format (its old signatures, as
    /// the format found them), once the format finished.
    pub found: Option<Found>,
    /// What the format wrote or relies on being zero, once it finished
    /// (a flashing format of an image is made from it).
    pub extents: Option<ExtentMap>,
    /// The read-back, if asked for and reached.
    pub verify: Option<VerifyReport>,
    /// When the target's run started and finished.
    pub started: SystemTime,
    /// When it finished.
    pub finished: SystemTime,
    /// The caller's notes ([`BatchTarget::finish`]).
    pub notes: Vec<String>,
}

impl Outcome {
    pub(super) fn new(index: usize) -> Self {
        Outcome {
            index,
            verdict: Verdict::Ok,
            error: None,
            write: None,
            bytes_written: 0,
            write_time: Duration::ZERO,
            found: None,
            extents: None,
            verify: None,
            started: SystemTime::now(),
            finished: SystemTime::now(),
            notes: Vec::new(),
        }
    }

    /// Bytes written per second of the format.
    pub fn write_bytes_per_sec(&self) -> f64 {
        self.bytes_written as f64 / self.write_time.as_secs_f64().max(1e-9)
    }
}

/// What a run did: one outcome per target, and the tree's reading.
#[derive(Debug)]
#[non_exhaustive]
pub struct RunReport {
    /// One per target, in order.
    pub outcomes: Vec<Outcome>,
    /// Bytes of file data read from the tree's source files.
    pub source_bytes_read: u64,
    /// How many times the tree's files were read: once, or once per wave
    /// of [`RunOptions::jobs`] targets when there are more targets.
    pub source_passes: usize,
}
