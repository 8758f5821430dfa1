//! The planner: [`FormatOptions`] + [`Medium`] → a validated [`Layout`].
//!
//! Architecture invariant: every check happens here. The writer trusts a
//! `Layout` and never rejects input, so rejected input can never have written
//! a byte.

use crate::error::PlanError;
use crate::label::{exfat_label, fat32_label, EncodedLabel};
use crate::options::{
    random_serial, ClusterChoice, FormatOptions, FsChoice, FsType, Medium, Timestamp,
};
use crate::rng::splitmix64;
use crate::rules::{self, ClusterRule, FsRule};
use crate::units::{format_size, MIB};
use crate::{exfat, fat};
use serde::Serialize;

/// The default alignment for volumes of 16 MiB and more.
pub const DEFAULT_ALIGN: u64 = MIB;
/// The largest alignment accepted (the SD specification's largest Boundary Unit).
pub const MAX_ALIGN: u64 = 64 * MIB;

/// What a region of the volume holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// exFAT main boot region (12 sectors) or FAT reserved sectors.
    BootRegion,
    /// exFAT backup boot region (12 sectors).
    BackupBootRegion,
    /// Zero padding before the FAT (alignment).
    Padding,
    /// A FAT; the number is its index (0 or 1).
    Fat,
    /// Zero padding before the cluster heap (exFAT, alignment).
    HeapPadding,
    /// exFAT allocation bitmap clusters.
    Bitmap,
    /// exFAT up-case table clusters.
    Upcase,
    /// The root directory clusters (FAT12/16: the fixed root directory
    /// region between the FATs and the data region).
    RootDirectory,
    /// Free clusters; a quick format does not touch them.
    FreeClusters,
    /// Sectors after the last whole cluster, unused.
    Tail,
}

/// One contiguous region of the volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Region {
    /// What it holds.
    pub kind: RegionKind,
    /// Index among regions of the same kind (FAT 0 and 1).
    pub index: u32,
    /// Byte offset from the start of the volume.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// True if the format writes (or zeroes) this region.
    pub written: bool,
}

/// File-system-specific geometry of a [`Layout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Geometry {
    /// exFAT geometry.
    Exfat(exfat::Geometry),
    /// FAT12, FAT16 or FAT32 geometry.
    Fat(fat::Geometry),
}

/// A validated plan: every byte offset the writer will use, and why each
/// choice was made. Only [`plan`] makes one (the fields are private, so a
/// plan cannot be changed after validation); read it through the accessors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// File system.
    pub(crate) fs: FsType,
    /// Why this file system.
    pub(crate) fs_rule: FsRule,
    /// Sector size in bytes.
    pub(crate) sector_size: u32,
    /// Cluster size in bytes.
    pub(crate) cluster_size: u64,
    /// Why this cluster size.
    pub(crate) cluster_rule: ClusterRule,
    /// What Windows' format would have picked, if it formats this at all.
    pub(crate) windows_default_cluster: Option<u64>,
    /// Number of clusters in the data region / cluster heap.
    pub(crate) cluster_count: u32,
    /// Bytes of the volume (whole sectors).
    pub(crate) volume_bytes: u64,
    /// Byte offset of the volume on its medium.
    pub(crate) partition_offset: u64,
    /// Alignment (bytes, from the medium start) of the FAT and data region.
    pub(crate) align: u64,
    /// Byte offset of the first FAT from the volume start.
    pub(crate) fat_offset: u64,
    /// Bytes of one FAT.
    pub(crate) fat_bytes: u64,
    /// Number of FATs.
    pub(crate) fat_count: u32,
    /// Byte offset of the cluster heap / data region from the volume start.
    pub(crate) data_offset: u64,
    /// Clusters in use after formatting (bitmap, up-case, root).
    pub(crate) used_clusters: u32,
    /// Volume serial number.
    pub(crate) serial: u32,
    /// The label as given (validated), if any.
    pub(crate) label: Option<String>,
    /// The label as the file system stores it (encoded once, by the planner).
    pub(crate) label_encoded: Option<EncodedLabel>,
    /// exFAT volume GUID written to the root directory, if any.
    pub(crate) volume_guid: Option<[u8; 16]>,
    /// Time recorded in the file system.
    pub(crate) timestamp: Timestamp,
    /// Compatibility warnings (the layout is valid, but some systems may balk).
    pub(crate) warnings: Vec<String>,
    /// File-system geometry.
    pub(crate) geometry: Geometry,
    /// All regions, in order, covering the volume exactly.
    pub(crate) regions: Vec<Region>,
}

impl Layout {
    /// File system.
    pub fn fs(&self) -> FsType {
        self.fs
    }

    /// Why this file system.
    pub fn fs_rule(&self) -> FsRule {
        self.fs_rule
    }

