//! exFAT boot region: boot sector, OEM parameters, boot checksum.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The main (and backup) boot sector: the first 512 bytes of sector 0 (12).
///
/// Sources: exFAT specification §3.1, Table 3 "Main and Backup Boot Sector
/// Structure".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct BootSector {
    /// `EB 76 90`.
    pub jump_boot: [u8; 3],
    /// `"EXFAT   "`.
    pub file_system_name: [u8; 8],
    /// Must be zero (overlaps the FAT BPB so FAT drivers reject the volume).
    pub must_be_zero: [u8; 53],
    /// Partition start in sectors from the start of the medium.
    pub partition_offset: U64,
    /// Volume length in sectors.
    pub volume_length: U64,
    /// First FAT, in sectors from the volume start.
    pub fat_offset: U32,
    /// Length of one FAT in sectors.
    pub fat_length: U32,
    /// Cluster heap start, in sectors from the volume start.
    pub cluster_heap_offset: U32,
    /// Number of clusters in the heap.
    pub cluster_count: U32,
    /// First cluster of the root directory.
    pub first_cluster_of_root_directory: U32,
    /// Volume serial number.
    pub volume_serial_number: U32,
    /// Revision 1.00: bytes `00 01`.
    pub file_system_revision: U16,
    /// ActiveFat, VolumeDirty, MediaFailure, ClearToZero ([`volume_flags`]).
    pub volume_flags: U16,
    /// log2 of the sector size (9..=12).
    pub bytes_per_sector_shift: u8,
    /// log2 of sectors per cluster.
    pub sectors_per_cluster_shift: u8,
    /// 1.
    pub number_of_fats: u8,
    /// 0x80.
    pub drive_select: u8,
    /// Percentage of clusters in use, rounded down.
    pub percent_in_use: u8,
    /// Zero.
    pub reserved: [u8; 7],
    /// Boot code; `F4` (HLT) fill when there is none.
    pub boot_code: [u8; 390],
    /// `55 AA`.
    pub boot_signature: U16,
}

const _: () = assert!(core::mem::size_of::<BootSector>() == 512);

/// Bits of [`BootSector::volume_flags`].
///
/// Sources: exFAT specification §3.1.13, Table 5.
pub mod volume_flags {
    /// Which FAT and bitmap are active (0 = first).
    pub const ACTIVE_FAT: u16 = 0x0001;
    /// The volume may be inconsistent.
    pub const VOLUME_DIRTY: u16 = 0x0002;
    /// The medium reported failures.
    pub const MEDIA_FAILURE: u16 = 0x0004;
    /// No meaning (clear to zero).
    pub const CLEAR_TO_ZERO: u16 = 0x0008;
}

/// `"EXFAT   "`: [`BootSector::file_system_name`].
pub const FILE_SYSTEM_NAME: [u8; 8] = *b"EXFAT   ";

/// `EB 76 90`: [`BootSector::jump_boot`].
pub const JUMP_BOOT: [u8; 3] = [0xEB, 0x76, 0x90];

/// Byte offsets within sector 0 that the boot checksum skips (VolumeFlags,
/// PercentInUse). Sources: exFAT specification §3.4, Figure 1.
pub const CHECKSUM_SKIPPED: [usize; 3] = [106, 107, 112];

/// Number of sectors in one boot region (boot, 8 extended, OEM, reserved, checksum).
pub const BOOT_REGION_SECTORS: u64 = 12;

/// Sector of the OEM Parameters within a boot region.
pub const OEM_PARAMETERS_SECTOR: u64 = 9;

/// Sector of the boot checksum within a boot region.
pub const BOOT_CHECKSUM_SECTOR: u64 = 11;

/// Signature at the end of every extended boot sector (`00 00 55 AA`).
pub const EXTENDED_BOOT_SIGNATURE: u32 = 0xAA55_0000;

/// Writes [`EXTENDED_BOOT_SIGNATURE`] into the last 4 bytes of an extended
/// boot sector (exFAT specification §3.2.1).
pub fn sign_extended_boot_sector(sector: &mut [u8]) {
    if let Some(at) = sector.len().checked_sub(4) {
        sector[at..].copy_from_slice(&EXTENDED_BOOT_SIGNATURE.to_le_bytes());
    }
}

/// Fills the boot checksum sector (sector 11 of a boot region) with `sum`,
/// repeated (exFAT specification §3.4).
pub fn fill_checksum_sector(sector: &mut [u8], sum: u32) {
    for word in sector.chunks_exact_mut(4) {
        word.copy_from_slice(&sum.to_le_bytes());
    }
}

/// The checksum stored first in a boot checksum sector.
pub fn stored_checksum(sector: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(*sector.first_chunk::<4>()?))
}

