//! `mkfs-alloc recluster --cluster SIZE|auto TARGET`: change the cluster
//! size of an exFAT or FAT volume that holds data, in place (the engine
//! is `mkfs_alloc::recluster`; `auto` is `plan_auto`, the advice for the
//! files on the volume). Planned read-only first; every refusal comes
//! before the first write (exit 2, the target unchanged); mounted or busy
//! targets are refused by the format path's own target checks.

use crate::in_place::{self, InPlaceArgs, Words};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::recluster::{AutoChoice, Job, Planned, Request};
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
    out!("{}", job.plan_text(&path.display().to_string()));
    if let Some(r) = would_refuse.filter(|_| job.plan.is_some()) {
        outln!("the real run would refuse: {r}");
    }
}
