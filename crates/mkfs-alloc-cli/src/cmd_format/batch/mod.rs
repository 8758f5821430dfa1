//! Several targets at once (`mkfs-alloc [options] TARGET TARGET...`), or
//! one with `--verify`, `--log` and the other batch options: the library's
//! [`mkfs_alloc::batch`] with the CLI's checks, confirmation and reports.
//!
//! ```text
//!  inspect every target (read-only; every refusal collected, duplicates refused)
//!  ─► check --log (a regular or new file, no target)
//!  ─► plan each for its own size, its own identity (library)
//!  ─► a refused target: nothing is written anywhere (exit 2), unless --skip-refused
//!  ─► --dry-run: the table, nothing opened for writing
//!  ─► ONE confirmation listing every target, its size and contents (devices)
//!  ─► open --log; open and lock EVERY target: one that cannot be opened is
//!     refused, and nothing is written anywhere (exit 2), unless --skip-refused
//!  ─► run: `--jobs` at once, each on its own (probe, write, verify)
//!  ─► the table / --json / --log; exit 0 all ok, 2 nothing written, else 1
//! ```

mod checks;
mod confirm;
mod progress;
mod report;
pub(super) mod target;

use super::plan::{check_sd_target, image_size, plan_options};
use crate::args::FormatArgs;
use crate::target::{Opened, Target};
use crate::{rootdir, usage, Failure};
use anyhow::anyhow;
use checks::{check_log, open_log, open_targets, refuse_duplicates, undo_all, Refusal};
use mkfs_alloc::batch::{
    Batch, BatchPlan, LabelTemplate, Outcome, RunOptions, RunReport, TargetError, TargetSpec,
    Verdict,
};
use mkfs_alloc::MediumOptions;
use report::Row;
use std::path::PathBuf;
use std::sync::Mutex;

/// Whether the arguments ask for a batch: several targets, or an option
/// only a batch has.
pub(super) fn is_batch(cli: &FormatArgs) -> bool {
    cli.targets.len() > 1 || !batch_only_options(cli).is_empty()
}

/// The options given that make a run with one target a batch.
fn batch_only_options(cli: &FormatArgs) -> Vec<&'static str> {
    let given = [
        (cli.verify, "--verify"),
        (cli.jobs.is_some(), "--jobs"),
        (cli.serial_from.is_some(), "--serial-from"),
        (cli.number_from.is_some(), "--number-from"),
        (cli.skip_refused, "--skip-refused"),
        (cli.log.is_some(), "--log"),
        (
            cli.label.as_deref().is_some_and(|l| l.contains("{n")),
            "a numbered --label",
        ),
    ];
    given
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
}

/// One target as inspected: the target, or why it is refused.
struct Entry {
    path: PathBuf,
    target: Option<Target>,
    refusal: Option<String>,
    notes: Vec<String>,
}

