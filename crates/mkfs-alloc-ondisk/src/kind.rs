//! What a volume and a medium ARE: the one [`FsKind`] (the four file systems
//! this project writes and reads) and the one [`TableKind`] (no table, MBR or
//! GPT). The planner, the writer, the prober, `info` and the command line all
//! name a volume with these; what a user *asks for* (`--fs auto`, `--table
//! auto`) are separate choice types in the crates that decide.
//!
//! Sources: fatgen103 §3.5 "FAT Type Determination" (the width by cluster
//! count), §3.1 (FAT32's 28-bit entries); exFAT specification §1 (exFAT),
//! §3.1.9 (ClusterCount); UEFI Specification 2.10 §5.2, §5.3 (MBR, GPT).

use core::fmt;

/// A file system this project lays out, writes and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "lowercase")
)]
pub enum FsKind {
    /// exFAT (Microsoft exFAT specification).
    Exfat,
    /// FAT12 (fatgen103): fewer than 4,085 clusters, packed 12-bit entries.
    Fat12,
    /// FAT16 (fatgen103): 4,085 to 65,524 clusters, fixed root directory.
    Fat16,
    /// FAT32 (fatgen103): 65,525 clusters or more.
    Fat32,
}

impl FsKind {
    /// The four kinds.
    pub const ALL: [FsKind; 4] = [FsKind::Exfat, FsKind::Fat12, FsKind::Fat16, FsKind::Fat32];

    /// Stable lower-case identifier (`exfat`, `fat12`, `fat16`, `fat32`), as
    /// in JSON and on the command line.
    pub fn id(self) -> &'static str {
        match self {
            FsKind::Exfat => "exfat",
            FsKind::Fat12 => "fat12",
            FsKind::Fat16 => "fat16",
            FsKind::Fat32 => "fat32",
        }
    }

    /// Name for people: `exFAT`, `FAT12`, `FAT16` or `FAT32`.
    pub fn display_name(self) -> &'static str {
        match self {
            FsKind::Exfat => "exFAT",
            FsKind::Fat12 => "FAT12",
            FsKind::Fat16 => "FAT16",
            FsKind::Fat32 => "FAT32",
        }
    }

    /// True for FAT12, FAT16 and FAT32.
    pub fn is_fat(self) -> bool {
        self != FsKind::Exfat
    }

    /// True for FAT12 and FAT16 (fixed root directory, no FSInfo).
    pub fn is_small_fat(self) -> bool {
        matches!(self, FsKind::Fat12 | FsKind::Fat16)
    }

    /// The fewest data clusters the specification allows this kind: 4,085
    /// for FAT16 and 65,525 for FAT32 (fewer is the narrower width,
    /// fatgen103 §3.5), 1 for FAT12 and exFAT. The one copy of the cluster
    /// count limits: the planner, the prober and `info` ask this and
    /// [`max_clusters`](Self::max_clusters).
    pub const fn min_clusters(self) -> u64 {
        match self {
            FsKind::Fat12 | FsKind::Exfat => 1,
            FsKind::Fat16 => 4_085,
            FsKind::Fat32 => 65_525,
        }
    }

    /// The most data clusters the specification allows this kind: one below
    /// the next width's minimum for FAT12 and FAT16, 0x0FFF_FFF5 for FAT32
    /// (28-bit entries minus the reserved values, fatgen103), 0xFFFF_FFF5 for
    /// exFAT (§3.1.9).
    pub const fn max_clusters(self) -> u64 {
        match self {
            FsKind::Fat12 => const { FsKind::Fat16.min_clusters() - 1 },
            FsKind::Fat16 => const { FsKind::Fat32.min_clusters() - 1 },
            FsKind::Fat32 => 0x0FFF_FFF5,
            FsKind::Exfat => 0xFFFF_FFF5,
        }
    }

    /// The FAT width the specification gives a volume of `clusters` data
    /// clusters: FAT12 below FAT16's [`min_clusters`](Self::min_clusters),
    /// FAT16 below FAT32's, else FAT32 (fatgen103 §3.5, the one rule every
    /// driver applies). The one copy of the rule: the planner, the prober and
    /// `info` ask it.
    pub fn fat_width(clusters: u64) -> FsKind {
        if clusters < const { FsKind::Fat16.min_clusters() } {
            FsKind::Fat12
        } else if clusters < const { FsKind::Fat32.min_clusters() } {
            FsKind::Fat16
        } else {
            FsKind::Fat32
        }
    }

    /// Bits per FAT entry: 12, 16 or 32 (exFAT's FAT has 32-bit entries).
    pub fn entry_bits(self) -> u64 {
        match self {
            FsKind::Fat12 => 12,
            FsKind::Fat16 => 16,
            FsKind::Fat32 | FsKind::Exfat => 32,
        }
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

/// The partition table of a medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "lowercase")
)]
pub enum TableKind {
    /// No table: the file system starts at byte 0 ("superfloppy").
    None,
    /// A DOS/MBR table.
    Mbr,
    /// A GUID partition table with its protective MBR.
    Gpt,
}

