//! Choosing a table kind and planning the one partition: pure arithmetic, no I/O.

use std::fmt;

use serde::Serialize;

use mkfs_alloc_ondisk::rng::SplitMix64;

use crate::guid::{nonzero_u32, Guid};
use crate::PartitionError;

/// One mebibyte.
const MIB: u64 = 1 << 20;

/// Default partition alignment: 1 MiB, what Windows and Linux tools use.
pub const DEFAULT_ALIGN: u64 = MIB;

/// Smallest alignment accepted for GPT. Windows tools only make 1 MiB bounds.
pub const MIN_GPT_ALIGN: u64 = MIB;

pub use mkfs_alloc_ondisk::MAX_ALIGN;

/// Smallest partition this crate plans in a table: 1 MiB, the smallest exFAT
/// volume. Without a table ([`TableKind::None`]) one block is enough: the file
/// system's planner decides what fits.
pub const MIN_PARTITION_BYTES: u64 = MIB;

/// Media of at least this size get GPT under [`TableChoice::Auto`] (2 TiB).
pub const AUTO_GPT_THRESHOLD: u64 = 1 << 41;

/// Number of GPT partition entries written (the UEFI minimum array of 16 KiB).
pub const GPT_ENTRIES: u64 = 128;

/// Size of one GPT partition entry in bytes.
pub const GPT_ENTRY_SIZE: u64 = 128;

/// Longest GPT partition name, in UTF-16 code units.
pub const GPT_NAME_MAX: usize = 36;

/// MBR partition type for FAT32 with LBA addressing.
pub const MBR_TYPE_FAT32_LBA: u8 = 0x0C;

/// MBR partition type for exFAT (shared with NTFS and HPFS).
pub const MBR_TYPE_EXFAT: u8 = 0x07;
/// MBR partition type of an EFI System Partition.
pub const MBR_TYPE_ESP: u8 = 0xEF;

/// The partition table to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// No table: the file system starts at byte 0 ("superfloppy").
    None,
    /// A DOS/MBR table with one primary partition.
    Mbr,
    /// A GUID partition table with one partition and a protective MBR.
    Gpt,
}

impl fmt::Display for TableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TableKind::None => "no partition table",
            TableKind::Mbr => "MBR",
            TableKind::Gpt => "GPT",
        })
    }
}

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableChoice {
    /// Let [`choose_table`] decide from the medium.
    Auto,
    /// Exactly this kind.
    Fixed(TableKind),
}

/// The file system the partition will hold; decides the MBR type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionFs {
    /// exFAT: MBR type 0x07.
    Exfat,
    /// FAT32: MBR type 0x0C (FAT32 LBA).
    Fat32,
    /// FAT16: MBR type 0x04 (under 65,536 sectors), 0x06, or 0x0E (LBA)
    /// when the partition ends beyond what CHS addresses.
    Fat16,
    /// FAT12: MBR type 0x01.
    Fat12,
}

/// Sectors CHS can address with 255 heads and 63 sectors per track
/// (1024 cylinders): partitions ending beyond need an LBA type.
pub const CHS_LIMIT_SECTORS: u64 = 1024 * 255 * 63;

impl PartitionFs {
    /// The MBR partition type byte for this file system, without knowing
    /// the partition's extent (FAT16: 0x06).
    pub fn mbr_type(self) -> u8 {
        match self {
            PartitionFs::Exfat => MBR_TYPE_EXFAT,
            PartitionFs::Fat32 => MBR_TYPE_FAT32_LBA,
            PartitionFs::Fat16 => 0x06,
            PartitionFs::Fat12 => 0x01,
        }
    }

    /// The MBR partition type byte for a partition of `sectors` sectors
    /// starting at LBA `start`: FAT16 0x04 below 65,536 sectors, 0x0E when it
    /// ends beyond `CHS_LIMIT_SECTORS`, else 0x06 (the SD specification's
    /// and DOS's rule); the others as [`PartitionFs::mbr_type`].
    pub fn mbr_type_for(self, start: u64, sectors: u64) -> u8 {
        match self {
            PartitionFs::Fat16 if start + sectors > CHS_LIMIT_SECTORS => 0x0E,
            PartitionFs::Fat16 if sectors < 65_536 => 0x04,
            other => other.mbr_type(),
        }
    }
}

