//! Grow of a FAT32 volume in place, into the space after it: the same
//! engine as the exFAT grow (`grow.rs`) and the FAT32 re-cluster (`fat/`):
//! its intent record (reserved sector 24, phase 2), FAT[1]'s clean bit
//! cleared while unfinished, the switch through the boot sector (after its
//! backup) and the FAT path's finish (clean bit set, FSInfo's figures,
//! record zeroed), which a rerun after the switch runs through
//! [`super::plan`].
//!
//! FAT has no field for where the data region starts (it follows the
//! reserved sectors and the FATs), so a larger FATSz32 would move every
//! cluster: the grow uses the FATs' slack only (the entries FATSz32 holds
//! past the last cluster) and is refused, naming the largest size that
//! fits, beyond it. Writes: the record, flushed; the clean bit cleared in
//! every FAT, flushed; the new clusters' entries zeroed in every FAT,
//! FSInfo's hints "unknown" (0xFFFFFFFF, fatgen103 §5), flushed; the
//! backup boot sector, flushed; sector 0 (TotSec32), flushed; the finish.
//! Before the switch the old volume's bytes change only in FAT[1]'s clean
//! bit, FSInfo's hints, the entries past its last cluster (which no reader
//! of the old volume takes) and the backup boot sector.
//!
//! A smaller size is a shrink (`shrink_fat.rs`): the same record, switch
//! and finish, the evacuation's moves in place of the zeroed entries.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, Finding, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_ondisk::fat::Fat32BootSector;
use zerocopy::little_endian::U32;
use zerocopy::FromBytes;

use super::disk::{read_at, write_at, FatWriter};
use super::fat::{moves, ours, set_clean, set_fs_info, Evacuation, Place, INTENT_SECTOR};
use super::grow::{Grow, NewSize, ResizeRefusal};
use super::plan::ExfatGeometry;
use super::refusal::refuse_findings;
use super::state::Intent;
use super::table::asked_bytes;
use super::{Job, ReclusterError, Refusal, Step};

/// The most clusters of FAT32 (the project's limit, README).
const MAX_FAT32: u64 = 268_435_445;

/// What a FAT32 grow's run needs besides [`Grow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FatGrow {
    /// The boot sector as read.
    sector0: Vec<u8>,
    /// The backup boot sector, absolute byte offset.
    backup_boot: Option<u64>,
    /// FSInfo and its backup, absolute byte offsets.
    fs_info: Vec<u64>,
    /// The first byte of every FAT, absolute.
    fats: Vec<u64>,
    /// The volume serial.
    serial: u32,
    /// A shrink's moves (`None`: a grow).
    evac: Option<Evacuation>,
    /// Whether the job is redone after a cut (the FATs made one again).
    rerun: bool,
}

