//! The FAT32 evacuation: when no run of free old clusters within reach of
//! `BPB_RsvdSecCnt` (65,535 sectors) holds the new FATs, or when freeing a
//! window near the start moves fewer clusters than covering everything up
//! to the first free run, the in-use old clusters of a window right after
//! the old FATs are first moved to free old clusters, in the old volume
//! itself; the re-cluster then plans from that volume and puts its FATs
//! into the window, now free.
//!
//! ```text
//!  1 intent record (the job's), flush
//!  2 clean bit of FAT[1] cleared in every FAT, FSInfo's hints "unknown",
//!    flush; on a rerun the first FAT copied over the others, flush
//!  3 files:       copies of their clusters in the window to free clusters,
//!                 each copy's FAT entry as the cluster's, flush
//!                 the entry before each run of copies (a FAT entry, or
//!                 the file's short entry: DIR_FstClusHI:LO) names it, flush
//!                 the window's clusters freed, flush
//!  4 directories: the same for their clusters in the window (never a
//!                 first cluster: the window is chosen without one), and
//!                 the window's lost clusters freed
//! ```
//!
//! A FAT32 shrink (`super::super::shrink_fat`) runs the same moves with
//! the window the clusters past the new end and the copies below it
//! ([`past_end`], [`moves`]); its record is a resize's.
//!
//! Crash safety, under "any subset of the writes since the last flush
//! survives": every FAT's entries change in the same epochs, and any subset
//! of one epoch's writes over the complete earlier ones is a valid volume:
//! a copy is only a lost cluster (allocated, named by nothing) until the
//! entry before it names it; each such entry is one 32-bit value in one
//! sector, and a chain through the copy or through the old cluster holds
//! the same bytes; an old cluster is freed only after that naming was
//! flushed. So the old volume stays valid and authoritative, with every
//! file intact in each FAT (Microsoft's FAT specification, fatgen103 §4,
//! §6). What a cut leaves (lost clusters, FAT copies that differ in one
//! epoch's entries) is what the rerun, seeing the job's intent record,
//! accepts: it makes the other FATs the first one again and plans the
//! evacuation afresh from the volume. Lost clusters do not reach the new
//! volume: its FAT holds only the chains the directories name.

use std::collections::HashSet;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{ClusterBits, EntrySet, Geometry, VolumeModel};
use mkfs_alloc_ondisk::fat::DirEntry;
use zerocopy::FromBytes;

use super::super::disk::{read_at, write_at, FatReader, FatWriter};
use super::super::plan::{ExfatGeometry, Plan, Refusal};
use super::super::state::Intent;
use super::super::{Job, ReclusterError};
use super::plan::{plan_fat, FatRefusal, Input};
use super::{run, FatJob, MASK};

/// A bad cluster's FAT32 entry.
const BAD: u32 = 0x0FFF_FFF7;
/// What names a moved cluster in the old volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// The cluster before it moves too (its copy's entry names this copy).
    Moved,
    /// The FAT entry of this cluster.
    Fat(u32),
    /// The short entry at this absolute byte offset.
    Entry(u64),
}

/// One old cluster moved to a free one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Move {
    from: u32,
    to: u32,
    /// The FAT entry the copy gets.
    next: u32,
    link: Link,
}

/// The moves that free a window of old clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(in crate::recluster) struct Evacuation {
    files: Vec<Move>,
    dirs: Vec<Move>,
    lost: Vec<u32>,
}

impl Evacuation {
    /// Old clusters whose data is copied.
    pub(in crate::recluster) fn moved(&self) -> u64 {
        (self.files.len() + self.dirs.len()) as u64
    }
}

/// The old clusters the new FATs take and the most old clusters the
/// reserved sectors can cover (`BPB_RsvdSecCnt` is 16-bit), as
/// `plan.rs` sizes them.
fn reach(g: &Geometry, cluster: u64) -> (u64, u64) {
    let s = u64::from(g.sector_size);
    let (spc_old, spc_new) = (g.cluster_size / s, (cluster / s).max(1));
    let data_old = (g.data_offset - g.start) / s;
    let most = (g.fs_bytes / s).saturating_sub(data_old) / spc_new;
    let fats = u64::from(g.fat_count) * ((most + 2) * 4).div_ceil(s);
    let most_covered = (u64::from(u16::MAX) + fats).saturating_sub(data_old) / spc_old;
    (fats.div_ceil(spc_old), most_covered)
}

