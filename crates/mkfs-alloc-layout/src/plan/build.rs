//! Turning the choices and the geometry into the regions of a [`Layout`].

use super::choices::Choices;
use super::{Geometry, Layout, Region, RegionKind};
use crate::options::{FsKind, Medium};
use crate::{exfat, fat, rules};

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

/// The exFAT regions and placement.
fn exfat_regions(g: &exfat::Geometry, bps: u64, volume_bytes: u64, r: &mut Regions) -> Placement {
    let fat_off = u64::from(g.fat_offset) * bps;
    let fat_len = u64::from(g.fat_length) * bps;
    let heap = u64::from(g.heap_offset) * bps;
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
        volume_bytes - heap_end,
        false,
    );
    Placement {
        cluster_count: g.cluster_count,
        used_clusters: g.used_clusters(),
        fat_offset: fat_off,
        fat_bytes: fat_len,
        fat_count: 1,
        data_offset: heap,
    }
}

/// The FAT12/16/32 regions and placement.
fn fat_regions(g: &fat::Geometry, bps: u64, volume_bytes: u64, r: &mut Regions) -> Placement {
    let rsvd = u64::from(g.rsvd) * bps;
    let fat_len = u64::from(g.fat_sz) * bps;
    let data = g.data_sector() * bps;
    r.push(RegionKind::BootRegion, 0, 0, rsvd, true);
    r.push(RegionKind::Fat, 0, rsvd, fat_len, true);
    r.push(RegionKind::Fat, 1, rsvd + fat_len, fat_len, true);
    // FAT32: the root is cluster 2; FAT12/16: a fixed region.
    let (root, root_len, used) = if g.fs == FsKind::Fat32 {
        (data, g.cluster, 1)
    } else {
        (g.root_sector() * bps, g.root_sectors() * bps, 0)
    };
    r.push(RegionKind::RootDirectory, 0, root, root_len, true);
    let data_end = data + u64::from(g.cluster_count) * g.cluster;
    let free = data + u64::from(used) * g.cluster;
    r.push(RegionKind::FreeClusters, 0, free, data_end - free, false);
    r.push(
        RegionKind::Tail,
        0,
        data_end,
        volume_bytes - data_end,
        false,
    );
    Placement {
        cluster_count: g.cluster_count,
        used_clusters: used,
        fat_offset: rsvd,
        fat_bytes: fat_len,
        fat_count: 2,
        data_offset: data,
    }
}

/// The layout of what the planner chose on `medium`.
pub(super) fn build(c: Choices, medium: &Medium, geometry: Geometry) -> Layout {
    let bps = u64::from(medium.sector_size);
    let volume_bytes = medium.volume_bytes;
    let mut regions = Regions(super::layout::Regions::new());
    let p = match &geometry {
        Geometry::Exfat(g) => exfat_regions(g, bps, volume_bytes, &mut regions),
        Geometry::Fat(g) => fat_regions(g, bps, volume_bytes, &mut regions),
    };
    Layout {
        fs: c.fs,
        fs_rule: c.fs_rule,
        sector_size: medium.sector_size,
        cluster_size: c.cluster,
        cluster_rule: c.cluster_rule,
        windows_default_cluster: rules::windows_default(c.fs, volume_bytes),
        cluster_count: p.cluster_count,
        volume_bytes,
        partition_offset: medium.partition_offset,
        align: c.align,
        fat_offset: p.fat_offset,
        fat_bytes: p.fat_bytes,
        fat_count: p.fat_count,
        data_offset: p.data_offset,
        used_clusters: p.used_clusters,
        serial: c.serial,
        label_encoded: c.label.as_ref().map(|(_, e)| e.clone()),
        label: c.label.map(|(l, _)| l),
        volume_guid: c.volume_guid,
        timestamp: c.timestamp,
        warnings: c.warnings,
        geometry,
        regions: regions.0,
        sd: None,
    }
}
