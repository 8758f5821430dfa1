//! Re-cluster: change the cluster size of an exFAT volume that holds data,
//! in place, with every file intact whenever the power goes (the `recluster`
//! feature).
//!
//! ```text
//!  medium ─► read_volume (VolumeModel + entry sets) ─► state on the medium
//!         ─► plan_from (pure: new geometry, copies, bytes, space, refusals)
//!         ─► run: 1 intent record, flush          (space neither volume uses)
//!                 2 VolumeDirty on the old boot sector, flush
//!                 3 new FAT, new bitmap, a copy of every directory (its
//!                   entries up to the last in use), flush
//!                                                 (space the old volume does not use)
//!                 4 backup boot region (new), flush     ◄─ the switch
//!                   main boot region (new, dirty), flush
//!                 5 VolumeDirty cleared, flush; intent record zeroed, flush
//! ```
//!
//! The case done: a smaller cluster size that divides the old one. The heap
//! keeps its offset, so no file data moves (see [`plan_from`]); unless the
//! new FAT does not fit the gap before the heap: then the heap's start
//! moves forward by whole old clusters, and a first phase, the evacuation
//! (`evac.rs`), empties those clusters at the old cluster size and switches
//! to that intermediate volume (its own intent record, at sector 24);
//! steps 1..=5 then run on it. Both phases write only space the volume
//! they start from does not use and switch through the boot region, so the
//! crash-safety argument below holds for each; the record's phase says
//! which one a rerun continues. Clusters the FAT marks bad are carried
//! over (`bad.rs`): each bad old cluster is its new clusters, marked bad,
//! and no copy of either phase is written to one.
//!
//! FAT volumes take their own path (`fat/`, its module docs): the new
//! FATs go into free clusters (a larger size, FAT32: over the old FATs
//! past the first, `fat/coarse.rs`), the reserved sectors grow over the
//! old FATs, and the switch is sector 0; FAT12/16's fixed root region
//! moves with the FATs and their intent record is in old free space
//! (`fat/small.rs`).
//!
//! A larger size, `k` times the old one (`coarse.rs`): the heap keeps its
//! offset (the plan says whether it is aligned to the new size), so new
//! cluster `j` covers old clusters `2 + (j - 2) * k ..` (a group). A file
//! whose data lies in order in whole groups keeps its place; every other
//! file, the directories and the new bitmap are copied in step 3 into
//! groups wholly free in the old volume (a small file takes a whole new
//! cluster: counted, and refused with how much to free when it does not
//! fit). The new FAT (smaller) goes into the gap, or when the gap is too
//! small over the old FAT's entries of clusters past the last one in use
//! (free in the old bitmap: not read). The old volume's metadata is
//! otherwise untouched, so steps 1..=5 and the argument below hold.
//!
//! Crash safety, under "any subset of the writes since the last flush
//! survives, block by block": until the main boot region changes, the old
//! volume's own bytes are untouched except VolumeDirty (one sector, outside
//! its checksum), so the old volume is valid and authoritative. Directory
//! entries are never updated in place: each directory is copied, rewritten,
//! to clusters the old volume has free, so an entry set that spans two
//! sectors cannot be torn. The backup boot region is written and flushed
//! before the main one; the two differ only in sectors 0 and 11 (sectors
//! 1..=10 are copied), so a torn main region fails its checksum and readers
//! (and the rerun) take the backup, which is the complete new volume.
//!
//! Running the same job again reads the state from the medium:
//! - main boot region at the old size, no intent record: a fresh start;
//! - main at the old size with our intent record (and VolumeDirty): the
//!   job is redone from step 1 (each step writes the same bytes again);
//! - main region torn, backup at the new size with our intent: the main
//!   region is rebuilt from the backup, then step 5;
//! - main at the new size with our intent: step 5;
//! - main at the new size, no intent: nothing to do;
//! - main at the old size with an evacuation's record naming the old
//!   volume: the evacuation is redone; naming the intermediate volume (the
//!   evacuation's switch is done): the re-cluster is planned from it;
//!   main torn, backup the intermediate volume: main rebuilt, then the
//!   re-cluster.

use std::fmt;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, VolumeModel};
use mkfs_alloc_inspect::{read_volumes, ModelOptions};
use mkfs_alloc_ondisk::exfat::BootSector;

