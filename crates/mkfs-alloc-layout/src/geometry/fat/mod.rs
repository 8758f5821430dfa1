//! FAT geometry: the reserved sectors, FATs, root directory and data region
//! of a fresh FAT12, FAT16 or FAT32 volume (the bytes are `writer::fat`'s,
//! the structures `mkfs-alloc-ondisk`'s).
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

use super::count::{SectorSize, Sectors};
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
pub const NUM_FATS: u8 = 2;
/// FAT32 reserved sectors before alignment padding.
pub const MIN_RESERVED: u64 = 32;
/// FAT12/16 reserved sectors before alignment padding (the boot sector).
pub const MIN_RESERVED_16: u64 = 1;
/// Default number of FAT12/16 root directory entries.
pub const DEFAULT_ROOT_ENTRIES: u32 = 512;
/// Largest number of FAT12/16 root directory entries accepted
/// ([`FormatOptions::root_entries`](crate::FormatOptions::root_entries)
/// owns the rule; the CLI's `--root-entries` and the mkfs.fat front end's
/// `-r` use it). BPB_RootEntCnt is 16 bits (65,535 at most), and the count
/// written is rounded up to whole sectors, and to whole clusters where the
/// data region is aligned: 32,768 leaves that rounding room, and it is
/// where dosfstools' mkfs.fat stops too ("Bad number of root directory
/// entries" above it).
pub const MAX_ROOT_ENTRIES: u32 = 32_768;

/// The cluster counts we accept for `fs`: `(min, max)`, the kind's own
/// limits ([`FsKind::min_clusters`], [`FsKind::max_clusters`]) moved
/// [`MARGIN`] clusters inward at each FAT width boundary (not at FAT12's
/// minimum, FAT32's maximum, or exFAT's limits, where no other width starts).
/// Each arm is a `const` block, so the planner's code holds only the numbers
/// (opt-level `z` in firmware does not always inline the kind's methods).
pub const fn cluster_range(fs: FsKind) -> (u64, u64) {
    use FsKind::{Exfat, Fat12, Fat16, Fat32};
    match fs {
        Fat12 => const { (Fat12.min_clusters(), Fat12.max_clusters() - MARGIN) },
        Fat16 => const { (Fat16.min_clusters() + MARGIN, Fat16.max_clusters() - MARGIN) },
        Fat32 => const { (Fat32.min_clusters() + MARGIN, Fat32.max_clusters()) },
        Exfat => const { (Exfat.min_clusters(), Exfat.max_clusters()) },
    }
}

/// The computed FAT geometry, in sectors unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatGeometry {
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

impl FatGeometry {
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
    pub num_fats: u8,
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
) -> Result<FatGeometry, PlanError> {
    match fs {
        FsKind::Fat12 | FsKind::Fat16 => geometry_small(fs, volume_bytes, bps, cluster, at),
        _ => geometry32(volume_bytes, bps, cluster, at),
    }
}

