//! The bytes of a fresh FAT12, FAT16 or FAT32 volume's metadata: the boot
//! sector, FSInfo, the root directory's label entry and the FAT's entries,
//! for the geometry `geometry::fat` computed (the structures are in
//! `mkfs-alloc-ondisk`).

use mkfs_alloc_ondisk::fat as ondisk;
use mkfs_alloc_ondisk::time::dos_date_time;

use crate::geometry::fat::FatGeometry;
use crate::options::FsKind;

/// Media descriptor byte (fixed disk).
pub const MEDIA: u8 = 0xF8;

/// The boot sector into `sector` (one sector, zeroed by the caller).
pub fn boot_sector(layout: &crate::Layout, g: &FatGeometry, sector: &mut [u8]) {
    if g.fs != FsKind::Fat32 {
        return boot_sector16(layout, g, sector);
    }
    use zerocopy::{FromZeros, IntoBytes};
    let mut b = ondisk::Fat32BootSector::new_zeroed();
    b.bpb = common_bpb(layout, g, [0xEB, 0x58, 0x90]);
    b.bpb.tot_sec32 = g.tot_sec.into();
    b.ebpb.fat_sz32 = g.fat_sz.into();
    b.ebpb.root_clus = 2.into();
    // Sectors 1 and 6: constants that fit.
    b.ebpb.fs_info = u16::try_from(ondisk::FSINFO_SECTOR).unwrap_or(0).into();
    b.ebpb.bk_boot_sec = u16::try_from(ondisk::BACKUP_BOOT_SECTOR)
        .unwrap_or(0)
        .into();
    b.ebpb.drv_num = layout.drive_number();
    b.ebpb.boot_sig = 0x29;
    b.ebpb.vol_id = layout.serial.into();
    b.ebpb.vol_lab = label_bytes(layout);
    b.ebpb.fil_sys_type = *b"FAT32   ";
    b.boot_code[..ondisk::BOOT_CODE.len()].copy_from_slice(&ondisk::BOOT_CODE);
    b.signature = 0xAA55.into();
    sector[..core::mem::size_of_val(&b)].copy_from_slice(b.as_bytes());
}

/// The BPB fields every FAT width fills alike (fatgen103 §3.1).
fn common_bpb(layout: &crate::Layout, g: &FatGeometry, jmp_boot: [u8; 3]) -> ondisk::Bpb {
    use zerocopy::FromZeros;
    let mut bpb = ondisk::Bpb::new_zeroed();
    bpb.jmp_boot = jmp_boot;
    bpb.oem_name = *b"MSWIN4.1";
    // 512..=4096: the sector-size rule.
    bpb.byts_per_sec = u16::try_from(g.bps).unwrap_or(u16::MAX).into();
    bpb.sec_per_clus = g.sec_per_clus;
    bpb.rsvd_sec_cnt = g.rsvd.into();
    bpb.num_fats = g.num_fats;
    bpb.media = layout.media();
    let (heads, sectors_per_track) = layout.chs_geometry();
    bpb.sec_per_trk = u16::from(sectors_per_track).into();
    bpb.num_heads = u16::from(heads).into();
    bpb.hidd_sec = hidden_sectors(layout, g).into();
    bpb
}

/// HiddSec: the partition's start LBA (saturated; MBR partitions fit in 32 bits).
fn hidden_sectors(layout: &crate::Layout, g: &FatGeometry) -> u32 {
    u32::try_from(layout.partition_offset / u64::from(g.bps)).unwrap_or(u32::MAX)
}

