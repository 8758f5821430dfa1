//! A re-cluster's plan as a report of its figures (the `serde` feature):
//! what a front end serializes for a machine reader (the CLI's `--json`),
//! built from a [`Job`] and, for `auto`, its [`AutoChoice`]. Each field is
//! the [`Plan`] field of the same name unless said otherwise; the words
//! for people are the front end's.

use super::{
    AutoChoice, Coarse, Evacuation, ExfatGeometry, FatLayout, Grow, Job, Plan, Planned, Step,
};
use mkfs_alloc_advise::RecommendationRule;
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_partition::{PartitionGrow, TableKind};
use serde::Serialize;

mod convert;
pub use convert::ConvertReport;

impl Step {
    /// The step's id in a report: `start`, `redo`, `restore_main`,
    /// `finish`, `nothing` or `table`.
    pub fn id(&self) -> &'static str {
        match self {
            Step::Table => "table",
            Step::Start => "start",
            Step::Redo => "redo",
            Step::RestoreMain => "restore_main",
            Step::Finish => "finish",
            Step::Nothing => "nothing",
        }
    }
}

/// A [`Job`]'s report: its step, what `auto` chose, the plan, and why the
/// real run would refuse (a dry run's target checks).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct JobReport<'a> {
    /// [`Step::id`].
    pub step: &'static str,
    /// What `auto` chose, if it chose.
    pub auto: Option<AutoReport<'a>>,
    /// The plan (none past the switch, or with nothing to do).
    pub plan: Option<PlanReport>,
    /// Why the real run would refuse, in words, if it would.
    pub would_refuse: Option<&'a str>,
    /// The bytes written before each flush, in order
    /// ([`super::flush_stages`]: a dry run's); absent when not simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_stages: Option<Vec<u64>>,
}

impl<'a> JobReport<'a> {
    /// The report of `job`, `choice` what `auto` chose.
    pub fn new(job: &Job, choice: Option<&'a AutoChoice>, would_refuse: Option<&'a str>) -> Self {
        Self {
            step: job.step.id(),
            auto: choice.map(|c| AutoReport {
                cluster_size: c.cluster,
                current_cluster_size: c.current,
                rule: c.rule,
                reason: &c.reason,
            }),
            plan: job.plan.as_ref().map(PlanReport::new),
            would_refuse,
            flush_stages: None,
        }
    }

    /// The report with the job's [`super::flush_stages`].
    pub fn with_flush_stages(mut self, stages: Option<Vec<u64>>) -> Self {
        self.flush_stages = stages;
        self
    }
}

/// What `auto` chose ([`AutoChoice`]).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct AutoReport<'a> {
    /// The cluster size chosen.
    pub cluster_size: u64,
    /// The volume's cluster size now.
    pub current_cluster_size: u64,
    /// The advice's rule that chose it.
    pub rule: RecommendationRule,
    /// Why, in words.
    pub reason: &'a str,
}

/// The figures of a [`Plan`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PlanReport {
    /// Absolute byte offset of the volume.
    pub volume_start: u64,
    /// The geometry now.
    pub old: GeometryReport,
    /// The geometry after.
    pub new: GeometryReport,
    /// The old FAT's bytes the new one leaves unused ([`Plan::gap`]).
    pub unused_old_fat: Extent,
    /// Where the intent record goes.
    pub intent_offset: u64,
    /// Clusters whose data moves.
    pub clusters_moved: u64,
    /// How far the heap moves, in bytes.
    pub heap_moved_bytes: u64,
    /// The evacuation before a smaller size, if any ([`Plan::evacuate`]).
    pub evacuation: Option<EvacuationReport>,
    /// The new allocation bitmap.
    pub bitmap: BitmapReport,
    /// A FAT volume's reserved sectors and data region.
    pub fat: Option<FatReport>,
    /// Directories copied ([`Plan::dirs`]).
    pub directories_copied: usize,
    /// Files on the volume.
    pub files: u64,
    /// Bytes of those files.
    pub file_bytes: u64,
    /// Bytes the files take now ([`Plan::files_allocated`]).
    pub files_allocated_old: u64,
    /// Bytes the files take after.
    pub files_allocated_new: u64,
    /// Clusters marked bad now.
    pub bad_clusters_old: usize,
    /// The same clusters at the new size.
    pub bad_clusters_new: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Free bytes now.
    pub free_before: u64,
    /// Free bytes after.
    pub free_after: u64,
    /// [`Plan::space_gained`] (0 past `i64`).
    pub space_gained: i64,
    /// [`Plan::estimate_stick_seconds`].
    pub estimated_seconds: f64,
    /// A larger cluster size's figures ([`Plan::coarse`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub larger: Option<LargerReport>,
}