/// The volume's sector count, which FAT's 32-bit sector fields must hold.
fn check_total(fs: FsKind, volume_bytes: u64, bps: u32) -> Result<u32, PlanError> {
    let bps64 = u64::from(bps);
    u32::try_from(volume_bytes / bps64).map_err(|_| PlanError::VolumeTooLarge {
        fs,
        volume: volume_bytes,
        sector: bps,
        max: u64::from(u32::MAX) * bps64,
    })
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

/// The smallest FAT whose entries cover every cluster left beside it: `f`
/// with `floor(f * BPS * 8 / bits) >= (avail - n*f) / SPC + 2`, for
/// `entry_bits` per FAT entry, `avail` sectors shared by the FATs and the
/// data region, `per_cluster` sectors per cluster and `fats` FATs.
pub fn min_fat_sectors(
    entry_bits: u64,
    avail: Sectors,
    per_cluster: Sectors,
    sector: SectorSize,
    fats: u64,
) -> Sectors {
    let (bits, avail, spc, bps) = (entry_bits, avail.0, per_cluster.0, sector.bytes());
    let entries = |f: u64| f * bps * 8 / bits;
    let needed = |f: u64| avail.saturating_sub(fats * f) / spc + 2;
    // Closed form (fatgen103's, generalised), then step to the exact minimum.
    let mut f = ((avail + 2 * spc) * bits)
        .div_ceil(8 * bps * spc + fats * bits)
        .max(1);
    while entries(f) < needed(f) {
        f += 1;
    }
    while f > 1 && entries(f - 1) >= needed(f - 1) {
        f -= 1;
    }
    Sectors(f)
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
) -> Result<FatGeometry, PlanError> {
    let bps64 = u64::from(bps);
    let nf = u64::from(at.num_fats);
    crate::error::check_cluster(fs, cluster, bps)?;
    let spc = cluster / bps64;
    let tot_sec = check_total(fs, volume_bytes, bps)?;
    let tot = u64::from(tot_sec);
    let per_sector = bps64 / 32;
    let root_min = u64::from(at.root_entries).div_ceil(per_sector);
    let rsvd =
        ((at.start + MIN_RESERVED_16 * bps64).div_ceil(at.align) * at.align - at.start) / bps64;
    let fixed = rsvd + root_min;
    if tot <= fixed + nf + spc {
        return Err(count_error(fs, volume_bytes, cluster, 0));
    }
    // Nonzero: `check_total` divided by it.
    let sector = SectorSize::new(bps).ok_or_else(|| count_error(fs, volume_bytes, cluster, 0))?;
    let fat_min = min_fat_sectors(
        fs.entry_bits(),
        Sectors(tot - fixed),
        Sectors(spc),
        sector,
        nf,
    )
    .0;
    let unit = (at.align / bps64).max(1);
    let need = nf * fat_min + root_min;
    let gap = need.div_ceil(unit) * unit - need;
    let fat_sz = fat_min + gap / nf;
    let root_sectors = root_min + gap % nf;
    let data = rsvd + nf * fat_sz + root_sectors;
    let clusters = tot.saturating_sub(data) / spc;
    let (min, max) = cluster_range(fs);
    // The count in range fits its 32-bit field; the sectors per cluster
    // (at most 128, `check_cluster`) fit theirs.
    let (Ok(cluster_count), Ok(sec_per_clus), true) = (
        u32::try_from(clusters),
        u8::try_from(spc),
        (min..=max).contains(&clusters),
    ) else {
        return Err(count_error(fs, volume_bytes, cluster, clusters));
    };
    debug_assert!(fat_sz * bps64 * 8 / fs.entry_bits() >= clusters + 2);
    let too_wide = PlanError::Align {
        align: at.align,
        sector: bps,
        max: 1u64 << (63 - (u64::from(u16::MAX) * bps64 / nf).leading_zeros()),
    };
    let (Ok(rsvd), Ok(fat_sz), Ok(root_entries)) = (
        u16::try_from(rsvd),
        u16::try_from(fat_sz),
        u16::try_from(root_sectors * per_sector),
    ) else {
        return Err(too_wide);
    };
    Ok(FatGeometry {
        fs,
        bps,
        cluster,
        sec_per_clus,
        tot_sec,
        rsvd,
        fat_sz: u32::from(fat_sz),
        root_entries,
        cluster_count,
        num_fats: at.num_fats,
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
) -> Result<FatGeometry, PlanError> {
    let (start, align, nf) = (at.start, at.align, u64::from(at.num_fats));
    let fs = FsKind::Fat32;
    let bps64 = u64::from(bps);
    crate::error::check_cluster(fs, cluster, bps)?;
    let spc = cluster / bps64;
    let tot_sec = check_total(fs, volume_bytes, bps)?;
    let tot = u64::from(tot_sec);
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
    let (min, max) = const { cluster_range(FsKind::Fat32) };
    // In range, the count fits its field, and so does the FAT (smaller than
    // the volume, whose sector count fits 32 bits); the sectors per cluster
    // are at most 128 (`check_cluster`).
    let (Ok(cluster_count), Ok(fat_sz), Ok(sec_per_clus), true) = (
        u32::try_from(clusters),
        u32::try_from(fat_sz),
        u8::try_from(spc),
        (min..=max).contains(&clusters),
    ) else {
        return Err(count_error(fs, volume_bytes, cluster, clusters));
    };
    // The FAT must hold an entry for every cluster plus the two reserved ones.
    debug_assert!(u64::from(fat_sz) * bps64 / 4 >= clusters + 2);
    let rsvd = u16::try_from(rsvd).map_err(|_| PlanError::Align {
        align,
        sector: bps,
        // The reserved sector count is 16 bits wide.
        max: 1u64 << (63 - (u64::from(u16::MAX) * bps64).leading_zeros()),
    })?;
    Ok(FatGeometry {
        fs,
        bps,
        cluster,
        sec_per_clus,
        tot_sec,
        rsvd,
        fat_sz,
        root_entries: 0,
        cluster_count,
        num_fats: at.num_fats,
    })
}

#[cfg(test)]
mod tests;
