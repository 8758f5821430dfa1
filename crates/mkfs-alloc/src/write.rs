//! Writing a planned medium: probe, wipe, the file system inside the
//! partition (boot sector last), the table.

use mkfs_alloc_blockio::{BlockIo, Slice};
use mkfs_alloc_layout::{Prior, WriteReport};
use mkfs_alloc_partition::{
    probe_signatures, volume_start_wiped, wipe_for_table, write_table, Signature, TableKind,
};

use crate::{FormatError, MediumPlan};

/// What was on a target before the format: the signatures
/// [`Found::probe`] found (only it makes one, so the wipe cannot be skipped
/// by passing an empty list), with the shape of the target probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    signatures: Vec<Signature>,
    block_size: u32,
    num_blocks: u64,
}

impl Found {
    /// What is on `dev` now, the way `wipefs -n` would show it
    /// ([`probe_signatures`]); nothing on a target that reads as zero (a
    /// fresh sparse image), which is not read at all.
    ///
    /// # Errors
    ///
    /// [`FormatError::Partition`] when reading the target fails.
    pub fn probe<D: BlockIo>(dev: &mut D) -> Result<Found, FormatError> {
        let signatures = if dev.reads_as_zero() {
            Vec::new()
        } else {
            probe_signatures(dev)?
        };
        Ok(Found {
            signatures,
            block_size: dev.block_size(),
            num_blocks: dev.num_blocks(),
        })
    }

    /// The signatures, in the order `wipefs -n` would list them.
    pub fn signatures(&self) -> &[Signature] {
        &self.signatures
    }
}

/// A plan's content: the tree planned into its volume (the `populate`
/// feature); without that feature a plan has none.
#[cfg(feature = "populate")]
pub(crate) type Content = mkfs_alloc_populate::Populated;
/// A plan's content: none without the `populate` feature.
#[cfg(not(feature = "populate"))]
#[derive(Debug)]
pub(crate) enum Content {}

/// Clusters the content takes after the format's own.
pub(crate) fn content_clusters(content: Option<&Content>) -> u64 {
    #[cfg(feature = "populate")]
    return content.map_or(0, Content::new_clusters);
    #[cfg(not(feature = "populate"))]
    return content.map_or(0, |c| match *c {});
}

/// How a format runs, beyond the plan and the target: the probe made
/// already (before discarding the target, say) and a progress callback,
/// each optional ([`MediumPlan::format_with`]).
#[derive(Default)]
pub struct Writing<'a> {
    found: Option<&'a Found>,
    progress: Option<&'a mut dyn FnMut(u64, u64)>,
}

impl<'a> Writing<'a> {
    /// No probe made, no progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// The signatures the caller has already found on this target
    /// (otherwise the format probes it first).
    #[must_use]
    pub fn found(mut self, found: &'a Found) -> Self {
        self.found = Some(found);
        self
    }

    /// `progress` gets `(bytes done, bytes total)` of the file system's
    /// writes.
    #[must_use]
    pub fn progress(mut self, progress: &'a mut dyn FnMut(u64, u64)) -> Self {
        self.progress = Some(progress);
        self
    }
}

impl MediumPlan {
    /// Formats `dev`: finds what is on it ([`Found::probe`]), wipes stale
    /// signatures, writes the file system inside the partition (and the
    /// tree, if the plan holds one; boot sector last), then the partition
    /// table, and flushes.
    ///
    /// # Errors
    ///
    /// Before the first write, [`FormatError::NotPlannedTarget`] or
    /// [`FormatError::Write`] for a target other than the one planned for;
    /// after it, the I/O error that stopped the format, or a
    /// `WriteError::Content` when a source file cannot be read or changes
    /// during the copy (the volume then has no main boot sector).
    pub fn format<D: BlockIo>(&mut self, dev: &mut D) -> Result<WriteReport, FormatError> {
        self.format_with(dev, Writing::new())
    }

