//! The FAT32 planner: pure arithmetic from a [`VolumeModel`], the old
//! clusters of every directory and a new cluster size to a [`Plan`] (with
//! its [`FatLayout`]) and the copies the run makes, or a [`Refusal`]. No
//! I/O.
//!
//! FAT has no field for the data region's offset: it is
//! `BPB_RsvdSecCnt + BPB_NumFATs * BPB_FATSz32` (fatgen103 §3.5), so the
//! new FATs, `r` times larger, end where the new data region starts. They
//! cannot go where the old FATs are (the old volume reads those until the
//! switch); they go into a run of old clusters the old volume has free, the
//! first run long enough, and the new data region starts right after it,
//! `m` whole old clusters after the old one:
//!
//! ```text
//!  old: | boot ... | old FATs | cl 2 .. | free run ........ | cl m+2 .. |
//!  new: | reserved sectors (grow to cover all this) | new FATs | data ...|
//! ```
//!
//! Old cluster `c >= m + 2` is new clusters `(c - 2 - m) * r + 2 ..` (its
//! data stays); the old clusters `2 .. m + 2` become reserved sectors: the
//! file data among them is copied first to free old clusters (the copies
//! are named only by the new FAT and the new directories), and every
//! directory is copied, rewritten, to free old clusters. The reserved
//! sector count is 16-bit: a first free run past 65,535 sectors is refused.

use std::fmt;

use mkfs_alloc_inspect::model::{DirtyMark, EntrySet, Finding, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::super::plan::{Allocator, DirCopy, ExfatGeometry, Plan, Refusal};
use super::super::refusal::refuse_findings;

/// The sector of the intent record: after FSInfo (1) and the backup boot
/// sector and FSInfo (6, 7), in the reserved sectors of both volumes.
pub(in super::super) const INTENT_SECTOR: u64 = 24;

/// What a FAT re-cluster changes besides the [`Plan`]'s geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FatLayout {
    /// FAT32.
    pub kind: FsKind,
    /// FATs (`BPB_NumFATs`, kept).
    pub fat_count: u32,
    /// Reserved sectors before and after (`BPB_RsvdSecCnt`).
    pub reserved: (u32, u32),
    /// Old clusters that become reserved sectors (`m`).
    pub covered: u64,
    /// Of those, the ones in use (file data copied, directories copied
    /// with the others).
    pub in_use: u64,
    /// Old clusters moved first, in the old volume, out of where the new
    /// FATs go (`evac.rs`).
    pub evacuated: u64,
}

/// Why a FAT volume is not re-clustered (nothing was written).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FatRefusal {
    /// The new cluster count needs another FAT width: FAT32 keeps 65,525
    /// to 268,435,445 clusters (fatgen103 §3.5).
    TypeChange {
        /// The cluster count the new size gives.
        clusters: u64,
        /// The FAT type that count is.
        kind: FsKind,
    },
    /// FAT12/16: the new cluster count is another FAT width's (FAT12
    /// below 4,085 clusters, FAT16 below 65,525, fatgen103 §3.5).
    WidthChange {
        /// The cluster count the new size gives.
        clusters: u64,
        /// The FAT type the volume is.
        from: FsKind,
        /// The FAT type that count is.
        kind: FsKind,
    },
    /// More clusters than FAT32's 268,435,445 (no FAT is wider).
    TooManyClusters {
        /// The cluster count the new size gives.
        clusters: u64,
    },
    /// The reserved sectors would have to cover more than
    /// `BPB_RsvdSecCnt`'s 65,535 sectors.
    ReservedSectors {
        /// Reserved sectors needed.
        need: u64,
        /// Old clusters they would cover.
        covered: u64,
    },
}

