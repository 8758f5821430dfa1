//! The advice: every valid cluster size of each file system, what it costs
//! the volume and the data, and a recommendation with its reason.
//!
//! Every volume number (cluster count, overhead) comes from the planner,
//! [`mkfs_alloc_layout::plan()`]; this module only adds the data's footprint
//! ([`crate::model`]) and the comparison with other tools' defaults.

use crate::defaults::{mkfs_default, mkfs_tool, sd_recommended, windows_default};
use crate::model::{fat32_dirs_over_limit, footprint_for, root_overflow, Footprint};
use crate::scan::{DataSummary, ScanResult};
use mkfs_alloc_layout::plan::default_align;
use mkfs_alloc_layout::units::{format_count, format_size, KIB};
use mkfs_alloc_layout::waste::{waste_bytes, waste_percent};
use mkfs_alloc_layout::{
    plan, valid_cluster_sizes, ClusterChoice, FormatOptions, FsChoice, FsKind, Layout, Medium,
    PlanError,
};
#[cfg(feature = "serde")]
use serde::Serialize;

pub(crate) use crate::recommend::compat_text;
use crate::recommend::recommend;
pub use crate::rows::{FsNote, Overhead, Row, RowNote};

/// `--max-waste` default, in percent of the data's apparent size.
pub const DEFAULT_MAX_WASTE_PERCENT: f64 = 1.0;
/// The recommendation never goes below this unless the volume requires it.
pub const MIN_PREFERRED_CLUSTER: u64 = 4 * KIB;
/// exFAT spec §3.1.9 recommends at most 2^24 - 2 clusters.
pub const EXFAT_RECOMMENDED_MAX_CLUSTERS: u32 = (1 << 24) - 2;
/// Label assumed by [`advise`]: a labelled FAT32 volume has one more root
/// entry than an unlabelled one (the worst case); exFAT always has a label entry.
pub const ASSUMED_LABEL: &str = "LABEL";

pub use mkfs_alloc_layout::rules::compat_max_cluster;

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
        fs: FsKind,
        /// Volume size.
        volume_bytes: u64,
    },
    /// Files larger than FAT (FAT12, FAT16, FAT32) can store (4 GiB - 1 bytes).
    #[error("{} file(s) exceed {fs}'s limit of 4 GiB - 1 bytes and cannot be stored: use exFAT", format_count(*.count))]
    FilesTooLarge {
        /// How many.
        count: u64,
        /// The FAT width.
        fs: FsKind,
    },
    /// The data fits at no cluster size up to the compatibility limit.
    #[error("{}", FsNote::DoesNotFit { cluster_size: *.cluster_size, needed_bytes: *.needed_bytes, free_bytes: *.free_bytes, fits_beyond_compat: *.fits_beyond_compat }.describe(*.fs))]
    DoesNotFit {
        /// File system.
        fs: FsKind,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
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
    pub fn file_systems(self) -> &'static [FsKind] {
        match self {
            FsSelection::Exfat => &[FsKind::Exfat],
            FsSelection::Fat32 => &[FsKind::Fat32],
            FsSelection::Fat16 => &[FsKind::Fat16],
            FsSelection::Fat12 => &[FsKind::Fat12],
            FsSelection::Both => &[FsKind::Exfat, FsKind::Fat32, FsKind::Fat16, FsKind::Fat12],
        }
    }
}

/// The whole advice for one volume.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct FsAdvice {
    /// File system.
    pub fs: FsKind,
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

/// Which rule produced a recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
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
    // Whole sectors: the medium rounds the volume down.
    let medium = Medium::whole(volume_bytes, sector_size)?;
    let all = fs == FsSelection::Both;
    let per_fs = fs
        .file_systems()
        .iter()
        // With `Both`, FAT16 and FAT12 are listed only where they fit.
        .filter(|&&fs| {
            let align = default_align(medium.volume_bytes(), sector_size);
            !all || !fs.is_small_fat() || !valid_cluster_sizes(fs, &medium, align).is_empty()
        })
        .map(|&fs| {
            let base = FormatOptions::new()
                .fs(FsChoice::Fixed(fs))
                .label(ASSUMED_LABEL);
            fs_advice(fs, &base, &medium, data, policy)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Advice {
        volume_bytes: medium.volume_bytes(),
        sector_size,
        max_waste_percent,
        data: data.map(ScanResult::summary),
        per_fs,
    })
}

/// The cluster size for `data` on `fs`, and why: what `--cluster auto` picks
/// when the formatter is given `--data PATH`. `None` if no size is valid.
pub fn recommend_for_data(
    fs: FsKind,
    medium: &Medium,
    data: &ScanResult,
    max_waste_percent: f64,
) -> Option<(u64, String)> {
    let opts = FormatOptions::new().fs(FsChoice::Fixed(fs));
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
    check_inputs(medium.sector_size().get(), max_waste_percent)?;
    let fs = match opts.fs_choice() {
        FsChoice::Fixed(fs) => fs,
        _ => {
            let auto = opts.clone().cluster(ClusterChoice::Auto);
            plan(&auto, medium)?.fs()
        }
    };
    let base = opts.clone().fs(FsChoice::Fixed(fs));
    let policy = Policy {
        max_waste_percent,
        beyond_compat: false,
    };
    let advice = fs_advice(fs, &base, medium, Some(data), &policy)?;
    if let Some(r) = advice.recommendation {
        return Ok(r);
    }
    Err(advice
        .notes
        .iter()
        .find_map(|n| match *n {
            FsNote::FilesOver4Gib { count } => Some(AdviseError::FilesTooLarge { count, fs }),
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
            volume_bytes: medium.volume_bytes(),
        }))
}

