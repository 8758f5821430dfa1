//! The three in-place jobs (re-cluster, resize, convert) behind one shape,
//! for a front end that runs any of them the same way: a [`Request`] is
//! planned on the medium (reads only) into a [`Planned`] job, which says
//! what is left ([`Planned::step`]) and runs ([`Planned::run`]).

use super::convert::{self, ConvertJob, NewCluster};
use super::{AutoChoice, Grow, Job, NewSize, Plan, ReclusterError, Step};
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_partition::PartitionGrow;

/// An in-place change of the volume on a medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// A re-cluster to this cluster size in bytes ([`super::plan`]).
    Recluster(u64),
    /// A re-cluster to the size the advice recommends for the files on the
    /// volume ([`super::plan_auto`]).
    ReclusterAuto,
    /// A resize ([`super::plan_resize`]).
    Resize(NewSize),
    /// FAT32 to exFAT, then (unless [`NewCluster::Keep`]) a re-cluster of
    /// the exFAT volume in the same job ([`convert::plan_with`]).
    ConvertToExfat(NewCluster),
}

/// A [`Request`] planned, ready to run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Planned {
    /// A re-cluster.
    Recluster {
        /// The job.
        job: Job,
        /// What `auto` chose, if it chose.
        auto: Option<AutoChoice>,
        /// The cluster size asked, or the one `auto` chose.
        cluster: u64,
    },
    /// A resize (its [`Job::grow`] is the plan).
    Resize(Job),
    /// A conversion to exFAT (and the re-cluster after it).
    Convert(ConvertJob),
}

impl Request {
    /// Plans the request on the one FAT/exFAT volume of `dev`, from the
    /// state the medium is in. Reads only.
    ///
    /// # Errors
    ///
    /// The planner's ([`super::plan`], [`super::plan_auto`],
    /// [`super::plan_resize`], [`convert::plan_with`]).
    pub fn plan<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<Planned, ReclusterError> {
        self.plan_in(dev, None)
    }

    /// [`Request::plan`] of the volume in partition `partition` (1-based,
    /// as `fdisk` counts) for a resize ([`super::plan_resize_in`]: the
    /// partition grows or shrinks with it) or a conversion ([`convert::plan_with_in`]).
    /// A re-cluster reads the one volume of `dev` whatever `partition`
    /// says: to choose one of several, plan it on a
    /// [`Slice`](mkfs_alloc_blockio::Slice) of that partition.
    ///
    /// # Errors
    ///
    /// As [`Request::plan`].
    pub fn plan_in<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        partition: Option<u32>,
    ) -> Result<Planned, ReclusterError> {
        Ok(match *self {
            Request::Recluster(cluster) => Planned::Recluster {
                job: super::plan(dev, cluster)?,
                auto: None,
                cluster,
            },
            Request::ReclusterAuto => {
                let (choice, job) = super::plan_auto(dev)?;
                Planned::Recluster {
                    cluster: choice.cluster,
                    auto: Some(choice),
                    job,
                }
            }
            Request::Resize(size) => Planned::Resize(super::plan_resize_in(dev, size, partition)?),
            Request::ConvertToExfat(cluster) => {
                Planned::Convert(convert::plan_with_in(dev, cluster, partition)?)
            }
        })
    }

    /// The length an image file of `len` bytes holding `dev` is extended to
    /// before the run (a resize to more bytes than the file has, the
    /// table's backup after partition `partition` counted), if any; the
    /// plan reads it as that long first ([`super::Extended`]).
    pub fn image_extended_to<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        len: u64,
        partition: Option<u32>,
    ) -> Option<u64> {
        let Request::Resize(NewSize::Bytes(b)) = *self else {
            return None;
        };
        let need = partition
            .and_then(|n| PartitionGrow::read(dev, n).ok())
            .map_or(b, |t| t.medium_bytes_for(b));
        (need > len).then_some(need)
    }

    /// The request that plans `planned` again on the medium opened for the
    /// run: the same, but a conversion's `auto` keeps the size it chose.
    pub fn again(&self, planned: &Planned) -> Request {
        match (self, planned) {
            (Request::ConvertToExfat(ask), Planned::Convert(job)) => {
                Request::ConvertToExfat(job.cluster.map_or(*ask, NewCluster::Size))
            }
            _ => *self,
        }
    }

    /// Whether the job is planned once, on the medium opened for the run
    /// (a re-cluster: its plan reads the whole tree), rather than first
    /// read-only and again on the opened medium (a resize extends an image
    /// file only after its read-only plan).
    pub fn plans_once(&self) -> bool {
        matches!(self, Request::Recluster(_) | Request::ReclusterAuto)
    }
}

impl Planned {
    /// Whether nothing is left to do.
    pub fn is_done(&self) -> bool {
        match self {
            Planned::Recluster { job, .. } | Planned::Resize(job) => job.step == Step::Nothing,
            Planned::Convert(c) => c.is_done(),
        }
    }

    /// The length an image file of `len` bytes is cut to after the run: a
    /// shrink of a volume that held the whole file from its start (no
    /// partition table, nothing after it) leaves nothing past its new end.
    pub fn image_cut_to(&self, len: u64) -> Option<u64> {
        let Planned::Resize(job) = self else {
            return None;
        };
        job.grow
            .as_ref()
            .filter(|g| g.volume_start == 0 && g.new_bytes < g.old_bytes && len <= g.old_bytes)
            .map(|g| g.new_bytes)
    }

    /// Whether [`Planned::run`] reports its progress (a conversion does not).
    pub fn reports_progress(&self) -> bool {
        !matches!(self, Planned::Convert(_))
    }

    /// The job's [`super::flush_stages`] on `dev`, the medium it was
    /// planned on (`None` for a job the overlay does not simulate or
    /// cannot run).
    pub fn flush_stages<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Option<Vec<u64>> {
        match self {
            Planned::Recluster { job, .. } | Planned::Resize(job) => {
                super::flush_stages(dev, job).ok().flatten()
            }
            Planned::Convert(c) => super::convert_flush_stages(dev, c).ok().flatten(),
        }
    }

    /// Runs the job on `dev` (the medium it was planned on), `progress`
    /// called with the bytes written so far and in all.
    ///
    /// # Errors
    ///
    /// The first write or flush that fails; the medium is then in a state
    /// the same request, planned and run again, finishes.
    pub fn run<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(), ReclusterError> {
        match self {
            Planned::Recluster { job, .. } | Planned::Resize(job) => {
                super::run_with_progress(dev, job, progress)
            }
            Planned::Convert(c) => convert::run_with(dev, c),
        }
    }
}

/// A plan's totals, as a summary shows them.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Totals {
    /// Free bytes now and after.
    pub free: (u64, u64),
    /// Bytes the job reads.
    pub bytes_read: u64,
    /// Bytes the job writes.
    pub bytes_written: u64,
    /// The time estimate on a slow USB stick, in seconds.
    pub estimate_stick_seconds: f64,
}

impl Plan {
    /// The re-cluster's totals ([`Plan::estimate_stick_seconds`]).
    pub fn totals(&self) -> Totals {
        Totals {
            free: (self.free_before, self.free_after),
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            estimate_stick_seconds: self.estimate_stick_seconds(),
        }
    }
}

impl Grow {
    /// The grow's totals ([`Grow::estimate_stick_seconds`]).
    pub fn totals(&self) -> Totals {
        Totals {
            free: (self.free_before, self.free_after),
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            estimate_stick_seconds: self.estimate_stick_seconds(),
        }
    }
}
