//! `mkfs-alloc advise`: which cluster size for this volume, and for this data?
//!
//! Prints, per file system, every valid cluster size with its cluster count,
//! metadata overhead and (given PATHs) the data's footprint and waste, a bar
//! per size, a histogram of the file sizes, and a recommendation with its
//! reason. `--json` prints the same as one JSON document (field names are
//! those of `mkfs_alloc_advise::Advice`: add fields, never rename them).

use crate::{usage, Failure};
use anyhow::anyhow;
use clap::ValueEnum;
use mkfs_alloc::layout::WASTE_DEFINITION;
use mkfs_alloc::units::plural;
use mkfs_alloc::units::{format_count, format_size, parse_size};
use mkfs_alloc_advise::{
    advise_with, scan, Advice, FsAdvice, FsNote, FsSelection, Policy, ScanError, ScanOptions,
    ScanProgress, ScanResult, DEFAULT_MAX_WASTE_PERCENT,
};
use mkfs_alloc_device::SizeError;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

mod render;
mod volume;
pub use render::render;

const EXAMPLES: &str = "\
Examples:
  Which cluster size for a 128 GiB stick, and for these photos?
    mkfs-alloc advise --size 128G ~/Pictures
  Only exFAT, allowing 2% waste, as JSON:
    mkfs-alloc advise --size 64G --fs exfat --max-waste 2 --json ~/Music
  A stick that holds files: the advice for them, and the re-cluster to run:
    mkfs-alloc advise --target /dev/sdb1
  The size of an image or device, for these photos:
    mkfs-alloc advise --target /dev/sdb ~/Photos

Waste = the clusters the files and directories take (not the root
directory's first cluster, which the format allocates) minus the files'
sizes, in % of the files' sizes; `info --files` counts it the same way.
The recommendation is the largest cluster size whose waste stays within
--max-waste and that every common system handles (FAT32 up to 32 KiB,
exFAT up to 1 MiB; beyond only with --allow-large-clusters), never below
4 KiB unless the volume requires it; none when the data fits at no such
size. Without PATHs, the --cluster auto rule; with --target, the files
on its FAT/exFAT volume if it holds any (the size recluster --cluster
auto takes). Each hard link counts as a file (a copy onto FAT or exFAT
stores it so) unless --hard-links-once.";

/// File systems to advise on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdviseFs {
    /// exFAT only.
    Exfat,
    /// FAT32 only.
    Fat32,
    /// FAT16 only.
    Fat16,
    /// FAT12 only.
    Fat12,
    /// exFAT and FAT32, and FAT16/FAT12 where they fit.
    Both,
}

/// Options of `mkfs-alloc advise`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct AdviseArgs {
    /// Size of the volume, e.g. 32G, 128G, 1T (or --target).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// An image file or block device whose size (and, for a device, sector
    /// size) is the volume's. Without PATHs, a FAT/exFAT volume on it that
    /// holds files is advised from its files (its file system, size and
    /// sector size; `--fs` another file system).
    #[arg(long, value_name = "IMAGE|DEVICE", conflicts_with = "size")]
    pub target: Option<PathBuf>,
    /// Also recommend cluster sizes beyond the compatibility limit (FAT32
    /// above 32 KiB, exFAT above 1 MiB).
    #[arg(long)]
    pub allow_large_clusters: bool,
    /// Count a file with several hard links once (for a copy that keeps
    /// hard links; FAT and exFAT cannot, so by default each link counts).
    #[arg(long)]
    pub hard_links_once: bool,
    /// File systems to compare.
    #[arg(long, value_enum, default_value_t = AdviseFs::Both)]
    pub fs: AdviseFs,
    /// Largest acceptable waste, in percent of the data's size.
    #[arg(
        long,
        value_name = "PERCENT",
        default_value_t = DEFAULT_MAX_WASTE_PERCENT,
        allow_negative_numbers = true
    )]
    pub max_waste: f64,
    /// Logical sector size of the file system: 512, 1024, 2048 or 4096
    /// (default: the device's logical sector size with --target DEVICE, else 512).
    #[arg(long, value_name = "N")]
    pub sector_size: Option<u32>,
    /// Print the advice as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Follow symbolic links inside PATHs (the PATHs themselves are always followed).
    #[arg(long)]
    pub follow_symlinks: bool,
    /// Files and directories you mean to store (each one as an entry of the root directory).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs `advise`.
