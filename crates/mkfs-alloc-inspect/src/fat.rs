//! FAT12, FAT16 and FAT32: BPB, FSInfo, FAT free count, directory walk with
//! long file names.
//!
//! ```text
//!  volume start (HiddSec on the medium)
//!  │ reserved sectors: boot sector (BPB), FAT32 FSInfo and backups
//!  ├ RsvdSecCnt        FAT #1, FAT #2 … (12-, 16- or 28-bit entries)
//!  ├ FAT12/16 only     fixed root directory (RootEntCnt × 32 bytes)
//!  ├ data region       cluster 2 … (FAT32: the root is a cluster chain)
//!  └ TotSec
//! ```
//!
//! Sources: fatgen103 §3 (BPB), §3.5 (FAT type by cluster count), §4 (FAT),
//! §5 (FSInfo), §6 (directory entries), §7 (long names and their checksum).

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::fat::table as fat_table;
use mkfs_alloc_ondisk::fat::{FsInfo, FSINFO_LEAD_SIG, FSINFO_STRUC_SIG, FSINFO_TRAIL_SIG};
use zerocopy::FromBytes;

use crate::chain::{Fat, Geo, Source};
use crate::error::InspectError;
use crate::io::{Reader, MAX_READ};
use crate::probe::ascii_label;
use crate::report::{FsKind, Volume};
use crate::walk::{
    check_fits, impl_dir_parser, planner_cluster_sizes, powers, scan_dir, set_geometry, Disk,
    FatRegions,
};

mod boot;
mod dir;
pub use boot::{parse_boot_sector, FatBoot};
pub use dir::{lfn_checksum, parse_directory, FatDirParser, FatEntry, FatItem};

/// Largest FAT directory: 65,536 entries of 32 bytes (fatgen103 §6).
pub const MAX_DIR_BYTES: u64 = 65_536 * 32;
/// Directory attribute bit (from `mkfs-alloc-ondisk`).
pub const ATTR_DIRECTORY: u8 = mkfs_alloc_ondisk::fat::attr::DIRECTORY;
/// Volume label attribute (from `mkfs-alloc-ondisk`).
pub const ATTR_VOLUME_ID: u8 = mkfs_alloc_ondisk::fat::attr::VOLUME_ID;
/// Long-name entry attribute (from `mkfs-alloc-ondisk`).
pub const ATTR_LONG_NAME: u8 = mkfs_alloc_ondisk::fat::attr::LONG_NAME;

/// Fills `vol` for a FAT volume, all but its files; returns the cluster
/// sizes to compare the files' footprint at.
pub(crate) fn inspect<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    vol: &mut Volume,
    defer_free: bool,
) -> Result<(Vec<u64>, Option<FreeCount>), InspectError> {
    let start = vol.start;
    let s0 = r.read_vec("FAT boot sector", start, 512)?;
    let b = parse_boot_sector(&s0)
        .map_err(|e| InspectError::corrupt("FAT boot sector", start, e.to_string()))?;
    vol.warnings.extend(b.warnings.iter().cloned());
    vol.fs = Some(b.kind.into());
    let (geo, regions) = regions_of(&b, start);
    set_geometry(vol, &regions, &geo);
    note_header(vol, &b);
    check_fits(vol, "FAT volume", regions.fs_bytes)?;
    let fat_abs = regions.fat_offset + u64::from(active_fat(vol, &b)) * regions.fat_bytes;
    let fat_bits = b.kind;
    let mut fat = Fat::new(fat_bits, fat_abs, regions.fat_bytes, geo.max_cluster());

    if b.kind == FsKind::Fat32 {
        check_fat32_reserved(r, vol, &b, start)?;
    }
    let fat32 = b.kind == FsKind::Fat32;
    let root = root_dir(&b, &regions);
    let mut d = Disk {
        r,
        fat: &mut fat,
        geo: &geo,
    };
    read_root_label(&mut d, &root, vol, &b)?;

    // Free space from the FAT, now or from the model's pass over it.
    let count = FreeCount {
        fat_abs,
        bits: fat_bits,
        cluster_count: b.cluster_count,
    };
    let deferred = if defer_free {
        Some(count)
    } else {
        let free = count.count(d.r)?;
        set_free(vol, free);
        None
    };

    let bps = u64::from(b.sector_size);
    let mut sizes = if fat32 {
        planner_cluster_sizes(FsKind::Fat32, regions.fs_bytes, b.sector_size, start)
    } else {
        powers(bps, (128 * bps).min(64 * 1024))
    };
    if sizes.is_empty() {
        sizes = powers(bps, 128 * bps);
    }
    Ok((sizes, deferred))
}