    /// Sector size in bytes.
    pub fn sector_size(&self) -> u32 {
        self.sector_size
    }

    /// Cluster size in bytes.
    pub fn cluster_size(&self) -> u64 {
        self.cluster_size
    }

    /// Why this cluster size.
    pub fn cluster_rule(&self) -> ClusterRule {
        self.cluster_rule
    }

    /// What Windows' format would have picked, if it formats this at all.
    pub fn windows_default_cluster(&self) -> Option<u64> {
        self.windows_default_cluster
    }

    /// Number of clusters in the data region / cluster heap.
    pub fn cluster_count(&self) -> u32 {
        self.cluster_count
    }

    /// Bytes of the volume (whole sectors).
    pub fn volume_bytes(&self) -> u64 {
        self.volume_bytes
    }

    /// Byte offset of the volume on its medium.
    pub fn partition_offset(&self) -> u64 {
        self.partition_offset
    }

    /// Alignment (bytes, from the medium start) of the FAT and data region.
    pub fn align(&self) -> u64 {
        self.align
    }

    /// Byte offset of the first FAT from the volume start.
    pub fn fat_offset(&self) -> u64 {
        self.fat_offset
    }

    /// Bytes of one FAT.
    pub fn fat_bytes(&self) -> u64 {
        self.fat_bytes
    }

    /// Number of FATs.
    pub fn fat_count(&self) -> u32 {
        self.fat_count
    }

    /// Byte offset of the cluster heap / data region from the volume start.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Clusters in use after formatting (bitmap, up-case, root).
    pub fn used_clusters(&self) -> u32 {
        self.used_clusters
    }

    /// Volume serial number.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// exFAT volume GUID written to the root directory, if any.
    pub fn volume_guid(&self) -> Option<[u8; 16]> {
        self.volume_guid
    }

    /// Time recorded in the file system.
    pub fn timestamp(&self) -> Timestamp {
        self.timestamp
    }

    /// The label as given (validated), if any.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The label as the file system stores it (encoded once, by the planner).
    pub fn label_encoded(&self) -> Option<&EncodedLabel> {
        self.label_encoded.as_ref()
    }

    /// Compatibility warnings (the layout is valid, but some systems may balk).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// File-system geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// All regions, in order, covering the volume exactly.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Bytes available for files: free clusters × cluster size.
    pub fn usable_bytes(&self) -> u64 {
        u64::from(self.cluster_count - self.used_clusters) * self.cluster_size
    }

    /// Bytes not available for files: everything but the free clusters.
    pub fn overhead_bytes(&self) -> u64 {
        self.volume_bytes - self.usable_bytes()
    }

    /// Absolute byte offset of the FAT on the medium.
    pub fn fat_offset_on_medium(&self) -> u64 {
        self.partition_offset + self.fat_offset
    }

    /// Absolute byte offset of the data region / cluster heap on the medium.
    pub fn data_offset_on_medium(&self) -> u64 {
        self.partition_offset + self.data_offset
    }

    /// Largest power of two (up to 64 MiB) that divides an absolute offset.
    pub fn alignment_of(offset: u64) -> u64 {
        if offset == 0 {
            MAX_ALIGN
        } else {
            (1u64 << offset.trailing_zeros()).min(MAX_ALIGN)
        }
    }

    /// Byte offset of cluster `n` (>= 2) from the volume start.
    pub fn cluster_offset(&self, n: u32) -> u64 {
        self.data_offset + u64::from(n - 2) * self.cluster_size
    }
}

/// The alignment used when none is given: 1 MiB, or for volumes under 16 MiB
/// the largest power of two not above 1/16 of the volume (at least the sector
/// size), so that alignment never eats a small volume.
pub fn default_align(volume_bytes: u64, sector_size: u32) -> u64 {
    let sixteenth = (volume_bytes / 16).max(1);
    let pow = 1u64 << (63 - sixteenth.leading_zeros());
    pow.clamp(u64::from(sector_size), DEFAULT_ALIGN)
}

/// Validates a file system's logical sector size: 512, 1024, 2048 or 4096
/// (the one check of the workspace; the planner, `advise` and the CLI's
/// argument check use it).
pub fn check_sector_size(sector_size: u32) -> Result<(), PlanError> {
    match sector_size {
        512 | 1024 | 2048 | 4096 => Ok(()),
        s => Err(PlanError::SectorSize(u64::from(s))),
    }
}

/// What every geometry computation of one plan shares.
#[derive(Debug, Clone, Copy)]
struct Ctx<'a> {
    medium: &'a Medium,
    align: u64,
    root_entries: u32,
}

