//! Shrink of a FAT32 volume in place: the FAT32 grow's record, clean bit,
//! switch and finish (`grow_fat.rs`) around the FAT32 evacuation
//! (`fat/evac.rs`), its window the clusters past the new end and its
//! copies below it.
//!
//! ```text
//!  old: | reserved (rec: 24) | FATs | data: clusters 2 .. N'+1 | N'+2 .. N+1 |
//!  new: | reserved (rec: 24) | FATs | data: clusters 2 .. N'+1 |   (gone)
//! ```
//!
//! The data region keeps its offset and cluster size, so no cluster below
//! the new end is renumbered; FATSz32 stays (a FAT longer than its
//! clusters need is valid: fatgen103 §3.5 computes the least FAT size, and
//! readers take only the entries of the clusters there). Writes:
//! 1. the intent record (phase 2, the old and the new geometry), flushed;
//! 2. the evacuation's steps 2 to 4: FAT[1]'s clean bit cleared in every
//!    FAT and FSInfo's hints "unknown", flushed (on a rerun the first FAT
//!    copied over the others, flushed); each file's run of clusters past
//!    the new end copied to free clusters below it, linked from the entry
//!    before it (a FAT entry or the short entry's first cluster), the old
//!    ones freed; the same for directories' clusters; every lost cluster
//!    (a cut run's copies) freed; a flush after each of those;
//! 3. the backup boot sector (TotSec32), flushed; sector 0, flushed (the
//!    switch);
//! 4. the FAT path's finish planned from the new volume (clean bit set,
//!    FSInfo's figures, the record zeroed).
//!
//! Before the switch the old volume is valid and authoritative at every
//! cut (the evacuation's argument); a rerun reads its record and plans the
//! moves afresh from the volume as the cut left it. A directory whose
//! first cluster lies past the new end is refused (its parent's entry,
//! its own `.` and its children's `..` would all change).

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::disk::FatReader;
use super::fat::{dir_chains, past_end, Evacuation};
use super::grow::ResizeRefusal;
use super::{ReclusterError, Refusal};

/// A bad cluster's FAT32 entry (its high four bits masked).
const BAD: u32 = 0x0FFF_FFF7;
/// FAT32 entry bits (the high four are reserved).
const MASK: u32 = 0x0FFF_FFFF;

/// The moves of the shrink of the FAT32 volume `model` (root directory at
/// `root`) to `asked` bytes, and its new cluster count; reads only.
///
/// # Errors
///
/// A [`ResizeRefusal`] naming the smallest size this volume shrinks to
/// ([`ResizeRefusal::FatTooFew`], [`ResizeRefusal::BadPastEnd`],
/// [`ResizeRefusal::DirectoryPastEnd`], [`ResizeRefusal::BelowData`]), the
/// read error.
pub(super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    dirs: &[EntrySet],
    root: u32,
    asked: u64,
) -> Result<(u32, Evacuation), ReclusterError> {
    let g = &model.geometry;
    let (cs, data_start) = (g.cluster_size, g.data_offset - g.start);
    let size_of = |n: u64| data_start + n * cs;
    let n = asked.saturating_sub(data_start) / cs;
    let dirs: Vec<EntrySet> = dirs
        .iter()
        .filter(|d| d.is_dir && d.first_cluster != 0)
        .cloned()
        .collect();
    let chains = dir_chains(dev, g, root, &dirs)?;
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    let mut last_bad = None;
    for c in 2..=g.cluster_count + 1 {
        if fat.get(dev, c)? & MASK == BAD {
            last_bad = Some(c);
        }
    }
    let last_dir = chains.iter().filter_map(|c| c.first().copied()).max();
    let allocated = u64::from(g.cluster_count).saturating_sub(model.free_clusters);
    let least_n = [
        allocated,
        FsKind::Fat32.min_clusters(),
        last_bad.map_or(0, |c| u64::from(c) - 1),
        last_dir.map_or(0, |c| u64::from(c) - 1),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let least = size_of(least_n);
    let refuse = |r| Err(ReclusterError::Refused(Refusal::Resize(r)));
    if n < FsKind::Fat32.min_clusters() {
        return refuse(ResizeRefusal::FatTooFew {
            asked,
            clusters: n,
            least,
        });
    }
    let past = |c: u32| u64::from(c) > n + 1;
    if let Some(cluster) = last_bad.filter(|&c| past(c)) {
        return refuse(ResizeRefusal::BadPastEnd { cluster, least });
    }
    if let Some(cluster) = last_dir.filter(|&c| past(c)) {
        return refuse(ResizeRefusal::DirectoryPastEnd { cluster, least });
    }
    let count = u32::try_from(n).unwrap_or(u32::MAX);
    match past_end(dev, model, &chains, count) {
        Ok(ev) => Ok((count, ev)),
        Err(ReclusterError::Refused(Refusal::TooLittleSpace { .. })) => {
            let free = (2..count + 2).filter(|&c| !model.used.get(c)).count() as u64 * cs;
            refuse(ResizeRefusal::BelowData { asked, least, free })
        }
        Err(e) => Err(e),
    }
}
