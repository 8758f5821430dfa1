//! Planning the run's medium, once: the options from the arguments and the
//! target, `--size auto`'s search, the tree or `--data` choosing the
//! cluster size, and the `--align` diagnosis.

use super::*;

/// `--size`, or with `--size auto` the smallest image that holds the tree.
pub(super) fn image_size(
    cli: &FormatArgs,
    path: &Path,
    tree: Option<&mkfs_alloc_advise::ScanResult>,
) -> Result<Option<u64>, Failure> {
    let size = cli.size_bytes()?;
    let (true, Some(data)) = (cli.size_auto(), tree) else {
        return Ok(size);
    };
    if mkfs_alloc_device::is_block_device(path) {
        return Err(usage(anyhow!(
            "--size auto is for image files; a device keeps its size"
        )));
    }
    let block = cli.sector_size.unwrap_or(512);
    let mut o = MediumOptions::new()
        .format(cli.format_options()?)
        .table(cli.table_choice());
    o.sector_size = block;
    let tree_cluster = cli.cluster.eq_ignore_ascii_case("auto");
    let slack = cli.slack.unwrap_or(crate::args::DEFAULT_SLACK);
    rootdir::auto_size(data, &o, block, slack, tree_cluster).map(Some)
}

/// The plan, and the notes on how its cluster size was chosen.
pub(super) struct Planned {
    pub(super) plan: MediumPlan,
    pub(super) notes: Vec<String>,
}

/// Plans the medium, once: `--rootdir` and `--data` may choose the cluster
/// size for the volume the table leaves (the table is not planned again).
pub(super) fn plan(
    cli: &FormatArgs,
    target: &Target,
    tree: Option<&mkfs_alloc_advise::ScanResult>,
) -> Result<Planned, Failure> {
    let mut format = cli.format_options()?;
    check_sd_target(&format, target)?;
    if format.align.is_none() && !format.sd {
        format.align = target.preferred_align();
    }
    let mut opts = MediumOptions::new()
        .format(format)
        .table(cli.table_choice())
        .whole_disk(target.device().is_some_and(|d| d.is_whole_disk));
    opts.sector_size = cli.sector_size.unwrap_or(target.block_size());
    plan_options(cli, &opts, target.size_bytes(), target.block_size(), tree)
}

/// `--layout sd` needs a whole card.
pub(super) fn check_sd_target(
    format: &mkfs_alloc_layout::FormatOptions,
    target: &Target,
) -> Result<(), Failure> {
    if let Some(d) = target.device().filter(|d| format.sd && !d.is_whole_disk) {
        return Err(usage(anyhow!(
            "--layout sd lays out a whole card (an MBR and its partition); {} is a partition: give the whole device",
            d.path.display()
        )));
    }
    Ok(())
}

/// Plans `opts` on a medium of `size` bytes in `block`-byte blocks, the
/// tree or `--data` choosing the cluster size.
pub(super) fn plan_options(
    cli: &FormatArgs,
    opts: &MediumOptions,
    size: u64,
    block: u32,
    tree: Option<&mkfs_alloc_advise::ScanResult>,
) -> Result<Planned, Failure> {
    let mut notes = Vec::new();
    // The tree chooses the cluster size, unless the SD layout does (the
    // planner then does not ask); so do the files of --data.
    let tree = tree.filter(|_| cli.cluster.eq_ignore_ascii_case("auto"));
    let plan = opts.plan_choosing(size, block, |auto| -> Result<Option<u64>, Chosen> {
        if let Some(data) = tree {
            // A tree that cannot choose leaves the options' own choice.
            return Ok(rootdir::choose_cluster(data, &opts.format, auto).ok().map(
                |(cluster, reason)| {
                    notes.push(reason);
                    cluster
                },
            ));
        }
        if cli.data.is_empty() {
            return Ok(None);
        }
        let show = !cli.quiet && !cli.json;
        let (cluster, reason) =
            data::recommend(&cli.data, &opts.format, auto, show).map_err(Chosen::Failure)?;
        notes.push(reason);
        Ok(Some(cluster))
    });
    match plan {
        Ok(plan) => Ok(Planned { plan, notes }),
        Err(Chosen::Failure(f)) => Err(f),
        // Planning with the options' own choices failed (a chosen cluster
        // size is planned only after them): --align may be why.
        Err(Chosen::Plan(e)) if notes.is_empty() => Err(blame_align(cli, opts, size, block, e)),
        Err(Chosen::Plan(e)) => Err(format_failure(e, None)),
    }
}

