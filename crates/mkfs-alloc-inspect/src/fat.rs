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
//! §5 (FSInfo), §6 (directory entries), §7 (long names and their checksum);
//! reference `on-disk-format.md` B.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::FsType;
use mkfs_alloc_ondisk::fat::{
    Fat16BootSector, Fat32BootSector, FsInfo, EXTENDED_BOOT_SIG, FSINFO_LEAD_SIG, FSINFO_STRUC_SIG,
    FSINFO_TRAIL_SIG,
};
use zerocopy::FromBytes;

use crate::chain::{Fat, FatBits, Geo, Source};
use crate::error::{InspectError, ParseError};
use crate::io::{Reader, MAX_READ};
use crate::probe::ascii_label;
use crate::report::{FsKind, Volume};
use crate::walk::{
    check_fits, display_path, impl_dir_parser, planner_cluster_sizes, powers, scan_dir,
    set_geometry, walk, Allocation, DirFormat, Disk, FatRegions, Found, Pending, Walker,
};
use crate::InspectOptions;

mod dir;
pub use dir::{lfn_checksum, parse_directory, FatDirParser, FatEntry, FatItem};

/// Largest FAT directory: 65,536 entries of 32 bytes (fatgen103 §6).
pub const MAX_DIR_BYTES: u64 = 65_536 * 32;
/// Directory attribute bit (from `mkfs-alloc-ondisk`).
pub const ATTR_DIRECTORY: u8 = mkfs_alloc_ondisk::fat::attr::DIRECTORY;
/// Volume label attribute (from `mkfs-alloc-ondisk`).
pub const ATTR_VOLUME_ID: u8 = mkfs_alloc_ondisk::fat::attr::VOLUME_ID;
/// Long-name entry attribute (from `mkfs-alloc-ondisk`).
pub const ATTR_LONG_NAME: u8 = mkfs_alloc_ondisk::fat::attr::LONG_NAME;

/// The fields of a valid FAT boot sector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatBoot {
    /// FAT12, FAT16 or FAT32.
    pub kind: FsKind,
    /// Bytes per sector.
    pub sector_size: u32,
    /// Sectors per cluster.
    pub sectors_per_cluster: u32,
    /// Reserved sectors.
    pub reserved: u32,
    /// Number of FATs.
    pub fat_count: u32,
    /// Root directory entries (FAT12/16).
    pub root_entries: u32,
    /// Total sectors.
    pub total_sectors: u32,
    /// Sectors per FAT.
    pub fat_size: u32,
    /// Hidden sectors (partition start LBA).
    pub hidden_sectors: u32,
    /// First cluster of the root directory (FAT32).
    pub root_cluster: u32,
    /// FSInfo sector (FAT32).
    pub fs_info: u32,
    /// ExtFlags (FAT32).
    pub ext_flags: u16,
    /// Number of data clusters.
    pub cluster_count: u32,
    /// First data sector.
    pub data_sector: u64,
    /// Volume serial number, if the extended BPB has one.
    pub serial: Option<u32>,
    /// BPB volume label, unless absent or `NO NAME`.
    pub label: Option<String>,
    /// Oddities that do not stop reading.
    pub warnings: Vec<String>,
}

impl FatBoot {
    /// Cluster size in bytes.
    pub fn cluster_size(&self) -> u64 {
        u64::from(self.sector_size) * u64::from(self.sectors_per_cluster)
    }
}