impl Ctx<'_> {
    fn geometry(&self, fs: FsType, cluster: u64) -> Result<Geometry, PlanError> {
        let m = self.medium;
        let (v, bps, start) = (m.volume_bytes, m.sector_size, m.partition_offset);
        Ok(match fs {
            FsType::Exfat => Geometry::Exfat(exfat::geometry(v, bps, cluster, start, self.align)?),
            _ => Geometry::Fat(fat::geometry(
                fs,
                v,
                bps,
                cluster,
                fat::Placement {
                    start,
                    align: self.align,
                    root_entries: self.root_entries,
                },
            )?),
        })
    }

    /// Cluster sizes from the sector size up to `fs`'s maximum.
    fn sizes(&self, fs: FsType) -> impl Iterator<Item = u64> {
        let bps = u64::from(self.medium.sector_size);
        let max = fs.max_cluster(self.medium.sector_size);
        std::iter::successors(Some(bps), |c| Some(c * 2)).take_while(move |&c| c <= max)
    }

    fn valid_sizes(&self, fs: FsType) -> Vec<u64> {
        self.sizes(fs)
            .filter(|&c| self.geometry(fs, c).is_ok())
            .collect()
    }

    /// The FAT width whose accepted cluster-count range holds the count at
    /// `cluster` (at most one does: the ranges are disjoint).
    fn fat_width_at(&self, cluster: u64) -> Option<(FsType, Geometry)> {
        FAT_WIDTHS
            .iter()
            .find_map(|&fs| self.geometry(fs, cluster).ok().map(|g| (fs, g)))
    }

    /// Cluster sizes at which some FAT width is valid.
    fn any_fat_sizes(&self) -> Vec<u64> {
        self.sizes(FsType::Fat32)
            .filter(|&c| self.fat_width_at(c).is_some())
            .collect()
    }

    /// The error for a cluster size at which no FAT width fits.
    fn no_fat_width(&self, cluster: u64) -> PlanError {
        // The count as the width the spec would give it computes it (that
        // width rejected it only for the margin).
        let counts: Vec<(FsType, u64)> = FAT_WIDTHS
            .iter()
            .filter_map(|&fs| match self.geometry(fs, cluster) {
                Err(PlanError::TooFewClusters { clusters, .. })
                | Err(PlanError::TooManyClusters { clusters, .. }) => Some((fs, clusters)),
                _ => None,
            })
            .collect();
        let clusters = counts
            .iter()
            .find(|&&(fs, c)| fat::width_of(c) == fs)
            .or(counts.first())
            .map_or(0, |&(_, c)| c);
        PlanError::NoFatWidth {
            volume: self.medium.volume_bytes,
            cluster,
            clusters,
            valid: self.any_fat_sizes(),
        }
    }
}

/// FAT widths, widest first.
const FAT_WIDTHS: [FsType; 3] = [FsType::Fat32, FsType::Fat16, FsType::Fat12];

/// Every cluster size (a power of two) for which `fs` can lay out this medium
/// (FAT12/16 with the default 512 root directory entries).
pub fn valid_cluster_sizes(fs: FsType, medium: &Medium, align: u64) -> Vec<u64> {
    Ctx {
        medium,
        align,
        root_entries: fat::DEFAULT_ROOT_ENTRIES,
    }
    .valid_sizes(fs)
}

/// How the file system was chosen, before the cluster size.
enum FsPick {
    /// This file system; pick the cluster size by its rules.
    Fs(FsType, FsRule),
    /// This file system with this geometry at this cluster size (chosen together).
    Done(FsType, FsRule, u64, ClusterRule, Geometry),
}

/// The FAT width for `--fs fat` (and `--fs auto` up to 32 GiB).
fn pick_fat(
    ctx: &Ctx<'_>,
    cluster: ClusterChoice,
    auto: bool,
) -> Result<Option<FsPick>, PlanError> {
    match cluster.explicit() {
        Some((c, cluster_rule)) => {
            crate::error::check_cluster(FsType::Fat32, c, ctx.medium.sector_size)?;
            match ctx.fat_width_at(c) {
                Some((fs, g)) => {
                    let rule = if auto && fs == FsType::Fat32 {
                        FsRule::AutoFat32UpTo32GiB
                    } else {
                        FsRule::FatWidthFromClusterCount
                    };
                    Ok(Some(FsPick::Done(fs, rule, c, cluster_rule, g)))
                }
                None => Err(ctx.no_fat_width(c)),
            }
        }
        None => {
            if !ctx.valid_sizes(FsType::Fat32).is_empty() {
                let rule = if auto {
                    FsRule::AutoFat32UpTo32GiB
                } else {
                    FsRule::FatFat32Fits
                };
                return Ok(Some(FsPick::Fs(FsType::Fat32, rule)));
            }
            // Too small for FAT32: the field-evidence size if some width
            // takes it, else the nearest size below, else above.
            let bps = u64::from(ctx.medium.sector_size);
            let want = rules::auto_cluster(FsType::Fat16, ctx.medium.volume_bytes).max(bps);
            let below = std::iter::successors(Some(want), |&c| (c > bps).then_some(c / 2));
            let above = ctx.sizes(FsType::Fat16).filter(|&c| c > want);
            for c in below.chain(above) {
                if let Some((fs, g)) = ctx.fat_width_at(c) {
                    let rule = match c.cmp(&want) {
                        std::cmp::Ordering::Equal => ClusterRule::FieldEvidence,
                        std::cmp::Ordering::Less => ClusterRule::FieldEvidenceReduced,
                        std::cmp::Ordering::Greater => ClusterRule::FieldEvidenceRaised,
                    };
                    return Ok(Some(FsPick::Done(fs, FsRule::AutoSmallFat, c, rule, g)));
                }
            }
            if auto {
                Ok(None)
            } else {
                Err(ctx.no_fat_width(want))
            }
        }
    }
}

