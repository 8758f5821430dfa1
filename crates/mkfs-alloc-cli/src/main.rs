//! `mkfs-alloc`: format media as exFAT or FAT (FAT12, FAT16, FAT32) with an
//! explicit cluster size.
//!
//! This is the only crate of the workspace that prints. Exit codes: 0 success,
//! 1 I/O failure after writing began, 2 invalid input or a refusal before
//! anything was written. With `--json`, every outcome prints exactly one
//! JSON document on stdout (argument errors included).

/// `print!` that ignores a closed stdout (`mkfs-alloc info x | head`)
/// instead of panicking: for a library's text, whose lines end in newlines.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

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
mod cmd_convert;
mod cmd_convert_fat32;
mod cmd_format;
mod cmd_info;
mod cmd_list;
mod cmd_probe;
mod cmd_recluster;
mod cmd_resize;
mod compat;
mod completions;
mod confirm;
mod contents;
mod data;
mod guid;
mod hints;
mod in_place;
mod partition_pick;
mod report;
mod rootdir;
mod target;
mod text;
mod watch;

use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

/// A failure, classified by exit code.
#[derive(Debug)]
pub enum Failure {
    /// Invalid input or a refusal (exit 2); nothing was written.
    Usage(anyhow::Error),
    /// I/O failure (exit 1).
    Io(anyhow::Error),
    /// An I/O failure already reported inside the command's JSON document
    /// (exit 1; only the message goes to stderr).
    IoInReport(anyhow::Error),
    /// A batch's outcome, already reported per target (in the table or
    /// the JSON document): the exit code, and the message for stderr.
    InReport(u8, anyhow::Error),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Io(_) | Failure::IoInReport(_) => 1,
            Failure::InReport(code, _) => *code,
        }
    }
    fn error(&self) -> &anyhow::Error {
        match self {
            Failure::Usage(e)
            | Failure::Io(e)
            | Failure::IoInReport(e)
            | Failure::InReport(_, e) => e,
        }
    }
}

/// Shorthand for invalid input.
pub fn usage(e: impl Into<anyhow::Error>) -> Failure {
    Failure::Usage(e.into())
}

fn main() -> ExitCode {
    let raw: Vec<OsString> = std::env::args_os().collect();
    // Called as mkfs.fat, mkfs.vfat, mkfs.msdos, mkdosfs or mkfs.exfat.
    if let Some(front) = raw.first().and_then(|a| compat::FrontEnd::from_argv0(a)) {
        return compat::run(front, &raw);
    }
    // Known before parsing, so that argument errors are JSON too.
    let (raw, json) = args::lift_json(raw);
    let cli = match args::Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) => return argument_error(&e, json),
    };
    let result = match cli.command {
        Some(args::Command::Completions(_) | args::Command::Man(_)) if json => Err(usage(
            anyhow::anyhow!("--json: completions and man pages are not JSON; leave --json out"),
        )),
        None => cmd_format::check_command_word(&cli.format.targets)
            .and_then(|()| cmd_format::run(cli.format)),
        Some(args::Command::List(a)) => cmd_list::run(&a),
        Some(args::Command::Advise(a)) => cmd_advise::run(&a),
        Some(args::Command::Info(a)) => cmd_info::run(&a),
        Some(args::Command::Probe(a)) => cmd_probe::run(&a),
        Some(args::Command::Recluster(a)) => cmd_recluster::run(&a),
        Some(args::Command::Resize(a)) => cmd_resize::run(&a),
        Some(args::Command::Convert(a)) => cmd_convert::run(&a),
        Some(args::Command::Completions(a)) => completions::run(&a),
        Some(args::Command::Man(a)) => completions::man(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("mkfs-alloc: error: {}", text::error_text(f.error()));
            if json && !matches!(f, Failure::IoInReport(_) | Failure::InReport(..)) {
                report::print_json_error(f.error(), f.code());
            }
            ExitCode::from(f.code())
        }
    }
}

/// A clap error: help and version print as usual (exit 0; with `--json`
/// as `{"help": TEXT}` and `{"name": "mkfs-alloc", "version": V}`);
/// argument errors exit 2, with their JSON document when `--json` was given.
fn argument_error(e: &clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    match (e.kind(), json) {
        (ErrorKind::DisplayHelp, true) => {
            let help = e.render().to_string();
            outln!("{:#}", serde_json::json!({ "help": help }));
            return ExitCode::SUCCESS;
        }
        (ErrorKind::DisplayVersion, true) => {
            let v = serde_json::json!({
                "name": env!("CARGO_BIN_NAME"),
                "version": env!("CARGO_PKG_VERSION"),
            });
            outln!("{v:#}");
            return ExitCode::SUCCESS;
        }
        (ErrorKind::DisplayHelp | ErrorKind::DisplayVersion, false) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let _ = e.print();
    if json {
        let text = e.kind().as_str().map_or_else(
            || e.to_string().trim().to_string(),
            |kind| first_line(&e.to_string()).unwrap_or(kind).to_string(),
        );
        report::print_json_error(&anyhow::anyhow!(text), 2);
    }
    ExitCode::from(2)
}

/// The first non-empty line of clap's message, without its "error: " prefix.
fn first_line(s: &str) -> Option<&str> {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
}
