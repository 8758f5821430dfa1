//! `mkfs-alloc`: format images as FAT32 or exFAT with an explicit cluster size.
//!
//! This is the only crate of the workspace that prints. Exit codes: 0 success,
//! 1 I/O failure, 2 invalid input (nothing written).

mod args;
mod report;
mod target;

use clap::Parser;
use mkfs_alloc_layout::{plan, write_volume, Medium, PlanError, WriteError};
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
    let json = cli.json;
    match run(cli) {
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

fn run(cli: args::Cli) -> Result<(), Failure> {
    let opts = cli.format_options()?;
    let sector_size = cli.sector_size;
    let target = target::Target::inspect(&cli.target, cli.size_bytes()?, sector_size)?;
    let medium = Medium {
        volume_bytes: target.size_bytes(),
        sector_size,
        partition_offset: 0,
    };
    let layout = plan(&opts, &medium).map_err(|e: PlanError| usage(e))?;

    if cli.dry_run {
        if cli.json {
            report::print_json(&cli.target, &layout, None, true);
        } else if !cli.quiet {
            report::print_plan(&cli.target, &layout, &target);
        }
        return Ok(());
    }

    let mut dev = target.open()?;
    let show_progress = !cli.quiet && !cli.json && std::io::stderr().is_terminal();
    let bar = report::progress_bar(show_progress);
    let result = write_volume(&layout, &mut dev, &mut |done, total| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let write = result.map_err(|e| match e {
        WriteError::Io(io) => {
            Failure::Io(anyhow::Error::new(io).context(format!("writing {}", cli.target.display())))
        }
        other => usage(other),
    })?;
    drop(dev);

    if cli.json {
        report::print_json(&cli.target, &layout, Some(&write), false);
    } else if !cli.quiet {
        report::print_summary(&cli.target, &layout, &write, &target);
    }
    Ok(())
}
