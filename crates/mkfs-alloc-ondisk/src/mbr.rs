//! The MBR (sector 0 of a partitioned disk) and its partition records.
//!
//! Sources: UEFI Specification 2.10, 5.2.1 "Legacy Master Boot Record
//! (MBR)", tables 5.1 and 5.2 (<https://uefi.org/specifications>).

use core::mem::size_of;

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

pub use crate::BOOT_SIGNATURE;

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
const _: () = assert!(core::mem::offset_of!(Mbr, partitions) == MBR_ENTRIES_OFFSET);
