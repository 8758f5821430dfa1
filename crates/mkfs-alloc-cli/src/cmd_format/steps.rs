//! The steps around the format of one opened target, the same for the
//! single run and for every target of a batch: the capacity probe first
//! (`--probe`), `--size` on a device, the discard, `--full`'s zeroing, and
//! the kernel's re-read of a new partition table.

use crate::target::Target;
use crate::Failure;
use anyhow::Context;
use mkfs_alloc::blockio::{BlockIo, IoError};
use mkfs_alloc::wipe_backup_gpt_beyond;
use mkfs_alloc_device::Device;
use std::path::Path;

/// What the capacity probe found of a target.
pub(super) enum Probed {
    /// Enough real capacity for the planned size: the summary line.
    Holds(String),
    /// A fake with less real capacity than the planned size: the summary
    /// line and its real bytes.
    Fake(String, u64),
}

/// `--probe`: the capacity probe of `target` (which it opens itself,
/// exclusively), before the format.
pub(super) fn probe(target: &Target, quiet: bool) -> Result<Probed, Failure> {
    let r = crate::cmd_probe::probe_target(target.path(), quiet)?;
    let line = crate::cmd_probe::summary_line(&r);
    Ok(
        if r.verdict.is_fake() && target.size_bytes() > r.real_bytes {
            Probed::Fake(line, r.real_bytes)
        } else {
            Probed::Holds(line)
        },
    )
}

/// The discard before writing, unless `--no-discard`: asked for with
/// `--discard`, else done where the device says it can; its note, `None`
/// when not tried.
pub(super) fn discard(d: &mut Device, size: u64, asked: bool, refused: bool) -> Option<String> {
    if refused || !(asked || d.info().discard_granularity > 0) {
        return None;
    }
    let whole = size >= d.info().size_bytes;
    Some(discard_note(d.discard(0, size), whole, size))
}

/// `--full`: zeroes the whole target; the note.
pub(super) fn zero(
    dev: &mut dyn BlockIo,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<String, IoError> {
    mkfs_alloc::blockio::zero_all(dev, progress)?;
    Ok("full format: zeroed the whole medium".to_string())
}

/// The kernel asked to re-read the device's new partition table; the note.
pub(super) fn reread(d: &mut Device) -> String {
    match d.reread_partitions() {
        Ok(()) => "the kernel re-read the partition table".to_string(),
        Err(e) => format!(
            "the kernel could not re-read the partition table ({}); replug the device or run partprobe",
            e.source
        ),
    }
}

/// `--size` on a device: only its first `size` bytes are touched, except
/// for an old backup GPT header at its end, zeroed first (it would let
/// partitioning tools restore the old table over the new volume; see
/// [`wipe_backup_gpt_beyond`] for why this is safe on a counterfeit stick).
pub(super) fn limit_device(
    d: &mut Device,
    size: u64,
    path: &Path,
    notes: &mut Vec<String>,
    wrote: &mut bool,
) -> Result<(), Failure> {
    if size >= d.info().size_bytes {
        return Ok(());
    }
    let zeroed = wipe_backup_gpt_beyond(&mut mkfs_alloc::blockio::WriteWatch::new(d, wrote), size)
        .with_context(|| format!("zeroing the old backup GPT of {}", path.display()))
        .map_err(Failure::Io)?;
    for offset in zeroed {
        notes.push(format!(
            "zeroed the old backup GPT header at byte {offset}, beyond --size (partitioning tools would offer to restore the old table from it)"
        ));
    }
    d.limit(size)
        .with_context(|| format!("limiting {}", path.display()))
        .map_err(Failure::Io)
}

/// The note on a discard's outcome.
fn discard_note(r: Result<bool, IoError>, whole: bool, size: u64) -> String {
    match r {
        Ok(true) if whole => "discarded (TRIM) the whole device before writing".to_string(),
        Ok(true) => format!(
            "discarded (TRIM) the first {} of the device (--size) before writing",
            mkfs_alloc::layout::units::format_size(size)
        ),
        Ok(false) => "the device does not support discard; not discarded".to_string(),
        Err(e) => format!("discard failed, continuing without it: {e}: {}", e.source),
    }
}
