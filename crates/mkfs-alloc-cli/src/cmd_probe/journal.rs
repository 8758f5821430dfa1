//! The `--keep-data` journal on the CLI side: a journal in the way of a new
//! probe, the probe that keeps one, and `--restore`.

use super::{confirm_restore, open, run_probe, ProbeArgs};
use crate::text::shell_word;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc_capacity::target::{identity, Opened};
use mkfs_alloc_capacity::{
    check_journal_path, restore_journal, Backup, DeviceIdentity, Journal, JournalError,
    JournalStatus, ProbeError, ProbeOptions, ProbeReport, RestoreReport,
};
use mkfs_alloc_device as device;
use serde_json::json;
use std::path::Path;

/// Refuses a journal path that is the target itself (by any name), any
/// device node, or anything else but a regular file
/// ([`check_journal_path`]). Checked before anything is written; `flag`
/// names the option that gave it (`--journal`, `--restore`).
pub fn refuse_unsafe(flag: &str, j: &Path, dev: &Path) -> Result<(), Failure> {
    check_journal_path(j, dev).map_err(|why| {
        usage(anyhow!(
            "{flag} {}: {why}; name a regular file on another disk (nothing was written)",
            j.display()
        ))
    })
}

/// Refuses to start a `--keep-data` probe over an existing journal, saying
/// exactly what it holds and how to clear it.
pub fn refuse_existing(j: &Path, dev: &Path) -> Result<(), Failure> {
    if !j.exists() {
        return Ok(());
    }
    let (jd, dd) = (shell_word(j), shell_word(dev));
    let why = match Journal::status(j) {
        JournalStatus::Pending { records } => format!(
            "a --keep-data probe was interrupted and {records} saved blocks wait in it to be written back; run `mkfs-alloc probe --restore {jd} {dd}` first"
        ),
        JournalStatus::Empty => format!(
            "it holds no saved blocks (its probe stopped before overwriting anything): remove it (`rm {jd}`) and probe again"
        ),
        JournalStatus::Restored => format!(
            "every block saved in it was written back already: remove it (`rm {jd}`) and probe again"
        ),
        JournalStatus::Unusable(e) => format!(
            "it is not a usable probe journal ({e}): name another file with --journal FILE, or remove it if nothing in it is needed"
        ),
    };
    Err(usage(anyhow!("journal {jd} exists: {why}")))
}

/// The ranges that could not be written back, for a message.
fn lost_text(r: &RestoreReport) -> String {
    let ranges = r.lost_ranges();
    let mut parts: Vec<String> = ranges
        .iter()
        .take(8)
        .map(|&(o, l)| format!("bytes {o}..{} ({})", o + l, format_size(l)))
        .collect();
    if ranges.len() > 8 {
        parts.push(format!("{} more ranges", ranges.len() - 8));
    }
    let unknown = r.lost_unknown();
    if unknown > 0 {
        parts.push(format!(
            "{unknown} records whose position is unknown (damaged head, or missing from a journal cut short)"
        ));
    }
    format!(
        "{} of {} saved blocks could not be written back: {}",
        r.lost.len(),
        r.records,
        parts.join(", ")
    )
}

/// Marks the journal finished (so that a copy left behind says so) and
/// removes it.
fn finish(journal: &mut Journal, j: &Path) -> Result<(), Failure> {
    // A journal that cannot be marked (a full or read-only disk) is still
    // removed if it can be.
    let _ = journal.mark_restored();
    std::fs::remove_file(j).map_err(|e| {
        Failure::Io(anyhow!(
            "everything was written back, but the journal {} could not be removed ({e}): remove it (`rm {}`)",
            j.display(),
            j.display()
        ))
    })
}

/// A `--keep-data` probe: creates the journal, probes, and removes the
/// journal once every saved block is back.
pub fn probe_keeping(
    opened: &mut Opened,
    opts: &ProbeOptions,
    a: &ProbeArgs,
    j: &Path,
    id: DeviceIdentity,
) -> Result<ProbeReport, Failure> {
    let (jd, dd) = (shell_word(j), shell_word(&a.target));
    let mut journal = Journal::create(j, id)
        .map_err(|e| usage(anyhow!(e).context(format!("creating the journal {jd}"))))?;
    let kept = format!(
        "the journal {jd} is kept: write it back with `mkfs-alloc probe --restore {jd} {dd}`"
    );
    match run_probe(
        opened,
        opts,
        Some(&mut journal as &mut dyn Backup),
        a.quiet || a.json,
    ) {
        Ok(report) => {
            finish(&mut journal, j)?;
            Ok(report)
        }
        Err(ProbeError::Backup { source, restored }) if restored.complete() => {
            finish(&mut journal, j)?;
            Err(Failure::Io(anyhow!(
                "saving the blocks about to be overwritten to the journal {jd} failed ({source}; is its disk full?): the probe stopped, wrote back the {} blocks it had overwritten, and removed the journal. Keep the journal on a disk with room for about 100 MiB (--journal FILE)",
                restored.restored
            )))
        }
        Err(ProbeError::Backup { source, restored }) => Err(Failure::Io(anyhow!(
            "saving to the journal {jd} failed ({source}), and {}; {kept}",
            lost_text(&restored)
        ))),
        Err(ProbeError::Incomplete(r)) => Err(Failure::Io(anyhow!("{}; {kept}", lost_text(&r)))),
        Err(e) => Err(Failure::Io(
            anyhow::Error::new(e).context(format!("probing {dd}; {kept}")),
        )),
    }
}

