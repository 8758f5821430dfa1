//! The Markdown table of `cargo xtask bench --resize`, and the issue's
//! goals checked against each row's figures.

use crate::bench::fmt_bytes;
use crate::bench_resize::{Case, Figures, Kind};

/// The goals for `kind` at `ours` seconds against the floor and
/// the peers' seconds: at most 2x the floor, and for a grow or a
/// conversion at most 0.05x copy off and back; each "met" or "not met".
pub(crate) fn goals(kind: Kind, ours: f64, floor: f64, peers: f64) -> String {
    let verdict = |ok: bool| if ok { "met" } else { "not met" };
    let to_floor = ours / floor;
    let mut s = format!(
        "≤ 2x the floor: {} ({to_floor:.2}x)",
        verdict(to_floor <= 2.0)
    );
    if kind != Kind::Shrink {
        let to_peers = ours / peers;
        s.push_str(&format!(
            "; ≤ 0.05x copy off and back: {} ({to_peers:.4}x)",
            verdict(to_peers <= 0.05)
        ));
    }
    s
}

/// `b` bytes in GiB, or MiB below a whole GiB.
fn size_name(b: u64) -> String {
    if b % (1 << 30) == 0 {
        format!("{} GiB", b >> 30)
    } else {
        format!("{} MiB", b >> 20)
    }
}

fn name(c: &Case) -> String {
    match c.kind {
        Kind::Grow => format!(
            "exFAT grow {} → {} (`mkfs.exfat {}`, exfat-fuse; the image extended first)",
            size_name(c.from),
            size_name(c.to),
            c.mkfs.join(" ")
        ),
        Kind::Shrink => format!(
            "exFAT shrink {} → {} (`mkfs.exfat`, exfat-fuse; data over the whole volume)",
            size_name(c.from),
            size_name(c.to)
        ),
        Kind::Convert => format!(
            "FAT32 {} → exFAT (`mkfs.fat -F 32`, mtools)",
            size_name(c.from)
        ),
    }
}

/// The table of `rows`, the load (`uptime`) before and after.
pub(crate) fn table(rows: &[(&Case, Figures)], before: &str, after: &str, quick: bool) -> String {
    let sizes = if quick {
        "`--quick`: an eighth of the issue's sizes"
    } else {
        "the issue's sizes"
    };
    let mut t = format!(
        "One run, {sizes}, the ways one after the other per case. `uptime` before: {before}.\n\n\
         | case | files (data, % of the smaller volume) | mkfs-alloc | copy off + mkfs + copy back | ratio | fatresize | floor | ratio to the floor | staged floor | ratio to the staged floor | bytes written (planned / `write_bytes`) | bytes read (planned) | moved below the new end | peak RSS | load before / after | the issue's goals |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for (c, f) in rows {
        let peers = f.off + f.mkfs + f.back;
        let fatresize = match c.kind {
            Kind::Convert => "cannot: it converts nothing",
            _ => "cannot: FAT16/32 only",
        };
        let floor_what = match c.kind {
            Kind::Shrink => "moved bytes read, planned bytes written",
            _ => "planned bytes written",
        };
        let (staged, staged_ratio) = match (&f.stages, f.floor_staged) {
            (Some(st), Some(s)) => (
                format!(
                    "{s:.3} s ({} stages)",
                    st.iter().filter(|&&b| b > 0).count()
                ),
                format!("{:.2}x", f.ours / s),
            ),
            _ => ("not simulated".to_string(), String::new()),
        };
        let smaller = c.from.min(c.to);
        t.push_str(&format!(
            "| {} | {} ({}, {:.0} %) | {:.3} s | {:.1} s ({:.1} + {:.2} + {:.1}) | {:.4}x | {fatresize} | {:.3} s ({floor_what}) | {:.2}x | {staged} | {staged_ratio} | {} / {} | {} | {} | {:.1} MiB | {} / {} | {} |\n",
            name(c),
            f.files,
            fmt_bytes(f.tree_bytes as f64),
            100.0 * f.tree_bytes as f64 / smaller as f64,
            f.ours,
            peers,
            f.off,
            f.mkfs,
            f.back,
            f.ours / peers,
            f.floor,
            f.ours / f.floor,
            fmt_bytes(f.planned_written as f64),
            fmt_bytes(f.written as f64),
            fmt_bytes(f.planned_read as f64),
            fmt_bytes(f.moved as f64),
            f.rss_kib as f64 / 1024.0,
            f.load_before,
            f.load_after,
            goals(c.kind, f.ours, f.floor, peers),
        ));
    }
    t.push_str(&format!(
        "\nBoth results checked: `fsck.exfat -n` clean, `blkid` names exFAT, `dump.exfat`'s volume length is the new size, the SHA-256 of every file (through exfat-fuse) equal to the tree's. `uptime` after: {after}.\n"
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_goals_are_met_at_their_bounds_and_not_past_them() {
        let g = goals(Kind::Grow, 2.0, 1.0, 40.0);
        assert_eq!(
            g,
            "≤ 2x the floor: met (2.00x); ≤ 0.05x copy off and back: met (0.0500x)"
        );
        let g = goals(Kind::Convert, 2.1, 1.0, 40.0);
        assert!(g.starts_with("≤ 2x the floor: not met (2.10x)"), "{g}");
        assert!(g.ends_with("back: not met (0.0525x)"), "{g}");
        assert_eq!(
            goals(Kind::Shrink, 1.0, 1.0, 1.0),
            "≤ 2x the floor: met (1.00x)"
        );
    }
}