/// [`super::plan_resize`] for a FAT32 volume.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    dirs: &[EntrySet],
    sizes: &[u64],
    size: NewSize,
    room: Option<u64>,
) -> Result<Job, ReclusterError> {
    let g = &model.geometry;
    let RootDir::Cluster(root) = g.root else {
        return Err(ReclusterError::unsupported("resizing FAT12/16".into()));
    };
    let (s, su) = (g.sector_size, u64::from(g.sector_size));
    let mut sector0 = vec![0u8; s as usize];
    read_at(dev, g.start, &mut sector0)?;
    let Ok((b, _)) = Fat32BootSector::ref_from_prefix(&sector0) else {
        return Err(ReclusterError::unsupported("a FAT32 boot sector".into()));
    };
    let serial = b.ebpb.vol_id.get();
    let (info, bk) = (
        u64::from(b.ebpb.fs_info.get()),
        u64::from(b.ebpb.bk_boot_sec.get()),
    );
    let now = u64::from(b.bpb.tot_sec32.get()) * su;
    let reserved = (g.fat_offset - g.start) / su;
    if reserved <= INTENT_SECTOR {
        return Err(ReclusterError::unsupported(format!(
            "{reserved} reserved sectors (the intent record goes at sector {INTENT_SECTOR})"
        )));
    }
    let intent_at = g.start + INTENT_SECTOR * su;
    let mut rec = vec![0u8; s as usize];
    read_at(dev, intent_at, &mut rec)?;
    let intent = Intent::read(&rec).filter(Intent::resizing);
    let old = ExfatGeometry::of(g, root);
    if intent
        .as_ref()
        .is_some_and(|i| i.names(s, serial, &old, true))
    {
        // Past the switch: the FAT path's finish.
        return super::fat::plan(dev, model, dirs, sizes, g.cluster_size);
    }
    let allow = intent
        .as_ref()
        .is_some_and(|i| i.names(s, serial, &old, false));
    if !allow && rec.iter().any(|&x| x != 0) {
        return Err(ReclusterError::unsupported(format!(
            "reserved sector {INTENT_SECTOR}, where the intent record goes, holds data (boot code?)"
        )));
    }
    let asked = asked_bytes(dev, g.start, s, size, now, (room, true))?;
    // A shrink finds the bad clusters itself (refused past the new end).
    let known = |f: &Finding| {
        (allow && ours(f)) || (asked < now && matches!(f, Finding::BadClusters { .. }))
    };
    refuse_findings(model, known).map_err(ReclusterError::Refused)?;
    let data_start = g.data_offset - g.start;
    let by_size = asked.saturating_sub(data_start) / g.cluster_size;
    let fat_holds = (g.fat_bytes / 4).saturating_sub(2).min(MAX_FAT32);
    let mut job = Job::empty(g.start, s, sector0.clone(), 0, intent_at);
    job.serial = serial;
    if by_size > fat_holds {
        return Err(ReclusterError::Refused(Refusal::Resize(
            ResizeRefusal::FatFull {
                need: (by_size + 2) * 4,
                room: g.fat_bytes,
                most: data_start + fat_holds * g.cluster_size,
            },
        )));
    }
    let (count, evac) = if asked < now {
        let (n, ev) = super::shrink_fat::plan(dev, model, dirs, root, asked)?;
        (n, Some(ev))
    } else if by_size <= u64::from(g.cluster_count) {
        return Ok(job);
    } else {
        (u32::try_from(by_size).unwrap_or(u32::MAX), None)
    };
    let in_reserved = |n: u64| n > 0 && n < reserved && n != INTENT_SECTOR;
    let fat = FatGrow {
        sector0,
        backup_boot: in_reserved(bk).then(|| g.start + bk * su),
        fs_info: [info, bk + 1]
            .into_iter()
            .filter(|&n| in_reserved(n) && (n != bk + 1 || in_reserved(bk)))
            .map(|n| g.start + n * su)
            .collect(),
        fats: (0..u64::from(g.fat_count))
            .map(|i| g.fat_offset + i * g.fat_bytes)
            .collect(),
        serial,
        evac,
        rerun: allow,
    };
    let cs = g.cluster_size;
    let tail = g.fat_bytes - (u64::from(g.cluster_count) + 2) * 4 / su * su;
    let fats = u64::from(g.fat_count);
    let moved = fat.evac.as_ref().map_or(0, Evacuation::moved);
    let (bytes_read, bytes_written, free_after) = match &fat.evac {
        // Each move: its cluster read and written, three FAT entries
        // (copy, link, freed) a sector each in every FAT.
        Some(_) => (
            2 * su * (1 + fats) + moved * cs + g.fat_bytes,
            (4 + 2 * fats) * su + moved * (cs + 3 * su * fats),
            (u64::from(count) + model.free_clusters).saturating_sub(u64::from(g.cluster_count))
                * cs,
        ),
        None => (
            2 * su * (1 + fats),
            (8 + 2 * fats) * su + fats * tail,
            (model.free_clusters + u64::from(count - g.cluster_count)) * cs,
        ),
    };
    job.step = if allow { Step::Redo } else { Step::Start };
    job.grow = Some(Box::new(Grow {
        fs: FsKind::Fat32,
        volume_start: g.start,
        sector_size: s,
        old_bytes: now,
        new_bytes: asked,
        old,
        new: ExfatGeometry {
            cluster_count: count,
            ..old
        },
        bitmap: (0, 0),
        root_clusters: 0,
        intent_offset: INTENT_SECTOR * su,
        bytes_read,
        bytes_written,
        free_before: model.free_clusters * cs,
        free_after,
        moved_clusters: moved,
        old_chains: (Vec::new(), Vec::new()),
        fat: Some(fat),
        table: None,
        shrink: None,
    }));
    Ok(job)
}

