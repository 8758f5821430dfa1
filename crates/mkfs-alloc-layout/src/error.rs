//! Planner errors. Every variant says what the valid range is.

use crate::geometry::sd::SD_SECTOR;
use crate::label::LabelError;
use crate::options::{FsChoice, FsKind};
use crate::units::{Count, Size};
use core::fmt;

/// Cluster sizes (powers of two from 512 bytes to 32 MiB), as a set of
/// bits (bit `k`: 2^k bytes); iterates in ascending order. Four bytes, no
/// allocation.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct ClusterSizes(u64);

impl ClusterSizes {
    /// No size.
    pub const fn new() -> Self {
        ClusterSizes(0)
    }

    /// Adds a size (a power of two).
    pub(crate) fn push(&mut self, size: u64) {
        if size.is_power_of_two() {
            self.0 |= size;
        }
    }

    /// The sizes, ascending.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u64> + Clone {
        let bits = self.0;
        (0..64).map(|k| 1u64 << k).filter(move |s| bits & s != 0)
    }

    /// No size at all.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// How many sizes.
    pub fn len(&self) -> usize {
        // At most 64.
        usize::try_from(self.0.count_ones()).unwrap_or(64)
    }

    /// Whether `size` is one of them.
    pub fn contains(&self, size: &u64) -> bool {
        size.is_power_of_two() && self.0 & size != 0
    }

    /// The smallest.
    pub fn first(&self) -> Option<u64> {
        (self.0 != 0).then(|| 1 << self.0.trailing_zeros())
    }

    /// The largest.
    pub fn last(&self) -> Option<u64> {
        (self.0 != 0).then(|| 1 << (63 - self.0.leading_zeros()))
    }

    /// The sizes in a `Vec`, ascending.
    #[cfg(feature = "alloc")]
    pub fn to_vec(&self) -> alloc::vec::Vec<u64> {
        self.iter().collect()
    }
}

impl FromIterator<u64> for ClusterSizes {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut s = ClusterSizes::new();
        for size in iter {
            s.push(size);
        }
        s
    }
}