impl fmt::Display for FatRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FatRefusal::TypeChange { clusters, kind } => write!(
                f,
                "{clusters} clusters at that size is {}, not FAT32 (65,525 to 268,435,445 clusters): changing the FAT type is convert's job, not recluster's",
                kind.display_name()
            ),
            FatRefusal::WidthChange {
                clusters,
                from,
                kind,
            } => write!(
                f,
                "{clusters} clusters at that size is {}, not {} ({} to {} clusters): changing the FAT type is convert's job, not recluster's",
                kind.display_name(),
                from.display_name(),
                from.min_clusters(),
                from.max_clusters()
            ),
            FatRefusal::TooManyClusters { clusters } => write!(
                f,
                "{clusters} clusters at that size is more than FAT32's 268,435,445: only exFAT has room for them, and changing the file system is convert's job, not recluster's"
            ),
            FatRefusal::ReservedSectors { need, covered } => write!(
                f,
                "the new FATs would end {need} sectors into the volume (after its first {covered} clusters, where the first free run large enough ends), more than FAT32's 65,535 reserved sectors: free space near the start of the volume first"
            ),
        }
    }
}

/// The planner's input besides the model: what the caller read.
pub(in super::super) struct Input<'a> {
    /// The directories' entry sets.
    pub dirs: &'a [EntrySet],
    /// The old clusters of the root's chain, then of each of `dirs`'.
    pub chains: &'a [Vec<u32>],
    /// The files' sizes.
    pub file_sizes: &'a [u64],
    /// The cluster size asked.
    pub cluster: u64,
    /// Accept the dirty marks an unfinished run of this job leaves.
    pub allow_dirty: bool,
}

/// Whether `f` is a mark an unfinished run of ours leaves: the clean bit
/// cleared, FAT copies that differ (a cut between the FATs' writes) and
/// the lost clusters of a cut evacuation (`evac.rs`: copies not yet named,
/// old clusters not yet freed).
pub(in crate::recluster) fn ours(f: &Finding) -> bool {
    match f {
        Finding::Dirty { mark } => *mark == DirtyMark::FatCleanBit,
        Finding::FatCopiesDiffer { .. } | Finding::LostClusters { .. } => true,
        _ => false,
    }
}

