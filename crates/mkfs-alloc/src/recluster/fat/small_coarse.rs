//! FAT12/16 to a larger cluster size, `k` times the old one, in place.
//!
//! The root directory is a fixed region right before the data region
//! (fatgen103 §3.5), so the data region cannot keep its offset while the
//! old root, which the old volume reads until the switch, stays where it
//! is. As for a smaller size (`small.rs`), the new FATs and a new root
//! region of the same `BPB_RootEntCnt` go into old clusters the old volume
//! has free, and the reserved sectors grow over everything before them;
//! here the new data region starts a whole number of groups (`k` old
//! clusters, `groups.rs`) into the old one, so that new cluster `j` covers
//! the old clusters `base + (j - 2) * k ..`:
//!
//! ```text
//!  old: | boot | FATs | root | cl 2 .. | free .. [rec FATs root] | cl base ..
//!  new: | reserved sectors (grow over all this) | rec | FATs | root | cl 2 ..
//! ```
//!
//! `base` is the first one past old cluster 2 (a multiple of `k` away)
//! whose last sectors before it, one more than the new FATs and root take,
//! are in old clusters the old volume has free. Files past `base` in order
//! in whole groups keep their place; every other file and every directory
//! (rewritten: its entries' first clusters) is copied into groups wholly
//! free in the old volume, the root's entries into the new root region:
//! the walk of `coarse.rs`, over 12- or 16-bit FAT entries. The records,
//! the clean bits, the switch and the finish are the smaller case's
//! (`small_run.rs`): before the switch only clusters the old volume has
//! free and FAT16's clean bit are written.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::super::groups::Groups;
use super::super::plan::{DirCopy, ExfatGeometry, Plan, Refusal};
use super::super::ReclusterError;
use super::coarse::{bare_plan, k_of, FixedRoot, Outcome, Walk};
use super::run::Executor;
use super::small::{check, entry_bytes, width, Spots};
use super::small_run::{open_new, Small};
use super::table::Table;
use super::{FatLayout, FatRefusal, Input};

/// Sector numbers (from the volume's start) of what the plan needs.
struct Shape {
    /// Old clusters the new reserved sectors cover (a multiple of `k`).
    covered: u64,
    data_new: u64,
    reserved_new: u64,
    fat_sectors: u64,
    root_sectors: u64,
}

/// The first `covered` (a multiple of `k`) whose new data region has the
/// new FATs, the root and one sector before it in free old clusters.
fn shape(model: &VolumeModel, cluster: u64, root_sectors: u64) -> Result<Shape, Refusal> {
    let g = &model.geometry;
    let s = u64::from(g.sector_size);
    let (spc_old, spc_new) = (g.cluster_size / s, cluster / s);
    let k = spc_new / spc_old;
    let data_old = (g.data_offset - g.start) / s;
    let total = g.fs_bytes / s;
    let most = (total - data_old) / spc_new;
    let fat_sectors = entry_bytes(g.kind, most + 2).div_ceil(s);
    let meta = u64::from(g.fat_count) * fat_sectors + root_sectors;
    let free = |c: u64| !model.used.get(u32::try_from(c).unwrap_or(u32::MAX));
    let mut covered = k;
    while data_old + covered * spc_old + spc_new <= total {
        let data_new = data_old + covered * spc_old;
        if let Some(window) = data_new.saturating_sub(meta + 1).checked_sub(data_old) {
            let first = 2 + window / spc_old;
            if (first..2 + covered).all(free) {
                return Ok(Shape {
                    covered,
                    data_new,
                    reserved_new: data_new - meta,
                    fat_sectors,
                    root_sectors,
                });
            }
        }
        covered += k;
    }
    Err(Refusal::TooLittleSpace {
        need: (meta + 1).div_ceil(spc_old) * g.cluster_size,
        free: model.free_clusters * g.cluster_size,
    })
}