/// The first window of `run` old clusters within reach that holds no
/// directory's first cluster and no bad cluster.
fn window<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    firsts: &HashSet<u32>,
    (run, most_covered): (u64, u64),
) -> Result<Option<u32>, ReclusterError> {
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    let last = u64::from(g.cluster_count) + 1;
    let mut a = 2u64;
    while run > 0 && a + run - 2 <= most_covered && a + run - 1 <= last {
        let mut blocked = None;
        for c in a..a + run {
            let c32 = u32::try_from(c).unwrap_or(u32::MAX);
            if firsts.contains(&c32) || fat.get(dev, c32)? & MASK == BAD {
                blocked = Some(c);
                break;
            }
        }
        match blocked {
            Some(c) => a = c + 1,
            None => return Ok(u32::try_from(a).ok()),
        }
    }
    Ok(None)
}

/// A FAT32 job's plan, the copies it makes and its evacuation, if any.
type Planned = (Plan, Vec<(u32, u32)>, Option<Evacuation>);

/// The plan of a FAT32 job: `planned` (plan.rs's) when it moves no more
/// than an evacuation would, else the plan of the volume after the
/// evacuation, with the evacuation.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    input: &Input<'_>,
    planned: Result<(Plan, Vec<(u32, u32)>), Refusal>,
) -> Result<Planned, ReclusterError> {
    let g = &model.geometry;
    let (run, most_covered) = reach(g, input.cluster);
    let firsts: HashSet<u32> = input
        .chains
        .iter()
        .filter_map(|c| c.first().copied())
        .collect();
    let used_before = |end: u64| {
        (2..end)
            .filter(|&c| model.used.get(u32::try_from(c).unwrap_or(u32::MAX)))
            .count() as u64
    };
    match planned {
        Ok((p, copies)) => {
            let cost = p.fat.as_ref().map_or(0, |f| f.in_use);
            match window(dev, g, &firsts, (run, most_covered))? {
                Some(a) if used_before(u64::from(a) + run) < cost => {}
                _ => return Ok((p, copies, None)),
            }
        }
        Err(Refusal::Fat(FatRefusal::ReservedSectors { .. }) | Refusal::TooLittleSpace { .. }) => {}
        Err(r) => return Err(ReclusterError::Refused(r)),
    }
    let Some(a) = window(dev, g, &firsts, (run, most_covered))? else {
        return Err(ReclusterError::Refused(Refusal::Fat(
            FatRefusal::ReservedSectors {
                need: u64::from(u16::MAX) + 1,
                covered: most_covered,
            },
        )));
    };
    let len = u32::try_from(run).unwrap_or(u32::MAX);
    let ev = collect(
        dev,
        g,
        input.chains,
        (a, len),
        (a + len, g.cluster_count + 1),
    )?;
    // The volume as the evacuation leaves it: the window free, the copies
    // taken.
    let mut used = ClusterBits::new(g.cluster_count + 2);
    for c in 2..=g.cluster_count + 1 {
        if model.used.get(c) && !(a..a + len).contains(&c) {
            used.set(c);
        }
    }
    for m in ev.files.iter().chain(&ev.dirs) {
        used.set(m.to);
    }
    let after = VolumeModel {
        used,
        ..model.clone()
    };
    let (mut p, copies) = plan_fat(&after, input).map_err(ReclusterError::Refused)?;
    let bytes = ev.moved() * g.cluster_size;
    let entries = 3 * ev.moved() + ev.lost.len() as u64;
    p.bytes_read += bytes + g.fat_bytes;
    p.bytes_written += bytes + entries * u64::from(g.sector_size) * u64::from(g.fat_count);
    p.clusters_moved += ev.moved();
    if let Some(f) = p.fat.as_mut() {
        f.evacuated = ev.moved();
    }
    Ok((p, copies, Some(ev)))
}

/// The moves of a shrink to `count` clusters (reads only): the clusters
/// in use past the new end to free clusters below it, and every lost
/// cluster (a cut run's copies that nothing names yet) freed.
///
/// # Errors
///
/// [`Refusal::TooLittleSpace`] when the free clusters below the new end
/// are too few, unsupported for a directory's first cluster past it.
pub(in crate::recluster) fn past_end<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    chains: &[Vec<u32>],
    count: u32,
) -> Result<Evacuation, ReclusterError> {
    let g = &model.geometry;
    let len = g.cluster_count.saturating_sub(count);
    let mut ev = collect(dev, g, chains, (count + 2, len), (2, count + 1))?;
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    for c in 2..count + 2 {
        let v = fat.get(dev, c)? & MASK;
        if v != 0 && v != BAD && !model.used.get(c) {
            ev.lost.push(c);
        }
    }
    Ok(ev)
}

