//! `advise --target` on a target that holds a volume with files: the
//! advice for the files on it (`mkfs_alloc::existing::advise_volume`, the
//! reading and tally `recluster --cluster auto` makes), and what it says
//! of the volume: its cluster size now, the files counted, the waste now
//! and at the recommendation, and the re-cluster to run.

use crate::Failure;
use anyhow::anyhow;
use mkfs_alloc::existing::{advise_volume, FsSelection, OnVolume, Policy, VolumeAdvice};
use mkfs_alloc::inspect::ReadOnlyFile;
use mkfs_alloc::units::plural;
use mkfs_alloc::units::{format_count, format_size};
use mkfs_alloc_advise::Advice;
use serde::Serialize;
use std::path::Path;

/// The advice for the files on the volume of `target`, or `None` when it
/// holds no FAT/exFAT volume with files (advised from its size, as
/// without one). A volume that cannot be read is said on stderr and
/// advised from its size.
pub fn read(
    target: &Path,
    fs: Option<FsSelection>,
    sector_size: Option<u32>,
    policy: &Policy,
) -> Option<VolumeAdvice> {
    let block_size = mkfs_alloc_device::read_block_size(target);
    let mut dev = match ReadOnlyFile::open(target, block_size) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "mkfs-alloc: advise: cannot read {} ({}): advising from its size only",
                target.display(),
                e.source
            );
            return None;
        }
    };
    match advise_volume(&mut dev, fs, sector_size, policy) {
        Ok(v) => v,
        Err(mkfs_alloc::recluster::ReclusterError::NoRecommendation { .. }) => None,
        Err(e) => {
            eprintln!(
                "mkfs-alloc: advise: cannot read the volume on {} ({e}): advising from its size only",
                target.display()
            );
            None
        }
    }
}

/// The JSON document: the advice's fields, then `on_volume`.
#[derive(Serialize)]
struct Document<'a> {
    #[serde(flatten)]
    advice: &'a Advice,
    on_volume: OnVolumeDoc<'a>,
}

/// [`OnVolume`] and the command line to run.
#[derive(Serialize)]
struct OnVolumeDoc<'a> {
    #[serde(flatten)]
    v: &'a OnVolume,
    recluster_command: Option<String>,
}

/// The advice and the volume's figures as one JSON document.
pub fn json(v: &VolumeAdvice, target: &Path) -> Result<String, Failure> {
    let doc = Document {
        advice: &v.advice,
        on_volume: OnVolumeDoc {
            v: &v.on_volume,
            recluster_command: recluster_command(&v.on_volume, target),
        },
    };
    serde_json::to_string_pretty(&doc).map_err(|e| Failure::Io(anyhow!(e).context("writing JSON")))
}

/// The command that re-clusters the volume on `target` to the
/// recommendation, e.g. `mkfs-alloc recluster --cluster 4K card.img`.
fn recluster_command(on: &OnVolume, target: &Path) -> Option<String> {
    on.recluster_cluster.as_ref().map(|c| {
        format!(
            "mkfs-alloc recluster --cluster {c} {}",
            crate::text::shell_word(target)
        )
    })
}

fn waste(bytes: Option<u64>, percent: Option<f64>) -> String {
    match (bytes, percent) {
        (Some(b), Some(p)) => format!("{} ({p:.1}%)", format_size(b)),
        (Some(b), None) => format_size(b),
        _ => "not counted (no such size for this volume)".into(),
    }
}

/// The lines on the volume after the advice's report.
pub fn text(on: &OnVolume, target: &Path) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let place = if on.start == 0 {
        "whole medium".to_string()
    } else {
        format!("at {}", format_size(on.start))
    };
    let _ = writeln!(
        o,
        "\nOn {} ({place}): {} with {} clusters, {} in {}, {} ({} bytes); the advice above is for these files",
        target.display(),
        on.fs,
        format_size(on.cluster_size),
        plural(on.files, "file", "files"),
        plural(on.directories, "directory", "directories"),
        format_size(on.file_bytes),
        format_count(on.file_bytes)
    );
    let _ = writeln!(
        o,
        "  waste now, at {}: {}",
        format_size(on.cluster_size),
        waste(on.waste_bytes, on.waste_percent)
    );
    match on.recommended_cluster_size {
        Some(c) if c == on.cluster_size => {
            let _ = writeln!(
                o,
                "  {} is the recommended size: nothing to change",
                format_size(c)
            );
        }
        Some(c) => {
            let _ = writeln!(
                o,
                "  waste at the recommended {}: {}",
                format_size(c),
                waste(on.recommended_waste_bytes, on.recommended_waste_percent)
            );
        }
        None => {
            let _ = writeln!(o, "  no cluster size is recommended for {}", on.fs);
        }
    }
    if let Some(cmd) = recluster_command(on, target) {
        let _ = writeln!(o, "  to change it in place: {cmd}");
    }
    if let Some(r) = &on.refusal {
        let _ = writeln!(o, "  a re-cluster would be refused as the volume is: {r}");
    }
    o
}