/// Why planning with a chooser stopped: the plan, or the chooser itself.
enum Chosen {
    Plan(mkfs_alloc::FormatError),
    Failure(Failure),
}

impl From<mkfs_alloc::FormatError> for Chosen {
    fn from(e: mkfs_alloc::FormatError) -> Self {
        Chosen::Plan(e)
    }
}

/// A plan error that only `--align` causes says so.
fn blame_align(
    cli: &FormatArgs,
    opts: &MediumOptions,
    size: u64,
    block: u32,
    e: mkfs_alloc::FormatError,
) -> Failure {
    let (Some(align), true) = (&cli.align, e.is_invalid_input()) else {
        return format_failure(e, None);
    };
    // A value no planner accepts (not a power of two, out of range): its
    // error names the valid range; "too little room" would mislead.
    if matches!(
        e,
        mkfs_alloc::FormatError::Plan(mkfs_alloc_layout::PlanError::Align { .. })
            | mkfs_alloc::FormatError::Partition(
                mkfs_alloc_partition::PartitionError::InvalidAlignment { .. }
            )
    ) {
        return usage(crate::hints::format_error(e).context(format!("--align {align}")));
    }
    // The diagnosis plans once more, on this error path only.
    let mut without = opts.clone();
    without.format.align = None;
    if without.plan(size, block).is_ok() {
        return usage(crate::hints::format_error(e).context(format!(
            "--align {align} leaves too little room on this volume (it pads the FAT and the data region to {align} boundaries); \
             use a smaller --align, or none (default 1 MiB, less on small volumes)"
        )));
    }
    format_failure(e, None)
}

/// What a run writes: a plan, or a plan with the tree planned into it.
// One per run: the size of either variant does not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Medium {
    Plain(MediumPlan),
    Populated(PopulatedPlan),
}

impl Medium {
    pub(super) fn plan(&self) -> &MediumPlan {
        match self {
            Medium::Plain(p) => p,
            Medium::Populated(p) => p.plan(),
        }
    }

    pub(super) fn populated(&self) -> Option<&mkfs_alloc_populate::Populated> {
        match self {
            Medium::Plain(_) => None,
            Medium::Populated(p) => Some(p.content()),
        }
    }

    /// What the format writes or needs as zeros on the probed target.
    pub(super) fn extents(&self, found: &Found) -> mkfs_alloc::ExtentMap {
        match self {
            Medium::Plain(p) => p.extents(found),
            Medium::Populated(p) => p.extents(found),
        }
    }

    /// `--copy`: file data into `image` through its copier (a populated
    /// medium only); with `reflink`, whether every file can be cloned,
    /// before anything is written.
    pub(super) fn copy_into(
        &mut self,
        image: &mkfs_alloc_blockio::ImageFile,
        mode: mkfs_alloc_blockio::CopyMode,
    ) -> Result<(), crate::Failure> {
        let Medium::Populated(p) = self else {
            return Ok(());
        };
        p.copy_into(image, mode)
            .map_err(|e| crate::cmd_format::format_failure(e, Some("--copy".into())))?;
        if mode == mkfs_alloc_blockio::CopyMode::Reflink {
            p.check_clones().map_err(|e| {
                crate::usage(anyhow::anyhow!(
                    "--copy reflink: {e}; nothing was written (--copy auto copies where it cannot clone)"
                ))
            })?;
        }
        Ok(())
    }

    pub(super) fn write<D: BlockIo>(
        &mut self,
        dev: &mut D,
        found: &Found,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<mkfs_alloc_layout::WriteReport, mkfs_alloc::FormatError> {
        match self {
            Medium::Plain(p) => p.write(dev, found, progress),
            Medium::Populated(p) => p.write(dev, found, progress),
        }
    }
}
