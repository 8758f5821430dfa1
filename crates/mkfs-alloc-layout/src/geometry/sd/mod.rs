//! The SD Association's layout (SD Specifications Part 2, File System
//! Specification) for a card of a given capacity: file system, cluster size,
//! boundary unit (BU), partition start, reserved sectors / FAT placement so
//! that the data region starts on a BU multiple, MBR type and CHS geometry.
//!
//! Pure arithmetic in 512-byte sectors, as SD Card Formatter computes it
//! (sources: <https://www.sdcard.org/downloads/pls/>; the tables and iterations
//! of sdFormatLinux's `source/format.cpp`, which formats cards "1:1 the same as
//! SDFormatter", <https://github.com/profi200/sdFormatLinux>; a factory-formatted
//! 64 GB card's numbers, <https://github.com/exfatprogs/exfatprogs/pull/149>):
//!
//! ```text
//!  card  ┌ MBR ┬ … ┬ partition start (FAT12/16: moved so the data region is on a BU;
//!        │     │   │                    FAT32 and exFAT: 1 BU)
//!        │     │   ├ FAT12/16: boot sector, 2 FATs, 512-entry root ─┐ data region
//!        │     │   ├ FAT32: RsvdSecCnt padded, 2 FATs ───────────────┤ at a BU
//!        │     │   └ exFAT: FAT at BU/2 (BU/2 long), heap at BU ─────┘ multiple
//! ```
//!
//! [`sd_layout`] is the arithmetic; the planner (`plan::sd`) turns it into a
//! [`Layout`](crate::Layout) when [`FormatOptions::sd`](crate::FormatOptions::sd)
//! is set, and the facade puts the partition where it says.

use crate::options::{FormatOptions, FsChoice, FsKind};
use crate::rules::FsRule;

pub use crate::error::{SdConflict, SdError};

/// Sectors of 512 bytes in which all SD geometry is counted.
pub const SD_SECTOR: u64 = 512;

/// Largest card with published parameters: 2 TiB (2^32 sectors; SDUC cards
/// above have none).
pub const MAX_SECTORS: u64 = 1 << 32;

/// MBR CHS limit: partitions of cards up to this many sectors get FAT32
/// type 0x0B, larger ones 0x0C (1024 cylinders x 255 heads x 63 sectors).
pub const CHS_LIMIT: u64 = 16_450_560;

/// One capacity class of the SD specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdClass {
    /// Largest card of the class, in sectors.
    pub max_sectors: u64,
    /// File system of the class.
    pub fs: FsKind,
    /// Sectors per cluster.
    pub sec_per_clus: u64,
    /// Boundary unit in sectors.
    pub bu: u64,
}

/// The capacity classes (reference table; sdFormatLinux `alignTable`).
pub const CLASSES: [SdClass; 9] = [
    class(1 << 14, FsKind::Fat12, 16, 16),
    class(1 << 17, FsKind::Fat12, 32, 32),
    class(1 << 19, FsKind::Fat16, 32, 64),
    class(1 << 21, FsKind::Fat16, 32, 128),
    class(1 << 22, FsKind::Fat16, 64, 128),
    class(1 << 26, FsKind::Fat32, 64, 8192),
    class(1 << 28, FsKind::Exfat, 256, 32_768),
    class(1 << 30, FsKind::Exfat, 512, 65_536),
    class(1 << 32, FsKind::Exfat, 1024, 131_072),
];

const fn class(max_sectors: u64, fs: FsKind, sec_per_clus: u64, bu: u64) -> SdClass {
    SdClass {
        max_sectors,
        fs,
        sec_per_clus,
        bu,
    }
}

/// CHS geometry by capacity (reference; sdFormatLinux `geometryTable`):
/// `(largest card in MiB, heads, sectors per track)`; larger cards 255/63.
const GEOMETRY: [(u64, u8, u8); 9] = [
    (2, 2, 16),
    (16, 2, 32),
    (32, 4, 32),
    (128, 8, 32),
    (256, 16, 32),
    (504, 16, 63),
    (1008, 32, 63),
    (2016, 64, 63),
    (4032, 128, 63),
];

impl SdClass {
    /// The class's name: SDSC (up to 2 GiB), SDHC (up to 32 GiB) or SDXC.
    pub fn name(&self) -> &'static str {
        match self.fs {
            FsKind::Fat12 | FsKind::Fat16 => "SDSC",
            FsKind::Fat32 => "SDHC",
            FsKind::Exfat => "SDXC",
        }
    }
}

