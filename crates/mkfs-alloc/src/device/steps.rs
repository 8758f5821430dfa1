//! The steps one at a time: the default capacity probe, the opening,
//! `limit`, `discard`, `zero` and `reread` of an opened target.

use std::fmt;
use std::path::Path;

use mkfs_alloc_blockio::{BlockIo, IoError, WriteWatch};
use mkfs_alloc_capacity::{target::Opened as ProbeOpened, ProbeOptions, ProbeReport};
use mkfs_alloc_device::target::{Opened, Target, TargetError as OpenError};
use mkfs_alloc_device::Device;

use super::{Discard, StepError, StepNote};
use crate::batch::{TargetError, Verdict};

/// A probe's outcome in one line: `genuine: 64 GiB announced, all of it
/// real`, or `<verdict>: 64 GiB announced, 8 GiB real (<bytes> bytes)`.
#[derive(Debug, Clone, Copy)]
pub struct ProbeSummary<'a>(pub &'a ProbeReport);

impl fmt::Display for ProbeSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use mkfs_alloc_layout::units::format_size;
        let r = self.0;
        if r.verdict.is_fake() {
            write!(
                f,
                "{}: {} announced, {} real ({} bytes)",
                r.verdict,
                format_size(r.announced_bytes),
                format_size(r.real_bytes),
                r.real_bytes
            )
        } else {
            write!(
                f,
                "genuine: {} announced, all of it real",
                format_size(r.announced_bytes)
            )
        }
    }
}

/// The capacity probe of the file or device at `path` with the default
/// options and no progress (it opens the target itself).
pub(super) fn probe(path: &Path) -> Result<ProbeReport, TargetError> {
    let info =
        ProbeOpened::check(path).map_err(|e| TargetError::new(Verdict::Refused, false, e))?;
    let mut opened = ProbeOpened::open(path, info.is_some())
        .map_err(|e| TargetError::new(Verdict::Refused, false, e))?;
    mkfs_alloc_capacity::probe(opened.target(), &ProbeOptions::default(), None, &mut |_| {})
        .map_err(|e| TargetError::new(Verdict::Failed, true, e))
}

/// Opens (and locks) `target` for writing and checks that it took its
/// size; nothing is written, and a refused target is left as it was (an
/// image this opening created is removed again).
///
/// # Errors
///
/// The device crate's refusal.
pub fn open_checked(target: &Target, uncached: bool) -> Result<Opened, OpenError> {
    let opened = target.open_with(uncached)?;
    if let Err(e) = target.check_opened(&opened) {
        target.undo_open(opened);
        return Err(e);
    }
    Ok(opened)
}

/// A device larger than `size`: the old backup GPT header beyond `size`
/// zeroed first (each offset zeroed a note), then the device limited to
/// `size`. `wrote` says whether anything was written.
pub(super) fn limit(
    d: &mut Device,
    size: u64,
    notes: &mut Vec<StepNote>,
    wrote: &mut bool,
) -> Result<(), StepError> {
    if size >= d.info().size_bytes {
        return Ok(());
    }
    let zeroed = crate::wipe_backup_gpt_beyond(&mut WriteWatch::new(d, wrote), size)
        .map_err(StepError::BackupGpt)?;
    notes.extend(
        zeroed
            .into_iter()
            .map(|offset| StepNote::BackupGptZeroed { offset }),
    );
    d.limit(size).map_err(StepError::Limit)
}

/// The discard of the first `size` bytes before writing, as `how` asks;
/// its note, `None` when not tried.
pub(super) fn discard(d: &mut Device, size: u64, how: Discard) -> Option<StepNote> {
    let tried = match how {
        Discard::Never => false,
        Discard::Always => true,
        Discard::Auto => d.info().discard_granularity > 0,
    };
    if !tried {
        return None;
    }
    let whole = size >= d.info().size_bytes;
    Some(match d.discard(0, size) {
        Ok(true) => StepNote::Discarded { whole, size },
        Ok(false) => StepNote::DiscardUnsupported,
        Err(e) => StepNote::DiscardFailed(e),
    })
}

/// Zeroes the whole target.
pub(super) fn zero(
    dev: &mut dyn BlockIo,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<StepNote, IoError> {
    mkfs_alloc_blockio::zero_all(dev, progress)?;
    Ok(StepNote::Zeroed)
}

/// Asks the kernel to re-read the device's new partition table.
pub(super) fn reread(d: &mut Device) -> StepNote {
    match d.reread_partitions() {
        Ok(()) => StepNote::Reread,
        Err(e) => StepNote::RereadFailed(e),
    }
}

/// Makes reads of the opened target come from the medium.
pub(super) fn forget_cached(io: &mut Opened) -> Result<(), TargetError> {
    let r = match io {
        Opened::Device(d) => d.forget_cached().map_err(|e| chain(&e)),
        Opened::Image(i, _) => i.forget_cached().map_err(|e| chain(&e)),
    };
    r.map_err(|text| {
        TargetError::new(
            Verdict::Failed,
            true,
            format!("dropping the cached blocks before reading back: {text}"),
        )
    })
}

/// An error and its causes, each after `: `.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Where a format target lies inside the tree the format copies (the copy
/// would read the volume while writing it).
#[cfg(feature = "populate")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsideTree {
    /// `None`: the target itself (an existing image, a hard link of a tree
    /// file, or one to be created in a directory of the tree); else the
    /// loop device's backing file.
    pub backing: Option<std::path::PathBuf>,
    /// Where the tree holds it: the host path it was read at.
    pub at: std::path::PathBuf,
}

/// Whether `target` lies inside `tree` ([`InsideTree`]), found by device and
/// inode, not by name. A device node is never read by the copy (the walk
/// skips devices): only a loop device's backing file can be in the tree.
#[cfg(feature = "populate")]
pub fn target_inside(tree: &crate::populate::Tree, target: &Path) -> Option<InsideTree> {
    if !mkfs_alloc_device::is_block_device(target) {
        if let Some(at) = tree.find_path(target) {
            return Some(InsideTree { backing: None, at });
        }
    }
    let backing = mkfs_alloc_device::loop_backing_file(target)?;
    let at = tree.find_path(&backing)?;
    Some(InsideTree {
        backing: Some(backing),
        at,
    })
}