/// Picks the table kind and says why, in a few words for the user.
///
/// [`TableChoice::Auto`]: a whole disk gets MBR below 2 TiB and GPT from
/// 2 TiB ([`AUTO_GPT_THRESHOLD`]); an image file or an existing partition gets
/// no table. [`TableChoice::Fixed`] is returned as it is.
pub fn choose_table(
    choice: TableChoice,
    medium_bytes: u64,
    is_whole_disk: bool,
) -> (TableKind, &'static str) {
    match choice {
        TableChoice::Fixed(kind) => (kind, "requested explicitly"),
        TableChoice::Auto if !is_whole_disk => (
            TableKind::None,
            "not a whole disk (image file or existing partition): no partition table",
        ),
        TableChoice::Auto if medium_bytes < AUTO_GPT_THRESHOLD => {
            (TableKind::Mbr, "whole disk smaller than 2 TiB: MBR")
        }
        TableChoice::Auto => (TableKind::Gpt, "whole disk of 2 TiB or more: GPT"),
    }
}

/// What to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// The table to write.
    pub kind: TableKind,
    /// Partition start alignment in bytes: a power of two, at least the block
    /// size, at least [`MIN_GPT_ALIGN`] for GPT, at most [`MAX_ALIGN`].
    /// Default [`DEFAULT_ALIGN`].
    pub align: u64,
    /// The file system the partition will hold.
    pub fs_type: PartitionFs,
    /// GPT partition name, conventionally the volume label (at most 36 UTF-16
    /// code units). Ignored for MBR.
    pub name: String,
    /// Seed of the MBR disk signature and the GPT GUIDs: equal seeds give
    /// byte-identical tables.
    pub seed: u64,
    /// An EFI System Partition: GPT type C12A7328-F81F-11D2-BA4B-00A0C93EC93B,
    /// MBR type 0xEF.
    pub esp: bool,
}

impl TableOptions {
    /// Options for `kind` and `fs_type` with the default alignment, an empty
    /// name and seed 0.
    pub fn new(kind: TableKind, fs_type: PartitionFs) -> Self {
        TableOptions {
            kind,
            align: DEFAULT_ALIGN,
            fs_type,
            name: String::new(),
            seed: 0,
            esp: false,
        }
    }
}

/// A planned table: where the one partition goes and every identifier that
/// will be written. Made only by [`plan_table`], so its parts always agree;
/// read it through the accessors. Serializes to JSON for the CLI (one flat
/// object: the kind's own fields, and `null` for the other kind's).
///
/// A plan cannot be edited after planning:
///
/// ```compile_fail
/// use mkfs_alloc_partition::{plan_table, PartitionFs, TableKind, TableOptions};
/// let opts = TableOptions::new(TableKind::Mbr, PartitionFs::Exfat);
/// let mut plan = plan_table(&opts, 64 << 20, 512).unwrap();
/// plan.partition_start = 0;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePlan {
    block_size: u32,
    medium_bytes: u64,
    align: u64,
    partition_start: u64,
    partition_len: u64,
    spec: TableSpec,
}

/// What a [`TablePlan`] writes besides the partition's extent: nothing, an
/// MBR, or a GPT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableSpec {
    /// No table: the file system starts at byte 0.
    None,
    /// A DOS/MBR table with one primary partition.
    Mbr(MbrPlan),
    /// A GUID partition table with one partition and a protective MBR.
    Gpt(GptPlan),
}

/// The MBR-only part of a [`TablePlan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MbrPlan {
    partition_type: u8,
    disk_signature: u32,
    heads: u8,
    sectors_per_track: u8,
}

/// An MBR partition placed by the caller ([`plan_mbr_at`]): the SD
/// Association layout puts the partition where the card's capacity class
/// says, with its own type byte and CHS geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MbrPlacement {
    /// First LBA of the partition (at least 1); it runs to the end of the medium.
    pub start_lba: u64,
    /// The partition type byte.
    pub partition_type: u8,
    /// CHS heads of the geometry the entry's CHS addresses use (1..=255).
    pub heads: u8,
    /// CHS sectors per track (1..=63).
    pub sectors_per_track: u8,
}

impl MbrPlan {
    /// CHS geometry of the entry's CHS addresses: `(heads, sectors per
    /// track)`, 255/63 unless placed by [`plan_mbr_at`].
    pub fn chs_geometry(&self) -> (u8, u8) {
        (self.heads, self.sectors_per_track)
    }

