//! `mkfs-alloc recluster --cluster SIZE|auto TARGET`: change the cluster
//! size of an exFAT or FAT volume that holds data, in place (the engine
//! is `mkfs_alloc::recluster`; `auto` is `plan_auto`, the advice for the
//! files on the volume). Planned read-only first; every refusal comes
//! before the first write (exit 2, the target unchanged); mounted or busy
//! targets are refused by the format path's own target checks.

use crate::in_place::{self, InPlaceArgs, Words};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::{AutoChoice, Coarse, Job, Plan, Planned, Request};
use mkfs_alloc::units::{format_size, parse_size};
use std::path::Path;

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
#[command(
    after_help = EXAMPLES,
    mut_args(in_place::help_of(
        "Print the plan (new geometry, what moves, bytes read and written, space gained) and write nothing",
        "The image file or block device holding the volume (whole medium, or one FAT/exFAT partition of an MBR or GPT)",
    )),
)]
pub struct ReclusterArgs {
    /// The new cluster size (e.g. 4K), or `auto`: the size the advice
    /// recommends for the files on the volume. Smaller (a size that divides
    /// the current one): file data does not move. Larger (a multiple):
    /// files in order in whole new clusters keep their place, the others
    /// are copied into free space first.
    #[arg(long, value_name = "SIZE|auto")]
    pub cluster: String,
    /// The flags of every in-place command.
    #[command(flatten)]
    pub common: InPlaceArgs,
}

/// Runs `recluster`.
pub fn run(args: &ReclusterArgs) -> Result<(), Failure> {
    let request = if args.cluster.eq_ignore_ascii_case("auto") {
        Request::ReclusterAuto
    } else {
        let c = parse_size(&args.cluster).map_err(|e| usage(anyhow!("--cluster: {e}")))?;
        Request::Recluster(c)
    };
    in_place::run(request, &args.common, args)
}

impl Words for ReclusterArgs {
    fn question(&self, path: &Path) -> String {
        format!("re-cluster {} in place", path.display())
    }

    fn nothing(&self, path: &Path, planned: &Planned) -> String {
        let Planned::Recluster { auto, cluster, .. } = planned else {
            return String::new();
        };
        format!(
            "{} already has {} clusters{}; nothing to do",
            path.display(),
            format_size(*cluster),
            auto.as_ref().map_or(String::new(), |c| format!(
                ", the size auto chose ({})",
                c.reason
            ))
        )
    }

    fn now(&self, planned: &Planned) -> String {
        match planned {
            Planned::Recluster { cluster, .. } => format!("{} clusters", format_size(*cluster)),
            _ => String::new(),
        }
    }

    fn intact(&self) -> &'static str {
        "the old or the new one"
    }

    fn bar(&self) -> &'static str {
        "re-cluster"
    }

    fn print_plan(&self, path: &Path, planned: &Planned, would_refuse: Option<&str>) {
        if let Planned::Recluster { job, auto, .. } = planned {
            print_job(path, job, auto.as_ref(), would_refuse);
        }
    }
}

/// The re-cluster's plan of `job` on `path` as text, `auto` what `auto`
/// chose: also what `convert --cluster` shows of its second part.
pub(crate) fn print_job(
    path: &Path,
    job: &Job,
    auto: Option<&AutoChoice>,
    would_refuse: Option<&str>,
) {
    if let Some(c) = auto {
        outln!(
            "{}: auto chose {} (now {}): {}",
            path.display(),
            format_size(c.cluster),
            format_size(c.current),
            c.reason
        );
    }
    let Some(p) = &job.plan else {
        outln!("{}: {}", path.display(), job.step);
        return;
    };
    print_text(path, job, p);
    if let Some(r) = would_refuse {
        outln!("the real run would refuse: {r}");
    }
}

fn print_text(path: &Path, job: &Job, p: &Plan) {
    if let Some(c) = &p.coarse {
        print_larger(path, job, p, c);
        return;
    }
    let sz = format_size;
    let kind = p.fat.as_ref().map_or("exFAT", |f| f.kind.display_name());
    outln!("{}: re-cluster {kind} ({})", path.display(), job.step);
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
    in_place::print_totals(&p.totals());
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
fn print_larger(path: &Path, job: &Job, p: &Plan, c: &Coarse) {
    let sz = format_size;
    let kind = p.fat.as_ref().map_or("exFAT", |f| f.kind.display_name());
    outln!("{}: re-cluster {kind} ({})", path.display(), job.step);
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
    in_place::print_totals(&p.totals());
}
