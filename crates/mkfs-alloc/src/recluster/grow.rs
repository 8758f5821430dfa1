//! Grow: an exFAT volume made larger in place, into the space after it on
//! the medium (the `resize` command), by the same engine as the
//! re-cluster: the reader's model, a pure plan, new metadata written only
//! into space the old volume does not use, the intent record, one switch
//! through the boot region, and the same [`Job`] and [`Step`]s, so a cut
//! run is finished by the same command.
//!
//! ```text
//!  old: | boot | .. | FAT | gap ...... | heap (N clusters)            | unused tail |
//!  new: | boot | .. | FAT ...... |(rec)| heap (N clusters, kept) | new clusters ... |
//! ```
//!
//! No cluster is renumbered and no file data moves: the heap keeps its
//! offset and cluster size, clusters `N + 2 ..` are new. What changes:
//! - VolumeLength and ClusterCount (boot region, checksum, backup region);
//! - FatLength, when the FAT's new entries pass its end: it grows into the
//!   gap before the heap (refused, naming the largest size that fits, when
//!   the gap is too small: the heap's start would have to move, which
//!   renumbers every cluster);
//! - a new allocation bitmap (`ceil(N' / 8)` bytes: the Linux driver
//!   insists on that exact length) and a copy of the root directory
//!   whose bitmap entry names it, both in one run of clusters that are free
//!   in the old volume or new; the old bitmap and the old root become free.
//!
//! Writes, in the re-cluster's order (module docs of [`super`]): the intent
//! record (phase 2), flushed; VolumeDirty on the old main boot sector,
//! flushed; the FAT's new entries (zero, and the chains of the new bitmap
//! and root), the new bitmap, the root's copy, flushed; the backup boot
//! region, flushed; the main one, flushed (the switch); VolumeDirty
//! cleared and the record zeroed. The old volume's own bytes are never
//! changed before the switch except VolumeDirty: its FAT sectors that the
//! new entries share are rewritten with their old entries unchanged.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{Finding, VolumeModel};
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_ondisk::exfat::BootSector;
use zerocopy::little_endian::{U32, U64};
use zerocopy::FromBytes;

use super::disk::{for_each_entry, read_at, write_at, DirEntry, FatReader, FatWriter};
use super::plan::{is_volume_dirty, ExfatGeometry, MAX_CLUSTERS};
use super::refusal::refuse_findings;
use super::state::{region_with, set_dirty, Intent, Region};
use super::table::asked_bytes;
use super::{Job, ReclusterError, Refusal, Step};
use mkfs_alloc_partition::PartitionGrow;

/// The size a resize goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewSize {
    /// This many bytes of volume (rounded down to whole sectors).
    Bytes(u64),
    /// To the end of the medium.
    Max,
}

pub use super::resize_refusal::ResizeRefusal;

/// A grow, planned (the volume's old and new geometry, where the new
/// bitmap and the root's copy go, the figures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grow {
    /// The file system (exFAT or FAT32).
    pub fs: FsKind,
    /// Absolute byte offset of the volume on the medium.
    pub volume_start: u64,
    /// Bytes per sector.
    pub sector_size: u32,
    /// Bytes of the volume now (VolumeLength).
    pub old_bytes: u64,
    /// Bytes of the volume after the switch.
    pub new_bytes: u64,
    /// The geometry now.
    pub old: ExfatGeometry,
    /// The geometry after the switch (the same heap and cluster size).
    pub new: ExfatGeometry,
    /// The new allocation bitmap (first cluster, bytes).
    pub bitmap: (u32, u64),
    /// Clusters of the root directory (its copy starts at `new.root_cluster`).
    pub root_clusters: u32,
    /// Offset of the intent record in the volume.
    pub intent_offset: u64,
    /// Bytes the job reads.
    pub bytes_read: u64,
    /// Bytes the job writes.
    pub bytes_written: u64,
    /// Free bytes now.
    pub free_before: u64,
    /// Free bytes after the switch.
    pub free_after: u64,
    /// Clusters whose data is copied (a shrink's, from past its new end;
    /// 0 for a grow).
    pub moved_clusters: u64,
    /// exFAT: the old bitmap's clusters, then the old root's (free
    /// afterwards).
    pub(super) old_chains: (Vec<u32>, Vec<u32>),
    /// FAT32: what its run needs (`None` for exFAT).
    pub(super) fat: Option<super::grow_fat::FatGrow>,
    /// The partition the volume is in, grown first (`None`: no table).
    pub table: Option<PartitionGrow>,
    /// A shrink's evacuation (`None` for a grow).
    pub(super) shrink: Option<Box<super::shrink::Shrink>>,
}

