//! `cargo xtask bench`: mkfs-alloc side by side with mkfs.exfat and
//! mkfs.fat, in one run, alternating, several repetitions, medians and ratios.
//!
//! Per run it measures wall time, bytes written (`write_bytes`, the bytes
//! sent to the storage layer, from `/proc/PID/io`) and peak memory (max RSS,
//! from GNU time). The "floor" is the number of bytes
//! the metadata itself needs (boot regions, FAT entries in use, bitmap,
//! up-case table, root directory), computed from mkfs-alloc's JSON plan.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;
const MIB: u64 = 1 << 20;

/// One measured run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) secs: f64,
    pub(crate) write_bytes: u64,
    pub(crate) max_rss_kib: u64,
}

/// Runs `cmd` and measures it. Fails if the command fails.
///
/// The command runs as `/usr/bin/time -f %M sh -c 'CMD; cat /proc/$$/io'`:
/// GNU time reports the peak RSS of the shell and its children (the shell's
/// own is far smaller than the tools'), and once the shell has reaped the
/// tool, its `/proc/$$/io` includes the tool's `write_bytes`.
pub(crate) fn measure(cmd: &Command) -> Result<Sample, String> {
    let rss_file =
        std::env::temp_dir().join(format!("mkfs-alloc-bench-rss-{}", std::process::id()));
    let mut wrapped = Command::new("/usr/bin/time");
    wrapped
        .arg("-o")
        .arg(&rss_file)
        .args([
            "-f",
            "%M",
            "sh",
            "-c",
            "\"$0\" \"$@\" >/dev/null || exit $?; cat /proc/$$/io",
        ])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    let start = Instant::now();
    let out = wrapped
        .output()
        .map_err(|e| format!("running {cmd:?}: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let io = String::from_utf8_lossy(&out.stdout);
    let write_bytes = io
        .lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("no write_bytes in the output of {cmd:?}"))?;
    let rss = std::fs::read_to_string(&rss_file).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&rss_file);
    let max_rss_kib = rss
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("no peak RSS from /usr/bin/time: {rss:?}"))?;
    Ok(Sample {
        secs,
        write_bytes,
        max_rss_kib,
    })
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fs {
    Exfat,
    Fat32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A sparse file created with `truncate` before every run.
    Sparse,
    /// A fully written file; its first 64 MiB are rewritten before every run.
    Written,
    /// A loop device over a fully written file; its first 64 MiB are
    /// rewritten (through the device) before every run.
    Loop,
}

struct Row {
    name: String,
    fs: Fs,
    size: u64,
    kind: Kind,
    /// Cluster size in bytes: 32 KiB, except FAT32 up to 8 GiB, which gets
    /// 4 KiB (32 KiB clusters give too few clusters for FAT32 on 1 GiB).
    cluster: u64,
}

fn cluster_for(fs: Fs, size: u64) -> u64 {
    if fs == Fs::Fat32 && size <= 8 * GIB {
        4096
    } else {
        32 * 1024
    }
}

fn ours(bin: &Path, fs: Fs, cluster: u64, img: &Path) -> Command {
    let mut c = Command::new(bin);
    // `--table none` as the peers write no table; `--yes` for the loop
    // device; `--no-discard` as the peers do not TRIM (like for like: a
    // discard of a 4 GiB loop device alone takes from tens of ms to seconds).
    c.args([
        "-q",
        "--yes",
        "--no-discard",
        "--table",
        "none",
        "--serial",
        "1234ABCD",
    ]);
    c.args(["--align", "1M", "--cluster"])
        .arg(cluster.to_string())
        .arg("--fs");
    c.arg(match fs {
        Fs::Exfat => "exfat",
        Fs::Fat32 => "fat32",
    });
    c.arg(img);
    c
}