/// Plans a format. Returns a [`Layout`] in which every invariant holds, or the
/// reason (naming the valid range) why the options cannot work on this medium.
pub fn plan(opts: &FormatOptions, medium: &Medium) -> Result<Layout, PlanError> {
    let (medium, align) = checked_medium(opts, medium)?;
    let ctx = Ctx {
        medium: &medium,
        align,
        root_entries: root_entries(opts.root_entries)?,
    };
    // File system (and, where the FAT width follows the cluster count, the
    // cluster size with it).
    let pick = pick_fs(&ctx, opts)?;
    let fs = match pick {
        FsPick::Fs(fs, _) | FsPick::Done(fs, ..) => fs,
    };
    if opts.root_entries.is_some() && !fs.is_small_fat() {
        return Err(PlanError::RootEntriesNotFixed(fs));
    }
    // Label (validated and encoded before anything else can fail late).
    let label = encode_label(opts.label.as_deref(), fs)?;
    let (fs_rule, cluster, cluster_rule, geometry) = match pick {
        FsPick::Done(_, fs_rule, c, rule, g) => (fs_rule, c, rule, g),
        FsPick::Fs(fs, fs_rule) => {
            let (c, rule, g) = pick_cluster(&ctx, fs, opts.cluster)?;
            (fs_rule, c, rule, g)
        }
    };
    let timestamp = opts.timestamp.unwrap_or_else(Timestamp::now);
    let serial = opts.serial.unwrap_or_else(random_serial);
    let choices = Choices {
        fs,
        fs_rule,
        cluster,
        cluster_rule,
        align,
        serial,
        volume_guid: (fs == FsType::Exfat && opts.volume_guid)
            .then(|| derive_guid(serial, timestamp)),
        label,
        timestamp,
        warnings: warnings(fs, cluster, &medium, align, opts),
    };
    Ok(build(choices, &medium, geometry))
}

/// Checks the sector size, the partition offset and the alignment; returns
/// the medium rounded down to whole sectors and the alignment to use.
fn checked_medium(opts: &FormatOptions, medium: &Medium) -> Result<(Medium, u64), PlanError> {
    check_sector_size(medium.sector_size)?;
    let bps = u64::from(medium.sector_size);
    if medium.partition_offset % bps != 0 {
        return Err(PlanError::PartitionOffset {
            offset: medium.partition_offset,
            sector: medium.sector_size,
        });
    }
    let volume_bytes = medium.volume_bytes / bps * bps;
    let medium = Medium {
        volume_bytes,
        ..*medium
    };
    let align = match opts.align {
        Some(a) if !a.is_power_of_two() || a < bps || a > MAX_ALIGN => {
            return Err(PlanError::Align {
                align: a,
                sector: medium.sector_size,
                max: MAX_ALIGN,
            })
        }
        Some(a) => a,
        None => default_align(volume_bytes, medium.sector_size),
    };
    Ok((medium, align))
}

/// The FAT12/16 root directory entries asked for, checked.
fn root_entries(asked: Option<u32>) -> Result<u32, PlanError> {
    match asked {
        None => Ok(fat::DEFAULT_ROOT_ENTRIES),
        Some(n) if (1..=fat::MAX_ROOT_ENTRIES).contains(&n) => Ok(n),
        Some(n) => Err(PlanError::RootEntries(u64::from(n))),
    }
}