impl Grow {
    /// A time estimate in seconds on a medium that reads `read_rate` and
    /// writes `write_rate` bytes a second, `flush_secs` for each of the
    /// job's seven flushes (as [`super::Plan::estimate_seconds`]).
    pub fn estimate_seconds(&self, read_rate: f64, write_rate: f64, flush_secs: f64) -> f64 {
        // Byte counts of metadata are far below 2^52: exact in f64.
        let (r, w) = (self.bytes_read as f64, self.bytes_written as f64);
        r / read_rate.max(1.0) + w / write_rate.max(1.0) + 7.0 * flush_secs
    }

    /// [`Grow::estimate_seconds`] on a slow USB stick (the re-cluster's
    /// figures: 20 MB/s reads, 5 MB/s writes, 50 ms a flush).
    pub fn estimate_stick_seconds(&self) -> f64 {
        self.estimate_seconds(20e6, 5e6, 0.05)
    }
}

/// Reads the exFAT volume of `dev` and plans its growth to `size`, from
/// the state the medium is in (an unfinished grow is finished). Reads only.
///
/// # Errors
///
/// [`ReclusterError::Refused`] with the reason ([`Refusal::Resize`], a
/// damaged volume, too little free space), [`ReclusterError::NoVolume`],
/// or the read error.
pub fn plan_resize<D: BlockIo + ?Sized>(dev: &mut D, size: NewSize) -> Result<Job, ReclusterError> {
    plan_resize_in(dev, size, None)
}

/// [`plan_resize`] of the volume in partition `partition` (1-based, as
/// `fdisk` counts; `None`: the medium's one FAT/exFAT volume, in a
/// partition or not). A volume in a partition grows with it: up to the
/// next partition or the medium's end, the table written first
/// ([`Grow::table`]); and shrinks with it: the entry ends at the 1 MiB
/// boundary after the volume's new end, written once the volume's switch
/// is done ([`Job::table_after`]). Reads only.
///
/// # Errors
///
/// As [`plan_resize`]; [`ResizeRefusal::Table`] for a table that is not
/// grown (damaged, another sector size, no room).
pub fn plan_resize_in<D: BlockIo + ?Sized>(
    dev: &mut D,
    size: NewSize,
    partition: Option<u32>,
) -> Result<Job, ReclusterError> {
    let (model, dirs, sizes) = super::table::read_chosen(dev, partition)?;
    let fs_bytes = model.geometry.fs_bytes;
    let table = super::table::partition_of(dev, model.geometry.start)?;
    let room = table.as_ref().map(PartitionGrow::max_bytes);
    let mut job = plan_volume(dev, (model, dirs, sizes), size, room)?;
    let Some(mut t) = table else {
        return Ok(job);
    };
    match job.grow.as_mut() {
        // A grow: the entry first.
        Some(g) if g.new_bytes > g.old_bytes => {
            t.set_new_bytes(g.new_bytes)
                .map_err(super::table::partition_error)?;
            g.table = Some(t);
        }
        // A shrink, or a volume already at its size (a rerun cut after
        // the switch): the entry after the volume, to its new end (or a
        // GPT's primary, cut in that write, rebuilt from the backup).
        _ => {
            t.shrink_to(super::table::bytes_after(&job, fs_bytes));
            if t.shrinks() || t.repairs() {
                if job.step == Step::Nothing {
                    job.step = Step::Table;
                }
                job.table_after = Some(t);
            }
        }
    }
    Ok(job)
}