/// Runs the batch.
pub(super) fn run(cli: FormatArgs) -> Result<(), Failure> {
    let (batch, template_notes) = batch_options(&cli)?;
    let (tree, show) = super::walk_tree(&cli)?;
    let tree_data = tree.as_ref().map(mkfs_alloc::populate::scan_result);
    let mut entries: Vec<Entry> = cli
        .targets
        .iter()
        .map(|p| inspect(&cli, p, tree_data.as_ref()))
        .collect();
    refuse_duplicates(&mut entries);
    check_log(&cli, &entries)?;
    if let (Some(t), Some(dir)) = (&tree, cli.rootdir.as_deref()) {
        for e in entries.iter_mut().filter(|e| e.refusal.is_none()) {
            if let Err(f) = rootdir::refuse_target_inside(t, dir, &e.path) {
                e.refusal = Some(crate::text::error_text(f.error()));
            }
        }
    }
    let mut plan = plan_all(&cli, &batch, &mut entries, tree_data.as_ref())?;
    drop(tree_data); // the tree is measured again, exactly, by its planning
    let mut template_notes = template_notes;
    if let Some(t) = tree {
        let times = plan.populate(t, mkfs_alloc::populate::TimePolicy::from_env());
        template_notes.push(format!(
            "--rootdir: the tree was planned {times} time{} for {} target{} (once per distinct volume layout)",
            if times == 1 { "" } else { "s" },
            entries.len(),
            if entries.len() == 1 { "" } else { "s" }
        ));
    }
    let refused: Vec<usize> = plan
        .plans()
        .enumerate()
        .filter(|(_, p)| p.is_err())
        .map(|(i, _)| i)
        .collect();
    if cli.dry_run {
        print_report(&cli, &entries, &plan, &[], true, &template_notes);
        return Ok(());
    }
    let refuse = Refusal {
        cli: &cli,
        plan: &plan,
        notes: &template_notes,
    };
    if !refused.is_empty() && (!cli.skip_refused || refused.len() == entries.len()) {
        let mut log = open_log(&cli)?;
        return Err(refuse.all(&entries, log.as_mut(), &refused));
    }
    confirm::confirm_all(&cli, &entries, &plan)?;
    for e in &entries {
        if let (Some(t), None) = (&e.target, &e.refusal) {
            t.unmount_volumes()?;
        }
    }
    // Opened once confirmed (a declined batch leaves no log behind), still
    // before the first write.
    let mut log = open_log(&cli)?;
    // Every target opened and locked before the first write to any: one
    // held by another process refuses the batch, not its own part of it.
    let mut held = open_targets(&mut entries, &plan);
    let refused_now: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].refusal.is_some())
        .collect();
    if refused_now.len() > refused.len()
        && (!cli.skip_refused || refused_now.len() == entries.len())
    {
        undo_all(&entries, held);
        return Err(refuse.all(&entries, log.as_mut(), &refused_now));
    }
    let report = execute(&cli, &entries, &mut plan, &mut held, show);
    if cli.rootdir.is_some() {
        template_notes.push(format!(
            "--rootdir: read {} of file data from the tree in {} pass{}, written to every target",
            mkfs_alloc::layout::units::format_size(report.source_bytes_read),
            report.source_passes,
            if report.source_passes == 1 { "" } else { "es" }
        ));
    }
    let outcomes = report.outcomes;
    print_report(&cli, &entries, &plan, &outcomes, false, &template_notes);
    write_log(log.as_mut(), &entries, &plan, &outcomes)?;
    settle(&entries, &outcomes)
}

/// The library's batch from the arguments: the template (every target's
/// options), the label template, the serials.
fn batch_options(cli: &FormatArgs) -> Result<(Batch, Vec<String>), Failure> {
    if cli.copy.is_some()
        || cli.bmap.is_some()
        || cli.output_format != crate::args::OutputFormat::Raw
    {
        if cli.targets.len() == 1 {
            return Err(usage(anyhow!(
                "--copy, --bmap and --output-format cannot be combined with {}: those options run the batch, which writes its targets only; leave one side out",
                batch_only_options(cli).join(", ")
            )));
        }
        return Err(usage(anyhow!(
            "--copy, --bmap and --output-format are for one image; a batch reads the --rootdir tree once and writes it to every target: give one target, or leave them out"
        )));
    }
    let number_from = cli.number_from.unwrap_or(1);
    let more = cli.targets.len().saturating_sub(1) as u64;
    if number_from.checked_add(more).is_none() {
        return Err(usage(anyhow!(
            "--number-from {number_from}: {} targets would be numbered past {}; valid: 0..={}",
            cli.targets.len(),
            u64::MAX,
            u64::MAX - more
        )));
    }
    if cli.serial.is_some() && cli.targets.len() > 1 {
        return Err(usage(anyhow!(
            "--serial pins one identity, and {} targets would share it; give --serial-from HEX (the first target's serial; the next ones count up), or leave both out for random serials",
            cli.targets.len()
        )));
    }
    let mut format = cli.format_options()?;
    let mut notes = Vec::new();
    let label = match cli.label.as_deref().filter(|l| l.contains(['{', '}'])) {
        Some(l) => {
            let t: LabelTemplate = l.parse().map_err(|e| usage(anyhow!("--label: {e}")))?;
            format = format.no_label();
            Some(t)
        }
        None => None,
    };
    let serial_from = match (cli.serial_from.as_deref(), cli.serial.as_deref()) {
        (Some(s), _) => Some(crate::args::parse_serial_arg("serial-from", s)?),
        (None, Some(_)) => format.given_serial(),
        // SOURCE_DATE_EPOCH pins the output: the serials count up from the
        // one the time gives, so that a batch is reproducible too.
        (None, None) if format.is_pinned() => {
            notes.push("SOURCE_DATE_EPOCH: serials count up from the one the time gives".into());
            format.given_serial()
        }
        (None, None) => None,
    };
    let template = MediumOptions::new()
        .format(format)
        .table(cli.table_choice());
    let mut batch = Batch::new(template);
    batch.label = label;
    batch.serial_from = serial_from;
    batch.number_from = number_from;
    Ok((batch, notes))
}

