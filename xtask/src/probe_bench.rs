//! `cargo xtask bench-probe [--write]`: `mkfs-alloc probe` against f3probe
//! (Debian `f3`) on the same fake sticks (root).
//!
//! Each fake is `tests/src/fakestick.py` (fusepy) over a fresh sparse
//! backing file, with a direct-I/O loop device on top; every run gets a new
//! fake, so neither tool sees the other's blocks. Wall time is measured
//! around the process; bytes written are each tool's own count
//! (`bytes_written` of `--json`; f3probe's `--time-ops` write count times
//! its block size). mkfs-alloc runs with `--no-speed` (f3probe measures no
//! speeds). With `--write` the table replaces the one between the
//! `<!-- probe-bench:begin -->` / `<!-- probe-bench:end -->` markers of
//! BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
/// The table's markers in BENCHMARKS.md.
pub const MARKERS: (&str, &str) = ("<!-- probe-bench:begin -->", "<!-- probe-bench:end -->");

/// A fake: mode (`genuine` is a plain loop device), announced, real, cache.
pub struct Fake {
    /// `wraparound`, `limbo` or `genuine`.
    pub mode: &'static str,
    /// Bytes announced.
    pub announced: u64,
    /// Bytes stored.
    pub real: u64,
    /// Bytes of write cache.
    pub cache: u64,
    /// Write speed in bytes per second (0: as fast as it goes; a
    /// `genuine` fake with a rate is served over FUSE too).
    pub rate: u64,
}

const FAKES: &[Fake] = &[
    Fake {
        mode: "wraparound",
        announced: 16 * GIB,
        real: 2 * GIB,
        cache: 0,
        rate: 0,
    },
    Fake {
        mode: "wraparound",
        announced: 32 * GIB,
        real: 4 * GIB,
        cache: MIB,
        rate: 0,
    },
    Fake {
        mode: "limbo",
        announced: 16 * GIB,
        real: 3 * GIB,
        cache: 4 * MIB,
        rate: 0,
    },
    Fake {
        mode: "genuine",
        announced: 16 * GIB,
        real: 16 * GIB,
        cache: 0,
        rate: 0,
    },
];

fn sh(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn mounted(dir: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(&*dir.to_string_lossy()))
}

/// A mounted fake with its loop device, torn down on drop.
pub struct Mounted {
    dir: PathBuf,
    child: Option<Child>,
    dev: String,
}

