//! exFAT boot region: boot sector, extended boot sectors, checksum sector.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The main (and backup) boot sector: the first 512 bytes of sector 0 (12).
///
/// Sources: exFAT specification §3.1, Table 3 "Main and Backup Boot Sector
/// Structure"; reference `on-disk-format.md` A.1.
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
    /// ActiveFat, VolumeDirty, MediaFailure, ClearToZero.
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

/// Byte offsets within sector 0 that the boot checksum skips (VolumeFlags,
/// PercentInUse). Sources: exFAT specification §3.4, Figure 1.
pub const CHECKSUM_SKIPPED: [usize; 3] = [106, 107, 112];

/// Number of sectors in one boot region (boot, 8 extended, OEM, reserved, checksum).
pub const BOOT_REGION_SECTORS: u64 = 12;

/// Signature at the end of every extended boot sector (`00 00 55 AA`).
pub const EXTENDED_BOOT_SIGNATURE: u32 = 0xAA55_0000;

/// Boot checksum over sectors 0..=10 of a boot region (`region` is 11 sectors
/// at the real sector size), skipping VolumeFlags and PercentInUse.
///
/// Sources: exFAT specification §3.4.
pub fn boot_checksum(region: &[u8]) -> u32 {
    region.iter().enumerate().fold(0u32, |c, (i, &b)| {
        if CHECKSUM_SKIPPED.contains(&i) {
            c
        } else {
            c.rotate_right(1).wrapping_add(u32::from(b))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