fn peer(fs: Fs, cluster: u64, img: &Path) -> Command {
    let c = match fs {
        Fs::Exfat => {
            // Same cluster size and the same 1 MiB boundary alignment.
            let mut c = Command::new("mkfs.exfat");
            c.args(["-c", &cluster.to_string(), "-b", "1M"]).arg(img);
            c
        }
        Fs::Fat32 => {
            // Same cluster size, in 512-byte sectors.
            let mut c = Command::new("mkfs.fat");
            c.args([
                "-F",
                "32",
                "-s",
                &(cluster / 512).to_string(),
                "-S",
                "512",
                "--invariant",
            ])
            .arg(img);
            c
        }
    };
    c
}

/// Bytes the metadata itself needs, from our dry-run JSON plan.
fn floor_bytes(bin: &Path, fs: Fs, cluster: u64, size: u64, dir: &Path) -> Result<u64, String> {
    let img = dir.join("floor-plan.img");
    let out = ours(bin, fs, cluster, &img)
        .args(["--dry-run", "--json", "--size"])
        .arg(size.to_string())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let num = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("\"{key}\": ")))
            .and_then(|v| v.trim_end_matches(',').parse().ok())
            .unwrap_or(0)
    };
    let bps = num("sector_size");
    let round = |b: u64| b.div_ceil(bps) * bps;
    let used = num("used_clusters");
    Ok(match fs {
        // 2 boot regions of 12 sectors, FAT entries 0..used+2, bitmap bits,
        // the up-case table, one sector of root entries.
        Fs::Exfat => 24 * bps + round((used + 2) * 4) + round(used.div_ceil(8)) + round(5836) + bps,
        // Boot, FSInfo, their backups; the first sector of each FAT.
        Fs::Fat32 => 4 * bps + 2 * bps,
    })
}

