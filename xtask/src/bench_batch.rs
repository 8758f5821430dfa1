//! `cargo xtask bench --batch` (root): eight targets filled with one tree in
//! one run (`mkfs-alloc --rootdir TREE DEV1 ... DEV8`) against eight runs
//! one after the other, and the `--verify` read-back against a plain
//! sequential read of the same bytes.
//!
//! Two kinds of targets: "USB sticks", `tests/src/fakestick.py` genuine
//! sticks over FUSE whose writes are slowed to [`STICK_RATE`] (as a real
//! stick's, so the host is not the bottleneck), and loop devices over
//! sparse files (the host's disk and page cache the bottleneck). Wall time
//! around the process; the bytes the process (and its children) read
//! through read(2) (`rchar` of `/proc/$$/io` of the shell that reaped it):
//! the tree is read once by the batch, eight times by the runs one after
//! the other. The machine's load average is printed with the table.

use crate::bench::{fmt_bytes, median};
use crate::probe_bench::{Fake, Mounted};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const MIB: u64 = 1 << 20;
/// The slowed sticks' write speed: 24 MiB/s.
pub const STICK_RATE: u64 = 24 * MIB;
/// Targets per batch.
const TARGETS: usize = 8;

/// One measured command: seconds, and bytes read through read(2).
struct Io {
    secs: f64,
    rchar: u64,
}

/// Runs `script` (with `args` as `$1`...) under `sh`, then reads the
/// shell's `/proc/$$/io`, which holds what its reaped children read.
fn measure(script: &str, args: &[String]) -> Result<Io, String> {
    let full = format!("{script}\ncat /proc/$$/io");
    let start = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(&full)
        .arg("sh")
        .args(args)
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{script} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let io = String::from_utf8_lossy(&out.stdout);
    let rchar = io
        .lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no rchar in /proc/$$/io")?;
    Ok(Io { secs, rchar })
}

/// `files` files of 4 MiB of random bytes.
fn make_tree(dir: &Path, files: usize) -> Result<u64, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut seed = 0x1234_5678_9ABC_DEF0u64;
    let mut buf = vec![0u8; 4 * MIB as usize];
    for i in 0..files {
        for c in buf.chunks_mut(8) {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            c.copy_from_slice(&seed.to_le_bytes()[..c.len()]);
        }
        let sub = dir.join(format!("set{}", i % 4));
        std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
        std::fs::File::create(sub.join(format!("clip {i:03}.bin")))
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| e.to_string())?;
    }
    Ok(files as u64 * 4 * MIB)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| {
            let v: Vec<&str> = l.split_whitespace().take(3).collect();
            (v.len() == 3).then(|| v.join(" "))
        })
        .unwrap_or_else(|| "?".into())
}

