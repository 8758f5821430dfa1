//! The advice: every valid cluster size of each file system, what it costs
//! the volume and the data, and a recommendation with its reason.
//!
//! Every volume number (cluster count, overhead) comes from the planner,
//! [`mkfs_alloc_layout::plan`]; this module only adds the data's footprint
//! ([`crate::model`]) and the comparison with other tools' defaults.

use crate::defaults::{mkfs_default, mkfs_tool, sd_recommended, windows_default};
use crate::model::{fat32_dirs_over_limit, footprint_for, root_overflow, Footprint};
use crate::scan::{DataSummary, ScanResult};
use mkfs_alloc_layout::plan::default_align;
use mkfs_alloc_layout::units::{format_count, format_size, KIB, MIB};
use mkfs_alloc_layout::waste::{waste_bytes, waste_percent};
use mkfs_alloc_layout::{
    plan, valid_cluster_sizes, ClusterChoice, FormatOptions, FsChoice, FsType, Layout, Medium,
    PlanError, RegionKind,
};
use serde::Serialize;

/// `--max-waste` default, in percent of the data's apparent size.
pub const DEFAULT_MAX_WASTE_PERCENT: f64 = 1.0;
/// The recommendation never goes below this unless the volume requires it.
pub const MIN_PREFERRED_CLUSTER: u64 = 4 * KIB;
/// exFAT spec §3.1.9 recommends at most 2^24 - 2 clusters.
pub const EXFAT_RECOMMENDED_MAX_CLUSTERS: u32 = (1 << 24) - 2;
/// Label assumed by [`advise`]: a labelled FAT32 volume has one more root
/// entry than an unlabelled one (the worst case); exFAT always has a label entry.
pub const ASSUMED_LABEL: &str = "LABEL";

/// The largest cluster size every common system handles: FAT12/16/32 32 KiB
/// (old DOS, some BIOS and camera firmware fail above), exFAT 1 MiB (older
/// macOS does not mount larger).
pub fn compat_max_cluster(fs: FsType) -> u64 {
    match fs {
        FsType::Exfat => MIB,
        _ => 32 * KIB,
    }
}

/// Why advice could not be given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdviseError {
    /// The planner rejected the volume (sector size, partition offset, alignment, label).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// `--max-waste` is negative or not a number.
    #[error("maximum waste {0}% is invalid; expected a percentage of 0 or more, e.g. 1 or 2.5")]
    MaxWaste(f64),
    /// `--fs auto` (or a fixed file system) has no valid layout for this volume.
    #[error("no cluster size is valid for {fs} on a {} volume", format_size(*.volume_bytes))]
    NoValidCluster {
        /// File system.
        fs: FsType,
        /// Volume size.
        volume_bytes: u64,
    },
    /// Files larger than FAT32 can store (4 GiB - 1 bytes).
    #[error("{} file(s) exceed FAT32's limit of 4 GiB - 1 bytes and cannot be stored: use exFAT", format_count(*.count))]
    FilesTooLarge {
        /// How many.
        count: u64,
    },
    /// The data fits at no cluster size up to the compatibility limit.
    #[error("{}", FsNote::DoesNotFit { cluster_size: *.cluster_size, needed_bytes: *.needed_bytes, free_bytes: *.free_bytes, fits_beyond_compat: *.fits_beyond_compat }.describe(*.fs))]
    DoesNotFit {
        /// File system.
        fs: FsType,
        /// The cluster size that comes closest.
        cluster_size: u64,
        /// What the data needs at that size.
        needed_bytes: u64,
        /// What is free at that size.
        free_bytes: u64,
        /// The largest cluster size beyond the compatibility limit at which
        /// it would fit, if any.
        fits_beyond_compat: Option<u64>,
    },
}

/// How to choose the recommendation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Largest acceptable waste, in percent of the data's size.
    pub max_waste_percent: f64,
    /// Allow recommending a cluster size beyond [`compat_max_cluster`]
    /// (never done otherwise).
    pub beyond_compat: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_waste_percent: DEFAULT_MAX_WASTE_PERCENT,
            beyond_compat: false,
        }
    }
}

/// Which file systems to advise on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FsSelection {
    /// exFAT only.
    Exfat,
    /// FAT32 only.
    Fat32,
    /// FAT16 only.
    Fat16,
    /// FAT12 only.
    Fat12,
    /// exFAT and FAT32, then FAT16 and FAT12 where some cluster size fits
    /// the volume.
    #[default]
    Both,
}

