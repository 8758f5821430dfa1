//! The rows of the advice: one per cluster size ([`Row`], its [`Overhead`]
//! and [`RowNote`]s) and the notes on a whole file system ([`FsNote`]).

use crate::advise::{compat_max_cluster, compat_text, EXFAT_RECOMMENDED_MAX_CLUSTERS};
use crate::defaults::mkfs_tool;
use mkfs_alloc_layout::units::{format_count, format_size};
use mkfs_alloc_layout::{FsKind, Layout, RegionKind};
#[cfg(feature = "serde")]
use serde::Serialize;

/// Metadata overhead of a layout, by kind, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Overhead {
    /// Boot region(s) and reserved sectors.
    pub reserved: u64,
    /// File allocation table(s).
    pub fat: u64,
    /// exFAT allocation bitmap clusters.
    pub bitmap: u64,
    /// exFAT up-case table clusters.
    pub upcase: u64,
    /// Root directory clusters allocated by the format.
    pub root_directory: u64,
    /// Alignment padding.
    pub alignment: u64,
    /// Sectors after the last whole cluster.
    pub tail: u64,
}

impl Overhead {
    /// The breakdown of a layout's regions (all but the free clusters).
    pub fn of(layout: &Layout) -> Self {
        let mut o = Overhead::default();
        for r in layout.regions() {
            let slot = match r.kind {
                RegionKind::BootRegion | RegionKind::BackupBootRegion => &mut o.reserved,
                RegionKind::Fat => &mut o.fat,
                RegionKind::Bitmap => &mut o.bitmap,
                RegionKind::Upcase => &mut o.upcase,
                RegionKind::RootDirectory => &mut o.root_directory,
                RegionKind::Padding | RegionKind::HeapPadding => &mut o.alignment,
                RegionKind::Tail => &mut o.tail,
                RegionKind::FreeClusters => continue,
            };
            *slot += r.len;
        }
        o
    }

    /// Sum of all parts.
    pub fn total(&self) -> u64 {
        self.reserved
            + self.fat
            + self.bitmap
            + self.upcase
            + self.root_directory
            + self.alignment
            + self.tail
    }
}

/// One cluster size of one file system.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Row {
    /// Cluster size in bytes.
    pub cluster_size: u64,
    /// Clusters of the volume.
    pub cluster_count: u32,
    /// Bytes free for files after formatting.
    pub usable_bytes: u64,
    /// Bytes not available for files (everything but the free clusters).
    pub overhead_bytes: u64,
    /// `overhead_bytes` in percent of the volume.
    pub overhead_percent: f64,
    /// The overhead by kind.
    pub overhead: Overhead,
    /// Bytes the data takes: file clusters plus the directory clusters the
    /// copy allocates (with data only).
    pub data_bytes_on_disk: Option<u64>,
    /// Of which file data clusters.
    pub file_bytes_on_disk: Option<u64>,
    /// Of which directory clusters.
    pub directory_bytes_on_disk: Option<u64>,
    /// `data_bytes_on_disk` minus the apparent size.
    pub waste_bytes: Option<u64>,
    /// `waste_bytes` in percent of the apparent size (`None` when the data
    /// has no bytes).
    pub waste_percent: Option<f64>,
    /// True if the data fits in the usable bytes.
    pub fits: Option<bool>,
    /// Compatibility notes and markers (defaults, recommendation).
    pub notes: Vec<RowNote>,
}

/// A note on one cluster size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RowNote {
    /// FAT12/16/32 cluster above 32 KiB.
    AboveFat32Compat,
    /// exFAT cluster above 1 MiB.
    AboveExfatCompat,
    /// exFAT cluster count above the spec's recommended 2^24 - 2.
    ExfatManyClusters,
    /// Windows' default for this volume.
    WindowsDefault,
    /// The SD specification's recommendation for this capacity.
    SdRecommended,
    /// mkfs.exfat's or mkfs.fat's default.
    MkfsDefault,
    /// What `--cluster auto` picks without data.
    AutoDefault,
    /// The recommendation.
    Recommended,
}

