//! exFAT: geometry planning and the bytes of a fresh volume (the structures
//! are in `mkfs-alloc-ondisk`).
//!
//! ```text
//!  volume start (PartitionOffset on the medium)
//!  │ sector 0      main boot sector
//!  │ 1..=8         main extended boot sectors (… 00 00 55 AA)
//!  │ 9, 10         OEM parameters (zero, or the SD layout's Flash
//!  │               Parameters record), reserved (zero)
//!  │ 11            main boot checksum (u32 repeated)
//!  │ 12..=23       backup boot region (copy of 0..=11)
//!  │ …             zero up to FatOffset (aligned)
//!  ├ FatOffset     FAT: [F8FFFFFF, FFFFFFFF, bitmap chain, up-case chain, root EOC, 0…]
//!  │ …             zero up to ClusterHeapOffset (aligned)
//!  ├ heap cluster 2: allocation bitmap, then up-case table, then root directory
//!  │ …             free clusters (not touched by a quick format)
//!  └ VolumeLength
//! ```

use mkfs_alloc_ondisk::exfat::{self as ondisk, upcase};

use crate::error::{ClusterSizes, PlanError};
use crate::options::FsKind;
use crate::units::MIB;

/// Largest exFAT cluster: 32 MiB (spec §3.1.16).
pub const MAX_CLUSTER: u64 = 32 * MIB;
/// Smallest exFAT volume: 1 MiB (spec §3.1.5: VolumeLength >= 2^20 / BPS).
pub const MIN_VOLUME: u64 = MIB;
/// First cluster of the heap.
pub const FIRST_CLUSTER: u32 = 2;

/// The computed exFAT geometry, in sectors unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per sector.
    pub bps: u32,
    /// Cluster size in bytes.
    pub cluster: u64,
    /// Volume length in sectors.
    pub volume_sectors: u64,
    /// FAT offset.
    pub fat_offset: u32,
    /// FAT length.
    pub fat_length: u32,
    /// Cluster heap offset.
    pub heap_offset: u32,
    /// Cluster count.
    pub cluster_count: u32,
    /// Allocation bitmap length in bytes.
    pub bitmap_bytes: u64,
    /// Clusters taken by the bitmap.
    pub bitmap_clusters: u32,
    /// Clusters taken by the up-case table.
    pub upcase_clusters: u32,
    /// Clusters taken by the root directory.
    pub root_clusters: u32,
}

impl Geometry {
    /// First cluster of the allocation bitmap.
    pub fn bitmap_cluster(&self) -> u32 {
        FIRST_CLUSTER
    }
    /// First cluster of the up-case table.
    pub fn upcase_cluster(&self) -> u32 {
        FIRST_CLUSTER + self.bitmap_clusters
    }
    /// First cluster of the root directory.
    pub fn root_cluster(&self) -> u32 {
        self.upcase_cluster() + self.upcase_clusters
    }
    /// Clusters in use after formatting.
    pub fn used_clusters(&self) -> u32 {
        self.bitmap_clusters + self.upcase_clusters + self.root_clusters
    }
}

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// Computes the exFAT geometry for a volume of `volume_bytes` at byte offset
/// `start` on its medium, aligning the FAT and the heap to `align` bytes
/// measured from the start of the medium (exfatprogs' formulas, reference
/// A.5, with one FAT).
///
/// # Errors
///
/// [`PlanError`] naming the limit: a volume below
/// exFAT's 1 MiB minimum, too few or too many clusters, a cluster or
/// sector size out of range.
pub fn geometry(
    volume_bytes: u64,
    bps: u32,
    cluster: u64,
    start: u64,
    align: u64,
) -> Result<Geometry, PlanError> {
    let fs = FsKind::Exfat;
    let bps64 = u64::from(bps);
    crate::error::check_cluster(fs, cluster, bps)?;
    let volume_sectors = volume_bytes / bps64;
    let len = volume_sectors * bps64;
    if len < MIN_VOLUME {
        return Err(PlanError::VolumeTooSmall {
            fs,
            volume: volume_bytes,
            min: MIN_VOLUME,
        });
    }
    let too_few = |clusters: u64, min_clusters: u64| PlanError::TooFewClusters {
        fs,
        volume: volume_bytes,
        cluster,
        clusters,
        min_clusters,
        valid: ClusterSizes::new(),
    };
    let fat_off_bytes = round_up(start + 24 * bps64, align) - start;
    if fat_off_bytes + bps64 >= len {
        return Err(too_few(0, 1));
    }
    // Upper bound of the cluster count: every byte after the FAT offset is either
    // FAT (4 bytes per cluster, plus two reserved entries) or heap.
    let max_clu = (len - fat_off_bytes - 9) / (cluster + 4) + 1;
    let fat_len_bytes = round_up((max_clu + 2) * 4, bps64);
    let heap_bytes = round_up(start + fat_off_bytes + fat_len_bytes, align) - start;
    let clusters = len.saturating_sub(heap_bytes) / cluster;
    let max_clusters = fs.max_clusters();
    if clusters > max_clusters {
        return Err(PlanError::TooManyClusters {
            fs,
            volume: volume_bytes,
            cluster,
            clusters,
            max_clusters,
            valid: ClusterSizes::new(),
        });
    }
    let bitmap_bytes = clusters.div_ceil(8);
    let bitmap_clusters = bitmap_bytes.div_ceil(cluster).max(1);
    let upcase_clusters = (upcase::UPCASE_TABLE_LEN as u64).div_ceil(cluster);
    let used = bitmap_clusters + upcase_clusters + 1;
    // Room for the system clusters plus at least one free cluster.
    if clusters < used + 1 {
        return Err(too_few(clusters, used + 1));
    }
    let to_u32 = |v: u64| {
        u32::try_from(v).map_err(|_| PlanError::VolumeTooLarge {
            fs,
            volume: volume_bytes,
            sector: bps,
            max: u64::from(u32::MAX) * bps64,
        })
    };
    Ok(Geometry {
        bps,
        cluster,
        volume_sectors,
        fat_offset: to_u32(fat_off_bytes / bps64)?,
        fat_length: to_u32(fat_len_bytes / bps64)?,
        heap_offset: to_u32(heap_bytes / bps64)?,
        cluster_count: to_u32(clusters)?,
        bitmap_bytes,
        bitmap_clusters: to_u32(bitmap_clusters)?,
        upcase_clusters: to_u32(upcase_clusters)?,
        root_clusters: 1,
    })
}