/// The complete SD layout of a card, in 512-byte sectors (FAT32 forced on
/// SDXC included: 64 KiB clusters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdLayout {
    /// The capacity class.
    pub class: SdClass,
    /// File system (FAT32 when forced on an SDXC card).
    pub fs: FsKind,
    /// Sectors per cluster.
    pub sec_per_clus: u64,
    /// Card capacity.
    pub total_sectors: u64,
    /// Partition start (= HiddSec / PartitionOffset).
    pub part_start: u64,
    /// Partition length (to the end of the card).
    pub part_sectors: u64,
    /// FAT: reserved sectors before the first FAT (FAT12/16: 1). exFAT: 0.
    pub rsvd: u64,
    /// Sectors per FAT (exFAT: FatLength).
    pub fat_sectors: u64,
    /// FAT12/16: root directory sectors (512 entries); 0 otherwise.
    pub root_sectors: u64,
    /// exFAT FatOffset (BU/2); FAT: `rsvd`.
    pub fat_offset: u64,
    /// First sector of the data region / cluster heap, from the partition start.
    pub data_offset: u64,
    /// Clusters.
    pub cluster_count: u64,
    /// MBR partition type.
    pub mbr_type: u8,
    /// CHS heads (BPB NumHeads, MBR CHS).
    pub heads: u8,
    /// CHS sectors per track (BPB SecPerTrk, MBR CHS).
    pub sectors_per_track: u8,
    /// exFAT Flash Parameters EraseBlockSize in bytes (BU/2); 0 for FAT.
    pub erase_block_bytes: u64,
}

impl SdLayout {
    /// The layout in one line of a plan's summary: the class, the card's
    /// size, the boundary unit, the CHS geometry, and exFAT's erase block.
    #[cfg(feature = "alloc")]
    pub fn summary(&self) -> alloc::string::String {
        use crate::units::format_size;
        let mut t = alloc::format!(
            "SD Association, {} card of {}: boundary unit {}, data region on a boundary unit, CHS {} heads x {} sectors",
            self.class.name(),
            format_size(self.total_sectors * SD_SECTOR),
            format_size(self.class.bu * SD_SECTOR),
            self.heads,
            self.sectors_per_track
        );
        if self.erase_block_bytes > 0 {
            t += &alloc::format!(
                ", Flash Parameters erase block {}",
                format_size(self.erase_block_bytes)
            );
        }
        t
    }
}

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// The SD layout of a card of `total_sectors` 512-byte sectors.
/// `force_fat32`: FAT32 on an SDXC card, with 64 KiB clusters.
///
/// # Errors
///
/// [`SdError::TooLarge`] above 2 TiB, [`SdError::TooSmall`] when the card
/// cannot hold its class's file system.
pub fn sd_layout(total_sectors: u64, force_fat32: bool) -> Result<SdLayout, SdError> {
    let class = *CLASSES
        .iter()
        .find(|c| total_sectors <= c.max_sectors)
        .ok_or(SdError::TooLarge {
            sectors: total_sectors,
        })?;
    let mib = total_sectors >> 11;
    let (heads, sectors_per_track) = GEOMETRY
        .iter()
        .find(|&&(cap, _, _)| mib <= cap)
        .map_or((255, 63), |&(_, h, s)| (h, s));
    let (fs, spc) = if force_fat32 && class.fs == FsKind::Exfat {
        (FsKind::Fat32, class.sec_per_clus.min(128))
    } else {
        (class.fs, class.sec_per_clus)
    };
    // The class's width, unless its cluster count gives another (at the top
    // of the 64 MiB FAT12 class 16 KiB clusters give 4,092 clusters: every
    // driver reads that as FAT16, so a 12-bit FAT would be misread).
    let mut l = compute(class, fs, spc, total_sectors, heads, sectors_per_track)?;
    for _ in 0..2 {
        let width = FsKind::fat_width(l.cluster_count);
        if !l.fs.is_fat() || width == l.fs {
            break;
        }
        l = compute(class, width, spc, total_sectors, heads, sectors_per_track)?;
    }
    if l.cluster_count == 0 || (l.fs.is_fat() && FsKind::fat_width(l.cluster_count) != l.fs) {
        return Err(SdError::TooSmall {
            sectors: total_sectors,
        });
    }
    // FAT32 forced on a large SDXC card: the padding can exceed the 16-bit
    // RsvdSecCnt (sdFormatLinux refuses these cards too).
    if l.rsvd > u64::from(u16::MAX) {
        return Err(SdError::ReservedOverflow {
            sectors: total_sectors,
            rsvd: l.rsvd,
        });
    }
    Ok(l)
}

