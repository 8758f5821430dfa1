//! `mkfs-alloc info TARGET`: what is on an image or a device, read-only.
//!
//! Exit codes: 0 report printed; 2 bad input (missing file, a directory);
//! 1 I/O failure, or a volume that could not be read to the end (the report
//! is printed first, with the volume's error).

use crate::report::pct;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::inspect::{medium_info, VolumeFindings};
use mkfs_alloc::layout::units::{format_count, format_size};
use mkfs_alloc::layout::SD_SECTOR;
use mkfs_alloc::layout::{waste_percent, WASTE_DEFINITION};
use mkfs_alloc_inspect::{
    AnyFs, FileStats, InspectOptions, ReadOnlyFile, Report, TableKind, Volume, ALIGN_BOUNDARY,
};
use std::io::ErrorKind;
use std::path::PathBuf;

/// Arguments of `mkfs-alloc info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The image file or device to inspect (opened read-only; no root needed for images).
    pub target: PathBuf,
    /// Also walk the directory trees of FAT/exFAT volumes: file count, sizes,
    /// waste, and what the files would take at every other cluster size.
    #[arg(long)]
    pub files: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `info`.
pub fn run(args: &InfoArgs) -> Result<(), Failure> {
    let path = &args.target;
    check_kind(path)?;
    // The error's source already names the path.
    let block_size = mkfs_alloc_device::read_block_size(path);
    let mut dev = ReadOnlyFile::open(path, block_size).map_err(|e| {
        let msg = anyhow!("cannot open {}", e.source);
        match e.source.kind() {
            ErrorKind::NotFound | ErrorKind::InvalidInput | ErrorKind::PermissionDenied => {
                usage(msg)
            }
            _ => Failure::Io(msg),
        }
    })?;
    let opts = InspectOptions {
        files: args.files,
        ..InspectOptions::default()
    };
    let info = medium_info(&mut dev, &opts)
        .map_err(|e| Failure::Io(anyhow!(e).context(format!("reading {}", path.display()))))?;
    let (report, sd, unfinished) = (&info.report, &info.sd, &info.unfinished);
    let errors: Vec<String> = report
        .errors()
        .map(|(i, e)| format!("volume {}: {e}", i + 1))
        .collect();
    let failure =
        (!errors.is_empty()).then(|| anyhow!("{}: {}", path.display(), errors.join("; ")));
    if args.json {
        // One document: the report, with the error and exit code if any.
        let mut v = serde_json::to_value(report)
            .map_err(|e| Failure::Io(anyhow!(e).context("serialising the report")))?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert(
                "layout".into(),
                serde_json::json!(if sd.is_some() { "sd" } else { "other" }),
            );
            obj.insert("sd".into(), crate::report::sd_json(sd.as_ref()));
            if let Ok(serde_json::Value::Object(jobs)) = serde_json::to_value(unfinished) {
                obj.extend(jobs);
            }
            obj.insert(
                "target".into(),
                serde_json::Value::String(path.display().to_string()),
            );
            if let Some(vols) = obj.get_mut("volumes").and_then(|v| v.as_array_mut()) {
                for (vol, f) in vols.iter_mut().zip(&info.findings) {
                    if let Some(vol) = vol.as_object_mut() {
                        vol.insert("findings".into(), serde_json::json!(f.findings));
                        vol.insert("findings_dropped".into(), serde_json::json!(f.dropped));
                    }
                }
            }
            if let Some(e) = &failure {
                obj.insert(
                    "error".into(),
                    serde_json::json!(crate::text::error_text(e)),
                );
                obj.insert("exit_code".into(), serde_json::json!(1));
            }
        }
        outln!("{v:#}");
        return failure.map_or(Ok(()), |e| Err(Failure::IoInReport(e)));
    }
    print_text(&path.display().to_string(), report, &info.findings);
    for u in &unfinished.recluster {
        outln!();
        outln!(
            "volume {}: a re-cluster to {} clusters is unfinished (the volume is intact); finish it with: mkfs-alloc recluster --cluster {} {}",
            u.volume,
            format_size(u.cluster_size),
            u.cluster_size,
            crate::text::shell_word(path)
        );
    }
    for i in &unfinished.resize {
        outln!();
        outln!(
            "volume {i}: a resize is unfinished (the volume is intact, old or new); finish it with the same command: mkfs-alloc resize --size SIZE|max {}",
            crate::text::shell_word(path)
        );
    }
    for i in &unfinished.convert {
        outln!();
        outln!(
            "volume {i}: a conversion to exFAT is unfinished (the volume is intact); finish it with: mkfs-alloc convert --fs exfat {}",
            crate::text::shell_word(path)
        );
    }
    if let Some(sd) = &sd {
        outln!();
        outln!(
            "layout: SD Association ({} card of {}): partition, FAT and data region where the SD specification puts them",
            sd.class.name(),
            format_size(sd.total_sectors * SD_SECTOR)
        );
    }
    failure.map_or(Ok(()), |e| Err(Failure::Io(e)))
}

/// Refuses at once a directory, which cannot be read, and what
/// [`check_file_or_device`] refuses.
fn check_kind(path: &std::path::Path) -> Result<(), Failure> {
    if path.is_dir() {
        return Err(usage(anyhow!(
            "{} is a directory; expected an image file or a block device",
            path.display()
        )));
    }
    check_file_or_device(path)
}