/// [`plan_resize_in`] of the volume read, in `room` bytes (`None`: to the
/// medium's end).
fn plan_volume<D: BlockIo + ?Sized>(
    dev: &mut D,
    (mut model, dirs, sizes): super::Read,
    size: NewSize,
    room: Option<u64>,
) -> Result<Job, ReclusterError> {
    let g = model.geometry.clone();
    if g.kind == FsKind::Fat32 {
        return super::grow_fat::plan(dev, &model, &dirs, &sizes, size, room);
    }
    if g.kind != FsKind::Exfat {
        return Err(ReclusterError::unsupported(format!(
            "resizing a {:?} volume (exFAT and FAT32 are)",
            g.kind
        )));
    }
    let s = g.sector_size;
    let (main, backup, intent, intent_at) = read_state(dev, &g)?;
    let mut job = Job::empty(g.start, s, main.bytes.clone(), 0, intent_at);
    let main_boot = main.valid.then(|| main.boot().cloned()).flatten();
    let Some(mb) = main_boot else {
        let ours = backup.valid
            && intent
                .as_ref()
                .zip(backup.boot())
                .is_some_and(|(i, b)| i.resizing() && i.is_new(b));
        if !ours {
            let finding = model.refusal().cloned().unwrap_or(
                mkfs_alloc_inspect::model::Finding::MainBootRegion {
                    why: "the main boot region is damaged".into(),
                },
            );
            return Err(ReclusterError::Refused(Refusal::Damaged { finding }));
        }
        job.step = Step::RestoreMain;
        job.backup = Some(backup.bytes);
        return Ok(job);
    };
    job.serial = mb.volume_serial_number.get();
    let ours = intent.as_ref().filter(|i| i.resizing());
    if ours.is_some_and(|i| i.is_new(&mb)) {
        job.step = Step::Finish;
        return Ok(job);
    }
    let allow_dirty = ours.is_some_and(|i| i.is_old(&mb));
    let now = mb.volume_length.get() * u64::from(s);
    let asked = asked_bytes(dev, g.start, s, size, now, (room, true))?;
    // A shrink finds the bad clusters itself (refused past the new end).
    let known = |f: &Finding| {
        (allow_dirty && is_volume_dirty(f))
            || (asked < now && matches!(f, Finding::BadClusters { .. }))
    };
    refuse_findings(&model, known).map_err(ReclusterError::Refused)?;
    if g.fat_count != 1 {
        return Err(ReclusterError::unsupported(
            "a volume with two FATs (TexFAT)".into(),
        ));
    }
    let old = ExfatGeometry::of(&g, mb.first_cluster_of_root_directory.get());
    if asked < now {
        let p = super::shrink::plan(dev, &mut model, &dirs, old, now, asked)?;
        job.intent_offset = g.start + p.intent_offset;
        job.step = if allow_dirty { Step::Redo } else { Step::Start };
        job.grow = Some(Box::new(p));
        return Ok(job);
    }
    let count = ((asked - old.heap_offset) / old.cluster_size).min(MAX_CLUSTERS);
    if count <= u64::from(old.cluster_count) {
        return Ok(job);
    }
    let mut p = plan_geometry(old, g.start, s, now, asked, count)?;
    place(dev, &model, &mut p)?;
    job.intent_offset = g.start + p.intent_offset;
    job.step = if allow_dirty { Step::Redo } else { Step::Start };
    job.grow = Some(Box::new(p));
    Ok(job)
}

