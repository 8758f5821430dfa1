//! `mkfs-alloc resize --size SIZE|max TARGET`: grow an exFAT or FAT32
//! volume that holds data into the space after it, or shrink one (its
//! data past the new end moved below it), in place (the
//! engine is `mkfs_alloc::recluster`, the re-cluster's). Planned
//! read-only first; every refusal comes before the first write (exit 2,
//! the target unchanged); an image file shorter than SIZE is extended only
//! after that, and one a shrink leaves longer than its volume is cut to
//! it.

use crate::in_place::{self, InPlaceArgs, Words};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::{NewSize, Planned, Request};
use mkfs_alloc::units::{format_size, parse_size};
use std::path::Path;

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
  An exFAT or FAT32 image shrunk to 4 GiB (the file is cut to it afterwards):
    mkfs-alloc resize --size 4G --dry-run stick.img
    mkfs-alloc resize --size 4G --yes stick.img

Grows exFAT and FAT32 volumes that fill the medium, or one MBR/GPT
partition of a disk: the partition grows first, into the free space after
it (up to the next partition or the disk's end; a GPT's backup moves to
the disk's new end); the data stays where it is. FAT32 grows within its FATs' slack (the
refusal names the largest size). exFAT and FAT32 shrink: the clusters in
use past the new end are copied below it first (a size below what the data
needs, or one that leaves FAT32 fewer than 65,525 clusters, is refused,
naming the smallest size; SIZE is rounded down to whole sectors). A
partition shrinks with its volume, after it: its entry ends at the 1 MiB
boundary after the volume's new end (a GPT's backup stays at the disk's
end; an image file holding a table keeps its length). If the power goes,
the same command finishes the job.";

/// Options of `mkfs-alloc resize`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = EXAMPLES,
    mut_args(in_place::help_of(
        "Print the plan (new geometry, bytes read and written, time) and write nothing",
        "The image file or block device holding the volume (whole medium, or a disk whose MBR/GPT partition holding it grows or shrinks with it)",
    )),
)]
pub struct ResizeArgs {
    /// The new size of the volume (e.g. 16G), or `max`: to the end of the
    /// medium. An image file shorter than SIZE is extended to it.
    #[arg(long, value_name = "SIZE|max")]
    pub size: String,
    /// The flags of every in-place command.
    #[command(flatten)]
    pub common: InPlaceArgs,
}

/// Runs `resize`.
pub fn run(args: &ResizeArgs) -> Result<(), Failure> {
    let size = if args.size.eq_ignore_ascii_case("max") {
        NewSize::Max
    } else {
        NewSize::Bytes(parse_size(&args.size).map_err(|e| usage(anyhow!("--size: {e}")))?)
    };
    in_place::run(Request::Resize(size), &args.common, args)
}

impl Words for ResizeArgs {
    fn question(&self, path: &Path) -> String {
        format!("resize the volume on {} in place", path.display())
    }

    fn nothing(&self, path: &Path, _: &Planned) -> String {
        format!("{} already has that size; nothing to do", path.display())
    }

    fn now(&self, planned: &Planned) -> String {
        match planned {
            Planned::Resize(job) => match (&job.grow, &job.table_after) {
                (Some(g), _) => format_size(g.new_bytes),
                (None, Some(t)) => format!("in a partition of {}", format_size(t.new_bytes())),
                (None, None) => String::new(),
            },
            _ => String::new(),
        }
    }

    fn intact(&self) -> &'static str {
        "the old or the new one"
    }

    fn bar(&self) -> &'static str {
        "resize"
    }

    fn print_plan(&self, path: &Path, planned: &Planned, would_refuse: Option<&str>) {
        let Planned::Resize(job) = planned else {
            return;
        };
        out!("{}", job.resize_plan_text(&path.display().to_string()));
        if let Some(r) = would_refuse.filter(|_| job.grow.is_some()) {
            outln!("the real run would refuse: {r}");
        }
    }
}
