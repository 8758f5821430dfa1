//! What a run checks before its first write to any target: every target
//! opened for writing and locked (a device exclusively), and every file the
//! run writes besides its targets (`--bmap`, a sparse image, `--log`) a
//! regular file, or a new one in a writable directory
//! (`mkfs_alloc_device::target::check_output`), that is neither a target
//! nor another output (`medium_ids`). The single run and the batch both
//! call these; the refusals name the option.

use crate::target::{Opened, Target};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc_device::target::{self, check_output};
pub(crate) use mkfs_alloc_device::target::{MediumId, OutputWrite as Write};
use std::path::Path;

/// Everything that names the medium at `path` (`target`: the inspected
/// target, when there is one): [`mkfs_alloc_device::target::medium_ids`].
pub(super) fn medium_ids(path: &Path, target: Option<&Target>) -> Vec<MediumId> {
    target::medium_ids(path, target.and_then(|t| t.device()))
}

/// A file the run writes besides its targets.
#[derive(Debug, Clone, Copy)]
pub(super) struct Output<'a> {
    /// The option that names it (`--bmap`, `--log`, `TARGET`).
    pub(super) option: &'a str,
    /// The path given.
    pub(super) path: &'a Path,
    /// How it is written.
    pub(super) write: Write,
}

/// Refuses (exit 2) an output that is not a regular file or a new file in a
/// writable directory, that is a symbolic link, or that is one of `targets`
/// (their [`medium_ids`]) or another of `outputs`. Nothing is opened.
pub(super) fn check_outputs(
    outputs: &[Output<'_>],
    targets: &[Vec<MediumId>],
) -> Result<(), Failure> {
    let mut seen: Vec<Vec<MediumId>> = Vec::new();
    for out in outputs {
        check_output(out.path, out.write)
            .map_err(|e| usage(anyhow!("{} {}: {e}", out.option, out.path.display())))?;
        let ids = medium_ids(out.path, None);
        if target::same_medium(&ids, targets).is_some() {
            return Err(usage(anyhow!(
                "{} {}: is a target of this run (or the same file under another name); give a file of its own",
                out.option,
                out.path.display()
            )));
        }
        if let Some(other) = target::same_medium(&ids, &seen).map(|i| &outputs[i]) {
            return Err(usage(anyhow!(
                "{} {}: is the same file as {} {}; give each its own file",
                out.option,
                out.path.display(),
                other.option,
                other.path.display()
            )));
        }
        seen.push(ids);
    }
    Ok(())
}

/// Opens (and locks) a target for writing and checks that it took its
/// size ([`mkfs_alloc::device::open_checked`]); nothing is written. The
/// error is the refusal's text.
pub(super) fn open_checked(target: &Target, uncached: bool) -> Result<Opened, Failure> {
    Ok(mkfs_alloc::device::open_checked(target, uncached)?)
}

/// Opens every target of `targets` (`None`: not to be written) before any
/// of them is written: the handle of each, or why it cannot be opened.
pub(super) fn open_all(
    targets: &[Option<&Target>],
    uncached: bool,
) -> Vec<Option<Result<Opened, String>>> {
    targets
        .iter()
        .map(|t| {
            t.map(|t| open_checked(t, uncached).map_err(|f| crate::text::error_text(f.error())))
        })
        .collect()
}
