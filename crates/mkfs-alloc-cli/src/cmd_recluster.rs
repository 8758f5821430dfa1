//! `mkfs-alloc recluster --cluster SIZE|auto TARGET`: change the cluster
//! size of an exFAT or FAT volume that holds data, in place (the engine
//! is `mkfs_alloc::recluster`; `auto` is `plan_auto`, the advice for the
//! files on the volume). Planned read-only first; every refusal comes
//! before the first write (exit 2, the target unchanged); mounted or busy
//! targets are refused by the format path's own target checks.

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::blockio::{BlockIo, Slice};
use mkfs_alloc::recluster::{self, AutoChoice, Coarse, Job, Plan, ReclusterError, Step};
use mkfs_alloc::units::{format_signed_size, format_size, parse_size};
use mkfs_alloc_inspect::ReadOnlyFile;
use std::path::PathBuf;
use std::time::Instant;

const EXAMPLES: &str = "\
Examples:
  What going to 4 KiB clusters would do, writing nothing:
    mkfs-alloc recluster --cluster 4K --dry-run stick.img
  The size `advise` recommends for the files on the volume, and why:
    mkfs-alloc recluster --cluster auto --dry-run /dev/sdb1
    mkfs-alloc recluster --cluster auto --yes /dev/sdb1

auto takes the advice's exFAT recommendation for the files on the volume
(`mkfs-alloc advise --fs exfat` for the same files); the volume's size now
is nothing to do; a refusal names the size and the reason.
Clusters marked bad are carried over (still bad at the new size).";

/// Options of `mkfs-alloc recluster`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct ReclusterArgs {
    /// The new cluster size (e.g. 4K), or `auto`: the size the advice
    /// recommends for the files on the volume. Smaller (a size that divides
    /// the current one): file data does not move. Larger (a multiple):
    /// files in order in whole new clusters keep their place, the others
    /// are copied into free space first.
    #[arg(long, value_name = "SIZE|auto")]
    pub cluster: String,
    /// Print the plan (new geometry, what moves, bytes read and written,
    /// space gained) and write nothing.
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
    /// one FAT/exFAT partition of an MBR or GPT).
    pub target: PathBuf,
}

/// Runs `recluster`.
pub fn run(args: &ReclusterArgs) -> Result<(), Failure> {
    let auto = args.cluster.eq_ignore_ascii_case("auto");
    let asked = if auto {
        None
    } else {
        Some(parse_size(&args.cluster).map_err(|e| usage(anyhow!("--cluster: {e}")))?)
    };
    let path = &args.target;
    if args.dry_run {
        let block_size = target_block_size(path)?;
        // Planned through a read-only handle: nothing can be written.
        let mut ro = ReadOnlyFile::open(path, block_size)
            .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
        let part = chosen(&mut ro, args.partition)?;
        let (job, choice) = plan_on(&mut ro, asked, part)?;
        // The bytes of each flush-separated stage, for a machine reader: the
        // job run on an overlay of the read-only handle (a job planned on a
        // partition's slice, or one it cannot simulate, has no such key).
        let stages = if args.json && part.is_none() {
            recluster::flush_stages(&mut ro, &job).ok().flatten()
        } else {
            None
        };
        // The checks the real run makes (mounted, in use, locked), collected.
        let target = Target::inspect(path, None, None, true)?;
        let shown = Shown {
            job: &job,
            choice: choice.as_ref(),
            stages,
        };
        print_plan(args, &shown, target.would_refuse());
        return Ok(());
    }
    // A run is planned once, on the opened and locked target (the plan
    // only reads): the medium cannot change between the plan and the run.
    // Its block size is the target's own: no inspection for it first.
    crate::cmd_info::check_file_or_device(path)?;
    let target = Target::inspect(path, None, None, false)?;
    let mut opened = target.open_with(false)?;
    let part = chosen(opened.io(), args.partition)?;
    let (job, choice) = plan_on(opened.io(), asked, part)?;
    let cluster = choice.as_ref().map_or(asked.unwrap_or(0), |c| c.cluster);
    let shown = Shown {
        job: &job,
        choice: choice.as_ref(),
        stages: None,
    };
    if job.step == Step::Nothing {
        if !args.quiet && !args.json {
            eprintln!(
                "mkfs-alloc: {} already has {} clusters{}; nothing to do",
                path.display(),
                format_size(cluster),
                choice.as_ref().map_or(String::new(), |c| format!(
                    ", the size auto chose ({})",
                    c.reason
                ))
            );
        }
        if args.json {
            print_plan(args, &shown, None);
        }
        return Ok(());
    }
    if !args.quiet && !args.json {
        print_plan(args, &shown, None);
    }
    crate::confirm::ask_in_place(
        args.yes,
        &format!("re-cluster {} in place", path.display()),
        path,
    )?;
    let started = Instant::now();
    let bar = crate::report::Progress::new(!args.quiet && !args.json, "re-cluster");
    let mut progress = |d, t| bar.update(d, t);
    let done = match part {
        Some((first, count)) => Slice::new(opened.io(), first, count)
            .map_err(recluster::ReclusterError::Io)
            .and_then(|mut s| recluster::run_with_progress(&mut s, &job, &mut progress)),
        None => recluster::run_with_progress(opened.io(), &job, &mut progress),
    };
    bar.finish();
    done.map_err(|e| {
        Failure::Io(anyhow!(
            "{e}; the volume is intact (the old or the new one): run the same command again to finish"
        ))
    })?;
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        let shown = Shown {
            job: &job,
            choice: choice.as_ref(),
            stages: None,
        };
        crate::report::print_done(plan_json(&shown, None), secs);
    } else if !args.quiet {
        eprintln!(
            "mkfs-alloc: {}: now {} clusters ({:.2} s)",
            path.display(),
            format_size(cluster),
            secs
        );
    }
    Ok(())
}