impl FsSelection {
    /// The file systems selected, in report order.
    pub fn file_systems(self) -> &'static [FsType] {
        match self {
            FsSelection::Exfat => &[FsType::Exfat],
            FsSelection::Fat32 => &[FsType::Fat32],
            FsSelection::Fat16 => &[FsType::Fat16],
            FsSelection::Fat12 => &[FsType::Fat12],
            FsSelection::Both => &[FsType::Exfat, FsType::Fat32, FsType::Fat16, FsType::Fat12],
        }
    }
}

/// The whole advice for one volume.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advice {
    /// Volume size in bytes (whole sectors).
    pub volume_bytes: u64,
    /// Sector size.
    pub sector_size: u32,
    /// The waste limit the recommendation used, in percent.
    pub max_waste_percent: f64,
    /// The scanned data, if any.
    pub data: Option<DataSummary>,
    /// One entry per file system.
    pub per_fs: Vec<FsAdvice>,
}

/// The advice for one file system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FsAdvice {
    /// File system.
    pub fs: FsType,
    /// One row per valid cluster size, smallest first.
    pub rows: Vec<Row>,
    /// Files over 4 GiB - 1 bytes (FAT32 with data only).
    pub files_over_4gib: Option<u64>,
    /// What Windows' format picks by default, if it formats this volume.
    pub windows_default: Option<u64>,
    /// What the SD specification recommends for this capacity.
    pub sd_recommended: Option<u64>,
    /// What mkfs.exfat / mkfs.fat pick by default.
    pub mkfs_default: u64,
    /// Which tool `mkfs_default` is for.
    pub mkfs_tool: &'static str,
    /// What `--cluster auto` picks without data.
    pub auto_cluster: Option<u64>,
    /// The recommendation, if any size is valid.
    pub recommendation: Option<Recommendation>,
    /// Notes about the whole volume on this file system.
    pub notes: Vec<FsNote>,
}

/// Metadata overhead of a layout, by kind, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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
    pub fn describe(self, fs: FsType) -> String {
        match self {
            RowNote::AboveFat32Compat => {
                "above 32 KiB: old DOS, some BIOS and camera firmware fail".into()
            }
            RowNote::AboveExfatCompat => "above 1 MiB: older macOS does not mount it".into(),
            RowNote::ExfatManyClusters => format!(
                "more than {} clusters (the exFAT spec recommends fewer)",
                format_count(u64::from(EXFAT_RECOMMENDED_MAX_CLUSTERS))
            ),
            RowNote::WindowsDefault => "Windows default".into(),
            RowNote::SdRecommended => "SD spec".into(),
            RowNote::MkfsDefault => format!("{} default", mkfs_tool(fs)),
            RowNote::AutoDefault => "--cluster auto".into(),
            RowNote::Recommended => "recommended".into(),
        }
    }
}

