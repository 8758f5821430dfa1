//! The FAT12/16 job: its state read from the medium, and its writes.
//!
//! ```text
//!  1 the intent record, twice (small.rs: the old volume's first free
//!    cluster, the new volume's last reserved sector), flush
//!  2 FAT16: the clean bit of FAT[1] cleared in every old FAT, flush
//!  3 copies of the covered file clusters, a rewritten copy of every
//!    subdirectory, the new root region (the old one rewritten), the new
//!    FATs (FAT16: their clean bit clear), flush (old free space only)
//!  4 boot sector (new), flush                               ◄─ the switch
//!  5 FAT16: clean bit set in every new FAT, flush; both records zeroed,
//!    flush
//! ```
//!
//! To a larger size, step 3 is `small_coarse.rs`'s walk instead of the
//! covered copies and the new FATs below; the other steps are the same.
//!
//! Running the same job again: a record of ours naming the old volume at
//! its first free cluster redoes the job from step 1 (the same plan: the
//! old volume's allocation has not changed); one naming the new volume at
//! its last reserved sector is step 5; no record: a fresh start (old size)
//! or nothing to do (new size).

use std::collections::HashMap;

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_inspect::model::{EntrySet, VolumeModel};
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_ondisk::fat::{Bpb, Fat16BootSector};
use zerocopy::little_endian::{U16, U64};
use zerocopy::{FromBytes, IntoBytes};

use super::super::disk;
use super::super::plan::{ExfatGeometry, Plan};
use super::super::state::Intent;
use super::super::{Job, ReclusterError, Step};
use super::run::Executor;
use super::small::{plan_small, Spots};
use super::table::Table;
use super::{FatJob, Input};

/// FAT16's clean-shutdown bit in FAT[1] (fatgen103 §4).
const CLEAN16: u32 = 0x8000;
/// Where, after the record, its sector names the old volume's record
/// (its sector number, little-endian).
const OLD_RECORD_AT: usize = 68;

/// What a FAT12/16 job needs besides [`FatJob`].
#[derive(Debug, Clone)]
pub(super) struct Small {
    /// Entry bits: 12 or 16.
    pub(super) bits: u8,
    /// The job's own sectors (from the plan; after the switch only the
    /// two records are known).
    pub(super) spots: Spots,
}

/// Absolute byte of sector `n` of the volume `job` is on.
fn at(job: &Job, n: u64) -> u64 {
    job.volume_start + n * u64::from(job.sector)
}

/// The record in sector `n` (and the old record's sector it names).
fn record<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    n: u64,
) -> Result<Option<(Intent, u64)>, IoError> {
    let mut b = vec![0u8; job.sector as usize];
    disk::read_at(dev, at(job, n), &mut b)?;
    let old = b
        .get(OLD_RECORD_AT..)
        .and_then(|x| U64::read_from_prefix(x).ok())
        .map_or(0, |(v, _)| v.get());
    Ok(Intent::read(&b).map(|i| (i, old)))
}

/// The first sector of the first free cluster of the volume `model`
/// describes (where its record goes), if it has one.
pub(in super::super) fn old_record_sector(model: &VolumeModel) -> Option<u64> {
    let g = &model.geometry;
    let f = (2..=g.cluster_count + 1).find(|&c| !model.used.get(c))?;
    let s = u64::from(g.sector_size);
    Some((g.data_offset - g.start + u64::from(f - 2) * g.cluster_size) / s)
}

/// The cluster size an unfinished re-cluster of the FAT12/16 volume `g`
/// describes goes to, from its record at either place (`small.rs`); the
/// first free cluster is found by reading the FAT.
///
/// # Errors
///
/// The read error.
pub(in super::super) fn unfinished<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &mkfs_alloc_inspect::model::Geometry,
) -> Result<Option<u64>, IoError> {
    let s = u64::from(g.sector_size);
    if g.sector_size < 512 || g.cluster_size < s {
        return Ok(None);
    }
    let bits = if g.kind == FsKind::Fat12 { 12 } else { 16 };
    let reserved = (g.fat_offset - g.start) / s;
    let mut spots = Vec::new();
    if reserved >= 2 {
        spots.push(g.fat_offset - s);
    }
    let mut t = Table::new(g.fat_offset, g.fat_bytes, bits);
    for c in 2..=g.cluster_count.saturating_add(1) {
        if t.get(dev, c)? == 0 {
            spots.push(g.data_offset + u64::from(c - 2) * g.cluster_size);
            break;
        }
    }
    let mut b = vec![0u8; g.sector_size as usize];
    for at in spots {
        disk::read_at(dev, at, &mut b)?;
        if let Some(i) = Intent::read(&b) {
            return Ok(Some(s << i.target_shift()));
        }
    }
    Ok(None)
}

