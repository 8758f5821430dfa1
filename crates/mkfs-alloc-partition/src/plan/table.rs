//! The planned table: [`TablePlan`], its per-kind parts and its JSON shape.

#[cfg(feature = "serde")]
use serde::Serialize;

use super::TableKind;
use crate::guid::Guid;

/// A planned table: where the one partition goes and every identifier that
/// will be written. Made only by [`plan_table`](crate::plan_table), so its parts always agree;
/// read it through the accessors. Serializes to JSON for the CLI (one flat
/// object: the kind's own fields, and `null` for the other kind's).
///
/// A plan cannot be edited after planning:
///
/// ```compile_fail
/// use mkfs_alloc_partition::{plan_table, FsKind, TableKind, TableOptions};
/// let opts = TableOptions::new(TableKind::Mbr, FsKind::Exfat);
/// let mut plan = plan_table(&opts, 64 << 20, 512).unwrap();
/// plan.partition_start = 0;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePlan {
    pub(crate) block_size: u32,
    pub(crate) medium_bytes: u64,
    pub(crate) align: u64,
    pub(crate) partition_start: u64,
    pub(crate) partition_len: u64,
    pub(crate) spec: TableSpec,
    /// The MBR type byte follows the file system ([`TablePlan::holding`]):
    /// not for an ESP or a placed partition.
    pub(crate) type_from_fs: bool,
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
    pub(crate) partition_type: u8,
    pub(crate) disk_signature: u32,
    pub(crate) heads: u8,
    pub(crate) sectors_per_track: u8,
}

/// An MBR partition placed by the caller ([`plan_mbr_at`](crate::plan_mbr_at)): the SD
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
    /// track)`, 255/63 unless placed by [`plan_mbr_at`](crate::plan_mbr_at).
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
    pub(crate) disk_guid: Guid,
    pub(crate) partition_type_guid: Guid,
    pub(crate) partition_guid: Guid,
    pub(crate) partition_name: String,
    pub(crate) first_usable_lba: u64,
    pub(crate) last_usable_lba: u64,
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

    /// The partition name (at most [`GPT_NAME_MAX`](crate::GPT_NAME_MAX) UTF-16 units).
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
    /// This plan for a partition that holds `fs`: an MBR's type byte
    /// follows the file system and the partition's extent
    /// ([`mbr_partition_type`](crate::mbr_partition_type)),
    /// as [`plan_table`](crate::plan_table) sets it; an ESP, a placed
    /// partition, a GPT or no table are unchanged. The extent does not depend
    /// on the file system, so a caller can plan the table, then the file
    /// system inside the partition, then say which it is, without planning
    /// the table twice.
    #[must_use]
    pub fn holding(mut self, fs: crate::FsKind) -> TablePlan {
        let (start, blocks) = (self.partition_start_lba(), self.partition_blocks());
        if let (TableSpec::Mbr(mbr), true) = (&mut self.spec, self.type_from_fs) {
            mbr.partition_type = crate::mbr_partition_type(fs, start, blocks);
        }
        self
    }

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

#[cfg(feature = "serde")]
/// The JSON shape of a [`TablePlan`] (one flat object, the shape scripts
/// read: `table.mbr_type`, `table.disk_guid`, ...).
#[cfg_attr(feature = "serde", derive(Serialize))]
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

#[cfg(feature = "serde")]
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
