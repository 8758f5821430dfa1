//! Re-cluster of a FAT32 volume to a smaller cluster size that divides the
//! old one, in place, with every file intact whenever the power goes (a
//! larger size: `coarse.rs`, the same steps but step 3).
//!
//! ```text
//!  medium ─► read_volume (VolumeModel + entry sets), sector 0, the record
//!         ─► plan_fat (pure: the new FATs' place, copies, refusals)
//!         ─► run: 1 intent record (reserved sector 24), flush
//!                 2 the clean bit of FAT[1] cleared in every old FAT, flush
//!                 3 copies of the file clusters the new FATs' reserved
//!                   sectors cover, a rewritten copy of every directory,
//!                   the new FATs (their clean bit clear), FSInfo's hints
//!                   "unknown", flush     (clusters the old volume has free)
//!                 4 backup boot sector (new), flush
//!                 5 boot sector (new), flush             ◄─ the switch
//!                 6 clean bit set in every new FAT, FSInfo's free count
//!                   and next free, flush; intent record zeroed, flush
//! ```
//!
//! The geometry is `plan.rs`'s: the new FATs go into the first run of old
//! clusters the old volume has free that holds them, the data region
//! starts right after it, and the reserved sectors grow to cover the old
//! FATs and the old clusters before the run (FAT has no data-offset field).
//!
//! Crash safety, under "any subset of the writes since the last flush
//! survives, block by block": before step 5 the old volume's own bytes are
//! untouched but for FAT[1]'s clean bit (Microsoft's FAT specification,
//! fatgen103 §4: a volume "not properly dismounted"), FSInfo's two hints
//! set to 0xFFFFFFFF ("unknown", valid for any volume, §5) and the backup
//! boot sector, which no reader takes while sector 0 is valid; so the old
//! volume is valid and authoritative. Directory entries are never updated
//! in place: each directory is copied, rewritten, to free clusters. The
//! switch is one sector (sector 0), after the backup boot sector is the
//! complete new volume; a cut between the two leaves the old volume with a
//! backup that differs (fsck.fat offers to copy one over the other: either
//! is a complete volume holding every file). After the switch the old FATs
//! and the covered clusters are reserved sectors nobody reads.
//!
//! Running the same job again reads the state from the medium (the record
//! names the serial, both geometries and the target size):
//! - old cluster size, no record of ours: a fresh start;
//! - old cluster size, our record naming this volume as its old one: the
//!   job is redone from step 1 (the same plan, the same bytes; the dirty
//!   marks of step 2 are accepted, including FAT copies that differ in
//!   entry 1 only);
//! - new cluster size with our record naming it as the new volume: step 6;
//! - new cluster size, no record: nothing to do.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, Geometry, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_ondisk::fat::Fat32BootSector;
use zerocopy::FromBytes;

use super::disk;
use super::plan::ExfatGeometry;
use super::state::Intent;
use super::{Job, ReclusterError, Step};

mod coarse;
mod evac;
mod plan;
mod run;
mod small;
mod small_coarse;
mod small_run;
mod table;

pub(super) use evac::{moves, past_end, Evacuation, Place};
pub(super) use plan::{ours, plan_fat, Input, INTENT_SECTOR};
pub use plan::{FatLayout, FatRefusal};
pub(super) use run::{set_clean, set_fs_info};
pub(super) use small_run::unfinished as unfinished_small;

/// FAT32 entry bits (the high four are reserved).
const MASK: u32 = 0x0FFF_FFFF;

/// What a FAT job needs besides the [`super::Plan`].
#[derive(Debug, Clone)]
pub(super) struct FatJob {
    /// Used old clusters the new reserved sectors cover that hold file
    /// data: (old cluster, first new cluster of its copy), sorted.
    copies: Vec<(u32, u32)>,
    /// The old clusters of every directory, in the plan's order.
    chains: Vec<Vec<u32>>,
    /// FSInfo and its backup, absolute byte offsets (only those there).
    fs_info: Vec<u64>,
    /// The backup boot sector, absolute byte offset.
    backup_boot: Option<u64>,
    /// The first sector of every FAT of the volume on the medium now.
    fats: Vec<u64>,
    /// After the switch: FSInfo's free count and next free cluster.
    free: (u32, u32),
    /// FAT12/16: the job's own sectors and entry width (`small_run.rs`).
    small: Option<small_run::Small>,
    /// The clusters moved first out of where the new FATs go.
    evac: Option<evac::Evacuation>,
}

