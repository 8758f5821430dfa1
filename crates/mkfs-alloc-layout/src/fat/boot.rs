//! FAT32 boot sector (BPB) and FSInfo sector.

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// FAT32 boot sector with its BIOS Parameter Block: the first 512 bytes of
/// sector 0 (and of the backup at sector 6).
///
/// Sources: fatgen103 §3.1 "BPB (BIOS Parameter Block)" and §3.3 "FAT32
/// Structure Starting at Offset 36"; reference `on-disk-format.md` B.1.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct BootSector {
    /// `EB 58 90`.
    pub jmp_boot: [u8; 3],
    /// `"MSWIN4.1"`.
    pub oem_name: [u8; 8],
    /// Bytes per sector.
    pub byts_per_sec: U16,
    /// Sectors per cluster, 1..=128.
    pub sec_per_clus: u8,
    /// Reserved sectors before the first FAT.
    pub rsvd_sec_cnt: U16,
    /// Number of FATs (2).
    pub num_fats: u8,
    /// 0 on FAT32.
    pub root_ent_cnt: U16,
    /// 0 on FAT32.
    pub tot_sec16: U16,
    /// Media descriptor, 0xF8.
    pub media: u8,
    /// 0 on FAT32.
    pub fat_sz16: U16,
    /// CHS geometry: sectors per track.
    pub sec_per_trk: U16,
    /// CHS geometry: heads.
    pub num_heads: U16,
    /// Sectors before this volume on the medium (partition start LBA).
    pub hidd_sec: U32,
    /// Total sectors.
    pub tot_sec32: U32,
    /// Sectors per FAT.
    pub fat_sz32: U32,
    /// 0: FATs mirrored.
    pub ext_flags: U16,
    /// Version 0.0.
    pub fs_ver: U16,
    /// First cluster of the root directory (2).
    pub root_clus: U32,
    /// Sector of the FSInfo structure (1).
    pub fs_info: U16,
    /// Sector of the backup boot sector (6).
    pub bk_boot_sec: U16,
    /// Zero.
    pub reserved: [u8; 12],
    /// 0x80.
    pub drv_num: u8,
    /// Zero.
    pub reserved1: u8,
    /// 0x29: the next three fields are present.
    pub boot_sig: u8,
    /// Volume serial number.
    pub vol_id: U32,
    /// Volume label, or `"NO NAME    "`.
    pub vol_lab: [u8; 11],
    /// `"FAT32   "` (informational only).
    pub fil_sys_type: [u8; 8],
    /// Boot code.
    pub boot_code: [u8; 420],
    /// `55 AA`.
    pub signature: U16,
}

/// FSInfo sector (sector 1, backup at 7).
///
/// Sources: fatgen103 §5 "FAT32 FSInfo Sector Structure".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FsInfo {
    /// 0x41615252.
    pub lead_sig: U32,
    /// Zero.
    pub reserved1: [u8; 480],
    /// 0x61417272.
    pub struc_sig: U32,
    /// Free clusters, or 0xFFFFFFFF if unknown.
    pub free_count: U32,
    /// Hint: next free cluster, or 0xFFFFFFFF.
    pub nxt_free: U32,
    /// Zero.
    pub reserved2: [u8; 12],
    /// 0xAA550000.
    pub trail_sig: U32,
}

const _: () = assert!(core::mem::size_of::<BootSector>() == 512);
const _: () = assert!(core::mem::size_of::<FsInfo>() == 512);

/// FSInfo lead signature.
pub const FSINFO_LEAD_SIG: u32 = 0x4161_5252;
/// FSInfo structure signature.
pub const FSINFO_STRUC_SIG: u32 = 0x6141_7272;
/// FSInfo trail signature.
pub const FSINFO_TRAIL_SIG: u32 = 0xAA55_0000;
/// Sector of the backup boot sector.
pub const BACKUP_BOOT_SECTOR: u64 = 6;
/// Sector of the FSInfo structure.
pub const FSINFO_SECTOR: u64 = 1;

/// Boot code placed after the BPB (offset 90): print nothing, halt forever.
/// `FA` CLI, `F4` HLT, `EB FD` JMP back to the HLT.
pub const BOOT_CODE: [u8; 4] = [0xFA, 0xF4, 0xEB, 0xFD];

/// FAT12/FAT16 boot sector: the common BPB and the extended BPB at offset 36.
///
/// Sources: fatgen103 §3.1 "BPB" and §3.2 "Extended BPB for FAT12 and
/// FAT16 volumes"; reference `sd-and-small-fat.md`.
// Interim: moves to the on-disk crate with the other structs.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct BootSector16 {
    /// `EB 3C 90`.
    pub jmp_boot: [u8; 3],
    /// `"MSWIN4.1"`.
    pub oem_name: [u8; 8],
    /// Bytes per sector.
    pub byts_per_sec: U16,
    /// Sectors per cluster, 1..=128.
    pub sec_per_clus: u8,
    /// Reserved sectors before the first FAT (1 unless aligned).
    pub rsvd_sec_cnt: U16,
    /// Number of FATs (2).
    pub num_fats: u8,
    /// Entries of the fixed root directory.
    pub root_ent_cnt: U16,
    /// Total sectors if below 65,536, else 0.
    pub tot_sec16: U16,
    /// Media descriptor, 0xF8.
    pub media: u8,
    /// Sectors per FAT.
    pub fat_sz16: U16,
    /// CHS geometry: sectors per track.
    pub sec_per_trk: U16,
    /// CHS geometry: heads.
    pub num_heads: U16,
    /// Sectors before this volume on the medium (partition start LBA).
    pub hidd_sec: U32,
    /// Total sectors if 65,536 or more, else 0.
    pub tot_sec32: U32,
    /// Drive number, 0x80.
    pub drv_num: u8,
    /// Zero.
    pub reserved1: u8,
    /// 0x29: the next three fields are present.
    pub boot_sig: u8,
    /// Volume serial number.
    pub vol_id: U32,
    /// Volume label, or `"NO NAME    "`.
    pub vol_lab: [u8; 11],
    /// `"FAT12   "` or `"FAT16   "` (informational only).
    pub fil_sys_type: [u8; 8],
    /// Boot code.
    pub boot_code: [u8; 448],
    /// `55 AA`.
    pub signature: U16,
}

const _: () = assert!(core::mem::size_of::<BootSector16>() == 512);
