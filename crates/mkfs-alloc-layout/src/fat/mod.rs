//! FAT: geometry planning and the bytes of a fresh FAT12, FAT16 or FAT32
//! volume (the structures are in `mkfs-alloc-ondisk`).
//!
//! The width is decided by the cluster count alone (fatgen103 §3.5, and what
//! every driver, edk2/OVMF included, does): fewer than 4,085 clusters is
//! FAT12, fewer than 65,525 FAT16, otherwise FAT32. We keep a margin of
//! [`MARGIN`] clusters from each boundary ([`cluster_range`]), so that no
//! implementation that counts slightly differently mistakes the width.
//!
//! ```text
//!  FAT32 (volume start = HiddSec on the medium)
//!  │ sector 0      boot sector (BPB)
//!  │ 1             FSInfo
//!  │ 6, 7          backup boot sector, backup FSInfo
//!  │ …             zero reserved sectors, grown so the first FAT is aligned
//!  ├ RsvdSecCnt    FAT #1: [0FFFFFF8, 0FFFFFFF, 0FFFFFFF (root), 0…]
//!  ├ +FATSz        FAT #2: identical (both padded so the data region is aligned)
//!  ├ data region   cluster 2 = root directory (zeroed; label entry if any)
//!  │ …             free clusters (not touched by a quick format)
//!  └ TotSec32
//!
//!  FAT12 / FAT16
//!  │ sector 0      boot sector (BPB + extended BPB at 36); no FSInfo, no backup
//!  │ …             zero reserved sectors, grown so the first FAT is aligned
//!  ├ RsvdSecCnt    FAT #1: FAT12 [FF8, FFF, 0…] packed 2 entries in 3 bytes,
//!  │                       FAT16 [FFF8, FFFF, 0…]
//!  ├ +FATSz        FAT #2: identical
//!  ├ root dir      RootEntCnt × 32 bytes, fixed (label entry if any, zeros)
//!  ├ data region   cluster 2 … (aligned: FATs padded, root grown by a sector
//!  │               where the parity needs it)
//!  └ TotSec16 / TotSec32
//! ```

use mkfs_alloc_ondisk::fat as ondisk;
use mkfs_alloc_ondisk::time::dos_date_time;

use crate::error::{ClusterSizes, PlanError};
use crate::options::FsKind;

/// Clusters kept away from each width boundary (mkfs.fat keeps 16 too), so
/// that no implementation that counts slightly differently (Microsoft
/// documents 65,527 in places) mistakes the width.
pub const MARGIN: u64 = 16;
/// Largest sectors-per-cluster value.
pub const MAX_SECTORS_PER_CLUSTER: u64 = 128;
/// Number of FATs written unless asked otherwise (every formatter's
/// default; FatFs's `n_fat` and mkfs.fat's `-f` allow 1).
pub const NUM_FATS: u64 = 2;
/// FAT32 reserved sectors before alignment padding.
pub const MIN_RESERVED: u64 = 32;
/// FAT12/16 reserved sectors before alignment padding (the boot sector).
pub const MIN_RESERVED_16: u64 = 1;
/// Default number of FAT12/16 root directory entries.
pub const DEFAULT_ROOT_ENTRIES: u32 = 512;
/// Largest `--root-entries` accepted (RootEntCnt is 16 bits and may grow by
/// one sector for alignment).
pub const MAX_ROOT_ENTRIES: u32 = 32_768;

/// The cluster counts we accept for `fs`: `(min, max)`, the kind's own
/// limits ([`FsKind::min_clusters`], [`FsKind::max_clusters`]) moved
/// [`MARGIN`] clusters inward at each FAT width boundary (not at FAT12's
/// minimum, FAT32's maximum, or exFAT's limits, where no other width starts).
pub fn cluster_range(fs: FsKind) -> (u64, u64) {
    let min = match fs {
        FsKind::Fat16 | FsKind::Fat32 => fs.min_clusters() + MARGIN,
        FsKind::Fat12 | FsKind::Exfat => fs.min_clusters(),
    };
    let max = match fs {
        FsKind::Fat12 | FsKind::Fat16 => fs.max_clusters() - MARGIN,
        FsKind::Fat32 | FsKind::Exfat => fs.max_clusters(),
    };
    (min, max)
}

