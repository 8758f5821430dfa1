//! On-disk structures of MBR and GPT, for *reading* tables (probing here,
//! `info` in `mkfs-alloc-inspect`). Writing is left to the `mbrman` and `gpt`
//! crates; these structs decode what any tool wrote, including stale tables.
//!
//! Every struct is `#[repr(C)]`, `zerocopy`, of `u8` arrays and
//! little-endian integers (alignment 1), so any byte slice of the right
//! length reads as one with `FromBytes::read_from_prefix`.

use std::mem::size_of;

use crc::{Crc, CRC_32_ISO_HDLC};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// GPT header and partition-array checksum: CRC-32 (ISO-HDLC, as zlib).
pub const GPT_CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// "EFI PART".
pub const GPT_SIGNATURE: [u8; 8] = *b"EFI PART";

/// 55 AA at byte 510 of a boot sector or MBR.
pub const BOOT_SIGNATURE: [u8; 2] = [0x55, 0xAA];

/// MBR partition type of a GPT protective partition.
pub const MBR_TYPE_PROTECTIVE: u8 = 0xEE;

/// Byte offset of the four partition records in an MBR.
pub const MBR_ENTRIES_OFFSET: usize = 0x1BE;

// Sources: UEFI Specification 2.10, 5.2.1 "Legacy Master Boot Record (MBR)",
// table 5.1 (partition record, table 5.2).
/// One MBR partition record.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MbrEntry {
    /// 0x80 bootable, 0x00 not; anything else is not an MBR.
    pub boot_indicator: u8,
    /// CHS address of the first sector.
    pub starting_chs: [u8; 3],
    /// Partition type.
    pub os_type: u8,
    /// CHS address of the last sector.
    pub ending_chs: [u8; 3],
    /// First LBA.
    pub starting_lba: U32,
    /// Number of sectors.
    pub size_in_lba: U32,
}
const _: () = assert!(size_of::<MbrEntry>() == 16);

// Sources: UEFI Specification 2.10, 5.2.1, table 5.1 "Legacy MBR".
/// Sector 0 of a partitioned disk (the first 512 bytes of LBA 0).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Mbr {
    /// Boot code (ignored by UEFI).
    pub boot_code: [u8; 440],
    /// Unique MBR disk signature.
    pub disk_signature: U32,
    /// Unknown (zero).
    pub unknown: U16,
    /// The four partition records, at [`MBR_ENTRIES_OFFSET`].
    pub partitions: [MbrEntry; 4],
    /// [`BOOT_SIGNATURE`].
    pub signature: [u8; 2],
}
const _: () = assert!(size_of::<Mbr>() == 512);
const _: () = assert!(std::mem::offset_of!(Mbr, partitions) == MBR_ENTRIES_OFFSET);

// Sources: UEFI Specification 2.10, 5.3.2 "GPT Header", table 5.5.
/// A GPT header (the first 92 bytes of its LBA; the rest is reserved, zero).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GptHeader {
    /// [`GPT_SIGNATURE`].
    pub signature: [u8; 8],
    /// 0x00010000.
    pub revision: U32,
    /// 92 ..= block size.
    pub header_size: U32,
    /// CRC32 of the header with this field zero.
    pub header_crc32: U32,
    /// Zero.
    pub reserved: U32,
    /// LBA of this header.
    pub my_lba: U64,
    /// LBA of the other header.
    pub alternate_lba: U64,
    /// First usable LBA.
    pub first_usable_lba: U64,
    /// Last usable LBA.
    pub last_usable_lba: U64,
    /// Mixed-endian GUID.
    pub disk_guid: [u8; 16],
    /// First LBA of the entry array.
    pub partition_entry_lba: U64,
    /// Number of entries.
    pub number_of_partition_entries: U32,
    /// Size of one entry: 128 × 2^n.
    pub size_of_partition_entry: U32,
    /// CRC32 of the entry array.
    pub partition_entry_array_crc32: U32,
}
const _: () = assert!(size_of::<GptHeader>() == 92);

impl GptHeader {
    /// The CRC32 of the first `header_size` bytes of `sector` (the sector
    /// this header was read from) with the CRC field taken as zero; `None`
    /// when `header_size` is below 92 or beyond the sector.
    pub fn computed_crc32(&self, sector: &[u8]) -> Option<u32> {
        let size = usize::try_from(self.header_size.get()).ok()?;
        if size < size_of::<GptHeader>() || size > sector.len() {
            return None;
        }
        let mut digest = GPT_CRC.digest();
        digest.update(&sector[..16]);
        digest.update(&[0; 4]);
        digest.update(&sector[20..size]);
        Some(digest.finalize())
    }

    /// True when the header CRC matches the first `header_size` bytes of
    /// `sector` (the sector this header was read from).
    pub fn crc_ok(&self, sector: &[u8]) -> bool {
        self.computed_crc32(sector) == Some(self.header_crc32.get())
    }
}

// Sources: UEFI Specification 2.10, 5.3.3 "GPT Partition Entry Array", table 5.6.
/// One GPT partition entry (the first 128 bytes of each slot).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GptEntry {
    /// Mixed-endian type GUID; all zero for an unused entry.
    pub partition_type_guid: [u8; 16],
    /// Mixed-endian unique GUID.
    pub unique_partition_guid: [u8; 16],
    /// First LBA.
    pub starting_lba: U64,
    /// Last LBA (inclusive).
    pub ending_lba: U64,
    /// Attribute bits.
    pub attributes: U64,
    /// UTF-16LE, NUL-padded.
    pub partition_name: [U16; 36],
}
const _: () = assert!(size_of::<GptEntry>() == 128);

impl GptEntry {
    /// The name up to the first NUL, lossily decoded.
    pub fn name(&self) -> String {
        let units: Vec<u16> = self
            .partition_name
            .iter()
            .map(|u| u.get())
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
    }
}