/// The file system, by [`FormatOptions::fs`].
fn pick_fs(ctx: &Ctx<'_>, opts: &FormatOptions) -> Result<FsPick, PlanError> {
    let choice = match (opts.esp, opts.fs) {
        (true, FsChoice::Fixed(FsType::Exfat)) => return Err(PlanError::EspNotFat),
        (true, FsChoice::Auto) => FsChoice::Fat,
        (_, c) => c,
    };
    Ok(match choice {
        FsChoice::Fixed(fs) => FsPick::Fs(fs, FsRule::Explicit),
        FsChoice::Fat => match pick_fat(ctx, opts.cluster, false)? {
            Some(p) => p,
            None => return Err(ctx.no_fat_width(u64::from(ctx.medium.sector_size))),
        },
        FsChoice::Auto => match rules::auto_fs(ctx.medium.volume_bytes) {
            FsType::Exfat => FsPick::Fs(FsType::Exfat, FsRule::AutoExfatAbove32GiB),
            _ => match pick_fat(ctx, opts.cluster, true)? {
                Some(p) => p,
                None => FsPick::Fs(FsType::Exfat, FsRule::AutoExfatTooSmallForFat32),
            },
        },
    })
}

/// The label as given and as `fs` stores it.
fn encode_label(
    label: Option<&str>,
    fs: FsType,
) -> Result<Option<(String, EncodedLabel)>, PlanError> {
    let Some(l) = label else {
        return Ok(None);
    };
    let encoded = match fs {
        FsType::Exfat => EncodedLabel::Exfat(exfat_label(l)?),
        _ => EncodedLabel::Fat32(fat32_label(l)?),
    };
    Ok(Some((l.to_string(), encoded)))
}

/// Compatibility warnings for a valid layout.
fn warnings(
    fs: FsType,
    cluster: u64,
    medium: &Medium,
    align: u64,
    opts: &FormatOptions,
) -> Vec<String> {
    let volume_bytes = medium.volume_bytes;
    let mut warnings = Vec::new();
    if fs.is_fat() && cluster > fat::COMPAT_MAX_CLUSTER {
        warnings.push(format!(
            "{fs} clusters above 32 KiB ({}) are not handled by some systems (old DOS, some BIOS and camera firmware)",
            format_size(cluster)
        ));
    }
    if fs == FsType::Exfat && cluster > MIB {
        warnings.push(format!(
            "exFAT clusters above 1 MiB ({}) are not mounted by some systems (older macOS) and waste space on small files",
            format_size(cluster)
        ));
    }
    if fs == FsType::Fat32 && volume_bytes > 32 * 1_000_000_000 {
        warnings.push(
            "FAT32 above 32 GB is valid, but Windows' own format refuses it and some firmware rejects it".to_string(),
        );
    }
    if opts.esp {
        // Microsoft's minimum ESP (Windows' own partitioning): 100 MB, 260 MB
        // on 4Kn drives (FAT32 needs 65,525 clusters of 4 KiB).
        let min = if medium.sector_size >= 4096 {
            260 * 1_000_000
        } else {
            100 * 1_000_000
        };
        if volume_bytes < min {
            warnings.push(format!(
                "EFI System Partition of {} is below Microsoft's minimum of {} MB{}: UEFI firmware reads it ({fs}), but Windows' tools expect at least that",
                format_size(volume_bytes),
                min / 1_000_000,
                if medium.sector_size >= 4096 { " at 4096-byte sectors" } else { "" }
            ));
        }
    }
    if align < DEFAULT_ALIGN && opts.align.is_none() {
        warnings.push(format!(
            "small volume: alignment reduced to {}",
            format_size(align)
        ));
    }
    warnings
}

/// The cluster size for a chosen file system: the one asked for, or the
/// field-evidence size, or the nearest valid size to it.
fn pick_cluster(
    ctx: &Ctx<'_>,
    fs: FsType,
    cluster: ClusterChoice,
) -> Result<(u64, ClusterRule, Geometry), PlanError> {
    let bps = u64::from(ctx.medium.sector_size);
    match cluster.explicit() {
        Some((c, rule)) => {
            let g = ctx
                .geometry(fs, c)
                .map_err(|e| with_valid_sizes(e, ctx, fs))?;
            Ok((c, rule, g))
        }
        None => {
            let want = rules::auto_cluster(fs, ctx.medium.volume_bytes).max(bps);
            match ctx.geometry(fs, want) {
                Ok(g) => Ok((want, ClusterRule::FieldEvidence, g)),
                Err(first) => {
                    let valid = ctx.valid_sizes(fs);
                    let below = valid.iter().rev().find(|&&c| c < want).copied();
                    let pick = match below {
                        Some(c) => Some((c, ClusterRule::FieldEvidenceReduced)),
                        None => valid
                            .first()
                            .map(|&c| (c, ClusterRule::FieldEvidenceRaised)),
                    };
                    match pick {
                        Some((c, rule)) => Ok((c, rule, ctx.geometry(fs, c)?)),
                        None => Err(with_valid_sizes(first, ctx, fs)),
                    }
                }
            }
        }
    }
}