mod auto;
mod bad;
mod coarse;
pub mod convert;
mod disk;
mod error;
mod evac;
mod extended;
mod fat;
mod groups;
mod grow;
mod grow_fat;
mod in_place;
mod overlay;
mod plan;
mod refusal;
#[cfg(feature = "serde")]
pub mod report;
mod resize_refusal;
mod run;
mod shrink;
mod shrink_fat;
mod stages;
mod state;
mod table;
#[cfg(test)]
mod tests;
mod text;
mod unfinished;
mod used;

use disk::root_chain_len;

pub use auto::{plan_auto, recommend, AutoChoice};
pub use coarse::Coarse;
pub use error::ReclusterError;
pub use extended::Extended;
pub use fat::{FatLayout, FatRefusal};
pub use grow::{plan_resize, plan_resize_in, resize, Grow, NewSize, ResizeRefusal};
pub use in_place::{Planned, Request, Totals};
pub use plan::{plan_from, DirCopy, Evacuation, ExfatGeometry, Plan, Refusal};
pub use stages::{convert_flush_stages, flush_stages, MAX_SIMULATED_BYTES};
pub use unfinished::{
    unfinished, unfinished_at, unfinished_fat, unfinished_in, unfinished_resize,
    unfinished_resize_in, unfinished_small_fat, Unfinished, UnfinishedRecluster,
};

use state::{Intent, Region};
use zerocopy::FromBytes;

/// What running a [`Job`] will do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// The whole job, from the start.
    Start,
    /// An earlier run was cut before the switch: the job runs again.
    Redo,
    /// An earlier run was cut inside the switch: the main boot region is
    /// rebuilt from the backup, then finished.
    RestoreMain,
    /// An earlier run was cut after the switch: VolumeDirty and the intent
    /// record are cleared.
    Finish,
    /// The volume already has that cluster size.
    Nothing,
    /// A resize's volume already has its new size and only the partition's
    /// entry is left to shrink to it ([`Job::table_after`]: a run cut
    /// after the volume's switch, before or inside the table's write).
    Table,
}

/// A re-cluster ready to run: the plan (none once past the switch) and
/// what the medium says is left to do.
#[derive(Debug, Clone)]
pub struct Job {
    /// What is left.
    pub step: Step,
    /// The plan (`None` for [`Step::RestoreMain`], [`Step::Finish`] and
    /// [`Step::Nothing`]).
    pub plan: Option<Plan>,
    /// Absolute byte offset of the volume.
    pub volume_start: u64,
    sector: u32,
    old_region: Vec<u8>,
    backup: Option<Vec<u8>>,
    serial: u32,
    intent_offset: u64,
    /// The cluster size asked.
    target: u64,
    /// A cut evacuation's switch: the re-cluster follows the restore.
    continues: bool,
    /// A FAT32 volume's job (`None` for exFAT).
    fat: Option<Box<fat::FatJob>>,
    /// A grow's plan ([`plan_resize`]; `None` for a re-cluster and once
    /// past the switch).
    pub grow: Option<Box<Grow>>,
    /// A shrink's partition entry, shrunk to the volume once the volume's
    /// own job (its switch and finish) is done (`None`: no table, or it
    /// does not shrink).
    pub table_after: Option<mkfs_alloc_partition::PartitionGrow>,
}

impl Job {
    /// A job with nothing to do yet, on the volume at `volume_start`.
    fn empty(
        volume_start: u64,
        sector: u32,
        old_region: Vec<u8>,
        target: u64,
        intent: u64,
    ) -> Self {
        Job {
            step: Step::Nothing,
            plan: None,
            volume_start,
            sector,
            old_region,
            backup: None,
            serial: 0,
            intent_offset: intent,
            target,
            continues: false,
            fat: None,
            grow: None,
            table_after: None,
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Start => "start",
            Step::Redo => "redo an unfinished re-cluster (cut before the switch)",
            Step::RestoreMain => "finish an unfinished re-cluster (cut inside the switch)",
            Step::Finish => "finish an unfinished re-cluster (cut after the switch)",
            Step::Nothing => "nothing to do",
            Step::Table => {
                "shrink the partition's entry to its volume (cut after the volume's switch)"
            }
        })
    }
}

impl Step {
    /// The step in a resize's words (its `Display` says re-cluster).
    pub fn resize_text(&self) -> String {
        self.to_string().replace("re-cluster", "resize")
    }
}