    /// The partition type byte (0x07 exFAT, 0x0C FAT32 LBA, 0xEF ESP, ...).
    pub fn partition_type(&self) -> u8 {
        self.partition_type
    }

    /// The disk signature (bytes 440..444 of LBA 0).
    pub fn disk_signature(&self) -> u32 {
        self.disk_signature
    }
}

/// The GPT-only part of a [`TablePlan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptPlan {
    disk_guid: Guid,
    partition_type_guid: Guid,
    partition_guid: Guid,
    partition_name: String,
    first_usable_lba: u64,
    last_usable_lba: u64,
}

impl GptPlan {
    /// The disk GUID.
    pub fn disk_guid(&self) -> Guid {
        self.disk_guid
    }

    /// The partition type GUID: Microsoft Basic Data, or EFI System.
    pub fn partition_type_guid(&self) -> Guid {
        self.partition_type_guid
    }

    /// The unique partition GUID.
    pub fn partition_guid(&self) -> Guid {
        self.partition_guid
    }

    /// The partition name (at most [`GPT_NAME_MAX`] UTF-16 units).
    pub fn partition_name(&self) -> &str {
        &self.partition_name
    }

    /// First usable LBA, after the primary entries.
    pub fn first_usable_lba(&self) -> u64 {
        self.first_usable_lba
    }

    /// Last usable LBA, before the backup entries.
    pub fn last_usable_lba(&self) -> u64 {
        self.last_usable_lba
    }
}

impl TablePlan {
    /// The table kind.
    pub fn kind(&self) -> TableKind {
        match self.spec {
            TableSpec::None => TableKind::None,
            TableSpec::Mbr(_) => TableKind::Mbr,
            TableSpec::Gpt(_) => TableKind::Gpt,
        }
    }

    /// The kind's own part: MBR type and signature, or the GPT identifiers.
    pub fn spec(&self) -> &TableSpec {
        &self.spec
    }

    /// The MBR part, if this is an MBR plan.
    pub fn mbr(&self) -> Option<&MbrPlan> {
        match &self.spec {
            TableSpec::Mbr(m) => Some(m),
            _ => None,
        }
    }

    /// The GPT part, if this is a GPT plan.
    pub fn gpt(&self) -> Option<&GptPlan> {
        match &self.spec {
            TableSpec::Gpt(g) => Some(g),
            _ => None,
        }
    }

    /// Logical block (sector) size in bytes; table LBAs count these.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Size of the medium in bytes (a trailing partial block is not used).
    pub fn medium_bytes(&self) -> u64 {
        self.medium_bytes
    }

    /// Alignment the partition start was rounded up to, in bytes.
    pub fn align(&self) -> u64 {
        self.align
    }

    /// Byte offset of the partition (of the file system) on the medium; 0
    /// without a table.
    pub fn partition_start(&self) -> u64 {
        self.partition_start
    }

    /// Length of the partition (of the file system) in bytes, a multiple of
    /// the block size.
    pub fn partition_len(&self) -> u64 {
        self.partition_len
    }

    /// Number of whole blocks on the medium.
    pub fn num_blocks(&self) -> u64 {
        self.medium_bytes / u64::from(self.block_size)
    }

    /// First LBA of the partition: what FAT32 `HiddSec` and exFAT
    /// `PartitionOffset` must hold.
    pub fn partition_start_lba(&self) -> u64 {
        self.partition_start / u64::from(self.block_size)
    }

    /// Length of the partition in blocks.
    pub fn partition_blocks(&self) -> u64 {
        self.partition_len / u64::from(self.block_size)
    }
}

/// The JSON shape of a [`TablePlan`] (one flat object, as before the plan
/// became an enum: scripts read `table.mbr_type`, `table.disk_guid`, ...).
#[derive(Serialize)]
struct TablePlanJson<'a> {
    kind: TableKind,
    block_size: u32,
    medium_bytes: u64,
    align: u64,
    partition_start: u64,
    partition_len: u64,
    mbr_type: Option<u8>,
    disk_signature: Option<u32>,
    disk_guid: Option<Guid>,
    partition_type_guid: Option<Guid>,
    partition_guid: Option<Guid>,
    partition_name: Option<&'a str>,
    first_usable_lba: Option<u64>,
    last_usable_lba: Option<u64>,
}

