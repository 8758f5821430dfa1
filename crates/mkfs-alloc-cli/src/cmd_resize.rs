//! `mkfs-alloc resize --size SIZE|max TARGET`: grow an exFAT or FAT32
//! volume that holds data into the space after it, or shrink an exFAT
//! volume (its data past the new end moved below it), in place (the
//! engine is `mkfs_alloc::recluster`, the re-cluster's). Planned
//! read-only first; every refusal comes before the first write (exit 2,
//! the target unchanged); an image file shorter than SIZE is extended only
//! after that, and one a shrink leaves longer than its volume is cut to
//! it.

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::partition::PartitionGrow;
use mkfs_alloc::recluster::{self, Extended, Grow, Job, NewSize, ReclusterError, Step};
use mkfs_alloc::units::{format_size, parse_size};
use mkfs_alloc_inspect::ReadOnlyFile;
use std::path::PathBuf;
use std::time::Instant;

const EXAMPLES: &str = "\
Examples:
  An image file extended by 1 GiB, then the volume grown to its end:
    truncate -s +1G stick.img
    mkfs-alloc resize --size max --dry-run stick.img
    mkfs-alloc resize --size max --yes stick.img
  The second partition of a disk image, grown up to the third:
    mkfs-alloc resize --size max --partition 2 --yes disk.img
  An image grown to 16 GiB (the file is extended first):
    mkfs-alloc resize --size 16G --yes stick.img
  An exFAT image shrunk to 4 GiB (the file is cut to it afterwards):
    mkfs-alloc resize --size 4G --dry-run stick.img
    mkfs-alloc resize --size 4G --yes stick.img

Grows exFAT and FAT32 volumes that fill the medium, or one MBR/GPT
partition of a disk: the partition grows first, into the free space after
it (up to the next partition or the disk's end; a GPT's backup moves to
the disk's new end); the data stays where it is. FAT32 grows within its FATs' slack (the
refusal names the largest size). exFAT shrinks: the clusters in use past
the new end are copied below it first (a size below what the data needs is
refused, naming the smallest size; SIZE is rounded down to whole sectors;
a partition keeps its size). If the power goes, the same command finishes
the job.";

/// Options of `mkfs-alloc resize`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct ResizeArgs {
    /// The new size of the volume (e.g. 16G), or `max`: to the end of the
    /// medium. An image file shorter than SIZE is extended to it.
    #[arg(long, value_name = "SIZE|max")]
    pub size: String,
    /// Print the plan (new geometry, bytes read and written, time) and
    /// write nothing.
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
    /// a disk whose MBR/GPT partition holding it grows with it).
    pub target: PathBuf,
}

/// Runs `resize`.
pub fn run(args: &ResizeArgs) -> Result<(), Failure> {
    let size = if args.size.eq_ignore_ascii_case("max") {
        NewSize::Max
    } else {
        NewSize::Bytes(parse_size(&args.size).map_err(|e| usage(anyhow!("--size: {e}")))?)
    };
    let path = &args.target;
    let block_size = crate::cmd_recluster::target_block_size(path)?;
    let is_dev = mkfs_alloc_device::is_block_device(path);
    let len = image_len(path);
    let mut ro = ReadOnlyFile::open(path, block_size)
        .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
    let part = crate::partition_pick::choose(&mut ro, args.partition)?;
    // An image shorter than SIZE (and a partition's table after it) is
    // planned as if extended (read as zeros past its end) and extended
    // only once every check has passed.
    let extend = match size {
        NewSize::Bytes(b) if !is_dev => {
            let need = part
                .and_then(|n| PartitionGrow::read(&mut ro, n).ok())
                .map_or(b, |t| t.medium_bytes_for(b));
            (need > len).then_some(need)
        }
        _ => None,
    };
    let job = {
        let blocks = extend.map_or(0, |b| b.div_ceil(u64::from(block_size)));
        recluster::plan_resize_in(&mut Extended::new(ro, blocks), size, part).map_err(refusal)?
    };
    if args.dry_run {
        let target = Target::inspect(path, extend, None, true)?;
        print_plan(args, &job, target.would_refuse());
        return Ok(());
    }
    let target = Target::inspect(path, extend, None, false)?;
    if job.step == Step::Nothing {
        if args.json {
            print_plan(args, &job, None);
        } else if !args.quiet {
            eprintln!(
                "mkfs-alloc: {} already has that size; nothing to do",
                path.display()
            );
        }
        return Ok(());
    }
    if !args.quiet && !args.json {
        print_plan(args, &job, None);
    }
    crate::confirm::ask_in_place(
        args.yes,
        &format!("resize the volume on {} in place", path.display()),
        path,
    )?;
    let mut opened = target.open_with(false)?;
    let started = Instant::now();
    // Planned again on the opened (and extended) target.
    let job = recluster::plan_resize_in(opened.io(), size, part).map_err(|e| {
        if let Some(old) = extend.map(|_| len) {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(old));
        }
        refusal(e)
    })?;
    let bar = crate::report::Progress::new(!args.quiet && !args.json, "resize");
    let done = recluster::run_with_progress(opened.io(), &job, &mut |d, t| bar.update(d, t));
    bar.finish();
    done.map_err(|e| {
        Failure::Io(anyhow!(
            "{e}; the volume is intact (the old or the new one): run the same command again to finish"
        ))
    })?;
    drop(opened);
    if shrinks(&job, extend, len) {
        cut_image(path, &job)?;
    }
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        crate::report::print_done(plan_json(&job, None), secs);
    } else if !args.quiet {
        let now = job
            .grow
            .as_ref()
            .map_or(String::new(), |g| format_size(g.new_bytes));
        eprintln!("mkfs-alloc: {}: now {now} ({secs:.2} s)", path.display());
    }
    Ok(())
}