/// Where to count a FAT's free entries.
pub(crate) struct FreeCount {
    fat_abs: u64,
    bits: FsKind,
    cluster_count: u32,
}

impl FreeCount {
    /// The free entries of the FAT.
    pub(crate) fn count<D: BlockIo + ?Sized>(
        &self,
        r: &mut Reader<'_, D>,
    ) -> Result<u64, InspectError> {
        count_free(r, self.fat_abs, self.bits, self.cluster_count)
    }
}

/// Records `free` clusters of the FAT in `vol` (and a warning when FSInfo
/// says otherwise).
pub(crate) fn set_free(vol: &mut Volume, free: u64) {
    let (Some(cs), Some(cc)) = (vol.cluster_size, vol.cluster_count) else {
        return;
    };
    vol.free_bytes = Some(free * cs);
    vol.used_bytes = Some((cc - free.min(cc)) * cs);
    if let Some(hint) = vol.free_bytes_fsinfo {
        if hint != free * cs {
            vol.warnings.push(format!(
                "FSInfo free count ({} clusters) differs from the FAT ({free} clusters)",
                hint / cs
            ));
        }
    }
}

/// Where the first FAT and the data region are on the medium, for a volume
/// at byte `start`.
pub(crate) fn regions_of(b: &FatBoot, start: u64) -> (Geo, FatRegions) {
    let bps = u64::from(b.sector_size);
    let geo = Geo {
        data_offset: start + b.data_sector * bps,
        cluster_size: b.cluster_size(),
        cluster_count: b.cluster_count,
    };
    let regions = FatRegions {
        fs_bytes: u64::from(b.total_sectors) * bps,
        sector_size: b.sector_size,
        fat_offset: start + u64::from(b.reserved) * bps,
        fat_bytes: u64::from(b.fat_size) * bps,
        fat_count: b.fat_count,
    };
    (geo, regions)
}

/// Serial and BPB label, and a warning when `HiddSec` disagrees with where
/// the volume is.
fn note_header(vol: &mut Volume, b: &FatBoot) {
    let (start, bps) = (vol.start, u64::from(b.sector_size));
    vol.serial = b.serial.map(|s| format!("{s:08X}"));
    vol.label = b.label.clone();
    if start != 0 && u64::from(b.hidden_sectors) * bps != start {
        vol.warnings.push(format!(
            "HiddSec is {} sectors but the volume starts at byte {start} (sector {})",
            b.hidden_sectors,
            start / bps
        ));
    }
}

/// The FAT the volume uses: FAT32's `ExtFlags` may name one (mirroring
/// off); a number past the FATs falls back to the first, with a warning.
pub(crate) fn active_fat(vol: &mut Volume, b: &FatBoot) -> u32 {
    if b.kind != FsKind::Fat32 || b.ext_flags & 0x80 == 0 {
        return 0;
    }
    let a = u32::from(b.ext_flags & 0x0F);
    if a >= b.fat_count {
        vol.warnings.push(format!(
            "ExtFlags names FAT #{a} as active but there are {} FATs; using the first",
            b.fat_count
        ));
        0
    } else {
        a
    }
}

/// Where the root directory is and the most bytes it may hold.
pub(crate) struct RootDir {
    /// FAT32's cluster chain, or the fixed area after the FATs of FAT12/16.
    pub(crate) src: Source,
    /// FAT32: the format's limit; FAT12/16: the entries the BPB declares.
    pub(crate) declared: u64,
}

/// The root directory of a FAT volume.
pub(crate) fn root_dir(b: &FatBoot, regions: &FatRegions) -> RootDir {
    if b.kind == FsKind::Fat32 {
        RootDir {
            src: Source::Chain(b.root_cluster),
            declared: MAX_DIR_BYTES,
        }
    } else {
        let off = regions.fat_offset + u64::from(b.fat_count) * regions.fat_bytes;
        RootDir {
            src: Source::Fixed(off),
            declared: u64::from(b.root_entries) * 32,
        }
    }
}