/// Checks a FAT boot sector (at least 512 bytes) and returns its fields.
///
/// The type follows Linux and fatgen103: a BPB with a 16-bit FAT size of 0
/// is FAT32; otherwise fewer than 4085 clusters is FAT12, else FAT16.
pub fn parse_boot_sector(s: &[u8]) -> Result<FatBoot, ParseError> {
    let (b, _) = Fat32BootSector::read_from_prefix(s).map_err(|_| ParseError::TooShort {
        structure: "FAT boot sector",
        expected: 512,
        actual: s.len(),
    })?;
    let mut warnings = Vec::new();
    let bpb = check_bpb(&b)?;
    if bpb.is32 && bpb.root_ent != 0 {
        warnings.push(format!(
            "FAT32 BPB with RootEntCnt {} (expected 0); ignored",
            bpb.root_ent
        ));
    }
    let (data_sector, cc64) = data_region(&bpb)?;
    let (kind, cc) = fat_type(&bpb, cc64, &mut warnings)?;
    let root_cluster = if bpb.is32 { b.ebpb.root_clus.get() } else { 0 };
    if bpb.is32 && (root_cluster < 2 || u64::from(root_cluster) > cc64 + 1) {
        return Err(ParseError::field(
            "RootClus",
            44,
            format!("2..={}", cc64 + 1),
            root_cluster,
        ));
    }
    if b.signature.get() != 0xAA55 {
        warnings.push(format!(
            "boot signature {:#06x}, expected 0xaa55",
            b.signature.get()
        ));
    }
    let (serial, label) = volume_id(s, bpb.is32);
    Ok(FatBoot {
        kind,
        sector_size: bpb.bps,
        sectors_per_cluster: bpb.spc,
        reserved: bpb.rsvd,
        fat_count: bpb.nfats,
        root_entries: if bpb.is32 { 0 } else { bpb.root_ent },
        total_sectors: bpb.tot,
        fat_size: bpb.fatsz,
        hidden_sectors: b.bpb.hidd_sec.get(),
        root_cluster,
        fs_info: if bpb.is32 {
            u32::from(b.ebpb.fs_info.get())
        } else {
            0
        },
        ext_flags: if bpb.is32 { b.ebpb.ext_flags.get() } else { 0 },
        cluster_count: cc,
        data_sector,
        serial,
        label,
        warnings,
    })
}

/// The BPB counts [`parse_boot_sector`] works from, each checked alone.
struct BpbCounts {
    bps: u32,
    spc: u32,
    rsvd: u32,
    nfats: u32,
    root_ent: u32,
    tot: u32,
    /// A FAT32 BPB (`FATSz16` is 0).
    is32: bool,
    fatsz: u32,
}

/// Step 1: the BPB fields, each in its valid range.
fn check_bpb(b: &Fat32BootSector) -> Result<BpbCounts, ParseError> {
    let bps = u32::from(b.bpb.byts_per_sec.get());
    if !mkfs_alloc_ondisk::valid_sector_size(bps) {
        return Err(ParseError::field(
            "BytsPerSec",
            11,
            "512, 1024, 2048 or 4096",
            bps,
        ));
    }
    let spc = u32::from(b.bpb.sec_per_clus);
    if !spc.is_power_of_two() {
        return Err(ParseError::field(
            "SecPerClus",
            13,
            "a power of two 1..=128",
            spc,
        ));
    }
    let rsvd = u32::from(b.bpb.rsvd_sec_cnt.get());
    if rsvd == 0 {
        return Err(ParseError::field("RsvdSecCnt", 14, "non-zero", rsvd));
    }
    let nfats = u32::from(b.bpb.num_fats);
    if !(1..=4).contains(&nfats) {
        return Err(ParseError::field("NumFATs", 16, "1..=4", nfats));
    }
    let tot = match b.bpb.tot_sec16.get() {
        0 => b.bpb.tot_sec32.get(),
        n => u32::from(n),
    };
    let is32 = b.bpb.fat_sz16.get() == 0;
    let fatsz = if is32 {
        b.ebpb.fat_sz32.get()
    } else {
        u32::from(b.bpb.fat_sz16.get())
    };
    if tot == 0 || fatsz == 0 {
        let (field, position, actual) = if tot == 0 {
            ("TotSec16/TotSec32", 19, tot)
        } else if is32 {
            ("FATSz32", 36, fatsz)
        } else {
            ("FATSz16", 22, fatsz)
        };
        return Err(ParseError::field(field, position, "non-zero", actual));
    }
    Ok(BpbCounts {
        bps,
        spc,
        rsvd,
        nfats,
        root_ent: u32::from(b.bpb.root_ent_cnt.get()),
        tot,
        is32,
        fatsz,
    })
}