/// Whether `job` shrank a volume that held the whole image file of `len`
/// bytes from its start (no partition table, nothing after it).
fn shrinks(job: &Job, extend: Option<u64>, len: u64) -> bool {
    job.grow.as_ref().is_some_and(|g| {
        extend.is_none() && g.volume_start == 0 && g.new_bytes < g.old_bytes && len <= g.old_bytes
    })
}

/// Cuts the image file `path` to the shrunk volume's size (the job is
/// done: nothing past it belongs to the volume any more).
fn cut_image(path: &std::path::Path, job: &Job) -> Result<(), Failure> {
    let Some(g) = &job.grow else {
        return Ok(());
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| {
            f.set_len(g.new_bytes)?;
            f.sync_all()
        })
        .map_err(|e| {
            Failure::Io(anyhow!(
                "the volume is shrunk, but cutting the image to {} bytes failed: {e}",
                g.new_bytes
            ))
        })
}

/// A refusal or a read error before any write: exit 2.
fn refusal(e: ReclusterError) -> Failure {
    match e {
        ReclusterError::Io(e) => Failure::Io(anyhow!(e)),
        other => usage(anyhow!(other)),
    }
}

fn print_plan(args: &ResizeArgs, job: &Job, would_refuse: Option<&str>) {
    if args.json {
        outln!("{:#}", plan_json(job, would_refuse));
        return;
    }
    if args.quiet {
        return;
    }
    let Some(g) = &job.grow else {
        outln!("{}: {}", args.target.display(), step_text(&job.step));
        return;
    };
    print_grow(args, job, g);
    if let Some(r) = would_refuse {
        outln!("the real run would refuse: {r}");
    }
}

/// The step in a resize's words.
fn step_text(step: &Step) -> String {
    step.to_string().replace("re-cluster", "resize")
}