/// [`super::plan`] for a FAT volume, from its model and the entry sets its
/// reading handed out.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    dirs: &[EntrySet],
    file_sizes: &[u64],
    cluster: u64,
) -> Result<Job, ReclusterError> {
    let g = &model.geometry;
    let s = g.sector_size;
    let su = u64::from(s);
    let mut sector0 = vec![0u8; s as usize];
    disk::read_at(dev, g.start, &mut sector0)?;
    let (RootDir::Cluster(root), FsKind::Fat32) = (g.root, g.kind) else {
        let job = Job {
            step: Step::Nothing,
            plan: None,
            volume_start: g.start,
            sector: s,
            old_region: sector0,
            backup: None,
            serial: 0,
            intent_offset: 0,
            target: cluster,
            continues: false,
            fat: None,
            grow: None,
            table_after: None,
        };
        return small_run::plan(dev, job, model, dirs, file_sizes);
    };
    let (serial, info, bk) = match Fat32BootSector::ref_from_prefix(&sector0) {
        Ok((b, _)) => (
            b.ebpb.vol_id.get(),
            u64::from(b.ebpb.fs_info.get()),
            u64::from(b.ebpb.bk_boot_sec.get()),
        ),
        Err(_) => (0, 0, 0),
    };
    let reserved = (g.fat_offset - g.start) / su;
    let in_reserved = |n: u64| n > 0 && n < reserved && n != INTENT_SECTOR;
    let fs_info = [info, bk + 1]
        .into_iter()
        .filter(|&n| in_reserved(n) && (n != bk + 1 || in_reserved(bk)))
        .map(|n| g.start + n * su)
        .collect();
    let intent_offset = g.start + INTENT_SECTOR * su;
    let mut rec = vec![0u8; s as usize];
    if reserved > INTENT_SECTOR {
        disk::read_at(dev, intent_offset, &mut rec)?;
    }
    let intent = Intent::read(&rec);
    let now = ExfatGeometry::of(g, root);
    let mut job = Job {
        step: Step::Nothing,
        plan: None,
        volume_start: g.start,
        sector: s,
        old_region: sector0,
        backup: None,
        serial,
        intent_offset,
        target: cluster,
        continues: false,
        fat: None,
        grow: None,
        table_after: None,
    };
    let mut fat = FatJob {
        copies: Vec::new(),
        chains: Vec::new(),
        fs_info,
        backup_boot: in_reserved(bk).then(|| g.start + bk * su),
        fats: (0..u64::from(g.fat_count))
            .map(|i| g.fat_offset + i * g.fat_bytes)
            .collect(),
        free: (0, 0),
        small: None,
        evac: None,
    };
    if g.cluster_size == cluster {
        if intent
            .as_ref()
            .is_some_and(|i| !i.conversion() && i.names(s, serial, &now, true))
        {
            let next = (2..=g.cluster_count + 1).find(|&c| !model.used.get(c));
            fat.free = (
                u32::try_from(model.free_clusters).unwrap_or(u32::MAX),
                next.unwrap_or(u32::MAX),
            );
            job.step = Step::Finish;
            job.fat = Some(Box::new(fat));
            return Ok(job);
        }
        ReclusterError::other_kind(intent.as_ref())?;
        return Ok(job);
    }
    // Past its switch a resize is finished as a re-cluster to its own size
    // (above); before it, and any conversion, is the other job's to finish.
    ReclusterError::other_kind(intent.as_ref())?;
    if intent
        .as_ref()
        .is_some_and(|i| i.names(s, serial, &now, true))
    {
        // Past the switch of a job to this cluster size, unfinished.
        return Err(ReclusterError::OtherJob {
            cluster: g.cluster_size,
        });
    }
    let shift = u8::try_from((cluster / su.max(1)).trailing_zeros()).unwrap_or(0);
    let ours = intent.as_ref().filter(|i| i.names(s, serial, &now, false));
    if let Some(i) = ours.filter(|i| i.target_shift() != shift) {
        return Err(ReclusterError::OtherJob {
            cluster: su << i.target_shift(),
        });
    }
    if intent.is_none() && rec.iter().any(|&b| b != 0) {
        return Err(ReclusterError::unsupported(format!(
            "reserved sector {INTENT_SECTOR}, where the intent record goes, holds data (boot code?)"
        )));
    }
    let dirs: Vec<EntrySet> = dirs
        .iter()
        .filter(|d| d.is_dir && d.first_cluster != 0)
        .cloned()
        .collect();
    fat.chains = dir_chains(dev, g, root, &dirs)?;
    let input = Input {
        dirs: &dirs,
        chains: &fat.chains,
        file_sizes,
        cluster,
        allow_dirty: ours.is_some(),
    };
    let p = if cluster > g.cluster_size && cluster.is_power_of_two() {
        coarse::plan(dev, model, &input)?
    } else {
        let planned = plan_fat(model, &input);
        let (p, copies, ev) = evac::plan(dev, model, &input, planned)?;
        fat.copies = copies;
        fat.evac = ev;
        p
    };
    job.step = if ours.is_some() {
        Step::Redo
    } else {
        Step::Start
    };
    job.plan = Some(p);
    job.fat = Some(Box::new(fat));
    Ok(job)
}

