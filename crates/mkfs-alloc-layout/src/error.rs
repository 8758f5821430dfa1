//! Planner errors. Every variant says what the valid range is.

use crate::label::LabelError;
use crate::options::FsType;
use crate::units::{format_count, format_size};

/// Why no layout could be planned. Nothing has been written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Sector size outside 512, 1024, 2048, 4096.
    #[error("sector size {0} is not supported; valid: 512, 1024, 2048, 4096")]
    SectorSize(u64),
    /// Cluster size not a power of two.
    #[error("cluster size {} is not a power of two; valid for {fs}: {}", fmt_bytes(*.cluster), range(*.min, *.max))]
    ClusterNotPowerOfTwo {
        /// File system.
        fs: FsType,
        /// Requested size in bytes.
        cluster: u64,
        /// Smallest valid size.
        min: u64,
        /// Largest valid size.
        max: u64,
    },
    /// Cluster size outside what the file system allows at this sector size.
    #[error("cluster size {} is out of range for {fs} with {sector}-byte sectors; valid: {} (powers of two){}", fmt_bytes(*.cluster), range(*.min, *.max), fat32_hint(*.fs, *.cluster, *.sector))]
    ClusterOutOfRange {
        /// File system.
        fs: FsType,
        /// Requested size in bytes.
        cluster: u64,
        /// Sector size in bytes.
        sector: u32,
        /// Smallest valid size.
        min: u64,
        /// Largest valid size.
        max: u64,
    },
    /// The volume has too few clusters at this cluster size (or is smaller
    /// than the file system's minimum).
    #[error("{} is too small for {fs} at {} clusters ({} clusters, needs >= {}); {}", format_size(*.volume), format_size(*.cluster), format_count(*.clusters), format_count(*.min_clusters), valid_hint(*.fs, .valid))]
    TooFewClusters {
        /// File system.
        fs: FsType,
        /// Volume size in bytes.
        volume: u64,
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters this combination would have.
        clusters: u64,
        /// Minimum.
        min_clusters: u64,
        /// Cluster sizes that are valid for this volume.
        valid: Vec<u64>,
    },
    /// The volume has too many clusters at this cluster size.
    #[error("{} is too large for {fs} at {} clusters ({} clusters, maximum {}); {}", format_size(*.volume), format_size(*.cluster), format_count(*.clusters), format_count(*.max_clusters), valid_hint(*.fs, .valid))]
    TooManyClusters {
        /// File system.
        fs: FsType,
        /// Volume size in bytes.
        volume: u64,
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters this combination would have.
        clusters: u64,
        /// Maximum.
        max_clusters: u64,
        /// Cluster sizes that are valid for this volume.
        valid: Vec<u64>,
    },
    /// The volume is smaller than the file system can hold at all.
    #[error("{} is too small for {fs}; the minimum is {}", format_size(*.volume), format_size(*.min))]
    VolumeTooSmall {
        /// File system.
        fs: FsType,
        /// Volume size in bytes.
        volume: u64,
        /// Minimum volume size in bytes.
        min: u64,
    },
    /// The volume is larger than the file system's sector-count fields allow.
    #[error("{} is too large for {fs} with {sector}-byte sectors; the maximum is {}{}", format_size(*.volume), format_size(*.max), if *.fs == FsType::Exfat { "" } else { " (use exFAT, or 4096-byte sectors)" })]
    VolumeTooLarge {
        /// File system.
        fs: FsType,
        /// Volume size in bytes.
        volume: u64,
        /// Sector size in bytes.
        sector: u32,
        /// Maximum volume size in bytes.
        max: u64,
    },
    /// Alignment not a power of two, below the sector size, or too large.
    #[error("alignment {} is invalid; valid: a power of two from the sector size ({sector} B) up to {}", fmt_bytes(*.align), format_size(*.max))]
    Align {
        /// Requested alignment in bytes.
        align: u64,
        /// Sector size.
        sector: u32,
        /// Largest allowed alignment.
        max: u64,
    },
    /// The partition offset is not a whole number of sectors.
    #[error("partition offset {offset} is not a multiple of the sector size {sector}")]
    PartitionOffset {
        /// Offset in bytes.
        offset: u64,
        /// Sector size.
        sector: u32,
    },
    /// The label is not valid for the file system.
    #[error(transparent)]
    Label(#[from] LabelError),
    /// `--esp` with exFAT.
    #[error("an EFI System Partition must be FAT (UEFI firmware reads FAT12, FAT16 and FAT32, not exFAT); use --fs fat, fat32, fat16 or fat12, or leave --fs out")]
    EspNotFat,
    /// A root directory size outside 1..=32,768 entries.
    #[error(
        "root directory entries {0} out of range; valid: 1..=32768 (rounded up to whole sectors)"
    )]
    RootEntries(u64),
    /// A root directory size given for a file system without a fixed root.
    #[error("--root-entries applies to FAT12 and FAT16 only; this volume is {0} (its root directory grows as needed)")]
    RootEntriesNotFixed(FsType),
    /// The SD Association layout cannot be used as asked.
    #[error(transparent)]
    Sd(#[from] crate::sd::SdError),
    /// No FAT width fits this volume at this cluster size (`--fs fat`).
    #[error("no FAT width fits {} at {} clusters ({} clusters: FAT12 takes {}, FAT16 {}, FAT32 {}); {}", format_size(*.volume), format_size(*.cluster), format_count(*.clusters), count_range(crate::FsType::Fat12), count_range(crate::FsType::Fat16), count_range(crate::FsType::Fat32), sizes_hint(.valid))]
    NoFatWidth {
        /// Volume size in bytes.
        volume: u64,
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters this cluster size gives (with the FAT of the width the
        /// specification gives that count).
        clusters: u64,
        /// Cluster sizes at which some FAT width is valid.
        valid: Vec<u64>,
    },
}

fn fmt_bytes(b: u64) -> String {
    if b.is_power_of_two() {
        format_size(b)
    } else {
        format!("{} bytes", format_count(b))
    }
}

fn range(min: u64, max: u64) -> String {
    format!("{}..{}", format_size(min), format_size(max))
}

fn fat32_hint(fs: FsType, cluster: u64, sector: u32) -> &'static str {
    if fs.is_fat() && cluster > 128 * u64::from(sector) && cluster <= 32 << 20 {
        "; exFAT allows up to 32 MiB"
    } else {
        ""
    }
}

