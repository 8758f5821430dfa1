//! `cargo xtask bench-probe --full [--reps N] [--write]`: the write pass of
//! `mkfs-alloc probe --full` against a plain `dd oflag=direct` of the same
//! size on the same kind of device (root).
//!
//! Two devices: a direct-I/O loop device over a 1 GiB file on the machine's
//! disk (genuine), and `tests/src/fakestick.py` announcing 1 GB and wrapping
//! at 768 MiB (the fake the tool tier checks `--full` on). Each run gets a
//! fresh device. `dd if=SOURCE bs=4M iflag=count_bytes oflag=direct
//! conv=fsync` writes the whole device and syncs at the end, as `--full`
//! flushes; SOURCE is a file of random bytes made once from `/dev/urandom`
//! (read from the page cache), not `/dev/zero`: zeros can be cheaper to
//! store (a virtual disk that detects them), and the probe's blocks are not
//! zeros. `--full` asks for 4 MiB per write; on Linux the device crate
//! passes them on in 1 MiB pieces through its aligned bounce buffer. The
//! probe's write time is its
//! report's `seq_bytes / seq_write_bytes_per_sec` (the write pass, flush
//! included, test blocks generated on the way). Runs alternate between the
//! two tools; the table gives the medians of `--reps` runs (default 3) and
//! the ratio of the medians. With `--write` the table replaces the one
//! between the `<!-- probe-full-bench:begin -->` / `<!-- probe-full-bench:end -->`
//! markers of BENCHMARKS.md.

use crate::probe_bench::{Fake, Mounted};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const MIB: u64 = 1 << 20;
/// The table's markers in BENCHMARKS.md.
pub const MARKERS: (&str, &str) = (
    "<!-- probe-full-bench:begin -->",
    "<!-- probe-full-bench:end -->",
);

const DEVICES: &[Fake] = &[
    Fake {
        mode: "genuine",
        announced: 1 << 30,
        real: 1 << 30,
        cache: 0,
        rate: 0,
    },
    Fake {
        mode: "wraparound",
        announced: 1_000_000_000,
        real: 768 * MIB,
        cache: 0,
        rate: 0,
    },
];

/// `bytes` random bytes in `path` (from `/dev/urandom`).
fn random_source(path: &Path, bytes: u64) -> Result<(), String> {
    let mut src = std::fs::File::open("/dev/urandom").map_err(|e| format!("/dev/urandom: {e}"))?;
    let mut dst = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let n = std::io::copy(&mut std::io::Read::take(&mut src, bytes), &mut dst)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if n != bytes {
        return Err(format!("{}: short copy", path.display()));
    }
    Ok(())
}

fn dd(src: &Path, dev: &str, bytes: u64) -> Result<f64, String> {
    let t = Instant::now();
    let out = Command::new("dd")
        .args([
            &format!("if={}", src.display()),
            &format!("of={dev}"),
            "bs=4M",
            &format!("count={bytes}"),
            "iflag=count_bytes",
            "oflag=direct",
            "conv=fsync",
            "status=none",
        ])
        .output()
        .map_err(|e| format!("cannot run dd: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "dd failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(t.elapsed().as_secs_f64())
}

/// `probe --full`: (write pass seconds, verify pass seconds, verdict).
fn full(bin: &Path, dev: &str) -> Result<(f64, f64, String), String> {
    let out = Command::new(bin)
        .args(["probe", "--full", "--yes", "--json", "--no-speed", dev])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("probe --full --json: {e}: {text}"))?;
    let s = &v["speeds"];
    let bytes = s["seq_bytes"].as_f64().unwrap_or(f64::NAN);
    let w = bytes / s["seq_write_bytes_per_sec"].as_f64().unwrap_or(f64::NAN);
    let r = bytes / s["seq_read_bytes_per_sec"].as_f64().unwrap_or(f64::NAN);
    Ok((w, r, v["verdict"].as_str().unwrap_or("?").to_string()))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split(' ').next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Runs both devices `reps` times each way; returns the Markdown table.
pub fn run(root: &Path, bin: &Path, reps: usize) -> Result<String, String> {
    let work = std::env::temp_dir().join(format!(
        "mkfs-alloc-bench-probe-full-{}",
        std::process::id()
    ));
    let source = std::env::temp_dir().join(format!(
        "mkfs-alloc-bench-probe-full-{}.random",
        std::process::id()
    ));
    let largest = DEVICES.iter().map(|d| d.announced).max().unwrap_or(0);
    random_source(&source, largest)?;
    let mut table = String::from(
        "| device | size | `dd oflag=direct` write (random data) | `probe --full` write pass | ratio | `probe --full` verify pass | verdict | load (1 min) before / after |\n|---|---|---|---|---|---|---|---|\n",
    );
    for d in DEVICES {
        let name = if d.mode == "genuine" {
            "genuine loop device (direct I/O, file on disk)".to_string()
        } else {
            format!("FUSE fake, wraps at {} MiB (direct-I/O loop)", d.real / MIB)
        };
        let before = load();
        let (mut dds, mut writes, mut reads) = (Vec::new(), Vec::new(), Vec::new());
        let mut verdict = String::new();
        for rep in 0..reps {
            let m = Mounted::new(root, &work, d)?;
            let t = dd(&source, m.dev(), d.announced)?;
            drop(m);
            let m = Mounted::new(root, &work, d)?;
            let (w, r, v) = full(bin, m.dev())?;
            drop(m);
            eprintln!(
                "xtask: {name} run {}: dd {t:.2} s, --full write {w:.2} s, verify {r:.2} s ({v})",
                rep + 1
            );
            dds.push(t);
            writes.push(w);
            reads.push(r);
            verdict = v;
        }
        let (t, w, r) = (median(&mut dds), median(&mut writes), median(&mut reads));
        table.push_str(&format!(
            "| {name} | {} bytes | {t:.2} s ({:.0} MB/s) | {w:.2} s ({:.0} MB/s) | {:.2} | {r:.2} s | {verdict} | {before} / {} |\n",
            d.announced,
            d.announced as f64 / t / 1e6,
            d.announced as f64 / w / 1e6,
            w / t,
            load()
        ));
    }
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_file(&source);
    Ok(table)
}