/// The chains of the root directory (first cluster `root`) and of every
/// directory of `dirs`, in that order (each cut where it leaves the data
/// region or grows longer than the volume).
pub(super) fn dir_chains<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    root: u32,
    dirs: &[EntrySet],
) -> Result<Vec<Vec<u32>>, ReclusterError> {
    let mut reader = disk::FatReader::new(g.fat_offset, g.fat_bytes);
    let mut chains = Vec::new();
    for first in std::iter::once(root).chain(dirs.iter().map(|d| d.first_cluster)) {
        let mut chain = Vec::new();
        let mut c = first;
        let most = usize::try_from(g.cluster_count).unwrap_or(usize::MAX);
        while (2..=g.cluster_count + 1).contains(&c) && chain.len() <= most {
            chain.push(c);
            c = reader.get(dev, c)? & MASK;
        }
        chains.push(chain);
    }
    Ok(chains)
}

/// [`super::run`] for a FAT job.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    fat: &FatJob,
) -> Result<(), ReclusterError> {
    match (&job.step, &job.plan, &fat.small) {
        (Step::Finish, _, Some(small)) => small_run::finish(dev, job, fat, small),
        (Step::Finish, _, None) => run::finish(dev, job, fat),
        (Step::Start | Step::Redo, Some(p), None) if fat.evac.is_some() => {
            if let Some(ev) = &fat.evac {
                evac::execute(dev, job, p, fat, ev, job.step == Step::Redo)?;
            }
            // The window is free now: the re-cluster, planned from the
            // volume the evacuation left.
            let next = super::plan(dev, job.target)?;
            if next.fat.as_ref().is_some_and(|f| f.evac.is_some()) {
                return Err(ReclusterError::unsupported(
                    "clusters still in use where the new FATs go after the evacuation".into(),
                ));
            }
            super::run(dev, &next)
        }
        (Step::Start | Step::Redo, Some(p), small) => {
            let ex = run::Executor { job, plan: p, fat };
            match small {
                Some(small) => small_run::run(dev, &ex, small)?,
                None if p.coarse.is_some() => coarse::run(dev, &ex)?,
                None => ex.run(dev)?,
            }
            // Past the switch: step 6, planned from the new volume.
            let next = super::plan(dev, job.target)?;
            super::run(dev, &next)
        }
        _ => Ok(()),
    }
}
