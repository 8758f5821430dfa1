//! The human-readable advise report: the data summary, the size histogram,
//! one table per file system with bars.

use super::*;

/// Bar glyphs.
struct Glyphs {
    /// A whole cell of a plain bar (histogram, overhead) or of waste.
    full: char,
    /// A cell of file data in a footprint bar.
    data: char,
    /// Partial cells, 1/8 to 7/8 (unicode only).
    eighths: Option<[char; 7]>,
    /// End of a clipped bar.
    clipped: char,
}

const BAR_WIDTH: usize = 28;
/// Cells that stand for the data's own size in a footprint bar.
const DATA_CELLS: usize = 12;
/// Most cells of waste drawn after the data.
const WASTE_CELLS: usize = 24;

/// `cells` cells (fractional) of `g.full`, with a partial last cell when
/// unicode is available.
fn cells(g: &Glyphs, cells: f64) -> String {
    let cells = cells.max(0.0);
    let whole = cells.floor() as usize;
    let mut s: String = std::iter::repeat_n(g.full, whole).collect();
    let eighth = ((cells - whole as f64) * 8.0).round() as usize;
    match (g.eighths, eighth) {
        (_, 0) => {}
        (Some(_), 8) | (None, 4..) => s.push(g.full),
        (Some(e), n) => s.push(e[n - 1]),
        (None, _) => {}
    }
    s
}

/// A bar of `value / max` × [`BAR_WIDTH`] cells.
fn bar(g: &Glyphs, value: f64, max: f64) -> String {
    if max <= 0.0 {
        return String::new();
    }
    cells(g, value / max * BAR_WIDTH as f64)
}

/// A footprint bar: the data's own size as [`DATA_CELLS`] cells of
/// `g.data`, then the waste on the same scale in `g.full` cells, clipped at
/// [`WASTE_CELLS`].
fn footprint_bar(g: &Glyphs, apparent: u64, waste: u64) -> String {
    let mut s: String = std::iter::repeat_n(g.data, DATA_CELLS).collect();
    if apparent == 0 {
        return s;
    }
    let w = waste as f64 / apparent as f64 * DATA_CELLS as f64;
    if w > WASTE_CELLS as f64 {
        s.push_str(&cells(g, (WASTE_CELLS - 1) as f64));
        s.push(g.clipped);
    } else {
        s.push_str(&cells(g, w));
    }
    s
}

/// The human-readable report.
pub fn render(
    advice: &Advice,
    data: Option<&ScanResult>,
    paths: &[PathBuf],
    unicode: bool,
) -> String {
    use std::fmt::Write;
    let g = if unicode {
        Glyphs {
            full: '█',
            data: '░',
            eighths: Some(['▏', '▎', '▍', '▌', '▋', '▊', '▉']),
            clipped: '▶',
        }
    } else {
        Glyphs {
            full: '#',
            data: '.',
            eighths: None,
            clipped: '>',
        }
    };
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
        render_histogram(&mut o, d, &g);
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

fn render_histogram(o: &mut String, d: &ScanResult, g: &Glyphs) {
    use std::fmt::Write;
    let h = d.histogram();
    if h.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nFile sizes (by power of two)");
    let max = h.iter().map(|b| b.files).max().unwrap_or(1) as f64;
    let label = |b: &mkfs_alloc_advise::SizeBucket| {
        if b.max == 0 {
            "empty".to_string()
        } else if b.min == b.max {
            format_size(b.min)
        } else {
            format!(
                "{} - <{}",
                format_size(b.min),
                format_size(b.max.saturating_add(1))
            )
        }
    };
    let width = h.iter().map(|b| label(b).len()).max().unwrap_or(0);
    for b in &h {
        let _ = writeln!(
            o,
            "  {:<width$}  {:>17}  {:>10}  {}",
            label(b),
            plural(b.files, "file ", "files"),
            format_size(b.bytes),
            bar(g, b.files as f64, max)
        );
    }
}

fn pct(v: f64) -> String {
    if v < 0.01 && v > 0.0 {
        "<0.01%".into()
    } else {
        format!("{v:.2}%")
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
    render_table(o, f, with_data, apparent, g);
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

/// The table of cluster sizes: a header, one row each with its notes,
/// columns padded to their widest cell.
fn render_table(o: &mut String, f: &FsAdvice, with_data: bool, apparent: u64, g: &Glyphs) {
    use std::fmt::Write;
    let mut table: Vec<[String; COLS]> = vec![[
        "cluster".into(),
        "clusters".into(),
        "overhead".into(),
        String::new(),
        if with_data { "on disk" } else { "usable" }.into(),
        if with_data { "waste" } else { "" }.into(),
        String::new(),
        if with_data { "fits" } else { "" }.into(),
        String::new(),
    ]];
    let max_bar = f
        .rows
        .iter()
        .map(|r| r.overhead_percent)
        .fold(0.0, f64::max);
    for r in &f.rows {
        table.push(row_cells(r, with_data, apparent, max_bar, g));
    }
    let widths: Vec<usize> = (0..COLS)
        .map(|i| {
            table
                .iter()
                .map(|c| c[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, cells) in table.iter().enumerate() {
        let mut line = String::from("  ");
        for (j, c) in cells.iter().enumerate() {
            if widths[j] == 0 {
                continue;
            }
            let pad = widths[j] - c.chars().count();
            // Numbers right-aligned; the size, the bar left-aligned.
            if j == 0 || j == COLS - 1 {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            }
            line.push_str("  ");
        }
        if i > 0 {
            let notes: Vec<String> = f.rows[i - 1]
                .notes
                .iter()
                .map(|n| crate::hints::row_note(*n, f.fs))
                .collect();
            line.push_str(&notes.join("; "));
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

/// Columns of the table: cluster, clusters, overhead, overhead %, on disk
/// (or usable), waste, waste %, fits, bar.
const COLS: usize = 9;

fn row_cells(r: &Row, with_data: bool, apparent: u64, max_bar: f64, g: &Glyphs) -> [String; COLS] {
    if with_data {
        let on_disk = r.data_bytes_on_disk.unwrap_or(0);
        [
            format_size(r.cluster_size),
            format_count(u64::from(r.cluster_count)),
            format_size(r.overhead_bytes),
            pct(r.overhead_percent),
            format_size(on_disk),
            r.waste_bytes.map(format_size).unwrap_or_default(),
            r.waste_percent.map(pct).unwrap_or_default(),
            if r.fits == Some(true) { "yes" } else { "NO" }.into(),
            footprint_bar(g, apparent, r.waste_bytes.unwrap_or(0)),
        ]
    } else {
        [
            format_size(r.cluster_size),
            format_count(u64::from(r.cluster_count)),
            format_size(r.overhead_bytes),
            pct(r.overhead_percent),
            format_size(r.usable_bytes),
            String::new(),
            String::new(),
            String::new(),
            bar(g, r.overhead_percent, max_bar),
        ]
    }
}