/// The blocks of the partition `--partition` names when the medium holds
/// several FAT/exFAT volumes (`None`: the job runs on the whole medium,
/// whose one volume it finds).
fn chosen(dev: &mut dyn BlockIo, asked: Option<u32>) -> Result<Option<(u64, u64)>, Failure> {
    match crate::partition_pick::choose(dev, asked)? {
        Some(n) if asked.is_some() => crate::partition_pick::blocks_of(dev, n).map(Some),
        _ => Ok(None),
    }
}

/// The job for `asked` (`None`: `auto`) on `dev` (on its blocks `part`
/// alone, when given), and what auto chose.
fn plan_on(
    dev: &mut dyn BlockIo,
    asked: Option<u64>,
    part: Option<(u64, u64)>,
) -> Result<(Job, Option<AutoChoice>), Failure> {
    if let Some((first, count)) = part {
        let mut s = Slice::new(dev, first, count).map_err(|e| Failure::Io(anyhow!(e)))?;
        return plan_on(&mut s, asked, None);
    }
    match asked {
        Some(c) => Ok((recluster::plan(dev, c).map_err(refusal)?, None)),
        None => {
            let (choice, job) = recluster::plan_auto(dev).map_err(refusal)?;
            Ok((job, Some(choice)))
        }
    }
}

/// A refusal or a read error before any write: exit 2.
pub(crate) fn refusal(e: ReclusterError) -> Failure {
    match e {
        ReclusterError::Io(e) => Failure::Io(anyhow!(e)),
        other => usage(anyhow!(other)),
    }
}

/// The logical block size of `path`, an image file (512) or a block
/// device; anything else is a usage error.
pub(crate) fn target_block_size(path: &std::path::Path) -> Result<u32, Failure> {
    crate::cmd_info::check_file_or_device(path)?;
    Ok(mkfs_alloc_device::read_block_size(path))
}

/// The re-cluster's plan of `job` on `target` as `recluster --dry-run`
/// prints it (text, or JSON for [`plan_json_of`]): what `convert
/// --cluster` shows of its second part.
pub(crate) fn print_job(target: &std::path::Path, job: &Job, choice: Option<&AutoChoice>) {
    let args = ReclusterArgs {
        cluster: String::new(),
        dry_run: true,
        yes: false,
        json: false,
        quiet: false,
        partition: None,
        target: target.to_path_buf(),
    };
    print_plan(
        &args,
        &Shown {
            job,
            choice,
            stages: None,
        },
        None,
    );
}

/// The re-cluster's plan of `job` as JSON (the `recluster --json` object).
pub(crate) fn plan_json_of(job: &Job, choice: Option<&AutoChoice>) -> serde_json::Value {
    plan_json(
        &Shown {
            job,
            choice,
            stages: None,
        },
        None,
    )
}

/// What the plan's print shows: the job, and what `auto` chose.
struct Shown<'a> {
    job: &'a Job,
    choice: Option<&'a AutoChoice>,
    /// A dry run's [`recluster::flush_stages`].
    stages: Option<Vec<u64>>,
}

