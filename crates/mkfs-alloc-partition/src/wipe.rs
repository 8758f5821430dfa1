//! [`wipe_for_table`]: zero what could make tools see an old table or file
//! system next to the new one.

use core::ops::Range;

use mkfs_alloc_blockio::{zero_blocks, BlockIo, Zeroed};

use crate::write::check_plan;
use crate::{PartitionError, Signature, TablePlan};

/// Bytes zeroed at the end of the medium and at the start of the volume.
pub const WIPE_VOLUME_START: u64 = 1 << 20;
const WIPE: u64 = WIPE_VOLUME_START;

/// Bytes zeroed at each old signature found: an old boot sector and, within
/// them, its backups (FAT32 at sector 6, exFAT's backup region at sector 12,
/// even with 4096-byte sectors).
pub const SIGNATURE_WIPE: u64 = 128 << 10;

/// Zeroes, with [`BlockIo::write_zeroes`], first the block at each
/// signature in `found`, then flushes (so that an old structure is either
/// gone or untouched), then the ranges below (and does not flush again: the
/// caller flushes before writing anything that depends on them — the
/// file-system writer's first flush does):
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
/// The ranges are merged first, so no block is zeroed twice. Returns the
/// evidence of what was zeroed ([`Zeroed`]); [`volume_start_wiped`] picks
/// the volume's first MiB out of it for the file-system writer.
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
) -> Result<Vec<Zeroed>, PartitionError> {
    check_plan(plan, dev)?;
    let bs = u64::from(plan.block_size());
    // A device keeps any subset of the blocks written since its last
    // flush. Zeroed in one pass, an old boot sector could survive over
    // zeroed FATs: a volume that mounts with wrong contents. So the block
    // that makes each old structure recognisable goes first, flushed;
    // until that flush nothing else has changed.
    if !found.is_empty() {
        for s in found {
            let first = s.offset / bs;
            if first < plan.num_blocks() {
                zero_blocks(dev, first, 1)?;
            }
        }
        dev.flush()?;
    }
    let merged = wipe_ranges(plan, found);
    let mut zeroed = Vec::with_capacity(merged.len());
    for r in merged {
        zeroed.push(zero_blocks(dev, r.start / bs, (r.end - r.start) / bs)?);
    }
    Ok(zeroed)
}

/// The byte ranges [`wipe_for_table`] zeroes on the medium of `plan` with
/// `found` on it, sorted and merged (whole blocks). The partition table
/// [`write_table`](crate::write_table) writes lies inside them (before the
/// partition and in the last MiB).
pub fn wipe_ranges(plan: &TablePlan, found: &[Signature]) -> Vec<Range<u64>> {
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
    // Merge overlapping or touching ranges: each block is zeroed once.
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        let to = to.min(blocks);
        if from >= to {
            continue;
        }
        match merged.last_mut() {
            Some(last) if from * bs <= last.end => last.end = last.end.max(to * bs),
            _ => merged.push(from * bs..to * bs),
        }
    }
    merged
}

/// The volume's first [`WIPE_VOLUME_START`] bytes (all of a smaller
/// volume), which [`wipe_for_table`] zeroes, out of what it returned: the
/// file-system writer need not zero them again.
pub fn volume_start_wiped(plan: &TablePlan, zeroed: &[Zeroed]) -> Option<Zeroed> {
    let bs = u64::from(plan.block_size());
    let start = plan.partition_start_lba();
    let count = WIPE.div_ceil(bs).min(plan.partition_blocks());
    zeroed.iter().find_map(|z| z.part(start, count))
}

/// Zeroes the backup GPT header at the medium's last LBA (for 512- and
/// 4096-byte sectors) when it lies at or beyond byte `window` and is
/// genuine: right signature and CRC, and its own LBA field naming the very
/// LBA it was read from. Returns the byte offsets zeroed.
///
/// For a medium formatted only up to `window` (`--size` on a device, e.g.
/// the real capacity of a counterfeit stick): [`wipe_for_table`] through
/// the limited handle cannot see the end, and an old backup GPT left there
/// makes `sgdisk` and `gdisk` offer to restore the old table over the new
/// volume. The header is zeroed, not the entries: without it nothing
/// refers to them.
///
/// Safe on a counterfeit stick that wraps writes beyond its capacity: a
/// header whose own LBA matches where it was read was stored there, so the
/// write lands where it came from; call it before anything else is written,
/// so that a wrapped write can only hit blocks the format rewrites or leaves
/// free.
///
/// # Errors
///
/// [`PartitionError::Io`] if the zeroing fails (a failed read is taken as
/// nothing to wipe).
pub fn wipe_backup_gpt_beyond<D: BlockIo>(
    dev: &mut D,
    window: u64,
) -> Result<Vec<u64>, PartitionError> {
    let bs = u64::from(dev.block_size());
    let total = dev.num_blocks().saturating_mul(bs);
    let mut zeroed = Vec::new();
    for ss in mkfs_alloc_ondisk::probe::table::TABLE_SECTOR_SIZES {
        if ss < bs || ss % bs != 0 || total < 2 * ss {
            continue;
        }
        let lba = total / ss - 1;
        let offset = lba * ss;
        if offset < window {
            continue;
        }
        // A read error there (a counterfeit stick may fail beyond its real
        // capacity) means nothing to wipe, not a failed format.
        let Ok(sector) = crate::probe::read_at(dev, offset, ss) else {
            continue;
        };
        let Some(h) = mkfs_alloc_ondisk::probe::table::gpt_header(&sector) else {
            continue;
        };
        if h.crc_ok(&sector) && h.my_lba.get() == lba {
            dev.write_zeroes(offset / bs, ss / bs)?;
            zeroed.push(offset);
        }
    }
    Ok(zeroed)
}
