//! On-disk structures this crate *reads* (for probing). Writing is left to
//! the `mbrman` and `gpt` crates; these structs let the probe decode what any
//! tool wrote, including stale tables.

use std::mem::size_of;

use crc::{Crc, CRC_32_ISO_HDLC};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// GPT header and partition-array checksum: CRC-32 (ISO-HDLC, as zlib).
pub(crate) const GPT_CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// "EFI PART".
pub(crate) const GPT_SIGNATURE: [u8; 8] = *b"EFI PART";

/// 55 AA at byte 510 of a boot sector or MBR.
pub(crate) const BOOT_SIGNATURE: [u8; 2] = [0x55, 0xAA];

/// MBR partition type of a GPT protective partition.
pub(crate) const MBR_TYPE_PROTECTIVE: u8 = 0xEE;

// Sources: UEFI Specification 2.10, 5.2.1 "Legacy Master Boot Record (MBR)",
// table 5.1 (partition record, table 5.2).
/// One MBR partition record.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct MbrEntry {
    /// 0x80 bootable, 0x00 not; anything else is not an MBR.
    pub boot_indicator: u8,
    pub starting_chs: [u8; 3],
    pub os_type: u8,
    pub ending_chs: [u8; 3],
    pub starting_lba: U32,
    pub size_in_lba: U32,
}
const _: () = assert!(size_of::<MbrEntry>() == 16);

// Sources: UEFI Specification 2.10, 5.2.1, table 5.1 "Legacy MBR".
/// Sector 0 of a partitioned disk (the first 512 bytes of LBA 0).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Mbr {
    pub boot_code: [u8; 440],
    pub disk_signature: U32,
    pub unknown: U16,
    pub partitions: [MbrEntry; 4],
    pub signature: [u8; 2],
}
const _: () = assert!(size_of::<Mbr>() == 512);

// Sources: UEFI Specification 2.10, 5.3.2 "GPT Header", table 5.5.
/// A GPT header (the first 92 bytes of its LBA; the rest is reserved, zero).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct GptHeader {
    pub signature: [u8; 8],
    pub revision: U32,
    pub header_size: U32,
    pub header_crc32: U32,
    pub reserved: U32,
    pub my_lba: U64,
    pub alternate_lba: U64,
    pub first_usable_lba: U64,
    pub last_usable_lba: U64,
    /// Mixed-endian GUID.
    pub disk_guid: [u8; 16],
    pub partition_entry_lba: U64,
    pub number_of_partition_entries: U32,
    pub size_of_partition_entry: U32,
    pub partition_entry_array_crc32: U32,
}
const _: () = assert!(size_of::<GptHeader>() == 92);

impl GptHeader {
    /// True when the header CRC matches the first `header_size` bytes of
    /// `sector` (the sector this header was read from).
    pub(crate) fn crc_ok(&self, sector: &[u8]) -> bool {
        let Ok(size) = usize::try_from(self.header_size.get()) else {
            return false;
        };
        if size < size_of::<GptHeader>() || size > sector.len() {
            return false;
        }
        let mut digest = GPT_CRC.digest();
        digest.update(&sector[..16]);
        digest.update(&[0; 4]);
        digest.update(&sector[20..size]);
        digest.finalize() == self.header_crc32.get()
    }
}

// Sources: UEFI Specification 2.10, 5.3.3 "GPT Partition Entry Array", table 5.6.
/// One GPT partition entry (128 bytes in every table this crate meets).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct GptEntry {
    /// Mixed-endian GUID; all zero for an unused entry.
    pub partition_type_guid: [u8; 16],
    pub unique_partition_guid: [u8; 16],
    pub starting_lba: U64,
    pub ending_lba: U64,
    pub attributes: U64,
    /// UTF-16LE, NUL-padded.
    pub partition_name: [U16; 36],
}
const _: () = assert!(size_of::<GptEntry>() == 128);

impl GptEntry {
    /// The name up to the first NUL, lossily decoded.
    pub(crate) fn name(&self) -> String {
        let units: Vec<u16> = self
            .partition_name
            .iter()
            .map(|u| u.get())
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
    }
}
