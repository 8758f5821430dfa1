//! The FAT boot sector: [`parse_boot_sector`] checks the BPB in steps and
//! returns [`FatBoot`].

use core::mem::offset_of;

use mkfs_alloc_ondisk::fat::{Bpb, Fat16BootSector, Fat32BootSector, EXTENDED_BOOT_SIG};
use zerocopy::FromBytes;

use crate::error::ParseError;
use crate::probe::ascii_label;
use crate::report::FsKind;

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
///
/// # Errors
///
/// A [`ParseError`] naming the field, its position, the expected and the
/// actual value: a short sector, no 55 AA signature, a sector size, cluster
/// size, FAT count or geometry out of range.
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
            offset_of!(Fat32BootSector, ebpb.root_clus),
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
            offset_of!(Bpb, byts_per_sec),
            "512, 1024, 2048 or 4096",
            bps,
        ));
    }
    let spc = u32::from(b.bpb.sec_per_clus);
    if !spc.is_power_of_two() {
        return Err(ParseError::field(
            "SecPerClus",
            offset_of!(Bpb, sec_per_clus),
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
    // FAT12/16 keep their root directory in its own region, RootEntCnt
    // entries long: none is no root directory (fatgen103 requires a count
    // that fills whole sectors; fsck.fat: "Root directory has zero size").
    let root_ent = u32::from(b.bpb.root_ent_cnt.get());
    if !is32 && root_ent == 0 {
        return Err(ParseError::field(
            "RootEntCnt",
            offset_of!(Bpb, root_ent_cnt),
            "non-zero on FAT12/16 (FATSz16 is not 0)",
            root_ent,
        ));
    }
    if tot == 0 || fatsz == 0 {
        let (field, position, actual) = if tot == 0 {
            ("TotSec16/TotSec32", offset_of!(Bpb, tot_sec16), tot)
        } else if is32 {
            ("FATSz32", offset_of!(Fat32BootSector, ebpb.fat_sz32), fatsz)
        } else {
            ("FATSz16", offset_of!(Bpb, fat_sz16), fatsz)
        };
        return Err(ParseError::field(field, position, "non-zero", actual));
    }
    Ok(BpbCounts {
        bps,
        spc,
        rsvd,
        nfats,
        root_ent,
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
            offset_of!(Bpb, tot_sec16),
            format!("> {data_sector} (the start of the data region)"),
            c.tot,
        ));
    }
    let cc64 = (u64::from(c.tot) - data_sector) / u64::from(c.spc);
    if cc64 == 0 {
        return Err(ParseError::field(
            "TotSec16/TotSec32",
            offset_of!(Bpb, tot_sec16),
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
    let kind = match FsKind::fat_width(cc64) {
        _ if c.is32 => FsKind::Fat32,
        FsKind::Fat32 => {
            return Err(ParseError::field(
                "FATSz16",
                offset_of!(Bpb, fat_sz16),
                format!("0 (a FAT32 BPB) for {cc64} clusters, too many for FAT16"),
                c.fatsz,
            ))
        }
        width => width,
    };
    if c.is32 && cc64 > FsKind::Fat32.max_clusters() {
        return Err(ParseError::field(
            "TotSec32",
            offset_of!(Bpb, tot_sec32),
            "at most 268,435,445 clusters",
            format!("{cc64} clusters"),
        ));
    }
    if c.is32 && cc64 < FsKind::Fat32.min_clusters() {
        warnings.push(format!(
            "FAT32 with only {cc64} clusters (fewer than 65,525): some systems read it as FAT16"
        ));
    }
    let cc = u32::try_from(cc64).map_err(|_| {
        ParseError::field(
            "TotSec32",
            offset_of!(Bpb, tot_sec32),
            "a 32-bit cluster count",
            format!("{cc64} clusters"),
        )
    })?;
    let fat_entries = u64::from(c.fatsz) * u64::from(c.bps) * 8 / kind.entry_bits();
    if fat_entries < cc64 + 2 {
        return Err(ParseError::field(
            if c.is32 { "FATSz32" } else { "FATSz16" },
            if c.is32 {
                offset_of!(Fat32BootSector, ebpb.fat_sz32)
            } else {
                offset_of!(Bpb, fat_sz16)
            },
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
