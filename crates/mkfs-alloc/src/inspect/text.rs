//! A medium's report as text: the table, each volume's geometry, usage,
//! files and findings, one line each, every line ending in a newline.

use super::{MediumInfo, VolumeFindings};
use crate::units::{percent, plural};
use mkfs_alloc_inspect::{AnyFs, FileStats, Report, TableKind, Volume, ALIGN_BOUNDARY};
use mkfs_alloc_layout::units::{format_count, format_size};
use mkfs_alloc_layout::waste::{waste_percent, WASTE_DEFINITION};
use std::fmt::{self, Write as _};

impl MediumInfo {
    /// The report on `target` (the medium's name) as text: the medium and
    /// its table, then each volume (a blank line before each), or
    /// `no volume found`.
    pub fn text(&self, target: &str) -> String {
        let mut out = String::new();
        let _ = report(&mut out, target, &self.report, &self.findings);
        out
    }
}

/// `8` hex digits as `1234-ABCD`; anything else as it is.
fn serial_text(s: &str) -> String {
    if s.len() == 8 && s.is_char_boundary(4) {
        let (high, low) = s.split_at(4);
        format!("{high}-{low}")
    } else {
        s.to_string()
    }
}

/// An offset on the medium, its alignment, and whether it misses 1 MiB.
fn place(offset: u64) -> String {
    let a = mkfs_alloc_inspect::alignment_of(offset);
    let flag = if offset % ALIGN_BOUNDARY != 0 {
        "  NOT on a 1 MiB boundary"
    } else {
        ""
    };
    format!(
        "at byte {offset} ({}), aligned to {}{flag}",
        format_size(offset),
        format_size(a)
    )
}

fn report(out: &mut String, target: &str, r: &Report, findings: &[VolumeFindings]) -> fmt::Result {
    let t = &r.partition_table;
    let table = match (t.kind, &t.disk_id) {
        (TableKind::None, _) => "none".to_string(),
        (k, Some(id)) => format!("{} (disk {id})", k.display_name()),
        (k, None) => k.display_name().to_string(),
    };
    writeln!(
        out,
        "{target}: {} ({} bytes), partition table: {table}",
        format_size(r.medium_bytes),
        r.medium_bytes
    )?;
    for p in &t.partitions {
        let name = p
            .name
            .as_deref()
            .map(|n| format!(" {n:?}"))
            .unwrap_or_default();
        writeln!(
            out,
            "  partition {:<3} start {:>10}  size {:>10}  type {} {}{}{name}",
            p.index,
            format_size(p.start),
            format_size(p.size),
            p.type_id,
            p.type_name.as_deref().unwrap_or(""),
            if p.bootable { " (active)" } else { "" },
        )?;
    }
    for w in &t.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    for (i, v) in r.volumes.iter().enumerate() {
        writeln!(out)?;
        volume(out, i + 1, v, findings.get(i))?;
    }
    if r.volumes.is_empty() {
        writeln!(out, "no volume found")?;
    }
    Ok(())
}

fn volume(
    out: &mut String,
    n: usize,
    v: &Volume,
    findings: Option<&VolumeFindings>,
) -> fmt::Result {
    let whereabouts = match v.partition {
        Some(p) => format!("partition {p}"),
        None => "whole medium".to_string(),
    };
    writeln!(
        out,
        "volume {n} ({whereabouts}, {}): {}",
        format_size(v.size),
        v.fs.map_or("unknown", AnyFs::display_name)
    )?;
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(l) = &v.label {
        rows.push(("label", l.clone()));
    } else if v.ours().is_some() {
        rows.push(("label", "(none)".into()));
    }
    if let Some(s) = &v.serial {
        rows.push(("serial", serial_text(s)));
    }
    if let Some(c) = v.cluster_size {
        rows.push(("cluster size", format_size(c)));
    }
    if let Some(s) = v.sector_size {
        rows.push(("sector size", format!("{s} B")));
    }
    if let Some(c) = v.cluster_count {
        rows.push(("clusters", format_count(c)));
    }
    if let Some(b) = v.fs_bytes {
        rows.push(("size", format!("{} ({b} bytes)", format_size(b))));
    }
    if let (Some(used), Some(free)) = (v.used_bytes, v.free_bytes) {
        let total = used + free;
        let share = |x: u64| format!("{} ({:.1}%)", format_size(x), percent(x, total));
        rows.push(("used", share(used)));
        rows.push(("free", share(free)));
    }
    if let Some(h) = v.free_bytes_fsinfo {
        if Some(h) != v.free_bytes {
            rows.push(("free (FSInfo)", format_size(h)));
        }
    }
    match v.partition {
        Some(_) => rows.push(("partition", place(v.start))),
        None => rows.push((
            "partition",
            "none (the volume spans the whole medium)".into(),
        )),
    }
    if let Some(f) = v.fat_offset {
        let what = match (v.fat_count, v.fat_bytes) {
            (Some(c), Some(b)) => format!("{}, {c} x {}", place(f), format_size(b)),
            _ => place(f),
        };
        rows.push(("FAT", what));
    }
    if let Some(d) = v.data_offset {
        rows.push(("data region", place(d)));
    }
    for (k, val) in rows {
        writeln!(out, "  {k:<15}{val}")?;
    }
    if let Some(files) = &v.files {
        file_stats(out, files, v.cluster_size.unwrap_or(0))?;
    }
    for w in &v.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    if let Some(f) = findings {
        for x in &f.findings {
            writeln!(out, "  finding: {x}")?;
        }
        if f.dropped > 0 {
            writeln!(out, "  finding: ... and {} more", format_count(f.dropped))?;
        }
    }
    if let Some(e) = &v.error {
        writeln!(out, "  error: {e}")?;
    }
    Ok(())
}

fn file_stats(out: &mut String, f: &FileStats, current: u64) -> fmt::Result {
    writeln!(
        out,
        "  {:<15}{} in {}: {}, taking {} (waste {}, {}){}",
        "files",
        plural(f.count, "file", "files"),
        plural(f.dirs, "directory", "directories"),
        format_size(f.total_bytes),
        format_size(f.allocated_bytes),
        format_size(f.waste_bytes),
        waste_percent(f.waste_bytes, f.total_bytes)
            .map_or_else(|| "n/a".to_string(), |p| format!("{p:.2}%")),
        if f.complete { "" } else { " (partial)" }
    )?;
    writeln!(out, "  {:<15}{WASTE_DEFINITION}", "")?;
    if f.fragmented > 0 {
        writeln!(
            out,
            "  {:<15}{} files",
            "fragmented",
            format_count(f.fragmented)
        )?;
    }
    writeln!(out, "  {:<15}{}", "directories", format_size(f.dir_bytes))?;
    writeln!(
        out,
        "  {:<15}{:>10}  {:>12}  {:>12}  {:>12}",
        "at cluster", "size", "files take", "waste", "directories"
    )?;
    for a in &f.at_cluster_sizes {
        writeln!(
            out,
            "  {:<15}{:>10}  {:>12}  {:>12}  {:>12}{}",
            "",
            format_size(a.cluster_size),
            format_size(a.allocated_bytes),
            format_size(a.waste_bytes),
            format_size(a.dir_bytes),
            if a.cluster_size == current {
                "  <- current"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}
