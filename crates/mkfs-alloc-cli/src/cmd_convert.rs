//! `mkfs-alloc convert --fs exfat TARGET`: a FAT32 volume that holds data
//! becomes exFAT in place, every file kept (the engine is
//! `mkfs_alloc::recluster::convert`). Planned read-only first; every
//! refusal comes before the first write (exit 2, the target unchanged);
//! mounted or busy targets are refused by the format path's own checks.

use crate::cmd_recluster::{refusal, target_block_size};
use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::convert::{self, Conversion};
use mkfs_alloc::recluster::Step;
use mkfs_alloc::units::format_size;
use mkfs_alloc_inspect::ReadOnlyFile;
use std::path::PathBuf;
use std::time::Instant;

const EXAMPLES: &str = "\
Examples:
  What the conversion would do, writing nothing:
    mkfs-alloc convert --fs exfat --dry-run stick.img
    mkfs-alloc convert --fs exfat --yes /dev/sdb1

No file data moves: the cluster size and the data's place stay; the exFAT
FAT goes where FAT32's second FAT is, the bitmap, up-case table and the
rewritten directories into free space. Interrupted, the same command
finishes it.";

/// Options of `mkfs-alloc convert`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct ConvertArgs {
    /// The file system to convert to: `exfat` (from FAT32).
    #[arg(long, value_name = "FS")]
    pub fs: String,
    /// Print the plan and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the plan and the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The partition holding the volume (1-based, as fdisk counts), when
    /// the medium has more than one FAT/exFAT partition.
    #[arg(long, value_name = "N")]
    pub partition: Option<u32>,
    /// The image file or block device holding the volume (whole medium, or
    /// one partition of an MBR or GPT).
    pub target: PathBuf,
}

/// Runs `convert`.
pub fn run(args: &ConvertArgs) -> Result<(), Failure> {
    if !args.fs.eq_ignore_ascii_case("exfat") {
        return Err(usage(anyhow!(
            "--fs {}: only exfat (from FAT32) is supported yet",
            args.fs
        )));
    }
    let path = &args.target;
    let block_size = target_block_size(path)?;
    let (job, part) = {
        let mut ro = ReadOnlyFile::open(path, block_size)
            .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
        let part = crate::partition_pick::choose(&mut ro, args.partition)?;
        (convert::plan_in(&mut ro, part).map_err(refusal)?, part)
    };
    if args.dry_run {
        let target = Target::inspect(path, None, None, true)?;
        print_plan(args, &job, target.would_refuse());
        return Ok(());
    }
    let target = Target::inspect(path, None, None, false)?;
    if job.step == Step::Nothing {
        if !args.quiet && !args.json {
            eprintln!(
                "mkfs-alloc: {} is exFAT already; nothing to do",
                path.display()
            );
        }
        if args.json {
            print_plan(args, &job, None);
        }
        return Ok(());
    }
    if !args.quiet && !args.json {
        print_plan(args, &job, None);
    }
    crate::confirm::ask_in_place(
        args.yes,
        &format!("convert {} to exFAT in place", path.display()),
        path,
    )?;
    let mut opened = target.open_with(false)?;
    let started = Instant::now();
    // Planned again on the opened target.
    let job = convert::plan_in(opened.io(), part).map_err(refusal)?;
    convert::run(opened.io(), &job).map_err(|e| {
        Failure::Io(anyhow!(
            "{e}; the volume is intact (FAT32 or exFAT): run the same command again to finish"
        ))
    })?;
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        crate::report::print_done(plan_json(&job, None), secs);
    } else if !args.quiet {
        eprintln!("mkfs-alloc: {}: now exFAT ({secs:.2} s)", path.display());
    }
    Ok(())
}

/// The plan as JSON.
fn plan_json(job: &Conversion, would_refuse: Option<&str>) -> serde_json::Value {
    let p = job.plan.as_ref();
    serde_json::json!({
        "step": job.step.to_string(),
        "would_refuse": would_refuse,
        "cluster_size": p.map(|p| p.exfat.cluster_size),
        "cluster_count": p.map(|p| p.exfat.cluster_count),
        "fat_offset": p.map(|p| p.exfat.fat_offset),
        "heap_offset": p.map(|p| p.exfat.heap_offset),
        "directories": p.map(|p| p.directories),
        "files": p.map(|p| p.files),
        "label": p.and_then(|p| p.label.clone()),
        "serial": p.map(|p| format!("{:08X}", p.serial)),
        "bytes_written": p.map(|p| p.bytes_written),
        "free_after": p.map(|p| p.free_after),
        "partition_type": p.and_then(|p| p.partition_type),
    })
}

/// The plan, as text on stderr or JSON on stdout.
fn print_plan(args: &ConvertArgs, job: &Conversion, would_refuse: Option<&str>) {
    if args.json {
        outln!("{:#}", plan_json(job, would_refuse));
        return;
    }
    if args.quiet {
        return;
    }
    let Some(p) = &job.plan else {
        eprintln!("mkfs-alloc: {}: {}", args.target.display(), job.step);
        return;
    };
    eprintln!(
        "mkfs-alloc: {}: FAT32 to exFAT in place ({})",
        args.target.display(),
        job.step
    );
    eprintln!(
        "  clusters: {} of {} (unchanged; no file data moves)",
        p.exfat.cluster_count,
        format_size(p.exfat.cluster_size)
    );
    eprintln!(
        "  exFAT FAT at byte {} (FAT32's second FAT), heap at byte {}",
        p.exfat.fat_offset, p.exfat.heap_offset
    );
    eprintln!(
        "  {} directories rewritten, {} files kept, label {}, serial {:08X}",
        p.directories,
        p.files,
        p.label.as_deref().unwrap_or("(none)"),
        p.serial
    );
    eprintln!(
        "  writes {}; free afterwards {}",
        format_size(p.bytes_written),
        format_size(p.free_after)
    );
    if p.partition_type.is_some() {
        eprintln!("  MBR partition type: 07h (exFAT)");
    }
    if let Some(r) = would_refuse {
        eprintln!("  the run would be refused: {r}");
    }
}