fn print_plan(args: &ReclusterArgs, shown: &Shown<'_>, would_refuse: Option<&str>) {
    if args.json {
        outln!("{:#}", plan_json(shown, would_refuse));
        return;
    }
    if args.quiet {
        return;
    }
    let job = shown.job;
    if let Some(c) = shown.choice {
        outln!(
            "{}: auto chose {} (now {}): {}",
            args.target.display(),
            format_size(c.cluster),
            format_size(c.current),
            c.reason
        );
    }
    let Some(p) = &job.plan else {
        outln!("{}: {}", args.target.display(), job.step);
        return;
    };
    print_text(args, job, p);
    if let Some(r) = would_refuse {
        outln!("the real run would refuse: {r}");
    }
}

fn print_text(args: &ReclusterArgs, job: &Job, p: &Plan) {
    if let Some(c) = &p.coarse {
        print_larger(args, job, p, c);
        return;
    }
    let sz = format_size;
    let kind = p.fat.as_ref().map_or("exFAT", |f| f.kind.display_name());
    outln!(
        "{}: re-cluster {kind} ({})",
        args.target.display(),
        job.step
    );
    outln!(
        "  cluster size   {} -> {} ({} new clusters per old one)",
        sz(p.old.cluster_size),
        sz(p.new.cluster_size),
        p.ratio
    );
    print_counts_and_fat(p);
    match &p.evacuate {
        _ if p.fat.is_some() => print_fat(p),
        None if p.new.heap_offset == p.old.heap_offset => outln!(
            "  cluster heap   at byte {} (kept: no file data moves)",
            p.new.heap_offset
        ),
        None => outln!(
            "  cluster heap   at byte {} -> {} (its first {} free)",
            p.old.heap_offset,
            p.new.heap_offset,
            crate::cmd_info::plural(
                (p.new.heap_offset - p.old.heap_offset) / p.old.cluster_size,
                "old cluster is",
                "old clusters are"
            )
        ),
        Some(e) => {
            outln!(
                "  cluster heap   at byte {} -> {}: the new FAT covers its first {}",
                p.old.heap_offset,
                p.new.heap_offset,
                crate::cmd_info::plural(u64::from(e.clusters), "old cluster", "old clusters")
            );
            outln!(
                "  evacuation     first, at {}: {} of them in use, {} clusters of data copied ({}), reads {}, writes {}",
                sz(p.old.cluster_size),
                e.in_use,
                e.moved,
                sz(e.moved * p.old.cluster_size),
                sz(e.bytes_read),
                sz(e.bytes_written)
            );
        }
    }
    print_bitmap_and_dirs(p, p.evacuate.is_some());
    outln!("  clusters moved {}", p.clusters_moved);
    if !p.bad_clusters.is_empty() {
        let n = p.bad_clusters.len() as u64;
        outln!(
            "  bad clusters   {} -> {}, still marked bad (no copy goes there)",
            n,
            n * u64::from(p.ratio)
        );
    }
    outln!(
        "  files          {} ({}), taking {} -> {}",
        p.files,
        sz(p.file_bytes),
        sz(p.files_allocated.0),
        sz(p.files_allocated.1)
    );
    print_totals(p);
}

/// A FAT volume's reserved sectors and data region.
fn print_fat(p: &Plan) {
    let Some(f) = &p.fat else {
        return;
    };
    outln!(
        "  reserved       {} -> {} sectors: they cover the old FATs and the data region's first {} ({} in use, {} of file data copied out)",
        f.reserved.0,
        f.reserved.1,
        crate::cmd_info::plural(f.covered, "old cluster", "old clusters"),
        f.in_use,
        crate::cmd_info::plural(p.clusters_moved - f.evacuated, "cluster", "clusters")
    );
    if f.evacuated > 0 {
        outln!(
            "  evacuation     first, at {}: the {} in use where the new FATs go moved to free space in the old volume",
            format_size(p.old.cluster_size),
            crate::cmd_info::plural(f.evacuated, "old cluster", "old clusters")
        );
    }
    outln!(
        "  data region    at byte {} -> {} (the {} FATs end there)",
        p.old.heap_offset,
        p.new.heap_offset,
        f.fat_count
    );
}

/// The plan's JSON ([`recluster::report::JobReport`]; keys sorted, as every
/// `--json` object of the CLI).
fn plan_json(shown: &Shown<'_>, would_refuse: Option<&str>) -> serde_json::Value {
    let report = recluster::report::JobReport::new(shown.job, shown.choice, would_refuse)
        .with_flush_stages(shown.stages.clone());
    serde_json::to_value(report).unwrap_or_default()
}