/// Plans the re-cluster of the FAT12/16 volume `model` describes to a
/// larger size: the plan and the job's own sectors. Reads the FAT and the
/// directories, writes nothing.
///
/// # Errors
///
/// A refusal (nothing written) or the read error.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    input: &Input<'_>,
) -> Result<(Plan, Spots), ReclusterError> {
    let refused = ReclusterError::Refused;
    check(model, input).map_err(refused)?;
    let g = &model.geometry;
    let RootDir::Fixed { offset, entries } = g.root else {
        return Err(refused(Refusal::NotExfat { kind: g.kind }));
    };
    let (s, cluster, old_c) = (u64::from(g.sector_size), input.cluster, g.cluster_size);
    if cluster / s > 128 {
        return Err(refused(Refusal::InvalidSize {
            cluster,
            sector: g.sector_size,
        }));
    }
    let fats = u64::from(g.fat_count);
    let sh = shape(model, cluster, (u64::from(entries) * 32).div_ceil(s)).map_err(refused)?;
    if sh.reserved_new > u64::from(u16::MAX) {
        return Err(refused(Refusal::Fat(FatRefusal::ReservedSectors {
            need: sh.reserved_new,
            covered: sh.covered,
        })));
    }
    let total = g.fs_bytes / s;
    let count = (total - sh.data_new) / (cluster / s);
    width(g.kind, count).map_err(refused)?;
    let new_count =
        u32::try_from(count).map_err(|_| refused(Refusal::TooManyClusters { clusters: count }))?;
    let (reserved_old, data_old) = ((g.fat_offset - g.start) / s, (g.data_offset - g.start) / s);
    let geometry = |cs: u64, cc: u32, rsv: u64, fat: u64, data: u64| ExfatGeometry {
        cluster_size: cs,
        cluster_count: cc,
        fat_offset: rsv * s,
        fat_bytes: fat,
        heap_offset: data * s,
        root_cluster: 0,
    };
    let root = DirCopy {
        path: "/".into(),
        old_first: 0,
        old_contiguous: true,
        bytes: sh.root_sectors * s,
        new_first: 0,
    };
    let subdirs = input
        .dirs
        .iter()
        .zip(input.chains.iter().skip(1))
        .map(|(d, chain)| DirCopy {
            path: d.path.clone(),
            old_first: chain.first().copied().unwrap_or(0),
            old_contiguous: false,
            bytes: chain.len() as u64 * old_c,
            new_first: 0,
        });
    let last = u64::from(g.cluster_count) + 1;
    let in_use = (2..(2 + sh.covered).min(last + 1))
        .filter(|&c| model.used.get(u32::try_from(c).unwrap_or(u32::MAX)))
        .count() as u64;
    let layout = FatLayout {
        kind: g.kind,
        fat_count: g.fat_count,
        reserved: (
            u32::try_from(reserved_old).unwrap_or(u32::MAX),
            u32::try_from(sh.reserved_new).unwrap_or(u32::MAX),
        ),
        covered: sh.covered,
        in_use,
        evacuated: 0,
    };
    let new = geometry(
        cluster,
        new_count,
        sh.reserved_new,
        sh.fat_sectors * s,
        sh.data_new,
    );
    let old = geometry(old_c, g.cluster_count, reserved_old, g.fat_bytes, data_old);
    let dirs = std::iter::once(root).chain(subdirs).collect();
    let mut p = bare_plan(g, (old, new), dirs, layout);
    p.gap = (reserved_old * s, fats * g.fat_bytes);
    p.files = input.file_sizes.len() as u64;
    p.file_bytes = input.file_sizes.iter().sum();
    let spots = Spots {
        old_record: super::small_run::old_record_sector(model).unwrap_or(sh.reserved_new - 1),
        new_record: sh.reserved_new - 1,
        old_root: (offset - g.start) / s,
        new_root: sh.reserved_new + fats * sh.fat_sectors,
        root_sectors: sh.root_sectors,
    };
    let bits = if g.kind == FsKind::Fat12 { 12 } else { 16 };
    let old = Table::new(g.fat_offset, g.fat_bytes, bits);
    let groups = Groups::new(&model.used, k_of(&p), new_count).based(base(sh.covered));
    let out = Walk::<_, Table>::new(&p, groups, input.chains, old)
        .with_root(fixed_root(&p, &spots))
        .execute(dev)?;
    if out.short > 0 {
        return Err(refused(Refusal::TooLittleSpace {
            need: out.taken * cluster,
            free: out.free_groups * cluster,
        }));
    }
    figures(model, &mut p, &out);
    Ok((p, spots))
}

/// The old cluster new cluster 2 starts at.
fn base(covered: u64) -> u32 {
    u32::try_from(2 + covered).unwrap_or(u32::MAX)
}

/// The two root regions of `p` at `spots`.
fn fixed_root(p: &Plan, spots: &Spots) -> FixedRoot {
    let s = u64::from(p.sector_size);
    FixedRoot {
        old: p.volume_start + spots.old_root * s,
        new: p.volume_start + spots.new_root * s,
        bytes: spots.root_sectors * s,
    }
}

/// The plan's figures from its counting walk.
fn figures(model: &VolumeModel, p: &mut Plan, out: &Outcome) {
    let g = &model.geometry;
    let (s, old_c, cluster) = (u64::from(g.sector_size), g.cluster_size, p.new.cluster_size);
    for (d, &first) in p.dirs.iter_mut().zip(&out.dirs) {
        d.new_first = first;
    }
    let f = &out.fig;
    let fats = u64::from(g.fat_count);
    let used_old = model.used.count_set().min(u64::from(g.cluster_count));
    // Besides the FATs, copies and directories: the two records and their
    // clearing, the clean bits of every old and new FAT and their setting,
    // the boot sector.
    let small = (4 + 3 * fats + 1) * s;
    p.clusters_moved = f.moved;
    p.bytes_read = s + g.fat_bytes + f.bytes_read;
    p.bytes_written = 2 * fats * p.new.fat_bytes + f.bytes_written + small;
    p.free_before = (u64::from(g.cluster_count) - used_old) * old_c;
    let count = u64::from(p.new.cluster_count);
    p.free_after = (count - out.set.min(count)) * cluster;
    p.files_allocated = f.allocated;
    p.coarse = Some(f.coarse(
        (k_of(p), old_c, cluster),
        (g.start + p.new.heap_offset) % cluster == 0,
        out.free_groups,
        0,
    ));
}

/// Step 3 of a planned job to a larger size: the walk writing, from the
/// old volume read again (its allocation unchanged since the plan).
pub(super) fn write<D: BlockIo + ?Sized>(
    dev: &mut D,
    ex: &Executor<'_>,
    small: &Small,
) -> Result<(), ReclusterError> {
    let p = ex.plan;
    let (model, _, _) = super::super::read_one(dev)?;
    let covered = p.fat.as_ref().map_or(0, |f| f.covered);
    let (old, w) = open_new(dev, p, small.bits)?;
    let groups = Groups::new(&model.used, k_of(p), p.new.cluster_count).based(base(covered));
    let out = Walk::new(p, groups, &ex.fat.chains, old)
        .with_root(fixed_root(p, &small.spots))
        .with_writer(w)
        .execute(dev)?;
    out.as_planned(p)
}