/// Boot checksum over sectors 0..=10 of a boot region (`region` is 11 sectors
/// at the real sector size), skipping VolumeFlags and PercentInUse.
///
/// Sources: exFAT specification §3.4.
pub fn boot_checksum(region: &[u8]) -> u32 {
    boot_checksum_continue(0, 0, region)
}

/// [`boot_checksum`] taken piece by piece: continues `sum` over `bytes`,
/// which start `at` bytes into the region (so a writer with one sector of
/// memory can checksum the region a sector at a time).
pub fn boot_checksum_continue(sum: u32, at: usize, bytes: &[u8]) -> u32 {
    bytes.iter().enumerate().fold(sum, |c, (i, &b)| {
        if CHECKSUM_SKIPPED.contains(&(at + i)) {
            c
        } else {
            c.rotate_right(1).wrapping_add(u32::from(b))
        }
    })
}

impl BootSector {
    /// Byte offset of the root directory from the volume start, from
    /// ClusterHeapOffset, FirstClusterOfRootDirectory and the two shifts;
    /// `None` when the fields are out of range (shifts beyond the spec,
    /// cluster below 2) or the offset overflows.
    ///
    /// Sources: exFAT specification §3.1.8, §3.1.11, §3.1.14, §3.1.15.
    pub fn root_directory_offset(&self) -> Option<u64> {
        let bps_shift = u32::from(self.bytes_per_sector_shift);
        let spc_shift = u32::from(self.sectors_per_cluster_shift);
        let cluster = u64::from(self.first_cluster_of_root_directory.get());
        if !(9..=12).contains(&bps_shift) || spc_shift > 25 - bps_shift || cluster < 2 {
            return None;
        }
        let heap = u64::from(self.cluster_heap_offset.get()).checked_shl(bps_shift)?;
        heap.checked_add((cluster - 2).checked_shl(bps_shift + spc_shift)?)
    }
}

/// One 48-byte record of the OEM Parameters sector, generic form: a GUID
/// naming the record type and 32 bytes it defines. An all-zero GUID is a
/// Null Parameters record (unused).
///
/// Sources: exFAT specification §3.3.2, Table 8 "Generic Parameters Template".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GenericParameters {
    /// Record type; all zero for a Null Parameters record.
    pub parameters_guid: [u8; 16],
    /// Defined by the record type.
    pub custom_defined: [u8; 32],
}

const _: () = assert!(core::mem::size_of::<GenericParameters>() == 48);

/// The Flash Parameters record of the OEM Parameters sector (the SD
/// Association layout writes one, EraseBlockSize = BU/2 and the other
/// fields zero, as sdFormatLinux writes it for SD Card Formatter's layout:
/// <https://github.com/profi200/sdFormatLinux>, `source/exfat.cpp`).
///
/// Sources: exFAT specification §3.3.4, Table 10 "Flash Parameters".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FlashParameters {
    /// [`FLASH_PARAMETERS_GUID`].
    pub parameters_guid: [u8; 16],
    /// Erase block size in bytes.
    pub erase_block_size: U32,
    /// Page size in bytes.
    pub page_size: U32,
    /// Number of spare sectors.
    pub spare_sectors: U32,
    /// Random access time in nanoseconds.
    pub random_access_time: U32,
    /// Programming time in nanoseconds.
    pub programming_time: U32,
    /// Read cycle time in nanoseconds.
    pub read_cycle: U32,
    /// Write cycle time in nanoseconds.
    pub write_cycle: U32,
    /// Zero.
    pub reserved: [u8; 4],
}

const _: () = assert!(core::mem::size_of::<FlashParameters>() == 48);

/// GUID `0A0C7E46-3399-4021-90C8-FA6D389C4BA2` of the Flash Parameters
/// record, in its on-disk (mixed-endian) byte order.
///
/// Sources: exFAT specification §3.3.4, Table 10 (ParametersGuid).
pub const FLASH_PARAMETERS_GUID: [u8; 16] = [
    0x46, 0x7E, 0x0C, 0x0A, 0x99, 0x33, 0x21, 0x40, 0x90, 0xC8, 0xFA, 0x6D, 0x38, 0x9C, 0x4B, 0xA2,
];

/// The first 512 bytes of the OEM Parameters sector (sector 9 of a boot
/// region): ten parameter records and a reserved tail. Bytes past 512 of a
/// larger sector are reserved (zero).
///
/// Sources: exFAT specification §3.3, Table 7 "OEM Parameters Structure".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct OemParameters {
    /// Ten records ([`GenericParameters`]; a [`FlashParameters`] record
    /// reads from one with `FlashParameters::read_from_bytes`).
    pub parameters: [GenericParameters; 10],
    /// Zero.
    pub reserved: [u8; 32],
}

