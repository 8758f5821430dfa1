//! The single run's write: its one target run as a batch of one through
//! the library's [`mkfs_alloc::batch`] (the same [`CliTarget`] and steps as
//! every target of a batch), then what only a single run does: the
//! flashing formats, and its own summary, messages and exit codes.

use super::batch::target::{steps, CliFront, CliTarget, Single};
use super::{copy_mode, format_failure, preflight, Run};
use crate::{report, rootdir, Failure};
use anyhow::anyhow;
use mkfs_alloc::batch::{BatchPlan, Event, Outcome, RunOptions, Stage, TargetError};
use mkfs_alloc::FormatError;
use std::io::IsTerminal;
use std::sync::Mutex;

/// Confirms (devices), opens and locks, writes, exports, and prints the
/// summary.
pub(super) fn write(run: Run<'_>, notes: Vec<String>) -> Result<(), Failure> {
    let Run {
        cli,
        path,
        shown,
        target,
        medium,
        exports,
    } = run;
    if let Some(info) = target.device() {
        let contents = target.contents();
        crate::confirm::confirm(
            info,
            &medium,
            &contents,
            target.unmounts(),
            cli.yes,
            cli.quiet || cli.json,
        )?;
        target.unmount_volumes()?;
    }
    // Opened and locked before the first write (the probe's, or the
    // format's): one held by another process is refused untouched.
    let held = preflight::open_checked(target, false)?;
    let front = CliFront {
        probe_quiet: cli.quiet || cli.json,
        single: Some(Single {
            copy: copy_mode(cli),
            failure: None,
        }),
    };
    let table = medium.table().kind() != mkfs_alloc::partition::TableKind::None;
    let mut one = CliTarget::new(Some(&**target), steps(cli, false), table, front)
        .held(Some(held))
        .notes(notes, target.notes().to_vec())
        .single();
    let mut plan = BatchPlan::one(path.display().to_string(), medium);
    let bars = Bars::new(!cli.quiet && !cli.json && std::io::stderr().is_terminal());
    let outcome = plan
        .run(vec![&mut one], &RunOptions::new(), &|e| bars.event(e))
        .outcomes
        .pop();
    bars.finish();
    let single = one.front_mut().single.take().unwrap_or_default();
    let steps_wrote = (one.wrote(), one.formatting());
    let outcome = outcome.ok_or_else(|| Failure::Io(anyhow!("{}: no outcome", path.display())))?;
    let Outcome {
        error,
        write,
        extents,
        found,
        mut notes,
        ..
    } = outcome;
    let (Some(write), Some(map), Some(found)) = (write, extents, found) else {
        let e = error.unwrap_or_else(|| TargetError::new(outcome.verdict, false, "not formatted"));
        return Err(failure(e, single, steps_wrote, path, target));
    };
    let exported = exports.write(path, &map);
    if exports.sparse.is_some() {
        // The raw image was only the sparse image's source.
        let _ = std::fs::remove_file(path);
    }
    notes.extend(exported?);
    if exports.to_stdout() {
        return Ok(());
    }
    let Some(Ok(medium)) = plan.plans().next() else {
        return Err(Failure::Io(anyhow!("{}: no plan", path.display())));
    };
    if let Some(p) = medium.content() {
        notes.extend(rootdir::summary(p));
    }
    let found = found.signatures();
    if cli.json {
        report::print_json_with(
            shown,
            medium,
            found,
            target.device(),
            Some((&write, &notes)),
            false,
            &super::extras(medium),
        );
    } else if !cli.quiet {
        report::print_summary(
            shown,
            medium,
            found,
            &write,
            target,
            &notes,
            medium.content().is_some(),
        );
    }
    Ok(())
}

/// The run's failure as the single run says it: a failure of the target's
/// own steps as it was, one of the library's (the probe of old signatures,
/// the format) classified; once the target was open for the format,
/// settled ([`crate::watch::settle`]: before the first write, a refusal).
fn failure(
    e: TargetError,
    single: Single,
    (steps_wrote, formatting): (bool, bool),
    path: &std::path::Path,
    target: &crate::target::Target,
) -> Failure {
    let wrote = e.wrote || steps_wrote;
    let (f, settles) = match single.failure {
        Some(kept) => kept,
        None => {
            let what = if formatting { "formatting" } else { "probing" };
            let context = Some(format!("{what} {}", path.display()));
            let f = match e.error.downcast::<FormatError>() {
                Ok(e) => format_failure(*e, context),
                Err(e) => Failure::Io(anyhow!(e.to_string())),
            };
            (f, true)
        }
    };
    if settles {
        crate::watch::settle(f, wrote, target)
    } else {
        f
    }
}

/// The single run's progress bars on a terminal: one for `--full`'s
/// zeroing, one for the format's writes.
struct Bars {
    show: bool,
    bar: Mutex<Option<(Stage, report::Progress)>>,
}

impl Bars {
    fn new(show: bool) -> Self {
        Bars {
            show,
            bar: Mutex::new(None),
        }
    }

    /// Moves the bar of the event's stage (a new stage ends the last bar).
    fn event(&self, e: Event) {
        let Ok(mut bar) = self.bar.lock() else {
            return;
        };
        let what = match e.stage {
            Stage::Zeroing => "zeroing",
            Stage::Writing => "writing",
            _ => {
                if let Some((_, b)) = bar.take() {
                    b.finish();
                }
                return;
            }
        };
        if bar.as_ref().is_none_or(|(s, _)| *s != e.stage) {
            if let Some((_, b)) = bar.take() {
                b.finish();
            }
            *bar = Some((e.stage, report::Progress::new(self.show, what)));
        }
        if let Some((_, b)) = bar.as_ref() {
            b.update(e.done, e.total);
        }
    }

    fn finish(self) {
        if let Ok(Some((_, b))) = self.bar.into_inner() {
            b.finish();
        }
    }
}