impl fmt::Debug for ClusterSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Why no layout could be planned. Nothing has been written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Sector size outside 512, 1024, 2048, 4096.
    #[error("sector size {0} is not supported; valid: 512, 1024, 2048, 4096")]
    SectorSize(u64),
    /// Cluster size not a power of two.
    #[error("cluster size {} is not a power of two; valid for {fs}: {}", Bytes(*.cluster), Range(*.min, *.max))]
    ClusterNotPowerOfTwo {
        /// File system.
        fs: FsKind,
        /// Requested size in bytes.
        cluster: u64,
        /// Smallest valid size.
        min: u64,
        /// Largest valid size.
        max: u64,
    },
    /// Cluster size outside what the file system allows at this sector size.
    #[error("cluster size {} is out of range for {fs} with {sector}-byte sectors; valid: {} (powers of two){}", Bytes(*.cluster), Range(*.min, *.max), fat32_hint(*.fs, *.cluster, *.sector))]
    ClusterOutOfRange {
        /// File system.
        fs: FsKind,
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
    #[error("{} is too small for {fs} at {} clusters ({} clusters, needs >= {}); {}", Size(*.volume), Size(*.cluster), Count(*.clusters), Count(*.min_clusters), ValidHint(*.fs, .valid, false))]
    TooFewClusters {
        /// File system.
        fs: FsKind,
        /// Volume size in bytes.
        volume: u64,
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters this combination would have.
        clusters: u64,
        /// Minimum.
        min_clusters: u64,
        /// Cluster sizes that are valid for this volume.
        valid: ClusterSizes,
    },
    /// The volume has too many clusters at this cluster size.
    #[error("{} is too large for {fs} at {} clusters ({} clusters, maximum {}); {}", Size(*.volume), Size(*.cluster), Count(*.clusters), Count(*.max_clusters), ValidHint(*.fs, .valid, true))]
    TooManyClusters {
        /// File system.
        fs: FsKind,
        /// Volume size in bytes.
        volume: u64,
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters this combination would have.
        clusters: u64,
        /// Maximum.
        max_clusters: u64,
        /// Cluster sizes that are valid for this volume.
        valid: ClusterSizes,
    },
    /// The volume is smaller than the file system can hold at all.
    #[error("{} is too small for {fs}; the minimum is {}", Size(*.volume), Size(*.min))]
    VolumeTooSmall {
        /// File system.
        fs: FsKind,
        /// Volume size in bytes.
        volume: u64,
        /// Minimum volume size in bytes.
        min: u64,
    },
    /// The volume is larger than the file system's sector-count fields allow.
    #[error("{} is too large for {fs} with {sector}-byte sectors; the maximum is {}{}", Size(*.volume), Size(*.max), if *.fs == FsKind::Exfat { "" } else { " (use exFAT, or 4096-byte sectors)" })]
    VolumeTooLarge {
        /// File system.
        fs: FsKind,
        /// Volume size in bytes.
        volume: u64,
        /// Sector size in bytes.
        sector: u32,
        /// Maximum volume size in bytes.
        max: u64,
    },
    /// Alignment not a power of two, below the sector size, or too large.
    #[error("alignment {} is invalid; valid: a power of two from the sector size ({sector} B) up to {}", Bytes(*.align), Size(*.max))]
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
    /// An EFI System Partition ([`FormatOptions::esp`](crate::FormatOptions::esp))
    /// asked to be exFAT.
    #[error("an EFI System Partition must be FAT (UEFI firmware reads FAT12, FAT16 and FAT32, not exFAT); valid: a FAT of any width, or the automatic choice")]
    EspNotFat,
    /// A root directory size outside 1..=32,768 entries.
    #[error(
        "root directory entries {0} out of range; valid: 1..=32768 (rounded up to whole sectors)"
    )]
    RootEntries(u64),
    /// A root directory size given for a file system without a fixed root.
    #[error("a fixed root directory size applies to FAT12 and FAT16 only; this volume is {0} (its root directory grows as needed)")]
    RootEntriesNotFixed(FsKind),
    /// The build leaves this out (a cargo feature of the crate, for
    /// firmware that must be small).
    #[error("{0} is not built into this program; valid: what it was built with")]
    NotBuilt(&'static str),
    /// A number of FATs other than 1 or 2.
    #[error("{0} FATs asked for; valid: 1 or 2")]
    FatCount(u64),
    /// Two FATs asked for on exFAT (its second FAT is TexFAT's, which is
    /// not supported).
    #[error("exFAT has one FAT (a second one belongs to TexFAT, which is not supported); valid for exFAT: 1, or the default")]
    FatCountExfat,
    /// A given exFAT volume GUID of sixteen zero bytes (the null GUID).
    #[error(
        "the null GUID (all zero) is not a valid exFAT volume GUID; valid: any other 128-bit value"
    )]
    NullVolumeGuid,
    /// Without `std` (firmware) there is no clock and no entropy: the
    /// options must give the serial and the time.
    #[error("no serial or no time given, and this build (without std) has no clock and no source of randomness; valid: give both (FormatOptions::pinned, or serial and timestamp)")]
    NeedsSerialAndTime,
    /// The SD Association layout cannot be used as asked.
    #[error(transparent)]
    Sd(#[from] crate::geometry::sd::SdError),
    /// No FAT width fits this volume at this cluster size ([`FsChoice::Fat`]).
    #[error("no FAT width fits {} at {} clusters ({} clusters: FAT12 takes {}, FAT16 {}, FAT32 {}); {}", Size(*.volume), Size(*.cluster), Count(*.clusters), CountRange(crate::FsKind::Fat12), CountRange(crate::FsKind::Fat16), CountRange(crate::FsKind::Fat32), SizesHint(.valid))]
    NoFatWidth {
        /// Volume size in bytes.
        volume: u64,
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters this cluster size gives (with the FAT of the width the
        /// specification gives that count).
        clusters: u64,
        /// Cluster sizes at which some FAT width is valid.
        valid: ClusterSizes,
    },
}

/// A byte count: a size when a power of two, else "N bytes".
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_power_of_two() {
            write!(f, "{}", Size(self.0))
        } else {
            write!(f, "{} bytes", Count(self.0))
        }
    }
}

/// "512 B..32 KiB".
struct Range(u64, u64);

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", Size(self.0), Size(self.1))
    }
}

fn fat32_hint(fs: FsKind, cluster: u64, sector: u32) -> &'static str {
    if fs.is_fat() && cluster > 128 * u64::from(sector) && cluster <= 32 << 20 {
        "; exFAT allows up to 32 MiB"
    } else {
        ""
    }
}

/// "valid: 512 B..16 KiB" from a sorted list of valid sizes, or "no
/// cluster size is valid for FAT32 on this volume"; the way out (another
/// file system, a smaller root directory) is [`PlanError::alternative`].
/// Its `Display` is the text (no allocation).
pub fn valid_sizes_text(fs: FsKind, valid: &ClusterSizes) -> impl fmt::Display + '_ {
    ValidSizes(fs, valid)
}

struct ValidSizes<'a>(FsKind, &'a ClusterSizes);