/// Reads the one FAT/exFAT volume of `dev` (whole medium or one partition)
/// and plans its re-cluster to `cluster`-byte clusters, from the state the
/// medium is in. Reads only.
///
/// # Errors
///
/// [`ReclusterError::Refused`] with the reason (a damaged volume, a size
/// not supported, too little space), [`ReclusterError::OtherJob`],
/// [`ReclusterError::NoVolume`], or the read error.
pub fn plan<D: BlockIo + ?Sized>(dev: &mut D, cluster: u64) -> Result<Job, ReclusterError> {
    let read = read_one(dev)?;
    plan_read(dev, read, cluster)
}

/// [`plan`] from the volume's reading.
fn plan_read<D: BlockIo + ?Sized>(
    dev: &mut D,
    (mut model, dirs, file_sizes): Read,
    cluster: u64,
) -> Result<Job, ReclusterError> {
    let g = &model.geometry;
    if g.kind != mkfs_alloc_inspect::FsKind::Exfat {
        return fat::plan(dev, &model, &dirs, &file_sizes, cluster);
    }
    let s = g.sector_size;
    let region_len = usize::try_from(12 * u64::from(s)).unwrap_or(0);
    let mut main = vec![0u8; region_len];
    disk::read_at(dev, g.start, &mut main)?;
    let mut backup = vec![0u8; region_len];
    disk::read_at(dev, g.start + 12 * u64::from(s), &mut backup)?;
    let (main, backup) = (Region::new(main, s), Region::new(backup, s));
    // The record is before the heap, or (the heap's start moving) at
    // sector 24 when the FAT starts later.
    let mut intent_offset = g.data_offset - u64::from(s);
    let mut sector = vec![0u8; s as usize];
    disk::read_at(dev, intent_offset, &mut sector)?;
    let mut intent = Intent::read(&sector);
    if intent.is_none() && g.fat_offset - g.start > 24 * u64::from(s) {
        intent_offset = g.start + 24 * u64::from(s);
        disk::read_at(dev, intent_offset, &mut sector)?;
        intent = Intent::read(&sector);
    }
    let shift = u8::try_from((cluster / u64::from(s).max(1)).trailing_zeros()).unwrap_or(0);
    ReclusterError::other_kind(intent.as_ref())?;
    let mut job = Job::empty(g.start, s, main.bytes.clone(), cluster, intent_offset);
    let boot = |r: &Region| r.boot().cloned();
    let main_boot: Option<BootSector> = if main.valid { boot(&main) } else { None };
    let Some(mb) = main_boot else {
        // A torn main region: ours only if the backup is the new volume our
        // intent record names.
        let ours = backup.valid
            && intent
                .as_ref()
                .zip(boot(&backup))
                .is_some_and(|(i, b)| i.is_new(&b));
        if !ours {
            let finding =
                model
                    .refusal()
                    .cloned()
                    .unwrap_or(mkfs_alloc_inspect::Finding::MainBootRegion {
                        why: "the main boot region is damaged".into(),
                    });
            return Err(ReclusterError::Refused(Refusal::Damaged { finding }));
        }
        job.step = Step::RestoreMain;
        job.continues = intent.as_ref().is_some_and(Intent::evacuating);
        job.backup = Some(backup.bytes);
        return Ok(job);
    };
    job.serial = mb.volume_serial_number.get();
    if u64::from(s) << mb.sectors_per_cluster_shift == cluster {
        if intent
            .as_ref()
            .is_some_and(|i| i.is_new(&mb) && !i.evacuating())
        {
            job.step = Step::Finish;
        }
        return Ok(job);
    }
    // A record is ours only if it was written for this old volume (or, an
    // evacuation's, for the intermediate volume it switched to); a stale
    // one (another volume once at this heap offset) is ignored and
    // overwritten.
    let ours = intent
        .as_ref()
        .filter(|i| i.is_old(&mb) || (i.evacuating() && i.is_new(&mb)));
    if let Some(i) = ours.filter(|i| i.target_shift() != shift) {
        return Err(ReclusterError::OtherJob {
            cluster: u64::from(s) << i.target_shift(),
        });
    }
    let allow_dirty = ours.is_some();
    let bad = bad::find(dev, &model)?;
    bad::reserve(&mut model, &bad);
    let root_clusters = root_chain_len(dev, &model)?;
    // Every directory read once more, to its end marker: the entries this
    // job does not know are refused here, before the first write.
    let in_use = used::measure(dev, &model, &dirs, root_clusters)?;
    let mut p = match plan_from(
        &model,
        &dirs,
        &file_sizes,
        root_clusters,
        &in_use,
        cluster,
        allow_dirty,
    ) {
        // Every other check passed: a larger size, planned by `coarse`.
        Err(Refusal::LargerNotSupported { .. }) if bad.is_empty() => {
            coarse::plan(dev, &model, &dirs, root_clusters, cluster)?
        }
        Err(Refusal::LargerNotSupported { .. }) => {
            return Err(ReclusterError::Refused(Refusal::Unsupported {
                what: format!(
                    "a larger cluster size on a volume with bad clusters ({})",
                    bad.len()
                ),
            }))
        }
        other => other.map_err(ReclusterError::Refused)?,
    };
    bad::carry(&mut p, bad).map_err(ReclusterError::Refused)?;
    if p.evacuate.is_some() {
        count_evacuation(dev, &mut p, &model, &dirs, root_clusters)?;
    }
    // Before the switch the old volume is authoritative: a record whose new
    // geometry differs from this plan (the volume was written to between
    // the cut and this run) is simply written again with this plan.
    job.step = if allow_dirty { Step::Redo } else { Step::Start };
    job.plan = Some(p);
    Ok(job)
}