/// Step 2: the first data sector and the number of data clusters (at
/// least one).
fn data_region(c: &BpbCounts) -> Result<(u64, u64), ParseError> {
    let root_dir_sectors = if c.is32 {
        0
    } else {
        (u64::from(c.root_ent) * 32).div_ceil(u64::from(c.bps))
    };
    let data_sector =
        u64::from(c.rsvd) + u64::from(c.nfats) * u64::from(c.fatsz) + root_dir_sectors;
    if data_sector >= u64::from(c.tot) {
        return Err(ParseError::field(
            "TotSec16/TotSec32",
            19,
            format!("> {data_sector} (the start of the data region)"),
            c.tot,
        ));
    }
    let cc64 = (u64::from(c.tot) - data_sector) / u64::from(c.spc);
    if cc64 == 0 {
        return Err(ParseError::field(
            "TotSec16/TotSec32",
            19,
            format!(
                "room for a cluster of {} sectors after sector {data_sector}",
                c.spc
            ),
            c.tot,
        ));
    }
    Ok((data_sector, cc64))
}

/// Step 3: the FAT type from the cluster count, and the checks that count
/// must pass for it (FAT32's range, a FAT large enough for every cluster).
fn fat_type(
    c: &BpbCounts,
    cc64: u64,
    warnings: &mut Vec<String>,
) -> Result<(FsKind, u32), ParseError> {
    let (kind, bits) = if c.is32 {
        (FsKind::Fat32, 32)
    } else if cc64 < 4085 {
        (FsKind::Fat12, 12)
    } else if cc64 < 65525 {
        (FsKind::Fat16, 16)
    } else {
        return Err(ParseError::field(
            "FATSz16",
            22,
            format!("0 (a FAT32 BPB) for {cc64} clusters, too many for FAT16"),
            c.fatsz,
        ));
    };
    if c.is32 && cc64 > mkfs_alloc_layout::fat::MAX_CLUSTERS {
        return Err(ParseError::field(
            "TotSec32",
            32,
            "at most 268,435,445 clusters",
            format!("{cc64} clusters"),
        ));
    }
    if c.is32 && cc64 < mkfs_alloc_layout::fat::SPEC_MIN_CLUSTERS {
        warnings.push(format!(
            "FAT32 with only {cc64} clusters (fewer than 65,525): some systems read it as FAT16"
        ));
    }
    let cc = u32::try_from(cc64).map_err(|_| {
        ParseError::field(
            "TotSec32",
            32,
            "a 32-bit cluster count",
            format!("{cc64} clusters"),
        )
    })?;
    let fat_entries = u64::from(c.fatsz) * u64::from(c.bps) * 8 / bits;
    if fat_entries < cc64 + 2 {
        return Err(ParseError::field(
            if c.is32 { "FATSz32" } else { "FATSz16" },
            if c.is32 { 36 } else { 22 },
            format!("room for {} entries ({cc} clusters)", cc64 + 2),
            format!("{} sectors, {fat_entries} entries", c.fatsz),
        ));
    }
    Ok((kind, cc))
}