impl fmt::Display for ValidSizes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.1.first(), self.1.last()) {
            (Some(a), Some(b)) if a == b => write!(f, "valid: {}", Size(a)),
            // The valid set is contiguous in powers of two; say so as a range.
            (Some(a), Some(b)) => write!(f, "valid: {}", Range(a, b)),
            _ => write!(f, "no cluster size is valid for {} on this volume", self.0),
        }
    }
}

/// [`valid_sizes_text`] with the way out in this library's terms (true:
/// the volume has too many clusters).
struct ValidHint<'a>(FsKind, &'a ClusterSizes, bool);

impl fmt::Display for ValidHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (fs, valid) = (self.0, self.1);
        let text = ValidSizes(fs, valid);
        let fat_width = "the FAT width that follows the cluster count (FsChoice::Fat)";
        match (alternative_of(fs, valid, self.2), valid.is_empty()) {
            (Some(Alternative::Exfat), false) => write!(f, "{text}, or use exFAT"),
            (Some(Alternative::Exfat), true) => write!(f, "{text}; use exFAT"),
            (Some(Alternative::FatWidth), false) => write!(f, "{text}, or use {fat_width}"),
            (Some(Alternative::FatWidth), true) => write!(f, "{text}; use {fat_width}"),
            (Some(Alternative::SmallerRoot), _) => write!(
                f,
                "{text}; a smaller root directory leaves room for clusters (root_entries, default 512 = 16 KiB; 16 entries take one 512-byte sector)"
            ),
            (None, _) => write!(f, "{text}"),
        }
    }
}

fn alternative_of(fs: FsKind, valid: &ClusterSizes, too_many: bool) -> Option<Alternative> {
    match fs {
        FsKind::Fat32 => Some(Alternative::Exfat),
        // The narrowest width: on a tiny volume only a smaller fixed root
        // directory leaves room for clusters. Too large a volume has too
        // many clusters at every size: a wider FAT helps, a smaller root
        // directory (more clusters) does not.
        FsKind::Fat12 if valid.is_empty() && !too_many => Some(Alternative::SmallerRoot),
        FsKind::Fat16 | FsKind::Fat12 => Some(Alternative::FatWidth),
        FsKind::Exfat => None,
    }
}

/// Where a file system whose cluster count is out of range at every size
/// (or at the size asked for) can go instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Alternative {
    /// exFAT (FAT32 has too few or too many clusters).
    Exfat,
    /// The FAT width the cluster count gives ([`FsChoice::Fat`]).
    FatWidth,
    /// A smaller fixed root directory leaves room for clusters (FAT12 on a
    /// tiny volume: [`FormatOptions::root_entries`](crate::FormatOptions::root_entries)).
    SmallerRoot,
}

impl PlanError {
    /// For a cluster count out of the file system's range: where to go
    /// instead ([`Alternative`]); `None` for other errors.
    pub fn alternative(&self) -> Option<Alternative> {
        match self {
            PlanError::TooFewClusters { fs, valid, .. } => alternative_of(*fs, valid, false),
            PlanError::TooManyClusters { fs, valid, .. } => alternative_of(*fs, valid, true),
            _ => None,
        }
    }
}

/// "4,101..65,508" for a FAT width's accepted cluster counts.
struct CountRange(FsKind);

impl fmt::Display for CountRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = crate::geometry::fat::cluster_range(self.0);
        write!(f, "{}..{}", Count(a), Count(b))
    }
}

/// "valid: 512 B, 1 KiB, ..." or that no size gives a valid FAT.
struct SizesHint<'a>(&'a ClusterSizes);

impl fmt::Display for SizesHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no cluster size gives a valid FAT on this volume");
        }
        f.write_str("valid: ")?;
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", Size(c))?;
        }
        Ok(())
    }
}

