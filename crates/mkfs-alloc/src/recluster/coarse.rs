//! The larger case: a new cluster size `k` times the old one (`k` a power
//! of two), in place, moving the least it can.
//!
//! The heap keeps its offset, so new cluster `j` covers the `k` old
//! clusters `2 + (j - 2) * k ..= 2 + (j - 2) * k + k - 1` (a group). New
//! cluster `j` can hold a file's data where it is only if the file's bytes
//! are in order there: a file whose every `k`-th old cluster starts a group
//! and whose clusters follow each other within a group keeps its place
//! (its new chain names the groups; a NoFatChain file stays NoFatChain).
//! Every other file (unaligned, fragmented inside a group, or starting in
//! a group another file starts) and the up-case table, when it is not in
//! order, is copied into groups that are wholly free in the old volume;
//! so are the new bitmap and every directory (rewritten: first clusters,
//! NoFatChain cleared where a chain is written, a directory's length
//! rounded up to the new cluster, SetChecksums). The old volume's own
//! metadata is never changed (the new FAT goes into the gap after the old
//! one, as in the smaller case; when that gap is too small, over the old
//! FAT's entries of the clusters past its last one in use, which the old
//! volume does not read, as the evacuation's FAT entries), so the
//! crash-safety argument of [`super`] holds unchanged: before the switch
//! only space the old volume does not use is written.
//!
//! The plan is a pass of this module's walk that only reads and counts;
//! the run is the same walk writing, from the same old volume: both take
//! the same decisions and the same free groups, first fit from the heap's
//! start (the volume is unchanged between them, but for VolumeDirty).

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, RootDir, VolumeModel};
use mkfs_alloc_ondisk::exfat::BootSector;
use zerocopy::FromBytes;

use super::disk::write_at;
use super::plan::{DirCopy, ExfatGeometry, Plan, Refusal};
use super::state::{new_region, set_dirty, Intent};
use super::{Job, ReclusterError};

mod walk;

use walk::Pass;

/// What a re-cluster to a larger size does besides the figures every plan
/// has ([`Plan::coarse`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coarse {
    /// Old clusters per new cluster (`k`).
    pub group: u32,
    /// Whether the heap (kept where it is) starts at a multiple of the new
    /// cluster size from the medium's start: the new clusters are aligned.
    pub heap_aligned: bool,
    /// Files whose data keeps its place.
    pub files_kept: u64,
    /// Files whose data is copied.
    pub files_moved: u64,
    /// Bytes of data copied (whole old clusters of files and the up-case
    /// table; [`Plan::clusters_moved`] of them).
    pub bytes_moved: u64,
    /// Bytes of the files' last clusters past their ends, at the old and
    /// at the new size (space lost to slack).
    pub slack: (u64, u64),
    /// Bytes of new clusters wholly free in the old volume before the job
    /// (where copies can go).
    pub free_groups: u64,
    /// FAT32: bytes at the volume's end the new FATs, in the room the old
    /// ones leave, cannot index; the new volume ends that much earlier
    /// (`BPB_TotSec32`; 0: it keeps its size).
    pub shortened: u64,
}