const _: () = assert!(core::mem::size_of::<OemParameters>() == 512);

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn checksum_is_rotate_add_with_skips() {
        let mut region = vec![0u8; 11 * 512];
        assert_eq!(boot_checksum(&region), 0);
        region[0] = 1;
        assert_eq!(boot_checksum(&region), 1u32.rotate_right(11 * 512 - 1 - 3));
        // Skipped bytes do not change the checksum.
        let before = boot_checksum(&region);
        region[106] = 0xFF;
        region[107] = 0xFF;
        region[112] = 0x55;
        assert_eq!(boot_checksum(&region), before);
        region[111] = 1;
        assert_ne!(boot_checksum(&region), before);
    }

    #[test]
    fn checksum_matches_the_spec_formula() {
        // Figure 1 of the spec, written out: the same as checksum32 with skips.
        fn reference(bytes: &[u8]) -> u32 {
            let mut c: u32 = 0;
            for (i, &b) in bytes.iter().enumerate() {
                if i == 106 || i == 107 || i == 112 {
                    continue;
                }
                c = (if c & 1 != 0 { 0x8000_0000u32 } else { 0 })
                    .wrapping_add(c >> 1)
                    .wrapping_add(u32::from(b));
            }
            c
        }
        let region: alloc::vec::Vec<u8> = (0..11 * 512u32).map(|i| (i * 7 + 3) as u8).collect();
        assert_eq!(boot_checksum(&region), reference(&region));
    }

    #[test]
    fn checksum_in_pieces_and_as_stored() {
        let region: alloc::vec::Vec<u8> = (0..11 * 512u32).map(|i| (i * 13 + 1) as u8).collect();
        let whole = boot_checksum(&region);
        // A sector at a time, as the firmware writer takes it.
        let pieces = region
            .chunks(512)
            .enumerate()
            .fold(0, |sum, (i, s)| boot_checksum_continue(sum, i * 512, s));
        assert_eq!(pieces, whole);
        let mut sector = vec![0u8; 512];
        fill_checksum_sector(&mut sector, 0x1234_5678);
        assert_eq!(&sector[508..], &[0x78, 0x56, 0x34, 0x12]);
        assert_eq!(stored_checksum(&sector), Some(0x1234_5678));
        assert_eq!(stored_checksum(&sector[..3]), None);
    }

    #[test]
    fn root_directory_offset_from_the_boot_fields() {
        use zerocopy::FromZeros;
        // §3.1: heap at sector 2048 of 512 bytes, 4 KiB clusters (shifts
        // 9 and 3), root in cluster 5: 2048 * 512 + (5 - 2) * 4096.
        let mut b = BootSector::new_zeroed();
        b.bytes_per_sector_shift = 9;
        b.sectors_per_cluster_shift = 3;
        b.cluster_heap_offset = 2048.into();
        b.first_cluster_of_root_directory = 5.into();
        assert_eq!(b.root_directory_offset(), Some(2048 * 512 + 3 * 4096));
        // The largest cluster the spec allows: 32 MiB (shifts adding to 25).
        b.sectors_per_cluster_shift = 16;
        assert_eq!(b.root_directory_offset(), Some(2048 * 512 + (3 << 25)));
        b.sectors_per_cluster_shift = 17;
        assert_eq!(b.root_directory_offset(), None, "clusters beyond 32 MiB");
        b.sectors_per_cluster_shift = 0;
        b.bytes_per_sector_shift = 12;
        assert_eq!(b.root_directory_offset(), Some(2048 * 4096 + 3 * 4096));
        b.bytes_per_sector_shift = 13;
        assert_eq!(b.root_directory_offset(), None, "sectors beyond 4 KiB");
        b.bytes_per_sector_shift = 9;
        b.first_cluster_of_root_directory = 2.into();
        assert_eq!(b.root_directory_offset(), Some(2048 * 512));
        b.first_cluster_of_root_directory = 1.into();
        assert_eq!(b.root_directory_offset(), None, "no cluster 1");
    }

    #[test]
    fn flash_parameters_guid_is_mixed_endian() {
        // 0A0C7E46-3399-4021-90C8-FA6D389C4BA2: the first three groups
        // little-endian, the last two as written.
        assert_eq!(FLASH_PARAMETERS_GUID[..4], 0x0A0C_7E46u32.to_le_bytes());
        assert_eq!(FLASH_PARAMETERS_GUID[4..6], 0x3399u16.to_le_bytes());
        assert_eq!(FLASH_PARAMETERS_GUID[6..8], 0x4021u16.to_le_bytes());
        assert_eq!(
            FLASH_PARAMETERS_GUID[8..],
            [0x90, 0xC8, 0xFA, 0x6D, 0x38, 0x9C, 0x4B, 0xA2]
        );
    }
}
