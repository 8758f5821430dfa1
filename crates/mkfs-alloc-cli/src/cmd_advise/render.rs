//! The human-readable advise report: the data summary, the size histogram,
//! one table per file system with bars.

use super::*;
use mkfs_alloc_advise::text::{histogram, table, Glyphs};

/// The human-readable report.
pub fn render(
    advice: &Advice,
    data: Option<&ScanResult>,
    paths: &[PathBuf],
    unicode: bool,
) -> String {
    use std::fmt::Write;
    let g = Glyphs::new(unicode);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Volume: {} ({} bytes), {}-byte sectors",
        format_size(advice.volume_bytes),
        format_count(advice.volume_bytes),
        advice.sector_size
    );
    if let (Some(d), Some(s)) = (data, &advice.data) {
        render_data_summary(&mut o, s, paths);
        o.push_str(&histogram(d, &g));
    }
    for f in &advice.per_fs {
        render_fs(&mut o, advice, f, &g, unicode);
    }
    o
}

/// The data line of the report and what the scan skipped or could not read.
fn render_data_summary(o: &mut String, s: &mkfs_alloc_advise::DataSummary, paths: &[PathBuf]) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "Data:   {}, {}, {} ({} bytes) in {}; scanned in {:.2} s",
        plural(s.files, "file", "files"),
        plural(s.directories, "directory", "directories"),
        format_size(s.apparent_bytes),
        format_count(s.apparent_bytes),
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        s.scan_seconds
    );
    if s.symlinks_skipped > 0 {
        let _ = writeln!(
            o,
            "        {} skipped (--follow-symlinks follows them)",
            plural(s.symlinks_skipped, "symbolic link", "symbolic links")
        );
    }
    if s.hard_links_as_files > 0 {
        let _ = writeln!(
            o,
            "        {} to files already counted, each counted as a file (a copy onto FAT or exFAT stores it so; --hard-links-once counts them once)",
            plural(s.hard_links_as_files, "further hard link", "further hard links")
        );
    }
    if s.duplicates_skipped > 0 {
        let _ = writeln!(
            o,
            "        {} counted once",
            plural(
                s.duplicates_skipped,
                "further hard link or repeated directory",
                "further hard links or repeated directories"
            )
        );
    }
    if s.special_skipped > 0 {
        let _ = writeln!(
            o,
            "        {} skipped",
            plural(
                s.special_skipped,
                "FIFO, socket or device",
                "FIFOs, sockets or devices"
            )
        );
    }
    if s.unreadable > 0 {
        let _ = writeln!(
            o,
            "        {}, not counted; first {}:",
            plural(s.unreadable, "unreadable entry", "unreadable entries"),
            s.unreadable_paths.len()
        );
        for u in &s.unreadable_paths {
            let _ = writeln!(o, "          {}: {}", u.path.display(), u.error);
        }
    }
    if s.invalid_names > 0 {
        let _ = writeln!(
            o,
            "        {} with characters exFAT and FAT32 cannot store; first {}:",
            plural(s.invalid_names, "name", "names"),
            s.invalid_name_paths.len()
        );
        for p in &s.invalid_name_paths {
            let _ = writeln!(o, "          {}", p.display());
        }
    }
}

fn render_fs(o: &mut String, advice: &Advice, f: &FsAdvice, g: &Glyphs, unicode: bool) {
    use std::fmt::Write;
    let fs = f.fs;
    let _ = writeln!(o, "\n{fs} on {}", format_size(advice.volume_bytes));
    render_defaults(o, f);
    if f.rows.is_empty() {
        for n in &f.notes {
            let _ = writeln!(o, "  {}", crate::hints::fs_note(n, fs));
        }
        return;
    }
    let with_data = advice.data.is_some();
    let apparent = advice.data.as_ref().map_or(0, |d| d.apparent_bytes);
    o.push_str(&table(f, with_data, apparent, g, &|n| {
        crate::hints::row_note(n, fs)
    }));
    if with_data {
        let _ = writeln!(
            o,
            "  bars: on-disk footprint; {} the data's size, {} waste on the same scale",
            g.data, g.full
        );
        let _ = writeln!(o, "  {WASTE_DEFINITION}");
    } else {
        let _ = writeln!(o, "  bars: metadata overhead");
    }
    for n in &f.notes {
        // Invalid peer defaults are marked in the "defaults" line.
        if !matches!(n, FsNote::DefaultNotValid { .. }) {
            let _ = writeln!(o, "  note: {}", crate::hints::fs_note(n, fs));
        }
    }
    let arrow = if unicode { "→" } else { "->" };
    match &f.recommendation {
        Some(r) => {
            let _ = writeln!(
                o,
                "  {arrow} recommended: {} ({})",
                format_size(r.cluster_size),
                r.reason
            );
        }
        None if with_data => {
            let _ = writeln!(o, "  {arrow} no recommendation: the data cannot be stored on this volume as {fs} (see the notes)");
        }
        None => {}
    }
}

/// The peers' defaults line (a default that is not valid here is marked).
fn render_defaults(o: &mut String, f: &FsAdvice) {
    use std::fmt::Write;
    let valid = |c: u64| {
        if f.rows.iter().any(|r| r.cluster_size == c) {
            format_size(c)
        } else {
            format!("{} (not valid here)", format_size(c))
        }
    };
    let mut peers = Vec::new();
    match f.windows_default {
        Some(c) => peers.push(format!("Windows {}", valid(c))),
        None => peers.push("Windows refuses this size".into()),
    }
    if let Some(c) = f.sd_recommended {
        peers.push(format!("SD spec {}", valid(c)));
    }
    peers.push(format!("{} {}", f.mkfs_tool, valid(f.mkfs_default)));
    if let Some(c) = f.auto_cluster {
        peers.push(format!("--cluster auto {}", format_size(c)));
    }
    let _ = writeln!(o, "  defaults: {}", peers.join(", "));
}