/// The layout of `fs` at `spc` sectors per cluster in `class`.
fn compute(
    class: SdClass,
    fs: FsKind,
    spc: u64,
    total_sectors: u64,
    heads: u8,
    sectors_per_track: u8,
) -> Result<SdLayout, SdError> {
    let mut l = SdLayout {
        class,
        fs,
        sec_per_clus: spc,
        total_sectors,
        part_start: 0,
        part_sectors: 0,
        rsvd: 0,
        fat_sectors: 0,
        root_sectors: 0,
        fat_offset: 0,
        data_offset: 0,
        cluster_count: 0,
        mbr_type: 0,
        heads,
        sectors_per_track,
        erase_block_bytes: 0,
    };
    match fs {
        FsKind::Fat12 | FsKind::Fat16 => place_fat16(&mut l)?,
        FsKind::Fat32 => place_fat32(&mut l)?,
        FsKind::Exfat => place_exfat(&mut l)?,
    }
    Ok(l)
}

/// FAT12/16 placement into `l` (class, cluster size and card size set).
fn place_fat16(l: &mut SdLayout) -> Result<(), SdError> {
    let (bu, spc, total_sectors, fs) = (l.class.bu, l.sec_per_clus, l.total_sectors, l.fs);
    let too_small = SdError::TooSmall {
        sectors: total_sectors,
    };
    // FAT12/16: RsvdSecCnt 1, two FATs, 512 root entries; the partition
    // start moves so that it plus the file-system area is a BU multiple.
    let bits = if fs == FsKind::Fat12 { 12 } else { 16 };
    let root = div_ceil(32 * 512, SD_SECTOR);
    let mut fat = div_ceil(total_sectors / spc * bits, SD_SECTOR * 8);
    let (area, start, clusters) = loop {
        let area = 1 + 2 * fat + root;
        let mut start = bu - area % bu;
        if start != bu {
            start += bu;
        }
        let (clusters, need) = loop {
            let rest = total_sectors
                .checked_sub(start + area)
                .ok_or(too_small.clone())?;
            let clusters = rest / spc;
            let need = div_ceil((2 + clusters) * bits, SD_SECTOR * 8);
            if need <= fat {
                break (clusters, need);
            }
            start += bu;
        };
        if need == fat {
            break (area, start, clusters);
        }
        fat = need;
    };
    l.part_start = start;
    l.rsvd = 1;
    l.fat_sectors = fat;
    l.root_sectors = root;
    l.fat_offset = 1;
    l.data_offset = area;
    l.cluster_count = clusters;
    l.part_sectors = total_sectors - start;
    l.mbr_type = match (fs, l.part_sectors) {
        (FsKind::Fat12, _) => 0x01,
        (_, s) if s < 65_536 => 0x04,
        _ => 0x06,
    };
    Ok(())
}

/// FAT32 placement into `l` (class, cluster size and card size set).
fn place_fat32(l: &mut SdLayout) -> Result<(), SdError> {
    let (bu, spc, total_sectors) = (l.class.bu, l.sec_per_clus, l.total_sectors);
    let too_small = SdError::TooSmall {
        sectors: total_sectors,
    };
    // FAT32: partition at 1 BU; RsvdSecCnt padded (at least 9) so the
    // two FATs end on a BU multiple.
    let start = bu;
    let mut fat = div_ceil(total_sectors / spc * 32, SD_SECTOR * 8);
    let (rsvd, clusters) = loop {
        if fat == 0 {
            return Err(too_small);
        }
        let mut rsvd = bu - (2 * fat) % bu;
        if rsvd < 9 {
            rsvd += bu;
        }
        let (rsvd, clusters, need) = loop {
            let rest = total_sectors
                .checked_sub(start + rsvd + 2 * fat)
                .ok_or(too_small.clone())?;
            let clusters = rest / spc;
            let need = div_ceil((2 + clusters) * 32, SD_SECTOR * 8);
            if need <= fat {
                break (rsvd, clusters, need);
            }
            rsvd += bu;
        };
        if need == fat {
            break (rsvd, clusters);
        }
        fat -= 1;
    };
    l.part_start = start;
    l.rsvd = rsvd;
    l.fat_sectors = fat;
    l.fat_offset = rsvd;
    l.data_offset = rsvd + 2 * fat;
    l.cluster_count = clusters;
    l.part_sectors = total_sectors - start;
    l.mbr_type = if total_sectors <= CHS_LIMIT {
        0x0B
    } else {
        0x0C
    };
    Ok(())
}