fn check_inputs(sector_size: u32, max_waste_percent: f64) -> Result<(), AdviseError> {
    mkfs_alloc_layout::check_sector_size(sector_size)?;
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
pub(crate) struct Candidate {
    pub(crate) row: Row,
    pub(crate) footprint: Option<Footprint>,
}

fn fs_advice(
    fs: FsKind,
    base: &FormatOptions,
    medium: &Medium,
    data: Option<&ScanResult>,
    policy: &Policy,
) -> Result<FsAdvice, AdviseError> {
    let volume = medium.volume_bytes();
    let align = base
        .given_align()
        .unwrap_or_else(|| default_align(volume, medium.sector_size().get()));
    let valid = valid_cluster_sizes(fs, medium, align);
    let auto_layout = plan(&base.clone().cluster(ClusterChoice::Auto), medium);
    let auto_cluster = auto_layout.as_ref().ok().map(|l| l.cluster_size().bytes());
    let windows = windows_default(fs, volume);
    let sd = sd_recommended(volume);
    let mkfs = mkfs_default(fs, volume, medium.sector_size().get());

    let mut cands = Vec::with_capacity(valid.len());
    for c in valid.iter() {
        // valid_cluster_sizes said yes; a label or option error would fail
        // every size: report it.
        let layout = plan(&base.clone().cluster(ClusterChoice::Bytes(c)), medium)?;
        cands.push(candidate(&layout, data, windows, sd, mkfs, auto_cluster));
    }
    let files_over_4gib = match (fs.is_fat(), data) {
        (true, Some(d)) => Some(d.files_over_fat32_limit()),
        _ => None,
    };
    let auto = auto_layout.as_ref().ok();
    let mut notes = fs_notes(fs, volume, &valid.to_vec(), data, auto);
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
        _ => auto.map(|l| auto_recommendation(l, fs, volume, data.is_some())),
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

/// The notes on a file system that do not depend on the candidates: no
/// valid size, FAT32 above 32 GB, files over 4 GiB, a full fixed root
/// directory, directories over FAT's entry limit.
fn fs_notes(
    fs: FsKind,
    volume: u64,
    valid: &[u64],
    data: Option<&ScanResult>,
    auto: Option<&Layout>,
) -> Vec<FsNote> {
    let mut notes = Vec::new();
    if valid.is_empty() {
        notes.push(FsNote::NoValidCluster);
    }
    if fs == FsKind::Fat32 && volume > 32 * 1_000_000_000 && !valid.is_empty() {
        notes.push(FsNote::Fat32Above32Gb);
    }
    let Some(d) = data else {
        return notes;
    };
    if fs.is_fat() {
        let count = d.files_over_fat32_limit();
        if count > 0 {
            notes.push(FsNote::FilesOver4Gib { count });
        }
    }
    if let Some(l) = auto {
        if let Some((entries, capacity)) = root_overflow(l, d) {
            notes.push(FsNote::RootDirFull { entries, capacity });
        }
    }
    if fs.is_fat() {
        let count = fat32_dirs_over_limit(d);
        if count > 0 {
            notes.push(FsNote::DirsOverFat32Limit { count });
        }
    }
    notes
}

/// `--cluster auto`'s pick as the recommendation, without data or for
/// data that holds no file bytes.
fn auto_recommendation(l: &Layout, fs: FsKind, volume: u64, with_data: bool) -> Recommendation {
    if with_data {
        Recommendation {
            cluster_size: l.cluster_size().bytes(),
            rule: RecommendationRule::AutoEmptyData,
            reason: format!(
                "the data holds no file bytes; {}",
                l.cluster_rule().describe(fs, volume)
            ),
        }
    } else {
        Recommendation {
            cluster_size: l.cluster_size().bytes(),
            rule: RecommendationRule::AutoNoData,
            reason: l.cluster_rule().describe(fs, volume),
        }
    }
}

fn candidate(
    layout: &Layout,
    data: Option<&ScanResult>,
    windows: Option<u64>,
    sd: Option<u64>,
    mkfs: u64,
    auto: Option<u64>,
) -> Candidate {
    let c = layout.cluster_size().bytes();
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
            FsKind::Exfat => RowNote::AboveExfatCompat,
            _ => RowNote::AboveFat32Compat,
        });
    }
    if fs == FsKind::Exfat && layout.cluster_count().get() > EXFAT_RECOMMENDED_MAX_CLUSTERS {
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
            cluster_count: layout.cluster_count().get(),
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
