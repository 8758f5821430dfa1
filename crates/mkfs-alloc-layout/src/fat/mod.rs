//! FAT: geometry planning and on-disk structures.
//!
//! ```text
//!  volume start (HiddSec on the medium)
//!  │ sector 0      boot sector (BPB)
//!  │ 1             FSInfo
//!  │ 6, 7          backup boot sector, backup FSInfo
//!  │ …             zero reserved sectors, grown so the data region is aligned
//!  ├ RsvdSecCnt    FAT #1: [0FFFFFF8, 0FFFFFFF, 0FFFFFFF (root), 0…]
//!  ├ +FATSz        FAT #2: identical
//!  ├ data region   cluster 2 = root directory (zeroed; label entry if any)
//!  │ …             free clusters (not touched by a quick format)
//!  └ TotSec32
//! ```

pub mod boot;
pub mod dir;

use crate::error::PlanError;
use crate::options::FsType;

/// FAT32's formal minimum cluster count (fatgen103: fewer is FAT16).
pub const SPEC_MIN_CLUSTERS: u64 = 65_525;
/// The minimum we accept: the spec minimum plus a margin of 16, so that no
/// implementation that counts slightly differently (Microsoft documents
/// 65,527 in places) mistakes the volume for FAT16.
pub const MIN_CLUSTERS: u64 = SPEC_MIN_CLUSTERS + 16;
/// Largest cluster count (fatgen103; 28-bit entries minus reserved values).
pub const MAX_CLUSTERS: u64 = 0x0FFF_FFF5;
/// Largest sectors-per-cluster value.
pub const MAX_SECTORS_PER_CLUSTER: u64 = 128;
/// Number of FATs written.
pub const NUM_FATS: u64 = 2;
/// Reserved sectors before alignment padding.
pub const MIN_RESERVED: u64 = 32;
/// Clusters above this size get a compatibility warning.
pub const COMPAT_MAX_CLUSTER: u64 = 32 * 1024;

/// The computed FAT32 geometry, in sectors unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
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
    /// Cluster count.
    pub cluster_count: u32,
}

impl Geometry {
    /// First sector of the data region.
    pub fn data_sector(&self) -> u64 {
        u64::from(self.rsvd) + NUM_FATS * u64::from(self.fat_sz)
    }
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
pub fn geometry(
    volume_bytes: u64,
    bps: u32,
    cluster: u64,
    start: u64,
    align: u64,
) -> Result<Geometry, PlanError> {
    let fs = FsType::Fat32;
    let bps64 = u64::from(bps);
    crate::error::check_cluster(fs, cluster, bps)?;
    let spc = cluster / bps64;
    let tot = volume_bytes / bps64;
    if tot > u64::from(u32::MAX) {
        return Err(PlanError::VolumeTooLarge {
            fs,
            volume: volume_bytes,
            sector: bps,
            max: u64::from(u32::MAX) * bps64,
        });
    }
    let too_few = |clusters: u64| PlanError::TooFewClusters {
        fs,
        volume: volume_bytes,
        cluster,
        clusters,
        min_clusters: MIN_CLUSTERS,
        valid: Vec::new(),
    };
    if tot <= MIN_RESERVED + 2 * spc {
        return Err(too_few(0));
    }
    let min_fat_sz = (tot - MIN_RESERVED + 2 * spc).div_ceil(spc * bps64 / 4 + NUM_FATS);
    // Align the first FAT: grow the reserved area. Align the data region:
    // pad each FAT to a multiple of align / 2, so that both together are a
    // multiple of the alignment. Padding only adds FAT entries past the last
    // cluster (allowed), and costs at most `align` bytes.
    let rsvd = (start + MIN_RESERVED * bps64).div_ceil(align) * align - start;
    let rsvd = rsvd / bps64;
    let fat_unit = (align / (2 * bps64)).max(1);
    let fat_sz = min_fat_sz.div_ceil(fat_unit) * fat_unit;
    let meta = rsvd + NUM_FATS * fat_sz;
    let clusters = tot.saturating_sub(meta) / spc;
    if clusters < MIN_CLUSTERS {
        return Err(too_few(clusters));
    }
    if clusters > MAX_CLUSTERS {
        return Err(PlanError::TooManyClusters {
            fs,
            volume: volume_bytes,
            cluster,
            clusters,
            max_clusters: MAX_CLUSTERS,
            valid: Vec::new(),
        });
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
        bps,
        cluster,
        sec_per_clus: spc as u8,
        tot_sec: tot as u32,
        rsvd,
        fat_sz: fat_sz as u32,
        cluster_count: clusters as u32,
    })
}

/// Media descriptor byte (fixed disk).
pub const MEDIA: u8 = 0xF8;