/// The computed FAT geometry, in sectors unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// FAT12, FAT16 or FAT32.
    pub fs: FsKind,
    /// Bytes per sector.
    pub bps: u32,
    /// Cluster size in bytes.
    pub cluster: u64,
    /// Sectors per cluster.
    pub sec_per_clus: u8,
    /// Total sectors.
    pub tot_sec: u32,
    /// Reserved sectors (grown for alignment).
    pub rsvd: u16,
    /// Sectors per FAT.
    pub fat_sz: u32,
    /// Root directory entries (FAT12/16; 0 on FAT32).
    pub root_entries: u16,
    /// Cluster count.
    pub cluster_count: u32,
    /// Number of FATs (1 or 2).
    pub num_fats: u8,
}

impl Geometry {
    /// Number of FATs (1 or 2).
    pub fn num_fats(&self) -> u32 {
        u32::from(self.num_fats)
    }

    /// Sectors of the fixed root directory (0 on FAT32).
    pub fn root_sectors(&self) -> u64 {
        (u64::from(self.root_entries) * 32).div_ceil(u64::from(self.bps))
    }

    /// First sector of the fixed root directory (FAT12/16).
    pub fn root_sector(&self) -> u64 {
        u64::from(self.rsvd) + u64::from(self.num_fats) * u64::from(self.fat_sz)
    }

    /// First sector of the data region.
    pub fn data_sector(&self) -> u64 {
        self.root_sector() + self.root_sectors()
    }
}

/// Where the FAT and data region must lie, for [`geometry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset of the volume on its medium.
    pub start: u64,
    /// Alignment in bytes, from the medium start, of the first FAT and of the
    /// data region.
    pub align: u64,
    /// FAT12/16 root directory entries (ignored for FAT32).
    pub root_entries: u32,
    /// Number of FATs: 1 or 2 ([`NUM_FATS`] by default).
    pub num_fats: u64,
}

/// Computes the geometry of `fs` (FAT12, FAT16 or FAT32) for a volume of
/// `volume_bytes`, or says why this cluster size cannot work.
///
/// # Errors
///
/// [`PlanError`] naming the limit and the valid cluster
/// sizes: a cluster count outside `fs`'s range, a volume beyond its
/// sector-count fields, no room for the FATs and the root directory.
pub fn geometry(
    fs: FsKind,
    volume_bytes: u64,
    bps: u32,
    cluster: u64,
    at: Placement,
) -> Result<Geometry, PlanError> {
    match fs {
        FsKind::Fat12 | FsKind::Fat16 => geometry_small(fs, volume_bytes, bps, cluster, at),
        _ => geometry32(volume_bytes, bps, cluster, at),
    }
}

fn check_total(fs: FsKind, volume_bytes: u64, bps: u32) -> Result<u64, PlanError> {
    let bps64 = u64::from(bps);
    let tot = volume_bytes / bps64;
    if tot > u64::from(u32::MAX) {
        return Err(PlanError::VolumeTooLarge {
            fs,
            volume: volume_bytes,
            sector: bps,
            max: u64::from(u32::MAX) * bps64,
        });
    }
    Ok(tot)
}

fn count_error(fs: FsKind, volume: u64, cluster: u64, clusters: u64) -> PlanError {
    let (min, max) = cluster_range(fs);
    if clusters < min {
        PlanError::TooFewClusters {
            fs,
            volume,
            cluster,
            clusters,
            min_clusters: min,
            valid: ClusterSizes::new(),
        }
    } else {
        PlanError::TooManyClusters {
            fs,
            volume,
            cluster,
            clusters,
            max_clusters: max,
            valid: ClusterSizes::new(),
        }
    }
}

/// The smallest FAT (in sectors) whose entries cover every cluster left
/// beside it: `f` with `floor(f * BPS * 8 / bits) >= (avail - n*f) / SPC + 2`.
/// `avail` is the sectors shared by the FATs and the data region.
pub fn min_fat_sectors(bits: u64, avail: u64, spc: u64, bps: u64, nfats: u64) -> u64 {
    let entries = |f: u64| f * bps * 8 / bits;
    let needed = |f: u64| avail.saturating_sub(nfats * f) / spc + 2;
    // Closed form (fatgen103's, generalised), then step to the exact minimum.
    let mut f = ((avail + 2 * spc) * bits)
        .div_ceil(8 * bps * spc + nfats * bits)
        .max(1);
    while entries(f) < needed(f) {
        f += 1;
    }
    while f > 1 && entries(f - 1) >= needed(f - 1) {
        f -= 1;
    }
    f
}

