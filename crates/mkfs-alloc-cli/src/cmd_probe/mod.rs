//! `mkfs-alloc probe DEVICE`: find counterfeit capacity before formatting.
//!
//! The engine is `mkfs-alloc-capacity`, which also checks and opens the
//! target (`target::Opened`: a device uncached, reopened between the
//! probe's write and read phases); this module asks for confirmation, keeps the `--keep-data` journal
//! (`journal.rs`: creating it, `--restore`, a journal in the way), runs the
//! full pass with its progress bar (`full.rs`) and prints the report
//! (`print.rs`). `mkfs-alloc --probe ...` calls [`probe_target`] before a
//! format.

mod full;
mod journal;
mod print;

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc_capacity::target::{identity, Opened, TargetError};
use mkfs_alloc_capacity::{probe, Backup, Phase, ProbeOptions, ProbeReport};
use mkfs_alloc_device as device;
use std::path::{Path, PathBuf};

/// What sampling cannot prove, for `probe --help`.
const PROBE_HELP: &str = "\
By default the probe samples: it writes test blocks at unit 0, every power of two, random \
places and the end of the device (about 100 MiB), then reads them back. That finds the \
wraparound, limbo and chain fakes it models, and a wrap of any size from the size of its cache \
search on, in seconds. It cannot prove that every block stores data: a fake whose cache is larger \
than --max-cache, or whose controller keeps only the blocks written last (recycling the oldest), \
passes it. --full writes and reads back every block (as H2testw and f3write/f3read do): it \
destroys all data and takes as long as writing and reading the whole device, and it is the only \
certain test.";
/// Options of `mkfs-alloc probe`.
#[derive(Debug, clap::Args)]
#[command(after_help = PROBE_HELP)]
pub struct ProbeArgs {
    /// Write and read back every block of the device instead of sampling
    /// (destroys all data; as slow as writing and reading the whole device).
    /// The only certain test: see below.
    #[arg(long, conflicts_with = "restore")]
    pub full: bool,
    /// Save every block the probe overwrites to a journal file first and
    /// write it back at the end (without it the probe is destructive: it is
    /// meant for sticks about to be formatted).
    #[arg(long)]
    pub keep_data: bool,
    /// The journal of --keep-data (default: mkfs-alloc-probe-NAME.journal
    /// in the current directory). Keep it on another disk than the probed one.
    #[arg(long, value_name = "FILE", requires = "keep_data")]
    pub journal: Option<PathBuf>,
    /// Write back the blocks saved in the journal of an interrupted
    /// --keep-data probe, then delete the journal (it is kept if a block
    /// could not be written back). Refuses a device the journal did not
    /// come from. Probes nothing.
    #[arg(long, value_name = "JOURNAL", conflicts_with_all = ["keep_data", "journal"])]
    pub restore: Option<PathBuf>,
    /// Do not measure the sequential and random write speeds.
    #[arg(long)]
    pub no_speed: bool,
    /// Largest device write cache to search for (default 64M).
    #[arg(long, value_name = "SIZE")]
    pub max_cache: Option<String>,
    /// Seed of the probe's salt and random positions (reproducible runs).
    #[arg(long, value_name = "N", hide = true)]
    pub seed: Option<u64>,
    /// Do not ask for confirmation (required without a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the report as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors (and the JSON with --json).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The stick or card to probe (a block device; an image file is
    /// accepted for testing, through the page cache).
    pub target: PathBuf,
}

/// A target refused (exit 2) or an I/O failure opening it (exit 1).
fn target_failure(e: TargetError) -> Failure {
    if e.is_io() {
        Failure::Io(e.into())
    } else {
        usage(e)
    }
}

/// [`Opened::check`], its refusal a [`Failure`].
fn check(path: &Path) -> Result<Option<device::DeviceInfo>, Failure> {
    Opened::check(path).map_err(target_failure)
}

/// [`Opened::open`], its failure a [`Failure`].
fn open(path: &Path, is_device: bool) -> Result<Opened, Failure> {
    Opened::open(path, is_device).map_err(target_failure)
}

fn phase_text(p: Phase) -> &'static str {
    match p {
        Phase::Sampling => "writing probe blocks across the device",
        Phase::CacheSearch => "searching for the device's cache at its end",
        Phase::Bisect => "narrowing down the real size",
        Phase::Speed => "measuring speeds",
        Phase::Restore => "writing the saved data back",
        Phase::Write => "writing every block",
        Phase::Verify => "reading every block back",
    }
}

/// Runs the probe on an opened target, showing the phases unless `quiet`.
fn run_probe(
    opened: &mut Opened,
    opts: &ProbeOptions,
    backup: Option<&mut dyn Backup>,
    quiet: bool,
) -> Result<ProbeReport, mkfs_alloc_capacity::ProbeError> {
    let mut last = None;
    let mut progress = |p: Phase| {
        if !quiet && last != Some(p) {
            eprintln!("mkfs-alloc: probe: {}", phase_text(p));
        }
        last = Some(p);
    };
    probe(opened.target(), opts, backup, &mut progress)
}

fn probe_failed(e: mkfs_alloc_capacity::ProbeError, path: &Path) -> Failure {
    Failure::Io(anyhow::Error::new(e).context(format!("probing {}", path.display())))
}