/// [`super::plan`] for a FAT12/16 volume.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    mut job: Job,
    model: &VolumeModel,
    dirs: &[EntrySet],
    file_sizes: &[u64],
) -> Result<Job, ReclusterError> {
    let g = &model.geometry;
    let (s, cluster) = (u64::from(g.sector_size), job.target);
    let bits = if g.kind == FsKind::Fat12 { 12 } else { 16 };
    if let Ok((b, _)) = Fat16BootSector::ref_from_prefix(&job.old_region) {
        job.serial = b.ebpb.vol_id.get();
    }
    let now = ExfatGeometry::of(g, 0);
    let reserved = (g.fat_offset - g.start) / s;
    let fats: Vec<u64> = (0..u64::from(g.fat_count))
        .map(|i| g.fat_offset + i * g.fat_bytes)
        .collect();
    let mut fat = FatJob {
        copies: Vec::new(),
        chains: Vec::new(),
        fs_info: Vec::new(),
        backup_boot: None,
        fats,
        free: (0, 0),
        small: None,
        evac: None,
    };
    let as_new = match reserved {
        0 | 1 => None,
        _ => record(dev, &job, reserved - 1)?,
    }
    .filter(|(i, _)| i.names(job.sector, job.serial, &now, true));
    if let Some((_, old)) = as_new {
        if g.cluster_size != cluster {
            return Err(ReclusterError::OtherJob {
                cluster: g.cluster_size,
            });
        }
        let spots = Spots {
            old_record: old,
            new_record: reserved - 1,
            old_root: 0,
            new_root: 0,
            root_sectors: 0,
        };
        job.step = Step::Finish;
        fat.small = Some(Small { bits, spots });
        job.fat = Some(Box::new(fat));
        return Ok(job);
    }
    if g.cluster_size == cluster {
        return Ok(job);
    }
    let shift = u8::try_from((cluster / s.max(1)).trailing_zeros()).unwrap_or(0);
    let ours = match old_record_sector(model) {
        Some(n) => record(dev, &job, n)?,
        None => None,
    }
    .map(|(i, _)| i)
    .filter(|i| i.names(job.sector, job.serial, &now, false));
    if let Some(i) = ours.as_ref().filter(|i| i.target_shift() != shift) {
        return Err(ReclusterError::OtherJob {
            cluster: s << i.target_shift(),
        });
    }
    let dirs: Vec<EntrySet> = dirs
        .iter()
        .filter(|d| d.is_dir && d.first_cluster != 0)
        .cloned()
        .collect();
    fat.chains.push(Vec::new());
    let mut table = Table::new(g.fat_offset, g.fat_bytes, bits);
    let most = usize::try_from(g.cluster_count).unwrap_or(usize::MAX);
    for d in &dirs {
        let (mut chain, mut c) = (Vec::new(), d.first_cluster);
        while (2..=g.cluster_count + 1).contains(&c) && chain.len() <= most {
            chain.push(c);
            c = table.get(dev, c)?;
        }
        fat.chains.push(chain);
    }
    let input = Input {
        dirs: &dirs,
        chains: &fat.chains,
        file_sizes,
        cluster,
        allow_dirty: ours.is_some(),
    };
    let (p, copies, spots) = if cluster > g.cluster_size {
        let (p, spots) = super::small_coarse::plan(dev, model, &input)?;
        (p, Vec::new(), spots)
    } else {
        plan_small(model, &input).map_err(ReclusterError::Refused)?
    };
    fat.copies = copies;
    fat.small = Some(Small { bits, spots });
    job.intent_offset = spots.old_record * s;
    job.step = if ours.is_some() {
        Step::Redo
    } else {
        Step::Start
    };
    job.plan = Some(p);
    job.fat = Some(Box::new(fat));
    Ok(job)
}