/// FAT12/16: reserved sectors grown so the first FAT is aligned; the FATs
/// padded (and the root directory grown by one sector when the parity needs
/// it) so the data region is aligned; the FAT sized for this width.
fn geometry_small(
    fs: FsKind,
    volume_bytes: u64,
    bps: u32,
    cluster: u64,
    at: Placement,
) -> Result<Geometry, PlanError> {
    let bps64 = u64::from(bps);
    let nf = at.num_fats;
    crate::error::check_cluster(fs, cluster, bps)?;
    let spc = cluster / bps64;
    let tot = check_total(fs, volume_bytes, bps)?;
    let per_sector = bps64 / 32;
    let root_min = u64::from(at.root_entries).div_ceil(per_sector);
    let rsvd =
        ((at.start + MIN_RESERVED_16 * bps64).div_ceil(at.align) * at.align - at.start) / bps64;
    let fixed = rsvd + root_min;
    if tot <= fixed + nf + spc {
        return Err(count_error(fs, volume_bytes, cluster, 0));
    }
    let fat_min = min_fat_sectors(fs.entry_bits(), tot - fixed, spc, bps64, nf);
    let unit = (at.align / bps64).max(1);
    let need = nf * fat_min + root_min;
    let gap = need.div_ceil(unit) * unit - need;
    let fat_sz = fat_min + gap / nf;
    let root_sectors = root_min + gap % nf;
    let data = rsvd + nf * fat_sz + root_sectors;
    let clusters = tot.saturating_sub(data) / spc;
    let (min, max) = cluster_range(fs);
    if clusters < min || clusters > max {
        return Err(count_error(fs, volume_bytes, cluster, clusters));
    }
    debug_assert!(fat_sz * bps64 * 8 / fs.entry_bits() >= clusters + 2);
    let too_wide = PlanError::Align {
        align: at.align,
        sector: bps,
        max: 1u64 << (63 - (u64::from(u16::MAX) * bps64 / nf).leading_zeros()),
    };
    let rsvd = u16::try_from(rsvd).map_err(|_| too_wide.clone())?;
    if fat_sz > u64::from(u16::MAX) {
        return Err(too_wide);
    }
    let root_entries = u16::try_from(root_sectors * per_sector).map_err(|_| too_wide)?;
    Ok(Geometry {
        fs,
        bps,
        cluster,
        sec_per_clus: spc as u8,
        tot_sec: tot as u32,
        rsvd,
        fat_sz: fat_sz as u32,
        root_entries,
        cluster_count: clusters as u32,
        num_fats: nf as u8,
    })
}

/// Computes the FAT32 geometry for a volume of `volume_bytes` at byte offset
/// `start` on its medium, growing the reserved sectors so that the first FAT,
/// and padding the FATs so that the data region, start on a multiple of
/// `align` bytes from the start of the medium.
///
/// The FAT size follows fatgen103's formula generalised to any sector size:
/// `FATSz = ceil((TotSec - Rsvd + 2*SPC) / (SPC*BPS/4 + NumFATs))`, computed
/// with the minimum reserved count. Growing the reserved area afterwards only
/// shrinks the cluster count, so the FAT stays large enough (checked below).
fn geometry32(
    volume_bytes: u64,
    bps: u32,
    cluster: u64,
    at: Placement,
) -> Result<Geometry, PlanError> {
    let (start, align, nf) = (at.start, at.align, at.num_fats);
    let fs = FsKind::Fat32;
    let bps64 = u64::from(bps);
    crate::error::check_cluster(fs, cluster, bps)?;
    let spc = cluster / bps64;
    let tot = check_total(fs, volume_bytes, bps)?;
    if tot <= MIN_RESERVED + 2 * spc {
        return Err(count_error(fs, volume_bytes, cluster, 0));
    }
    let min_fat_sz = (tot - MIN_RESERVED + 2 * spc).div_ceil(spc * bps64 / 4 + nf);
    // Align the first FAT: grow the reserved area. Align the data region:
    // pad each FAT to a multiple of align / 2 (with two FATs), so that all
    // together are a multiple of the alignment. Padding only adds FAT entries past the last
    // cluster (allowed), and costs at most `align` bytes.
    let rsvd = (start + MIN_RESERVED * bps64).div_ceil(align) * align - start;
    let rsvd = rsvd / bps64;
    let fat_unit = (align / (nf * bps64)).max(1);
    let fat_sz = min_fat_sz.div_ceil(fat_unit) * fat_unit;
    let meta = rsvd + nf * fat_sz;
    let clusters = tot.saturating_sub(meta) / spc;
    let (min, max) = cluster_range(fs);
    if !(min..=max).contains(&clusters) {
        return Err(count_error(fs, volume_bytes, cluster, clusters));
    }
    // The FAT must hold an entry for every cluster plus the two reserved ones.
    debug_assert!(fat_sz * bps64 / 4 >= clusters + 2);
    let rsvd = u16::try_from(rsvd).map_err(|_| PlanError::Align {
        align,
        sector: bps,
        // The reserved sector count is 16 bits wide.
        max: 1u64 << (63 - (u64::from(u16::MAX) * bps64).leading_zeros()),
    })?;
    Ok(Geometry {
        fs,
        bps,
        cluster,
        sec_per_clus: spc as u8,
        tot_sec: tot as u32,
        rsvd,
        fat_sz: fat_sz as u32,
        root_entries: 0,
        cluster_count: clusters as u32,
        num_fats: nf as u8,
    })
}

