//! The job's writes by flush: [`flush_stages`] runs a [`Job`] against an
//! in-memory overlay of the medium (reads see the medium under what the
//! job wrote; nothing reaches the medium) and counts the bytes written
//! between one flush and the next. A dry run reports them, so that a
//! measurement of the floor can write the same bytes in the same number of
//! flush-separated stages.

use mkfs_alloc_blockio::BlockIo;

use super::convert::{self, ConvertJob};
use super::overlay::Overlay;
use super::{run, Job, ReclusterError};

/// The most bytes the overlay holds: a job that writes more (a larger
/// cluster size or a shrink moves file data) is not simulated.
pub const MAX_SIMULATED_BYTES: u64 = 64 << 20;

/// The bytes `job` writes before each of its flushes, in order (the last
/// entry, if not zero, was written after the last flush: a job writes
/// nothing there), from running it on an overlay of `dev` that the job's
/// writes never pass. `None` when the plan writes more than
/// [`MAX_SIMULATED_BYTES`].
///
/// # Errors
///
/// What [`run`] on the overlay returns: a read error of `dev`, or a
/// refusal of the evacuation's second phase.
pub fn flush_stages<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
) -> Result<Option<Vec<u64>>, ReclusterError> {
    let planned = job.plan.as_ref().map_or(0, |p| p.bytes_written)
        + job.grow.as_ref().map_or(0, |g| g.bytes_written);
    stages_of(dev, planned, |o| run(o, job))
}

/// [`flush_stages`] of a conversion (and the re-cluster after it).
///
/// # Errors
///
/// As [`flush_stages`].
pub fn convert_flush_stages<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &ConvertJob,
) -> Result<Option<Vec<u64>>, ReclusterError> {
    stages_of(dev, job.bytes_written(), |o| convert::run_with(o, job))
}

/// The stages of what `job` writes when run on an overlay of `dev`;
/// `None` when its `planned` bytes exceed [`MAX_SIMULATED_BYTES`].
fn stages_of<D: BlockIo + ?Sized>(
    dev: &mut D,
    planned: u64,
    job: impl FnOnce(&mut Overlay<'_, D>) -> Result<(), ReclusterError>,
) -> Result<Option<Vec<u64>>, ReclusterError> {
    if planned > MAX_SIMULATED_BYTES {
        return Ok(None);
    }
    let mut overlay = Overlay::new(dev);
    job(&mut overlay)?;
    Ok(Some(overlay.into_stages()))
}