/// Runs `job` on `dev` (the medium [`plan`] read).
///
/// # Errors
///
/// The first write or flush that fails; the medium is then in a state the
/// same job, planned and run again, finishes.
pub fn run<D: BlockIo + ?Sized>(dev: &mut D, job: &Job) -> Result<(), ReclusterError> {
    run_volume(dev, job)?;
    // Past the volume's switch: a smaller entry holds the smaller volume,
    // and a cut before it leaves that volume in its larger partition.
    if let Some(t) = &job.table_after {
        t.write(dev).map_err(table::partition_error)?;
    }
    Ok(())
}

/// [`run`] without the table's write after it.
fn run_volume<D: BlockIo + ?Sized>(dev: &mut D, job: &Job) -> Result<(), ReclusterError> {
    if let Some(f) = &job.fat {
        return fat::run(dev, job, f);
    }
    match job.step {
        Step::Nothing | Step::Table => Ok(()),
        Step::Finish => run::finish(dev, job.volume_start, job.sector, job.intent_offset),
        Step::RestoreMain => {
            let Some(b) = &job.backup else {
                return Ok(());
            };
            let region = Region::new(b.clone(), job.sector);
            run::restore_main(dev, job.volume_start, &region)?;
            if job.continues {
                return run_next(dev, job.target);
            }
            run::finish(dev, job.volume_start, job.sector, job.intent_offset)
        }
        Step::Start | Step::Redo => {
            if let Some(g) = &job.grow {
                return grow::run(dev, job, g);
            }
            let Some(plan) = &job.plan else {
                return Ok(());
            };
            if plan.coarse.is_some() {
                return coarse::run(dev, job, plan);
            }
            if plan.evacuate.is_some() {
                evacuate(dev, job, plan)?;
                return run_next(dev, job.target);
            }
            run::Executor {
                plan,
                old_region: job.old_region.clone(),
                serial: job.serial,
                dirs: plan
                    .dirs
                    .iter()
                    .map(|d| (d.old_first, (d.new_first, d.bytes)))
                    .collect(),
            }
            .run(dev)
        }
    }
}

/// [`run`], calling `progress(done, total)` after each write with the
/// bytes written so far and the plan's estimate of the whole (`done` never
/// passes `total`; the last call has them equal).
///
/// # Errors
///
/// As [`run`].
pub fn run_with_progress<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), ReclusterError> {
    let total = job.plan.as_ref().map_or(0, |p| p.bytes_written);
    let mut counting = disk::Counting {
        inner: dev,
        done: 0,
        total,
        progress,
    };
    run(&mut counting, job)?;
    (counting.progress)(total, total);
    Ok(())
}

/// After the evacuation's switch: the re-cluster of the intermediate
/// volume, planned from the medium.
fn run_next<D: BlockIo + ?Sized>(dev: &mut D, cluster: u64) -> Result<(), ReclusterError> {
    let next = plan(dev, cluster)?;
    if next.plan.as_ref().is_some_and(|p| p.evacuate.is_some()) {
        return Err(ReclusterError::unsupported(
            "the heap's first clusters are still in use after their evacuation".into(),
        ));
    }
    run(dev, &next)
}