/// Sets (or clears) FAT16's clean bit in the FAT whose first sector is at
/// absolute byte `fat`.
fn set_clean<D: BlockIo + ?Sized>(
    dev: &mut D,
    fat: u64,
    sector: u32,
    clean: bool,
) -> Result<(), IoError> {
    let mut t = Table::new(fat, u64::from(sector), 16);
    let v = t.get(dev, 1)?;
    t.set(dev, 1, if clean { v | CLEAN16 } else { v & !CLEAN16 })?;
    t.write_back(dev)
}

/// Steps 1..=4 of the module docs.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    ex: &Executor<'_>,
    small: &Small,
) -> Result<(), ReclusterError> {
    let (p, job, sp) = (ex.plan, ex.job, &small.spots);
    let s = p.sector_size;
    let mut rec = Intent::between(s, job.serial, &p.old, &p.new, None).sector(s);
    if let Some(x) = rec.get_mut(OLD_RECORD_AT..) {
        let _ = U64::new(sp.old_record).write_to_prefix(x);
    }
    disk::write_at(dev, at(job, sp.old_record), &rec)?;
    disk::write_at(dev, at(job, sp.new_record), &rec)?;
    dev.flush()?;
    if small.bits == 16 {
        for &f in &ex.fat.fats {
            set_clean(dev, f, s, false)?;
        }
        dev.flush()?;
    }
    if p.coarse.is_some() {
        super::small_coarse::write(dev, ex, small)?;
    } else {
        ex.copy_covered(dev)?;
        new_fats(dev, ex, small)?;
    }
    dev.flush()?;
    let mut boot = job.old_region.clone();
    if let Ok((b, _)) = Bpb::mut_from_prefix(&mut boot) {
        let su = u64::from(s);
        b.sec_per_clus = u8::try_from(p.new.cluster_size / su).unwrap_or(0);
        b.rsvd_sec_cnt = U16::new(u16::try_from(p.new.fat_offset / su).unwrap_or(0));
        b.fat_sz16 = U16::new(u16::try_from(p.new.fat_bytes / su).unwrap_or(0));
    }
    disk::write_at(dev, p.volume_start, &boot)?;
    dev.flush()?;
    Ok(())
}

/// The new root region, the directory copies and the new FATs (the first
/// written entry by entry, then copied).
fn new_fats<D: BlockIo + ?Sized>(
    dev: &mut D,
    ex: &Executor<'_>,
    small: &Small,
) -> Result<(), ReclusterError> {
    let (p, sp) = (ex.plan, &small.spots);
    let s = u64::from(p.sector_size);
    let fats = u64::from(p.fat.as_ref().map_or(1, |f| f.fat_count));
    let base = p.volume_start + p.new.fat_offset;
    let (mut old, mut w) = open_new(dev, p, small.bits)?;
    let dirs: HashMap<u32, u32> = p.dirs.iter().map(|d| (d.old_first, d.new_first)).collect();
    let mut root = vec![0u8; usize::try_from(sp.root_sectors * s).unwrap_or(0)];
    disk::read_at(dev, p.volume_start + sp.old_root * s, &mut root)?;
    let files = ex.rewrite(&mut root, &dirs, "/")?;
    disk::write_at(dev, p.volume_start + sp.new_root * s, &root)?;
    for (first, size) in files {
        file_chain(dev, ex, &mut old, &mut w, first, size, "/")?;
    }
    let per = p.old.cluster_size / p.new.cluster_size;
    let old_c = usize::try_from(p.old.cluster_size).unwrap_or(0);
    for (d, chain) in p.dirs.iter().zip(&ex.fat.chains).skip(1) {
        let mut buf = vec![0u8; chain.len() * old_c];
        for (piece, &c) in buf.chunks_exact_mut(old_c.max(1)).zip(chain) {
            disk::read_at(dev, ex.old_at(c), piece)?;
        }
        let files = ex.rewrite(&mut buf, &dirs, &d.path)?;
        disk::write_at(dev, ex.new_at(d.new_first), &buf)?;
        let n = u32::try_from(chain.len() as u64 * per).unwrap_or(0);
        let eoc = w.eoc();
        for c in d.new_first..d.new_first + n {
            w.set(dev, c, if c + 1 == d.new_first + n { eoc } else { c + 1 })?;
        }
        for (first, size) in files {
            file_chain(dev, ex, &mut old, &mut w, first, size, &d.path)?;
        }
    }
    w.write_back(dev)?;
    let mut fat = vec![0u8; usize::try_from(p.new.fat_bytes).unwrap_or(0)];
    disk::read_at(dev, base, &mut fat)?;
    for copy in 1..fats {
        disk::write_at(dev, base + copy * p.new.fat_bytes, &fat)?;
    }
    Ok(())
}

