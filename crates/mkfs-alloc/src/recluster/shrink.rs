//! Shrink: an exFAT volume made smaller in place (the `resize` command with
//! a size below the volume's), on the re-cluster's engine and in one
//! switch. The clusters in use past the new end are moved below it by the
//! evacuation ([`super::evac`], its window the clusters past the new
//! end), then the boot region names the smaller volume.
//!
//! ```text
//!  old: | boot | .. | FAT | (rec) | heap: clusters 2 .. N'+1 | N'+2 .. N+1 |
//!  new: | boot | .. | FAT | (rec) | heap: clusters 2 .. N'+1 |   (gone)
//! ```
//!
//! The heap keeps its offset and cluster size: no cluster below the new
//! end is renumbered. Writes:
//! 1. the intent record (phase 2, the old and the new geometry), flushed;
//! 2. VolumeDirty on the old main boot sector, flushed;
//! 3. into clusters below the new end that the old volume has free: each
//!    file chain with a cluster past the new end, from its first cluster
//!    to its last one there, copied, with a new chain whose last entry
//!    points at the rest of the old chain (a NoFatChain file gets a chain,
//!    its flag cleared); the up-case table when it has a cluster there; a
//!    new bitmap of `ceil(N' / 8)` bytes; a copy of every directory, its
//!    entries pointing at the copies (SetChecksums recomputed); flushed;
//! 4. the backup boot region (VolumeLength, ClusterCount, the new root),
//!    flushed; the main one, flushed (the switch);
//! 5. VolumeDirty cleared, the record zeroed.
//!
//! Before the switch the old volume's bytes are unchanged but for
//! VolumeDirty and FAT entries of clusters it has free (and those of
//! NoFatChain files, which it does not read): it stays valid and
//! authoritative, and a cut run is redone from its start. FatLength stays:
//! a FAT longer than the clusters need is allowed (exFAT specification
//! §3.1.6). The medium past the new end is left as it is; the caller may
//! cut an image file there.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::evac::{Evac, Outcome};
use super::grow::{Grow, ResizeRefusal};
use super::plan::{Evacuation, ExfatGeometry, Plan};
use super::state::{region_with, set_dirty, Intent};
use super::{bad, disk, read_one, used, Job, ReclusterError, Refusal};
use mkfs_alloc_ondisk::exfat::BootSector;
use zerocopy::FromBytes;

/// The least volume exFAT allows (VolumeLength, specification §3.1.5).
const LEAST_VOLUME: u64 = 1 << 20;

/// What a shrink's run needs besides the [`Grow`] figures: the
/// evacuation's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shrink {
    plan: Plan,
}

/// The old volume as the evacuation reads it.
struct Old<'a> {
    model: &'a VolumeModel,
    dirs: &'a [EntrySet],
    root_clusters: u64,
}

/// The evacuation's plan for a shrink of the volume `old` (at absolute
/// byte `start`, sectors of `s` bytes) whose bad clusters are `bad`.
fn evac_plan(start: u64, s: u32, now: u64, old: ExfatGeometry, upcase: (u32, u64)) -> Plan {
    Plan {
        ratio: 1,
        evacuate: Some(Evacuation::default()),
        upcase,
        ..Plan::bare(start, s, now, old, old)
    }
}

/// The evacuation of the clusters past `count`, counted (reads only).
fn count<D: BlockIo + ?Sized>(
    dev: &mut D,
    plan: &Plan,
    old: &Old<'_>,
    count: u32,
) -> Result<Outcome, ReclusterError> {
    Evac {
        plan,
        used: &old.model.used,
        bitmap_bytes: u64::from(count).div_ceil(8),
        dirs: old.dirs,
        root_clusters: old.root_clusters,
        write: false,
        shrink_to: Some(count),
    }
    .execute(dev)
}

/// The fewest clusters the volume can shrink to (`asked` clusters being
/// too few): the smallest count at or above `least` whose evacuation finds
/// room, by bisection (more clusters never need more room).
fn fewest<D: BlockIo + ?Sized>(
    dev: &mut D,
    plan: &Plan,
    old: &Old<'_>,
    asked: u32,
) -> Result<u32, ReclusterError> {
    let (mut lo, mut hi) = (asked, plan.old.cluster_count);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        match count(dev, plan, old, mid) {
            Ok(_) => hi = mid,
            Err(ReclusterError::Refused(Refusal::TooLittleSpace { .. })) => lo = mid,
            Err(e) => return Err(e),
        }
    }
    Ok(hi)
}