fn prepare(img: &Path, row: &Row) -> Result<(), String> {
    match row.kind {
        Kind::Sparse => {
            let _ = std::fs::remove_file(img);
            let f = std::fs::File::create(img).map_err(|e| e.to_string())?;
            f.set_len(row.size).map_err(|e| e.to_string())?;
        }
        Kind::Written | Kind::Loop => {
            use std::io::{Seek, SeekFrom, Write};
            let fresh = !img.exists();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(img)
                .map_err(|e| e.to_string())?;
            let chunk = vec![0xA5u8; MIB as usize];
            let len = if fresh { row.size } else { 64 * MIB };
            f.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
            for _ in 0..len / MIB {
                f.write_all(&chunk).map_err(|e| e.to_string())?;
            }
            f.sync_all().map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

pub(crate) fn fmt_bytes(b: f64) -> String {
    if b >= MIB as f64 {
        format!("{:.1} MiB", b / MIB as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

/// Runs the benchmark and returns the Markdown report.
pub fn run(bin: &Path, reps: usize, quick: bool) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("mkfs-alloc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut table = String::new();
    table.push_str("| file system | target | tool | wall time (median) | bytes written | floor | peak RSS | time ratio | bytes ratio |\n");
    table.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for row in &rows(quick) {
        let backing: PathBuf = dir.join(format!("bench-{:?}-{}.img", row.fs, row.size));
        let floor = floor_bytes(bin, row.fs, row.cluster, row.size, &dir)?;
        let loopdev = if row.kind == Kind::Loop {
            prepare(&backing, row)?;
            Some(attach_loop(&backing)?)
        } else {
            None
        };
        let img = loopdev.clone().unwrap_or_else(|| backing.clone());
        let (a, b) = measure_row(bin, row, &img, reps)?;
        if let Some(dev) = &loopdev {
            let _ = Command::new("losetup").arg("-d").arg(dev).status();
        }
        let _ = std::fs::remove_file(&backing);
        table.push_str(&table_rows(row, &a, &b, floor));
        eprintln!("bench: {} {} done", fs_name(row), row.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(table)
}

/// The rows: sparse images of every size, a written 4 GiB image and (not
/// `quick`) a 4 GiB loop device, for exFAT and FAT32.
fn rows(quick: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    let sizes: &[(u64, &str)] = if quick {
        &[(GIB, "1 GiB")]
    } else {
        &[
            (GIB, "1 GiB"),
            (64 * GIB, "64 GiB"),
            (TIB, "1 TiB"),
            (2 * TIB, "2 TiB"),
        ]
    };
    for fs in [Fs::Exfat, Fs::Fat32] {
        for &(size, label) in sizes {
            // FAT32 at 512-byte sectors ends at 2^32 - 1 sectors: 2 TiB - 512 B.
            let (size, label) = if fs == Fs::Fat32 && size == 2 * TIB {
                (2 * TIB - MIB, "2 TiB - 1 MiB")
            } else {
                (size, label)
            };
            let cluster = cluster_for(fs, size);
            let name = format!("sparse {label}");
            rows.push(Row {
                name,
                fs,
                size,
                kind: Kind::Sparse,
                cluster,
            });
        }
        let cluster = cluster_for(fs, 4 * GIB);
        let name = "written 4 GiB".to_string();
        rows.push(Row {
            name,
            fs,
            size: 4 * GIB,
            kind: Kind::Written,
            cluster,
        });
        if !quick {
            let name = "loop device 4 GiB".to_string();
            rows.push(Row {
                name,
                fs,
                size: 4 * GIB,
                kind: Kind::Loop,
                cluster,
            });
        }
    }
    rows
}

/// `losetup -f --show backing`: the loop device.
fn attach_loop(backing: &Path) -> Result<PathBuf, String> {
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(backing)
        .output()
        .map_err(|e| format!("losetup: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "losetup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

/// `reps` runs of each tool on `img`, alternating which goes first: our
/// samples and the peer's.
fn measure_row(
    bin: &Path,
    row: &Row,
    img: &Path,
    reps: usize,
) -> Result<(Vec<Sample>, Vec<Sample>), String> {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for rep in 0..reps {
        // Alternate which tool goes first.
        let order: [bool; 2] = if rep % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_ours in order {
            prepare(img, row)?;
            let cmd = if is_ours {
                ours(bin, row.fs, row.cluster, img)
            } else {
                peer(row.fs, row.cluster, img)
            };
            let s = measure(&cmd)?;
            if is_ours {
                a.push(s);
            } else {
                b.push(s);
            }
        }
    }
    Ok((a, b))
}

/// The medians of wall time and bytes written, and the peak RSS (KiB), of
/// some runs.
pub(crate) fn summary(v: &[Sample]) -> (f64, f64, u64) {
    (
        median(v.iter().map(|s| s.secs).collect()),
        median(v.iter().map(|s| s.write_bytes as f64).collect()),
        v.iter().map(|s| s.max_rss_kib).max().unwrap_or(0),
    )
}

/// "exFAT 32K": the file system and cluster size of a row.
fn fs_name(row: &Row) -> String {
    match row.fs {
        Fs::Exfat => format!("exFAT {}K", row.cluster / 1024),
        Fs::Fat32 => format!("FAT32 {}K", row.cluster / 1024),
    }
}

/// The two Markdown rows of one benchmark row: ours with the ratios, the
/// peer's.
fn table_rows(row: &Row, a: &[Sample], b: &[Sample], floor: u64) -> String {
    let fs_name = fs_name(row);
    let peer_name = match row.fs {
        Fs::Exfat => "mkfs.exfat",
        Fs::Fat32 => "mkfs.fat",
    };
    let (ta, wa, ma) = summary(a);
    let (tb, wb, mb) = summary(b);
    let ratio = |x: f64, y: f64| {
        if y > 0.0 {
            format!("{:.2}", x / y)
        } else {
            "n/a".to_string()
        }
    };
    format!(
        "| {fs_name} | {} | mkfs-alloc | {:.3} s | {} | {} | {:.1} MiB | {} | {} |\n| {fs_name} | {} | {peer_name} | {:.3} s | {} | {} | {:.1} MiB | 1.00 | 1.00 |\n",
        row.name,
        ta,
        fmt_bytes(wa),
        fmt_bytes(floor as f64),
        ma as f64 / 1024.0,
        ratio(ta, tb),
        ratio(wa, wb),
        row.name,
        tb,
        fmt_bytes(wb),
        fmt_bytes(floor as f64),
        mb as f64 / 1024.0
    )
}
