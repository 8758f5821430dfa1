//! The probe's report: one JSON document, or text.

use super::ProbeArgs;
use mkfs_alloc::device::ProbeSummary;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc_capacity::{Mode, ProbeReport};
use serde_json::json;
use std::path::Path;

/// Prints the report as `--json` / `--quiet` ask.
pub fn report(a: &ProbeArgs, r: &ProbeReport) {
    if a.json {
        let mut v = json!(r);
        if let Some(o) = v.as_object_mut() {
            o.insert("target".into(), json!(a.target.display().to_string()));
            o.insert("keep_data".into(), json!(a.keep_data));
        }
        outln!("{v:#}");
    } else if !a.quiet {
        text(&a.target, r);
    }
}

fn rate(b: f64) -> String {
    format!("{:.1} MB/s", b / 1e6)
}

fn duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 5400.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

fn text(path: &Path, r: &ProbeReport) {
    outln!("{}: {}", path.display(), ProbeSummary(r));
    if let Some(w) = r.wrap_bytes {
        outln!("  wraps at    {}", format_size(w));
    }
    if r.mode == Mode::Sampling {
        match r.cache_bytes {
            Some(0) => outln!("  cache       none"),
            Some(c) => outln!("  cache       about {}", format_size(c)),
            None => outln!(
                "  cache       none found (searched up to {})",
                format_size(r.cache_search_limit_bytes)
            ),
        }
    }
    if let Some(b) = r.bad_bytes {
        outln!(
            "  bad         {} did not read back as written (every block tested)",
            format_size(b)
        );
    }
    if let Some(e) = &r.first_error {
        outln!("  I/O error   {e}");
    }
    outln!(
        "  written     {} in {:.1} s ({} reopens)",
        format_size(r.bytes_written),
        r.seconds,
        r.resets
    );
    if let Some(b) = r.bytes_restored {
        outln!("  restored    {} (--keep-data)", format_size(b));
    }
    if let Some(s) = &r.speeds {
        let random = s.random_write_iops.map_or(String::new(), |iops| {
            format!("; {} B random writes {iops:.0} IOPS", s.random_write_bytes)
        });
        outln!(
            "  speed       sequential write {}, read {}{random}",
            rate(s.seq_write_bytes_per_sec),
            rate(s.seq_read_bytes_per_sec),
        );
    }
    if r.verdict.is_fake() {
        if r.real_bytes > 0 {
            outln!(
                "  Only the first {} store data. To use them: mkfs-alloc --size {} ... {}",
                format_size(r.real_bytes),
                r.real_bytes,
                path.display()
            );
        } else {
            outln!("  No usable storage at its start: do not store data on it.");
        }
    }
    if r.mode == Mode::Sampling {
        let estimate = r.speeds.as_ref().map_or(String::new(), |s| {
            let secs = r.announced_bytes as f64 / s.seq_write_bytes_per_sec
                + r.announced_bytes as f64 / s.seq_read_bytes_per_sec;
            format!(", about {} at the speeds measured", duration(secs))
        });
        outln!(
            "  certainty   sampling cannot prove that every block stores data (see `mkfs-alloc probe --help`); where that matters, `mkfs-alloc probe --full {}` writes and reads back all of it (destroys its data{estimate})",
            crate::text::shell_word(path)
        );
    }
}
