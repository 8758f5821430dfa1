//! exFAT: boot region, root directory, allocation bitmap, directory walk.
//!
//! ```text
//!  volume start
//!  │ sectors 0..=11   main boot region (boot sector, extended boot sectors,
//!  │                  OEM, reserved, checksum sector)
//!  │ sectors 12..=23  backup boot region (used when the main one is damaged)
//!  ├ FatOffset        FAT (32-bit entries)
//!  ├ ClusterHeapOffset cluster 2 …: bitmap, up-case table, root directory,
//!  │                  files (FAT chains, or contiguous with NoFatChain)
//!  └ VolumeLength
//! ```
//!
//! Sources: exFAT specification §3.1 (boot sector), §3.4 (boot checksum),
//! §6.3 (entry sets and their checksum), §7.1-7.7 (bitmap, up-case, label,
//! file, stream extension and file name entries)
//! (<https://learn.microsoft.com/en-us/windows/win32/fileio/exfat-specification>).

use core::mem::offset_of;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::FsKind;
use mkfs_alloc_ondisk::exfat::{
    boot_checksum, set_checksum, BootSector, LabelEntry, BOOT_REGION_SECTORS, FILE_SYSTEM_NAME,
    TYPE_BITMAP, TYPE_LABEL, TYPE_UPCASE,
};
use zerocopy::FromBytes;

use crate::chain::{ChainReader, Fat, Geo, Source};
use crate::error::{InspectError, ParseError};
use crate::io::Reader;
use crate::report::Volume;
use crate::walk::{
    chain_error, check_fits, impl_dir_parser, planner_cluster_sizes, powers, scan_dir,
    set_geometry, Disk, FatRegions,
};

mod dir;
pub use dir::{parse_directory, ExfatDirParser, ExfatFile, ExfatItem};

/// File entry type (from `mkfs-alloc-ondisk`).
pub const TYPE_FILE: u8 = mkfs_alloc_ondisk::exfat::TYPE_FILE;
/// Stream extension entry type (from `mkfs-alloc-ondisk`).
pub const TYPE_STREAM: u8 = mkfs_alloc_ondisk::exfat::TYPE_STREAM_EXTENSION;
/// File name entry type (from `mkfs-alloc-ondisk`).
pub const TYPE_NAME: u8 = mkfs_alloc_ondisk::exfat::TYPE_FILE_NAME;
/// Directory attribute bit (from `mkfs-alloc-ondisk`).
pub const ATTR_DIRECTORY: u16 = mkfs_alloc_ondisk::exfat::file_attributes::DIRECTORY;
/// Largest directory (spec §6.2: 256 MiB).
pub const MAX_DIR_BYTES: u64 = 256 << 20;

/// The fields of a valid exFAT boot region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExfatBoot {
    /// Bytes per sector.
    pub sector_size: u32,
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// PartitionOffset (sectors).
    pub partition_offset: u64,
    /// VolumeLength (sectors).
    pub volume_length: u64,
    /// FatOffset (sectors).
    pub fat_offset: u32,
    /// FatLength (sectors).
    pub fat_length: u32,
    /// ClusterHeapOffset (sectors).
    pub heap_offset: u32,
    /// ClusterCount.
    pub cluster_count: u32,
    /// FirstClusterOfRootDirectory.
    pub root_cluster: u32,
    /// VolumeSerialNumber.
    pub serial: u32,
    /// VolumeFlags.
    pub volume_flags: u16,
    /// NumberOfFats.
    pub fat_count: u8,
    /// PercentInUse.
    pub percent_in_use: u8,
    /// Oddities that do not stop reading.
    pub warnings: Vec<String>,
}