/// The bytes of one boot region (12 sectors): boot sector, extended boot
/// sectors, OEM and reserved sectors, checksum sector. Written twice: at
/// sector 0 and, as the backup, at sector 12.
#[cfg(feature = "alloc")]
pub fn boot_region(layout: &crate::Layout, g: &Geometry) -> alloc::vec::Vec<u8> {
    let bps = g.bps as usize;
    let mut r = alloc::vec![0u8; ondisk::BOOT_REGION_SECTORS as usize * bps];
    let used = u64::from(g.used_clusters());
    for (i, sector) in r.chunks_exact_mut(bps).enumerate() {
        boot_region_sector(layout, g, used, i as u64, sector);
    }
    r
}

/// Sector `index` (0..12) of the boot region of a volume with `used`
/// clusters in use (PercentInUse), into `sector` (one sector, zeroed by the
/// caller). The checksum sector (11) is computed with `sector` itself as
/// the scratch space for sectors 0..=10, so one sector of memory is enough.
pub fn boot_region_sector(
    layout: &crate::Layout,
    g: &Geometry,
    used: u64,
    index: u64,
    sector: &mut [u8],
) {
    use zerocopy::{FromZeros, IntoBytes};
    let bps = g.bps as usize;
    debug_assert_eq!(sector.len(), bps);
    match index {
        0 => {
            let mut bs = ondisk::BootSector::new_zeroed();
            bs.jump_boot = [0xEB, 0x76, 0x90];
            bs.file_system_name = *b"EXFAT   ";
            bs.partition_offset = (layout.partition_offset / u64::from(g.bps)).into();
            bs.volume_length = g.volume_sectors.into();
            bs.fat_offset = g.fat_offset.into();
            bs.fat_length = g.fat_length.into();
            bs.cluster_heap_offset = g.heap_offset.into();
            bs.cluster_count = g.cluster_count.into();
            bs.first_cluster_of_root_directory = g.root_cluster().into();
            bs.volume_serial_number = layout.serial.into();
            bs.file_system_revision = 0x0100.into();
            bs.bytes_per_sector_shift = g.bps.trailing_zeros() as u8;
            bs.sectors_per_cluster_shift = (g.cluster / u64::from(g.bps)).trailing_zeros() as u8;
            bs.number_of_fats = 1;
            bs.drive_select = 0x80;
            bs.percent_in_use = (used * 100 / u64::from(g.cluster_count)).min(100) as u8;
            bs.boot_code = [0xF4; 390];
            bs.boot_signature = 0xAA55.into();
            sector[..core::mem::size_of_val(&bs)].copy_from_slice(bs.as_bytes());
        }
        1..=8 => {
            ondisk::sign_extended_boot_sector(sector);
        }
        i if i == ondisk::OEM_PARAMETERS_SECTOR => {
            if let Some(sd) = layout.sd() {
                // The SD layout's Flash Parameters record, first in the OEM
                // Parameters sector (before the checksum, which covers it).
                let mut f = ondisk::FlashParameters::new_zeroed();
                f.parameters_guid = ondisk::FLASH_PARAMETERS_GUID;
                f.erase_block_size = (sd.erase_block_bytes as u32).into();
                sector[..core::mem::size_of_val(&f)].copy_from_slice(f.as_bytes());
            }
        }
        11 => {
            let mut sum = 0;
            for i in 0..11 {
                sector.fill(0);
                boot_region_sector(layout, g, used, i, sector);
                sum = ondisk::boot_checksum_continue(sum, i as usize * bps, sector);
            }
            ondisk::fill_checksum_sector(sector, sum);
        }
        _ => {}
    }
}