/// Step 4: the serial and label of the extended BPB (FAT12/16 at byte 36,
/// FAT32 at 64): both with signature 0x29, the serial alone with the older
/// 0x28, neither otherwise. `NO NAME` is no label.
fn volume_id(s: &[u8], is32: bool) -> (Option<u32>, Option<String>) {
    let (sig, serial, label) = if is32 {
        match Fat32BootSector::ref_from_prefix(s) {
            Ok((b, _)) => (b.ebpb.boot_sig, b.ebpb.vol_id.get(), b.ebpb.vol_lab),
            Err(_) => return (None, None),
        }
    } else {
        match Fat16BootSector::ref_from_prefix(s) {
            Ok((b, _)) => (b.ebpb.boot_sig, b.ebpb.vol_id.get(), b.ebpb.vol_lab),
            Err(_) => return (None, None),
        }
    };
    match sig {
        EXTENDED_BOOT_SIG => (Some(serial), ascii_label(&label).filter(|l| l != "NO NAME")),
        0x28 => (Some(serial), None),
        _ => (None, None),
    }
}

fn bits(kind: FsKind) -> FatBits {
    match kind {
        FsKind::Fat12 => FatBits::Fat12,
        FsKind::Fat16 => FatBits::Fat16,
        _ => FatBits::Fat32,
    }
}

/// Fills `vol` for a FAT volume.
pub(crate) fn inspect<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    vol: &mut Volume,
    opts: &InspectOptions,
) -> Result<(), InspectError> {
    let start = vol.start;
    let s0 = r.read_vec("FAT boot sector", start, 512)?;
    let b = parse_boot_sector(&s0)
        .map_err(|e| InspectError::corrupt("FAT boot sector", start, e.to_string()))?;
    vol.warnings.extend(b.warnings.iter().cloned());
    vol.fs = Some(b.kind);
    let (geo, regions) = regions_of(&b, start);
    set_geometry(vol, &regions, &geo);
    note_header(vol, &b);
    check_fits(vol, "FAT volume", regions.fs_bytes)?;
    let fat_abs = regions.fat_offset + u64::from(active_fat(vol, &b)) * regions.fat_bytes;
    let fat_bits = bits(b.kind);
    let mut fat = Fat::new(fat_bits, fat_abs, regions.fat_bytes, geo.max_cluster());

    if b.kind == FsKind::Fat32 {
        check_fat32_reserved(r, vol, &b, start)?;
    }
    let fat32 = b.kind == FsKind::Fat32;
    let root = root_dir(&b, &regions);
    read_root_label(r, &mut fat, &geo, &root, vol, &b)?;

    // Free space from the FAT.
    let cs = geo.cluster_size;
    let free = count_free(r, fat_abs, fat_bits, b.cluster_count)?;
    let cc = u64::from(b.cluster_count);
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

    if opts.files {
        let bps = u64::from(b.sector_size);
        let mut sizes = if fat32 {
            planner_cluster_sizes(FsType::Fat32, regions.fs_bytes, b.sector_size, start)
        } else {
            powers(bps, (128 * bps).min(64 * 1024))
        };
        if sizes.is_empty() {
            sizes = powers(bps, 128 * bps);
        }
        let mut w = Walker::new(opts, &geo, sizes);
        let mut d = Disk {
            r,
            fat: &mut fat,
            geo: &geo,
        };
        walk(&mut d, &FatDirs { fat32 }, root, &mut w)?;
        w.finish(vol);
    }
    Ok(())
}

