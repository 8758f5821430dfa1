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
/// Identifiers come from `opts.ids`; the MBR type from `opts.fs_type` and
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
/// but not applied; `opts.ids` gives the disk signature.
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

/// What a table keeps of a medium whatever the medium's size: the blocks
/// before the partition (the table and the alignment) and after it (GPT's
/// backup), and the smallest partition it plans. A size search (the CLI's
/// `--size auto`) asks it for the partition of each candidate size instead
/// of planning a table per step; [`plan_table`] places the partition by the
/// same numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFootprint {
    kind: TableKind,
    block_size: u32,
    align: u64,
    start_lba: u64,
    tail_blocks: u64,
    min_partition: u64,
}

impl TableFootprint {
    /// The footprint of the table `opts` describes, on media of
    /// `block_size`-byte blocks.
    ///
    /// # Errors
    ///
    /// As [`plan_table`], except the errors that depend on the medium's
    /// size ([`TableFootprint::partition_len`] reports those).
    pub fn of(opts: &TableOptions, block_size: u32) -> Result<Self, PartitionError> {
        let kind = opts.kind;
        check_block_size(kind, block_size)?;
        let bs = u64::from(block_size);
        check_align(kind, bs, opts.align)?;
        let (start_lba, tail_blocks) = match kind {
            TableKind::None => (0, 0),
            // LBA 0 holds the MBR; align >= block size, so `align` is the
            // first aligned offset after it.
            TableKind::Mbr => (opts.align / bs, 0),
            TableKind::Gpt => {
                check_gpt_name(&opts.name)?;
                let (first_usable, tail) = gpt_reserved(bs);
                ((first_usable * bs).next_multiple_of(opts.align) / bs, tail)
            }
        };
        Ok(TableFootprint {
            kind,
            block_size,
            align: opts.align,
            start_lba,
            tail_blocks,
            // Without a table the file system's planner decides what fits
            // (a 720 KiB floppy image is a FAT12); a partition needs 1 MiB.
            min_partition: if kind == TableKind::None {
                bs
            } else {
                MIN_PARTITION_BYTES
            },
        })
    }

    /// Byte offset of the partition on the medium.
    pub fn partition_start(&self) -> u64 {
        self.start_lba * u64::from(self.block_size)
    }

    /// The partition's length on a medium of `medium_bytes` bytes.
    ///
    /// # Errors
    ///
    /// [`PartitionError::MbrTooLarge`] for an MBR on more than 2^32 blocks,
    /// [`PartitionError::MediumTooSmall`] when no partition of the smallest
    /// size fits.
    pub fn partition_len(&self, medium_bytes: u64) -> Result<u64, PartitionError> {
        let m = MediumSize {
            medium_bytes,
            block_size: self.block_size,
        };
        if self.kind == TableKind::Mbr {
            check_mbr_blocks(&m)?;
        }
        let end_lba = m.blocks().saturating_sub(self.tail_blocks);
        let len = end_lba.saturating_sub(self.start_lba) * m.bs();
        if self.kind == TableKind::Gpt && m.blocks() < gpt_reserved(m.bs()).0 + self.tail_blocks + 1
            || len < self.min_partition
        {
            return Err(self.too_small(medium_bytes));
        }
        Ok(len)
    }

    fn too_small(&self, medium_bytes: u64) -> PartitionError {
        let bs = u64::from(self.block_size);
        PartitionError::MediumTooSmall {
            medium_bytes,
            kind: self.kind,
            align: self.align,
            min_bytes: (self.start_lba * bs)
                .saturating_add(self.min_partition)
                .saturating_add(self.tail_blocks * bs),
            min_partition: self.min_partition,
        }
    }
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
    let Some(at) = at else {
        return plan_spanning(opts, medium_bytes, block_size);
    };
    let m = MediumSize {
        medium_bytes,
        block_size,
    };
    let Extent {
        start_lba,
        end_lba,
        tail_blocks,
        spec,
    } = match kind {
        TableKind::Mbr => mbr_extent(&m, at, opts.ids)?,
        // plan_mbr_at accepts only an MBR.
        TableKind::None | TableKind::Gpt => {
            return Err(PartitionError::InvalidPlan {
                kind,
                reason: "a placed partition needs an MBR".to_string(),
            })
        }
    };
    let len = end_lba.saturating_sub(start_lba).saturating_mul(bs);
    // With a partition placed by the caller (the SD layout), the file
    // system's planner decides what fits.
    if len < bs {
        return Err(PartitionError::MediumTooSmall {
            medium_bytes,
            kind,
            align,
            min_bytes: start_lba
                .saturating_mul(bs)
                .saturating_add(bs)
                .saturating_add(tail_blocks.saturating_mul(bs)),
            min_partition: bs,
        });
    }
    Ok(TablePlan {
        block_size,
        medium_bytes,
        align,
        partition_start: start_lba * bs,
        partition_len: len,
        spec,
        type_from_fs: false,
    })
}