/// Fills in the list of valid cluster sizes of a cluster-count error.
fn with_valid_sizes(e: PlanError, ctx: &Ctx<'_>, fs: FsType) -> PlanError {
    match e {
        PlanError::TooFewClusters {
            fs,
            volume,
            cluster,
            clusters,
            min_clusters,
            ..
        } => PlanError::TooFewClusters {
            fs,
            volume,
            cluster,
            clusters,
            min_clusters,
            valid: ctx.valid_sizes(fs),
        },
        PlanError::TooManyClusters {
            fs,
            volume,
            cluster,
            clusters,
            max_clusters,
            ..
        } => PlanError::TooManyClusters {
            fs,
            volume,
            cluster,
            clusters,
            max_clusters,
            valid: ctx.valid_sizes(fs),
        },
        other => {
            let _ = fs;
            other
        }
    }
}

/// A serial from the clock's seconds and nanoseconds, mixed (in the spirit
/// of DOS, which mixed date and time): the CLI's serial when `--serial` is
/// not given, pinned by `SOURCE_DATE_EPOCH`.
pub fn serial_from_time(t: Timestamp) -> u32 {
    let x = splitmix64((t.secs as u64) ^ (u64::from(t.nanos) << 32));
    (x ^ (x >> 32)) as u32
}

/// The exFAT volume GUID, derived from the serial (and the timestamp) so that
/// pinned inputs give pinned output. A version-4-shaped GUID, never all zero.
fn derive_guid(serial: u32, t: Timestamp) -> [u8; 16] {
    let seed = u64::from(serial) ^ 0x6d6b_6673_2d61_6c6c ^ (t.secs as u64).rotate_left(17);
    let a = splitmix64(seed);
    let b = splitmix64(a);
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&a.to_le_bytes());
    g[8..].copy_from_slice(&b.to_le_bytes());
    g[7] = (g[7] & 0x0F) | 0x40;
    g[8] = (g[8] & 0x3F) | 0x80;
    g
}

/// Everything the planner chose, besides the geometry.
struct Choices {
    fs: FsType,
    fs_rule: FsRule,
    cluster: u64,
    cluster_rule: ClusterRule,
    align: u64,
    serial: u32,
    volume_guid: Option<[u8; 16]>,
    label: Option<(String, EncodedLabel)>,
    timestamp: Timestamp,
    warnings: Vec<String>,
}

/// Where the FATs and the data region lie, and how many clusters there are.
struct Placement {
    cluster_count: u32,
    used_clusters: u32,
    fat_offset: u64,
    fat_bytes: u64,
    fat_count: u32,
    data_offset: u64,
}

/// The regions of a volume, in order; empty ones are left out.
#[derive(Default)]
struct Regions(Vec<Region>);

impl Regions {
    fn push(&mut self, kind: RegionKind, index: u32, offset: u64, len: u64, written: bool) {
        if len > 0 {
            self.0.push(Region {
                kind,
                index,
                offset,
                len,
                written,
            });
        }
    }
}

/// The exFAT regions and placement.
fn exfat_regions(g: &exfat::Geometry, bps: u64, volume_bytes: u64, r: &mut Regions) -> Placement {
    let fat_off = u64::from(g.fat_offset) * bps;
    let fat_len = u64::from(g.fat_length) * bps;
    let heap = u64::from(g.heap_offset) * bps;
    let br = mkfs_alloc_ondisk::exfat::BOOT_REGION_SECTORS * bps;
    r.push(RegionKind::BootRegion, 0, 0, br, true);
    r.push(RegionKind::BackupBootRegion, 0, br, br, true);
    r.push(RegionKind::Padding, 0, 2 * br, fat_off - 2 * br, true);
    r.push(RegionKind::Fat, 0, fat_off, fat_len, true);
    let fat_end = fat_off + fat_len;
    r.push(RegionKind::HeapPadding, 0, fat_end, heap - fat_end, true);
    let c = g.cluster;
    let bm = u64::from(g.bitmap_clusters) * c;
    let up = u64::from(g.upcase_clusters) * c;
    let rt = u64::from(g.root_clusters) * c;
    r.push(RegionKind::Bitmap, 0, heap, bm, true);
    r.push(RegionKind::Upcase, 0, heap + bm, up, true);
    r.push(RegionKind::RootDirectory, 0, heap + bm + up, rt, true);
    let used_end = heap + bm + up + rt;
    let heap_end = heap + u64::from(g.cluster_count) * c;
    r.push(
        RegionKind::FreeClusters,
        0,
        used_end,
        heap_end - used_end,
        false,
    );
    r.push(
        RegionKind::Tail,
        0,
        heap_end,
        volume_bytes - heap_end,
        false,
    );
    Placement {
        cluster_count: g.cluster_count,
        used_clusters: g.used_clusters(),
        fat_offset: fat_off,
        fat_bytes: fat_len,
        fat_count: 1,
        data_offset: heap,
    }
}