/// Where the first FAT and the data region are on the medium, for a volume
/// at byte `start`.
fn regions_of(b: &FatBoot, start: u64) -> (Geo, FatRegions) {
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
fn active_fat(vol: &mut Volume, b: &FatBoot) -> u32 {
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

/// The root directory: FAT32's cluster chain, or the fixed area after the
/// FATs of FAT12/16.
fn root_dir(b: &FatBoot, regions: &FatRegions) -> Pending {
    if b.kind == FsKind::Fat32 {
        Pending::root(
            Source::Chain(b.root_cluster),
            MAX_DIR_BYTES,
            Allocation::Chain,
        )
    } else {
        let off = regions.fat_offset + u64::from(b.fat_count) * regions.fat_bytes;
        let len = u64::from(b.root_entries) * 32;
        Pending::root(Source::Fixed(off), len, Allocation::Uncounted)
    }
}

/// The label entry of the root directory, authoritative over the BPB copy
/// (a warning when they differ).
fn read_root_label<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    fat: &mut Fat,
    geo: &Geo,
    root: &Pending,
    vol: &mut Volume,
    b: &FatBoot,
) -> Result<(), InspectError> {
    let mut root_label = None;
    let mut parser = FatDirParser::new(b.kind == FsKind::Fat32);
    let mut d = Disk { r, fat, geo };
    scan_dir(&mut d, root.src, root.declared, &mut parser, |item| {
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
    bits: FatBits,
    cluster_count: u32,
) -> Result<u64, InspectError> {
    let cc = u64::from(cluster_count);
    if bits == FatBits::Fat12 {
        // At most 4086 entries: 6 KiB.
        let len = usize::try_from(((cc + 2) * 3).div_ceil(2)).unwrap_or(0);
        let fat = r.read_vec("FAT", fat_abs, len)?;
        let mut free = 0;
        for n in 2..cc + 2 {
            let i = usize::try_from(n + n / 2).unwrap_or(0);
            let v = u16::from_le_bytes([fat[i], *fat.get(i + 1).unwrap_or(&0)]);
            let e = if n % 2 == 0 { v & 0x0FFF } else { v >> 4 };
            free += u64::from(e == 0);
        }
        return Ok(free);
    }
    let width: u64 = if bits == FatBits::Fat16 { 2 } else { 4 };
    let mut pos = fat_abs + 2 * width;
    let mut left = cc * width;
    let mut buf = vec![0u8; MAX_READ.min(usize::try_from(left).unwrap_or(MAX_READ))];
    let mut free = 0u64;
    while left > 0 {
        let n = usize::try_from(left.min(buf.len() as u64)).unwrap_or(0);
        let chunk = &mut buf[..n];
        r.read_at("FAT", pos, chunk)?;
        if width == 2 {
            free += chunk
                .chunks_exact(2)
                .filter(|e| e[0] == 0 && e[1] == 0)
                .count() as u64;
        } else {
            free += chunk
                .chunks_exact(4)
                .filter(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]) & 0x0FFF_FFFF == 0)
                .count() as u64;
        }
        pos += n as u64;
        left -= n as u64;
    }
    Ok(free)
}

/// FAT's side of the directory walk.
struct FatDirs {
    fat32: bool,
}

impl DirFormat for FatDirs {
    type Parser = FatDirParser;

    fn parser(&self) -> FatDirParser {
        FatDirParser::new(self.fat32)
    }

    fn item(&self, geo: &Geo, _w: &mut Walker<'_>, _dir: &Pending, item: FatItem) -> Found {
        let FatItem::Entry(e) = item else {
            return Found::Nothing;
        };
        if e.is_dot() {
            return Found::Nothing;
        }
        if !e.is_dir() {
            return Found::File {
                name: e.name,
                size: u64::from(e.size),
                first: e.first_cluster,
                contiguous: false,
            };
        }
        let at = if geo.valid(e.first_cluster) {
            Ok((
                Source::Chain(e.first_cluster),
                MAX_DIR_BYTES,
                Allocation::Chain,
            ))
        } else {
            Err(format!(
                "directory starts at cluster {} (valid: 2..={}{})",
                e.first_cluster,
                geo.max_cluster(),
                if e.first_cluster == 0 {
                    ", 0 means the root: a directory cycle"
                } else {
                    ""
                }
            ))
        };
        Found::Dir { name: e.name, at }
    }

    fn read(&self, w: &mut Walker<'_>, dir: &Pending, parser: &FatDirParser) {
        if parser.orphans > 0 {
            w.warn(format!(
                "{}: {} long names without a matching short entry",
                display_path(&dir.path),
                parser.orphans
            ));
        }
    }
}

#[cfg(test)]
mod tests;
