//! `mkfs-alloc`: format images as FAT32 or exFAT with an explicit cluster size.
//!
//! This is the only crate of the workspace that prints. Exit codes: 0 success,
//! 1 I/O failure, 2 invalid input (nothing written).

/// `println!` that ignores a closed stdout (`mkfs-alloc info x | head`)
/// instead of panicking; errors still go to stderr and the exit code.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod args;
mod cmd_advise;
mod cmd_info;
mod cmd_list;
mod confirm;
mod data;
mod report;
mod target;

use clap::Parser;
use mkfs_alloc::{find_signatures, plan_medium, write_medium, MediumOptions};
use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_layout::ClusterChoice;
use mkfs_alloc_partition::TableKind;
use std::io::IsTerminal;
use std::process::ExitCode;

/// A failure, classified by exit code.
#[derive(Debug)]
pub enum Failure {
    /// Invalid input (exit 2); nothing was written.
    Usage(anyhow::Error),
    /// I/O failure (exit 1).
    Io(anyhow::Error),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Io(_) => 1,
        }
    }
    fn error(&self) -> &anyhow::Error {
        match self {
            Failure::Usage(e) | Failure::Io(e) => e,
        }
    }
}

/// Shorthand for invalid input.
pub fn usage(e: impl Into<anyhow::Error>) -> Failure {
    Failure::Usage(e.into())
}

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let json = match &cli.command {
        None => cli.format.json,
        Some(args::Command::List(a)) => a.json,
        Some(args::Command::Advise(a)) => a.json,
        Some(args::Command::Info(a)) => a.json,
    };
    let result = match cli.command {
        None => run(cli.format),
        Some(args::Command::List(a)) => cmd_list::run(&a),
        Some(args::Command::Advise(a)) => cmd_advise::run(&a),
        Some(args::Command::Info(a)) => cmd_info::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("mkfs-alloc: error: {:#}", f.error());
            if json {
                report::print_json_error(f.error(), f.code());
            }
            ExitCode::from(f.code())
        }
    }
}

