//! `mkfs-alloc convert --fs exfat [--cluster SIZE|auto] TARGET`: a FAT32
//! volume that holds data becomes exFAT in place, every file kept (the
//! engine is `mkfs_alloc::recluster::convert`); with `--cluster`, the
//! exFAT volume is then re-clustered in the same job (`convert_with`).
//! Planned read-only first (the re-cluster on the converted volume as an
//! overlay of the conversion's writes); every refusal of either part comes
//! before the first write (exit 2, the target unchanged); mounted or busy
//! targets are refused by the format path's own checks.

use crate::cmd_recluster::print_job;
use crate::in_place::{self, InPlaceArgs, Words};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::convert::{Conversion, ConvertJob, NewCluster};
use mkfs_alloc::recluster::{Planned, Request, Step};
use mkfs_alloc::units::{format_size, parse_size};
use std::path::Path;

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
    /// The flags of every in-place command.
    #[command(flatten)]
    pub common: InPlaceArgs,
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
    in_place::run(Request::ConvertToExfat(ask), &args.common, args)
}

/// The cluster size the job goes to, as words after `exFAT`.
fn at_cluster(planned: &Planned) -> String {
    match planned {
        Planned::Convert(job) => job
            .cluster
            .map_or(String::new(), |c| format!(" at {}", format_size(c))),
        _ => String::new(),
    }
}

impl Words for ConvertArgs {
    fn question(&self, path: &Path) -> String {
        format!("convert {} to exFAT in place", path.display())
    }

    fn nothing(&self, path: &Path, planned: &Planned) -> String {
        format!(
            "{} is exFAT{} already; nothing to do",
            path.display(),
            at_cluster(planned)
        )
    }

    fn now(&self, planned: &Planned) -> String {
        format!("exFAT{}", at_cluster(planned))
    }

    fn intact(&self) -> &'static str {
        "FAT32 or exFAT"
    }

    fn bar(&self) -> &'static str {
        "convert"
    }

    fn print_plan(&self, path: &Path, planned: &Planned, would_refuse: Option<&str>) {
        if let Planned::Convert(job) = planned {
            print_plan(path, job, would_refuse);
        }
    }
}

/// The plans on stdout, as text (the re-cluster's as `recluster` prints
/// it).
fn print_plan(path: &Path, job: &ConvertJob, would_refuse: Option<&str>) {
    let Some(r) = &job.recluster else {
        print_conversion(path, &job.conversion, would_refuse);
        return;
    };
    if job.conversion.step == Step::Nothing {
        outln!(
            "mkfs-alloc: {}: exFAT already (no conversion); the re-cluster:",
            path.display()
        );
    } else {
        print_conversion(path, &job.conversion, None);
        outln!("  then, on the exFAT volume it makes:");
    }
    print_job(path, r, job.auto.as_ref(), None);
    if let Some(w) = would_refuse {
        outln!("  the run would be refused: {w}");
    }
}

/// The conversion's plan, as text.
fn print_conversion(path: &Path, job: &Conversion, would_refuse: Option<&str>) {
    out!("{}", job.plan_text(&path.display().to_string()));
    if let Some(r) = would_refuse.filter(|_| job.plan.is_some()) {
        outln!("  the run would be refused: {r}");
    }
}
