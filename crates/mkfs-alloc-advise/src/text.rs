//! The advice's histogram and tables as text, with bars drawn in unicode
//! block characters or ASCII; every line ends in a newline. A front end
//! adds the lines around them and words the rows' notes.

use crate::{FsAdvice, Row, RowNote, ScanResult};
use mkfs_alloc_layout::units::{format_count, format_size, plural};
use std::fmt::Write as _;

/// Bar glyphs.
#[derive(Debug, Clone, Copy)]
pub struct Glyphs {
    /// A whole cell of a plain bar (histogram, overhead) or of waste.
    pub full: char,
    /// A cell of file data in a footprint bar.
    pub data: char,
    /// Partial cells, 1/8 to 7/8 (unicode only).
    eighths: Option<[char; 7]>,
    /// End of a clipped bar.
    clipped: char,
}

impl Glyphs {
    /// Unicode block characters, or ASCII (`#`, `.`, `>`).
    pub fn new(unicode: bool) -> Self {
        if unicode {
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
        }
    }
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

/// The files' sizes by power of two, a bar each (nothing for no files).
pub fn histogram(d: &ScanResult, g: &Glyphs) -> String {
    let mut o = String::new();
    let h = d.histogram();
    if h.is_empty() {
        return o;
    }
    let _ = writeln!(o, "\nFile sizes (by power of two)");
    let max = h.iter().map(|b| b.files).max().unwrap_or(1) as f64;
    let label = |b: &crate::SizeBucket| {
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
    o
}

/// A percentage with two decimals (`<0.01%` for less).
fn pct(v: f64) -> String {
    if v < 0.01 && v > 0.0 {
        "<0.01%".into()
    } else {
        format!("{v:.2}%")
    }
}

/// The table of cluster sizes: a header, one row each with its notes
/// (`note`: a note's words), columns padded to their widest cell
/// (`with_data`: with the footprint columns of data of `apparent` bytes).
pub fn table(
    f: &FsAdvice,
    with_data: bool,
    apparent: u64,
    g: &Glyphs,
    note: &dyn Fn(RowNote) -> String,
) -> String {
    let mut o = String::new();
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
            let notes: Vec<String> = f.rows[i - 1].notes.iter().map(|n| note(*n)).collect();
            line.push_str(&notes.join("; "));
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
    o
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_their_width_with_partial_cells() {
        let (ascii, uni) = (Glyphs::new(false), Glyphs::new(true));
        assert_eq!(bar(&ascii, 1.0, 2.0), "#".repeat(BAR_WIDTH / 2));
        assert_eq!(bar(&ascii, 0.0, 0.0), "");
        // 1/56 of the width: an eighth of a cell in unicode, nothing in ASCII.
        assert_eq!(bar(&uni, 1.0, 8.0 * BAR_WIDTH as f64), "▏");
        assert_eq!(bar(&ascii, 1.0, 8.0 * BAR_WIDTH as f64), "");
        // Half a cell rounds up in ASCII.
        assert_eq!(cells(&ascii, 2.5), "###");
    }

    #[test]
    fn a_footprint_bar_draws_the_data_then_the_waste_clipped() {
        let g = Glyphs::new(false);
        let data = ".".repeat(DATA_CELLS);
        assert_eq!(footprint_bar(&g, 0, 5), data);
        assert_eq!(
            footprint_bar(&g, 100, 50),
            format!("{data}{}", "#".repeat(6))
        );
        let clipped = footprint_bar(&g, 1, 1000);
        assert_eq!(clipped, format!("{data}{}>", "#".repeat(WASTE_CELLS - 1)));
    }

    #[test]
    fn percentages_keep_two_decimals() {
        assert_eq!(pct(12.345), "12.35%");
        assert_eq!(pct(0.001), "<0.01%");
        assert_eq!(pct(0.0), "0.00%");
    }
}