/// Runs a planned FAT32 grow or shrink (module docs), then the finish
/// planned from the new volume.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    p: &Grow,
    f: &FatGrow,
) -> Result<(), ReclusterError> {
    let s = p.sector_size;
    let intent = Intent::resize(s, f.serial, &p.old, &p.new);
    write_at(dev, job.intent_offset, &intent.sector(s))?;
    dev.flush()?;
    if let Some(ev) = &f.evac {
        let place = Place {
            start: p.volume_start,
            sector: s,
            old: &p.old,
            fats: &f.fats,
            fs_info: &f.fs_info,
        };
        moves(dev, &place, ev, f.rerun)?;
    } else {
        grow_entries(dev, p, f)?;
    }
    switch(dev, p, f)
}

/// A grow's writes before the switch: the clean bits cleared, the new
/// clusters' entries zeroed, FSInfo's hints "unknown".
fn grow_entries<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &Grow,
    f: &FatGrow,
) -> Result<(), ReclusterError> {
    let (s, su) = (p.sector_size, u64::from(p.sector_size));
    for &at in &f.fats {
        set_clean(dev, at, s, false)?;
    }
    dev.flush()?;
    let (old_n, new_n) = (p.old.cluster_count, p.new.cluster_count);
    let full = ((u64::from(old_n) + 2) * 4).div_ceil(su) * su;
    let bs = u64::from(dev.block_size());
    for &at in &f.fats {
        if full < p.old.fat_bytes {
            dev.write_zeroes((at + full) / bs, (p.old.fat_bytes - full) / bs)?;
        }
        let mut w = FatWriter::open(at, p.old.fat_bytes);
        let shared_end = u32::try_from(full / 4).unwrap_or(u32::MAX).min(new_n + 2);
        for n in old_n + 2..shared_end {
            w.set(dev, n, 0)?;
        }
        w.write_back(dev)?;
    }
    for &at in &f.fs_info {
        set_fs_info(dev, at, s, (u32::MAX, u32::MAX))?;
    }
    dev.flush()?;
    Ok(())
}

/// The switch (the backup boot sector, then sector 0, TotSec32 the new
/// size), then the finish planned from the new volume.
fn switch<D: BlockIo + ?Sized>(dev: &mut D, p: &Grow, f: &FatGrow) -> Result<(), ReclusterError> {
    let su = u64::from(p.sector_size);
    let mut boot = f.sector0.clone();
    if let Ok((b, _)) = Fat32BootSector::mut_from_prefix(&mut boot) {
        b.bpb.tot_sec32 = U32::new(u32::try_from(p.new_bytes / su).unwrap_or(u32::MAX));
    }
    if let Some(at) = f.backup_boot {
        write_at(dev, at, &boot)?;
        dev.flush()?;
    }
    write_at(dev, p.volume_start, &boot)?;
    dev.flush()?;
    // Past the switch: the finish, planned from the new volume.
    // (The volume read where it is: the medium may hold others.)
    let read = super::table::read_at_start(dev, p.volume_start, p.new_bytes)?;
    let next = super::plan_read(dev, read, p.new.cluster_size)?;
    super::run(dev, &next)
}