/// Checks a boot region (12 sectors; the sector size is read from byte 108)
/// and returns its fields. Errors name the field, expected and actual values.
///
/// # Errors
///
/// A [`ParseError`] naming the field, its position, the expected and the
/// actual value: a short region, a wrong signature or name, a sector or
/// cluster size out of range, a geometry that does not fit, a bad boot
/// checksum.
pub fn parse_boot_region(region: &[u8]) -> Result<ExfatBoot, ParseError> {
    let (b, _) = BootSector::read_from_prefix(region).map_err(|_| ParseError::TooShort {
        structure: "exFAT boot sector",
        expected: 512,
        actual: region.len(),
    })?;
    let (bps_shift, spc_shift) = check_shifts(&b)?;
    let bps = 1u32 << bps_shift;
    let warnings = check_region(region, &b, bps)?;
    check_geometry(&b, bps, spc_shift)?;
    Ok(ExfatBoot {
        sector_size: bps,
        cluster_size: u64::from(bps) << spc_shift,
        partition_offset: b.partition_offset.get(),
        volume_length: b.volume_length.get(),
        fat_offset: b.fat_offset.get(),
        fat_length: b.fat_length.get(),
        heap_offset: b.cluster_heap_offset.get(),
        cluster_count: b.cluster_count.get(),
        root_cluster: b.first_cluster_of_root_directory.get(),
        serial: b.volume_serial_number.get(),
        volume_flags: b.volume_flags.get(),
        fat_count: b.number_of_fats,
        percent_in_use: b.percent_in_use,
        warnings,
    })
}

/// Step 1: the name, and the sector and cluster size shifts.
fn check_shifts(b: &BootSector) -> Result<(u8, u8), ParseError> {
    if &b.file_system_name != b"EXFAT   " {
        return Err(ParseError::field(
            "FileSystemName",
            offset_of!(BootSector, file_system_name),
            "\"EXFAT   \"",
            format!("{:?}", String::from_utf8_lossy(&b.file_system_name)),
        ));
    }
    let bps_shift = b.bytes_per_sector_shift;
    if !(9..=12).contains(&bps_shift) {
        return Err(ParseError::field(
            "BytesPerSectorShift",
            offset_of!(BootSector, bytes_per_sector_shift),
            "9..=12",
            bps_shift,
        ));
    }
    let spc_shift = b.sectors_per_cluster_shift;
    if spc_shift > 25 - bps_shift {
        return Err(ParseError::field(
            "SectorsPerClusterShift",
            offset_of!(BootSector, sectors_per_cluster_shift),
            format!(
                "0..={} (clusters up to 32 MiB with {}-byte sectors)",
                25 - bps_shift,
                1u32 << bps_shift
            ),
            spc_shift,
        ));
    }
    Ok((bps_shift, spc_shift))
}

/// Step 2: the region as a whole: its length, `MustBeZero`, the boot
/// signature (a warning) and the checksum sector. Returns the warnings.
fn check_region(region: &[u8], b: &BootSector, bps: u32) -> Result<Vec<String>, ParseError> {
    let need = usize::try_from(BOOT_REGION_SECTORS).unwrap_or(12) * bps as usize;
    if region.len() < need {
        return Err(ParseError::TooShort {
            structure: "exFAT boot region",
            expected: need,
            actual: region.len(),
        });
    }
    let mut warnings = Vec::new();
    if b.must_be_zero.iter().any(|&x| x != 0) {
        return Err(ParseError::field(
            "MustBeZero",
            offset_of!(BootSector, must_be_zero),
            "all zero",
            "not all zero",
        ));
    }
    if b.boot_signature.get() != 0xAA55 {
        warnings.push(format!(
            "boot signature {:#06x}, expected 0xaa55",
            b.boot_signature.get()
        ));
    }
    let sum_at = 11 * bps as usize;
    let stored = region
        .get(sum_at..)
        .and_then(mkfs_alloc_ondisk::exfat::stored_checksum)
        .unwrap_or(0);
    let computed = boot_checksum(&region[..sum_at]);
    if stored != computed {
        return Err(ParseError::Checksum {
            what: "boot checksum",
            position: sum_at,
            stored,
            computed,
        });
    }
    Ok(warnings)
}

