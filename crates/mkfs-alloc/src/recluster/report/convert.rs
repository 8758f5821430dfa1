//! A conversion's report: the conversion's figures, then the re-cluster
//! after it.

use super::JobReport;
use crate::recluster::convert::ConvertJob;
use serde::Serialize;

/// A conversion's report ([`Planned::Convert`](crate::recluster::Planned::Convert)): each figure of the
/// conversion `None` when there is no plan (past the switch, or nothing to
/// do), then the re-cluster after it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ConvertReport<'a> {
    /// The step, in words ([`Step`](crate::recluster::Step)'s `Display`).
    pub step: String,
    /// Why the real run would refuse, in words, if it would.
    pub would_refuse: Option<&'a str>,
    /// Bytes per cluster (unchanged).
    pub cluster_size: Option<u64>,
    /// Clusters (unchanged).
    pub cluster_count: Option<u32>,
    /// The exFAT FAT's offset in the volume.
    pub fat_offset: Option<u64>,
    /// The heap's offset in the volume.
    pub heap_offset: Option<u64>,
    /// Directories rewritten, the root included.
    pub directories: Option<u64>,
    /// Files kept.
    pub files: Option<u64>,
    /// The label carried over.
    pub label: Option<&'a str>,
    /// The serial number carried over, as 8 hex digits.
    pub serial: Option<String>,
    /// Bytes written.
    pub bytes_written: Option<u64>,
    /// Free bytes in the exFAT volume.
    pub free_after: Option<u64>,
    /// The MBR partition type byte changed to 07h, if in an MBR partition.
    pub partition_type: Option<u8>,
    /// The re-cluster of the exFAT volume after the conversion, if asked
    /// (its [`JobReport`], as a re-cluster alone reports it).
    pub recluster: Option<Box<JobReport<'a>>>,
    /// The cluster size the re-cluster goes to ([`ConvertJob::cluster`]).
    pub new_cluster_size: Option<u64>,
    /// Bytes the whole job writes ([`ConvertJob::bytes_written`]).
    pub job_bytes_written: u64,
    /// The bytes written before each flush ([`Planned::flush_stages`](crate::recluster::Planned::flush_stages): a
    /// dry run's); absent when not simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_stages: Option<Vec<u64>>,
}

impl<'a> ConvertReport<'a> {
    pub(super) fn new(job: &'a ConvertJob, would_refuse: Option<&'a str>) -> Self {
        let c = &job.conversion;
        let p = c.plan.as_ref();
        Self {
            step: c.step.to_string(),
            would_refuse,
            cluster_size: p.map(|p| p.exfat.cluster_size),
            cluster_count: p.map(|p| p.exfat.cluster_count),
            fat_offset: p.map(|p| p.exfat.fat_offset),
            heap_offset: p.map(|p| p.exfat.heap_offset),
            directories: p.map(|p| p.directories),
            files: p.map(|p| p.files),
            label: p.and_then(|p| p.label.as_deref()),
            serial: p.map(|p| format!("{:08X}", p.serial)),
            bytes_written: p.map(|p| p.bytes_written),
            free_after: p.map(|p| p.free_after),
            partition_type: p.and_then(|p| p.partition_type),
            recluster: job
                .recluster
                .as_ref()
                .map(|r| Box::new(JobReport::new(r, job.auto.as_ref(), None))),
            new_cluster_size: job.cluster,
            job_bytes_written: job.bytes_written(),
            flush_stages: None,
        }
    }
}
