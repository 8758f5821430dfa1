//! Running a batch: `jobs` workers, each target on its own; with a tree,
//! one reading of its files feeds every target of a wave.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use super::run::{BatchTarget, Event, Outcome, RunOptions, RunReport, Stage, TargetError, Verdict};
use super::BatchPlan;
use crate::verify::Recording;
use crate::{ExtentMap, FormatError, Found, MediumPlan};

#[cfg(feature = "populate")]
use mkfs_alloc_populate::feed;

/// What one target writes into its volume besides the format's own.
type Content = Option<crate::write::Content>;

impl BatchPlan {
    /// Runs the batch: target `i` of `targets` gets plan `i` (and its part
    /// of the tree, [`BatchPlan::populate`]); `jobs` targets at once, each
    /// on its own thread; `events` hears every target's progress. A target
    /// that was not planned is refused; one that fails stops alone. With a
    /// tree, each wave of `jobs` targets shares one reading of its files
    /// (all targets one wave unless `jobs` is smaller); the tree's content
    /// is written by this run only (a second run formats without it).
    ///
    /// # Panics
    ///
    /// When `targets` and the plan differ in length.
    pub fn run<T: BatchTarget>(
        &mut self,
        targets: Vec<T>,
        opts: &RunOptions,
        events: &(dyn Fn(Event) + Sync),
    ) -> RunReport {
        let n = targets.len();
        assert_eq!(n, self.plans.len(), "one target per plan");
        let contents = self.take_contents();
        let work: Vec<Mutex<Option<(T, Content)>>> = targets
            .into_iter()
            .zip(contents)
            .map(|w| Mutex::new(Some(w)))
            .collect();
        let results: Vec<Mutex<Option<Outcome>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let jobs = if opts.jobs == 0 { n } else { opts.jobs.min(n) }.max(1);
        let mut report = RunReport {
            outcomes: Vec::new(),
            source_bytes_read: 0,
            source_passes: 0,
        };
        let feeding = self.feeds_a_tree(&work);
        if feeding {
            // Waves of `jobs` targets, each fed by one reading of the tree.
            let all: Vec<usize> = (0..n).collect();
            for wave in all.chunks(jobs) {
                let read = self.wave(wave, &work, &results, opts, events);
                report.source_bytes_read += read;
                report.source_passes += 1;
            }
        } else {
            // No shared reading: a target's part of the tree read its own
            // files, and goes back to its plan.
            let kept: Vec<Mutex<Content>> = (0..n).map(|_| Mutex::new(None)).collect();
            let next = AtomicUsize::new(0);
            let plans = &self.plans[..];
            std::thread::scope(|s| {
                for _ in 0..jobs {
                    s.spawn(|| loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        work_on(plans, i, &work, &results, opts, events, Some(&kept[i]));
                    });
                }
            });
            for (plan, content) in self.plans.iter_mut().zip(kept) {
                if let (Ok(p), Ok(Some(c))) = (plan.as_mut(), content.into_inner()) {
                    p.content = Some(c);
                }
            }
        }
        report.outcomes = results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.into_inner().ok().flatten().unwrap_or_else(|| {
                    let mut o = Outcome::new(i);
                    o.verdict = Verdict::Failed;
                    o.error = Some(TargetError::new(
                        Verdict::Failed,
                        false,
                        "the target's worker stopped",
                    ));
                    o
                })
            })
            .collect();
        report
    }

    #[cfg(feature = "populate")]
    fn take_contents(&mut self) -> Vec<Content> {
        let n = self.plans.len();
        let mut c = std::mem::take(&mut self.contents);
        c.resize_with(n, || None);
        c
    }

    #[cfg(not(feature = "populate"))]
    fn take_contents(&mut self) -> Vec<Content> {
        (0..self.plans.len()).map(|_| None).collect()
    }

    #[cfg(feature = "populate")]
    fn feeds_a_tree<T>(&self, work: &[Mutex<Option<(T, Content)>>]) -> bool {
        self.source.is_some()
            && work.iter().any(|w| {
                w.lock()
                    .map(|w| w.as_ref().is_some_and(|(_, c)| c.is_some()))
                    .unwrap_or(false)
            })
    }

    #[cfg(not(feature = "populate"))]
    fn feeds_a_tree<T>(&self, _work: &[Mutex<Option<(T, Content)>>]) -> bool {
        false
    }

    /// One wave: the tree's files read once for the wave's targets, which
    /// run at once. Returns the bytes read from the source files.
    #[cfg(feature = "populate")]
    fn wave<T: BatchTarget>(
        &mut self,
        wave: &[usize],
        work: &[Mutex<Option<(T, Content)>>],
        results: &[Mutex<Option<Outcome>>],
        opts: &RunOptions,
        events: &(dyn Fn(Event) + Sync),
    ) -> u64 {
        let fed: Vec<usize> = wave
            .iter()
            .copied()
            .filter(|&i| {
                work[i]
                    .lock()
                    .map(|w| w.as_ref().is_some_and(|(_, c)| c.is_some()))
                    .unwrap_or(false)
            })
            .collect();
        let (source, readers) = feed::feed(fed.len(), self.window);
        for (&i, reader) in fed.iter().zip(readers) {
            if let Ok(mut w) = work[i].lock() {
                if let Some((_, Some(p))) = w.as_mut() {
                    p.read_from(reader);
                }
            }
        }
        let mut tree = self.source.take();
        let plans = &self.plans[..];
        std::thread::scope(|s| {
            if let Some(tree) = tree.as_mut() {
                let source = &source;
                s.spawn(move || source.run(tree));
            }
            for &i in wave {
                s.spawn(move || work_on(plans, i, work, results, opts, events, None));
            }
        });
        self.source = tree;
        source.bytes_read()
    }

    #[cfg(not(feature = "populate"))]
    fn wave<T: BatchTarget>(
        &mut self,
        _wave: &[usize],
        _work: &[Mutex<Option<(T, Content)>>],
        _results: &[Mutex<Option<Outcome>>],
        _opts: &RunOptions,
        _events: &(dyn Fn(Event) + Sync),
    ) -> u64 {
        0
    }
}

