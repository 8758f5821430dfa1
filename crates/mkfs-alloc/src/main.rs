//! `mkfs-alloc`: format images as FAT32 or exFAT with an explicit cluster size.
//!
//! This is the only crate of the workspace that prints. Exit codes: 0 success,
//! 1 I/O failure, 2 invalid input (nothing written).

mod args;
mod report;
mod target;

use clap::Parser;
use mkfs_alloc::{format_medium, plan_medium, MediumOptions};
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
    let json = cli.format.json;
    let result = match cli.command {
        None => run(cli.format),
        Some(command) => match command {},
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
    let opts = MediumOptions {
        format: cli.format_options()?,
        table: cli.table_choice(),
        whole_disk: false,
        sector_size: cli.sector_size,
    };
    let target = target::Target::inspect(&path, cli.size_bytes()?, cli.sector_size)?;
    let plan = plan_medium(&opts, target.size_bytes(), cli.sector_size).map_err(|e| {
        if e.is_invalid_input() {
            usage(e)
        } else {
            Failure::Io(e.into())
        }
    })?;
    // What is on the target now, the way `wipefs -n` would show it.
    let found = target.probe().map_err(Failure::Io)?;

    if cli.dry_run {
        if cli.json {
            report::print_json(&path, &plan, &found, None, true);
        } else if !cli.quiet {
            report::print_plan(&path, &plan, &found, &target);
        }
        return Ok(());
    }

    let mut dev = target.open()?;
    let show_progress = !cli.quiet && !cli.json && std::io::stderr().is_terminal();
    let bar = report::progress_bar(show_progress);
    let result = format_medium(&plan, &mut dev, &mut |done, total| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let write = result.map_err(|e| {
        let invalid = e.is_invalid_input();
        let e = anyhow::Error::new(e).context(format!("formatting {}", path.display()));
        if invalid {
            usage(e)
        } else {
            Failure::Io(e)
        }
    })?;
    drop(dev);

    if cli.json {
        report::print_json(&path, &plan, &found, Some(&write), false);
    } else if !cli.quiet {
        report::print_summary(&path, &plan, &found, &write, &target);
    }
    Ok(())
}