/// The FAT12/16/32 regions and placement.
fn fat_regions(g: &fat::Geometry, bps: u64, volume_bytes: u64, r: &mut Regions) -> Placement {
    let rsvd = u64::from(g.rsvd) * bps;
    let fat_len = u64::from(g.fat_sz) * bps;
    let data = g.data_sector() * bps;
    r.push(RegionKind::BootRegion, 0, 0, rsvd, true);
    r.push(RegionKind::Fat, 0, rsvd, fat_len, true);
    r.push(RegionKind::Fat, 1, rsvd + fat_len, fat_len, true);
    // FAT32: the root is cluster 2; FAT12/16: a fixed region.
    let (root, root_len, used) = if g.fs == FsType::Fat32 {
        (data, g.cluster, 1)
    } else {
        (g.root_sector() * bps, g.root_sectors() * bps, 0)
    };
    r.push(RegionKind::RootDirectory, 0, root, root_len, true);
    let data_end = data + u64::from(g.cluster_count) * g.cluster;
    let free = data + u64::from(used) * g.cluster;
    r.push(RegionKind::FreeClusters, 0, free, data_end - free, false);
    r.push(
        RegionKind::Tail,
        0,
        data_end,
        volume_bytes - data_end,
        false,
    );
    Placement {
        cluster_count: g.cluster_count,
        used_clusters: used,
        fat_offset: rsvd,
        fat_bytes: fat_len,
        fat_count: 2,
        data_offset: data,
    }
}