/// The moves that free old clusters `first .. first + len` (reads only)
/// into the free ones of `lo ..= hi`: the directories' clusters there from
/// their chains, the files' from where their chains enter the window (a
/// FAT entry outside it, or a first cluster, whose entry a second reading
/// of the tree finds).
fn collect<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    chains: &[Vec<u32>],
    (first, len): (u32, u32),
    (lo, hi): (u32, u32),
) -> Result<Evacuation, ReclusterError> {
    let inside = |c: u32| (first..first + len).contains(&c);
    let idx = |c: u32| (c - first) as usize;
    let last = g.cluster_count + 1;
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    let mut owned = vec![false; len as usize];
    let mut alloc = Alloc {
        fat: FatReader::new(g.fat_offset, g.fat_bytes),
        cursor: lo,
        last: hi,
        taken: 0,
        cluster: g.cluster_size,
    };
    let mut ev = Evacuation::default();
    for chain in chains {
        for (i, &c) in chain.iter().enumerate() {
            if !inside(c) {
                continue;
            }
            let link = match i {
                0 => {
                    return Err(ReclusterError::unsupported(format!(
                        "moving a directory's first cluster (cluster {c})"
                    )))
                }
                _ if inside(chain[i - 1]) => Link::Moved,
                _ => Link::Fat(chain[i - 1]),
            };
            owned[idx(c)] = true;
            let next = fat.get(dev, c)?;
            push(&mut ev.dirs, alloc.take(dev)?, c, next, link);
        }
    }
    // Who names each cluster of the window: 0 none, u32::MAX more than one.
    let mut pred = vec![0u32; len as usize];
    for c in 2..=last {
        let v = fat.get(dev, c)? & MASK;
        if inside(v) {
            let p = &mut pred[idx(v)];
            *p = if *p == 0 { c } else { u32::MAX };
        }
    }
    let heads: HashSet<u32> = (first..first + len)
        .filter(|&c| !owned[idx(c)] && pred[idx(c)] == 0)
        .collect();
    let mut sets = Vec::new();
    if !heads.is_empty() {
        super::super::read_one_with(dev, &mut |s| {
            if !s.is_dir && heads.contains(&s.first_cluster) {
                sets.push(s.clone());
            }
        })?;
    }
    for c in first..first + len {
        if owned[idx(c)] || fat.get(dev, c)? & MASK == 0 {
            continue;
        }
        let p = pred[idx(c)];
        let link = match sets.iter().find(|s| s.first_cluster == c) {
            Some(s) if p == 0 => Link::Entry(short_entry(dev, g, &mut fat, s)?),
            _ if p != 0 && p != u32::MAX && !inside(p) => Link::Fat(p),
            _ => continue,
        };
        // The chain's run through the window from here.
        let (mut c, mut link) = (c, link);
        loop {
            owned[idx(c)] = true;
            let next = fat.get(dev, c)?;
            push(&mut ev.files, alloc.take(dev)?, c, next, link);
            let n = next & MASK;
            if !inside(n) {
                break;
            }
            if owned[idx(n)] {
                return Err(ReclusterError::unsupported(format!(
                    "cluster {n} is reached twice"
                )));
            }
            (c, link) = (n, Link::Moved);
        }
    }
    for c in first..first + len {
        if !owned[idx(c)] && fat.get(dev, c)? & MASK != 0 {
            ev.lost.push(c);
        }
    }
    Ok(ev)
}

/// Appends the move of `from` to `to`; a move after the one before it in
/// its chain makes that one's copy name this copy.
fn push(moves: &mut Vec<Move>, to: u32, from: u32, next: u32, link: Link) {
    if link == Link::Moved {
        if let Some(m) = moves.last_mut() {
            m.next = to;
        }
    }
    moves.push(Move {
        from,
        to,
        next,
        link,
    });
}

/// Free old clusters past the window, first fit, in order.
struct Alloc {
    fat: FatReader,
    cursor: u32,
    last: u32,
    taken: u64,
    cluster: u64,
}

impl Alloc {
    fn take<D: BlockIo + ?Sized>(&mut self, dev: &mut D) -> Result<u32, ReclusterError> {
        while self.cursor <= self.last {
            self.cursor += 1;
            if self.fat.get(dev, self.cursor - 1)? & MASK == 0 {
                self.taken += 1;
                return Ok(self.cursor - 1);
            }
        }
        Err(ReclusterError::Refused(Refusal::TooLittleSpace {
            need: (self.taken + 1) * self.cluster,
            free: self.taken * self.cluster,
        }))
    }
}