/// The boot regions, the intent record (`None`: none of ours) and where it
/// is or goes (absolute): before the heap, or sector 24 when the grown FAT
/// reaches that sector.
fn read_state<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &mkfs_alloc_inspect::model::Geometry,
) -> Result<(Region, Region, Option<Intent>, u64), ReclusterError> {
    let s = g.sector_size;
    let len = usize::try_from(12 * u64::from(s)).unwrap_or(0);
    let (mut main, mut backup) = (vec![0u8; len], vec![0u8; len]);
    read_at(dev, g.start, &mut main)?;
    read_at(dev, g.start + 12 * u64::from(s), &mut backup)?;
    let mut sector = vec![0u8; s as usize];
    let mut at = g.data_offset - u64::from(s);
    read_at(dev, at, &mut sector)?;
    let mut intent = Intent::read(&sector);
    if intent.is_none() && g.fat_offset - g.start > 24 * u64::from(s) {
        at = g.start + 24 * u64::from(s);
        read_at(dev, at, &mut sector)?;
        intent = Intent::read(&sector);
        if intent.is_none() {
            at = g.data_offset - u64::from(s);
        }
    }
    Ok((Region::new(main, s), Region::new(backup, s), intent, at))
}

/// The new geometry of a grow to `asked` bytes (`count` clusters), the FAT
/// grown into the gap before the heap if it must, and the intent record's
/// place; the placement of the bitmap and the root is [`place`]'s.
fn plan_geometry(
    old: ExfatGeometry,
    start: u64,
    s: u32,
    now: u64,
    asked: u64,
    count: u64,
) -> Result<Grow, ReclusterError> {
    let s64 = u64::from(s);
    let fat_need = ((count + 2) * 4).div_ceil(s64) * s64;
    let fat_bytes = old.fat_bytes.max(fat_need);
    let fat_end = old.fat_offset + fat_bytes;
    let intent_offset = if fat_end + s64 <= old.heap_offset {
        old.heap_offset - s64
    } else if old.fat_offset > 24 * s64 && fat_end <= old.heap_offset {
        24 * s64
    } else {
        let room = old.heap_offset - old.fat_offset;
        let most_clusters = ((room - s64) / 4).saturating_sub(2);
        return Err(ReclusterError::Refused(Refusal::Resize(
            ResizeRefusal::FatFull {
                need: fat_bytes + s64,
                room,
                most: old.heap_offset + most_clusters * old.cluster_size,
            },
        )));
    };
    let count32 = u32::try_from(count).unwrap_or(u32::MAX);
    Ok(Grow {
        fs: FsKind::Exfat,
        volume_start: start,
        sector_size: s,
        old_bytes: now,
        new_bytes: asked,
        old,
        new: ExfatGeometry {
            cluster_count: count32,
            fat_bytes,
            ..old
        },
        bitmap: (0, u64::from(count32).div_ceil(8)),
        root_clusters: 0,
        intent_offset,
        bytes_read: 0,
        bytes_written: 0,
        free_before: 0,
        free_after: 0,
        moved_clusters: 0,
        old_chains: (Vec::new(), Vec::new()),
        fat: None,
        table: None,
        shrink: None,
    })
}

/// Reads the old bitmap's and root's chains and places the new bitmap and
/// the root's copy in one run of clusters free in the old volume or new
/// (the new clusters first); the figures.
fn place<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    p: &mut Grow,
) -> Result<(), ReclusterError> {
    let (cs, s) = (p.old.cluster_size, u64::from(p.sector_size));
    let mut fat = FatReader::new(p.volume_start + p.old.fat_offset, p.old.fat_bytes);
    let (bm_first, bm_bytes) = model
        .bitmap
        .ok_or_else(|| ReclusterError::unsupported("a volume without a bitmap entry".into()))?;
    let bm = chain(
        dev,
        &mut fat,
        p.old.cluster_count,
        bm_first,
        bm_bytes.div_ceil(cs),
    )?;
    let root = chain(
        dev,
        &mut fat,
        p.old.cluster_count,
        p.old.root_cluster,
        u64::MAX,
    )?;
    let kb = p.bitmap.1.div_ceil(cs);
    let kr = root.len() as u64;
    let need = kb + kr;
    let (old_n, new_n) = (
        u64::from(p.old.cluster_count),
        u64::from(p.new.cluster_count),
    );
    let free = |c: u64| c > old_n + 1 || !model.used.get(u32::try_from(c).unwrap_or(0));
    let first = if new_n - old_n >= need {
        Some(old_n + 2)
    } else {
        let mut run = 0u64;
        (2..=new_n + 1)
            .find(|&c| {
                run = if free(c) { run + 1 } else { 0 };
                run == need
            })
            .map(|end| end + 1 - need)
    };
    let Some(first) = first else {
        let free_now = model.free_clusters * cs;
        return Err(ReclusterError::Refused(Refusal::TooLittleSpace {
            need: need * cs,
            free: free_now + (new_n - old_n) * cs,
        }));
    };
    let first = u32::try_from(first).unwrap_or(u32::MAX);
    p.bitmap.0 = first;
    p.root_clusters = u32::try_from(kr).unwrap_or(u32::MAX);
    p.new.root_cluster = first + u32::try_from(kb).unwrap_or(0);
    let used_after = model.allocated_clusters + need - (bm.len() as u64 + kr);
    p.free_before = model.free_clusters * cs;
    p.free_after = (new_n - used_after.min(new_n)) * cs;
    p.bytes_read = 24 * s + (bm.len() as u64 + kr) * cs;
    let fat_tail = p.new.fat_bytes - (old_n + 2) * 4 / s * s;
    p.bytes_written = 28 * s + fat_tail + need * cs;
    p.old_chains = (bm, root);
    Ok(())
}