/// Runs the batch benchmark; returns the Markdown text.
pub fn run(bin: &Path, reps: usize, quick: bool) -> Result<String, String> {
    let root = crate::workspace_root();
    let dir = std::env::temp_dir().join(format!("mkfs-alloc-bench-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let tree = dir.join("tree");
    let files = if quick { 8 } else { 32 };
    let tree_bytes = make_tree(&tree, files)?;
    let size = if quick { 96 * MIB } else { 224 * MIB };
    let load_before = load();
    let mut text = format!(
        "Tree: {files} files of 4 MiB ({}); {TARGETS} targets of {}..{} MiB, exFAT, \
         `--rootdir`; median of {reps} (batch and sequential alternating). \
         Load average before: {load_before}.\n\n",
        fmt_bytes(tree_bytes as f64),
        size / MIB,
        size / MIB + TARGETS as u64 - 1
    );
    text.push_str("| targets | run | wall time (median) | vs 8 sequential runs | read(2) bytes (median) | tree bytes read |\n");
    text.push_str("|---|---|---|---|---|---|\n");
    let kinds = [
        ("USB sticks (FUSE, writes at 24 MiB/s)", STICK_RATE),
        ("loop devices over files", 0),
    ];
    let mut verify_text = String::new();
    for (label, rate) in kinds {
        let work = dir.join(if rate > 0 { "sticks" } else { "loops" });
        let mut mounts = Vec::new();
        for i in 0..TARGETS {
            let f = Fake {
                mode: "genuine",
                announced: size + i as u64 * MIB,
                real: size + i as u64 * MIB,
                cache: 0,
                rate,
            };
            mounts.push(Mounted::new(&root, &work.join(i.to_string()), &f)?);
        }
        let devs: Vec<String> = mounts.iter().map(|m| m.dev().to_string()).collect();
        let mut args = vec![bin.display().to_string(), tree.display().to_string()];
        args.extend(devs.iter().cloned());
        let one = "b=$1; t=$2; shift 2; \"$b\" --fs exfat --rootdir \"$t\" --yes --quiet \"$@\"";
        let seq = "b=$1; t=$2; shift 2; for d in \"$@\"; do \"$b\" --fs exfat --rootdir \"$t\" --yes --quiet \"$d\" || exit 1; done";
        let (mut batch, mut each) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            batch.push(measure(one, &args)?);
            each.push(measure(seq, &args)?);
        }
        let t_batch = median(batch.iter().map(|s| s.secs).collect());
        let t_each = median(each.iter().map(|s| s.secs).collect());
        let r_batch = median(batch.iter().map(|s| s.rchar as f64).collect());
        let r_each = median(each.iter().map(|s| s.rchar as f64).collect());
        text.push_str(&format!(
            "| {label} | one batch run | {t_batch:.2} s | {:.2}x | {} | {:.2}x the tree |\n",
            t_batch / t_each,
            fmt_bytes(r_batch),
            r_batch / tree_bytes as f64
        ));
        text.push_str(&format!(
            "| {label} | 8 runs one after the other | {t_each:.2} s | 1.00x | {} | {:.2}x the tree |\n",
            fmt_bytes(r_each),
            r_each / tree_bytes as f64
        ));
        if rate == 0 {
            verify_text = verify(bin, &tree, &devs)?;
        }
        drop(mounts);
    }
    let _ = std::fs::remove_dir_all(&dir);
    text.push_str(&format!("\nLoad average after: {}.\n\n", load()));
    text.push_str(&verify_text);
    Ok(text)
}

/// `--verify` on the loop devices against `dd` of the same number of bytes
/// from each device's start, eight at once, the page cache of the devices
/// dropped first in both.
fn verify(bin: &Path, tree: &Path, devs: &[String]) -> Result<String, String> {
    let mut cmd = Command::new(bin);
    cmd.args(["--fs", "exfat", "--rootdir"])
        .arg(tree)
        .args(["--yes", "--verify", "--json"])
        .args(devs);
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "--verify: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("--verify --json: {e}"))?;
    let targets = v["targets"].as_array().ok_or("no targets")?;
    let mut read = Vec::new();
    let mut secs = Vec::new();
    for t in targets {
        read.push(t["verify"]["bytes_read"].as_u64().ok_or("no bytes_read")?);
        secs.push(t["verify"]["seconds"].as_f64().ok_or("no seconds")?);
    }
    let total: u64 = read.iter().sum();
    let per_target = median(read.iter().zip(&secs).map(|(b, s)| *b as f64 / s).collect());
    // The same bytes with dd, eight at once, after dropping the caches.
    let mut script = String::from("for d in \"$@\"; do blockdev --flushbufs \"$d\"; done\n");
    for (i, b) in read.iter().enumerate() {
        script.push_str(&format!(
            "dd if=\"${}\" of=/dev/null bs=8M count={} status=none &\n",
            i + 1,
            b.div_ceil(8 * MIB)
        ));
    }
    script.push_str("wait\n");
    let start = Instant::now();
    let status = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg("sh")
        .args(devs)
        .status()
        .map_err(|e| e.to_string())?;
    let dd_secs = start.elapsed().as_secs_f64();
    if !status.success() {
        return Err("dd failed".into());
    }
    let dd_total: u64 = read.iter().map(|b| b.div_ceil(8 * MIB) * 8 * MIB).sum();
    let slowest = secs.iter().copied().fold(0.0, f64::max);
    Ok(format!(
        "| read-back of {} targets (loop devices) | bytes | wall time | throughput |\n|---|---|---|---|\n\
         | `--verify` (read back and compared, per target: median {}/s) | {} | {slowest:.2} s (slowest target) | {}/s |\n\
         | `dd bs=8M` of the same bytes from each device's start, all at once | {} | {dd_secs:.2} s | {}/s |\n",
        devs.len(),
        fmt_bytes(per_target),
        fmt_bytes(total as f64),
        fmt_bytes(total as f64 / slowest),
        fmt_bytes(dd_total as f64),
        fmt_bytes(dd_total as f64 / dd_secs),
    ))
}