/// The FAT12/FAT16 boot sector (extended BPB at 36) into `sector`.
fn boot_sector16(layout: &crate::Layout, g: &FatGeometry, sector: &mut [u8]) {
    use zerocopy::{FromZeros, IntoBytes};
    let mut b = ondisk::Fat16BootSector::new_zeroed();
    b.bpb = common_bpb(layout, g, [0xEB, 0x3C, 0x90]);
    b.bpb.root_ent_cnt = g.root_entries.into();
    match u16::try_from(g.tot_sec) {
        Ok(t) => b.bpb.tot_sec16 = t.into(),
        Err(_) => b.bpb.tot_sec32 = g.tot_sec.into(),
    }
    // FAT12/16: at most 2^16 entries of 2 bytes plus an alignment gap, far
    // below 2^16 sectors.
    b.bpb.fat_sz16 = u16::try_from(g.fat_sz).unwrap_or(u16::MAX).into();
    b.ebpb.drv_num = layout.drive_number();
    b.ebpb.boot_sig = 0x29;
    b.ebpb.vol_id = layout.serial.into();
    b.ebpb.vol_lab = label_bytes(layout);
    b.ebpb.fil_sys_type = if g.fs == FsKind::Fat12 {
        *b"FAT12   "
    } else {
        *b"FAT16   "
    };
    b.boot_code[..ondisk::BOOT_CODE.len()].copy_from_slice(&ondisk::BOOT_CODE);
    b.signature = 0xAA55.into();
    sector[..core::mem::size_of_val(&b)].copy_from_slice(b.as_bytes());
}

/// The label's 11 bytes, or `"NO NAME    "`.
fn label_bytes(layout: &crate::Layout) -> [u8; 11] {
    match &layout.label_encoded {
        Some(crate::label::EncodedLabel::Fat32(bytes)) => *bytes,
        _ => *b"NO NAME    ",
    }
}

/// The FSInfo sector into `sector` (one sector, zeroed by the caller), of a
/// volume with `extra` clusters in use after the root directory's, all
/// contiguous from cluster 3.
pub fn fsinfo_sector(g: &FatGeometry, extra: u64, sector: &mut [u8]) {
    use zerocopy::{FromZeros, IntoBytes};
    let mut f = ondisk::FsInfo::new_zeroed();
    f.lead_sig = ondisk::FSINFO_LEAD_SIG.into();
    f.struc_sig = ondisk::FSINFO_STRUC_SIG.into();
    // At most the cluster count less one, a u32.
    let extra = u32::try_from(extra).map_or(g.cluster_count - 1, |e| e.min(g.cluster_count - 1));
    f.free_count = (g.cluster_count - 1 - extra).into();
    f.nxt_free = (3 + extra).into();
    f.trail_sig = ondisk::FSINFO_TRAIL_SIG.into();
    sector[..core::mem::size_of_val(&f)].copy_from_slice(f.as_bytes());
}

/// The root directory's system entries: the volume label's, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootEntries(Option<[u8; 32]>);

impl RootEntries {
    /// The entries' bytes (none, or one 32-byte entry).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_ref().map_or(&[], |e| &e[..])
    }
}

/// The root directory's first entry: the volume label, if there is one.
pub fn root_entries(layout: &crate::Layout) -> RootEntries {
    use zerocopy::{FromZeros, IntoBytes};
    if layout.label.is_none() {
        return RootEntries(None);
    }
    let mut e = ondisk::DirEntry::new_zeroed();
    e.name = label_bytes(layout);
    e.attr = ondisk::attr::VOLUME_ID;
    let (date, time) = dos_date_time(layout.timestamp.secs);
    e.crt_date = date.into();
    e.crt_time = time.into();
    e.wrt_date = date.into();
    e.wrt_time = time.into();
    e.lst_acc_date = date.into();
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(e.as_bytes());
    RootEntries(Some(bytes))
}

/// FAT entry `index` of a freshly formatted volume: the `media` byte,
/// end-of-chain, and (FAT32) the one-cluster root directory.
pub fn fat_entry(fs: FsKind, media: u8, index: u64) -> u32 {
    let mask = match fs {
        FsKind::Fat12 => 0xFFF,
        FsKind::Fat16 => 0xFFFF,
        _ => 0x0FFF_FFFF,
    };
    match index {
        0 => (mask & !0xFF) | u32::from(media),
        1 => mask,
        2 if fs == FsKind::Fat32 => mask,
        _ => 0,
    }
}