fn run(cli: args::FormatArgs) -> Result<(), Failure> {
    let path = cli
        .target
        .clone()
        .ok_or_else(|| usage(anyhow::anyhow!("missing TARGET")))?;
    if let Some(s) = cli.sector_size {
        if !matches!(s, 512 | 1024 | 2048 | 4096) {
            return Err(usage(anyhow::anyhow!(
                "--sector-size {s} is not supported; valid: 512, 1024, 2048, 4096"
            )));
        }
    }
    if !cli.data.is_empty() && !cli.cluster.eq_ignore_ascii_case("auto") {
        return Err(usage(anyhow::anyhow!(
            "--data chooses the cluster size; it cannot be combined with --cluster {}",
            cli.cluster
        )));
    }
    let target = target::Target::inspect(&path, cli.size_bytes()?, cli.sector_size)?;
    let mut format = cli.format_options()?;
    if format.align.is_none() {
        format.align = target.preferred_align();
    }
    let mut opts = MediumOptions {
        format,
        table: cli.table_choice(),
        whole_disk: target.device().is_some_and(|d| d.is_whole_disk),
        sector_size: cli.sector_size.unwrap_or(target.block_size()),
    };
    let plan_error = |e| format_failure(e, None);
    let mut plan =
        plan_medium(&opts, target.size_bytes(), target.block_size()).map_err(plan_error)?;
    let mut data_note = None;
    if !cli.data.is_empty() {
        let (cluster, reason) =
            data::recommend(&cli.data, &opts.format, &plan, !cli.quiet && !cli.json)?;
        opts.format.cluster = ClusterChoice::Bytes(cluster);
        plan = plan_medium(&opts, target.size_bytes(), target.block_size()).map_err(plan_error)?;
        plan.layout.cluster_rule = mkfs_alloc_layout::rules::ClusterRule::FromData;
        data_note = Some(reason);
    }
    if cli.dry_run {
        // What is on the target now, the way `wipefs -n` would show it.
        let found = target.probe().map_err(Failure::Io)?;
        if cli.json {
            report::print_json(&path, &plan, &found, target.device(), None, true);
        } else if !cli.quiet {
            report::print_plan(&path, &plan, &found, &target);
        }
        return Ok(());
    }

    if let Some(info) = target.device() {
        confirm::confirm(
            info,
            &plan,
            target.unmounts(),
            cli.yes,
            cli.quiet || cli.json,
        )?;
        target.unmount_volumes()?;
    }
    let mut opened = target.open()?;
    let mut notes: Vec<String> = data_note.into_iter().collect();
    // Found before discarding or zeroing, through the handle that writes, and
    // wiped by the same run (never probed twice).
    let found = find_signatures(&mut opened.io())
        .map_err(|e| format_failure(e, Some(format!("probing {}", path.display()))))?;
    if let target::Opened::Device(d) = &mut opened {
        let want_discard = !cli.no_discard && (cli.discard || d.info().discard_granularity > 0);
        if want_discard {
            match d.discard(0, target.size_bytes()) {
                Ok(true) => {
                    notes.push("discarded (TRIM) the whole device before writing".to_string())
                }
                Ok(false) => {
                    notes.push("the device does not support discard; not discarded".to_string())
                }
                Err(e) => notes.push(format!(
                    "discard failed, continuing without it: {e}: {}",
                    e.source
                )),
            }
        }
    }
    let show_progress = !cli.quiet && !cli.json && std::io::stderr().is_terminal();
    if cli.full {
        let bar = report::Progress::new(show_progress, "zeroing");
        let zeroed = zero_all(opened.io(), &mut |done, total| bar.update(done, total));
        bar.finish();
        zeroed.map_err(|e| {
            Failure::Io(anyhow::Error::new(e).context(format!("zeroing {}", path.display())))
        })?;
        notes.push("full format: zeroed the whole medium".to_string());
    }
    let bar = report::Progress::new(show_progress, "writing");
    let result = write_medium(&plan, &mut opened.io(), &found, &mut |done, total| {
        bar.update(done, total)
    });
    bar.finish();
    let write =
        result.map_err(|e| format_failure(e, Some(format!("formatting {}", path.display()))))?;
    if let target::Opened::Device(d) = &mut opened {
        if plan.table.kind != TableKind::None {
            match d.reread_partitions() {
                Ok(()) => notes.push("the kernel re-read the partition table".to_string()),
                Err(e) => notes.push(format!(
                    "the kernel could not re-read the partition table ({}); replug the device or run partprobe",
                    e.source
                )),
            }
        }
    }
    drop(opened);

    if cli.json {
        report::print_json(
            &path,
            &plan,
            &found,
            target.device(),
            Some((&write, &notes)),
            false,
        );
    } else if !cli.quiet {
        report::print_summary(&path, &plan, &found, &write, &target, &notes);
    }
    Ok(())
}

/// Classifies a library error: invalid input exits 2 (nothing was written),
/// anything else is an I/O failure (exit 1).
fn format_failure(e: mkfs_alloc::FormatError, context: Option<String>) -> Failure {
    let invalid = e.is_invalid_input();
    let mut e = anyhow::Error::new(e);
    if let Some(c) = context {
        e = e.context(c);
    }
    if invalid {
        usage(e)
    } else {
        Failure::Io(e)
    }
}

/// Zeroes the whole target in 64 MiB steps (a full format).
fn zero_all(dev: &mut dyn BlockIo, progress: &mut dyn FnMut(u64, u64)) -> Result<(), IoError> {
    let bs = u64::from(dev.block_size());
    let total = dev.num_blocks();
    let step = (64 << 20) / bs;
    let mut at = 0;
    while at < total {
        let n = step.min(total - at);
        dev.write_zeroes(at, n)?;
        at += n;
        progress(at * bs, total * bs);
    }
    dev.flush()
}
