//! The default command: format TARGET.
//!
//! ```text
//!  check the arguments ─► inspect the target (read-only) ─► plan ─┬─► --dry-run: print, write nothing
//!                                                                 └─► confirm (devices) ─► open + lock
//!                                                                     ─► probe ─► discard / --full
//!                                                                     ─► write ─► summary
//! ```
//!
//! Nothing is opened for writing before the plan is valid and confirmed; a
//! dry run opens nothing for writing at all and says what the real run
//! would refuse.

use crate::args::{CopyArg, FormatArgs, LayoutArg, TableArg, SUBCOMMANDS};
use crate::target::Target;
use crate::{data, report, rootdir, usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::blockio::CopyMode;
use mkfs_alloc::{MediumOptions, MediumPlan};
use serde_json::json;
use std::io::IsTerminal;
use std::path::Path;

mod batch;
mod export;
mod one;
mod plan;
pub(crate) mod preflight;
use export::Exports;
use plan::{image_size, plan};

/// Formats (or, with `--dry-run`, plans) the target, or several at once
/// ([`batch`]).
pub fn run(cli: FormatArgs) -> Result<(), Failure> {
    for t in &cli.targets {
        check_target_name(t)?;
        // One target of its own is told by the export options.
        if t.as_os_str() == "-" && batch::is_batch(&cli) {
            return Err(usage(anyhow!(
                "TARGET \"-\" is standard output, for the sparse image of --output-format sparse with one target; to format a file named -, write it as a path: ./-"
            )));
        }
    }
    check_args(&cli)?;
    if batch::is_batch(&cli) {
        return batch::run(cli);
    }
    let shown = cli
        .targets
        .first()
        .cloned()
        .ok_or_else(|| usage(anyhow!("missing TARGET")))?;
    // TARGET, or for a sparse image the new raw image formatted beside it.
    let (exports, path) = Exports::from_args(&cli, &shown)?;
    exports.check(&[preflight::medium_ids(&path, None)])?;
    let (tree, _) = walk_tree(&cli)?;
    let tree_data = tree.as_ref().map(mkfs_alloc::populate::scan_result);
    let size = image_size(&cli, &path, tree_data.as_ref())?;
    let target = Target::inspect(&path, size, cli.sector_size, cli.dry_run)?;
    if cli.copy == Some(CopyArg::Reflink) && target.device().is_some() {
        return Err(usage(anyhow!(
            "--copy reflink: {} is a device; only an image file can share extents with the source files (--copy auto writes them)",
            path.display()
        )));
    }
    if let (Some(t), Some(dir)) = (&tree, cli.rootdir.as_deref()) {
        rootdir::refuse_target_inside(t, dir, &path)?;
    }
    let planned = plan(&cli, &target, tree_data.as_ref())?;
    drop(tree_data); // the populate step measures the tree again, exactly
    let medium = match tree {
        Some(t) => rootdir::populate(t, planned.plan)?,
        None => planned.plan,
    };
    let run = Run {
        cli: &cli,
        path: &path,
        shown: &shown,
        target: &target,
        medium,
        exports: &exports,
    };
    if cli.dry_run {
        run.dry_run()
    } else {
        one::write(run, planned.notes)
    }
}

/// The `--rootdir` tree, walked (and measured) before anything is opened
/// for writing, and whether progress is shown on a terminal.
fn walk_tree(cli: &FormatArgs) -> Result<(Option<mkfs_alloc::populate::Tree>, bool), Failure> {
    let show = !cli.quiet && !cli.json && std::io::stderr().is_terminal();
    let tree = cli
        .rootdir
        .as_deref()
        .map(|d| rootdir::walk(d, show))
        .transpose()?;
    Ok((tree, show))
}

/// A TARGET must not be a subcommand's name unless written as a path.
fn check_target_name(path: &Path) -> Result<(), Failure> {
    if let Some(name) = path.to_str().filter(|p| SUBCOMMANDS.contains(p)) {
        return Err(usage(anyhow!(
            "{name:?} is the name of a command, not taken as a target: options of a command go after its name \
             (mkfs-alloc {name} --help); to format a file named {name:?}, write it as a path: ./{name}"
        )));
    }
    Ok(())
}

/// The first TARGET of `mkfs-alloc TARGET...` stands where a command's name
/// goes: a bare word (no path separator, no extension) that names no
/// existing file is taken for a mistyped or future command, not for a new
/// image (`mkfs-alloc recluser --cluster 4K /dev/sdb` would create
/// `recluser` and format the device). The mkfs.fat front ends do not call this: their
/// TARGET never follows a command position.
pub fn check_command_word(targets: &[std::path::PathBuf]) -> Result<(), Failure> {
    let Some(word) = targets.first().and_then(|t| t.to_str()) else {
        return Ok(());
    };
    let bare = !word.is_empty()
        && word != "-"
        && !word.contains(['/', '.', std::path::MAIN_SEPARATOR, ':'])
        && !SUBCOMMANDS.contains(&word);
    if !bare || std::fs::symlink_metadata(word).is_ok() {
        return Ok(());
    }
    Err(usage(anyhow!(
        "unknown command `{word}`; commands are: {}; formatting needs none (mkfs-alloc [OPTIONS] TARGET...); to create an image named {word}, write it as a path: ./{word}",
        SUBCOMMANDS.join(", ")
    )))
}

/// Checks of the arguments alone (no target needed).
fn check_args(cli: &FormatArgs) -> Result<(), Failure> {
    if let Some(s) = cli.sector_size {
        if mkfs_alloc::layout::check_sector_size(s).is_err() {
            return Err(usage(anyhow!(
                "--sector-size {s} is not supported; valid: 512, 1024, 2048, 4096"
            )));
        }
    }
    if !cli.data.is_empty() && !cli.cluster.eq_ignore_ascii_case("auto") {
        return Err(usage(anyhow!(
            "--data chooses the cluster size; it cannot be combined with --cluster {}",
            cli.cluster
        )));
    }
    if cli.copy.is_some() && cli.rootdir.is_none() {
        return Err(usage(anyhow!(
            "--copy says how --rootdir's file data reaches the image; give --rootdir, or leave --copy out"
        )));
    }
    if cli.rootdir.is_some() && !cli.data.is_empty() {
        return Err(usage(anyhow!(
            "--rootdir already lets the tree choose the cluster size; drop --data"
        )));
    }
    if cli.size_auto() && cli.rootdir.is_none() {
        return Err(usage(anyhow!(
            "--size auto needs --rootdir (the tree decides the size)"
        )));
    }
    check_sd_args(cli)?;
    if let Some(slack) = cli.slack {
        if !(0.0..=1000.0).contains(&slack) {
            return Err(usage(anyhow!(
                "--slack {slack}: valid: 0..1000 (percent of the tree's footprint)"
            )));
        }
        if !cli.size_auto() {
            return Err(usage(anyhow!(
                "--slack applies to --size auto only (the free space it leaves); give --size auto with --rootdir, or leave --slack out"
            )));
        }
    }
    Ok(())
}

/// `--layout sd` decides the cluster size, the alignment, the root
/// directory, the partition table and the size (the card's): the options
/// that would change them are refused by name.
fn check_sd_args(cli: &FormatArgs) -> Result<(), Failure> {
    if cli.layout != LayoutArg::Sd {
        return Ok(());
    }
    let conflict = |option, what| Err(usage(anyhow!(crate::hints::sd_conflict(option, what))));
    if !cli.cluster.eq_ignore_ascii_case("auto") {
        return conflict("--cluster", "the cluster size");
    }
    if !cli.data.is_empty() {
        return conflict("--data", "the cluster size");
    }
    if cli.align.is_some() {
        return conflict("--align", "the alignment (its boundary unit)");
    }
    if cli.root_entries.is_some() {
        return conflict("--root-entries", "the root directory (512 entries)");
    }
    if cli.esp {
        return conflict("--esp", "the partition type");
    }
    if cli.size_auto() {
        return conflict("--size auto", "the volume size (the whole card)");
    }
    match cli.table {
        TableArg::None => return conflict("--table none", "the partition table (an MBR)"),
        TableArg::Gpt => return conflict("--table gpt", "the partition table (an MBR)"),
        TableArg::Auto | TableArg::Mbr => {}
    }
    if let Some(s) = cli.sector_size.filter(|&s| s != 512) {
        let e = mkfs_alloc::layout::SdError::SectorSize(s);
        return Err(usage(anyhow!(
            crate::hints::sd_text(&e).unwrap_or_else(|| e.to_string())
        )));
    }
    Ok(())
}

/// One run on a validated target with a valid plan.
struct Run<'a> {
    cli: &'a FormatArgs,
    /// Where the medium is formatted.
    path: &'a Path,
    /// TARGET as given (for a sparse image, not `path`).
    shown: &'a Path,
    target: &'a Target,
    /// The plan, holding the tree with `--rootdir`.
    medium: MediumPlan,
    exports: &'a Exports,
}

