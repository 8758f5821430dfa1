//! Planning the run's medium, once: the options from the arguments and the
//! target, `--size auto`'s search, the tree or `--data` choosing the
//! cluster size, and the `--align` diagnosis.

use super::*;
use mkfs_alloc::{AlignBlame, CountedError};

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
    let o = MediumOptions::new()
        .format(cli.format_options()?)
        .table(cli.table_choice())
        .sector_size(block)
        .map_err(|e| format_failure(e, None))?;
    let slack = cli.slack.unwrap_or(crate::args::DEFAULT_SLACK);
    with_counts(
        cli,
        &o,
        |o| o.size_for(data, block, slack).map(Some),
        |_, e| format_failure(e, None),
    )
}

/// `run` on `opts` with `--root-entries` and `--fats`
/// ([`MediumOptions::plan_counted`]). `fail` reports `run`'s error, given
/// the options `run` had, or `None` when a count was refused (then planning
/// again with other options fails too).
pub(super) fn with_counts<T>(
    cli: &FormatArgs,
    opts: &MediumOptions,
    run: impl Fn(&MediumOptions) -> Result<T, mkfs_alloc::FormatError>,
    fail: impl Fn(Option<&MediumOptions>, mkfs_alloc::FormatError) -> Failure,
) -> Result<T, Failure> {
    let counts = mkfs_alloc::Counts {
        root_entries: cli.root_entries,
        fats: cli.fats,
    };
    opts.plan_counted(counts, run).map_err(|e| match e {
        CountedError::Planned(e, o) => fail(Some(&o), e),
        CountedError::Before(e) => fail(None, e),
        CountedError::Count(e) => format_failure(e, None),
    })
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
    let format = cli.format_options()?;
    check_sd_target(&format, target)?;
    let opts = target
        .overrides(cli.sector_size)
        .applied(
            MediumOptions::new()
                .format(format)
                .table(cli.table_choice()),
        )
        .map_err(|e| format_failure(e, None))?;
    plan_options(cli, &opts, target.size_bytes(), target.block_size(), tree)
}

/// `--layout sd` needs a whole card.
pub(super) fn check_sd_target(
    format: &mkfs_alloc::layout::FormatOptions,
    target: &Target,
) -> Result<(), Failure> {
    if let Some(d) = target
        .device()
        .filter(|d| format.is_sd() && !d.is_whole_disk)
    {
        return Err(usage(anyhow!(
            "--layout sd lays out a whole card (an MBR and its partition); {} is a partition: give the whole device",
            d.path.display()
        )));
    }
    Ok(())
}

/// Plans `opts` on a medium of `size` bytes in `block`-byte blocks, then
/// lets the tree or the files of `--data` (scanned after the plan, which
/// they cannot change but by the cluster size) choose the cluster size.
pub(super) fn plan_options(
    cli: &FormatArgs,
    opts: &MediumOptions,
    size: u64,
    block: u32,
    tree: Option<&mkfs_alloc_advise::ScanResult>,
) -> Result<Planned, Failure> {
    let plan = with_counts(
        cli,
        opts,
        |o| o.plan(size, block),
        |o, e| blame_align(cli, o, size, block, e),
    )?;
    let unchosen = |plan| Planned {
        plan,
        notes: Vec::new(),
    };
    if let Some(data) = tree.filter(|_| cli.cluster.eq_ignore_ascii_case("auto")) {
        // A tree that cannot choose leaves the options' own choice.
        return match plan.recommend_cluster(data) {
            Some(Ok(r)) => chosen(plan, r, "--rootdir"),
            _ => Ok(unchosen(plan)),
        };
    }
    if cli.data.is_empty() {
        return Ok(unchosen(plan));
    }
    let data = data::scan(&cli.data)?;
    let r = match plan.recommend_cluster(&data) {
        Some(r) => r.map_err(|e| {
            usage(crate::hints::advise_error(e).context("choosing a cluster size for --data"))
        })?,
        None => return Ok(unchosen(plan)),
    };
    if !cli.quiet && !cli.json {
        data::show(&data);
    }
    chosen(plan, r, "--data")
}

/// `plan` with the cluster size `flag`'s files chose, and why.
fn chosen(
    plan: MediumPlan,
    r: mkfs_alloc::populate::Recommendation,
    flag: &str,
) -> Result<Planned, Failure> {
    let plan = plan
        .with_data_cluster(r.cluster_size)
        .map_err(|e| format_failure(e, None))?;
    Ok(Planned {
        plan,
        notes: vec![format!("{flag}: {}", r.reason)],
    })
}

/// A plan error that only `--align` causes says so (`opts`: the options
/// planned, `None` when a count was refused, which no other alignment
/// mends).
fn blame_align(
    cli: &FormatArgs,
    opts: Option<&MediumOptions>,
    size: u64,
    block: u32,
    e: mkfs_alloc::FormatError,
) -> Failure {
    let Some(align) = &cli.align else {
        return format_failure(e, None);
    };
    let context = match AlignBlame::of(&e, opts, size, block) {
        AlignBlame::Invalid => format!("--align {align}"),
        AlignBlame::TooLittleRoom => format!(
            "--align {align} leaves too little room on this volume (it pads the FAT and the data region to {align} boundaries); \
             use a smaller --align, or none (default 1 MiB, less on small volumes)"
        ),
        AlignBlame::No => return format_failure(e, None),
    };
    usage(crate::hints::format_error(e).context(context))
}

/// `--copy`: the tree's file data into `image` through its copier; with
/// `reflink`, whether every file can be cloned, before anything is written.
pub(super) fn copy_into(
    plan: &mut mkfs_alloc::batch::TargetContent<'_>,
    image: &mkfs_alloc::blockio::ImageFile,
    mode: mkfs_alloc::blockio::CopyMode,
) -> Result<(), crate::Failure> {
    plan.copy_into(image, mode)
        .map_err(|e| crate::cmd_format::format_failure(e, Some("--copy".into())))?;
    if mode == mkfs_alloc::blockio::CopyMode::Reflink {
        plan.check_clones().map_err(|e| {
            crate::usage(anyhow::anyhow!(
                "--copy reflink: {e}; nothing was written (--copy auto copies where it cannot clone)"
            ))
        })?;
    }
    Ok(())
}