/// Refuses at once what is neither a regular file nor a block device (a
/// FIFO would block the open).
pub fn check_file_or_device(path: &std::path::Path) -> Result<(), Failure> {
    let m = std::fs::metadata(path)
        .map_err(|e| usage(anyhow!(e).context(format!("cannot open {}", path.display()))))?;
    if !m.is_file() && !mkfs_alloc_device::is_block_device(path) {
        return Err(usage(anyhow!(
            "{} is neither a regular file nor a block device",
            path.display()
        )));
    }
    Ok(())
}

fn serial_text(s: &str) -> String {
    if s.len() == 8 && s.is_char_boundary(4) {
        let (high, low) = s.split_at(4);
        format!("{high}-{low}")
    } else {
        s.to_string()
    }
}

/// `1 file`, `2 files`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", format_count(n), if n == 1 { one } else { many })
}

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

fn print_text(target: &str, r: &Report, findings: &[VolumeFindings]) {
    let t = &r.partition_table;
    let table = match (t.kind, &t.disk_id) {
        (TableKind::None, _) => "none".to_string(),
        (k, Some(id)) => format!("{} (disk {id})", k.display_name()),
        (k, None) => k.display_name().to_string(),
    };
    outln!(
        "{target}: {} ({} bytes), partition table: {table}",
        format_size(r.medium_bytes),
        r.medium_bytes
    );
    for p in &t.partitions {
        let name = p
            .name
            .as_deref()
            .map(|n| format!(" {n:?}"))
            .unwrap_or_default();
        outln!(
            "  partition {:<3} start {:>10}  size {:>10}  type {} {}{}{name}",
            p.index,
            format_size(p.start),
            format_size(p.size),
            p.type_id,
            p.type_name.as_deref().unwrap_or(""),
            if p.bootable { " (active)" } else { "" },
        );
    }
    for w in &t.warnings {
        outln!("  warning: {w}");
    }
    for (i, v) in r.volumes.iter().enumerate() {
        outln!();
        print_volume(i + 1, v, findings.get(i));
    }
    if r.volumes.is_empty() {
        outln!("no volume found");
    }
}

fn print_volume(n: usize, v: &Volume, findings: Option<&VolumeFindings>) {
    let whereabouts = match v.partition {
        Some(p) => format!("partition {p}"),
        None => "whole medium".to_string(),
    };
    outln!(
        "volume {n} ({whereabouts}, {}): {}",
        format_size(v.size),
        v.fs.map_or("unknown", AnyFs::display_name)
    );
    let row = |k: &str, val: String| outln!("  {k:<15}{val}");
    if let Some(l) = &v.label {
        row("label", l.clone());
    } else if v.ours().is_some() {
        row("label", "(none)".into());
    }
    if let Some(s) = &v.serial {
        row("serial", serial_text(s));
    }
    if let Some(c) = v.cluster_size {
        row("cluster size", format_size(c));
    }
    if let Some(s) = v.sector_size {
        row("sector size", format!("{s} B"));
    }
    if let Some(c) = v.cluster_count {
        row("clusters", format_count(c));
    }
    if let Some(b) = v.fs_bytes {
        row("size", format!("{} ({b} bytes)", format_size(b)));
    }
    if let (Some(used), Some(free)) = (v.used_bytes, v.free_bytes) {
        let total = used + free;
        row(
            "used",
            format!("{} ({:.1}%)", format_size(used), pct(used, total)),
        );
        row(
            "free",
            format!("{} ({:.1}%)", format_size(free), pct(free, total)),
        );
    }
    if let Some(h) = v.free_bytes_fsinfo {
        if Some(h) != v.free_bytes {
            row("free (FSInfo)", format_size(h));
        }
    }
    match v.partition {
        Some(_) => row("partition", place(v.start)),
        None => row(
            "partition",
            "none (the volume spans the whole medium)".into(),
        ),
    }
    if let Some(f) = v.fat_offset {
        let what = match (v.fat_count, v.fat_bytes) {
            (Some(c), Some(b)) => format!("{}, {c} x {}", place(f), format_size(b)),
            _ => place(f),
        };
        row("FAT", what);
    }
    if let Some(d) = v.data_offset {
        row("data region", place(d));
    }
    if let Some(files) = &v.files {
        print_files(files, v.cluster_size.unwrap_or(0));
    }
    for w in &v.warnings {
        outln!("  warning: {w}");
    }
    if let Some(f) = findings {
        for x in &f.findings {
            outln!("  finding: {x}");
        }
        if f.dropped > 0 {
            outln!("  finding: ... and {} more", format_count(f.dropped));
        }
    }
    if let Some(e) = &v.error {
        outln!("  error: {e}");
    }
}

fn print_files(f: &FileStats, current: u64) {
    outln!(
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
    );
    outln!("  {:<15}{WASTE_DEFINITION}", "");
    if f.fragmented > 0 {
        outln!("  {:<15}{} files", "fragmented", format_count(f.fragmented));
    }
    outln!("  {:<15}{}", "directories", format_size(f.dir_bytes));
    outln!(
        "  {:<15}{:>10}  {:>12}  {:>12}  {:>12}",
        "at cluster",
        "size",
        "files take",
        "waste",
        "directories"
    );
    for a in &f.at_cluster_sizes {
        outln!(
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
        );
    }
}
