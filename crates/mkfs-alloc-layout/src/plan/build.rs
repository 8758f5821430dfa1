//! Turning the choices and the geometry into a [`Layout`], and a layout into
//! its regions (when asked for).

use super::choices::Choices;
use super::{Geometry, Layout, Region, RegionKind};
use crate::geometry::{ClusterSize, Clusters, ExfatGeometry, FatGeometry};
use crate::options::{FsKind, Medium};

/// Where the FATs and the data region lie, and how many clusters there are.
struct Placement {
    cluster_count: u32,
    used_clusters: u32,
    fat_offset: u64,
    fat_bytes: u64,
    fat_count: u32,
    data_offset: u64,
}

/// The regions of a volume, in order; empty ones are left out.
struct Regions(super::layout::Regions);

impl Regions {
    fn push(&mut self, kind: RegionKind, index: u32, offset: u64, len: u64, written: bool) {
        if len > 0 {
            self.0.push(Region {
                kind,
                index,
                offset,
                len,
                written,
            });
        }
    }
}

/// The exFAT placement.
fn exfat_placement(g: &ExfatGeometry, bps: u64) -> Placement {
    Placement {
        cluster_count: g.cluster_count,
        used_clusters: g.used_clusters(),
        fat_offset: u64::from(g.fat_offset) * bps,
        fat_bytes: u64::from(g.fat_length) * bps,
        fat_count: 1,
        data_offset: u64::from(g.heap_offset) * bps,
    }
}

/// The FAT12/16/32 placement.
fn fat_placement(g: &FatGeometry, bps: u64) -> Placement {
    Placement {
        cluster_count: g.cluster_count,
        used_clusters: u32::from(g.fs == FsKind::Fat32),
        fat_offset: u64::from(g.rsvd) * bps,
        fat_bytes: u64::from(g.fat_sz) * bps,
        fat_count: g.num_fats(),
        data_offset: g.data_sector() * bps,
    }
}

/// The exFAT regions of a planned volume.
fn exfat_regions(l: &Layout, g: &ExfatGeometry, r: &mut Regions) {
    let bps = l.sector_size.bytes();
    let (fat_off, fat_len, heap) = (l.fat_offset, l.fat_bytes, l.data_offset);
    let br = mkfs_alloc_ondisk::exfat::BOOT_REGION_SECTORS * bps;
    r.push(RegionKind::BootRegion, 0, 0, br, true);
    r.push(RegionKind::BackupBootRegion, 0, br, br, true);
    r.push(RegionKind::Padding, 0, 2 * br, fat_off - 2 * br, true);
    r.push(RegionKind::Fat, 0, fat_off, fat_len, true);
    let fat_end = fat_off + fat_len;
    r.push(RegionKind::HeapPadding, 0, fat_end, heap - fat_end, true);
    let c = g.cluster;
    let bm = u64::from(g.bitmap_clusters) * c;
    let up = u64::from(g.upcase_clusters) * c;
    let rt = u64::from(g.root_clusters) * c;
    r.push(RegionKind::Bitmap, 0, heap, bm, true);
    r.push(RegionKind::Upcase, 0, heap + bm, up, true);
    r.push(RegionKind::RootDirectory, 0, heap + bm + up, rt, true);
    let used_end = heap + bm + up + rt;
    let heap_end = heap + u64::from(g.cluster_count) * c;
    r.push(
        RegionKind::FreeClusters,
        0,
        used_end,
        heap_end - used_end,
        false,
    );
    r.push(
        RegionKind::Tail,
        0,
        heap_end,
        l.volume_bytes - heap_end,
        false,
    );
}

/// The FAT12/16/32 regions of a planned volume.
fn fat_regions(l: &Layout, g: &FatGeometry, r: &mut Regions) {
    let bps = l.sector_size.bytes();
    let (rsvd, fat_len, data) = (l.fat_offset, l.fat_bytes, l.data_offset);
    r.push(RegionKind::BootRegion, 0, 0, rsvd, true);
    for i in 0..l.fat_count {
        let at = rsvd + u64::from(i) * fat_len;
        r.push(RegionKind::Fat, i, at, fat_len, true);
    }
    // FAT32: the root is cluster 2; FAT12/16: a fixed region.
    let (root, root_len) = if g.fs == FsKind::Fat32 {
        (data, g.cluster)
    } else {
        (g.root_sector() * bps, g.root_sectors() * bps)
    };
    r.push(RegionKind::RootDirectory, 0, root, root_len, true);
    let data_end = data + u64::from(g.cluster_count) * g.cluster;
    let free = data + u64::from(l.used_clusters) * g.cluster;
    r.push(RegionKind::FreeClusters, 0, free, data_end - free, false);
    r.push(
        RegionKind::Tail,
        0,
        data_end,
        l.volume_bytes - data_end,
        false,
    );
}

/// The regions of a planned volume, worked out when asked for (the writer
/// does not need them: firmware links none of this).
pub(crate) fn regions(l: &Layout) -> super::layout::Regions {
    let mut regions = Regions(super::layout::Regions::new());
    match &l.geometry {
        Geometry::Exfat(g) => exfat_regions(l, g, &mut regions),
        Geometry::Fat(g) => fat_regions(l, g, &mut regions),
    }
    regions.0
}

/// The layout of what the planner chose on `medium`.
pub(super) fn build(c: Choices, medium: &Medium, geometry: Geometry) -> Layout {
    let bios = c.bios;
    let bps = medium.sector_size().bytes();
    let volume_bytes = medium.volume_bytes();
    let p = match &geometry {
        Geometry::Exfat(g) => exfat_placement(g, bps),
        Geometry::Fat(g) => fat_placement(g, bps),
    };
    Layout {
        fs: c.fs,
        fs_rule: c.fs_rule,
        sector_size: medium.sector_size(),
        cluster_size: ClusterSize::planned(c.cluster),
        cluster_rule: c.cluster_rule,
        cluster_count: Clusters(p.cluster_count),
        volume_bytes,
        partition_offset: medium.partition_offset(),
        align: c.align,
        fat_offset: p.fat_offset,
        fat_bytes: p.fat_bytes,
        fat_count: p.fat_count,
        data_offset: p.data_offset,
        used_clusters: Clusters(p.used_clusters),
        serial: c.serial,
        label_encoded: c.label.as_ref().map(|(_, e)| e.clone()),
        label: c.label.map(|(l, _)| l),
        volume_guid: c.volume_guid,
        timestamp: c.timestamp,
        asked: c.asked,
        geometry,
        sd: None,
        bios,
    }
}
