//! The signature blocks of file systems we do not write but recognise (so
//! that a format can name what it overwrites): the first fields of each, up
//! to its label, as zerocopy tables. Fields the prober does not read are
//! `_`-named byte arrays.
//!
//! Sources: util-linux libblkid (`superblocks/ntfs.c`, `ext.c`, `xfs.c`,
//! `btrfs.c`, `iso9660.c`, `swap.c`, `luks.c`, `squashfs.c`, `hfs.c`,
//! `f2fs.c`); ext4 wiki "Super Block"; ECMA-119 §8.4; Linux
//! `include/linux/swap.h` (`union swap_header`).

use core::mem::size_of;

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The OEM ID of an NTFS boot sector (bytes 3..11).
pub const NTFS_OEM_ID: [u8; 8] = *b"NTFS    ";

/// The first 80 bytes of an NTFS boot sector.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct NtfsBootSector {
    /// Jump instruction.
    pub jump: [u8; 3],
    /// [`NTFS_OEM_ID`].
    pub oem_id: [u8; 8],
    /// The BPB and extended BPB up to the serial (not read).
    pub _bpb: [u8; 61],
    /// Volume serial number (offset 72).
    pub volume_serial_number: U64,
}
const _: () = assert!(size_of::<NtfsBootSector>() == 80);

/// Byte offset of the ext2/3/4 superblock in its volume.
pub const EXT_SUPERBLOCK_OFFSET: usize = 1024;
/// `s_magic` of an ext2/3/4 superblock.
pub const EXT_MAGIC: u16 = 0xEF53;

/// The first 136 bytes of an ext2/3/4 superblock (at
/// [`EXT_SUPERBLOCK_OFFSET`]).
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ExtSuperblock {
    /// `s_inodes_count` .. `s_first_data_block` (not read).
    pub _counts: [u8; 24],
    /// `s_log_block_size`: block size is 1024 << this (at most 6).
    pub log_block_size: U32,
    /// `s_log_cluster_size` .. `s_wtime` etc. (not read).
    pub _times: [u8; 28],
    /// `s_magic` ([`EXT_MAGIC`], offset 56).
    pub magic: zerocopy::little_endian::U16,
    /// `s_state` .. `s_feature_compat` (not read).
    pub _state: [u8; 34],
    /// `s_feature_compat` (offset 92).
    pub feature_compat: U32,
    /// `s_feature_incompat` (offset 96).
    pub feature_incompat: U32,
    /// `s_feature_ro_compat` (offset 100).
    pub feature_ro_compat: U32,
    /// `s_uuid` (offset 104).
    pub uuid: [u8; 16],
    /// `s_volume_name` (offset 120).
    pub volume_name: [u8; 16],
}
const _: () = assert!(size_of::<ExtSuperblock>() == 136);

/// `sb_magicnum` of an XFS superblock.
pub const XFS_MAGIC: [u8; 4] = *b"XFSB";

/// The first 120 bytes of an XFS superblock (at byte 0).
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct XfsSuperblock {
    /// `sb_magicnum` ([`XFS_MAGIC`]).
    pub magic: [u8; 4],
    /// `sb_blocksize` .. `sb_rextents` (not read).
    pub _sizes: [u8; 28],
    /// `sb_uuid` (offset 32).
    pub uuid: [u8; 16],
    /// `sb_logstart` .. `sb_imax_pct` etc. (not read).
    pub _rest: [u8; 60],
    /// `sb_fname` (offset 108).
    pub fname: [u8; 12],
}
const _: () = assert!(size_of::<XfsSuperblock>() == 120);

/// The magic of a LUKS header.
pub const LUKS_MAGIC: [u8; 6] = *b"LUKS\xBA\xBE";

/// The first 72 bytes of a LUKS (1 or 2) header.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct LuksHeader {
    /// [`LUKS_MAGIC`].
    pub magic: [u8; 6],
    /// Version, big-endian (not read).
    pub _version: [u8; 2],
    /// LUKS2 header size and sequence id (not read).
    pub _sizes: [u8; 16],
    /// LUKS2 label (offset 24; LUKS1: the cipher name).
    pub label: [u8; 48],
}
const _: () = assert!(size_of::<LuksHeader>() == 72);

