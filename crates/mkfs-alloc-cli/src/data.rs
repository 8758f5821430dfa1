//! `--data PATH`: let the files to be stored choose the cluster size.

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::layout::units::{format_count, format_size};
use mkfs_alloc_advise::{scan as scan_paths, ScanOptions, ScanResult};
use std::path::PathBuf;

/// Scans `paths` (each must exist): what the planned volume's cluster size
/// is then chosen for.
pub fn scan(paths: &[PathBuf]) -> Result<ScanResult, Failure> {
    for p in paths {
        if !p.exists() {
            return Err(usage(anyhow!(
                "--data {}: no such file or directory",
                p.display()
            )));
        }
    }
    let opts = ScanOptions::default();
    scan_paths(paths, &opts).map_err(|e| usage(anyhow!(e).context("scanning --data")))
}

/// Says what the scan found.
pub fn show(data: &ScanResult) {
    let summary = data.summary();
    eprintln!(
        "mkfs-alloc: scanned {} files, {} in {} directories",
        format_count(summary.files),
        format_size(summary.apparent_bytes),
        format_count(summary.directories)
    );
}