/// `--restore JOURNAL`: checks, writes the saved blocks back, removes the
/// journal if every one went back.
pub fn restore(a: &ProbeArgs, j: &Path, info: Option<&device::DeviceInfo>) -> Result<(), Failure> {
    let path = &a.target;
    let (jd, dd) = (j.display(), path.display());
    refuse_unsafe("--restore", j, path)?;
    if !j.is_file() {
        return Err(usage(anyhow!("journal {jd} does not exist")));
    }
    let mut journal = match Journal::open(j) {
        Ok(journal) if journal.is_restored() => {
            return nothing_to_do(a, j, "every block saved in it was written back already")
        }
        Ok(journal) => journal,
        Err(JournalError::Empty) => {
            return nothing_to_do(
                a,
                j,
                "it holds no saved blocks: its probe stopped before overwriting anything",
            )
        }
        Err(e) => {
            let e = match e {
                JournalError::Io(io) => anyhow!(io).context("cannot read it"),
                e => anyhow!(e),
            };
            return Err(usage(
                e.context(format!("refusing to restore {jd}; nothing was written")),
            ));
        }
    };
    confirm_restore(a, j, info)?;
    let mut opened = open(path, info.is_some())?;
    let id = identity(path, info);
    let report = restore_journal(opened.target(), &mut journal, &id).map_err(|e| match e {
        ProbeError::Refused(r) => usage(anyhow!(
            "refusing to restore {jd} onto {dd}: {r} (nothing was written)"
        )),
        ProbeError::Journal(_) => usage(anyhow::Error::new(e).context(format!(
            "refusing to restore {jd} onto {dd} (nothing was written)"
        ))),
        e => Failure::Io(anyhow::Error::new(e).context(format!(
            "restoring {jd} onto {dd}; the journal is kept, run the restore again"
        ))),
    })?;
    drop(opened);
    let complete = report.complete();
    if complete {
        finish(&mut journal, j)?;
    }
    if a.json {
        let ranges: Vec<[u64; 2]> = report.lost_ranges().iter().map(|&(o, l)| [o, l]).collect();
        outln!(
            "{:#}",
            json!({
                "target": path.display().to_string(),
                "journal": j.display().to_string(),
                "restored_bytes": report.bytes_written,
                "records": report.records,
                "records_restored": report.restored,
                "records_lost": report.lost.len(),
                "lost_ranges": ranges,
                "records_lost_unknown_position": report.lost_unknown(),
                "journal_kept": !complete,
            })
        );
    } else if !a.quiet {
        outln!(
            "{dd}: wrote back {} ({} of {} saved blocks) from {jd}{}",
            format_size(report.bytes_written),
            report.restored,
            report.records,
            if complete { " (removed)" } else { "" }
        );
    }
    if complete {
        return Ok(());
    }
    let e = anyhow!(
        "{}; the journal {jd} is kept (the other blocks were written back)",
        lost_text(&report)
    );
    Err(if a.json {
        Failure::IoInReport(e)
    } else {
        Failure::Io(e)
    })
}

/// A journal with nothing to write back: removed, and said so.
fn nothing_to_do(a: &ProbeArgs, j: &Path, why: &str) -> Result<(), Failure> {
    std::fs::remove_file(j).map_err(|e| {
        Failure::Io(anyhow!(
            "{}: {why}, but it could not be removed ({e})",
            j.display()
        ))
    })?;
    if a.json {
        outln!(
            "{:#}",
            json!({
                "target": a.target.display().to_string(),
                "journal": j.display().to_string(),
                "restored_bytes": 0,
                "records": 0,
                "journal_kept": false,
            })
        );
    } else if !a.quiet {
        outln!("{}: {why}; nothing to write back (removed)", j.display());
    }
    Ok(())
}