impl PlanReport {
    /// The report of `p`.
    pub fn new(p: &Plan) -> Self {
        Self {
            volume_start: p.volume_start,
            old: GeometryReport::new(&p.old),
            new: GeometryReport::new(&p.new),
            unused_old_fat: Extent {
                offset: p.gap.0,
                bytes: p.gap.1,
            },
            intent_offset: p.intent_offset,
            clusters_moved: p.clusters_moved,
            heap_moved_bytes: p.new.heap_offset - p.old.heap_offset,
            evacuation: p.evacuate.as_ref().map(|e| EvacuationReport::new(e, p)),
            bitmap: BitmapReport {
                first_cluster: p.bitmap.0,
                bytes: p.bitmap.1,
            },
            fat: p.fat.as_ref().map(FatReport::new),
            directories_copied: p.dirs.len(),
            files: p.files,
            file_bytes: p.file_bytes,
            files_allocated_old: p.files_allocated.0,
            files_allocated_new: p.files_allocated.1,
            bad_clusters_old: p.bad_clusters.len(),
            bad_clusters_new: p.bad_clusters.len() as u64 * u64::from(p.ratio),
            bytes_read: p.bytes_read,
            bytes_written: p.bytes_written,
            free_before: p.free_before,
            free_after: p.free_after,
            space_gained: i64::try_from(p.space_gained()).unwrap_or(0),
            estimated_seconds: p.estimate_stick_seconds(),
            larger: p.coarse.as_ref().map(|c| LargerReport::new(c, p)),
        }
    }
}

/// An [`ExfatGeometry`]'s figures (each its field of the same name).
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct GeometryReport {
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// Clusters of the heap.
    pub cluster_count: u32,
    /// The FAT's offset in the volume.
    pub fat_offset: u64,
    /// Bytes of the FAT.
    pub fat_bytes: u64,
    /// The heap's (a FAT volume's data region's) offset in the volume.
    pub heap_offset: u64,
    /// The root directory's first cluster.
    pub root_cluster: u32,
}

impl GeometryReport {
    fn new(g: &ExfatGeometry) -> Self {
        Self {
            cluster_size: g.cluster_size,
            cluster_count: g.cluster_count,
            fat_offset: g.fat_offset,
            fat_bytes: g.fat_bytes,
            heap_offset: g.heap_offset,
            root_cluster: g.root_cluster,
        }
    }
}

/// An extent in bytes.
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct Extent {
    /// Where it starts in the volume.
    pub offset: u64,
    /// Its length.
    pub bytes: u64,
}

/// The new allocation bitmap ([`Plan::bitmap`]).
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct BitmapReport {
    /// Its first cluster.
    pub first_cluster: u32,
    /// Its length.
    pub bytes: u64,
}

/// An [`Evacuation`]'s figures.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct EvacuationReport {
    /// Old clusters the new FAT covers.
    pub old_clusters_covered: u32,
    /// How many of them are in use.
    pub in_use: u64,
    /// Clusters of data copied.
    pub clusters_moved: u64,
    /// Bytes of data copied.
    pub bytes_moved: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

impl EvacuationReport {
    fn new(e: &Evacuation, p: &Plan) -> Self {
        Self {
            old_clusters_covered: e.clusters,
            in_use: e.in_use,
            clusters_moved: e.moved,
            bytes_moved: e.moved * p.old.cluster_size,
            bytes_read: e.bytes_read,
            bytes_written: e.bytes_written,
        }
    }
}

