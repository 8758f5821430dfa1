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

/// The CHS address of `lba` in a geometry of `heads` heads and `sectors`
/// sectors per track, as fdisk (libfdisk's `long2chs`) writes it: the exact
/// address up to cylinder 1023, else the largest one (cylinder 1023, the
/// last head and sector: "use the LBA"). Bytes: head, sector with the
/// cylinder's two high bits, the cylinder's low byte.
///
/// Sources: UEFI Specification 2.10, table 5.2 (StartingCHS, EndingCHS).
pub fn chs_address(lba: u32, heads: u8, sectors: u8) -> [u8; 3] {
    let (h, s) = (u32::from(heads.max(1)), u32::from(sectors.max(1)));
    let cylinder = lba / (h * s);
    let (cylinder, head, sector) = if cylinder > 1023 {
        (1023, h - 1, s)
    } else {
        (cylinder, (lba % (h * s)) / s, lba % s + 1)
    };
    [
        head as u8,
        (sector as u8 & 0x3F) | (((cylinder >> 8) as u8 & 0x03) << 6),
        cylinder as u8,
    ]
}

impl Mbr {
    /// An MBR with one partition, not bootable, of type `os_type`, from LBA
    /// `start` for `sectors` sectors, its CHS addresses in `geometry`
    /// (heads, sectors per track); no boot code.
    pub fn one_partition(
        disk_signature: u32,
        os_type: u8,
        start: u32,
        sectors: u32,
        geometry: (u8, u8),
    ) -> Mbr {
        use zerocopy::FromZeros;
        let mut mbr = Mbr::new_zeroed();
        mbr.disk_signature = disk_signature.into();
        let last = start.saturating_add(sectors.saturating_sub(1));
        mbr.partitions[0] = MbrEntry {
            boot_indicator: 0,
            starting_chs: chs_address(start, geometry.0, geometry.1),
            os_type,
            ending_chs: chs_address(last, geometry.0, geometry.1),
            starting_lba: start.into(),
            size_in_lba: sectors.into(),
        };
        mbr.signature = BOOT_SIGNATURE;
        mbr
    }
}

#[cfg(test)]
mod chs_tests {
    use super::*;

    #[test]
    fn chs_as_fdisk_writes_it() {
        // LBA 2048 in 255/63: cylinder 0, head 32, sector 33.
        assert_eq!(chs_address(2048, 255, 63), [32, 33, 0]);
        // LBA 0: 0/0/1.
        assert_eq!(chs_address(0, 255, 63), [0, 1, 0]);
        // Cylinder 1000: the high bits go into the sector byte.
        let lba = 1000 * 255 * 63 + 5;
        assert_eq!(chs_address(lba, 255, 63), [0, 6 | (3 << 6), 1000u32 as u8]);
        // Beyond cylinder 1023: the largest address.
        assert_eq!(chs_address(u32::MAX, 255, 63), [254, 63 | (3 << 6), 0xFF]);
    }

    #[test]
    fn partition_types_by_file_system_size_and_end() {
        // 1024 cylinders x 255 heads x 63 sectors (UEFI table 5.2's CHS).
        let chs_end = 16_450_560;
        assert_eq!(CHS_LIMIT_SECTORS, chs_end);
        for (fs, start, sectors, want) in [
            (FsKind::Exfat, 2048, 1 << 30, 0x07),
            (FsKind::Fat32, 2048, 1 << 20, 0x0C),
            (FsKind::Fat12, 1, 4000, 0x01),
            (FsKind::Fat16, 2048, 65_535, 0x04),
            (FsKind::Fat16, 2048, 65_536, 0x06),
            (FsKind::Fat16, 2048, chs_end - 2048, 0x06),
            (FsKind::Fat16, 2048, chs_end - 2047, 0x0E),
            (FsKind::Fat16, chs_end, 4000, 0x0E),
        ] {
            let got = partition_type(fs, start, sectors);
            assert_eq!(got, want, "{fs} from {start} for {sectors}");
        }
    }
}