/// Inspects one target read-only; what a real run would refuse is kept as
/// its refusal.
fn inspect(
    cli: &FormatArgs,
    path: &std::path::Path,
    tree: Option<&mkfs_alloc_advise::ScanResult>,
) -> Entry {
    let mut entry = Entry {
        path: path.to_path_buf(),
        target: None,
        refusal: None,
        notes: Vec::new(),
    };
    let inspected = image_size(cli, path, tree)
        .and_then(|size| Target::inspect(path, size, cli.sector_size, true));
    match inspected {
        Ok(t) => {
            entry.refusal = t.would_refuse().map(str::to_string);
            entry.notes = t.notes().to_vec();
            entry.target = Some(t);
        }
        Err(f) => entry.refusal = Some(crate::text::error_text(f.error())),
    }
    entry
}

/// Plans every target (a refused one keeps its refusal as its error).
fn plan_all(
    cli: &FormatArgs,
    batch: &Batch,
    entries: &mut [Entry],
    tree: Option<&mkfs_alloc_advise::ScanResult>,
) -> Result<BatchPlan, Failure> {
    let specs: Vec<TargetSpec> = entries
        .iter()
        .map(|e| {
            let name = e.path.display().to_string();
            let Some(t) = e.target.as_ref() else {
                return TargetSpec::new(name, 0, 512);
            };
            let mut spec = TargetSpec::new(name, t.size_bytes(), t.block_size());
            spec.overrides = t.overrides(cli.sector_size);
            spec
        })
        .collect();
    let notes = Mutex::new(vec![Vec::new(); entries.len()]);
    let plan = batch.plan_with(&specs, |i, opts, spec| {
        let e = &entries[i];
        if let Some(r) = e.refusal.clone() {
            return Err(TargetError::new(Verdict::Refused, false, r));
        }
        let Some(t) = e.target.as_ref() else {
            return Err(TargetError::new(Verdict::Refused, false, "not inspected"));
        };
        let planned = check_sd_target(opts.format_options(), t)
            .and_then(|()| plan_options(cli, opts, spec.medium_bytes, spec.block_size, tree));
        match planned {
            Ok(p) => {
                if let Ok(mut n) = notes.lock() {
                    n[i] = p.notes;
                }
                Ok(p.plan)
            }
            Err(f) => Err(TargetError::new(
                Verdict::Refused,
                false,
                crate::text::error_text(f.error()),
            )),
        }
    });
    let plan = plan.map_err(|e| usage(anyhow!(e)))?;
    for (e, n) in entries
        .iter_mut()
        .zip(notes.into_inner().unwrap_or_default())
    {
        e.notes.extend(n);
    }
    Ok(plan)
}

/// Runs the planned targets (the refused ones are passed over by the
/// library: their plan is their refusal).
fn execute(
    cli: &FormatArgs,
    entries: &[Entry],
    plan: &mut BatchPlan,
    held: &mut [Option<Opened>],
    show: bool,
) -> RunReport {
    let steps = target::steps(cli, entries.len() > 1);
    let targets: Vec<target::CliTarget<'_>> = entries
        .iter()
        .zip(plan.plans())
        .zip(held.iter_mut())
        .map(|((e, p), h)| {
            let table = p.is_ok_and(|p| p.table().kind() != mkfs_alloc::partition::TableKind::None);
            let front = target::CliFront {
                probe_quiet: true,
                single: None,
            };
            target::CliTarget::new(e.target.as_deref(), steps, table, front)
                .held(h.take())
                // Refused when opened (--skip-refused): passed over.
                .refused(e.refusal.clone().filter(|_| p.is_ok()))
        })
        .collect();
    let lines = progress::Lines::new(show, plan.names());
    let opts = RunOptions::new()
        .jobs(cli.jobs.map_or(0, |j| j as usize))
        .verify(cli.verify);
    plan.run(targets, &opts, &|e| lines.event(e))
}