/// A note on the whole volume for one file system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FsNote {
    /// No cluster size is valid.
    NoValidCluster,
    /// FAT32 above 32 GB: valid, but Windows' format refuses it.
    #[serde(rename = "fat32_above_32gb")]
    Fat32Above32Gb,
    /// Files FAT32 cannot store.
    #[serde(rename = "files_over_4gib")]
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
    pub fn describe(&self, fs: FsType) -> String {
        match self {
            FsNote::NoValidCluster => format!("no cluster size is valid for {fs} on this volume"),
            FsNote::Fat32Above32Gb => {
                "FAT32 above 32 GB is valid, but Windows' own format refuses it and some firmware rejects it".into()
            }
            FsNote::FilesOver4Gib { count } => format!(
                "{} file(s) exceed FAT32's 4 GiB - 1 limit and cannot be stored: use exFAT",
                format_count(*count)
            ),
            FsNote::DirsOverFat32Limit { count } => format!(
                "{} directory(ies) need more than FAT32's 65,536 entries and cannot be copied whole",
                format_count(*count)
            ),
            FsNote::RootDirFull { entries, capacity } => format!(
                "the top level needs {} root directory entries but the fixed {fs} root holds {}: raise --root-entries",
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

/// Which rule produced a recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecommendationRule {
    /// The largest compatible size whose waste is within the limit.
    WithinMaxWaste,
    /// No compatible size is within the limit; the one that wastes least.
    LeastWaste,
    /// The data fits only at smaller sizes than the rules prefer.
    OnlyFitting,
    /// No data: the `--cluster auto` rule.
    AutoNoData,
    /// The data has no bytes: the `--cluster auto` rule.
    AutoEmptyData,
}

/// A recommended cluster size and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// Cluster size in bytes.
    pub cluster_size: u64,
    /// The rule that chose it.
    pub rule: RecommendationRule,
    /// A sentence for people.
    pub reason: String,
}

/// Advice for a whole-medium volume of `volume_bytes` with `sector_size`-byte
/// sectors, on the selected file systems, for `data` if given.
///
/// The volumes are planned with the default alignment and a label
/// ([`ASSUMED_LABEL`]).
///
/// # Errors
///
/// [`AdviseError::Plan`] for an invalid sector size, [`AdviseError::MaxWaste`]
/// for a negative or NaN limit. A file system with no valid cluster size, or
/// where the data does not fit, is not an error: its [`FsAdvice`] has no
/// recommendation and says why in its notes.
pub fn advise(
    volume_bytes: u64,
    sector_size: u32,
    fs: FsSelection,
    data: Option<&ScanResult>,
    max_waste_percent: f64,
) -> Result<Advice, AdviseError> {
    let policy = Policy {
        max_waste_percent,
        ..Policy::default()
    };
    advise_with(volume_bytes, sector_size, fs, data, &policy)
}

/// [`advise`] with a [`Policy`] (e.g. allowing cluster sizes beyond the
/// compatibility limit).
///
/// # Errors
///
/// As [`advise`].
pub fn advise_with(
    volume_bytes: u64,
    sector_size: u32,
    fs: FsSelection,
    data: Option<&ScanResult>,
    policy: &Policy,
) -> Result<Advice, AdviseError> {
    let max_waste_percent = policy.max_waste_percent;
    check_inputs(sector_size, max_waste_percent)?;
    let bps = u64::from(sector_size);
    let medium = Medium::whole(volume_bytes / bps * bps, sector_size);
    let all = fs == FsSelection::Both;
    let per_fs = fs
        .file_systems()
        .iter()
        // With `Both`, FAT16 and FAT12 are listed only where they fit.
        .filter(|&&fs| {
            let align = default_align(medium.volume_bytes, sector_size);
            !all || !fs.is_small_fat() || !valid_cluster_sizes(fs, &medium, align).is_empty()
        })
        .map(|&fs| {
            let base = FormatOptions {
                fs: FsChoice::Fixed(fs),
                label: Some(ASSUMED_LABEL.to_string()),
                ..FormatOptions::default()
            };
            fs_advice(fs, &base, &medium, data, policy)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Advice {
        volume_bytes: medium.volume_bytes,
        sector_size,
        max_waste_percent,
        data: data.map(ScanResult::summary),
        per_fs,
    })
}

/// The cluster size for `data` on `fs`, and why: what `--cluster auto` picks
/// when the formatter is given `--data PATH`. `None` if no size is valid.
pub fn recommend_for_data(
    fs: FsType,
    medium: &Medium,
    data: &ScanResult,
    max_waste_percent: f64,
) -> Option<(u64, String)> {
    let opts = FormatOptions {
        fs: FsChoice::Fixed(fs),
        ..FormatOptions::default()
    };
    recommend_for_format(&opts, medium, data, max_waste_percent)
        .ok()
        .map(|r| (r.cluster_size, r.reason))
}

/// Like [`recommend_for_data`], honouring the formatter's own options (file
/// system choice, alignment, label, volume GUID); `opts.cluster` is ignored.
/// `FsChoice::Auto` is resolved the way the planner resolves it.
///
/// # Errors
///
/// [`AdviseError::Plan`] when the planner rejects the options or the
/// medium, [`AdviseError::NoValidCluster`] when no size is valid,
/// [`AdviseError::FilesTooLarge`] for files FAT32 cannot store,
/// [`AdviseError::DoesNotFit`] when the data fits at no size up to the
/// compatibility limit, [`AdviseError::MaxWaste`] for a negative or NaN limit.
pub fn recommend_for_format(
    opts: &FormatOptions,
    medium: &Medium,
    data: &ScanResult,
    max_waste_percent: f64,
) -> Result<Recommendation, AdviseError> {
    check_inputs(medium.sector_size, max_waste_percent)?;
    let bps = u64::from(medium.sector_size);
    let medium = Medium {
        volume_bytes: medium.volume_bytes / bps * bps,
        ..*medium
    };
    let fs = match opts.fs {
        FsChoice::Fixed(fs) => fs,
        FsChoice::Auto | FsChoice::Fat => {
            let auto = FormatOptions {
                cluster: ClusterChoice::Auto,
                ..opts.clone()
            };
            plan(&auto, &medium)?.fs()
        }
    };
    let base = FormatOptions {
        fs: FsChoice::Fixed(fs),
        ..opts.clone()
    };
    let policy = Policy {
        max_waste_percent,
        beyond_compat: false,
    };
    let advice = fs_advice(fs, &base, &medium, Some(data), &policy)?;
    if let Some(r) = advice.recommendation {
        return Ok(r);
    }
    Err(advice
        .notes
        .iter()
        .find_map(|n| match *n {
            FsNote::FilesOver4Gib { count } => Some(AdviseError::FilesTooLarge { count }),
            FsNote::DoesNotFit {
                cluster_size,
                needed_bytes,
                free_bytes,
                fits_beyond_compat,
            } => Some(AdviseError::DoesNotFit {
                fs,
                cluster_size,
                needed_bytes,
                free_bytes,
                fits_beyond_compat,
            }),
            _ => None,
        })
        .unwrap_or(AdviseError::NoValidCluster {
            fs,
            volume_bytes: medium.volume_bytes,
        }))
}

fn check_inputs(sector_size: u32, max_waste_percent: f64) -> Result<(), AdviseError> {
    if !matches!(sector_size, 512 | 1024 | 2048 | 4096) {
        return Err(PlanError::SectorSize(u64::from(sector_size)).into());
    }
    if max_waste_percent.is_nan() || max_waste_percent < 0.0 {
        return Err(AdviseError::MaxWaste(max_waste_percent));
    }
    Ok(())
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// A row and the footprint behind it.
struct Candidate {
    row: Row,
    footprint: Option<Footprint>,
}

fn fs_advice(
    fs: FsType,
    base: &FormatOptions,
    medium: &Medium,
    data: Option<&ScanResult>,
    policy: &Policy,
) -> Result<FsAdvice, AdviseError> {
    let volume = medium.volume_bytes;
    let align = base
        .align
        .unwrap_or_else(|| default_align(volume, medium.sector_size));
    let valid = valid_cluster_sizes(fs, medium, align);
    let auto_layout = plan(
        &FormatOptions {
            cluster: ClusterChoice::Auto,
            ..base.clone()
        },
        medium,
    );
    let auto_cluster = auto_layout.as_ref().ok().map(|l| l.cluster_size());
    let windows = windows_default(fs, volume);
    let sd = sd_recommended(volume);
    let mkfs = mkfs_default(fs, volume, medium.sector_size);

    let mut cands = Vec::with_capacity(valid.len());
    for &c in &valid {
        // valid_cluster_sizes said yes; a label or option error would fail
        // every size: report it.
        let layout = plan(
            &FormatOptions {
                cluster: ClusterChoice::Bytes(c),
                ..base.clone()
            },
            medium,
        )?;
        cands.push(candidate(&layout, data, windows, sd, mkfs, auto_cluster));
    }

    let mut notes = Vec::new();
    if valid.is_empty() {
        notes.push(FsNote::NoValidCluster);
    }
    if fs == FsType::Fat32 && volume > 32 * 1_000_000_000 && !valid.is_empty() {
        notes.push(FsNote::Fat32Above32Gb);
    }
    let files_over_4gib = match (fs.is_fat(), data) {
        (true, Some(d)) => Some(d.files_over_fat32_limit()),
        _ => None,
    };
    if let Some(count) = files_over_4gib.filter(|&n| n > 0) {
        notes.push(FsNote::FilesOver4Gib { count });
    }
    if let (Some(d), Some(l)) = (data, auto_layout.as_ref().ok()) {
        if let Some((entries, capacity)) = root_overflow(l, d) {
            notes.push(FsNote::RootDirFull { entries, capacity });
        }
    }
    if let (true, Some(d)) = (fs.is_fat(), data) {
        let count = fat32_dirs_over_limit(d);
        if count > 0 {
            notes.push(FsNote::DirsOverFat32Limit { count });
        }
    }
    if !valid.is_empty() {
        for (source, c) in [("windows", windows), ("sd_spec", sd), ("mkfs", Some(mkfs))] {
            if let Some(c) = c.filter(|c| !valid.contains(c)) {
                notes.push(FsNote::DefaultNotValid {
                    source,
                    cluster_size: c,
                });
            }
        }
    }

    let recommendation = match data {
        _ if cands.is_empty() => None,
        // FAT32 cannot store the data whatever the cluster size (noted above).
        Some(_) if files_over_4gib.is_some_and(|n| n > 0) => None,
        Some(d) if d.apparent_bytes > 0 => match recommend(fs, &cands, policy) {
            Ok(r) => Some(r),
            Err(note) => {
                notes.push(note);
                None
            }
        },
        Some(_) => auto_layout.as_ref().ok().map(|l| Recommendation {
            cluster_size: l.cluster_size(),
            rule: RecommendationRule::AutoEmptyData,
            reason: format!(
                "the data holds no file bytes; {}",
                l.cluster_rule().describe(fs, volume)
            ),
        }),
        None => auto_layout.as_ref().ok().map(|l| Recommendation {
            cluster_size: l.cluster_size(),
            rule: RecommendationRule::AutoNoData,
            reason: l.cluster_rule().describe(fs, volume),
        }),
    };
    let mut rows: Vec<Row> = cands.into_iter().map(|c| c.row).collect();
    if let Some(r) = &recommendation {
        if let Some(row) = rows
            .iter_mut()
            .find(|row| row.cluster_size == r.cluster_size)
        {
            row.notes.push(RowNote::Recommended);
        }
    }
    Ok(FsAdvice {
        fs,
        rows,
        files_over_4gib,
        windows_default: windows,
        sd_recommended: sd,
        mkfs_default: mkfs,
        mkfs_tool: mkfs_tool(fs),
        auto_cluster,
        recommendation,
        notes,
    })
}

fn candidate(
    layout: &Layout,
    data: Option<&ScanResult>,
    windows: Option<u64>,
    sd: Option<u64>,
    mkfs: u64,
    auto: Option<u64>,
) -> Candidate {
    let c = layout.cluster_size();
    let fs = layout.fs();
    let usable = layout.usable_bytes();
    let overhead = layout.overhead_bytes();
    let footprint = data.map(|d| footprint_for(layout, d));
    let on_disk = footprint.map(|f| f.bytes_on_disk());
    let waste = match (footprint, data) {
        (Some(f), Some(d)) => Some(waste_bytes(
            f.file_bytes(),
            f.directory_bytes(),
            d.apparent_bytes,
        )),
        _ => None,
    };
    let waste_percent = match (waste, data) {
        (Some(w), Some(d)) => waste_percent(w, d.apparent_bytes),
        _ => None,
    };
    let mut notes = Vec::new();
    if c > compat_max_cluster(fs) {
        notes.push(match fs {
            FsType::Exfat => RowNote::AboveExfatCompat,
            _ => RowNote::AboveFat32Compat,
        });
    }
    if fs == FsType::Exfat && layout.cluster_count() > EXFAT_RECOMMENDED_MAX_CLUSTERS {
        notes.push(RowNote::ExfatManyClusters);
    }
    for (note, pick) in [
        (RowNote::WindowsDefault, windows),
        (RowNote::SdRecommended, sd),
        (RowNote::MkfsDefault, Some(mkfs)),
        (RowNote::AutoDefault, auto),
    ] {
        if pick == Some(c) {
            notes.push(note);
        }
    }
    Candidate {
        row: Row {
            cluster_size: c,
            cluster_count: layout.cluster_count(),
            usable_bytes: usable,
            overhead_bytes: overhead,
            overhead_percent: pct(overhead, layout.volume_bytes()),
            overhead: Overhead::of(layout),
            data_bytes_on_disk: on_disk,
            file_bytes_on_disk: footprint.map(|f| f.file_bytes()),
            directory_bytes_on_disk: footprint.map(|f| f.directory_bytes()),
            waste_bytes: waste,
            waste_percent,
            fits: on_disk
                .map(|b| b <= usable && data.and_then(|d| root_overflow(layout, d)).is_none()),
            notes,
        },
        footprint,
    }
}

/// The compatibility limit in words.
fn compat_text(fs: FsType) -> &'static str {
    match fs {
        FsType::Fat32 => "FAT32 up to 32 KiB",
        FsType::Fat16 => "FAT16 up to 32 KiB",
        FsType::Fat12 => "FAT12 up to 32 KiB",
        FsType::Exfat => "exFAT up to 1 MiB",
    }
}

/// The recommendation rule with data (rows sorted by cluster size, data
/// with a non-zero apparent size):
///
/// 1. candidates: valid sizes up to the compatibility ceiling
///    ([`compat_max_cluster`]; every valid size with
///    [`Policy::beyond_compat`]), and not below [`MIN_PREFERRED_CLUSTER`]
///    unless no candidate is that large;
/// 2. the largest candidate whose waste is within the limit and where the
///    data fits ([`RecommendationRule::WithinMaxWaste`]);
/// 3. else the fitting candidate that wastes least, i.e. the smallest
///    ([`RecommendationRule::LeastWaste`]);
/// 4. else the largest size up to the ceiling (below the floor too) where
///    the data fits ([`RecommendationRule::OnlyFitting`]);
/// 5. else no recommendation: the [`FsNote::DoesNotFit`] note says how much
///    is missing, and whether a size beyond the ceiling would do.
///
/// Waste never shrinks as clusters grow (each file and directory rounds up
/// to a multiple of the previous size), so "largest within the limit" is a
/// threshold.
fn recommend(fs: FsType, cands: &[Candidate], policy: &Policy) -> Result<Recommendation, FsNote> {
    let max_waste = policy.max_waste_percent;
    let ceiling = if policy.beyond_compat {
        u64::MAX
    } else {
        compat_max_cluster(fs)
    };
    let compatible: Vec<&Candidate> = cands
        .iter()
        .filter(|c| c.row.cluster_size <= ceiling)
        .collect();
    let floor = if compatible
        .iter()
        .any(|c| c.row.cluster_size >= MIN_PREFERRED_CLUSTER)
    {
        MIN_PREFERRED_CLUSTER
    } else {
        compatible.last().map_or(0, |c| c.row.cluster_size)
    };
    let preferred: Vec<&Candidate> = compatible
        .iter()
        .copied()
        .filter(|c| c.row.cluster_size >= floor)
        .collect();
    let fits = |c: &Candidate| c.row.fits == Some(true);
    let waste = |c: &Candidate| c.row.waste_percent.unwrap_or(0.0);
    let ceiling_text = if policy.beyond_compat {
        "cluster sizes beyond the compatibility limit allowed"
    } else {
        compat_text(fs)
    };
    let below_floor = if floor < MIN_PREFERRED_CLUSTER {
        format!("; clusters of 4 KiB and more are not valid for {fs} on this volume")
    } else {
        String::new()
    };
    let make = |c: &Candidate, rule, reason: String| Recommendation {
        cluster_size: c.row.cluster_size,
        rule,
        reason: format!("{reason}{below_floor}"),
    };

    if let Some(c) = preferred
        .iter()
        .copied()
        .rfind(|c| fits(c) && waste(c) <= max_waste)
    {
        return Ok(make(
            c,
            RecommendationRule::WithinMaxWaste,
            format!(
                "the largest cluster size whose waste ({:.2}%) stays within {}% and that every common system handles ({ceiling_text})",
                waste(c),
                trim_float(max_waste)
            ),
        ));
    }
    if let Some(c) = preferred.iter().copied().find(|c| fits(c)) {
        return Ok(make(
            c,
            RecommendationRule::LeastWaste,
            format!(
                "no cluster size of {} or more keeps the waste within {}%; {} wastes least ({:.1}%, {} more than the data's size)",
                format_size(floor.max(512)),
                trim_float(max_waste),
                format_size(c.row.cluster_size),
                waste(c),
                format_size(c.row.waste_bytes.unwrap_or(0)),
            ),
        ));
    }
    if let Some(c) = compatible.iter().copied().rfind(|c| fits(c)) {
        return Ok(make(
            c,
            RecommendationRule::OnlyFitting,
            format!(
                "the data fits only with clusters of {} or less (waste {:.1}%)",
                format_size(c.row.cluster_size),
                waste(c)
            ),
        ));
    }
    let shortfall = |c: &&Candidate| {
        c.footprint
            .map_or(u64::MAX, |f| f.bytes_on_disk())
            .saturating_sub(c.row.usable_bytes)
    };
    let pool: Vec<&Candidate> = if compatible.is_empty() {
        cands.iter().collect()
    } else {
        compatible
    };
    let best = pool
        .iter()
        .copied()
        .min_by_key(shortfall)
        .unwrap_or(&cands[0]);
    Err(FsNote::DoesNotFit {
        cluster_size: best.row.cluster_size,
        needed_bytes: best.row.data_bytes_on_disk.unwrap_or(0),
        free_bytes: best.row.usable_bytes,
        fits_beyond_compat: cands
            .iter()
            .rfind(|c| c.row.cluster_size > ceiling && fits(c))
            .map(|c| c.row.cluster_size),
    })
}

/// `1` rather than `1.0`, `2.5` as is.
fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