impl RowNote {
    /// A phrase for people.
    pub fn describe(self, fs: FsKind) -> String {
        match self {
            RowNote::AboveFat32Compat => format!(
                "above {}: old DOS, some BIOS and camera firmware fail",
                format_size(compat_max_cluster(FsKind::Fat32))
            ),
            RowNote::AboveExfatCompat => format!(
                "above {}: older macOS does not mount it",
                format_size(compat_max_cluster(FsKind::Exfat))
            ),
            RowNote::ExfatManyClusters => format!(
                "more than {} clusters (the exFAT spec recommends fewer)",
                format_count(u64::from(EXFAT_RECOMMENDED_MAX_CLUSTERS))
            ),
            RowNote::WindowsDefault => "Windows default".into(),
            RowNote::SdRecommended => "SD spec".into(),
            RowNote::MkfsDefault => format!("{} default", mkfs_tool(fs)),
            RowNote::AutoDefault => "automatic choice".into(),
            RowNote::Recommended => "recommended".into(),
        }
    }
}

/// A note on the whole volume for one file system.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum FsNote {
    /// No cluster size is valid.
    NoValidCluster,
    /// FAT32 above 32 GB: valid, but Windows' format refuses it.
    #[cfg_attr(feature = "serde", serde(rename = "fat32_above_32gb"))]
    Fat32Above32Gb,
    /// Files FAT32 cannot store.
    #[cfg_attr(feature = "serde", serde(rename = "files_over_4gib"))]
    FilesOver4Gib {
        /// How many.
        count: u64,
    },
    /// Directories with more entries than FAT32 allows.
    DirsOverFat32Limit {
        /// How many.
        count: u64,
    },
    /// FAT12/16: more root entries than the fixed root directory holds.
    RootDirFull {
        /// Entries the data's top level needs (label included).
        entries: u64,
        /// Entries the root directory holds.
        capacity: u64,
    },
    /// The data fits at no cluster size the recommendation may choose.
    DoesNotFit {
        /// The cluster size that comes closest.
        cluster_size: u64,
        /// What the data needs at that size.
        needed_bytes: u64,
        /// What is free at that size.
        free_bytes: u64,
        /// The largest cluster size beyond the compatibility limit at which
        /// it would fit, if any (recommended only when asked).
        fits_beyond_compat: Option<u64>,
    },
    /// A peer tool's default is not valid for this volume in our layout.
    DefaultNotValid {
        /// Whose default (`windows`, `sd_spec`, `mkfs`).
        source: &'static str,
        /// The size it would pick.
        cluster_size: u64,
    },
}

impl FsNote {
    /// A sentence for people.
    pub fn describe(&self, fs: FsKind) -> String {
        match self {
            FsNote::NoValidCluster => format!("no cluster size is valid for {fs} on this volume"),
            FsNote::Fat32Above32Gb => {
                "FAT32 above 32 GB is valid, but Windows' own format refuses it and some firmware rejects it".into()
            }
            FsNote::FilesOver4Gib { count } => format!(
                "{} file(s) exceed {fs}'s 4 GiB - 1 limit and cannot be stored: use exFAT",
                format_count(*count)
            ),
            FsNote::DirsOverFat32Limit { count } => format!(
                "{} directory(ies) need more than {fs}'s 65,536 entries and cannot be copied whole",
                format_count(*count)
            ),
            FsNote::RootDirFull { entries, capacity } => format!(
                "the top level needs {} root directory entries but the fixed {fs} root holds {}: give the root directory more entries",
                format_count(*entries),
                format_count(*capacity)
            ),
            FsNote::DoesNotFit {
                cluster_size,
                needed_bytes,
                free_bytes,
                fits_beyond_compat,
            } => {
                let beyond = match fits_beyond_compat {
                    Some(c) => format!(
                        "; it would fit with {} clusters, beyond the compatibility limit ({}): choose that size explicitly if every system that reads the volume handles it",
                        format_size(*c),
                        compat_text(fs)
                    ),
                    None => String::new(),
                };
                format!(
                    "the data does not fit on this {fs} volume: at the closest cluster size, {}, it needs {} and {} is free{beyond}",
                    format_size(*cluster_size),
                    format_size(*needed_bytes),
                    format_size(*free_bytes)
                )
            }
            FsNote::DefaultNotValid {
                source,
                cluster_size,
            } => {
                let who = match *source {
                    "windows" => "Windows' default".to_string(),
                    "sd_spec" => "the SD specification's recommendation".to_string(),
                    _ => format!("{}'s default", mkfs_tool(fs)),
                };
                format!(
                    "{who} ({}) is not a valid {fs} cluster size for this volume",
                    format_size(*cluster_size)
                )
            }
        }
    }
}
