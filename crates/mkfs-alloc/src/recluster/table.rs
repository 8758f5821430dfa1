//! A resize inside an MBR or GPT partition: which partition (the medium's
//! one FAT/exFAT volume, or the one asked by number), its room, and its
//! entry grown before the volume or shrunk after it (the partition crate's
//! [`PartitionGrow`], whose module docs give the table's write order).
//!
//! A grow's table is written and flushed first, before the volume's intent
//! record: a partition longer than its volume is valid, so whatever part of
//! the table's writes survives a cut, the old volume inside it is intact,
//! and the rerun (the same command) reads the table it left, plans the same
//! entry again (writing nothing when it is already there) and grows the
//! volume.
//!
//! A shrink's is the reverse: the volume's own job first, to its switch
//! and finish (the old volume valid and authoritative until the switch,
//! and the smaller one inside the old partition after it), then the entry.
//! A cut before the entry is written leaves the smaller volume in the
//! larger partition; the rerun reads the volume at its new size and the
//! entry longer ([`super::Step::Table`], or the volume's own unfinished
//! step first) and shrinks the entry.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::{read_partition_table, read_volume, ModelOptions, TableKind};
use mkfs_alloc_partition::{PartitionError, PartitionGrow};

use super::grow::{NewSize, ResizeRefusal};
use super::{read_one, Job, Read, ReclusterError, Refusal, Step};
use mkfs_alloc_ondisk::exfat::BootSector;
use zerocopy::FromBytes;

/// Reads the volume to resize: the medium's one volume, or (`partition`
/// given) the one in partition `partition` (1-based, as `fdisk` counts).
pub(super) fn read_chosen<D: BlockIo + ?Sized>(
    dev: &mut D,
    partition: Option<u32>,
) -> Result<Read, ReclusterError> {
    let Some(n) = partition else {
        return read_one(dev);
    };
    let t = read_partition_table(dev)?;
    let Some(p) = t.partitions.iter().find(|p| p.index == n) else {
        let have: Vec<String> = t.partitions.iter().map(|p| p.index.to_string()).collect();
        return Err(ReclusterError::NoVolume(format!(
            "the medium has no partition {n} (its partitions: {})",
            if have.is_empty() {
                "none".into()
            } else {
                have.join(", ")
            }
        )));
    };
    read_at_start(dev, p.start, p.size).map_err(|e| {
        ReclusterError::NoVolume(format!(
            "partition {n} holds no FAT or exFAT volume that can be read: {e}"
        ))
    })
}

/// The blocks `(first, count)` of partition `n` of `dev` (1-based), for
/// a job that runs on that partition alone through a
/// [`Slice`](mkfs_alloc_blockio::Slice).
///
/// # Errors
///
/// [`ReclusterError::NoVolume`] when there is no such partition or it is
/// not on whole blocks of `dev`; the read error.
pub(crate) fn partition_blocks<D: BlockIo + ?Sized>(
    dev: &mut D,
    n: u32,
) -> Result<(u64, u64), ReclusterError> {
    let t = read_partition_table(dev)?;
    let bs = u64::from(dev.block_size());
    t.partitions
        .iter()
        .find(|p| p.index == n)
        .filter(|p| p.start % bs == 0 && p.size % bs == 0)
        .map(|p| (p.start / bs, p.size / bs))
        .ok_or_else(|| {
            ReclusterError::NoVolume(format!(
                "the medium has no partition {n} on whole {bs}-byte blocks"
            ))
        })
}

/// Reads the volume at absolute byte `start`, of at most `size` bytes.
pub(super) fn read_at_start<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    size: u64,
) -> Result<Read, ReclusterError> {
    let (mut dirs, mut sizes) = (Vec::new(), Vec::new());
    let model = read_volume(dev, start, size, &ModelOptions::default(), &mut |s| {
        if s.is_dir {
            dirs.push(s.clone());
        } else {
            sizes.push(s.size);
        }
    })?;
    Ok((model, dirs, sizes))
}

/// The partition the volume at absolute byte `start` is in, read for a
/// grow (`None`: the volume fills the medium, no table).
pub(super) fn partition_of<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
) -> Result<Option<PartitionGrow>, ReclusterError> {
    if start == 0 {
        return Ok(None);
    }
    let t = read_partition_table(dev)?;
    if t.kind == TableKind::None {
        return Ok(None);
    }
    let Some(p) = t.partitions.iter().find(|p| p.start == start) else {
        return Err(refused(format!(
            "the volume at byte {start} is not at the start of a partition"
        )));
    };
    if t.sector_size != Some(dev.block_size()) {
        return Err(refused(format!(
            "the table counts {}-byte sectors, the medium has {}-byte blocks",
            t.sector_size.unwrap_or(0),
            dev.block_size()
        )));
    }
    PartitionGrow::read(dev, p.index)
        .map(Some)
        .map_err(partition_error)
}

/// A refusal naming the table.
fn refused(why: String) -> ReclusterError {
    ReclusterError::Refused(Refusal::Resize(ResizeRefusal::Table { why }))
}

/// The partition crate's error as a refusal (a read or write error as
/// itself).
pub(super) fn partition_error(e: PartitionError) -> ReclusterError {
    match e {
        PartitionError::Io(e) => ReclusterError::Io(e),
        other => refused(other.to_string()),
    }
}

/// The volume's new size in bytes (whole sectors of `s` bytes) for `size`
/// on `dev`, the volume at absolute byte `start` having `now` bytes, in
/// `room` bytes (its partition's most; `None`: to the medium's end).
///
/// # Errors
///
/// [`ResizeRefusal::PastMedium`], or [`ResizeRefusal::Shrink`] for a
/// smaller size unless `shrinks`.
pub(super) fn asked_bytes<D: BlockIo + ?Sized>(
    dev: &D,
    start: u64,
    s: u32,
    size: NewSize,
    now: u64,
    (room, shrinks): (Option<u64>, bool),
) -> Result<u64, ReclusterError> {
    let room = room
        .unwrap_or_else(|| (dev.num_blocks() * u64::from(dev.block_size())).saturating_sub(start));
    let asked = match size {
        NewSize::Bytes(b) => b,
        NewSize::Max => room,
    } / u64::from(s)
        * u64::from(s);
    let refuse = |r| Err(ReclusterError::Refused(Refusal::Resize(r)));
    if asked > room {
        return refuse(ResizeRefusal::PastMedium { asked, room });
    }
    if asked < now && !shrinks {
        return refuse(ResizeRefusal::Shrink { now, asked });
    }
    Ok(asked)
}

/// The bytes of the volume once `job` has run, the volume read having
/// `fs_bytes`: a resize's new size, the backup boot region's when the main
/// one is rebuilt from it, else the volume as it is (nothing to do, or a
/// finish past the switch).
pub(super) fn bytes_after(job: &Job, fs_bytes: u64) -> u64 {
    if let Some(g) = &job.grow {
        return g.new_bytes;
    }
    let backup = job
        .backup
        .as_deref()
        .filter(|_| job.step == Step::RestoreMain)
        .and_then(|b| BootSector::ref_from_prefix(b).ok());
    match backup {
        Some((b, _)) => b.volume_length.get() * u64::from(job.sector),
        None => fs_bytes,
    }
}