/// Step 3: revision, FAT count and the regions: FATs, cluster heap and
/// root directory inside the volume and in order.
fn check_geometry(b: &BootSector, bps: u32, spc_shift: u8) -> Result<(), ParseError> {
    let rev = b.file_system_revision.get();
    if rev >> 8 != 1 {
        return Err(ParseError::field(
            "FileSystemRevision",
            offset_of!(BootSector, file_system_revision),
            "1.xx",
            format!("{}.{:02}", rev >> 8, rev & 0xFF),
        ));
    }
    let nfats = b.number_of_fats;
    if !(1..=2).contains(&nfats) {
        return Err(ParseError::field("NumberOfFats", 110, "1 or 2", nfats));
    }
    let fat_offset = b.fat_offset.get();
    let fat_length = b.fat_length.get();
    let heap = b.cluster_heap_offset.get();
    let cc = b.cluster_count.get();
    let vol_len = b.volume_length.get();
    if fat_offset < 24 {
        return Err(ParseError::field("FatOffset", 80, ">= 24", fat_offset));
    }
    if cc == 0 || u64::from(cc) > FsKind::Exfat.max_clusters() {
        return Err(ParseError::field("ClusterCount", 92, "1..=0xFFFFFFF5", cc));
    }
    let fat_end = u64::from(fat_offset) + u64::from(fat_length) * u64::from(nfats);
    if u64::from(heap) < fat_end {
        return Err(ParseError::field(
            "ClusterHeapOffset",
            offset_of!(BootSector, cluster_heap_offset),
            format!(">= {fat_end} (the end of the FATs)"),
            heap,
        ));
    }
    if u64::from(fat_length) * u64::from(bps) < (u64::from(cc) + 2) * 4 {
        return Err(ParseError::field(
            "FatLength",
            offset_of!(BootSector, fat_length),
            format!("room for {} entries", u64::from(cc) + 2),
            format!("{fat_length} sectors"),
        ));
    }
    let heap_end = u64::from(heap) + (u64::from(cc) << spc_shift);
    if heap_end > vol_len {
        return Err(ParseError::field(
            "VolumeLength",
            offset_of!(BootSector, volume_length),
            format!(">= {heap_end} (the end of the cluster heap)"),
            vol_len,
        ));
    }
    let root = b.first_cluster_of_root_directory.get();
    if root < 2 || u64::from(root) > u64::from(cc) + 1 {
        return Err(ParseError::field(
            "FirstClusterOfRootDirectory",
            offset_of!(BootSector, first_cluster_of_root_directory),
            format!("2..={}", u64::from(cc) + 1),
            root,
        ));
    }
    Ok(())
}

/// Reads the boot region at `start`, falling back to the backup.
pub(crate) fn read_boot<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    start: u64,
    warnings: &mut Vec<String>,
) -> Result<ExfatBoot, InspectError> {
    let region_at =
        |r: &mut Reader<'_, D>, off: u64| -> Result<Result<ExfatBoot, ParseError>, InspectError> {
            let s0 = r.read_vec("exFAT boot sector", off, 512)?;
            let shift = s0[108];
            if !(9..=12).contains(&shift) {
                return Ok(parse_boot_region(&s0));
            }
            let len = 12usize << shift;
            let region = r.read_vec("exFAT boot region", off, len)?;
            Ok(parse_boot_region(&region))
        };
    let main = region_at(r, start)?;
    let main_err = match main {
        Ok(b) => return Ok(b),
        Err(e) => e,
    };
    for shift in 9..=12u32 {
        let off = start + (12u64 << shift);
        let Some(s0) = r.read_opt(off, 512)? else {
            continue;
        };
        let Ok((bs, _)) = BootSector::ref_from_prefix(&s0) else {
            continue;
        };
        if bs.file_system_name != FILE_SYSTEM_NAME || u32::from(bs.bytes_per_sector_shift) != shift
        {
            continue;
        }
        if let Ok(Ok(b)) = region_at(r, off) {
            warnings.push(format!(
                "main boot region damaged ({main_err}); using the backup boot region"
            ));
            return Ok(b);
        }
    }
    Err(InspectError::corrupt(
        "exFAT boot region",
        start,
        format!("{main_err}; the backup boot region is not valid either"),
    ))
}