/// `mkfs-alloc --probe`: probes the format target (already confirmed)
/// destructively and returns the report.
pub fn probe_target(path: &Path, quiet: bool) -> Result<ProbeReport, Failure> {
    let info = check(path)?;
    let mut opened = open(path, info.is_some())?;
    let opts = ProbeOptions::default();
    run_probe(&mut opened, &opts, None, quiet).map_err(|e| probe_failed(e, path))
}

fn ask(info: &device::DeviceInfo, a: &ProbeArgs, journal: Option<&Path>) -> Result<(), Failure> {
    let what = match journal {
        Some(j) => format!(
            "write test blocks across {} (the blocks overwritten are saved to {} first and written back afterwards)",
            info.path.display(),
            j.display()
        ),
        None => format!(
            "OVERWRITE test blocks across {} (about 100 MiB at places all over the device: its data is lost)",
            info.path.display()
        ),
    };
    let quiet = a.quiet || a.json;
    crate::confirm::confirm_action(info, &shown_holds(info, a), &what, a.yes, quiet)
}

/// [`holds`] of the device when the confirmation shows it (it reads the
/// whole volume: not for `--yes --quiet`).
fn shown_holds(info: &device::DeviceInfo, a: &ProbeArgs) -> Vec<String> {
    if (a.quiet || a.json) && a.yes {
        return Vec::new();
    }
    holds(&info.path, Some(info))
}

/// What the FAT and exFAT volumes of the target hold, one line each (read
/// through the library's reader of existing volumes,
/// `mkfs_alloc::existing::holdings`), e.g. `exFAT volume (whole medium,
/// 64 MiB, 128 KiB clusters): 12 files in 2 directories, 3.4 MiB`. Empty
/// when the target cannot be read or holds none: the probe goes on as it
/// would without.
fn holds(path: &Path, info: Option<&device::DeviceInfo>) -> Vec<String> {
    use mkfs_alloc::units::{format_count, format_size};
    let block_size = info.map_or(512, |i| i.logical_block_size);
    let Ok(mut dev) = mkfs_alloc::inspect::ReadOnlyFile::open(path, block_size) else {
        return Vec::new();
    };
    let Ok(vols) = mkfs_alloc::existing::holdings(&mut dev) else {
        return Vec::new();
    };
    vols.into_iter()
        .map(|v| match v {
            Ok(h) => format!(
                "{} volume ({}, {}, {} clusters): {} in {}, {} ({} bytes)",
                h.fs,
                if h.start == 0 {
                    "whole medium".to_string()
                } else {
                    format!("at {}", format_size(h.start))
                },
                format_size(h.volume_bytes),
                format_size(h.cluster_size),
                mkfs_alloc::units::plural(h.files, "file", "files"),
                mkfs_alloc::units::plural(h.directories, "directory", "directories"),
                format_size(h.file_bytes),
                format_count(h.file_bytes)
            ),
            Err(e) => format!("a FAT/exFAT volume that cannot be read: {e}"),
        })
        .collect()
}

/// On an image file (no confirmation asked): what its volumes hold, on
/// stderr, before the probe writes to it.
fn say_holds(a: &ProbeArgs, info: Option<&device::DeviceInfo>) {
    if info.is_some() || a.quiet || a.json {
        return;
    }
    for h in holds(&a.target, None) {
        eprintln!("mkfs-alloc: probe: {} holds {h}", a.target.display());
    }
}

/// Asks before `--restore` writes to a device.
fn confirm_restore(
    a: &ProbeArgs,
    j: &Path,
    info: Option<&device::DeviceInfo>,
) -> Result<(), Failure> {
    let Some(info) = info else {
        return Ok(());
    };
    let what = format!(
        "write the blocks saved in {} back to {}",
        j.display(),
        info.path.display()
    );
    crate::confirm::confirm_action(info, &[], &what, a.yes, a.quiet || a.json)
}

/// `mkfs-alloc probe`.
pub fn run(a: &ProbeArgs) -> Result<(), Failure> {
    let path = &a.target;
    if a.full && a.keep_data {
        return Err(usage(anyhow!(
            "--keep-data cannot be used with --full: the full pass overwrites every block, and saving them would take a journal as large as the device; copy the data off first (nothing was written)"
        )));
    }
    let info = check(path)?;
    let mut opts = ProbeOptions {
        seed: a.seed,
        measure: !a.no_speed,
        ..ProbeOptions::default()
    };
    if let Some(m) = &a.max_cache {
        opts.max_cache_bytes =
            mkfs_alloc::units::parse_size(m).map_err(|e| usage(anyhow!("--max-cache: {e}")))?;
    }
    if let Some(j) = &a.restore {
        return journal::restore(a, j, info.as_ref());
    }
    if a.full {
        return full::run(a, &opts, info.as_ref());
    }
    let journal_path = a.keep_data.then(|| {
        a.journal
            .clone()
            .unwrap_or_else(|| mkfs_alloc_capacity::default_journal_path(path))
    });
    if let Some(j) = &journal_path {
        journal::refuse_unsafe("--journal", j, path)?;
        journal::refuse_existing(j, path)?;
    }
    if let Some(info) = &info {
        ask(info, a, journal_path.as_deref())?;
    }
    say_holds(a, info.as_ref());
    let mut opened = open(path, info.is_some())?;
    let report = match &journal_path {
        None => run_probe(&mut opened, &opts, None, a.quiet || a.json)
            .map_err(|e| probe_failed(e, path))?,
        Some(j) => journal::probe_keeping(&mut opened, &opts, a, j, identity(path, info.as_ref()))?,
    };
    drop(opened);
    print::report(a, &report);
    Ok(())
}
