//! [`plan_table`] and [`plan_mbr_at`]: where the partition goes and which
//! identifiers the table gets, in steps: the block size and alignment, the
//! kind's own part (MBR or GPT), the partition's length.

use mkfs_alloc_ondisk::rng::SplitMix64;

use super::*;
use crate::guid::{nonzero_u32, Guid};
use crate::PartitionError;

/// Plans one partition spanning the medium.
///
/// The start is the first multiple of `opts.align` after the table (after
/// LBA 0 for MBR, after the primary entries for GPT); the end is the end of
/// the medium (MBR) or the last usable LBA before the backup entries (GPT).
/// Identifiers come from `opts.seed`; the MBR type from `opts.fs_type` and
/// the partition's extent ([`mbr_partition_type`](super::mbr_partition_type)), or 0xEF for an
/// ESP.
///
/// # Errors
///
/// - [`PartitionError::UnsupportedBlockSize`]: GPT needs 512 or 4096; others
///   a power of two from 512 to 4096.
/// - [`PartitionError::InvalidAlignment`]: not a power of two, below the block
///   size (below 1 MiB for GPT) or above [`MAX_ALIGN`].
/// - [`PartitionError::MbrTooLarge`]: MBR on more than 2^32 blocks.
/// - [`PartitionError::InvalidName`]: GPT name over 36 UTF-16 units or with NUL.
/// - [`PartitionError::MediumTooSmall`]: no room for a partition of
///   [`MIN_PARTITION_BYTES`] (one block without a table).
pub fn plan_table(
    opts: &TableOptions,
    medium_bytes: u64,
    block_size: u32,
) -> Result<TablePlan, PartitionError> {
    plan_placed(opts, None, medium_bytes, block_size)
}

/// Plans an MBR whose one partition starts at `at.start_lba` and runs to the
/// end of the medium, with `at`'s type byte and CHS geometry (the SD
/// layout). `opts.kind` must be [`TableKind::Mbr`]; `opts.align` is reported
/// but not applied; `opts.seed` gives the disk signature.
///
/// # Errors
///
/// As [`plan_table`], and [`PartitionError::InvalidPlan`] for another kind,
/// a start at LBA 0 or past the medium, or a CHS geometry out of range.
pub fn plan_mbr_at(
    opts: &TableOptions,
    at: MbrPlacement,
    medium_bytes: u64,
    block_size: u32,
) -> Result<TablePlan, PartitionError> {
    let invalid = |reason: &str| PartitionError::InvalidPlan {
        kind: opts.kind,
        reason: reason.to_string(),
    };
    if opts.kind != TableKind::Mbr {
        return Err(invalid("a placed partition needs an MBR"));
    }
    if !(1..=255).contains(&at.heads) || !(1..=63).contains(&at.sectors_per_track) {
        return Err(invalid(
            "CHS geometry out of range (heads 1..=255, sectors per track 1..=63)",
        ));
    }
    plan_placed(opts, Some(at), medium_bytes, block_size)
}

fn plan_placed(
    opts: &TableOptions,
    at: Option<MbrPlacement>,
    medium_bytes: u64,
    block_size: u32,
) -> Result<TablePlan, PartitionError> {
    let kind = opts.kind;
    check_block_size(kind, block_size)?;
    let bs = u64::from(block_size);
    let align = opts.align;
    check_align(kind, bs, align)?;
    let m = MediumSize {
        medium_bytes,
        block_size,
        align,
    };
    let Extent {
        start_lba,
        end_lba,
        tail_blocks,
        mut spec,
    } = match kind {
        TableKind::None => Extent {
            start_lba: 0,
            end_lba: m.blocks(),
            tail_blocks: 0,
            spec: TableSpec::None,
        },
        TableKind::Mbr => mbr_extent(&m, at, opts.seed)?,
        TableKind::Gpt => gpt_extent(&m, opts)?,
    };
    let len_blocks = end_lba.saturating_sub(start_lba);
    let len = len_blocks.saturating_mul(bs);
    // Without a table, or with a partition placed by the caller (the SD
    // layout), the file system's planner decides what fits (a 720 KiB
    // floppy image is a FAT12); otherwise a partition needs 1 MiB.
    let min_partition = if kind == TableKind::None || at.is_some() {
        bs
    } else {
        MIN_PARTITION_BYTES
    };
    if len < min_partition {
        return Err(PartitionError::MediumTooSmall {
            medium_bytes,
            kind,
            align,
            min_bytes: start_lba
                .saturating_mul(bs)
                .saturating_add(min_partition)
                .saturating_add(tail_blocks.saturating_mul(bs)),
            min_partition,
        });
    }
    if let (TableSpec::Mbr(mbr), None) = (&mut spec, at) {
        mbr.partition_type = if opts.esp {
            MBR_TYPE_ESP
        } else {
            super::mbr_partition_type(opts.fs_type, start_lba, len_blocks)
        };
    }
    Ok(TablePlan {
        block_size,
        medium_bytes,
        align,
        partition_start: start_lba * bs,
        partition_len: len,
        spec,
    })
}

/// The medium a plan is for, and the alignment asked for.
struct MediumSize {
    medium_bytes: u64,
    block_size: u32,
    align: u64,
}

impl MediumSize {
    fn bs(&self) -> u64 {
        u64::from(self.block_size)
    }

    fn blocks(&self) -> u64 {
        self.medium_bytes / self.bs()
    }
}

/// Where the partition goes, `[start_lba, end_lba)`, the blocks the table
/// keeps after it (for the size error), and the kind's own part (the MBR
/// type waits for the length).
struct Extent {
    start_lba: u64,
    end_lba: u64,
    tail_blocks: u64,
    spec: TableSpec,
}