/// Fills `vol` for an exFAT volume, all but its files; returns the cluster
/// sizes to compare the files' footprint at.
pub(crate) fn inspect<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    vol: &mut Volume,
) -> Result<Vec<u64>, InspectError> {
    let start = vol.start;
    let b = read_boot(r, start, &mut vol.warnings)?;
    vol.warnings.extend(b.warnings.iter().cloned());
    let (geo, regions, active) = regions_of(&b, start);
    set_geometry(vol, &regions, &geo);
    note_header(vol, &b);
    check_fits(vol, "exFAT volume", regions.fs_bytes)?;
    let mut fat = Fat::new(
        FsKind::Exfat,
        regions.fat_offset,
        regions.fat_bytes,
        geo.max_cluster(),
    );
    let mut d = Disk {
        r,
        fat: &mut fat,
        geo: &geo,
    };
    let root = Source::Chain(b.root_cluster);
    let bitmap = read_root_entries(&mut d, root, active, vol)?;
    let Some((bm_first, bm_len)) = bitmap else {
        return Err(InspectError::corrupt(
            "exFAT root directory",
            geo.cluster_offset(b.root_cluster),
            "no allocation bitmap entry",
        ));
    };

    // Used and free space from the bitmap.
    let used = count_bitmap(&mut d, bm_first, bm_len, &mut vol.warnings)?;
    let cc = u64::from(b.cluster_count);
    vol.used_bytes = Some(used * b.cluster_size);
    vol.free_bytes = Some((cc - used.min(cc)) * b.cluster_size);

    let bps = u64::from(b.sector_size);
    let mut sizes = planner_cluster_sizes(FsKind::Exfat, regions.fs_bytes, b.sector_size, start);
    if sizes.is_empty() {
        sizes = powers(bps, mkfs_alloc_layout::exfat::MAX_CLUSTER);
    }
    Ok(sizes)
}

/// Where the active FAT and the cluster heap are on the medium, for a
/// volume at byte `start`; and which FAT is active (0 or 1).
pub(crate) fn regions_of(b: &ExfatBoot, start: u64) -> (Geo, FatRegions, u64) {
    let bps = u64::from(b.sector_size);
    let active = if b.fat_count == 2 && b.volume_flags & 1 != 0 {
        1u64
    } else {
        0
    };
    let geo = Geo {
        data_offset: start + u64::from(b.heap_offset) * bps,
        cluster_size: b.cluster_size,
        cluster_count: b.cluster_count,
    };
    let regions = FatRegions {
        fs_bytes: b.volume_length.saturating_mul(bps),
        sector_size: b.sector_size,
        fat_offset: start + (u64::from(b.fat_offset) + active * u64::from(b.fat_length)) * bps,
        fat_bytes: u64::from(b.fat_length) * bps,
        fat_count: u32::from(b.fat_count),
    };
    (geo, regions, active)
}

/// The serial, and warnings for a `PartitionOffset` that disagrees with
/// where the volume is and for the dirty flag.
fn note_header(vol: &mut Volume, b: &ExfatBoot) {
    let (start, bps) = (vol.start, u64::from(b.sector_size));
    vol.serial = Some(format!("{:08X}", b.serial));
    if b.partition_offset != 0 && b.partition_offset.saturating_mul(bps) != start {
        vol.warnings.push(format!(
            "PartitionOffset says the volume starts at sector {} ({} bytes) but it is at byte {start}",
            b.partition_offset,
            b.partition_offset.saturating_mul(bps)
        ));
    }
    if b.volume_flags & 0x2 != 0 {
        vol.warnings
            .push("the volume is marked dirty (not cleanly unmounted)".into());
    }
}