/// The layout of what the planner chose on `medium`.
fn build(c: Choices, medium: &Medium, geometry: Geometry) -> Layout {
    let bps = u64::from(medium.sector_size);
    let volume_bytes = medium.volume_bytes;
    let mut regions = Regions::default();
    let p = match &geometry {
        Geometry::Exfat(g) => exfat_regions(g, bps, volume_bytes, &mut regions),
        Geometry::Fat(g) => fat_regions(g, bps, volume_bytes, &mut regions),
    };
    Layout {
        fs: c.fs,
        fs_rule: c.fs_rule,
        sector_size: medium.sector_size,
        cluster_size: c.cluster,
        cluster_rule: c.cluster_rule,
        windows_default_cluster: rules::windows_default(c.fs, volume_bytes),
        cluster_count: p.cluster_count,
        volume_bytes,
        partition_offset: medium.partition_offset,
        align: c.align,
        fat_offset: p.fat_offset,
        fat_bytes: p.fat_bytes,
        fat_count: p.fat_count,
        data_offset: p.data_offset,
        used_clusters: p.used_clusters,
        serial: c.serial,
        label_encoded: c.label.as_ref().map(|(_, e)| e.clone()),
        label: c.label.map(|(l, _)| l),
        volume_guid: c.volume_guid,
        timestamp: c.timestamp,
        warnings: c.warnings,
        geometry,
        regions: regions.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, KIB};

    fn opts(fs: FsType, cluster: u64) -> FormatOptions {
        FormatOptions {
            fs: FsChoice::Fixed(fs),
            cluster: ClusterChoice::Bytes(cluster),
            serial: Some(0x1234_5678),
            ..FormatOptions::default()
        }
    }

    #[test]
    fn the_documented_fat32_error() {
        let e =
            plan(&opts(FsType::Fat32, 32 * KIB), &Medium::whole(GIB, 512)).expect_err("invalid");
        let msg = e.to_string();
        assert!(
            msg.starts_with("1 GiB is too small for FAT32 at 32 KiB clusters ("),
            "{msg}"
        );
        // With the FAT and data region aligned to 1 MiB, 16 KiB clusters give too few.
        assert!(msg.ends_with("valid: 512 B..8 KiB, or use exFAT"), "{msg}");
    }

    #[test]
    fn auto_picks_fat16_or_fat12_when_fat32_cannot_fit() {
        // The width follows the cluster count at 4 KiB clusters; in the gap
        // around 4,085 clusters the next smaller size is taken.
        for (size, fs, cluster) in [
            (16 * MIB, FsType::Fat12, 4 * KIB),
            (18_320 * KIB, FsType::Fat12, 4 * KIB), // 4,068 clusters: FAT12's last
            (18_336 * KIB, FsType::Fat16, 2 * KIB), // 4,072 at 4 KiB: in the gap
            (18_464 * KIB, FsType::Fat16, 4 * KIB), // 4,104: FAT16's first
            (32 * MIB, FsType::Fat16, 4 * KIB),
            (2 * MIB, FsType::Fat12, 4 * KIB),
        ] {
            for choice in [FsChoice::Auto, FsChoice::Fat] {
                let o = FormatOptions {
                    fs: choice,
                    ..FormatOptions::default()
                };
                let l = plan(&o, &Medium::whole(size, 512)).expect("valid");
                assert_eq!((l.fs, l.cluster_size), (fs, cluster), "{size}");
                assert_eq!(l.fs_rule, FsRule::AutoSmallFat);
            }
        }
        // At 4096-byte sectors FAT32 needs 256.6 MiB: 200 MiB is FAT16.
        let l = plan(&FormatOptions::default(), &Medium::whole(200 * MIB, 4096)).expect("valid");
        assert_eq!(l.fs, FsType::Fat16);
    }

    #[test]
    fn esp_is_fat_of_the_width_the_size_allows_and_warns_when_small() {
        let esp = |fs, size, bps| {
            let o = FormatOptions {
                fs,
                esp: true,
                ..FormatOptions::default()
            };
            plan(&o, &Medium::whole(size, bps))
        };
        let l = esp(FsChoice::Auto, 64 * MIB, 512).expect("valid");
        assert_eq!(l.fs, FsType::Fat32);
        assert!(
            l.warnings.iter().any(|w| w.contains("100 MB")),
            "{:?}",
            l.warnings
        );
        let l = esp(FsChoice::Auto, 8 * MIB, 512).expect("valid");
        assert_eq!(l.fs, FsType::Fat12);
        let l = esp(FsChoice::Auto, 200 * MIB, 4096).expect("valid");
        assert_eq!(l.fs, FsType::Fat16);
        assert!(
            l.warnings.iter().any(|w| w.contains("260 MB")),
            "{:?}",
            l.warnings
        );
        let l = esp(FsChoice::Auto, 512 * MIB, 512).expect("valid");
        assert!(
            !l.warnings.iter().any(|w| w.contains("EFI")),
            "{:?}",
            l.warnings
        );
        assert_eq!(
            esp(FsChoice::Fixed(FsType::Exfat), GIB, 512),
            Err(PlanError::EspNotFat)
        );
        // Beyond 32 GiB --fs auto would give exFAT; an ESP stays FAT32.
        assert_eq!(
            esp(FsChoice::Auto, 64 * GIB, 512).map(|l| l.fs),
            Ok(FsType::Fat32)
        );
    }

    #[test]
    fn the_fat_width_follows_an_explicit_cluster_size() {
        for (cluster, fs) in [(512, FsType::Fat32), (32 * KIB, FsType::Fat16)] {
            let o = FormatOptions {
                fs: FsChoice::Fat,
                cluster: ClusterChoice::Bytes(cluster),
                ..FormatOptions::default()
            };
            let l = plan(&o, &Medium::whole(GIB, 512)).expect("valid");
            assert_eq!(l.fs, fs);
        }
        // 16 MiB at 4 KiB: about 3,580 clusters, FAT12 only.
        let e = plan(&opts(FsType::Fat16, 4 * KIB), &Medium::whole(16 * MIB, 512))
            .expect_err("too few for FAT16");
        assert!(e.to_string().contains("valid: 512 B..2 KiB"), "{e}");
    }

    #[test]
    fn auto_reduces_fat32_cluster_on_small_volumes() {
        let l = plan(&opts(FsType::Fat32, 0), &Medium::whole(100 * MIB, 512));
        assert!(l.is_err());
        let o = FormatOptions {
            fs: FsChoice::Fixed(FsType::Fat32),
            ..FormatOptions::default()
        };
        let l = plan(&o, &Medium::whole(100 * MIB, 512)).expect("valid");
        assert_eq!(l.cluster_rule, ClusterRule::FieldEvidenceReduced);
        assert_eq!(l.cluster_size, KIB);
    }

    #[test]
    fn regions_tile_the_volume() {
        for fs in [FsType::Exfat, FsType::Fat32] {
            let l = plan(&opts(fs, 4 * KIB), &Medium::whole(2 * GIB, 512)).expect("valid");
            let mut at = 0;
            for r in &l.regions {
                assert_eq!(r.offset, at, "{r:?}");
                at += r.len;
            }
            assert_eq!(at, l.volume_bytes);
        }
    }

    #[test]
    fn default_alignment() {
        assert_eq!(default_align(8 * GIB, 512), MIB);
        assert_eq!(default_align(16 * MIB, 512), MIB);
        assert_eq!(default_align(4 * MIB, 512), 256 * KIB);
        assert_eq!(default_align(1 << 20, 4096), 64 * KIB);
        assert_eq!(default_align(4096, 4096), 4096);
    }
}