/// The magic of a SquashFS superblock (at byte 0).
pub const SQUASHFS_MAGIC: [u8; 4] = *b"hsqs";

/// Byte offset of the HFS+ volume header and of the F2FS superblock.
pub const HFS_F2FS_OFFSET: usize = 1024;
/// Signatures of an HFS+ (`H+`) or HFSX (`HX`) volume header.
pub const HFS_PLUS_SIGNATURES: [[u8; 2]; 2] = [*b"H+", *b"HX"];
/// The magic of an F2FS superblock (0xF2F52010, little-endian).
pub const F2FS_MAGIC: [u8; 4] = [0x10, 0x20, 0xF5, 0xF2];

/// The Linux swap signatures (new and old style), at the end of the first
/// 4 KiB page.
pub const SWAP_SIGNATURES: [[u8; 10]; 2] = [*b"SWAPSPACE2", *b"SWAP-SPACE"];

/// The first 4 KiB of a Linux swap area (`union swap_header` for 4 KiB pages).
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SwapHeader {
    /// Room for a boot block (not read).
    pub _bootbits: [u8; 1024],
    /// `version`, `last_page`, `nr_badpages` (not read).
    pub _info: [u8; 12],
    /// `sws_uuid` (offset 1036).
    pub uuid: [u8; 16],
    /// `sws_volume` (offset 1052).
    pub volume_name: [u8; 16],
    /// Bad pages and padding (not read).
    pub _pad: [u8; 3018],
    /// One of [`SWAP_SIGNATURES`] (offset 4086).
    pub magic: [u8; 10],
}
const _: () = assert!(size_of::<SwapHeader>() == 4096);

/// Byte offset of the ISO 9660 primary volume descriptor (sector 16).
pub const ISO9660_PVD_OFFSET: usize = 32768;
/// The standard identifier of an ISO 9660 volume descriptor.
pub const ISO9660_ID: [u8; 5] = *b"CD001";

/// The first 72 bytes of an ISO 9660 volume descriptor.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Iso9660Descriptor {
    /// Volume descriptor type (not read).
    pub _type: u8,
    /// Standard identifier ([`ISO9660_ID`]).
    pub id: [u8; 5],
    /// Version, unused byte and system identifier (not read).
    pub _system: [u8; 34],
    /// Volume identifier (offset 40).
    pub volume_id: [u8; 32],
}
const _: () = assert!(size_of::<Iso9660Descriptor>() == 72);

/// Byte offset of the primary btrfs superblock.
pub const BTRFS_SUPERBLOCK_OFFSET: usize = 65536;
/// The magic of a btrfs superblock.
pub const BTRFS_MAGIC: [u8; 8] = *b"_BHRfS_M";

/// The first 555 bytes of a btrfs superblock (at
/// [`BTRFS_SUPERBLOCK_OFFSET`]).
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct BtrfsSuperblock {
    /// Checksum (not read).
    pub _csum: [u8; 32],
    /// `fsid` (offset 32).
    pub fsid: [u8; 16],
    /// `bytenr` and `flags` (not read).
    pub _where: [u8; 16],
    /// [`BTRFS_MAGIC`] (offset 64).
    pub magic: [u8; 8],
    /// Generations, roots, sizes, device item (not read).
    pub _rest: [u8; 227],
    /// `label` (offset 0x12B).
    pub label: [u8; 256],
}
const _: () = assert!(size_of::<BtrfsSuperblock>() == 555);
const _: () = assert!(core::mem::offset_of!(BtrfsSuperblock, label) == 0x12B);
const _: () = assert!(core::mem::offset_of!(SwapHeader, volume_name) == 1052);
const _: () = assert!(core::mem::offset_of!(ExtSuperblock, magic) == 56);