/// The clusters of the chain from `first` (at most `limit` of them), every
/// one inside the heap of `count` clusters.
fn chain<D: BlockIo + ?Sized>(
    dev: &mut D,
    fat: &mut FatReader,
    count: u32,
    first: u32,
    limit: u64,
) -> Result<Vec<u32>, ReclusterError> {
    let mut out = Vec::new();
    let mut c = first;
    while (out.len() as u64) < limit && (2..=count + 1).contains(&c) {
        if out.len() > count as usize {
            break;
        }
        out.push(c);
        c = fat.get(dev, c)?;
    }
    if out.is_empty() || (limit != u64::MAX && out.len() as u64 != limit) {
        return Err(ReclusterError::unsupported(format!(
            "a metadata chain from cluster {first} that leaves the heap"
        )));
    }
    Ok(out)
}

/// Runs a planned grow (steps of the module docs); `job` holds the old
/// main boot region.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    p: &Grow,
) -> Result<(), ReclusterError> {
    if let Some(t) = &p.table {
        t.write(dev).map_err(super::table::partition_error)?;
    }
    if let Some(f) = &p.fat {
        return super::grow_fat::run(dev, job, p, f);
    }
    if let Some(sh) = &p.shrink {
        return super::shrink::run(dev, job, p, sh);
    }
    let s = p.sector_size;
    let intent = Intent::resize(s, job.serial, &p.old, &p.new);
    write_at(dev, p.volume_start + p.intent_offset, &intent.sector(s))?;
    dev.flush()?;
    let mut sector0 = job.old_region[..s as usize].to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut sector0) {
        set_dirty(b, true);
    }
    write_at(dev, p.volume_start, &sector0)?;
    dev.flush()?;
    let percent = write_metadata(dev, p)?;
    dev.flush()?;
    let length = Some(p.new_bytes / u64::from(s));
    let backup = region_with(&job.old_region, s, &p.new, length, false, percent);
    write_at(dev, p.volume_start + 12 * u64::from(s), &backup)?;
    dev.flush()?;
    let main = region_with(&job.old_region, s, &p.new, length, true, percent);
    write_at(dev, p.volume_start, &main)?;
    dev.flush()?;
    super::run::finish(dev, p.volume_start, s, p.volume_start + p.intent_offset)
}

