//! `--data PATH`: let the files to be stored choose the cluster size.

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc_advise::{scan, ScanOptions};
use mkfs_alloc_layout::units::{format_count, format_size};
use mkfs_alloc_layout::{FormatOptions, Layout};
use std::path::PathBuf;

/// Scans `paths` and returns the cluster size recommended for them on the
/// volume `auto` (planned with the options' own cluster choice), with its
/// reason.
pub fn recommend(
    paths: &[PathBuf],
    format: &FormatOptions,
    auto: &Layout,
    show: bool,
) -> Result<(u64, String), Failure> {
    for p in paths {
        if !p.exists() {
            return Err(usage(anyhow!(
                "--data {}: no such file or directory",
                p.display()
            )));
        }
    }
    let opts = ScanOptions::default();
    let data = scan(paths, &opts).map_err(|e| usage(anyhow!(e).context("scanning --data")))?;
    let chosen = crate::rootdir::recommend_on(&data, format, auto, "--data")?;
    let summary = data.summary();
    if show {
        eprintln!(
            "mkfs-alloc: scanned {} files, {} in {} directories",
            format_count(summary.files),
            format_size(summary.apparent_bytes),
            format_count(summary.directories)
        );
    }
    Ok(chosen)
}