/// The table or the JSON document.
fn print_report(
    cli: &FormatArgs,
    entries: &[Entry],
    plan: &BatchPlan,
    outcomes: &[Outcome],
    dry_run: bool,
    notes: &[String],
) {
    let rows = rows(entries, plan, outcomes, dry_run);
    if cli.json {
        let targets: Vec<serde_json::Value> = rows.iter().map(report::target_json).collect();
        let count = |v: &str| rows.iter().filter(|r| r.verdict == v).count();
        outln!(
            "{:#}",
            serde_json::json!({
                "dry_run": dry_run,
                "targets": targets,
                "summary": {
                    "targets": rows.len(),
                    "ok": count("ok"),
                    "refused": count("refused"),
                    "failed": rows.len() - count("ok") - count("refused") - count("planned") - count("not written"),
                    "verify": cli.verify,
                    "notes": notes,
                },
            })
        );
    } else if !cli.quiet {
        report::print_table(&rows);
        for n in notes {
            outln!("note: {n}");
        }
    }
}

fn rows<'a>(
    entries: &'a [Entry],
    plan: &'a BatchPlan,
    outcomes: &'a [Outcome],
    dry_run: bool,
) -> Vec<Row<'a>> {
    entries
        .iter()
        .zip(plan.plans())
        .enumerate()
        .map(|(i, (e, p))| {
            let outcome = outcomes.get(i);
            let (verdict, error) = match (outcome, p) {
                (Some(o), _) => (
                    o.verdict.as_str().to_string(),
                    o.error.as_ref().map(error_chain),
                ),
                (None, Err(err)) => ("refused".to_string(), Some(error_chain(err))),
                // Refused when opened, after planning.
                (None, Ok(_)) if e.refusal.is_some() => ("refused".to_string(), e.refusal.clone()),
                (None, Ok(_)) if dry_run => ("planned".to_string(), None),
                (None, Ok(_)) => ("not written".to_string(), None),
            };
            let mut notes = e.notes.clone();
            if let Some(o) = outcome {
                notes.extend(o.notes.iter().cloned());
            }
            Row {
                path: &e.path,
                size: e.target.as_ref().map(|t| t.size_bytes()),
                device: e.target.as_ref().and_then(|t| t.device()),
                plan: p.ok(),
                verdict,
                error,
                outcome,
                notes,
                contents: if outcome.is_none() {
                    e.target.as_ref().map(Target::contents).unwrap_or_default()
                } else {
                    Vec::new()
                },
            }
        })
        .collect()
}

/// The log's lines for every target, when `--log` is given.
fn write_log(
    log: Option<&mut std::fs::File>,
    entries: &[Entry],
    plan: &BatchPlan,
    outcomes: &[Outcome],
) -> Result<(), Failure> {
    let Some(file) = log else {
        return Ok(());
    };
    let rows = rows(entries, plan, outcomes, false);
    report::append_log(file, &rows).map_err(Failure::Io)
}

/// The exit: 0 when every target succeeded, 2 when nothing was written
/// anywhere, else 1.
fn settle(entries: &[Entry], outcomes: &[Outcome]) -> Result<(), Failure> {
    let bad: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.verdict != Verdict::Ok)
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    let wrote_any = outcomes
        .iter()
        .any(|o| o.verdict == Verdict::Ok || o.error.as_ref().is_some_and(|e| e.wrote));
    let names: Vec<String> = bad
        .iter()
        .map(|o| format!("{} ({})", entries[o.index].path.display(), o.verdict))
        .collect();
    let e = anyhow!(
        "{} of {} targets did not succeed: {}",
        bad.len(),
        outcomes.len(),
        names.join(", ")
    );
    Err(Failure::InReport(if wrote_any { 1 } else { 2 }, e))
}

/// An error and its causes, each said once.
fn error_chain(e: &TargetError) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