/// The evacuation's figures (a run that only reads), and the check that
/// the free space holds it and the re-cluster after it.
fn count_evacuation<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &mut Plan,
    model: &VolumeModel,
    dirs: &[EntrySet],
    root_clusters: u64,
) -> Result<(), ReclusterError> {
    let out = evac::Evac {
        plan: p,
        used: &model.used,
        bitmap_bytes: model.bitmap.map_or(0, |b| b.1),
        dirs,
        root_clusters,
        write: false,
        shrink_to: None,
    }
    .execute(dev)?;
    let co = p.old.cluster_size;
    let lim = 2 + out.figures.clusters;
    let free = (lim..=p.old.cluster_count + 1)
        .filter(|&c| !model.used.get(c))
        .count() as u64
        * co;
    // The re-cluster then needs its bitmap and the directory copies.
    let later = p.bitmap.1.div_ceil(co) * co + p.dirs.iter().map(|d| d.bytes).sum::<u64>();
    let need = out.figures.allocated + later;
    if need > free {
        return Err(ReclusterError::Refused(Refusal::TooLittleSpace {
            need,
            free,
        }));
    }
    p.clusters_moved = out.figures.moved;
    p.bytes_read += out.figures.bytes_read;
    p.bytes_written += out.figures.bytes_written + 26 * u64::from(p.sector_size);
    p.evacuate = Some(out.figures);
    Ok(())
}

/// The evacuation and its switch (module docs of `evac`).
fn evacuate<D: BlockIo + ?Sized>(dev: &mut D, job: &Job, p: &Plan) -> Result<(), ReclusterError> {
    let (model, dirs, _) = read_one(dev)?;
    let root_clusters = root_chain_len(dev, &model)?;
    let s = p.sector_size;
    let e = evac::Evac {
        plan: p,
        used: &model.used,
        bitmap_bytes: model.bitmap.map_or(0, |b| b.1),
        dirs: &dirs,
        root_clusters,
        write: true,
        shrink_to: None,
    };
    // The intermediate root is known only once counted: the record names it.
    let counted = evac::Evac { write: false, ..e }.execute(dev)?;
    let inter = ExfatGeometry {
        root_cluster: counted.root,
        ..p.old
    };
    let intent = Intent::between(s, job.serial, &p.old, &inter, Some(job.target));
    disk::write_at(dev, p.volume_start + p.intent_offset, &intent.sector(s))?;
    dev.flush()?;
    let mut sector0 = job.old_region[..s as usize].to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut sector0) {
        state::set_dirty(b, true);
    }
    disk::write_at(dev, p.volume_start, &sector0)?;
    dev.flush()?;
    let out = e.execute(dev)?;
    dev.flush()?;
    let backup = state::root_region(&job.old_region, s, out.root, false, out.percent);
    disk::write_at(dev, p.volume_start + 12 * u64::from(s), &backup)?;
    dev.flush()?;
    let main = state::root_region(&job.old_region, s, out.root, true, out.percent);
    disk::write_at(dev, p.volume_start, &main)?;
    dev.flush()?;
    Ok(())
}

/// [`plan`] then [`run`]: the whole job, or what is left of it.
///
/// # Errors
///
/// As [`plan`] and [`run`].
pub fn recluster<D: BlockIo + ?Sized>(dev: &mut D, cluster: u64) -> Result<Job, ReclusterError> {
    let job = plan(dev, cluster)?;
    run(dev, &job)?;
    Ok(job)
}

/// The model of the medium's one volume, its directories' entry sets and
/// its files' sizes.
pub(super) type Read = (VolumeModel, Vec<EntrySet>, Vec<u64>);

/// Reads the medium's one volume ([`Read`]).
fn read_one<D: BlockIo + ?Sized>(dev: &mut D) -> Result<Read, ReclusterError> {
    read_one_with(dev, &mut |_| {})
}

/// [`read_one`], handing every entry set to `also` too.
pub(crate) fn read_one_with<D: BlockIo + ?Sized>(
    dev: &mut D,
    also: &mut dyn FnMut(&EntrySet),
) -> Result<Read, ReclusterError> {
    let (mut dirs, mut sizes) = (Vec::new(), Vec::new());
    let mut vols = read_volumes(dev, &ModelOptions::default(), &mut |s| {
        also(s);
        if s.is_dir {
            dirs.push(s.clone());
        } else {
            sizes.push(s.size);
        }
    })?;
    match vols.len() {
        1 => Ok((vols.remove(0)?, dirs, sizes)),
        0 => Err(ReclusterError::NoVolume(
            "no exFAT or FAT volume on the medium".into(),
        )),
        n => Err(ReclusterError::NoVolume(format!(
            "{n} FAT/exFAT volumes on the medium: re-cluster one partition at a time"
        ))),
    }
}
