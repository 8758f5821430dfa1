//! `mkfs-alloc convert --fs exfat [--cluster SIZE|auto] TARGET`: a FAT32
//! volume that holds data becomes exFAT in place, every file kept (the
//! engine is `mkfs_alloc::recluster::convert`); with `--cluster`, the
//! exFAT volume is then re-clustered in the same job (`convert_with`).
//! Planned read-only first (the re-cluster on the converted volume as an
//! overlay of the conversion's writes); every refusal of either part comes
//! before the first write (exit 2, the target unchanged); mounted or busy
//! targets are refused by the format path's own checks.

use crate::cmd_recluster::{plan_json_of, print_job, refusal, target_block_size};
use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::convert::{self, Conversion, ConvertJob, NewCluster};
use mkfs_alloc::recluster::Step;
use mkfs_alloc::units::{format_size, parse_size};
use mkfs_alloc_inspect::ReadOnlyFile;
use std::path::PathBuf;
use std::time::Instant;

const EXAMPLES: &str = "\
Examples:
  What the conversion would do, writing nothing:
    mkfs-alloc convert --fs exfat --dry-run stick.img
    mkfs-alloc convert --fs exfat --yes /dev/sdb1
  To exFAT at 32 KiB clusters in the same run (the conversion, then the
  re-cluster of the exFAT volume; both plans printed):
    mkfs-alloc convert --fs exfat --cluster 32K --dry-run stick.img

No file data moves: the cluster size and the data's place stay; the exFAT
FAT goes where FAT32's second FAT is, the bitmap, up-case table and the
rewritten directories into free space. With --cluster the exFAT volume is
then re-clustered as `mkfs-alloc recluster` does. Interrupted anywhere, the
same command finishes both.";

/// Options of `mkfs-alloc convert`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct ConvertArgs {
    /// The file system to convert to: `exfat` (from FAT32), or `fat32`
    /// (from exFAT: checked and planned; the write is not supported yet).
    #[arg(long, value_name = "FS")]
    pub fs: String,
    /// The new cluster size (e.g. 32K), or `auto` (the size the advice
    /// recommends for the files): the exFAT volume is re-clustered to it in
    /// the same run. Without it the cluster size is kept.
    #[arg(long, value_name = "SIZE|auto")]
    pub cluster: Option<String>,
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
    if args.fs.eq_ignore_ascii_case("fat32") {
        return crate::cmd_convert_fat32::run(args);
    }
    if !args.fs.eq_ignore_ascii_case("exfat") {
        return Err(usage(anyhow!(
            "--fs {}: exfat (from FAT32) or fat32 (from exFAT)",
            args.fs
        )));
    }
    let ask = match args.cluster.as_deref() {
        None => NewCluster::Keep,
        Some(a) if a.eq_ignore_ascii_case("auto") => NewCluster::Auto,
        Some(s) => NewCluster::Size(parse_size(s).map_err(|e| usage(anyhow!("--cluster: {e}")))?),
    };
    let path = &args.target;
    let block_size = target_block_size(path)?;
    let (job, part) = {
        let mut ro = ReadOnlyFile::open(path, block_size)
            .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
        let part = crate::partition_pick::choose(&mut ro, args.partition)?;
        (
            convert::plan_with_in(&mut ro, ask, part).map_err(refusal)?,
            part,
        )
    };
    if args.dry_run {
        let target = Target::inspect(path, None, None, true)?;
        print_plan(args, &job, target.would_refuse());
        return Ok(());
    }
    let target = Target::inspect(path, None, None, false)?;
    if job.is_done() {
        if !args.quiet && !args.json {
            eprintln!(
                "mkfs-alloc: {} is exFAT{} already; nothing to do",
                path.display(),
                job.cluster
                    .map_or(String::new(), |c| format!(" at {}", format_size(c)))
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
    // Planned again on the opened target; `auto`'s choice is kept.
    let again = job.cluster.map_or(ask, NewCluster::Size);
    let job = convert::plan_with_in(opened.io(), again, part).map_err(refusal)?;
    convert::run_with(opened.io(), &job).map_err(|e| {
        Failure::Io(anyhow!(
            "{e}; the volume is intact (FAT32 or exFAT): run the same command again to finish"
        ))
    })?;
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        crate::report::print_done(job_json(&job, None), secs);
    } else if !args.quiet {
        eprintln!(
            "mkfs-alloc: {}: now exFAT{} ({secs:.2} s)",
            path.display(),
            job.cluster
                .map_or(String::new(), |c| format!(" at {}", format_size(c)))
        );
    }
    Ok(())
}

/// The whole job as JSON: the conversion's keys, and the re-cluster's plan
/// (the `recluster --json` object) under `recluster`.
fn job_json(job: &ConvertJob, would_refuse: Option<&str>) -> serde_json::Value {
    let mut v = plan_json(&job.conversion, would_refuse);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "recluster".into(),
            job.recluster.as_ref().map_or(serde_json::Value::Null, |r| {
                plan_json_of(r, job.auto.as_ref())
            }),
        );
        o.insert("new_cluster_size".into(), job.cluster.into());
        o.insert("job_bytes_written".into(), job.bytes_written().into());
    }
    v
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

/// The plans on stdout, as text (the re-cluster's as `recluster` prints
/// it) or JSON.
fn print_plan(args: &ConvertArgs, job: &ConvertJob, would_refuse: Option<&str>) {
    if args.json {
        outln!("{:#}", job_json(job, would_refuse));
        return;
    }
    if args.quiet {
        return;
    }
    let Some(r) = &job.recluster else {
        print_conversion(args, &job.conversion, would_refuse);
        return;
    };
    if job.conversion.step == Step::Nothing {
        outln!(
            "mkfs-alloc: {}: exFAT already (no conversion); the re-cluster:",
            args.target.display()
        );
    } else {
        print_conversion(args, &job.conversion, None);
        outln!("  then, on the exFAT volume it makes:");
    }
    print_job(&args.target, r, job.auto.as_ref());
    if let Some(w) = would_refuse {
        outln!("  the run would be refused: {w}");
    }
}

/// The conversion's plan, as text.
fn print_conversion(args: &ConvertArgs, job: &Conversion, would_refuse: Option<&str>) {
    let Some(p) = &job.plan else {
        outln!("mkfs-alloc: {}: {}", args.target.display(), job.step);
        return;
    };
    outln!(
        "mkfs-alloc: {}: FAT32 to exFAT in place ({})",
        args.target.display(),
        job.step
    );
    outln!(
        "  clusters: {} of {} (unchanged; no file data moves)",
        p.exfat.cluster_count,
        format_size(p.exfat.cluster_size)
    );
    outln!(
        "  exFAT FAT at byte {} (FAT32's second FAT), heap at byte {}",
        p.exfat.fat_offset,
        p.exfat.heap_offset
    );
    outln!(
        "  {} directories rewritten, {} files kept, label {}, serial {:08X}",
        p.directories,
        p.files,
        p.label.as_deref().unwrap_or("(none)"),
        p.serial
    );
    outln!(
        "  writes {}; free afterwards {}",
        format_size(p.bytes_written),
        format_size(p.free_after)
    );
    if p.partition_type.is_some() {
        outln!("  MBR partition type: 07h (exFAT)");
    }
    if let Some(r) = would_refuse {
        outln!("  the run would be refused: {r}");
    }
}