impl TableKind {
    /// Stable lower-case identifier (`none`, `mbr`, `gpt`), as in JSON.
    pub fn id(self) -> &'static str {
        match self {
            TableKind::None => "none",
            TableKind::Mbr => "mbr",
            TableKind::Gpt => "gpt",
        }
    }

    /// Short name for people: `none`, `MBR` or `GPT`.
    pub fn display_name(self) -> &'static str {
        match self {
            TableKind::None => "none",
            TableKind::Mbr => "MBR",
            TableKind::Gpt => "GPT",
        }
    }
}

/// In a sentence: `no partition table`, `MBR` or `GPT`.
impl fmt::Display for TableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TableKind::None => "no partition table",
            other => other.display_name(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fat_width_by_cluster_count() {
        assert_eq!(FsKind::fat_width(0), FsKind::Fat12);
        assert_eq!(FsKind::fat_width(4_084), FsKind::Fat12);
        assert_eq!(FsKind::fat_width(4_085), FsKind::Fat16);
        assert_eq!(FsKind::fat_width(65_524), FsKind::Fat16);
        assert_eq!(FsKind::fat_width(65_525), FsKind::Fat32);
    }

    #[test]
    fn cluster_limits_meet_at_the_width_boundaries() {
        for fs in [FsKind::Fat12, FsKind::Fat16, FsKind::Fat32] {
            assert_eq!(FsKind::fat_width(fs.min_clusters()), fs);
            assert_eq!(FsKind::fat_width(fs.max_clusters()), fs);
        }
        assert_eq!(FsKind::Fat16.min_clusters(), 4_085);
        assert_eq!(FsKind::Fat32.min_clusters(), 65_525);
        assert_eq!(FsKind::Fat32.max_clusters(), 0x0FFF_FFF5);
        assert_eq!(FsKind::Exfat.max_clusters(), 0xFFFF_FFF5);
    }

    #[test]
    fn names() {
        let ids: [&str; 4] = FsKind::ALL.map(FsKind::id);
        assert_eq!(ids, ["exfat", "fat12", "fat16", "fat32"]);
        let names = FsKind::ALL.map(|fs| alloc::format!("{fs}"));
        assert_eq!(names, ["exFAT", "FAT12", "FAT16", "FAT32"]);
        let tables = [TableKind::None, TableKind::Mbr, TableKind::Gpt];
        assert_eq!(tables.map(TableKind::id), ["none", "mbr", "gpt"]);
        assert_eq!(tables.map(TableKind::display_name), ["none", "MBR", "GPT"]);
        assert_eq!(alloc::format!("{}", TableKind::None), "no partition table");
        assert_eq!(alloc::format!("{}", TableKind::Mbr), "MBR");
    }
}