/// [`plan_table`]: one partition spanning the medium as its
/// [`TableFootprint`] says, with the identifiers of `opts.seed`.
fn plan_spanning(
    opts: &TableOptions,
    medium_bytes: u64,
    block_size: u32,
) -> Result<TablePlan, PartitionError> {
    let fp = TableFootprint::of(opts, block_size)?;
    let len = fp.partition_len(medium_bytes)?;
    let bs = u64::from(block_size);
    let len_blocks = len / bs;
    let (disk_signature, disk_guid, partition_guid) = identifiers(opts.ids);
    let spec = match opts.kind {
        TableKind::None => TableSpec::None,
        TableKind::Mbr => TableSpec::Mbr(MbrPlan {
            partition_type: if opts.esp {
                MBR_TYPE_ESP
            } else {
                super::mbr_partition_type(opts.fs_type, fp.start_lba, len_blocks)
            },
            disk_signature,
            heads: 255,
            sectors_per_track: 63,
        }),
        TableKind::Gpt => TableSpec::Gpt(GptPlan {
            disk_guid,
            partition_type_guid: if opts.esp {
                Guid::EFI_SYSTEM
            } else {
                Guid::BASIC_DATA
            },
            partition_guid,
            partition_name: opts.name.clone(),
            first_usable_lba: gpt_reserved(bs).0,
            // The backup entries, then the backup header in the last LBA.
            last_usable_lba: fp.start_lba + len_blocks - 1,
        }),
    };
    Ok(TablePlan {
        block_size,
        medium_bytes,
        align: opts.align,
        partition_start: fp.partition_start(),
        partition_len: len,
        spec,
        type_from_fs: opts.kind == TableKind::Mbr && !opts.esp,
    })
}

/// The medium a plan is for.
struct MediumSize {
    medium_bytes: u64,
    block_size: u32,
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

/// The identifiers of `ids`: the MBR disk signature, the GPT disk GUID, the
/// GPT partition GUID. A seed draws all three in this order whatever the
/// kind, so that it gives the same GUIDs for either kind.
fn identifiers(ids: TableIds) -> (u32, Guid, Guid) {
    let seed = match ids {
        TableIds::Seeded(seed) => seed,
        TableIds::Given {
            disk_signature,
            disk_guid,
            partition_guid,
        } => return (disk_signature, disk_guid, partition_guid),
    };
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

/// More blocks than an MBR's 32-bit sector numbers address.
fn check_mbr_blocks(m: &MediumSize) -> Result<(), PartitionError> {
    // Both the start and the length are u32 sector numbers.
    let max_blocks = 1u64 << 32;
    if m.blocks() > max_blocks {
        return Err(PartitionError::MbrTooLarge {
            medium_bytes: m.medium_bytes,
            block_size: m.block_size,
            max_bytes: max_blocks.saturating_mul(m.bs()),
        });
    }
    Ok(())
}

/// MBR with the partition where `at` places it, to the end of a medium of
/// at most 2^32 blocks.
fn mbr_extent(m: &MediumSize, at: MbrPlacement, ids: TableIds) -> Result<Extent, PartitionError> {
    check_mbr_blocks(m)?;
    let blocks = m.blocks();
    let mbr = MbrPlan {
        partition_type: at.partition_type,
        disk_signature: identifiers(ids).0,
        heads: at.heads,
        sectors_per_track: at.sectors_per_track,
    };
    if at.start_lba == 0 || at.start_lba >= blocks {
        return Err(PartitionError::InvalidPlan {
            kind: TableKind::Mbr,
            reason: format!(
                "partition start LBA {} is not inside the medium after the MBR (1..{blocks})",
                at.start_lba
            ),
        });
    }
    Ok(Extent {
        start_lba: at.start_lba,
        end_lba: blocks,
        tail_blocks: 0,
        spec: TableSpec::Mbr(mbr),
    })
}

/// GPT's reserved blocks: the first usable LBA (after the protective MBR in
/// LBA 0, the header in LBA 1 and the entries) and the blocks after the
/// last usable one (the backup entries and the backup header).
fn gpt_reserved(bs: u64) -> (u64, u64) {
    let entry_blocks = (GPT_ENTRIES * GPT_ENTRY_SIZE).div_ceil(bs);
    (2 + entry_blocks, entry_blocks + 1)
}

/// A GPT partition name: at most [`GPT_NAME_MAX`] UTF-16 units, no NUL.
fn check_gpt_name(name: &str) -> Result<(), PartitionError> {
    let units = name.encode_utf16().count();
    if units > GPT_NAME_MAX || name.contains('\0') {
        return Err(PartitionError::InvalidName {
            name: name.to_string(),
            units,
            max: GPT_NAME_MAX,
        });
    }
    Ok(())
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