/// Absolute byte offset of the short entry of `s` (after its long-name
/// entries, possibly in the directory's next clusters).
fn short_entry<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    fat: &mut FatReader,
    s: &EntrySet,
) -> Result<u64, ReclusterError> {
    let cs = g.cluster_size;
    let heap = |c: u32| g.data_offset + u64::from(c - 2) * cs;
    let Some(mut c) = s.at.cluster.filter(|&c| c >= 2) else {
        return Err(ReclusterError::unsupported(format!(
            "the entry of {} is not in a cluster",
            s.path
        )));
    };
    let mut pos = s.at.offset - heap(c) + u64::from(s.at.entries.max(1) - 1) * 32;
    while pos >= cs {
        c = fat.get(dev, c)? & MASK;
        if !(2..=g.cluster_count + 1).contains(&c) {
            return Err(ReclusterError::unsupported(format!(
                "the directory holding {} ends inside its entries",
                s.path
            )));
        }
        pos -= cs;
    }
    Ok(heap(c) + pos)
}

/// Where the moves write: the old volume's places.
pub(in crate::recluster) struct Place<'a> {
    /// Absolute byte offset of the volume.
    pub(in crate::recluster) start: u64,
    /// Bytes per sector.
    pub(in crate::recluster) sector: u32,
    /// The old volume's geometry.
    pub(in crate::recluster) old: &'a ExfatGeometry,
    /// The first byte of every FAT, absolute.
    pub(in crate::recluster) fats: &'a [u64],
    /// FSInfo and its backup, absolute byte offsets.
    pub(in crate::recluster) fs_info: &'a [u64],
}

/// Runs the evacuation (steps 1 to 4 of the module docs).
pub(super) fn execute<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    p: &Plan,
    fat: &FatJob,
    ev: &Evacuation,
    rerun: bool,
) -> Result<(), ReclusterError> {
    let s = p.sector_size;
    let intent = Intent::between(s, job.serial, &p.old, &p.new, None);
    write_at(dev, job.intent_offset, &intent.sector(s))?;
    dev.flush()?;
    let place = Place {
        start: p.volume_start,
        sector: s,
        old: &p.old,
        fats: &fat.fats,
        fs_info: &fat.fs_info,
    };
    moves(dev, &place, ev, rerun)
}

/// Steps 2 to 4 of the module docs (the record is the caller's, written
/// and flushed).
pub(in crate::recluster) fn moves<D: BlockIo + ?Sized>(
    dev: &mut D,
    place: &Place<'_>,
    ev: &Evacuation,
    rerun: bool,
) -> Result<(), ReclusterError> {
    let s = place.sector;
    for &at in place.fats {
        run::set_clean(dev, at, s, false)?;
    }
    for &at in place.fs_info {
        run::set_fs_info(dev, at, s, (u32::MAX, u32::MAX))?;
    }
    dev.flush()?;
    if rerun {
        run::copy_first_fat(dev, place.fats, place.old.fat_bytes)?;
        dev.flush()?;
    }
    stage(dev, place, &ev.files, &[])?;
    stage(dev, place, &ev.dirs, &ev.lost)
}

/// One stage: the copies, flush; the links, flush; the old clusters (and
/// `lost`) freed, flush.
fn stage<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &Place<'_>,
    moves: &[Move],
    lost: &[u32],
) -> Result<(), ReclusterError> {
    let cs = p.old.cluster_size;
    let at = |c: u32| p.start + p.old.heap_offset + u64::from(c - 2) * cs;
    let mut buf = vec![0u8; usize::try_from(cs).unwrap_or(0)];
    for m in moves {
        read_at(dev, at(m.from), &mut buf)?;
        write_at(dev, at(m.to), &buf)?;
    }
    set_all(dev, p, moves.iter().map(|m| (m.to, m.next)).collect())?;
    dev.flush()?;
    let links = moves.iter().filter_map(|m| match m.link {
        Link::Fat(q) => Some((q, m.to)),
        _ => None,
    });
    set_all(dev, p, links.collect())?;
    let su = u64::from(p.sector);
    let mut sector = vec![0u8; p.sector as usize];
    for m in moves {
        let Link::Entry(off) = m.link else { continue };
        read_at(dev, off / su * su, &mut sector)?;
        let i = usize::try_from(off % su).unwrap_or(0);
        if let Ok((e, _)) = DirEntry::mut_from_prefix(&mut sector[i..]) {
            e.set_first_cluster(m.to);
        }
        write_at(dev, off / su * su, &sector)?;
    }
    dev.flush()?;
    let freed = moves.iter().map(|m| m.from).chain(lost.iter().copied());
    set_all(dev, p, freed.map(|c| (c, 0)).collect())?;
    dev.flush()?;
    Ok(())
}

/// Sets `entries` in every FAT of the old volume.
fn set_all<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &Place<'_>,
    mut entries: Vec<(u32, u32)>,
) -> Result<(), ReclusterError> {
    entries.sort_unstable();
    for &base in p.fats {
        let mut w = FatWriter::open(base, p.old.fat_bytes);
        for &(n, v) in &entries {
            w.set(dev, n, v)?;
        }
        w.write_back(dev)?;
    }
    Ok(())
}