/// The label entry of the root directory, authoritative over the BPB copy
/// (a warning when they differ).
fn read_root_label<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    root: &RootDir,
    vol: &mut Volume,
    b: &FatBoot,
) -> Result<(), InspectError> {
    let mut root_label = None;
    let mut parser = FatDirParser::new(b.kind == FsKind::Fat32);
    scan_dir(d, root.src, root.declared, &mut parser, |item| {
        if let FatItem::Label(l) = item {
            root_label.get_or_insert(l);
        }
        root_label.is_some()
    })?;
    if let Some(l) = root_label {
        if let Some(bpb) = &b.label {
            if *bpb != l {
                vol.warnings.push(format!(
                    "the label in the root directory ({l:?}) differs from the boot sector's ({bpb:?})"
                ));
            }
        }
        vol.label = Some(l);
    }
    Ok(())
}

/// FAT32 reserved area: backup boot sector and FSInfo.
fn check_fat32_reserved<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    vol: &mut Volume,
    b: &FatBoot,
    start: u64,
) -> Result<(), InspectError> {
    let bps = u64::from(b.sector_size);
    if b.fs_info == 0 || b.fs_info >= b.reserved {
        if b.fs_info != 0xFFFF && b.fs_info != 0 {
            vol.warnings.push(format!(
                "FSInfo sector {} lies outside the reserved area",
                b.fs_info
            ));
        }
        return Ok(());
    }
    let off = start + u64::from(b.fs_info) * bps;
    let s = r.read_vec("FAT32 FSInfo sector", off, 512)?;
    let Ok((fsi, _)) = FsInfo::read_from_prefix(&s[..]) else {
        return Ok(());
    };
    if fsi.lead_sig.get() != FSINFO_LEAD_SIG
        || fsi.struc_sig.get() != FSINFO_STRUC_SIG
        || fsi.trail_sig.get() != FSINFO_TRAIL_SIG
    {
        vol.warnings
            .push("FSInfo sector signatures are wrong; its free count is ignored".into());
        return Ok(());
    }
    let fc = fsi.free_count.get();
    if fc != 0xFFFF_FFFF {
        if fc <= b.cluster_count {
            vol.free_bytes_fsinfo = Some(u64::from(fc) * b.cluster_size());
        } else {
            vol.warnings.push(format!(
                "FSInfo free count {fc} exceeds the {} clusters",
                b.cluster_count
            ));
        }
    }
    Ok(())
}

/// Counts the free entries of clusters 2..cluster_count+2, streaming the FAT
/// in chunks of at most [`MAX_READ`] bytes.
fn count_free<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    fat_abs: u64,
    bits: FsKind,
    cluster_count: u32,
) -> Result<u64, InspectError> {
    let cc = u64::from(cluster_count);
    if bits == FsKind::Fat12 {
        // At most 4086 entries: 6 KiB (one byte more: the last odd entry's
        // span reads past the FAT's packed end, as zero).
        let len = usize::try_from(((cc + 2) * 3).div_ceil(2)).unwrap_or(0);
        let mut fat = r.read_vec("FAT", fat_abs, len)?;
        fat.push(0);
        let mut free = 0;
        for n in 2..cc + 2 {
            let i = usize::try_from(fat_table::entry_offset(bits, n)).unwrap_or(usize::MAX);
            let e = fat.get(i..).and_then(|b| fat_table::read_entry(bits, b, n));
            free += u64::from(e == Some(0));
        }
        return Ok(free);
    }
    let width = fat_table::entry_span(bits);
    let mut pos = fat_abs + 2 * width;
    let mut left = cc * width;
    let mut buf = vec![0u8; MAX_READ.min(usize::try_from(left).unwrap_or(MAX_READ))];
    let mut free = 0u64;
    while left > 0 {
        let n = usize::try_from(left.min(buf.len() as u64)).unwrap_or(0);
        let chunk = &mut buf[..n];
        r.read_at("FAT", pos, chunk)?;
        free += chunk
            .chunks_exact(usize::try_from(width).unwrap_or(4))
            .filter(|e| fat_table::read_entry(bits, e, 0) == Some(0))
            .count() as u64;
        pos += n as u64;
        left -= n as u64;
    }
    Ok(free)
}

#[cfg(test)]
mod tests;
