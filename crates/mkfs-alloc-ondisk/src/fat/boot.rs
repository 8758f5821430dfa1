//! FAT boot sector: the common BPB, the FAT12/16 and FAT32 extended BPBs,
//! and FSInfo.

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The BIOS Parameter Block common to FAT12, FAT16 and FAT32: bytes 0..36
/// of the boot sector.
///
/// Sources: fatgen103 §3.1 "Boot Sector and BPB", "BPB (BIOS Parameter
/// Block)" table.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Bpb {
    /// `EB 58 90` (FAT32) or `EB 3C 90` (FAT12/16).
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
    /// Root directory entries on FAT12/16 (512 typical); 0 on FAT32.
    pub root_ent_cnt: U16,
    /// Total sectors if below 0x10000 (FAT12/16), else 0; 0 on FAT32.
    pub tot_sec16: U16,
    /// Media descriptor, 0xF8.
    pub media: u8,
    /// Sectors per FAT on FAT12/16; 0 on FAT32.
    pub fat_sz16: U16,
    /// CHS geometry: sectors per track.
    pub sec_per_trk: U16,
    /// CHS geometry: heads.
    pub num_heads: U16,
    /// Sectors before this volume on the medium (partition start LBA).
    pub hidd_sec: U32,
    /// Total sectors when `tot_sec16` is 0.
    pub tot_sec32: U32,
}

const _: () = assert!(core::mem::size_of::<Bpb>() == 36);

/// The FAT12/FAT16 extended BPB: bytes 36..62 of the boot sector.
///
/// Sources: fatgen103 §3.2 "Fat12 and Fat16 Structure Starting at Offset 36".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Fat16Ebpb {
    /// 0x80 (hard disk) or 0x00 (floppy).
    pub drv_num: u8,
    /// Zero.
    pub reserved1: u8,
    /// [`EXTENDED_BOOT_SIG`]: the next three fields are present.
    pub boot_sig: u8,
    /// Volume serial number.
    pub vol_id: U32,
    /// Volume label, or [`NO_NAME`].
    pub vol_lab: [u8; 11],
    /// `"FAT12   "` or `"FAT16   "` (informational only).
    pub fil_sys_type: [u8; 8],
}

const _: () = assert!(core::mem::size_of::<Fat16Ebpb>() == 26);

/// The FAT32 extended BPB: bytes 36..90 of the boot sector.
///
/// Sources: fatgen103 §3.3 "FAT32 Structure Starting at Offset 36".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Fat32Ebpb {
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
    /// [`EXTENDED_BOOT_SIG`]: the next three fields are present.
    pub boot_sig: u8,
    /// Volume serial number.
    pub vol_id: U32,
    /// Volume label, or [`NO_NAME`].
    pub vol_lab: [u8; 11],
    /// `"FAT32   "` (informational only).
    pub fil_sys_type: [u8; 8],
}

const _: () = assert!(core::mem::size_of::<Fat32Ebpb>() == 54);

/// A FAT12/FAT16 boot sector: the first 512 bytes of sector 0.
///
/// Sources: fatgen103 §3.1 and §3.2.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Fat16BootSector {
    /// Common BPB.
    pub bpb: Bpb,
    /// FAT12/16 extended BPB.
    pub ebpb: Fat16Ebpb,
    /// Boot code.
    pub boot_code: [u8; 448],
    /// `55 AA`.
    pub signature: U16,
}

const _: () = assert!(core::mem::size_of::<Fat16BootSector>() == 512);

/// A FAT32 boot sector: the first 512 bytes of sector 0 (and of the backup
/// at sector 6).
///
/// Sources: fatgen103 §3.1 and §3.3.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Fat32BootSector {
    /// Common BPB.
    pub bpb: Bpb,
    /// FAT32 extended BPB.
    pub ebpb: Fat32Ebpb,
    /// Boot code.
    pub boot_code: [u8; 420],
    /// `55 AA`.
    pub signature: U16,
}

const _: () = assert!(core::mem::size_of::<Fat32BootSector>() == 512);

/// FSInfo sector (sector 1, backup at 7).
///
/// Sources: fatgen103 §5 "FAT32 FSInfo Sector Structure".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FsInfo {
    /// [`FSINFO_LEAD_SIG`].
    pub lead_sig: U32,
    /// Zero.
    pub reserved1: [u8; 480],
    /// [`FSINFO_STRUC_SIG`].
    pub struc_sig: U32,
    /// Free clusters, or 0xFFFFFFFF if unknown.
    pub free_count: U32,
    /// Hint: next free cluster, or 0xFFFFFFFF.
    pub nxt_free: U32,
    /// Zero.
    pub reserved2: [u8; 12],
    /// [`FSINFO_TRAIL_SIG`].
    pub trail_sig: U32,
}

const _: () = assert!(core::mem::size_of::<FsInfo>() == 512);

/// The boot signature word at byte 510 (`55 AA`).
pub const BOOT_SIGNATURE_WORD: u16 = 0xAA55;
/// `BS_BootSig` / `BS_BootSig` of FAT32: the serial, label and type follow.
pub const EXTENDED_BOOT_SIG: u8 = 0x29;
/// Volume label of a volume without one.
pub const NO_NAME: [u8; 11] = *b"NO NAME    ";
/// FSInfo lead signature.
pub const FSINFO_LEAD_SIG: u32 = 0x4161_5252;
/// FSInfo structure signature.
pub const FSINFO_STRUC_SIG: u32 = 0x6141_7272;
/// FSInfo trail signature.
pub const FSINFO_TRAIL_SIG: u32 = 0xAA55_0000;
/// Sector of the FAT32 backup boot sector.
pub const BACKUP_BOOT_SECTOR: u64 = 6;
/// Sector of the FAT32 FSInfo structure.
pub const FSINFO_SECTOR: u64 = 1;

/// Boot code placed after the BPB (offset 90 on FAT32, 62 on FAT12/16):
/// print nothing, halt forever. `FA` CLI, `F4` HLT, `EB FD` JMP back to the
/// HLT.
pub const BOOT_CODE: [u8; 4] = [0xFA, 0xF4, 0xEB, 0xFD];