impl Serialize for TablePlan {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mbr = self.mbr();
        let gpt = self.gpt();
        TablePlanJson {
            kind: self.kind(),
            block_size: self.block_size,
            medium_bytes: self.medium_bytes,
            align: self.align,
            partition_start: self.partition_start,
            partition_len: self.partition_len,
            mbr_type: mbr.map(MbrPlan::partition_type),
            disk_signature: mbr.map(MbrPlan::disk_signature),
            disk_guid: gpt.map(GptPlan::disk_guid),
            partition_type_guid: gpt.map(GptPlan::partition_type_guid),
            partition_guid: gpt.map(GptPlan::partition_guid),
            partition_name: gpt.map(GptPlan::partition_name),
            first_usable_lba: gpt.map(GptPlan::first_usable_lba),
            last_usable_lba: gpt.map(GptPlan::last_usable_lba),
        }
        .serialize(serializer)
    }
}

/// Plans one partition spanning the medium.
///
/// The start is the first multiple of `opts.align` after the table (after
/// LBA 0 for MBR, after the primary entries for GPT); the end is the end of
/// the medium (MBR) or the last usable LBA before the backup entries (GPT).
/// Identifiers come from `opts.seed`; the MBR type from `opts.fs_type` and
/// the partition's extent ([`PartitionFs::mbr_type_for`]), or 0xEF for an
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
    let min_align = match kind {
        TableKind::Gpt => MIN_GPT_ALIGN.max(bs),
        TableKind::None | TableKind::Mbr => bs,
    };
    let align = opts.align;
    if !align.is_power_of_two() || align < min_align || align > MAX_ALIGN {
        return Err(PartitionError::InvalidAlignment {
            align,
            kind,
            min: min_align,
            max: MAX_ALIGN,
        });
    }
    let blocks = medium_bytes / bs;
    let too_small = |min_bytes: u64| PartitionError::MediumTooSmall {
        medium_bytes,
        kind,
        align,
        min_bytes,
        min_partition: MIN_PARTITION_BYTES,
    };

    let mut rng = SplitMix64::new(opts.seed);
    let disk_signature = nonzero_u32(&mut rng);
    let disk_guid = Guid::from_rng(&mut rng);
    let partition_guid = Guid::from_rng(&mut rng);

    // Each arm yields [start_lba, end_lba) of the partition, the number of
    // blocks the table keeps after it (for the size error) and the kind's
    // own part (the MBR type waits for the extent).
    let (start_lba, end_lba, tail_blocks, mut spec) = match kind {
        TableKind::None => (0, blocks, 0, TableSpec::None),
        TableKind::Mbr => {
            // Both the start and the length are u32 sector numbers.
            let max_blocks = 1u64 << 32;
            if blocks > max_blocks {
                return Err(PartitionError::MbrTooLarge {
                    medium_bytes,
                    block_size,
                    max_bytes: max_blocks.saturating_mul(bs),
                });
            }
            let mbr = MbrPlan {
                partition_type: at.map_or(0, |a| a.partition_type),
                disk_signature,
                heads: at.map_or(255, |a| a.heads),
                sectors_per_track: at.map_or(63, |a| a.sectors_per_track),
            };
            // LBA 0 holds the MBR; align >= block size, so `align` is the
            // first aligned offset after it.
            let start = match at {
                Some(a) if a.start_lba == 0 || a.start_lba >= blocks => {
                    return Err(PartitionError::InvalidPlan {
                        kind,
                        reason: format!(
                            "partition start LBA {} is not inside the medium after the MBR (1..{blocks})",
                            a.start_lba
                        ),
                    })
                }
                Some(a) => a.start_lba,
                None => align / bs,
            };
            (start, blocks, 0, TableSpec::Mbr(mbr))
        }
        TableKind::Gpt => {
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
                return Err(too_small(
                    (start * bs)
                        .saturating_add(MIN_PARTITION_BYTES)
                        .saturating_add(tail * bs),
                ));
            }
            let last_usable = blocks - tail - 1;
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
            (start, last_usable + 1, tail, TableSpec::Gpt(gpt))
        }
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
            opts.fs_type.mbr_type_for(start_lba, len_blocks)
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
