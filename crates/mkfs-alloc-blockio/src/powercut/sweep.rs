//! A power-cut sweep: a job cut at many points under many seeds, each
//! surviving medium checked, the same job run again on it, and the result
//! checked again.
//!
//! This is the harness for operations that promise "run me again after a
//! power loss and you get what an uninterrupted run gives" (a format, a
//! change made in place). For every cut point `k` and seed:
//!
//! 1. the job runs on a copy of the prepared medium through
//!    [`PowerCutIo::new`]`(copy, k, seed)`, so it must fail at `k` (or
//!    finish, for `k = n`), and the power goes;
//! 2. the check sees the surviving medium ([`Stage::BeforeRerun`]): it
//!    answers "readable and intact", "not readable" (allowed here), or an
//!    error ("readable but wrong", a failure);
//! 3. the job runs again, uncut, on the surviving medium and must succeed;
//! 4. the check sees the result ([`Stage::AfterRerun`]) and must answer
//!    "readable and intact".
//!
//! The check gets the reference medium too: the one an uncut run of the job
//! leaves ([`PowerCutIo::counting`], every write kept).

use std::fmt;

use super::{CutReport, PowerCutIo};
use crate::{BlockIo, IoError};

/// When the check is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// On the medium the cut left, before the job runs again.
    BeforeRerun,
    /// On the medium after the job ran again, uncut.
    AfterRerun,
}

/// What the check of a sweep sees.
#[derive(Debug)]
pub struct Trial<'a, D> {
    /// The mutating operation at which the power went.
    pub cut_at: u64,
    /// The seed that chose the surviving blocks.
    pub seed: u64,
    /// Before or after the rerun.
    pub stage: Stage,
    /// The medium to check.
    pub medium: &'a D,
    /// The medium an uncut run of the job leaves.
    pub reference: &'a D,
    /// What the cut kept and dropped.
    pub cut: CutReport,
}

/// The figures of a finished sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Mutating operations of an uncut run.
    pub ops: u64,
    /// Their flushes (indices among the mutating operations).
    pub flushes: Vec<u64>,
    /// Cut points tried.
    pub cut_points: usize,
    /// Seeds tried at each cut point.
    pub seeds: u64,
    /// Trials run (cut points times seeds).
    pub trials: usize,
    /// Trials whose medium was intact after the rerun (all of them, when the
    /// sweep returns a report).
    pub intact_after_rerun: usize,
    /// Trials whose surviving medium was already readable and intact before
    /// the rerun.
    pub intact_before_rerun: usize,
    /// Unflushed blocks lost over all cuts.
    pub blocks_dropped: u64,
    /// Unflushed blocks kept over all cuts.
    pub blocks_kept: u64,
}

impl fmt::Display for SweepReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ops ({} flushes), {} cut points x {} seeds = {} trials: {} intact after the \
             rerun, {} already readable and intact before it; {} unflushed blocks kept, {} lost",
            self.ops,
            self.flushes.len(),
            self.cut_points,
            self.seeds,
            self.trials,
            self.intact_after_rerun,
            self.intact_before_rerun,
            self.blocks_kept,
            self.blocks_dropped
        )
    }
}

/// The first failing trial of a sweep.
#[derive(Debug, thiserror::Error)]
#[error("cut at op {cut_at} of {ops}, seed {seed}: {message}")]
pub struct SweepError {
    /// Mutating operations of an uncut run.
    pub ops: u64,
    /// The cut point (`None`: the uncut run failed).
    pub cut_at: u64,
    /// The seed.
    pub seed: u64,
    /// What went wrong.
    pub message: String,
}

/// The cut points of a sweep over a job of `ops` mutating operations whose
/// flushes are at `flushes`: every point of `0..=ops` if that is at most
/// `max` points, else `max` points spread evenly plus, at each flush, the
/// operation before it, the flush itself and the operation after it (the
/// places where what is durable changes), in increasing order.
pub fn cut_points(ops: u64, flushes: &[u64], max: usize) -> Vec<u64> {
    let max = u64::try_from(max.max(2)).unwrap_or(u64::MAX);
    if ops < max {
        return (0..=ops).collect();
    }
    let mut points: Vec<u64> = (0..max).map(|i| i * ops / (max - 1)).collect();
    for &f in flushes {
        points.extend(
            [f.saturating_sub(1), f, f + 1]
                .into_iter()
                .filter(|&p| p <= ops),
        );
    }
    points.sort_unstable();
    points.dedup();
    points
}