pub fn run(args: &AdviseArgs) -> Result<(), Failure> {
    let volume = volume_bytes(args)?;
    if !args.max_waste.is_finite() || args.max_waste < 0.0 {
        return Err(usage(anyhow!(
            "--max-waste {}: expected a percentage of 0 or more, e.g. 1 or 2.5",
            args.max_waste
        )));
    }
    let selection = match args.fs {
        AdviseFs::Exfat => FsSelection::Exfat,
        AdviseFs::Fat32 => FsSelection::Fat32,
        AdviseFs::Fat16 => FsSelection::Fat16,
        AdviseFs::Fat12 => FsSelection::Fat12,
        AdviseFs::Both => FsSelection::Both,
    };
    let policy = Policy {
        max_waste_percent: args.max_waste,
        beyond_compat: args.allow_large_clusters,
    };
    // A target holding a volume with files, and no PATHs: the files on it.
    if let (Some(t), true) = (&args.target, args.paths.is_empty()) {
        let fs = (args.fs != AdviseFs::Both).then_some(selection);
        if let Some(v) = volume::read(t, fs, args.sector_size, &policy) {
            if args.json {
                outln!("{}", volume::json(&v, t)?);
            } else {
                let unicode = std::io::stdout().is_terminal();
                print!(
                    "{}",
                    render(&v.advice, Some(&v.data), std::slice::from_ref(t), unicode)
                );
                print!("{}", volume::text(&v.on_volume, t));
            }
            return Ok(());
        }
    }
    let data = if args.paths.is_empty() {
        None
    } else {
        Some(scan_paths(args)?)
    };
    let sector_size = match (args.sector_size, &args.target) {
        (Some(s), _) => s,
        (None, Some(t)) => mkfs_alloc_device::read_block_size(t),
        (None, None) => 512,
    };
    let advice = advise_with(volume, sector_size, selection, data.as_ref(), &policy)
        .map_err(|e| usage(crate::hints::advise_error(e)))?;
    if args.json {
        let text = serde_json::to_string_pretty(&advice)
            .map_err(|e| Failure::Io(anyhow!(e).context("writing JSON")))?;
        outln!("{text}");
    } else {
        let unicode = std::io::stdout().is_terminal();
        print!("{}", render(&advice, data.as_ref(), &args.paths, unicode));
    }
    Ok(())
}

fn volume_bytes(args: &AdviseArgs) -> Result<u64, Failure> {
    let v = match (&args.size, &args.target) {
        (Some(s), _) => parse_size(s).map_err(|e| usage(anyhow!("--size: {e}")))?,
        (None, Some(t)) => mkfs_alloc_device::size_of(t).map_err(|e| match e {
            SizeError::Kind => usage(anyhow!(
                "{} is neither an image file nor a block device; give --size instead",
                t.display()
            )),
            e => usage(anyhow!(e).context(format!("cannot inspect {}", t.display()))),
        })?,
        (None, None) => {
            return Err(usage(anyhow!(
                "no volume size: give --size SIZE, or --target IMAGE|DEVICE to take its size"
            )))
        }
    };
    if v == 0 {
        return Err(usage(anyhow!("the volume size must be greater than zero")));
    }
    Ok(v)
}

/// Scans the PATHs, with a spinner on stderr when it is a terminal and the
/// scan takes more than a moment.
fn scan_paths(args: &AdviseArgs) -> Result<ScanResult, Failure> {
    let show = !args.json && std::io::stderr().is_terminal();
    let bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
    let report = |p: &ScanProgress| {
        if p.elapsed < Duration::from_millis(300) {
            return;
        }
        let b = bar.get_or_init(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        b.set_message(format!(
            "scanning: {} files, {} directories, {}",
            format_count(p.files),
            format_count(p.directories),
            format_size(p.bytes)
        ));
    };
    let opts = ScanOptions {
        follow_symlinks: args.follow_symlinks,
        hard_links_once: args.hard_links_once,
        progress: if show { Some(&report) } else { None },
        ..ScanOptions::default()
    };
    let result = scan(&args.paths, &opts);
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    result.map_err(|e| match e {
        ScanError::Threads(_) => Failure::Io(anyhow!(e)),
        other => usage(other),
    })
}