/// exFAT placement into `l` (class, cluster size and card size set).
fn place_exfat(l: &mut SdLayout) -> Result<(), SdError> {
    let (bu, spc, total_sectors) = (l.class.bu, l.sec_per_clus, l.total_sectors);
    let too_small = SdError::TooSmall {
        sectors: total_sectors,
    };
    // exFAT: PartitionOffset 1 BU, FAT at BU/2 for BU/2, heap at BU.
    if total_sectors < 2 * bu + spc {
        return Err(too_small);
    }
    l.part_start = bu;
    l.part_sectors = total_sectors - bu;
    l.fat_offset = bu / 2;
    l.fat_sectors = bu / 2;
    l.data_offset = bu;
    l.cluster_count = (total_sectors - 2 * bu) / spc;
    l.mbr_type = 0x07;
    l.erase_block_bytes = bu / 2 * SD_SECTOR;
    Ok(())
}

/// Refuses the options the SD layout decides itself.
///
/// # Errors
///
/// [`SdError::Conflict`] naming the first such option.
pub fn refuse_conflicts(opts: &FormatOptions) -> Result<(), SdError> {
    let conflict = |option| Err(SdError::Conflict { option });
    if opts.cluster.explicit().is_some() {
        return conflict(SdConflict::Cluster);
    }
    if opts.align.is_some() {
        return conflict(SdConflict::Align);
    }
    if opts.root_entries.is_some() {
        return conflict(SdConflict::RootEntries);
    }
    if opts.esp {
        return conflict(SdConflict::Esp);
    }
    if opts
        .fats
        .is_some_and(|n| n != crate::geometry::fat::NUM_FATS)
    {
        return conflict(SdConflict::Fats);
    }
    Ok(())
}

/// The layout of a card of `total` 512-byte sectors for `opts` (its `fs`:
/// auto, the class's file system, or FAT32 on SDXC), and why that file
/// system. The facade places the partition by it; the planner checks the
/// medium against it.
///
/// # Errors
///
/// [`SdError::Conflict`] for an option the layout decides, [`SdError::Fs`]
/// for a file system the class does not take, and [`sd_layout`]'s errors.
pub fn card_layout(opts: &FormatOptions, total: u64) -> Result<(SdLayout, FsRule), SdError> {
    refuse_conflicts(opts)?;
    let choice = opts.fs;
    let class = sd_layout(total, false)?;
    let sdxc = class.fs == FsKind::Exfat;
    match choice {
        FsChoice::Auto => Ok((class, FsRule::SdCapacityClass)),
        FsChoice::Fixed(FsKind::Fat32) | FsChoice::Fat if sdxc => {
            Ok((sd_layout(total, true)?, FsRule::SdFat32OnSdxc))
        }
        FsChoice::Fat if class.fs.is_fat() => Ok((class, FsRule::SdCapacityClass)),
        FsChoice::Fixed(fs) if fs == class.fs => Ok((class, FsRule::SdCapacityClass)),
        other => Err(SdError::Fs {
            sectors: total,
            class: class.class.name(),
            class_fs: class.fs,
            asked: other,
            allowed: allowed_choices(class.fs),
        }),
    }
}

/// The file-system choices a card whose class takes `class_fs` accepts.
fn allowed_choices(class_fs: FsKind) -> &'static [FsChoice] {
    const FS: [FsChoice; 4] = [
        FsChoice::Fixed(FsKind::Fat12),
        FsChoice::Fixed(FsKind::Fat16),
        FsChoice::Fixed(FsKind::Fat32),
        FsChoice::Fixed(FsKind::Exfat),
    ];
    match class_fs {
        FsKind::Exfat => &[FsChoice::Auto, FS[3], FS[2]],
        FsKind::Fat32 => &[FsChoice::Auto, FS[2], FsChoice::Fat],
        FsKind::Fat16 => &[FsChoice::Auto, FS[1], FsChoice::Fat],
        FsKind::Fat12 => &[FsChoice::Auto, FS[0], FsChoice::Fat],
    }
}

#[cfg(test)]
mod tests;