/// A power-cut sweep's settings (see the module docs).
///
/// ```
/// use mkfs_alloc_blockio::powercut::sweep::{Stage, Sweep};
/// use mkfs_alloc_blockio::{BlockIo, IoError, MemDisk};
///
/// // A job that writes two blocks, flushes, then writes a commit block.
/// let job = |dev: &mut dyn BlockIo| -> Result<(), IoError> {
///     dev.write_blocks(1, &[1; 1024])?;
///     dev.flush()?;
///     dev.write_blocks(0, &[9; 512])?;
///     dev.flush()
/// };
/// let report = Sweep::new().seeds(3).run(&MemDisk::new(512, 4)?, job, |t| {
///     let m = t.medium.as_bytes();
///     let committed = m[0] == 9;
///     if committed && m[512..1536] != [1; 1024] {
///         return Err("committed without its data".into());
///     }
///     Ok(committed)
/// })?;
/// assert_eq!((report.ops, report.trials), (4, 15));
/// assert_eq!(report.intact_after_rerun, 15);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    max_points: usize,
    seeds: u64,
}

impl Default for Sweep {
    fn default() -> Self {
        Sweep::new()
    }
}

impl Sweep {
    /// At most 300 evenly spread cut points (plus those at the flushes),
    /// 4 seeds each.
    pub fn new() -> Self {
        Sweep {
            max_points: 300,
            seeds: 4,
        }
    }

    /// Cut at every operation when there are at most `n + 1` cut points,
    /// else at `n` points spread evenly plus those around each flush.
    #[must_use]
    pub fn max_points(mut self, n: usize) -> Self {
        self.max_points = n;
        self
    }

    /// Seeds `0..n` at each cut point (at least one).
    #[must_use]
    pub fn seeds(mut self, n: u64) -> Self {
        self.seeds = n.max(1);
        self
    }

    /// Runs the sweep of `job` over copies of `medium`, asking `check` about
    /// each trial before and after its rerun: `Ok(true)` readable and
    /// intact, `Ok(false)` not readable (a failure after the rerun),
    /// `Err` readable but wrong.
    ///
    /// # Errors
    ///
    /// The first failing trial: the uncut run fails; a cut run succeeds
    /// although its power went before its end, or fails with the power
    /// still on; the rerun fails; or the check says so.
    pub fn run<D, T, E, J, C>(
        &self,
        medium: &D,
        job: J,
        mut check: C,
    ) -> Result<SweepReport, SweepError>
    where
        D: BlockIo + Clone,
        E: fmt::Display,
        J: Fn(&mut dyn BlockIo) -> Result<T, E>,
        C: FnMut(&Trial<'_, D>) -> Result<bool, String>,
    {
        let fail = |ops, cut_at, seed, message: String| SweepError {
            ops,
            cut_at,
            seed,
            message,
        };
        let io = |ops, cut_at, seed| move |e: IoError| fail(ops, cut_at, seed, e.to_string());
        let mut counting = PowerCutIo::counting(medium.clone());
        job(&mut counting).map_err(|e| fail(0, 0, 0, format!("the uncut run fails: {e}")))?;
        let ops = counting.ops_seen();
        let flushes = counting.flushes().to_vec();
        let reference = counting.into_all_written().map_err(io(ops, ops, 0))?;
        let points = cut_points(ops, &flushes, self.max_points);
        let mut report = SweepReport {
            ops,
            cut_points: points.len(),
            seeds: self.seeds,
            flushes,
            ..SweepReport::default()
        };
        for &k in &points {
            for seed in 0..self.seeds {
                let fail = |message: String| fail(ops, k, seed, message);
                let mut dev = PowerCutIo::new(medium.clone(), k, seed);
                let first = job(&mut dev);
                match (&first, dev.is_cut()) {
                    (Ok(_), true) => {
                        return Err(fail("the job succeeded although the power went".into()))
                    }
                    (Err(e), false) => {
                        return Err(fail(format!("the job failed with the power on: {e}")))
                    }
                    _ => {}
                }
                dev.cut_now().map_err(io(ops, k, seed))?;
                let cut = dev.report();
                let mut surviving = dev.into_surviving().map_err(io(ops, k, seed))?;
                report.blocks_kept += cut.blocks_kept;
                report.blocks_dropped += cut.blocks_dropped;
                let before = Trial {
                    cut_at: k,
                    seed,
                    stage: Stage::BeforeRerun,
                    medium: &surviving,
                    reference: &reference,
                    cut,
                };
                if check(&before).map_err(|m| fail(format!("before the rerun: {m}")))? {
                    report.intact_before_rerun += 1;
                }
                job(&mut surviving).map_err(|e| fail(format!("the rerun fails: {e}")))?;
                let after = Trial {
                    cut_at: k,
                    seed,
                    stage: Stage::AfterRerun,
                    medium: &surviving,
                    reference: &reference,
                    cut,
                };
                match check(&after) {
                    Ok(true) => report.intact_after_rerun += 1,
                    Ok(false) => return Err(fail("not readable after the rerun".into())),
                    Err(m) => return Err(fail(format!("after the rerun: {m}"))),
                }
                report.trials += 1;
            }
        }
        Ok(report)
    }
}