/// Checks that `cluster` is a power of two from the sector size up to the
/// file system's largest cluster ([`FsKind::max_cluster`]).
pub(crate) fn check_cluster(fs: FsKind, cluster: u64, sector: u32) -> Result<(), PlanError> {
    let min = u64::from(sector);
    let max = crate::rules::max_cluster(fs, sector);
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

/// Why a card cannot get the SD layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SdError {
    /// Above 2 TiB: the specification publishes no parameters (SDUC).
    #[error("{sectors} sectors ({} bytes) is above 2 TiB: the SD specification publishes no layout for such cards (SDUC); valid: cards up to 2 TiB, or the standard layout", sectors * SD_SECTOR)]
    TooLarge {
        /// Card capacity in 512-byte sectors.
        sectors: u64,
    },
    /// Too small for its class's file system area and one cluster.
    #[error("a card of {} ({sectors} sectors) is too small for the SD layout: its class's file system does not fit", Size(sectors * SD_SECTOR))]
    TooSmall {
        /// Card capacity in 512-byte sectors.
        sectors: u64,
    },
    /// An option the SD layout decides itself.
    #[error("the SD layout decides {} itself, from the card's capacity; leave {option} at its default (the SD layout takes a file system (the class's, or FAT32 on SDXC cards), a label, a serial and content)", .option.decides())]
    Conflict {
        /// The option given.
        option: SdConflict,
    },
    /// A file system the card's class does not take.
    #[error("the SD layout gives a card of {} ({class}) {class_fs}; {} is not allowed; valid: {}", Size(sectors * SD_SECTOR), ChoiceText(*.asked), Choices(.allowed))]
    Fs {
        /// Card capacity in 512-byte sectors.
        sectors: u64,
        /// The capacity class's name (SDSC, SDHC, SDXC).
        class: &'static str,
        /// The class's file system.
        class_fs: FsKind,
        /// What was asked for.
        asked: FsChoice,
        /// The accepted choices (FAT32 on an SDXC card gets 64 KiB clusters).
        allowed: &'static [FsChoice],
    },
    /// FAT32 on an SDXC card whose reserved-sector padding does not fit.
    #[error("FAT32 in the SD layout of a card of {sectors} sectors needs {rsvd} reserved sectors to put the data region on a boundary unit, more than the 16-bit field holds; use exFAT (the class's file system)")]
    ReservedOverflow {
        /// Card capacity in 512-byte sectors.
        sectors: u64,
        /// Reserved sectors the layout would need.
        rsvd: u64,
    },
    /// The SD layout counts 512-byte sectors.
    #[error("the SD layout needs 512-byte sectors (SD cards have them); got {0}-byte sectors")]
    SectorSize(u32),
    /// The volume is not where the SD layout puts the partition.
    #[error("the SD layout of a card of {total} sectors puts the partition at sector {start} with {sectors} sectors; the medium given starts the volume at sector {got_start} with {got_sectors} sectors")]
    Placement {
        /// Card capacity in 512-byte sectors.
        total: u64,
        /// Partition start the layout needs.
        start: u64,
        /// Partition length the layout needs.
        sectors: u64,
        /// Partition start given.
        got_start: u64,
        /// Partition length given.
        got_sectors: u64,
    },
}

/// An option the SD layout decides itself ([`SdError::Conflict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SdConflict {
    /// An explicit cluster size (the `cluster` of [`FormatOptions`](crate::FormatOptions)).
    Cluster,
    /// An alignment (the `align` of [`FormatOptions`](crate::FormatOptions)).
    Align,
    /// A root directory size (the `root_entries` of [`FormatOptions`](crate::FormatOptions)).
    RootEntries,
    /// An EFI System Partition (the `esp` of [`FormatOptions`](crate::FormatOptions)).
    Esp,
    /// No partition table (the layout writes an MBR).
    TableNone,
    /// A GPT (the layout writes an MBR).
    TableGpt,
    /// One FAT (the `fats` of [`FormatOptions`](crate::FormatOptions); the
    /// layout's FAT12/16/32 have two).
    Fats,
}

impl SdConflict {
    /// What the SD layout decides in its place.
    pub fn decides(self) -> &'static str {
        match self {
            SdConflict::Cluster => "the cluster size",
            SdConflict::Align => "the alignment (its boundary unit)",
            SdConflict::RootEntries => "the root directory (512 entries)",
            SdConflict::Esp => "the partition type",
            SdConflict::TableNone | SdConflict::TableGpt => "the partition table (an MBR)",
            SdConflict::Fats => "the number of FATs (two)",
        }
    }
}

impl core::fmt::Display for SdConflict {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SdConflict::Cluster => "the cluster size",
            SdConflict::Align => "the alignment",
            SdConflict::RootEntries => "the root directory size",
            SdConflict::Esp => "the EFI System Partition switch",
            SdConflict::TableNone | SdConflict::TableGpt => "the partition table",
            SdConflict::Fats => "the number of FATs",
        })
    }
}

/// A file-system choice in words (this library's, not a command line's).
struct ChoiceText(FsChoice);

impl fmt::Display for ChoiceText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            FsChoice::Auto => f.write_str("the automatic choice"),
            FsChoice::Fat => f.write_str("the FAT width the size allows"),
            FsChoice::Fixed(fs) => f.write_str(fs.display_name()),
        }
    }
}

/// Choices in words, separated by commas.
struct Choices<'a>(&'a [FsChoice]);

impl fmt::Display for Choices<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", ChoiceText(c))?;
        }
        Ok(())
    }
}
