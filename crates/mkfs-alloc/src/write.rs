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

impl MediumPlan {
    /// Formats `dev`: finds what is on it ([`Found::probe`]), wipes stale
    /// signatures, writes the file system inside the partition (boot sector
    /// last), then the partition table, and flushes. `progress` gets
    /// `(bytes done, bytes total)` of the file system's writes.
    ///
    /// # Errors
    ///
    /// Before the first write, [`FormatError::NotPlannedTarget`] or
    /// [`FormatError::Write`] for a target other than the one planned for;
    /// after it, the I/O error that stopped the format.
    pub fn format<D: BlockIo>(
        &self,
        dev: &mut D,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<WriteReport, FormatError> {
        let found = Found::probe(dev)?;
        self.write(dev, &found, progress)
    }

    /// [`MediumPlan::format`] with the signatures the caller has already
    /// found on this target (before discarding it, say).
    ///
    /// # Errors
    ///
    /// As [`MediumPlan::format`], and [`FormatError::NotPlannedTarget`] when
    /// `found` is of another target.
    pub fn write<D: BlockIo>(
        &self,
        dev: &mut D,
        found: &Found,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<WriteReport, FormatError> {
        write_medium(self, dev, found, |part, prior| {
            Ok(mkfs_alloc_layout::write_volume_to(
                &self.layout,
                part,
                prior,
                progress,
            )?)
        })
    }
}

/// Checks the target against the plan and the probe, wipes what
/// [`wipe_for_table`] covers, lets `volume` write the file system through
/// a [`Slice`] of the partition, then writes the table and flushes.
pub(crate) fn write_medium<D: BlockIo>(
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