impl Mounted {
    /// Mounts `f` under `work` (cleared first) and attaches its loop device.
    pub fn new(root: &Path, work: &Path, f: &Fake) -> Result<Mounted, String> {
        let _ = std::fs::remove_dir_all(work);
        let dir = work.join("mnt");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let backing = work.join("backing");
        let mut m = Mounted {
            dir: dir.clone(),
            child: None,
            dev: String::new(),
        };
        let file = if f.mode == "genuine" && f.rate == 0 {
            std::fs::File::create(&backing)
                .and_then(|fh| fh.set_len(f.announced))
                .map_err(|e| format!("{}: {e}", backing.display()))?;
            backing
        } else {
            let script = root.join("tests/src/fakestick.py");
            let child = Command::new("python3")
                .arg(&script)
                .arg(&dir)
                .arg(&backing)
                .args([
                    f.mode.to_string(),
                    f.announced.to_string(),
                    f.real.to_string(),
                    f.cache.to_string(),
                    f.rate.to_string(),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
            m.child = Some(child);
            let start = Instant::now();
            while !mounted(&dir) {
                if start.elapsed() > Duration::from_secs(20) {
                    return Err("the fake stick did not mount".into());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            dir.join("stick")
        };
        m.dev = sh(Command::new("losetup")
            .args(["-f", "--show", "--direct-io=on"])
            .arg(&file))?
        .trim()
        .to_string();
        Ok(m)
    }

    /// The loop device.
    pub fn dev(&self) -> &str {
        &self.dev
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if !self.dev.is_empty() {
            let _ = Command::new("losetup").args(["-d", &self.dev]).status();
        }
        if let Some(mut c) = self.child.take() {
            for _ in 0..50 {
                if Command::new("fusermount")
                    .arg("-u")
                    .arg(&self.dir)
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.wait();
        }
    }
}

/// One run: verdict, real bytes, bytes written, seconds.
struct Run {
    verdict: String,
    real: u64,
    written: u64,
    secs: f64,
}

fn ours(bin: &Path, dev: &str) -> Result<Run, String> {
    let t = Instant::now();
    let out = sh(Command::new(bin).args(["probe", "--yes", "--json", "--no-speed", dev]))?;
    let secs = t.elapsed().as_secs_f64();
    let v: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("probe --json: {e}: {out}"))?;
    Ok(Run {
        verdict: v["verdict"].as_str().unwrap_or("?").to_string(),
        real: v["real_bytes"].as_u64().unwrap_or(0),
        written: v["bytes_written"].as_u64().unwrap_or(0),
        secs,
    })
}

/// The number after `label` on the line holding it, e.g. `(4194304 blocks)`.
fn field<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines().find(|l| l.contains(label))
}

fn f3(dev: &str) -> Result<Run, String> {
    let t = Instant::now();
    // f3probe exits non-zero for a fake (e.g. 103): read its report anyway.
    let out = Command::new("f3probe")
        .args(["--destructive", "--time-ops", dev])
        .output()
        .map_err(|e| format!("cannot run f3probe: {e}"))?;
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.contains("Probe time") {
        return Err(format!("f3probe printed no report:\n{out}"));
    }
    let secs = t.elapsed().as_secs_f64();
    let verdict = if out.contains("is the real thing") {
        "genuine".to_string()
    } else if let Some(l) = field(&out, "counterfeit of type") {
        l.rsplit(' ').next().unwrap_or("?").to_string()
    } else if out.contains("damaged") {
        "damaged".to_string()
    } else {
        "?".to_string()
    };
    // "Physical block size: 512.00 Byte (2^9 Bytes)"
    let order: u32 = field(&out, "Physical block size")
        .and_then(|l| l.split("(2^").nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(9);
    // "*Usable* size: 2.00 GB (4194304 blocks)"
    let blocks = |l: &str| -> Option<u64> { l.rsplit('(').next()?.split(' ').next()?.parse().ok() };
    let real = field(&out, "*Usable* size")
        .and_then(blocks)
        .map_or(0, |b| b << order);
    // " Write: 27.83s / 4192321 = 6us"
    let writes: u64 = field(&out, "Write:")
        .and_then(|l| l.split('/').nth(1))
        .and_then(|r| r.split('=').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    Ok(Run {
        verdict,
        real,
        written: writes << order,
        secs,
    })
}

fn size(b: u64) -> String {
    if b >= GIB && b % GIB == 0 {
        format!("{} GiB", b / GIB)
    } else if b >= GIB {
        format!("{:.2} GiB", b as f64 / GIB as f64)
    } else {
        format!("{:.1} MiB", b as f64 / MIB as f64)
    }
}

/// Runs every fake through both tools; returns the Markdown table.
pub fn run(root: &Path, bin: &Path) -> Result<String, String> {
    let work = std::env::temp_dir().join(format!("mkfs-alloc-bench-probe-{}", std::process::id()));
    let mut table = String::from(
        "| fake (announced / real, cache) | tool | verdict | real size found | wall time | bytes written |\n|---|---|---|---|---|---|\n",
    );
    for f in FAKES {
        let name = if f.mode == "genuine" {
            format!("genuine loop device {}", size(f.announced))
        } else {
            format!(
                "{} {} / {}, cache {}",
                f.mode,
                size(f.announced),
                size(f.real),
                if f.cache == 0 {
                    "none".to_string()
                } else {
                    size(f.cache)
                }
            )
        };
        for tool in ["mkfs-alloc probe", "f3probe 8.0"] {
            let m = Mounted::new(root, &work, f)?;
            let r = if tool == "f3probe 8.0" {
                f3(&m.dev)?
            } else {
                ours(bin, &m.dev)?
            };
            drop(m);
            eprintln!(
                "xtask: {name}: {tool}: {} {} in {:.1} s, {} written",
                r.verdict,
                r.real,
                r.secs,
                size(r.written)
            );
            table.push_str(&format!(
                "| {name} | {tool} | {} | {} | {:.1} s | {} |\n",
                r.verdict,
                size(r.real),
                r.secs,
                size(r.written)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(table)
}

/// Replaces the table between the markers `(begin, end)` of BENCHMARKS.md.
pub fn write(root: &Path, table: &str, (begin, end): (&str, &str)) -> Result<(), String> {
    let path = root.join("BENCHMARKS.md");
    let doc = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(a), Some(b)) = (doc.find(begin), doc.find(end)) else {
        return Err(format!(
            "{} has no {begin} ... {end} markers",
            path.display()
        ));
    };
    let new = format!("{}{begin}\n{table}{}", &doc[..a], &doc[b..]);
    std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))
}
