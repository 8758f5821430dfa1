//! The FAT12/FAT16 planner: pure arithmetic, as FAT32's (`plan.rs`), for
//! the volumes whose root directory is a fixed region between the FATs and
//! the data region (fatgen103 §3.5: `RootDirSectors`). No I/O.
//!
//! The new FATs and a new root region of the same `BPB_RootEntCnt` go into
//! the first run of old clusters the old volume has free that holds them
//! and one sector more; the new data region starts right after it:
//!
//! ```text
//!  old: | boot | old FATs | old root | cl 2 .. | free run .............. | cl m+2 ..
//!  new: | reserved sectors (grow to cover all this)  | rec | FATs | root | data ..
//! ```
//!
//! The intent record. FAT12/16 volumes have no backup boot sector and no
//! FSInfo, and often one reserved sector (mkfs.fat's default), so there is
//! no reserved sector the old volume leaves unused. The record goes into
//! old free space that becomes reserved sectors at the switch, twice:
//! - the first sector of the old volume's first free cluster, where a run
//!   on the old volume finds it whatever size it was started for (that
//!   cluster is at or before the run, so the new reserved sectors cover
//!   it: the run's first sector is never a FAT's or the root's);
//! - the new volume's last reserved sector (`BPB_RsvdSecCnt - 1`, the
//!   run's spare sector), where a run on the new volume finds it from the
//!   boot sector alone; it also names the first one, to zero both at the
//!   end.
//!
//! A driver that mounts the volume meanwhile sees a consistent volume:
//! the old one until the switch, the new one after it. FAT16 says it is
//! unfinished through FAT[1]'s clean-shutdown bit (0x8000, fatgen103 §4),
//! cleared in every old FAT before the first copy and in every new FAT
//! until the job is done; FAT12 has no such bit: only the record says so
//! (`info` reads it and names the command that finishes the job).

use mkfs_alloc_inspect::model::{DirtyMark, Finding, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::super::plan::{Allocator, DirCopy, ExfatGeometry, Plan, Refusal};
use super::super::refusal::refuse_findings;
use super::plan::{first_free_run, prefix_in_use, Input};
use super::{FatLayout, FatRefusal};

/// Where a FAT12/16 job's own sectors are, sector numbers from the
/// volume's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in super::super) struct Spots {
    /// The record as the old volume finds it (its first free cluster).
    pub old_record: u64,
    /// The record as the new volume finds it (its last reserved sector).
    pub new_record: u64,
    /// The old root region's first sector.
    pub old_root: u64,
    /// The new root region's first sector.
    pub new_root: u64,
    /// Sectors of either root region.
    pub root_sectors: u64,
}

/// Used covered old clusters and the first new cluster of each's copy.
type Copies = Vec<(u32, u32)>;

/// Bytes of a FAT of `entries` entries of `kind`'s width.
pub(super) fn entry_bytes(kind: FsKind, entries: u64) -> u64 {
    if kind == FsKind::Fat12 {
        (entries * 3).div_ceil(2)
    } else {
        entries * 2
    }
}

/// Whether `f` is a mark an unfinished run of ours leaves on a FAT16: the
/// clean bit cleared, FAT copies that differ in entry 1 only.
fn ours(f: &Finding) -> bool {
    match f {
        Finding::Dirty { mark } => *mark == DirtyMark::FatCleanBit,
        Finding::FatCopiesDiffer {
            bytes,
            first_offset,
            ..
        } => *first_offset >= 2 && first_offset + bytes <= 4,
        _ => false,
    }
}

