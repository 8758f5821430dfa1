//! Choosing a table kind and planning the one partition: pure arithmetic, no I/O.

use crate::guid::Guid;

mod extent;
mod table;

pub use extent::{plan_mbr_at, plan_table, TableFootprint};

pub use table::{GptPlan, MbrPlacement, MbrPlan, TablePlan, TableSpec};

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

pub use mkfs_alloc_ondisk::mbr::{
    partition_type as mbr_partition_type, CHS_LIMIT_SECTORS, MBR_TYPE_ESP, MBR_TYPE_EXFAT,
    MBR_TYPE_FAT32_LBA,
};
pub use mkfs_alloc_ondisk::{FsKind, TableKind};

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TableChoice {
    /// Let [`choose_table`] decide from the medium.
    Auto,
    /// Exactly this kind.
    Fixed(TableKind),
}

impl From<TableKind> for TableChoice {
    /// Exactly this kind ([`TableChoice::Fixed`]).
    fn from(kind: TableKind) -> Self {
        TableChoice::Fixed(kind)
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

/// Where a table's identifiers (the MBR disk signature, the GPT disk and
/// partition GUIDs) come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableIds {
    /// Derived from a seed through SplitMix64: equal seeds give
    /// byte-identical tables (pinned output).
    Seeded(u64),
    /// Given by the caller, such as fresh random values ([`TableIds::random`]).
    Given {
        /// The MBR disk signature (bytes 440..444 of LBA 0); not 0.
        disk_signature: u32,
        /// The GPT disk GUID.
        disk_guid: Guid,
        /// The GPT partition's unique GUID.
        partition_guid: Guid,
    },
}

impl TableIds {
    /// Fresh identifiers from a source of random 64-bit values: each GUID
    /// from 128 random bits (a version-4 GUID keeps 122 of them), a non-zero
    /// disk signature.
    pub fn random(next: &mut dyn FnMut() -> u64) -> Self {
        let disk_signature = loop {
            let v = (next() >> 32) as u32;
            if v != 0 {
                break v;
            }
        };
        let disk_guid = Guid::v4(next(), next());
        TableIds::Given {
            disk_signature,
            disk_guid,
            partition_guid: Guid::v4(next(), next()),
        }
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
    pub fs_type: FsKind,
    /// GPT partition name, conventionally the volume label (at most 36 UTF-16
    /// code units). Ignored for MBR.
    pub name: String,
    /// Where the MBR disk signature and the GPT GUIDs come from.
    pub ids: TableIds,
    /// An EFI System Partition: GPT type C12A7328-F81F-11D2-BA4B-00A0C93EC93B,
    /// MBR type 0xEF.
    pub esp: bool,
}

impl TableOptions {
    /// Options for `kind` and `fs_type` with the default alignment, an empty
    /// name and identifiers seeded with 0.
    pub fn new(kind: TableKind, fs_type: FsKind) -> Self {
        TableOptions {
            kind,
            align: DEFAULT_ALIGN,
            fs_type,
            name: String::new(),
            ids: TableIds::Seeded(0),
            esp: false,
        }
    }
}