/// Plans the re-cluster of the FAT32 volume `model` describes; returns the
/// plan and the copies of used old clusters among the covered ones (old
/// cluster, first new cluster of its copy).
///
/// # Errors
///
/// A [`Refusal`] with its reason.
pub(in super::super) fn plan_fat(
    model: &VolumeModel,
    input: &Input<'_>,
) -> Result<(Plan, Vec<(u32, u32)>), Refusal> {
    let g = &model.geometry;
    if g.kind != FsKind::Fat32 {
        return Err(Refusal::NotExfat { kind: g.kind });
    }
    refuse_findings(model, |f| input.allow_dirty && ours(f))?;
    let (s, cluster, old_c) = (u64::from(g.sector_size), input.cluster, g.cluster_size);
    if !cluster.is_power_of_two() || cluster < s {
        return Err(Refusal::InvalidSize {
            cluster,
            sector: g.sector_size,
        });
    }
    if cluster == old_c {
        return Err(Refusal::SameSize { cluster });
    }
    if cluster > old_c {
        return Err(Refusal::LargerNotSupported {
            old: old_c,
            new: cluster,
        });
    }
    if g.active_fat != 0 {
        return Err(Refusal::Unsupported {
            what: "a FAT32 volume with FAT mirroring off (BPB_ExtFlags)".into(),
        });
    }
    let RootDir::Cluster(root_first) = g.root else {
        return Err(Refusal::NotExfat { kind: g.kind });
    };
    let reserved_old = (g.fat_offset - g.start) / s;
    if reserved_old <= INTENT_SECTOR {
        return Err(Refusal::Unsupported {
            what: format!(
                "a FAT32 volume with {reserved_old} reserved sectors (the intent record needs sector {INTENT_SECTOR})"
            ),
        });
    }
    let ratio = u32::try_from(old_c / cluster).unwrap_or(u32::MAX);
    let (spc_old, spc_new) = (old_c / s, cluster / s);
    let data_old = (g.data_offset - g.start) / s;
    let total = g.fs_bytes / s;
    let fats = u64::from(g.fat_count);
    // The new FAT is sized for the most clusters the new size can give (a
    // FAT larger than its clusters need is valid; fatgen103 §3.5 rounds
    // up too), so its size does not depend on where it goes.
    let most = (total - data_old) / spc_new;
    let min = FsKind::Fat32.min_clusters();
    if most < min {
        return Err(Refusal::Fat(FatRefusal::TypeChange {
            clusters: most,
            kind: FsKind::fat_width(most),
        }));
    }
    if most > FsKind::Fat32.max_clusters() + covered_most(g, old_c) * u64::from(ratio) {
        return Err(Refusal::Fat(FatRefusal::TooManyClusters { clusters: most }));
    }
    let fat_sectors = ((most + 2) * 4).div_ceil(s);
    let run = (fats * fat_sectors).div_ceil(spc_old);
    let last = u64::from(g.cluster_count) + 1;
    let start = first_free_run(model, run, last).ok_or(Refusal::TooLittleSpace {
        need: run * old_c,
        free: model.free_clusters * old_c,
    })?;
    let covered = start + run - 2;
    let data_new = data_old + covered * spc_old;
    let reserved_new = data_new - fats * fat_sectors;
    if reserved_new > u64::from(u16::MAX) {
        return Err(Refusal::Fat(FatRefusal::ReservedSectors {
            need: reserved_new,
            covered,
        }));
    }
    let count = (total - data_new) / spc_new;
    if count < min {
        return Err(Refusal::Fat(FatRefusal::TypeChange {
            clusters: count,
            kind: FsKind::fat_width(count),
        }));
    }
    if count > FsKind::Fat32.max_clusters() {
        return Err(Refusal::Fat(FatRefusal::TooManyClusters {
            clusters: count,
        }));
    }
    let new_count =
        u32::try_from(count).map_err(|_| Refusal::TooManyClusters { clusters: count })?;
    let shift = u32::try_from(covered * u64::from(ratio))
        .map_err(|_| Refusal::TooManyClusters { clusters: count })?;
    let mut alloc = Allocator::new(model, ratio, new_count, shift);
    let per_old = u64::from(ratio);
    let dir_clusters: std::collections::HashSet<u32> =
        input.chains.iter().flatten().copied().collect();
    let mut copies = Vec::new();
    let mut in_use = 0u64;
    let chain_clusters: u64 = input.chains.iter().map(|c| c.len() as u64).sum();
    let need = (prefix_in_use(model, covered) + chain_clusters) * old_c;
    let too_little = Refusal::TooLittleSpace {
        need,
        free: alloc.free_new() * cluster,
    };
    for c in 2..covered + 2 {
        let c = u32::try_from(c).unwrap_or(u32::MAX);
        if !model.used.get(c) {
            continue;
        }
        in_use += 1;
        if dir_clusters.contains(&c) {
            continue;
        }
        let first = alloc.run(per_old).ok_or_else(|| too_little.clone())?;
        copies.push((c, first));
    }
    let mut dirs = Vec::new();
    let paths = std::iter::once("/".to_string()).chain(input.dirs.iter().map(|d| d.path.clone()));
    let mut dir_bytes = 0u64;
    for (path, chain) in paths.zip(input.chains) {
        let bytes = chain.len() as u64 * old_c;
        let first = alloc
            .run(bytes / cluster)
            .ok_or_else(|| too_little.clone())?;
        dir_bytes += bytes;
        dirs.push(DirCopy {
            path,
            old_first: chain.first().copied().unwrap_or(0),
            old_contiguous: false,
            bytes,
            new_first: first,
        });
    }
    let (mut file_bytes, mut alloc_old, mut alloc_new) = (0u64, 0u64, 0u64);
    for &size in input.file_sizes {
        file_bytes += size;
        alloc_old += size.div_ceil(old_c) * old_c;
        alloc_new += size.div_ceil(cluster) * cluster;
    }
    let used_old = model.used.count_set().min(u64::from(g.cluster_count));
    let used_new = (alloc_new + dir_bytes) / cluster;
    let copied = copies.len() as u64 * old_c;
    let geometry = |cs: u64, cc: u32, rsv: u64, fat: u64, data: u64, root: u32| ExfatGeometry {
        cluster_size: cs,
        cluster_count: cc,
        fat_offset: rsv * s,
        fat_bytes: fat * s,
        heap_offset: data * s,
        root_cluster: root,
    };
    let old_fat_sectors = g.fat_bytes / s;
    let new_root = dirs.first().map_or(0, |d| d.new_first);
    // Sectors written besides the FATs, copies and directories: the
    // intent record and its clearing, the dirty bits of every old and new
    // FAT and their clearing, FSInfo and its backup twice, the two boot
    // sectors.
    let small = (2 + 3 * fats + 4 + 2) * s;
    let plan = Plan {
        volume_start: g.start,
        sector_size: g.sector_size,
        volume_bytes: g.fs_bytes,
        old: geometry(
            old_c,
            g.cluster_count,
            reserved_old,
            old_fat_sectors,
            data_old,
            root_first,
        ),
        new: geometry(
            cluster,
            new_count,
            reserved_new,
            fat_sectors,
            data_new,
            new_root,
        ),
        gap: (reserved_old * s, fats * g.fat_bytes),
        intent_offset: INTENT_SECTOR * s,
        ratio,
        clusters_moved: copies.len() as u64,
        heap_shift: shift,
        evacuate: None,
        bitmap: (0, 0),
        upcase: (0, 0),
        bad_clusters: Vec::new(),
        coarse: None,
        dirs,
        files: input.file_sizes.len() as u64,
        file_bytes,
        bytes_read: s + g.fat_bytes + dir_bytes + copied,
        // The FATs are zeroed, then written (the first window by window,
        // the others copied from it).
        bytes_written: 2 * fats * fat_sectors * s + dir_bytes + copied + small,
        free_before: (u64::from(g.cluster_count) - used_old) * old_c,
        free_after: (count - used_new.min(count)) * cluster,
        files_allocated: (alloc_old, alloc_new),
        fat: Some(FatLayout {
            kind: FsKind::Fat32,
            fat_count: g.fat_count,
            reserved: (
                u32::try_from(reserved_old).unwrap_or(u32::MAX),
                u32::try_from(reserved_new).unwrap_or(u32::MAX),
            ),
            covered,
            in_use,
            evacuated: 0,
        }),
    };
    Ok((plan, copies))
}

/// The first old cluster of the first run of `len` free old clusters
/// (none past `last`).
pub(super) fn first_free_run(model: &VolumeModel, len: u64, last: u64) -> Option<u64> {
    let mut start = 2u64;
    let mut c = 2u64;
    while c <= last {
        if model.used.get(u32::try_from(c).unwrap_or(u32::MAX)) {
            c += 1;
            start = c;
            continue;
        }
        if c - start + 1 == len {
            return Some(start);
        }
        c += 1;
    }
    None
}

/// An upper bound of the old clusters the new FATs' run can cover (the
/// most the 16-bit reserved sector count reaches).
fn covered_most(g: &mkfs_alloc_inspect::model::Geometry, old_c: u64) -> u64 {
    (u64::from(u16::MAX) * u64::from(g.sector_size)).div_ceil(old_c)
}

/// Old clusters in use among the data region's first `clusters`.
pub(super) fn prefix_in_use(model: &VolumeModel, clusters: u64) -> u64 {
    (2..clusters + 2)
        .filter(|&c| model.used.get(u32::try_from(c).unwrap_or(u32::MAX)))
        .count() as u64
}