/// A [`FatLayout`]'s figures.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FatReport {
    /// The file system's id (`fat32`).
    pub kind: &'static str,
    /// Number of FATs.
    pub fat_count: u32,
    /// Reserved sectors now.
    pub reserved_sectors_old: u32,
    /// Reserved sectors after.
    pub reserved_sectors_new: u32,
    /// Old clusters the new reserved sectors cover.
    pub old_clusters_covered: u64,
    /// How many of them are in use.
    pub covered_in_use: u64,
}

impl FatReport {
    fn new(f: &FatLayout) -> Self {
        Self {
            kind: f.kind.id(),
            fat_count: f.fat_count,
            reserved_sectors_old: f.reserved.0,
            reserved_sectors_new: f.reserved.1,
            old_clusters_covered: f.covered,
            covered_in_use: f.in_use,
        }
    }
}

/// A larger cluster size's figures ([`Coarse`]).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct LargerReport {
    /// Old clusters per new one.
    pub old_clusters_per_new: u32,
    /// Whether the heap is aligned to the new cluster size.
    pub heap_aligned: bool,
    /// Files that keep their place.
    pub files_kept: u64,
    /// Files copied first.
    pub files_moved: u64,
    /// Old clusters copied ([`Plan::clusters_moved`]).
    pub old_clusters_moved: u64,
    /// Bytes copied.
    pub bytes_moved: u64,
    /// The files' slack now.
    pub slack_old: u64,
    /// The files' slack after.
    pub slack_new: u64,
    /// Free new clusters, whole ([`Coarse::free_groups`]).
    pub free_in_whole_new_clusters: u64,
    /// Bytes the volume ends earlier ([`Coarse::shortened`]).
    pub shortened_bytes: u64,
}

impl LargerReport {
    fn new(c: &Coarse, p: &Plan) -> Self {
        Self {
            old_clusters_per_new: c.group,
            heap_aligned: c.heap_aligned,
            files_kept: c.files_kept,
            files_moved: c.files_moved,
            old_clusters_moved: p.clusters_moved,
            bytes_moved: c.bytes_moved,
            slack_old: c.slack.0,
            slack_new: c.slack.1,
            free_in_whole_new_clusters: c.free_groups,
            shortened_bytes: c.shortened,
        }
    }
}

/// A [`Planned`] job's report: the re-cluster's [`JobReport`], a resize's
/// [`ResizeReport`] or a conversion's [`ConvertReport`] (each serialized
/// as its own object).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum InPlaceReport<'a> {
    /// A re-cluster's.
    Recluster(Box<JobReport<'a>>),
    /// A resize's.
    Resize(ResizeReport<'a>),
    /// A conversion's.
    Convert(ConvertReport<'a>),
}

impl InPlaceReport<'_> {
    /// The report with a dry run's [`Planned::flush_stages`].
    pub fn with_flush_stages(self, stages: Option<Vec<u64>>) -> Self {
        match self {
            InPlaceReport::Recluster(r) => {
                InPlaceReport::Recluster(Box::new(r.with_flush_stages(stages)))
            }
            InPlaceReport::Resize(r) => InPlaceReport::Resize(ResizeReport {
                flush_stages: stages,
                ..r
            }),
            InPlaceReport::Convert(r) => InPlaceReport::Convert(ConvertReport {
                flush_stages: stages,
                ..r
            }),
        }
    }
}

impl Planned {
    /// The job's report, `would_refuse` why the real run would refuse.
    pub fn report<'a>(&'a self, would_refuse: Option<&'a str>) -> InPlaceReport<'a> {
        match self {
            Planned::Recluster { job, auto, .. } => {
                InPlaceReport::Recluster(Box::new(JobReport::new(job, auto.as_ref(), would_refuse)))
            }
            Planned::Resize(job) => InPlaceReport::Resize(ResizeReport {
                command: "resize",
                step: job.step.resize_text(),
                would_refuse,
                grow: job.grow.as_deref().map(GrowReport::new),
                partition: PartitionReport::of(job.table_after.as_ref(), "last"),
                flush_stages: None,
            }),
            Planned::Convert(c) => InPlaceReport::Convert(ConvertReport::new(c, would_refuse)),
        }
    }
}

/// A resize's report ([`Planned::Resize`]).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ResizeReport<'a> {
    /// Always `resize`.
    pub command: &'static str,
    /// [`Step::resize_text`].
    pub step: String,
    /// Why the real run would refuse, in words, if it would.
    pub would_refuse: Option<&'a str>,
    /// The grow's figures (none past the switch, or with nothing to do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grow: Option<GrowReport>,
    /// The entry shrunk after the volume's switch ([`Job::table_after`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<PartitionReport>,
    /// The bytes written before each flush ([`Planned::flush_stages`]: a
    /// dry run's); absent when not simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_stages: Option<Vec<u64>>,
}