/// Fills `buf` with the boot region's bytes from byte `at` of the region
/// (whole sectors), for a volume with `used` clusters in use.
pub fn boot_region_fill(layout: &crate::Layout, g: &Geometry, used: u64, at: u64, buf: &mut [u8]) {
    let bps = u64::from(g.bps);
    for (i, sector) in buf.chunks_exact_mut(g.bps as usize).enumerate() {
        boot_region_sector(layout, g, used, at / bps + i as u64, sector);
    }
}

/// The root directory's system entries (at most four of 32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootEntries {
    bytes: [u8; 4 * ondisk::ENTRY_SIZE],
    len: usize,
}

impl RootEntries {
    fn push(&mut self, entry: &[u8]) {
        self.bytes[self.len..self.len + entry.len()].copy_from_slice(entry);
        self.len += entry.len();
    }

    /// The entries' bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The root directory's entries: volume label (always present, possibly
/// empty, as Windows writes it), allocation bitmap, up-case table and the
/// optional volume GUID. The rest of the root cluster is zero.
pub fn root_entries(layout: &crate::Layout, g: &Geometry) -> RootEntries {
    use zerocopy::{FromZeros, IntoBytes};
    let mut out = RootEntries {
        bytes: [0; 4 * ondisk::ENTRY_SIZE],
        len: 0,
    };
    let mut label = ondisk::LabelEntry::new_zeroed();
    label.entry_type = ondisk::TYPE_LABEL;
    if let Some(crate::label::EncodedLabel::Exfat(units)) = &layout.label_encoded {
        let units = units.units();
        label.character_count = units.len() as u8;
        for (dst, &u) in label.volume_label.iter_mut().zip(units) {
            *dst = u.into();
        }
    }
    out.push(label.as_bytes());
    let mut bitmap = ondisk::BitmapEntry::new_zeroed();
    bitmap.entry_type = ondisk::TYPE_BITMAP;
    bitmap.first_cluster = g.bitmap_cluster().into();
    bitmap.data_length = g.bitmap_bytes.into();
    out.push(bitmap.as_bytes());
    // The writer streams `upcase::COMPRESSED_TABLE` (fill_compressed_table), whose length and
    // checksum are these constants (pinned by the ondisk crate's tests).
    let mut up = ondisk::UpcaseEntry::new_zeroed();
    up.entry_type = ondisk::TYPE_UPCASE;
    up.table_checksum = upcase::UPCASE_TABLE_CHECKSUM.into();
    up.first_cluster = g.upcase_cluster().into();
    up.data_length = (upcase::UPCASE_TABLE_LEN as u64).into();
    out.push(up.as_bytes());
    if let Some(guid) = layout.volume_guid {
        let mut e = ondisk::GuidEntry::new_zeroed();
        e.entry_type = ondisk::TYPE_GUID;
        e.volume_guid = guid;
        let sum = ondisk::set_checksum(e.as_bytes());
        e.set_checksum = sum.into();
        out.push(e.as_bytes());
    }
    out
}

/// FAT entry `index` of a freshly formatted volume: the media entries, then
/// one contiguous chain each for the bitmap, the up-case table and the root.
pub fn fat_entry(g: &Geometry, index: u64) -> u32 {
    const EOC: u32 = 0xFFFF_FFFF;
    let chain_ends = [
        u64::from(g.upcase_cluster()) - 1,
        u64::from(g.root_cluster()) - 1,
        u64::from(g.root_cluster() + g.root_clusters) - 1,
    ];
    match index {
        0 => 0xFFFF_FFF8,
        1 => EOC,
        i if i > chain_ends[2] => 0,
        i if chain_ends.contains(&i) => EOC,
        i => (i + 1) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, KIB};
    #[allow(unused_imports)]
    use std::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };

    #[test]
    fn matches_mkfs_exfat_on_1gib_32k() {
        // Reference A.5: `truncate -s 1G a.img && mkfs.exfat -c 32K a.img`:
        // FatOffset 2048, FatLength 256, CHO 4096, CC 32704.
        let g = geometry(GIB, 512, 32 * KIB, 0, MIB).expect("valid");
        assert_eq!(g.fat_offset, 2048);
        assert_eq!(g.fat_length, 256);
        assert_eq!(g.heap_offset, 4096);
        assert_eq!(g.cluster_count, 32704);
        assert_eq!(g.bitmap_bytes, 4088);
        assert_eq!(
            (g.bitmap_cluster(), g.upcase_cluster(), g.root_cluster()),
            (2, 3, 4)
        );
    }
}