/// Runs target `i` and stores its outcome (and its part of the tree in
/// `keep`, if given).
fn work_on<T: BatchTarget>(
    plans: &[Result<MediumPlan, TargetError>],
    i: usize,
    work: &[Mutex<Option<(T, Content)>>],
    results: &[Mutex<Option<Outcome>>],
    opts: &RunOptions,
    events: &(dyn Fn(Event) + Sync),
    keep: Option<&Mutex<Content>>,
) {
    let Some((mut target, mut content)) = work[i].lock().ok().and_then(|mut w| w.take()) else {
        return;
    };
    let mut outcome = Outcome::new(i);
    let result = steps(
        plans,
        i,
        &mut target,
        &mut content,
        opts,
        events,
        &mut outcome,
    );
    // The target's part of the tree (and its feed) is done with: dropped
    // here, unless kept for its plan.
    {
        let content = content;
        if let Some(Ok(mut k)) = keep.map(Mutex::lock) {
            *k = content;
        }
    }
    if let Err(e) = result {
        target.failed(&e);
        outcome.verdict = e.verdict;
        outcome.error = Some(e);
    }
    outcome.finished = SystemTime::now();
    events(Event {
        index: i,
        stage: Stage::Done(outcome.verdict),
        done: 0,
        total: 0,
    });
    if let Ok(mut r) = results[i].lock() {
        *r = Some(outcome);
    }
}

/// The steps of one target; the outcome is filled in as they go.
fn steps<T: BatchTarget>(
    plans: &[Result<MediumPlan, TargetError>],
    index: usize,
    target: &mut T,
    content: &mut Content,
    opts: &RunOptions,
    events: &(dyn Fn(Event) + Sync),
    outcome: &mut Outcome,
) -> Result<(), TargetError> {
    let plan = match &plans[index] {
        Ok(p) => p,
        Err(e) => return Err(TargetError::new(e.verdict, false, e.to_string())),
    };
    let mut progress = |stage, done, total| {
        events(Event {
            index,
            stage,
            done,
            total,
        })
    };
    progress(Stage::Opening, 0, 0);
    let mut io = target.open(&mut progress)?;
    #[cfg(feature = "populate")]
    if let (Some(c), Ok(p)) = (content.as_mut(), &plans[index]) {
        let offset = p.table().partition_start();
        target.before_content(
            &mut io,
            &mut crate::populated::TargetContent::new(c, offset),
        )?;
    }
    let found = Found::probe(&mut io).map_err(|e| TargetError::new(Verdict::Refused, false, e))?;
    target.before_format(&mut io, &mut progress)?;
    let started = Instant::now();
    // Without a read-back only the bytes are counted: a CRC of every MiB
    // written costs a core's time per target for nothing.
    let mut rec = if opts.verify {
        Recording::new(&mut io)
    } else {
        Recording::counting(&mut io)
    };
    let (written, map) = write(plan, content, &mut rec, &found, &mut |d, t| {
        progress(Stage::Writing, d, t)
    });
    outcome.write_time = started.elapsed();
    outcome.bytes_written = rec.digest().bytes_written();
    let digest = rec.into_parts().1;
    let report = written.map_err(|e| {
        let wrote = outcome.bytes_written > 0 || !e.is_invalid_input();
        let verdict = if wrote {
            target.classify(&e)
        } else {
            Verdict::Refused
        };
        TargetError::new(verdict, wrote, e)
    })?;
    outcome.write = Some(report);
    outcome.extents = Some(map.clone());
    outcome.found = Some(found);
    if opts.verify {
        target.before_verify(&mut io)?;
        let zeros: Vec<Range<u64>> = map.ranges().to_vec();
        let v = digest
            .verify(&mut io, &zeros, &mut |d, t| {
                progress(Stage::Verifying, d, t)
            })
            .map_err(|e| {
                let e = FormatError::Io(e);
                TargetError::new(target.classify(&e), true, e)
            })?;
        outcome.verify = Some(v);
        if v.mismatches > 0 {
            return Err(TargetError::new(
                Verdict::VerifyFailed,
                true,
                format!(
                    "{} MiB piece(s) read back differently from what was written (the first at byte {})",
                    v.mismatches,
                    v.first_mismatch.unwrap_or(0)
                ),
            ));
        }
    }
    outcome.notes = target.finish(&mut io);
    Ok(())
}

/// Formats `dev` with `plan` (and the target's part of the tree); the
/// extent map of what the format wrote or relies on being zero.
fn write<D: mkfs_alloc_blockio::BlockIo>(
    plan: &MediumPlan,
    content: &mut Content,
    dev: &mut D,
    found: &Found,
    progress: &mut dyn FnMut(u64, u64),
) -> (
    Result<mkfs_alloc_layout::WriteReport, FormatError>,
    ExtentMap,
) {
    let clusters = crate::write::content_clusters(content.as_ref());
    let map = ExtentMap::new(plan, found, clusters);
    let written = crate::write::write_plan(plan, content.as_mut(), dev, found, progress);
    (written, map)
}