fn print_grow(args: &ResizeArgs, job: &Job, g: &Grow) {
    let sz = format_size;
    let exfat = g.fs == mkfs_alloc::layout::FsKind::Exfat;
    let shrink = g.new_bytes < g.old_bytes;
    outln!(
        "{}: {} {} ({})",
        args.target.display(),
        if shrink { "shrink" } else { "grow" },
        if exfat { "exFAT" } else { "FAT32" },
        step_text(&job.step)
    );
    outln!(
        "  volume         {} -> {} ({} -> {} sectors)",
        sz(g.old_bytes),
        sz(g.new_bytes),
        g.old_bytes / u64::from(g.sector_size),
        g.new_bytes / u64::from(g.sector_size)
    );
    let moves = if shrink {
        format!(
            "{} of data past the new end copied below it",
            crate::cmd_info::plural(g.moved_clusters, "cluster", "clusters")
        )
    } else {
        "no file data moves".to_string()
    };
    outln!(
        "  clusters       {} -> {} of {} (the data region stays at byte {}; {moves})",
        g.old.cluster_count,
        g.new.cluster_count,
        sz(g.new.cluster_size),
        g.new.heap_offset
    );
    print_table(g);
    outln!(
        "  FAT            at byte {}, {} -> {}",
        g.new.fat_offset,
        sz(g.old.fat_bytes),
        sz(g.new.fat_bytes)
    );
    if !exfat {
        outln!("  switch         the boot sector (after its backup); FSInfo's hints recounted");
        print_totals(g);
        return;
    }
    outln!(
        "  bitmap         new, {} at cluster {}",
        sz(g.bitmap.1),
        g.bitmap.0
    );
    outln!(
        "  root           copied to cluster {} ({}){}",
        g.new.root_cluster,
        crate::cmd_info::plural(u64::from(g.root_clusters), "cluster", "clusters"),
        if shrink { ", and every directory" } else { "" }
    );
    print_totals(g);
}

/// The partition's entry, grown first.
fn print_table(g: &Grow) {
    let Some(t) = &g.table else {
        return;
    };
    outln!(
        "  partition      {} {} at byte {}: {} -> {} (written first){}",
        table_name(t),
        t.number(),
        t.start_bytes(),
        format_size(t.old_bytes()),
        format_size(t.new_bytes()),
        if t.moves_backup() {
            "; the backup GPT moves to the medium's end"
        } else {
            ""
        }
    );
}

fn table_name(t: &PartitionGrow) -> &'static str {
    match t.kind() {
        mkfs_alloc::partition::TableKind::Gpt => "GPT",
        _ => "MBR",
    }
}

/// The plan's free space, I/O and time estimate.
fn print_totals(g: &Grow) {
    let sz = format_size;
    let (gained, by) = if g.free_after >= g.free_before {
        ("gained", g.free_after - g.free_before)
    } else {
        ("lost", g.free_before - g.free_after)
    };
    outln!(
        "  free           {} -> {} ({gained} {})",
        sz(g.free_before),
        sz(g.free_after),
        sz(by)
    );
    outln!(
        "  I/O            reads {}, writes {}",
        sz(g.bytes_read),
        sz(g.bytes_written)
    );
    outln!(
        "  time           about {:.1} s on a stick that reads 20 MB/s and writes 5 MB/s",
        g.estimate_stick_seconds()
    );
}

/// The plan's JSON (keys sorted, as every `--json` object of the CLI).
fn plan_json(job: &Job, would_refuse: Option<&str>) -> serde_json::Value {
    let mut v = serde_json::json!({
        "command": "resize",
        "step": step_text(&job.step),
        "would_refuse": would_refuse,
    });
    if let Some(g) = &job.grow {
        v["grow"] = serde_json::json!({
            "fs": if g.fs == mkfs_alloc::layout::FsKind::Exfat { "exfat" } else { "fat32" },
            "volume_bytes": [g.old_bytes, g.new_bytes],
            "cluster_size": g.new.cluster_size,
            "cluster_count": [g.old.cluster_count, g.new.cluster_count],
            "heap_offset": g.new.heap_offset,
            "fat_offset": g.new.fat_offset,
            "fat_bytes": [g.old.fat_bytes, g.new.fat_bytes],
            "bitmap": {"cluster": g.bitmap.0, "bytes": g.bitmap.1},
            "root": {"cluster": g.new.root_cluster, "clusters": g.root_clusters},
            "free_bytes": [g.free_before, g.free_after],
            "moved_clusters": g.moved_clusters,
            "moved_bytes": g.moved_clusters * g.old.cluster_size,
            "bytes_read": g.bytes_read,
            "bytes_written": g.bytes_written,
            "estimate_stick_seconds": g.estimate_stick_seconds(),
        });
        if let Some(t) = &g.table {
            v["grow"]["partition"] = serde_json::json!({
                "table": table_name(t).to_ascii_lowercase(),
                "number": t.number(),
                "start": t.start_bytes(),
                "bytes": [t.old_bytes(), t.new_bytes()],
                "backup_moved": t.moves_backup(),
            });
        }
    }
    v
}

/// The length of the image file `path` (0 when it cannot be read: the
/// plan's read then fails with the reason).
fn image_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
