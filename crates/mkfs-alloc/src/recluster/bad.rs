//! Bad clusters, carried over: each old cluster the FAT marks bad becomes
//! its `ratio` new clusters, marked bad in the new FAT and set in the new
//! bitmap, and no copy of the job (bitmap, directories, evacuated data) is
//! ever written to one.
//!
//! exFAT specification §4.1.3: a FatEntry of exactly FFFFFFF7h marks its
//! cluster "bad"; §7.1.5: a BitmapEntry of 1 means the cluster is "not
//! available for allocation". The specification says no more about a bad
//! cluster's bit, and readers differ (fsck.exfat and our model accept
//! either); a driver that allocates from the bitmap alone (the Linux
//! driver does) would hand out a bad cluster whose bit is clear, so the new
//! volume sets it. The FAT entry is what names it bad.
//!
//! The reader's model counts them ([`Finding::BadClusters`]) but does not
//! list them: [`find`] reads the old FAT once more, only when there are
//! some, and [`reserve`] sets them in the model's bits of used clusters, so
//! that every allocator of the job (the planner's and the evacuation's)
//! takes them as taken.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{Finding, VolumeModel};

use super::disk::FatReader;
use super::plan::{Plan, Refusal};
use super::ReclusterError;

/// The FAT entry of a bad cluster (exFAT specification §4.1.3).
pub(super) const BAD: u32 = 0xFFFF_FFF7;

/// The most bad clusters a job carries over (4 MiB of cluster numbers);
/// a volume with more is refused.
const MAX_BAD: u64 = 1 << 20;

/// How many clusters the model says are bad.
fn reported(model: &VolumeModel) -> u64 {
    model
        .findings
        .iter()
        .map(|f| match f {
            Finding::BadClusters { count, .. } => *count,
            _ => 0,
        })
        .sum()
}

/// The old clusters the FAT of `model`'s volume marks bad, in order (none
/// read when the model found none).
///
/// # Errors
///
/// [`Refusal::Unsupported`] beyond [`MAX_BAD`], the read error.
pub(super) fn find<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
) -> Result<Vec<u32>, ReclusterError> {
    let count = reported(model);
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > MAX_BAD {
        return Err(ReclusterError::unsupported(format!(
            "a volume with {count} bad clusters (at most {MAX_BAD} are carried over)"
        )));
    }
    let g = &model.geometry;
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    let mut bad = Vec::new();
    for c in 2..=g.cluster_count + 1 {
        if fat.get(dev, c)? == BAD {
            bad.push(c);
        }
    }
    Ok(bad)
}

/// Sets the `bad` clusters in `model`'s used bits and drops its
/// [`Finding::BadClusters`]: the job now knows where they are.
pub(super) fn reserve(model: &mut VolumeModel, bad: &[u32]) {
    if bad.is_empty() {
        return;
    }
    for &c in bad {
        model.used.set(c);
    }
    model
        .findings
        .retain(|f| !matches!(f, Finding::BadClusters { .. }));
}

/// Hands the `bad` clusters to the plan: refused when one lies where the
/// new FAT goes (the heap's first old clusters, [`Plan::evacuate`]); the
/// free space after the switch counts their new clusters as taken.
///
/// # Errors
///
/// [`Refusal::Unsupported`] for a bad cluster the new FAT would cover.
pub(super) fn carry(p: &mut Plan, bad: Vec<u32>) -> Result<(), Refusal> {
    let covered = p.evacuate.as_ref().map_or(0, |e| e.clusters);
    if let Some(&c) = bad.iter().find(|&&c| c < 2 + covered) {
        return Err(Refusal::Unsupported {
            what: format!(
                "old cluster {c} is marked bad and lies where the new FAT goes (the heap's first {covered} clusters)"
            ),
        });
    }
    let taken = bad.len() as u64 * u64::from(p.ratio) * p.new.cluster_size;
    p.free_after = p.free_after.saturating_sub(taken);
    p.bad_clusters = bad;
    Ok(())
}
