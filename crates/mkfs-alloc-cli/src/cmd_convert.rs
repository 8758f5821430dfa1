//! `mkfs-alloc convert --fs exfat TARGET`: a FAT32 volume that holds data
//! becomes exFAT in place, every file kept (the engine is
//! `mkfs_alloc::recluster::convert`). Planned read-only first; every
//! refusal comes before the first write (exit 2, the target unchanged);
//! mounted or busy targets are refused by the format path's own checks.

use crate::in_place::{self, InPlaceArgs, Words};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::convert::Conversion;
use mkfs_alloc::recluster::{Planned, Request};
use mkfs_alloc::units::format_size;
use std::path::Path;

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
    /// The flags of every in-place command.
    #[command(flatten)]
    pub common: InPlaceArgs,
}

/// Runs `convert`.
pub fn run(args: &ConvertArgs) -> Result<(), Failure> {
    if !args.fs.eq_ignore_ascii_case("exfat") {
        return Err(usage(anyhow!(
            "--fs {}: only exfat (from FAT32) is supported yet",
            args.fs
        )));
    }
    in_place::run(Request::ConvertToExfat, &args.common, args)
}

impl Words for ConvertArgs {
    fn question(&self, path: &Path) -> String {
        format!("convert {} to exFAT in place", path.display())
    }

    fn nothing(&self, path: &Path, _: &Planned) -> String {
        format!("{} is exFAT already; nothing to do", path.display())
    }

    fn now(&self, _: &Planned) -> String {
        "exFAT".into()
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

/// The plan, as text on stderr.
fn print_plan(path: &Path, job: &Conversion, would_refuse: Option<&str>) {
    let Some(p) = &job.plan else {
        eprintln!("mkfs-alloc: {}: {}", path.display(), job.step);
        return;
    };
    eprintln!(
        "mkfs-alloc: {}: FAT32 to exFAT in place ({})",
        path.display(),
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