/// "valid: 512 B..16 KiB, or use exFAT" from a sorted list of valid sizes.
fn valid_hint(fs: FsType, valid: &[u64]) -> String {
    let other = match fs {
        FsType::Fat32 => ", or use exFAT",
        FsType::Fat16 | FsType::Fat12 => ", or use --fs fat (the width follows the cluster count)",
        FsType::Exfat => "",
    };
    match (valid.first(), valid.last()) {
        (Some(&a), Some(&b)) if a == b => format!("valid: {}{other}", format_size(a)),
        (Some(&a), Some(&b)) => {
            // The valid set is contiguous in powers of two; say so as a range.
            format!("valid: {}{other}", range(a, b))
        }
        _ => match fs {
            FsType::Fat32 => {
                "no cluster size is valid for FAT32 on this volume; use exFAT".to_string()
            }
            FsType::Fat16 => format!(
                "no cluster size is valid for {fs} on this volume; use --fs fat (the width follows the cluster count)"
            ),
            // The narrowest width: on a tiny volume only a smaller fixed root
            // directory leaves room for clusters.
            FsType::Fat12 => format!(
                "no cluster size is valid for {fs} on this volume; a smaller root directory leaves room for clusters (--root-entries, default 512 = 16 KiB; 16 entries take one 512-byte sector)"
            ),
            FsType::Exfat => "no cluster size is valid for exFAT on this volume".to_string(),
        },
    }
}

/// "4,101..65,508" for a FAT width's accepted cluster counts.
fn count_range(fs: FsType) -> String {
    let (a, b) = crate::fat::cluster_range(fs);
    format!("{}..{}", format_count(a), format_count(b))
}

fn sizes_hint(valid: &[u64]) -> String {
    if valid.is_empty() {
        return "no cluster size gives a valid FAT on this volume".to_string();
    }
    let list: Vec<String> = valid.iter().map(|&c| format_size(c)).collect();
    format!("valid: {}", list.join(", "))
}

/// Checks that `cluster` is a power of two from the sector size up to the
/// file system's largest cluster ([`FsType::max_cluster`]).
pub(crate) fn check_cluster(fs: FsType, cluster: u64, sector: u32) -> Result<(), PlanError> {
    let min = u64::from(sector);
    let max = fs.max_cluster(sector);
    if !cluster.is_power_of_two() {
        return Err(PlanError::ClusterNotPowerOfTwo {
            fs,
            cluster,
            min,
            max,
        });
    }
    if cluster < min || cluster > max {
        return Err(PlanError::ClusterOutOfRange {
            fs,
            cluster,
            sector,
            min,
            max,
        });
    }
    Ok(())
}