/// The old FAT and the new FATs zeroed, the first opened with entries 0
/// and 1 the old FAT's (FAT16: the clean bit clear).
pub(super) fn open_new<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &Plan,
    bits: u8,
) -> Result<(Table, Table), IoError> {
    let bs = u64::from(dev.block_size());
    let fats = u64::from(p.fat.as_ref().map_or(1, |f| f.fat_count));
    let base = p.volume_start + p.new.fat_offset;
    dev.write_zeroes(base / bs, fats * p.new.fat_bytes / bs)?;
    let mut old = Table::new(p.volume_start + p.old.fat_offset, p.old.fat_bytes, bits);
    let mut w = Table::new(base, p.new.fat_bytes, bits);
    let media = old.get(dev, 0)?;
    let one = old.get(dev, 1)?;
    w.set(dev, 0, media)?;
    w.set(dev, 1, if bits == 16 { one & !CLEAN16 } else { one })?;
    Ok((old, w))
}

/// A file's new chain: its old chain's clusters, each as the new clusters
/// it is, as many as its size needs.
fn file_chain<D: BlockIo + ?Sized>(
    dev: &mut D,
    ex: &Executor<'_>,
    old: &mut Table,
    w: &mut Table,
    first: u32,
    size: u64,
    path: &str,
) -> Result<(), ReclusterError> {
    let p: &Plan = ex.plan;
    let need = size.div_ceil(p.new.cluster_size);
    let (mut c, mut done, mut prev) = (first, 0u64, None);
    let broken = || {
        ReclusterError::unsupported(format!(
            "a file of {path} whose chain changed since it was read"
        ))
    };
    while done < need {
        if !(2..=p.old.cluster_count + 1).contains(&c) {
            return Err(broken());
        }
        let b = ex.map(c).ok_or_else(broken)?;
        for n in b..b + p.ratio {
            if done == need {
                break;
            }
            if let Some(q) = prev {
                w.set(dev, q, n)?;
            }
            prev = Some(n);
            done += 1;
        }
        if done < need {
            c = old.get(dev, c)?;
        }
    }
    if let Some(q) = prev {
        let eoc = w.eoc();
        w.set(dev, q, eoc)?;
    }
    Ok(())
}

/// Step 5: FAT16's clean bit set in every new FAT, flush; both records
/// zeroed, flush.
pub(super) fn finish<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    fat: &FatJob,
    small: &Small,
) -> Result<(), ReclusterError> {
    if small.bits == 16 {
        for &f in &fat.fats {
            set_clean(dev, f, job.sector, true)?;
        }
        dev.flush()?;
    }
    let zero = vec![0u8; job.sector as usize];
    let reserved = fat
        .fats
        .first()
        .map_or(0, |&f| (f - job.volume_start) / u64::from(job.sector));
    // The old record is in the reserved sectors (it was named by our own
    // record; anything else is left alone).
    // Zeroed first: the new one names it until then.
    if (1..reserved).contains(&small.spots.old_record) {
        disk::write_at(dev, at(job, small.spots.old_record), &zero)?;
        dev.flush()?;
    }
    disk::write_at(dev, at(job, small.spots.new_record), &zero)?;
    dev.flush()?;
    Ok(())
}