    /// [`MediumPlan::format`] with what [`Writing`] gives: the probe made
    /// already, progress.
    ///
    /// # Errors
    ///
    /// As [`MediumPlan::format`], and [`FormatError::NotPlannedTarget`] when
    /// the probe is of another target.
    pub fn format_with<D: BlockIo>(
        &mut self,
        dev: &mut D,
        how: Writing<'_>,
    ) -> Result<WriteReport, FormatError> {
        let probed;
        let found = match how.found {
            Some(found) => found,
            None => {
                probed = Found::probe(dev)?;
                &probed
            }
        };
        let mut quiet = |_, _| {};
        let progress = how.progress.unwrap_or(&mut quiet);
        let mut content = self.content.take();
        let result = write_plan(self, content.as_mut(), dev, found, progress);
        self.content = content;
        result
    }
}

/// Writes `plan` with `content` (the plan's own, or a batch target's part
/// of a shared tree): the one write of a planned medium.
pub(crate) fn write_plan<D: BlockIo>(
    plan: &MediumPlan,
    content: Option<&mut Content>,
    dev: &mut D,
    found: &Found,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WriteReport, FormatError> {
    write_medium(plan, dev, found, |part, prior| match content {
        #[cfg(feature = "populate")]
        Some(c) => Ok(c.write_to(part, prior, progress)?),
        #[cfg(not(feature = "populate"))]
        Some(c) => match *c {},
        None => Ok(mkfs_alloc_layout::write_volume_to(
            &plan.layout,
            part,
            prior,
            progress,
        )?),
    })
}

/// Checks the target against the plan and the probe, wipes what
/// [`wipe_for_table`] covers, lets `volume` write the file system through
/// a [`Slice`] of the partition, then writes the table and flushes.
fn write_medium<D: BlockIo>(
    plan: &MediumPlan,
    dev: &mut D,
    found: &Found,
    volume: impl FnOnce(&mut dyn BlockIo, Prior) -> Result<WriteReport, FormatError>,
) -> Result<WriteReport, FormatError> {
    // Every check again, before the first write.
    plan.check_target(dev)?;
    if (found.block_size, found.num_blocks) != (dev.block_size(), dev.num_blocks()) {
        return Err(FormatError::NotPlannedTarget {
            planned_bytes: found.num_blocks.saturating_mul(u64::from(found.block_size)),
            planned_block: found.block_size,
            bytes: dev.num_blocks().saturating_mul(u64::from(dev.block_size())),
            block: dev.block_size(),
        });
    }
    let zeroed = wipe_for_table(&plan.table, &found.signatures, dev)?;
    // Old file systems gone for good before anything new is written; a
    // target where none was found needs no flush here.
    if !found.signatures.is_empty() {
        dev.flush()?;
    }
    let bs = u64::from(dev.block_size());
    let first = plan.table.partition_start() / bs;
    let count = plan.layout.volume_bytes() / bs;
    let report = {
        let mut part = Slice::new(&mut *dev, first, count)?;
        // wipe_for_table zeroed the volume's first MiB (and says so).
        let prior =
            volume_start_wiped(&plan.table, &zeroed).map_or(Prior::NoFileSystem, Prior::Wiped);
        volume(&mut part, prior)?
    };
    if plan.table.kind() != TableKind::None {
        write_table(&plan.table, dev)?;
        dev.flush()?;
    }
    Ok(report)
}

/// Zeroes an old backup GPT header at the end of `dev` when it lies at or
/// beyond byte `window`: for a medium formatted only up to `window` (the
/// real capacity of a counterfeit stick), where the format's own wipe
/// cannot see the end and partitioning tools would offer to restore the
/// old table over the new volume. Only a genuine header is zeroed (its
/// signature, its CRC and its own LBA naming where it was read), so on a
/// stick that wraps writes beyond its capacity the write lands where the
/// header came from; call it before anything else is written. Returns the
/// byte offsets zeroed.
///
/// # Errors
///
/// [`FormatError::Partition`] if the zeroing fails (a failed read is taken
/// as nothing to wipe).
pub fn wipe_backup_gpt_beyond<D: BlockIo>(
    dev: &mut D,
    window: u64,
) -> Result<Vec<u64>, FormatError> {
    Ok(mkfs_alloc_partition::wipe_backup_gpt_beyond(dev, window)?)
}
