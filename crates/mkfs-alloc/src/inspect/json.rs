//! A medium's report for a machine reader (the `serde` feature): the
//! inspector's report with each volume's findings, the SD layout and the
//! unfinished in-place jobs, in one document.

use super::{Finding, MediumInfo};
use crate::recluster::Unfinished;
use crate::report::SdReport;
use mkfs_alloc_inspect::{PartitionTable, Volume};
use serde::Serialize;

/// What [`MediumInfo::json_report`] makes: the fields of the inspector's
/// report, then the words a reader looks for (serialized into a map with
/// sorted keys, as a front end prints it, the order is the keys').
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct InfoReport<'a> {
    /// Size of the medium in bytes (whole blocks).
    pub medium_bytes: u64,
    /// Block size the medium was read with.
    pub block_size: u32,
    /// The partition table.
    pub partition_table: &'a PartitionTable,
    /// The volumes, each with what the volume model found.
    pub volumes: Vec<VolumeReport<'a>>,
    /// `sd` when the medium holds exactly the SD layout, else `other`.
    pub layout: &'static str,
    /// The SD layout's figures (`null` for any other layout).
    pub sd: Option<SdReport>,
    /// The in-place jobs left unfinished (`recluster_unfinished`,
    /// `resize_unfinished`, `convert_unfinished`).
    #[serde(flatten)]
    pub unfinished: &'a Unfinished,
    /// The medium's name, as the caller gave it.
    pub target: &'a str,
    /// The caller's text of a volume that could not be read to the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The exit code that goes with `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
}

/// One volume of an [`InfoReport`]: the inspector's fields, then the
/// model's findings (absent when the model gave none for it).
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct VolumeReport<'a> {
    /// The inspector's view of the volume.
    #[serde(flatten)]
    pub volume: &'a Volume,
    /// The findings kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<&'a [Finding]>,
    /// How many more the model found but did not keep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings_dropped: Option<u64>,
}

impl MediumInfo {
    /// The report on `target` (the medium's name) for a machine reader;
    /// `error`: the text of the volumes' errors, which exit code 1 goes
    /// with.
    pub fn json_report<'a>(&'a self, target: &'a str, error: Option<String>) -> InfoReport<'a> {
        let r = &self.report;
        let volumes = r
            .volumes
            .iter()
            .enumerate()
            .map(|(i, volume)| {
                let f = self.findings.get(i);
                VolumeReport {
                    volume,
                    findings: f.map(|f| f.findings.as_slice()),
                    findings_dropped: f.map(|f| f.dropped),
                }
            })
            .collect();
        InfoReport {
            medium_bytes: r.medium_bytes,
            block_size: r.block_size,
            partition_table: &r.partition_table,
            volumes,
            layout: if self.sd.is_some() { "sd" } else { "other" },
            sd: self.sd.as_ref().map(SdReport::of),
            unfinished: &self.unfinished,
            target,
            exit_code: error.as_ref().map(|_| 1),
            error,
        }
    }
}
