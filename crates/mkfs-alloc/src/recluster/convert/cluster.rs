//! A conversion to a new cluster size in the same run (`convert
//! --cluster`): the conversion, which moves no file data and keeps the
//! cluster size, and then the re-cluster of the exFAT volume it made by
//! the re-cluster engine ([`crate::recluster`]), as one job. In a
//! partition (`--partition N`) the conversion reads the table (it changes
//! the MBR type byte) and the re-cluster runs on that partition's blocks
//! alone (a [`Slice`]), as `recluster --partition N` does: the medium's
//! other volumes are out of its sight and untouched.
//!
//! Each part keeps its own promise (the old volume valid until its one
//! switch, its intent record on the medium), and the two are in sequence:
//! the re-cluster starts only once the conversion is finished (its record
//! zeroed), so a medium cut anywhere holds either an unfinished
//! conversion (FAT32, or exFAT past the switch with the conversion's
//! record) or a finished one with an unfinished re-cluster, or the end.
//! Running the job again reads which: an unfinished conversion is
//! finished first, then the re-cluster is planned from the medium; an
//! exFAT volume at another size than asked goes on with the re-cluster.
//!
//! Everything is checked before the first write: the re-cluster is
//! planned on the volume the conversion would make, seen through an
//! in-memory overlay of the conversion's writes (none reaching the
//! medium), so its refusals (space, sizes, `auto`'s choice) come before
//! the conversion's first write too.

use mkfs_alloc_blockio::{BlockIo, Slice};

use super::{run, Conversion};
use crate::recluster::overlay::Overlay;
use crate::recluster::{self, AutoChoice, Job, ReclusterError, Step};

/// The cluster size a conversion goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewCluster {
    /// The volume's cluster size (the conversion alone).
    Keep,
    /// This many bytes.
    Size(u64),
    /// The size the advice recommends for the files on the volume
    /// ([`recluster::plan_auto`]).
    Auto,
}

/// A conversion and the re-cluster after it, planned.
#[derive(Debug, Clone)]
pub struct ConvertJob {
    /// The conversion ([`Step::Nothing`] when the volume is exFAT already).
    pub conversion: Conversion,
    /// The re-cluster of the converted volume, planned on it (`None` for
    /// [`NewCluster::Keep`]; its step [`Step::Nothing`] when the volume has
    /// the size asked).
    pub recluster: Option<Job>,
    /// What `auto` chose, and why.
    pub auto: Option<AutoChoice>,
    /// The cluster size the re-cluster goes to (`None`: kept).
    pub cluster: Option<u64>,
    /// The partition (1-based, as `fdisk` counts) the re-cluster runs in,
    /// on its blocks alone (`None`: the medium's one volume).
    pub partition: Option<u32>,
}

impl ConvertJob {
    /// Whether nothing is left to do.
    pub fn is_done(&self) -> bool {
        self.conversion.step == Step::Nothing
            && self
                .recluster
                .as_ref()
                .is_none_or(|j| j.step == Step::Nothing)
    }

    /// Bytes the whole job writes (both plans' figures; the parts past
    /// their switch count nothing).
    pub fn bytes_written(&self) -> u64 {
        let c = self.conversion.plan.as_ref().map_or(0, |p| p.bytes_written);
        let r = self
            .recluster
            .as_ref()
            .and_then(|j| j.plan.as_ref())
            .map_or(0, |p| p.bytes_written);
        c + r
    }
}

/// Reads the medium's one volume and plans its conversion to exFAT and the
/// re-cluster of the result to `cluster`, from the state the medium is in.
/// Reads only: the re-cluster is planned through an overlay of the
/// conversion's writes.
///
/// # Errors
///
/// As [`plan`](super::plan) and [`recluster::plan`] (or [`recluster::plan_auto`]).
pub fn plan_with<D: BlockIo + ?Sized>(
    dev: &mut D,
    cluster: NewCluster,
) -> Result<ConvertJob, ReclusterError> {
    plan_with_in(dev, cluster, None)
}

/// [`plan_with`] of the volume in partition `partition` (1-based, as
/// `fdisk` counts; `None`: the medium's one FAT/exFAT volume). Reads only.
///
/// # Errors
///
/// As [`plan_with`]; [`ReclusterError::NoVolume`] when that partition holds
/// no FAT/exFAT volume.
pub fn plan_with_in<D: BlockIo + ?Sized>(
    dev: &mut D,
    cluster: NewCluster,
    partition: Option<u32>,
) -> Result<ConvertJob, ReclusterError> {
    let conversion = super::plan_in(dev, partition)?;
    let mut job = ConvertJob {
        conversion,
        recluster: None,
        auto: None,
        cluster: None,
        partition: None,
    };
    if cluster == NewCluster::Keep {
        return Ok(job);
    }
    job.partition = partition;
    let mut o = Overlay::new(dev);
    run(&mut o, &job.conversion)?;
    let mut o = in_partition(&mut o, partition)?;
    let r = match cluster {
        NewCluster::Size(c) => recluster::plan(&mut o, c)?,
        _ => {
            let (choice, r) = recluster::plan_auto(&mut o)?;
            job.auto = Some(choice);
            r
        }
    };
    job.cluster = job.auto.as_ref().map(|a| a.cluster).or(match cluster {
        NewCluster::Size(c) => Some(c),
        _ => None,
    });
    job.recluster = Some(r);
    Ok(job)
}

/// Runs `job` on `dev` (the medium [`plan_with`] read): the conversion,
/// then the re-cluster planned again from the converted medium (the same
/// plan, now on the medium itself).
///
/// # Errors
///
/// The first write or flush that fails (the same job, planned and run
/// again, finishes), or a refusal of the re-cluster on the medium the
/// conversion left (the plan made up front says it does not happen).
pub fn run_with<D: BlockIo + ?Sized>(dev: &mut D, job: &ConvertJob) -> Result<(), ReclusterError> {
    run(dev, &job.conversion)?;
    let Some(cluster) = job.cluster else {
        return Ok(());
    };
    let mut dev = in_partition(dev, job.partition)?;
    if job.conversion.step == Step::Nothing {
        if let Some(r) = &job.recluster {
            return recluster::run(&mut dev, r);
        }
    }
    recluster::recluster(&mut dev, cluster).map(|_| ())
}

/// `dev`, or the blocks of its partition `partition`: where the re-cluster
/// runs.
fn in_partition<D: BlockIo + ?Sized>(
    dev: &mut D,
    partition: Option<u32>,
) -> Result<Slice<&mut D>, ReclusterError> {
    let (first, count) = match partition {
        Some(n) => crate::recluster::table::partition_blocks(dev, n)?,
        None => (0, dev.num_blocks()),
    };
    Slice::new(dev, first, count).map_err(ReclusterError::Io)
}

/// [`plan_with`] then [`run_with`]: the whole job, or what is left of it.
///
/// # Errors
///
/// As [`plan_with`] and [`run_with`].
pub fn convert_with<D: BlockIo + ?Sized>(
    dev: &mut D,
    cluster: NewCluster,
) -> Result<ConvertJob, ReclusterError> {
    let job = plan_with(dev, cluster)?;
    run_with(dev, &job)?;
    Ok(job)
}
