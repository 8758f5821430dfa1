//! The MBR (sector 0 of a partitioned disk) and its partition records.
//!
//! Sources: UEFI Specification 2.10, 5.2.1 "Legacy Master Boot Record
//! (MBR)", tables 5.1 and 5.2 (<https://uefi.org/specifications>).

use core::mem::size_of;

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::FsKind;
pub use crate::BOOT_SIGNATURE;

/// MBR partition type of a GPT protective partition.
pub const MBR_TYPE_PROTECTIVE: u8 = 0xEE;
/// MBR partition type of FAT12.
pub const MBR_TYPE_FAT12: u8 = 0x01;
/// MBR partition type of FAT16 below 65,536 sectors.
pub const MBR_TYPE_FAT16_SMALL: u8 = 0x04;
/// MBR partition type of FAT16 within CHS reach.
pub const MBR_TYPE_FAT16: u8 = 0x06;
/// MBR partition type of exFAT (shared with NTFS and HPFS).
pub const MBR_TYPE_EXFAT: u8 = 0x07;
/// MBR partition type of FAT32 addressed by CHS.
pub const MBR_TYPE_FAT32_CHS: u8 = 0x0B;
/// MBR partition type of FAT32 with LBA addressing.
pub const MBR_TYPE_FAT32_LBA: u8 = 0x0C;
/// MBR partition type of FAT16 with LBA addressing.
pub const MBR_TYPE_FAT16_LBA: u8 = 0x0E;
/// MBR partition type of an EFI System Partition.
pub const MBR_TYPE_ESP: u8 = 0xEF;
/// MBR partition types of extended partitions (DOS, Windows LBA, Linux):
/// they hold EBRs, not volumes.
pub const MBR_TYPES_EXTENDED: [u8; 3] = [0x05, 0x0F, 0x85];

/// Sectors CHS can address with 255 heads and 63 sectors per track
/// (1024 cylinders): partitions ending beyond need an LBA type.
pub const CHS_LIMIT_SECTORS: u64 = 1024 * 255 * 63;

/// The MBR partition type byte of a `fs` partition of `sectors` sectors
/// starting at LBA `start`: exFAT 0x07, FAT32 0x0C (LBA), FAT12 0x01, FAT16
/// 0x04 below 65,536 sectors, 0x0E when it ends beyond
/// [`CHS_LIMIT_SECTORS`], else 0x06 (DOS's rule, and the SD specification's
/// for FAT12/16).
pub fn partition_type(fs: FsKind, start: u64, sectors: u64) -> u8 {
    match fs {
        FsKind::Exfat => MBR_TYPE_EXFAT,
        FsKind::Fat32 => MBR_TYPE_FAT32_LBA,
        FsKind::Fat12 => MBR_TYPE_FAT12,
        FsKind::Fat16 if start.saturating_add(sectors) > CHS_LIMIT_SECTORS => MBR_TYPE_FAT16_LBA,
        FsKind::Fat16 if sectors < 65_536 => MBR_TYPE_FAT16_SMALL,
        FsKind::Fat16 => MBR_TYPE_FAT16,
    }
}

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