/// A [`Grow`]'s figures: pairs are (now, after).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GrowReport {
    /// `exfat` or `fat32`.
    pub fs: &'static str,
    /// Bytes of the volume.
    pub volume_bytes: (u64, u64),
    /// Bytes per cluster (unchanged).
    pub cluster_size: u64,
    /// Clusters.
    pub cluster_count: (u32, u32),
    /// The heap's offset in the volume (unchanged).
    pub heap_offset: u64,
    /// The FAT's offset in the volume.
    pub fat_offset: u64,
    /// Bytes of the FAT.
    pub fat_bytes: (u64, u64),
    /// The new allocation bitmap.
    pub bitmap: ClusterExtent,
    /// The root directory's copy.
    pub root: ClusterRun,
    /// Free bytes.
    pub free_bytes: (u64, u64),
    /// Clusters in use past a shrink's new end, copied below it.
    pub moved_clusters: u64,
    /// Their bytes.
    pub moved_bytes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// [`Grow::estimate_stick_seconds`].
    pub estimate_stick_seconds: f64,
    /// The partition's entry, grown first ([`Grow::table`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<PartitionReport>,
}

/// A partition's entry grown or shrunk with its volume: pairs are (now, after).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PartitionReport {
    /// `mbr` or `gpt`.
    pub table: &'static str,
    /// The partition's number (1-based, as `fdisk` counts).
    pub number: u32,
    /// Its first byte on the medium.
    pub start: u64,
    /// Its bytes.
    pub bytes: (u64, u64),
    /// Its sectors (blocks of the medium).
    pub sectors: (u64, u64),
    /// `first` (a grow: before the volume) or `last` (a shrink: after its switch).
    pub written: &'static str,
    /// Whether a GPT's backup moves to the medium's end.
    pub backup_moved: bool,
}

impl PartitionReport {
    fn of(t: Option<&PartitionGrow>, written: &'static str) -> Option<Self> {
        let t = t?;
        Some(Self {
            table: match t.kind() {
                TableKind::Gpt => "gpt",
                _ => "mbr",
            },
            number: t.number(),
            start: t.start_bytes(),
            bytes: (t.old_bytes(), t.new_bytes()),
            sectors: t.sectors(),
            written,
            backup_moved: t.moves_backup(),
        })
    }
}

impl GrowReport {
    fn new(g: &Grow) -> Self {
        Self {
            fs: if g.fs == FsKind::Exfat {
                "exfat"
            } else {
                "fat32"
            },
            volume_bytes: (g.old_bytes, g.new_bytes),
            cluster_size: g.new.cluster_size,
            cluster_count: (g.old.cluster_count, g.new.cluster_count),
            heap_offset: g.new.heap_offset,
            fat_offset: g.new.fat_offset,
            fat_bytes: (g.old.fat_bytes, g.new.fat_bytes),
            bitmap: ClusterExtent {
                cluster: g.bitmap.0,
                bytes: g.bitmap.1,
            },
            root: ClusterRun {
                cluster: g.new.root_cluster,
                clusters: g.root_clusters,
            },
            free_bytes: (g.free_before, g.free_after),
            moved_clusters: g.moved_clusters,
            moved_bytes: g.moved_clusters * g.old.cluster_size,
            bytes_read: g.bytes_read,
            bytes_written: g.bytes_written,
            estimate_stick_seconds: g.estimate_stick_seconds(),
            partition: PartitionReport::of(g.table.as_ref(), "first"),
        }
    }
}

/// Bytes from a first cluster.
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct ClusterExtent {
    /// The first cluster.
    pub cluster: u32,
    /// The length in bytes.
    pub bytes: u64,
}

/// Clusters from a first cluster.
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct ClusterRun {
    /// The first cluster.
    pub cluster: u32,
    /// How many clusters.
    pub clusters: u32,
}