/// `rootdir` for the JSON report, when `medium` writes a tree.
fn extras(medium: &MediumPlan) -> Vec<(&'static str, serde_json::Value)> {
    medium
        .content()
        .map(|p| ("rootdir", rootdir::json(p)))
        .into_iter()
        .collect()
}

impl Run<'_> {
    /// Prints the plan, what is on the target now and what the real run
    /// would refuse; opens nothing for writing.
    fn dry_run(&self) -> Result<(), Failure> {
        let (cli, path, target) = (self.cli, self.shown, self.target);
        // What is on the target now, the way `wipefs -n` would show it (a
        // user who may not read it learns that instead).
        let mut notes = target.notes().to_vec();
        let found = target.probe().unwrap_or_else(|e| {
            notes.push(format!(
                "could not look for old signatures: {}",
                crate::text::error_text(&e)
            ));
            Vec::new()
        });
        let contents = target.contents();
        let refusal = target.would_refuse();
        if cli.json {
            let mut extras = extras(&self.medium);
            extras.push(("would_refuse", json!(refusal)));
            extras.push(("contents", json!(contents)));
            extras.push(("notes", json!(notes)));
            report::print_json_with(
                path,
                &self.medium,
                &found,
                target.device(),
                None,
                true,
                &extras,
            );
        } else if !cli.quiet {
            report::print_plan(
                path,
                &self.medium,
                &found,
                target,
                self.medium.content().is_some(),
            );
            for c in &contents {
                outln!("  contains       {c}");
            }
            for n in &notes {
                outln!("  note           {n}");
            }
            if let Some(p) = self.medium.content() {
                for line in rootdir::summary(p) {
                    outln!("  {line}");
                }
            }
            if let Some(r) = refusal {
                outln!("  the real run would refuse: {r}");
            }
        }
        Ok(())
    }
}

/// The copy mode `--copy` asks for with `--rootdir` (`auto` unless given).
pub(super) fn copy_mode(cli: &FormatArgs) -> Option<CopyMode> {
    cli.rootdir.as_ref()?;
    Some(match cli.copy.unwrap_or(CopyArg::Auto) {
        CopyArg::Auto => CopyMode::Auto,
        CopyArg::Reflink => CopyMode::Reflink,
        CopyArg::Copy => CopyMode::Copy,
    })
}

/// Classifies a library error: invalid input exits 2 (nothing was written),
/// anything else is an I/O failure (exit 1).
pub fn format_failure(e: mkfs_alloc::FormatError, context: Option<String>) -> Failure {
    let invalid = e.is_invalid_input();
    let mut e = crate::hints::format_error(e);
    if let Some(c) = context {
        e = e.context(c);
    }
    if invalid {
        usage(e)
    } else {
        Failure::Io(e)
    }
}