/// The boot sector, padded to one sector.
pub fn boot_sector(layout: &crate::Layout, g: &Geometry) -> Vec<u8> {
    use zerocopy::{FromZeros, IntoBytes};
    let mut b = boot::BootSector::new_zeroed();
    b.jmp_boot = [0xEB, 0x58, 0x90];
    b.oem_name = *b"MSWIN4.1";
    b.byts_per_sec = (g.bps as u16).into();
    b.sec_per_clus = g.sec_per_clus;
    b.rsvd_sec_cnt = g.rsvd.into();
    b.num_fats = NUM_FATS as u8;
    b.media = MEDIA;
    b.sec_per_trk = 63.into();
    b.num_heads = 255.into();
    b.hidd_sec =
        ((layout.partition_offset / u64::from(g.bps)).min(u64::from(u32::MAX)) as u32).into();
    b.tot_sec32 = g.tot_sec.into();
    b.fat_sz32 = g.fat_sz.into();
    b.root_clus = 2.into();
    b.fs_info = (boot::FSINFO_SECTOR as u16).into();
    b.bk_boot_sec = (boot::BACKUP_BOOT_SECTOR as u16).into();
    b.drv_num = 0x80;
    b.boot_sig = 0x29;
    b.vol_id = layout.serial.into();
    b.vol_lab = label_bytes(layout);
    b.fil_sys_type = *b"FAT32   ";
    b.boot_code[..boot::BOOT_CODE.len()].copy_from_slice(&boot::BOOT_CODE);
    b.signature = 0xAA55.into();
    let mut s = vec![0u8; g.bps as usize];
    s[..512].copy_from_slice(b.as_bytes());
    s
}

/// The label's 11 bytes, or `"NO NAME    "`.
fn label_bytes(layout: &crate::Layout) -> [u8; 11] {
    match &layout.label_encoded {
        Some(crate::label::EncodedLabel::Fat32(bytes)) => *bytes,
        _ => *b"NO NAME    ",
    }
}

/// The FSInfo sector, padded to one sector.
pub fn fsinfo_sector(g: &Geometry) -> Vec<u8> {
    fsinfo_sector_used(g, 0)
}

/// [`fsinfo_sector`] of a volume with `extra` clusters in use after the
/// root directory's, all contiguous from cluster 3.
pub fn fsinfo_sector_used(g: &Geometry, extra: u64) -> Vec<u8> {
    use zerocopy::{FromZeros, IntoBytes};
    let mut f = boot::FsInfo::new_zeroed();
    f.lead_sig = boot::FSINFO_LEAD_SIG.into();
    f.struc_sig = boot::FSINFO_STRUC_SIG.into();
    let extra = extra.min(u64::from(g.cluster_count) - 1) as u32;
    f.free_count = (g.cluster_count - 1 - extra).into();
    f.nxt_free = (3 + extra).into();
    f.trail_sig = boot::FSINFO_TRAIL_SIG.into();
    let mut s = vec![0u8; g.bps as usize];
    s[..512].copy_from_slice(f.as_bytes());
    s
}

/// The root directory's first entry: the volume label, if there is one.
pub fn root_entries(layout: &crate::Layout) -> Vec<u8> {
    use zerocopy::{FromZeros, IntoBytes};
    if layout.label.is_none() {
        return Vec::new();
    }
    let mut e = dir::DirEntry::new_zeroed();
    e.name = label_bytes(layout);
    e.attr = dir::ATTR_VOLUME_ID;
    let (date, time) = dir::dos_date_time(layout.timestamp.secs);
    e.crt_date = date.into();
    e.crt_time = time.into();
    e.wrt_date = date.into();
    e.wrt_time = time.into();
    e.lst_acc_date = date.into();
    e.as_bytes().to_vec()
}

/// FAT entry `index` of a freshly formatted volume: media, end-of-chain, and
/// the one-cluster root directory.
pub fn fat_entry(index: u64) -> u32 {
    match index {
        0 => 0x0FFF_FF00 | u32::from(MEDIA),
        1 | 2 => 0x0FFF_FFFF,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, KIB, MIB};

    #[test]
    fn one_gib_at_32k_is_not_fat32() {
        let e = geometry(GIB, 512, 32 * KIB, 0, MIB).expect_err("too few clusters");
        match e {
            PlanError::TooFewClusters { clusters, .. } => assert_eq!(clusters, 32_704),
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn fat_and_data_region_are_aligned() {
        for start in [0, MIB, 63 * 512] {
            let g = geometry(8 * GIB, 512, 4 * KIB, start, MIB).expect("valid");
            assert_eq!((start + g.data_sector() * 512) % MIB, 0);
            assert_eq!((start + u64::from(g.rsvd) * 512) % MIB, 0);
            assert!(u64::from(g.fat_sz) * 512 / 4 >= u64::from(g.cluster_count) + 2);
        }
    }
}