/// The FAT's new entries, the new bitmap and the root's copy; returns the
/// new PercentInUse.
fn write_metadata<D: BlockIo + ?Sized>(dev: &mut D, p: &Grow) -> Result<u8, ReclusterError> {
    let (cs, s) = (p.new.cluster_size, u64::from(p.sector_size));
    let at = |c: u32| p.volume_start + p.new.heap_offset + u64::from(c - 2) * cs;
    let (old_n, new_n) = (p.old.cluster_count, p.new.cluster_count);
    // The FAT: whole sectors past the old entries zeroed, the entries of
    // the sector they share set one by one; then the two chains.
    let base = p.volume_start + p.new.fat_offset;
    let full = (u64::from(old_n) + 2) * 4;
    let full = full.div_ceil(s) * s;
    let bs = u64::from(dev.block_size());
    if full < p.new.fat_bytes {
        dev.write_zeroes((base + full) / bs, (p.new.fat_bytes - full) / bs)?;
    }
    let mut fat = FatWriter::open(base, p.new.fat_bytes);
    let shared_end = u32::try_from(full / 4).unwrap_or(u32::MAX).min(new_n + 2);
    for n in old_n + 2..shared_end {
        fat.set(dev, n, 0)?;
    }
    let kb = u32::try_from(p.bitmap.1.div_ceil(cs)).unwrap_or(0);
    let b0 = p.bitmap.0;
    let r0 = p.new.root_cluster;
    fat.chain(dev, b0..b0 + kb)?;
    fat.chain(dev, r0..r0 + p.root_clusters)?;
    fat.write_back(dev)?;
    // The bitmap: the old one's bits, the old bitmap and root freed, the
    // new ones set.
    let mut bits = vec![0u8; usize::try_from(u64::from(kb) * cs).unwrap_or(0)];
    let old_len = usize::try_from(u64::from(old_n).div_ceil(8)).unwrap_or(0);
    let (old_bm, old_root) = &p.old_chains;
    let mut cluster = vec![0u8; usize::try_from(cs).unwrap_or(0)];
    for (i, &c) in old_bm.iter().enumerate() {
        read_at(dev, at(c), &mut cluster)?;
        let from = i * cluster.len();
        let n = cluster.len().min(old_len.saturating_sub(from));
        bits[from..from + n].copy_from_slice(&cluster[..n]);
    }
    let bit = |bits: &mut [u8], c: u32, on: bool| {
        let i = (c - 2) as usize;
        if let Some(b) = bits.get_mut(i / 8) {
            if on {
                *b |= 1 << (i % 8);
            } else {
                *b &= !(1 << (i % 8));
            }
        }
    };
    for c in u64::from(old_n)..old_len as u64 * 8 {
        bit(&mut bits, u32::try_from(c).unwrap_or(0) + 2, false);
    }
    for &c in old_bm.iter().chain(old_root) {
        bit(&mut bits, c, false);
    }
    for c in b0..r0 + p.root_clusters {
        bit(&mut bits, c, true);
    }
    write_at(dev, at(b0), &bits)?;
    let set: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
    write_root(dev, p, &at)?;
    let percent = set * 100 / u64::from(new_n.max(1));
    Ok(u8::try_from(percent).unwrap_or(100))
}

/// The root directory's copy, its bitmap entry naming the new bitmap.
fn write_root<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &Grow,
    at: &dyn Fn(u32) -> u64,
) -> Result<(), ReclusterError> {
    let cs = usize::try_from(p.new.cluster_size).unwrap_or(0);
    let root = &p.old_chains.1;
    let mut buf = vec![0u8; root.len() * cs];
    for (i, &c) in root.iter().enumerate() {
        read_at(dev, at(c), &mut buf[i * cs..(i + 1) * cs])?;
    }
    let past_end = || ReclusterError::unsupported("/: an entry set past the root's end".into());
    for_each_entry(&mut buf, past_end, |e| {
        if let DirEntry::Bitmap(e) = e {
            e.first_cluster = U32::new(p.bitmap.0);
            e.data_length = U64::new(p.bitmap.1);
        }
        Ok(())
    })?;
    write_at(dev, at(p.new.root_cluster), &buf)?;
    Ok(())
}

/// [`plan_resize`] then [`super::run`]: the whole grow, or what is left.
///
/// # Errors
///
/// As [`plan_resize`] and [`super::run`].
pub fn resize<D: BlockIo + ?Sized>(dev: &mut D, size: NewSize) -> Result<Job, ReclusterError> {
    let job = plan_resize(dev, size)?;
    super::run(dev, &job)?;
    Ok(job)
}
