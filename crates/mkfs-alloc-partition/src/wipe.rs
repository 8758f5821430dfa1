//! [`wipe_for_table`]: zero what could make tools see an old table or file
//! system next to the new one.

use mkfs_alloc_blockio::BlockIo;

use crate::write::check_plan;
use crate::{PartitionError, Signature, TablePlan};

/// Bytes zeroed at the end of the medium and at the start of the volume.
pub const WIPE_VOLUME_START: u64 = 1 << 20;
const WIPE: u64 = WIPE_VOLUME_START;

/// Bytes zeroed at each old signature found: an old boot sector and, within
/// them, its backups (FAT32 at sector 6, exFAT's backup region at sector 12,
/// even with 4096-byte sectors).
pub const SIGNATURE_WIPE: u64 = 128 << 10;

/// Zeroes, with [`BlockIo::write_zeroes`] (and does not flush: the caller
/// flushes before writing anything that depends on it — the file-system
/// writer's first flush does):
///
/// - everything before the partition start (old MBR, primary GPT, boot code,
///   any old volume that started there);
/// - the last 1 MiB of the medium (old backup GPT headers and entries, for
///   any sector size);
/// - the first 1 MiB of the new volume, or all of it if smaller (old file
///   system superblocks, up to btrfs at 64 KiB);
/// - [`SIGNATURE_WIPE`] bytes at every signature in `found` (what
///   [`probe_signatures`](crate::probe_signatures) reported: old boot sectors
///   wherever the old tables pointed).
///
/// The ranges are merged first, so no block is zeroed twice.
///
/// Call it before [`write_table`](crate::write_table) and before formatting:
/// the last MiB may lie inside the new volume.
///
/// # Errors
///
/// [`PartitionError::DeviceMismatch`] if `dev` is not the medium of the plan;
/// [`PartitionError::Io`] on I/O failure.
pub fn wipe_for_table<D: BlockIo>(
    plan: &TablePlan,
    found: &[Signature],
    dev: &mut D,
) -> Result<(), PartitionError> {
    check_plan(plan, dev)?;
    let bs = u64::from(plan.block_size());
    let blocks = plan.num_blocks();
    let start = plan.partition_start_lba();
    let wipe_blocks = WIPE.div_ceil(bs);
    let mut ranges = vec![
        (0, start),
        (blocks.saturating_sub(wipe_blocks), blocks),
        (
            start,
            start.saturating_add(wipe_blocks.min(plan.partition_blocks())),
        ),
    ];
    ranges.extend(found.iter().map(|s| {
        let first = s.offset / bs;
        (first, first.saturating_add(SIGNATURE_WIPE.div_ceil(bs)))
    }));
    ranges.sort_unstable();
    // Merge overlapping or touching ranges, then zero each once.
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        let to = to.min(blocks);
        if from >= to {
            continue;
        }
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    for (from, to) in merged {
        dev.write_zeroes(from, to - from)?;
    }
    Ok(())
}