/// What the root directory's system entries say: the one scan of them, for
/// the report and for the model.
pub(crate) struct RootEntries {
    /// The active allocation bitmap (first cluster, length).
    pub(crate) bitmap: Option<(u32, u64)>,
    /// The up-case table (first cluster, length) and its TableChecksum.
    pub(crate) upcase: Option<((u32, u64), u32)>,
    /// The volume label entry's text.
    pub(crate) label: Option<String>,
    /// The directory has an end-of-directory entry.
    pub(crate) ended: bool,
}

/// Reads the root directory's system entries: the allocation bitmap of the
/// active FAT (`active`: 0 or 1), the up-case table and the label.
pub(crate) fn root_entries<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    root: Source,
    active: u64,
) -> Result<RootEntries, InspectError> {
    let mut parser = ExfatDirParser::new();
    let mut e = RootEntries {
        bitmap: None,
        upcase: None,
        label: None,
        ended: false,
    };
    scan_dir(d, root, MAX_DIR_BYTES, &mut parser, |item| {
        match item {
            ExfatItem::Bitmap {
                flags,
                first_cluster,
                data_length,
            } if e.bitmap.is_none() && u64::from(flags & 1) == active => {
                e.bitmap = Some((first_cluster, data_length));
            }
            ExfatItem::Upcase {
                first_cluster,
                data_length,
                checksum,
            } if e.upcase.is_none() => e.upcase = Some(((first_cluster, data_length), checksum)),
            ExfatItem::Label(l) if e.label.is_none() => e.label = Some(l),
            _ => {}
        }
        false
    })?;
    e.ended = parser.ended();
    Ok(e)
}

/// The root directory's system entries for the report: sets the label and
/// returns the active allocation bitmap (first cluster, length).
fn read_root_entries<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    root: Source,
    active: u64,
    vol: &mut Volume,
) -> Result<Option<(u32, u64)>, InspectError> {
    let e = root_entries(d, root, active)?;
    vol.label = e.label.filter(|l| !l.is_empty());
    if !e.ended {
        vol.warnings
            .push("the root directory has no end-of-directory entry".into());
    }
    Ok(e.bitmap)
}

/// Counts the set bits of the first `cluster_count` bits of the bitmap.
fn count_bitmap<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    first: u32,
    len: u64,
    warnings: &mut Vec<String>,
) -> Result<u64, InspectError> {
    let cc = u64::from(d.geo.cluster_count);
    let need = cc.div_ceil(8);
    if len < need {
        return Err(InspectError::corrupt(
            "exFAT allocation bitmap entry",
            d.geo.cluster_offset(first),
            format!("DataLength {len} bytes, {need} needed for {cc} clusters"),
        ));
    }
    match count_bits(d, Source::Chain(first), need, cc) {
        Err(InspectError::Chain { problem, .. }) => {
            warnings.push(format!(
                "allocation bitmap: {problem}; read as contiguous clusters instead"
            ));
            count_bits(d, Source::Contiguous(first), need, cc)
        }
        other => other,
    }
}

fn count_bits<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    src: Source,
    need: u64,
    cc: u64,
) -> Result<u64, InspectError> {
    let mut reader = ChainReader::new(src, need);
    let mut bits_left = cc;
    let mut set = 0u64;
    while let Some(piece) =
        reader.next_piece(d.r, d.fat, d.geo, None, &|| "allocation bitmap".to_string())?
    {
        for &byte in piece {
            if bits_left >= 8 {
                set += u64::from(byte.count_ones());
                bits_left -= 8;
            } else {
                let mask = (1u16 << bits_left) - 1;
                set += u64::from((u16::from(byte) & mask).count_ones());
                bits_left = 0;
            }
        }
    }
    if reader.bytes_read() < need {
        return Err(chain_error(
            "allocation bitmap",
            crate::error::ChainProblem::Short {
                clusters: reader.clusters(),
                expected: need.div_ceil(d.geo.cluster_size),
            },
        ));
    }
    Ok(set)
}

#[cfg(test)]
mod tests;
