//! What the batch checks before its first write: the same medium given
//! twice, `--log`, every target opened and locked; and the refusal of the
//! whole batch when one of them fails.

use super::{print_report, report, write_log, Entry};
use crate::args::FormatArgs;
use crate::cmd_format::preflight::{self, medium_ids, MediumId};
use crate::target::{Opened, Target};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::batch::BatchPlan;

/// The refusal of the whole batch: nothing is written anywhere (exit 2).
pub(super) struct Refusal<'a> {
    pub(super) cli: &'a FormatArgs,
    pub(super) plan: &'a BatchPlan,
    pub(super) notes: &'a [String],
}

impl Refusal<'_> {
    /// Reports every target (`refused`: the refused ones), logs them, and
    /// the error to exit with.
    pub(super) fn all(
        &self,
        entries: &[Entry],
        log: Option<&mut std::fs::File>,
        refused: &[usize],
    ) -> Failure {
        let cli = self.cli;
        print_report(cli, entries, self.plan, &[], false, self.notes);
        if let Err(f) = write_log(log, entries, self.plan, &[]) {
            return f;
        }
        let names: Vec<String> = refused
            .iter()
            .map(|&i| entries[i].path.display().to_string())
            .collect();
        Failure::InReport(
            2,
            anyhow!(
                "refused: {}; nothing was written to any target{}",
                names.join(", "),
                if refused.len() < entries.len() {
                    " (--skip-refused formats the others)"
                } else {
                    ""
                }
            ),
        )
    }
}

/// `--log FILE`, checked as every output is (a regular file or a new one in
/// a writable directory, none of the targets), in a dry run too.
pub(super) fn check_log(cli: &FormatArgs, entries: &[Entry]) -> Result<(), Failure> {
    let Some(file) = cli.log.as_deref() else {
        return Ok(());
    };
    let ids: Vec<Vec<MediumId>> = entries
        .iter()
        .map(|e| medium_ids(&e.path, e.target.as_ref()))
        .collect();
    let out = preflight::Output {
        option: "--log",
        path: file,
        write: preflight::Write::Append,
    };
    preflight::check_outputs(&[out], &ids)
}

/// `--log FILE` opened for appending (checked by [`check_log`]), before
/// anything is written; a dry run opens nothing.
pub(super) fn open_log(cli: &FormatArgs) -> Result<Option<std::fs::File>, Failure> {
    match cli.log.as_deref() {
        Some(file) if !cli.dry_run => report::open_log(file).map(Some).map_err(usage),
        _ => Ok(None),
    }
}

/// Opens every target that is to be written (planned, not refused); one
/// that cannot be opened gets the reason as its refusal.
pub(super) fn open_targets(entries: &mut [Entry], plan: &BatchPlan) -> Vec<Option<Opened>> {
    let wanted: Vec<Option<&Target>> = entries
        .iter()
        .zip(plan.plans())
        .map(|(e, p)| {
            e.target
                .as_ref()
                .filter(|_| p.is_ok() && e.refusal.is_none())
        })
        .collect();
    let opened = preflight::open_all(&wanted, entries.len() > 1);
    entries
        .iter_mut()
        .zip(opened)
        .map(|(e, r)| match r {
            Some(Ok(o)) => Some(o),
            Some(Err(why)) => {
                e.refusal = Some(why);
                None
            }
            None => None,
        })
        .collect()
}

/// A medium given twice (the same path, two names of one device, a loop
/// device and its backing file, a disk and one of its partitions) is
/// refused the second time.
pub(super) fn refuse_duplicates(entries: &mut [Entry]) {
    let ids: Vec<Vec<MediumId>> = entries
        .iter()
        .map(|e| medium_ids(&e.path, e.target.as_ref()))
        .collect();
    for (b, a) in mkfs_alloc_device::target::repeated(&ids)
        .into_iter()
        .enumerate()
    {
        if let (Some(a), None) = (a, &entries[b].refusal) {
            entries[b].refusal = Some(format!(
                "{} is the same medium as {} (or part of it), given earlier",
                entries[b].path.display(),
                entries[a].path.display()
            ));
        }
    }
}

/// Closes the targets [`open_targets`] opened for a batch that will not
/// run, undoing what opening did (a created image removed, a grown one
/// shrunk back).
pub(super) fn undo_all(entries: &[Entry], held: Vec<Option<Opened>>) {
    for (e, h) in entries.iter().zip(held) {
        if let (Some(t), Some(o)) = (&e.target, h) {
            t.undo_open(o);
        }
    }
}