/// Plans the shrink of the exFAT volume `model` (geometry `old`, `now`
/// bytes) to `asked` bytes; reads only.
///
/// # Errors
///
/// [`ResizeRefusal::BelowData`] or [`ResizeRefusal::BadPastEnd`] (with
/// the smallest size possible), an entry the job does not know, the read
/// error.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &mut VolumeModel,
    dirs: &[EntrySet],
    old: ExfatGeometry,
    now: u64,
    asked: u64,
) -> Result<Grow, ReclusterError> {
    let g = model.geometry.clone();
    let (s, cs) = (g.sector_size, old.cluster_size);
    let refuse = |r| Err(ReclusterError::Refused(Refusal::Resize(r)));
    let size_of = |n: u32| old.heap_offset + u64::from(n) * cs;
    let bad = bad::find(dev, model)?;
    if let Some(&c) = bad.iter().find(|&&c| size_of(c - 1) > asked) {
        return refuse(ResizeRefusal::BadPastEnd {
            cluster: c,
            least: size_of(c - 1),
        });
    }
    bad::reserve(model, &bad);
    let root_clusters = disk::root_chain_len(dev, model)?;
    used::measure(dev, model, dirs, root_clusters)?;
    let upcase = model
        .upcase
        .ok_or_else(|| ReclusterError::unsupported("a volume without an up-case table".into()))?;
    let mut ep = evac_plan(g.start, s, now, old, upcase);
    ep.bad_clusters = bad;
    let o = Old {
        model,
        dirs,
        root_clusters,
    };
    let n = u32::try_from(asked.saturating_sub(old.heap_offset) / cs).unwrap_or(u32::MAX);
    let least_bytes = |n: u32| size_of(n).max(LEAST_VOLUME);
    let out = match (asked >= LEAST_VOLUME && n > 0)
        .then(|| count(dev, &ep, &o, n))
        .transpose()
    {
        Ok(Some(out)) => out,
        Ok(None) | Err(ReclusterError::Refused(Refusal::TooLittleSpace { .. })) => {
            let least = least_bytes(fewest(dev, &ep, &o, n)?);
            let free = (2..=n + 1).filter(|&c| !model.used.get(c)).count() as u64 * cs;
            return refuse(ResizeRefusal::BelowData { asked, least, free });
        }
        Err(e) => return Err(e),
    };
    let intent_offset = intent_offset(&old, s)?;
    let fig = &out.figures;
    let s64 = u64::from(s);
    Ok(Grow {
        fs: FsKind::Exfat,
        volume_start: g.start,
        sector_size: s,
        old_bytes: now,
        new_bytes: asked,
        old,
        new: ExfatGeometry {
            cluster_count: n,
            root_cluster: out.root,
            ..old
        },
        bitmap: (out.bitmap, u64::from(n).div_ceil(8)),
        root_clusters: u32::try_from(root_clusters).unwrap_or(u32::MAX),
        intent_offset,
        bytes_read: fig.bytes_read + 24 * s64,
        bytes_written: fig.bytes_written + 28 * s64,
        free_before: model.free_clusters * cs,
        free_after: (u64::from(n) - out.used.min(u64::from(n))) * cs,
        moved_clusters: fig.moved,
        old_chains: (Vec::new(), Vec::new()),
        fat: None,
        table: None,
        shrink: Some(Box::new(Shrink { plan: ep })),
    })
}

/// Where the intent record goes: the sector before the heap, or sector 24
/// when the FAT reaches the heap (refused when neither is free).
fn intent_offset(old: &ExfatGeometry, s: u32) -> Result<u64, ReclusterError> {
    let s64 = u64::from(s);
    let fat_end = old.fat_offset + old.fat_bytes;
    if fat_end + s64 <= old.heap_offset {
        Ok(old.heap_offset - s64)
    } else if old.fat_offset > 24 * s64 {
        Ok(24 * s64)
    } else {
        Err(ReclusterError::unsupported(
            "a volume with no free sector for the intent record (the FAT fills the space before the heap)".into(),
        ))
    }
}

/// Runs a planned shrink (steps of the module docs); `job` holds the old
/// main boot region.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    p: &Grow,
    sh: &Shrink,
) -> Result<(), ReclusterError> {
    let (mut model, dirs, _) = read_one(dev)?;
    let bad = bad::find(dev, &model)?;
    bad::reserve(&mut model, &bad);
    let root_clusters = disk::root_chain_len(dev, &model)?;
    let s = p.sector_size;
    let intent = Intent::resize(s, job.serial, &p.old, &p.new);
    disk::write_at(dev, p.volume_start + p.intent_offset, &intent.sector(s))?;
    dev.flush()?;
    let mut sector0 = job.old_region[..s as usize].to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut sector0) {
        set_dirty(b, true);
    }
    disk::write_at(dev, p.volume_start, &sector0)?;
    dev.flush()?;
    let out = Evac {
        plan: &sh.plan,
        used: &model.used,
        bitmap_bytes: p.bitmap.1,
        dirs: &dirs,
        root_clusters,
        write: true,
        shrink_to: Some(p.new.cluster_count),
    }
    .execute(dev)?;
    dev.flush()?;
    if out.root != p.new.root_cluster || out.bitmap != p.bitmap.0 {
        // The old volume is still the valid one: nothing is switched.
        return Err(ReclusterError::unsupported(
            "the volume changed between the plan and the run".into(),
        ));
    }
    let length = Some(p.new_bytes / u64::from(s));
    let backup = region_with(&job.old_region, s, &p.new, length, false, out.percent);
    disk::write_at(dev, p.volume_start + 12 * u64::from(s), &backup)?;
    dev.flush()?;
    let main = region_with(&job.old_region, s, &p.new, length, true, out.percent);
    disk::write_at(dev, p.volume_start, &main)?;
    dev.flush()?;
    super::run::finish(dev, p.volume_start, s, p.volume_start + p.intent_offset)
}