/// Media descriptor byte (fixed disk).
pub const MEDIA: u8 = 0xF8;

/// The boot sector into `sector` (one sector, zeroed by the caller).
pub fn boot_sector(layout: &crate::Layout, g: &Geometry, sector: &mut [u8]) {
    if g.fs != FsKind::Fat32 {
        return boot_sector16(layout, g, sector);
    }
    use zerocopy::{FromZeros, IntoBytes};
    let mut b = ondisk::Fat32BootSector::new_zeroed();
    b.bpb = common_bpb(layout, g, [0xEB, 0x58, 0x90]);
    b.bpb.tot_sec32 = g.tot_sec.into();
    b.ebpb.fat_sz32 = g.fat_sz.into();
    b.ebpb.root_clus = 2.into();
    b.ebpb.fs_info = (ondisk::FSINFO_SECTOR as u16).into();
    b.ebpb.bk_boot_sec = (ondisk::BACKUP_BOOT_SECTOR as u16).into();
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
fn common_bpb(layout: &crate::Layout, g: &Geometry, jmp_boot: [u8; 3]) -> ondisk::Bpb {
    use zerocopy::FromZeros;
    let mut bpb = ondisk::Bpb::new_zeroed();
    bpb.jmp_boot = jmp_boot;
    bpb.oem_name = *b"MSWIN4.1";
    bpb.byts_per_sec = (g.bps as u16).into();
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
fn hidden_sectors(layout: &crate::Layout, g: &Geometry) -> u32 {
    (layout.partition_offset / u64::from(g.bps)).min(u64::from(u32::MAX)) as u32
}

/// The FAT12/FAT16 boot sector (extended BPB at 36) into `sector`.
fn boot_sector16(layout: &crate::Layout, g: &Geometry, sector: &mut [u8]) {
    use zerocopy::{FromZeros, IntoBytes};
    let mut b = ondisk::Fat16BootSector::new_zeroed();
    b.bpb = common_bpb(layout, g, [0xEB, 0x3C, 0x90]);
    b.bpb.root_ent_cnt = g.root_entries.into();
    match u16::try_from(g.tot_sec) {
        Ok(t) => b.bpb.tot_sec16 = t.into(),
        Err(_) => b.bpb.tot_sec32 = g.tot_sec.into(),
    }
    b.bpb.fat_sz16 = (g.fat_sz as u16).into();
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
pub fn fsinfo_sector(g: &Geometry, extra: u64, sector: &mut [u8]) {
    use zerocopy::{FromZeros, IntoBytes};
    let mut f = ondisk::FsInfo::new_zeroed();
    f.lead_sig = ondisk::FSINFO_LEAD_SIG.into();
    f.struc_sig = ondisk::FSINFO_STRUC_SIG.into();
    let extra = extra.min(u64::from(g.cluster_count) - 1) as u32;
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

#[cfg(test)]
mod tests;