/// The checks before any arithmetic: kind, findings, the size asked;
/// returns old clusters per new one (0: a larger size).
pub(super) fn check(model: &VolumeModel, input: &Input<'_>) -> Result<u32, Refusal> {
    let g = &model.geometry;
    if !matches!(g.kind, FsKind::Fat12 | FsKind::Fat16) {
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
    if g.active_fat != 0 {
        return Err(Refusal::Unsupported {
            what: "a FAT volume whose active FAT is not the first".into(),
        });
    }
    Ok(u32::try_from(old_c / cluster).unwrap_or(u32::MAX))
}

/// A refusal when `count` clusters are not `kind`'s width.
pub(super) fn width(kind: FsKind, count: u64) -> Result<(), Refusal> {
    let to = FsKind::fat_width(count);
    if to == kind {
        return Ok(());
    }
    Err(Refusal::Fat(FatRefusal::WidthChange {
        clusters: count,
        from: kind,
        kind: to,
    }))
}

/// Plans the re-cluster of the FAT12/16 volume `model` describes: the
/// plan, the copies of used covered old clusters (old cluster, first new
/// cluster of its copy) and the job's own sectors.
///
/// # Errors
///
/// A [`Refusal`] with its reason.
pub(in super::super) fn plan_small(
    model: &VolumeModel,
    input: &Input<'_>,
) -> Result<(Plan, Copies, Spots), Refusal> {
    let ratio = check(model, input)?;
    let g = &model.geometry;
    if ratio == 0 {
        return Err(Refusal::LargerNotSupported {
            old: g.cluster_size,
            new: input.cluster,
        });
    }
    let RootDir::Fixed { offset, entries } = g.root else {
        return Err(Refusal::NotExfat { kind: g.kind });
    };
    let (s, cluster, old_c) = (u64::from(g.sector_size), input.cluster, g.cluster_size);
    let (spc_old, spc_new) = (old_c / s, cluster / s);
    let reserved_old = (g.fat_offset - g.start) / s;
    let data_old = (g.data_offset - g.start) / s;
    let total = g.fs_bytes / s;
    let fats = u64::from(g.fat_count);
    let root_sectors = (u64::from(entries) * 32).div_ceil(s);
    // Sized for the most clusters the new size can give (as FAT32's).
    let most = (total - data_old) / spc_new;
    let fat_sectors = entry_bytes(g.kind, most + 2).div_ceil(s);
    let meta = fats * fat_sectors + root_sectors;
    let run = (meta + 1).div_ceil(spc_old);
    let last = u64::from(g.cluster_count) + 1;
    let too_small = Refusal::TooLittleSpace {
        need: run * old_c,
        free: model.free_clusters * old_c,
    };
    let start = first_free_run(model, run, last).ok_or(too_small)?;
    let first_free = (2..=last)
        .find(|&c| !model.used.get(u32::try_from(c).unwrap_or(u32::MAX)))
        .unwrap_or(start);
    let covered = start + run - 2;
    let data_new = data_old + covered * spc_old;
    let reserved_new = data_new - meta;
    if reserved_new > u64::from(u16::MAX) {
        return Err(Refusal::Fat(FatRefusal::ReservedSectors {
            need: reserved_new,
            covered,
        }));
    }
    let count = (total - data_new) / spc_new;
    width(g.kind, count)?;
    let new_count =
        u32::try_from(count).map_err(|_| Refusal::TooManyClusters { clusters: count })?;
    let shift = u32::try_from(covered * u64::from(ratio))
        .map_err(|_| Refusal::TooManyClusters { clusters: count })?;
    let mut alloc = Allocator::new(model, ratio, new_count, shift);
    let (copies, in_use, dirs) = allocate(model, input, &mut alloc, covered)?;
    let spots = Spots {
        old_record: data_old + (first_free - 2) * spc_old,
        new_record: reserved_new - 1,
        old_root: (offset - g.start) / s,
        new_root: reserved_new + fats * fat_sectors,
        root_sectors,
    };
    let shape = Shape {
        ratio,
        shift,
        new_count,
        reserved: (reserved_old, reserved_new),
        fat_sectors,
        data: (data_old, data_new),
        covered,
        in_use,
    };
    let plan = assemble(model, input, &shape, dirs, copies.len() as u64);
    Ok((plan, copies, spots))
}

/// What [`assemble`] needs of the arithmetic.
struct Shape {
    ratio: u32,
    shift: u32,
    new_count: u32,
    reserved: (u64, u64),
    fat_sectors: u64,
    data: (u64, u64),
    covered: u64,
    in_use: u64,
}

/// The copies of the used covered file clusters and of every directory
/// (the root first, which goes to the new root region: no clusters).
fn allocate(
    model: &VolumeModel,
    input: &Input<'_>,
    alloc: &mut Allocator<'_>,
    covered: u64,
) -> Result<(Copies, u64, Vec<DirCopy>), Refusal> {
    let g = &model.geometry;
    let (old_c, cluster) = (g.cluster_size, input.cluster);
    let per_old = old_c / cluster;
    let dir_clusters: std::collections::HashSet<u32> =
        input.chains.iter().flatten().copied().collect();
    let chain_clusters: u64 = input.chains.iter().map(|c| c.len() as u64).sum();
    let too_little = Refusal::TooLittleSpace {
        need: (prefix_in_use(model, covered) + chain_clusters) * old_c,
        free: alloc.free_new() * cluster,
    };
    let (mut copies, mut in_use) = (Vec::new(), 0u64);
    for c in 2..covered + 2 {
        let c = u32::try_from(c).unwrap_or(u32::MAX);
        if !model.used.get(c) {
            continue;
        }
        in_use += 1;
        if !dir_clusters.contains(&c) {
            let first = alloc.run(per_old).ok_or_else(|| too_little.clone())?;
            copies.push((c, first));
        }
    }
    let root_bytes = match g.root {
        RootDir::Fixed { entries, .. } => u64::from(entries) * 32,
        RootDir::Cluster(_) => 0,
    };
    let mut dirs = vec![DirCopy {
        path: "/".into(),
        old_first: 0,
        old_contiguous: true,
        bytes: root_bytes,
        new_first: 0,
    }];
    for (d, chain) in input.dirs.iter().zip(input.chains.iter().skip(1)) {
        let bytes = chain.len() as u64 * old_c;
        let first = alloc
            .run(bytes / cluster)
            .ok_or_else(|| too_little.clone())?;
        dirs.push(DirCopy {
            path: d.path.clone(),
            old_first: chain.first().copied().unwrap_or(0),
            old_contiguous: false,
            bytes,
            new_first: first,
        });
    }
    Ok((copies, in_use, dirs))
}

/// The [`Plan`] of the arithmetic's `shape`.
fn assemble(
    model: &VolumeModel,
    input: &Input<'_>,
    shape: &Shape,
    dirs: Vec<DirCopy>,
    moved: u64,
) -> Plan {
    let g = &model.geometry;
    let (s, cluster, old_c) = (u64::from(g.sector_size), input.cluster, g.cluster_size);
    let fats = u64::from(g.fat_count);
    let dir_bytes: u64 = dirs.iter().map(|d| d.bytes).sum();
    let (mut file_bytes, mut alloc_old, mut alloc_new) = (0u64, 0u64, 0u64);
    for &size in input.file_sizes {
        file_bytes += size;
        alloc_old += size.div_ceil(old_c) * old_c;
        alloc_new += size.div_ceil(cluster) * cluster;
    }
    let used_old = model.used.count_set().min(u64::from(g.cluster_count));
    let subdir_bytes = dir_bytes - dirs.first().map_or(0, |d| d.bytes);
    let used_new = (alloc_new + subdir_bytes) / cluster;
    let count = u64::from(shape.new_count);
    let copied = moved * old_c;
    let geometry = |cs: u64, cc: u32, rsv: u64, fat: u64, data: u64| ExfatGeometry {
        cluster_size: cs,
        cluster_count: cc,
        fat_offset: rsv * s,
        fat_bytes: fat * s,
        heap_offset: data * s,
        root_cluster: 0,
    };
    // Sectors written besides the FATs, copies and directories: the two
    // records and their clearing, the clean bits of every old and new FAT
    // and their setting, the boot sector.
    let small = (4 + 3 * fats + 1) * s;
    Plan {
        volume_start: g.start,
        sector_size: g.sector_size,
        volume_bytes: g.fs_bytes,
        old: geometry(
            old_c,
            g.cluster_count,
            shape.reserved.0,
            g.fat_bytes / s,
            shape.data.0,
        ),
        new: geometry(
            cluster,
            shape.new_count,
            shape.reserved.1,
            shape.fat_sectors,
            shape.data.1,
        ),
        gap: (shape.reserved.0 * s, fats * g.fat_bytes),
        intent_offset: 0,
        ratio: shape.ratio,
        clusters_moved: moved,
        heap_shift: shape.shift,
        evacuate: None,
        bitmap: (0, 0),
        upcase: (0, 0),
        bad_clusters: Vec::new(),
        coarse: None,
        dirs,
        files: input.file_sizes.len() as u64,
        file_bytes,
        bytes_read: s + g.fat_bytes + dir_bytes + copied,
        bytes_written: 2 * fats * shape.fat_sectors * s + dir_bytes + copied + small,
        free_before: (u64::from(g.cluster_count) - used_old) * old_c,
        free_after: (count - used_new.min(count)) * cluster,
        files_allocated: (alloc_old, alloc_new),
        fat: Some(FatLayout {
            kind: g.kind,
            fat_count: g.fat_count,
            reserved: (
                u32::try_from(shape.reserved.0).unwrap_or(u32::MAX),
                u32::try_from(shape.reserved.1).unwrap_or(u32::MAX),
            ),
            covered: shape.covered,
            in_use: shape.in_use,
            evacuated: 0,
        }),
    }
}