/// Plans the re-cluster of `model` to `cluster`-byte clusters, a multiple
/// of the old size (the smaller planner's checks passed). Reads the old FAT
/// and the directories; writes nothing.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    dirs_in: &[EntrySet],
    root_clusters: u64,
    cluster: u64,
) -> Result<Plan, ReclusterError> {
    let refused = |r| ReclusterError::Refused(r);
    let g = &model.geometry;
    let sector = u64::from(g.sector_size);
    let old_c = g.cluster_size;
    if g.fat_count != 1 || g.active_fat != 0 {
        return Err(ReclusterError::unsupported(
            "a volume with two FATs (TexFAT)".into(),
        ));
    }
    let (Some(_), Some(upcase)) = (model.bitmap, model.upcase) else {
        return Err(ReclusterError::unsupported(
            "a volume without a bitmap or up-case entry".into(),
        ));
    };
    let RootDir::Cluster(root_first) = g.root else {
        return Err(ReclusterError::unsupported("a fixed root directory".into()));
    };
    let group = u32::try_from(cluster / old_c).map_err(|_| {
        refused(Refusal::InvalidSize {
            cluster,
            sector: g.sector_size,
        })
    })?;
    let old = ExfatGeometry::of(g, root_first);
    // Fewer clusters than before: the count cannot pass exFAT's limit.
    let count = (g.fs_bytes - old.heap_offset) / cluster;
    let new_count =
        u32::try_from(count).map_err(|_| refused(Refusal::TooManyClusters { clusters: count }))?;
    let fat_bytes = ((count + 2) * 4).div_ceil(sector) * sector;
    let old_fat_end = old.fat_offset + old.fat_bytes;
    let intent_offset = old.heap_offset - sector;
    // After the old FAT; or, when the gap is too small, over the old FAT's
    // entries of clusters past the last one in use: the old volume does
    // not read those (they are free in its bitmap), as the evacuation's
    // FAT entries (`evac.rs`). The intent record's sector too.
    let last_used = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| model.used.get(c))
        .unwrap_or(1);
    let unread = old.fat_offset + (u64::from(last_used) + 1) * 4;
    let fat_offset = [old_fat_end, unread.min(old_fat_end)]
        .into_iter()
        .flat_map(|from| [from.div_ceil(4096) * 4096, from.div_ceil(sector) * sector])
        .find(|&at| at + fat_bytes <= intent_offset)
        .ok_or_else(|| {
            ReclusterError::unsupported(format!(
                "a larger cluster whose new FAT ({fat_bytes} bytes) fits neither the {} bytes between the old FAT and the cluster heap nor the old FAT's entries of free clusters at its end",
                intent_offset.saturating_sub(old_fat_end)
            ))
        })?;
    let mut dirs = vec![DirCopy {
        path: "/".into(),
        old_first: root_first,
        old_contiguous: false,
        bytes: root_clusters * old_c,
        new_first: 0,
    }];
    for s in dirs_in.iter().filter(|s| s.is_dir && s.first_cluster != 0) {
        dirs.push(DirCopy {
            path: s.path.clone(),
            old_first: s.first_cluster,
            old_contiguous: s.contiguous,
            bytes: s.size.div_ceil(old_c) * old_c,
            new_first: 0,
        });
    }
    let new = ExfatGeometry {
        cluster_size: cluster,
        cluster_count: new_count,
        fat_offset,
        fat_bytes,
        heap_offset: old.heap_offset,
        root_cluster: 0,
    };
    let mut p = Plan {
        // The old FAT's bytes the new one does not take.
        gap: (
            old.fat_offset,
            old.fat_bytes - (old_fat_end.saturating_sub(fat_offset)).min(fat_bytes),
        ),
        intent_offset,
        bitmap: (0, u64::from(new_count).div_ceil(8)),
        upcase,
        dirs,
        ..Plan::bare(g.start, g.sector_size, g.fs_bytes, old, new)
    };
    let out = Pass::new(&p, &model.used, false).execute(dev)?;
    if out.short > 0 {
        return Err(refused(Refusal::TooLittleSpace {
            need: out.taken * cluster,
            free: out.free_groups * cluster,
        }));
    }
    let used_old = model.used.count_set().min(u64::from(g.cluster_count));
    let region = 12 * sector;
    p.new.root_cluster = out.dirs.first().copied().unwrap_or(0);
    p.bitmap.0 = out.bitmap;
    for (d, &first) in p.dirs.iter_mut().zip(&out.dirs) {
        d.new_first = first;
    }
    let f = &out.fig;
    p.files = f.files;
    p.file_bytes = f.file_bytes;
    p.clusters_moved = f.moved;
    p.bytes_read = region + old.fat_bytes + f.bytes_read;
    p.bytes_written = fat_bytes + f.bytes_written + 2 * region + 2 * sector + 3 * sector;
    p.free_before = (u64::from(g.cluster_count) - used_old) * old_c;
    p.free_after = (u64::from(new_count) - out.set.min(u64::from(new_count))) * cluster;
    p.files_allocated = f.allocated;
    p.coarse = Some(f.coarse(
        (group, old_c, cluster),
        g.data_offset % cluster == 0,
        out.free_groups,
        0,
    ));
    Ok(p)
}

/// Runs a planned re-cluster to a larger size: the steps of
/// [`super::run::Executor::run`], step 3 being this module's walk.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    p: &Plan,
) -> Result<(), ReclusterError> {
    let (model, _, _) = super::read_one(dev)?;
    let s = p.sector_size;
    let abs = |rel: u64| p.volume_start + rel;
    write_at(
        dev,
        abs(p.intent_offset),
        &Intent::of(p, job.serial).sector(s),
    )?;
    dev.flush()?;
    let mut sector0 = job.old_region[..s as usize].to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut sector0) {
        set_dirty(b, true);
    }
    write_at(dev, p.volume_start, &sector0)?;
    dev.flush()?;
    let out = Pass::new(p, &model.used, true).execute(dev)?;
    if out.short > 0 || out.dirs.first() != Some(&p.new.root_cluster) || out.bitmap != p.bitmap.0 {
        // Only free space was written: the old volume is intact.
        return Err(ReclusterError::unsupported(
            "the volume changed between the plan and the run".into(),
        ));
    }
    dev.flush()?;
    let percent =
        u8::try_from(out.set * 100 / u64::from(p.new.cluster_count.max(1))).unwrap_or(100);
    let backup = new_region(&job.old_region, p, false, percent);
    write_at(dev, p.volume_start + 12 * u64::from(s), &backup)?;
    dev.flush()?;
    let main = new_region(&job.old_region, p, true, percent);
    write_at(dev, p.volume_start, &main)?;
    dev.flush()?;
    super::run::finish(dev, p.volume_start, s, abs(p.intent_offset))
}