/// The plan's free space, I/O and time estimate, as text.
fn print_totals(p: &Plan) {
    let sz = format_size;
    outln!(
        "  free           {} -> {} (gained {})",
        sz(p.free_before),
        sz(p.free_after),
        format_signed_size(p.space_gained())
    );
    outln!(
        "  I/O            reads {}, writes {}",
        sz(p.bytes_read),
        sz(p.bytes_written)
    );
    outln!(
        "  time           about {:.1} s on a stick that reads 20 MB/s and writes 5 MB/s",
        p.estimate_stick_seconds()
    );
}

/// The plan's cluster counts and FATs, as text.
fn print_counts_and_fat(p: &Plan) {
    let sz = format_size;
    outln!(
        "  clusters       {} -> {}",
        p.old.cluster_count,
        p.new.cluster_count
    );
    outln!(
        "  FAT            at byte {} ({}) -> at byte {} ({}); the old FAT's {} become unused",
        p.old.fat_offset,
        sz(p.old.fat_bytes),
        p.new.fat_offset,
        sz(p.new.fat_bytes),
        sz(p.gap.1)
    );
}

/// The new bitmap (exFAT) and the directories copied (`twice`: once at
/// each cluster size, for an evacuation), as text.
fn print_bitmap_and_dirs(p: &Plan, twice: bool) {
    if p.fat.is_none() {
        outln!(
            "  bitmap         new, {} at cluster {}",
            format_size(p.bitmap.1),
            p.bitmap.0
        );
    }
    if twice {
        outln!(
            "  directories    {} copied twice (once at each cluster size)",
            p.dirs.len()
        );
    } else {
        let root = match p.new.root_cluster {
            0 => "the root region into the new one".to_string(),
            n => format!("the root now at cluster {n}"),
        };
        outln!("  directories    {} copied ({root})", p.dirs.len());
    }
}

/// The plan of a larger cluster size, as text.
fn print_larger(args: &ReclusterArgs, job: &Job, p: &Plan, c: &Coarse) {
    let sz = format_size;
    let kind = p.fat.as_ref().map_or("exFAT", |f| f.kind.display_name());
    outln!(
        "{}: re-cluster {kind} ({})",
        args.target.display(),
        job.step
    );
    outln!(
        "  cluster size   {} -> {} ({} old clusters per new one)",
        sz(p.old.cluster_size),
        sz(p.new.cluster_size),
        c.group
    );
    print_counts_and_fat(p);
    let aligned = if c.heap_aligned {
        "aligned to"
    } else {
        "not aligned to"
    };
    let moved = p.new.heap_offset != p.old.heap_offset;
    if let Some(f) = p.fat.as_ref().filter(|_| moved) {
        // FAT12/16: the data region starts whole new clusters later.
        outln!(
            "  data region    at byte {} -> {} ({} the new cluster size)",
            p.old.heap_offset,
            p.new.heap_offset,
            aligned
        );
        outln!(
            "  reserved       {} -> {} sectors: they cover the old FATs, the old root region and the data region's first {} ({} in use, copied out)",
            f.reserved.0,
            f.reserved.1,
            crate::cmd_info::plural(f.covered, "old cluster", "old clusters"),
            f.in_use
        );
    } else {
        outln!(
            "  cluster heap   at byte {} (kept; {aligned} the new cluster size)",
            p.new.heap_offset
        );
    }
    if let Some(f) = p.fat.as_ref().filter(|_| !moved) {
        outln!(
            "  reserved       {} -> {} sectors: the {} new FATs take the old FATs' end",
            f.reserved.0,
            f.reserved.1,
            f.fat_count
        );
        if c.shortened > 0 {
            outln!(
                "  volume         ends {} earlier (the new FATs, in the old ones' room, index no more clusters)",
                sz(c.shortened)
            );
        }
    }
    print_bitmap_and_dirs(p, false);
    outln!(
        "  data           {}, {} copied first: {} ({}{})",
        crate::cmd_info::plural(
            c.files_kept,
            "file keeps its place",
            "files keep their place"
        ),
        c.files_moved,
        sz(c.bytes_moved),
        crate::cmd_info::plural(p.clusters_moved, "old cluster", "old clusters"),
        if p.fat.is_some() {
            ""
        } else {
            ", the up-case table's included"
        }
    );
    outln!(
        "  files          {} ({}), taking {} -> {} (slack {} -> {})",
        p.files,
        sz(p.file_bytes),
        sz(p.files_allocated.0),
        sz(p.files_allocated.1),
        sz(c.slack.0),
        sz(c.slack.1)
    );
    print_totals(p);
}