/// The identifiers a seed gives, in this order: the MBR disk signature,
/// the GPT disk GUID, the GPT partition GUID (both kinds draw all three, so
/// that a seed gives the same GUIDs whatever the kind).
fn identifiers(seed: u64) -> (u32, Guid, Guid) {
    let mut rng = SplitMix64::new(seed);
    let disk_signature = nonzero_u32(&mut rng);
    let disk_guid = Guid::from_rng(&mut rng);
    let partition_guid = Guid::from_rng(&mut rng);
    (disk_signature, disk_guid, partition_guid)
}

/// The alignment: a power of two from the block size (1 MiB for GPT) to
/// [`MAX_ALIGN`].
fn check_align(kind: TableKind, bs: u64, align: u64) -> Result<(), PartitionError> {
    let min_align = match kind {
        TableKind::Gpt => MIN_GPT_ALIGN.max(bs),
        TableKind::None | TableKind::Mbr => bs,
    };
    if !align.is_power_of_two() || align < min_align || align > MAX_ALIGN {
        return Err(PartitionError::InvalidAlignment {
            align,
            kind,
            min: min_align,
            max: MAX_ALIGN,
        });
    }
    Ok(())
}

/// MBR: the partition from the first aligned block after LBA 0 (or where
/// `at` places it) to the end of a medium of at most 2^32 blocks.
fn mbr_extent(
    m: &MediumSize,
    at: Option<MbrPlacement>,
    seed: u64,
) -> Result<Extent, PartitionError> {
    let (blocks, bs) = (m.blocks(), m.bs());
    // Both the start and the length are u32 sector numbers.
    let max_blocks = 1u64 << 32;
    if blocks > max_blocks {
        return Err(PartitionError::MbrTooLarge {
            medium_bytes: m.medium_bytes,
            block_size: m.block_size,
            max_bytes: max_blocks.saturating_mul(bs),
        });
    }
    let mbr = MbrPlan {
        partition_type: at.map_or(0, |a| a.partition_type),
        disk_signature: identifiers(seed).0,
        heads: at.map_or(255, |a| a.heads),
        sectors_per_track: at.map_or(63, |a| a.sectors_per_track),
    };
    // LBA 0 holds the MBR; align >= block size, so `align` is the first
    // aligned offset after it.
    let start = match at {
        Some(a) if a.start_lba == 0 || a.start_lba >= blocks => {
            return Err(PartitionError::InvalidPlan {
                kind: TableKind::Mbr,
                reason: format!(
                    "partition start LBA {} is not inside the medium after the MBR (1..{blocks})",
                    a.start_lba
                ),
            })
        }
        Some(a) => a.start_lba,
        None => m.align / bs,
    };
    Ok(Extent {
        start_lba: start,
        end_lba: blocks,
        tail_blocks: 0,
        spec: TableSpec::Mbr(mbr),
    })
}

/// GPT: the partition from the first aligned block after the primary
/// entries to the last usable LBA before the backup entries; the name
/// checked.
fn gpt_extent(m: &MediumSize, opts: &TableOptions) -> Result<Extent, PartitionError> {
    let (blocks, bs, align) = (m.blocks(), m.bs(), m.align);
    let units = opts.name.encode_utf16().count();
    if units > GPT_NAME_MAX || opts.name.contains('\0') {
        return Err(PartitionError::InvalidName {
            name: opts.name.clone(),
            units,
            max: GPT_NAME_MAX,
        });
    }
    let entry_blocks = (GPT_ENTRIES * GPT_ENTRY_SIZE).div_ceil(bs);
    // LBA 0 protective MBR, LBA 1 header, then the entries.
    let first_usable = 2 + entry_blocks;
    // Backup entries, then the backup header in the last LBA.
    let tail = entry_blocks + 1;
    let min_blocks = first_usable + tail + 1;
    let start = (first_usable * bs).next_multiple_of(align) / bs;
    if blocks < min_blocks {
        return Err(PartitionError::MediumTooSmall {
            medium_bytes: m.medium_bytes,
            kind: TableKind::Gpt,
            align,
            min_bytes: (start * bs)
                .saturating_add(MIN_PARTITION_BYTES)
                .saturating_add(tail * bs),
            min_partition: MIN_PARTITION_BYTES,
        });
    }
    let last_usable = blocks - tail - 1;
    let (_, disk_guid, partition_guid) = identifiers(opts.seed);
    let gpt = GptPlan {
        disk_guid,
        partition_type_guid: if opts.esp {
            Guid::EFI_SYSTEM
        } else {
            Guid::BASIC_DATA
        },
        partition_guid,
        partition_name: opts.name.clone(),
        first_usable_lba: first_usable,
        last_usable_lba: last_usable,
    };
    Ok(Extent {
        start_lba: start,
        end_lba: last_usable + 1,
        tail_blocks: tail,
        spec: TableSpec::Gpt(gpt),
    })
}

/// Checks `block_size` for `kind`.
fn check_block_size(kind: TableKind, block_size: u32) -> Result<(), PartitionError> {
    let (ok, valid) = match kind {
        // The gpt crate knows only these two logical block sizes.
        TableKind::Gpt => (matches!(block_size, 512 | 4096), "512 or 4096"),
        TableKind::None | TableKind::Mbr => (
            mkfs_alloc_ondisk::valid_sector_size(block_size),
            "a power of two from 512 to 4096",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(PartitionError::UnsupportedBlockSize {
            block_size,
            kind,
            valid,
        })
    }
}
