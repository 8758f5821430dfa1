//! `cargo xtask bench --recluster` (root): `mkfs-alloc recluster` against
//! the peers' only way to change the cluster size of a volume that holds
//! data, and against the floor, in one run.
//!
//! Per case an exFAT image is made by `mkfs.exfat` at the old cluster size
//! and filled to about 40 % through exfat-fuse with a generated
//! photo-and-document tree (many small files, photos of a few MiB, a few
//! large videos), or a FAT32 image by `mkfs.fat` filled through mtools
//! (`bench_recluster_fat.rs`: there the peers copy off and back through
//! mtools, and the checks are fsck.fat's and mtools'). The image is then
//! copied, so both ways start from the same bytes:
//! - recluster: the release CLI on a direct-I/O loop device over the image
//!   (as on a stick: no host page cache between the tool and the medium);
//! - the peers: every file copied off through exfat-fuse, `mkfs.exfat` at
//!   the new size, every file copied back through exfat-fuse, each leg timed
//!   and ended by `sync`, on the same kind of loop device;
//! - the floor: the bytes the recluster's `--json` dry run says it writes,
//!   written by `dd oflag=direct conv=fsync` over an existing file of the
//!   image's file system (the median of a few runs); and the staged floor:
//!   the dry run's `flush_stages`, each stage's bytes written by its own
//!   `dd oflag=direct conv=fsync`, one after the other (the power-loss
//!   ordering needs a flush between stages; one sequential write has none).
//!
//! Both results are checked before any figure is reported: `fsck.exfat -n`
//! clean, the new cluster size in place, and the SHA-256 of every file
//! equal to the generated tree's.

use crate::bench::{fmt_bytes, measure};
use crate::bench_recluster_floor as floor;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Markers around the recluster table in BENCHMARKS.md.
pub const BEGIN: &str = "<!-- bench-recluster:begin -->";
pub const END: &str = "<!-- bench-recluster:end -->";

/// One case: an image made by `mkfs.exfat` (or `mkfs.fat -F 32`) at
/// `from`, reclustered to `to`.
pub(crate) struct Case {
    /// FAT32 by mkfs.fat and mtools instead of exFAT.
    pub(crate) fat: bool,
    pub(crate) size: u64,
    pub(crate) from: u64,
    pub(crate) to: u64,
    /// Extra `mkfs.exfat` options (a boundary alignment that leaves room
    /// between the FAT and the heap for the larger FAT).
    pub(crate) mkfs: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        fat: false,
        size: 2 * GIB,
        from: 512 * KIB,
        to: 32 * KIB,
        mkfs: &[],
    },
    // At the default 1 MiB boundary the gap holds 896 KiB, and a 4 KiB FAT
    // of 2 GiB needs 2 MiB: the heap's first clusters are evacuated first.
    Case {
        fat: false,
        size: 2 * GIB,
        from: 128 * KIB,
        to: 4 * KIB,
        mkfs: &[],
    },
    // Larger: every file's data moves to clusters of the new size.
    Case {
        fat: false,
        size: 2 * GIB,
        from: 4 * KIB,
        to: 128 * KIB,
        mkfs: &[],
    },
    // FAT32 needs 65,525 clusters: 3 GiB at 32 KiB has 98,000; at 4 KiB
    // the FATs grow from 383 KiB to 3 MiB each, displacing the first
    // clusters.
    Case {
        fat: true,
        size: 3 * GIB,
        from: 32 * KIB,
        to: 4 * KIB,
        mkfs: &["-F", "32", "-S", "512"],
    },
];

/// Runs `script` under `sh` with `args` as `$1`...; its stdout on success.
pub(crate) fn sh(script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Result<String, String> {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script).arg("sh");
    for a in args {
        c.arg(a);
    }
    let out = c.output().map_err(|e| format!("sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A loop device over an image; detached on drop.
pub(crate) struct Loop(pub(crate) String);

impl Loop {
    /// `losetup -f --show`; `direct` for `--direct-io=on` (no host page
    /// cache between the device and the image).
    pub(crate) fn new(img: &Path, direct: bool) -> Result<Self, String> {
        let io = if direct { "on" } else { "off" };
        let dev = sh("losetup -f --show --direct-io=\"$1\" \"$2\"", &[&io, &img])?;
        Ok(Loop(dev.trim().to_string()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// An exfat-fuse mount of a loop device.
pub(crate) struct Fuse<'a> {
    dir: &'a Path,
    pid: Option<u32>,
}

impl<'a> Fuse<'a> {
    pub(crate) fn new(dev: &Loop, dir: &'a Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        sh("mount.exfat-fuse \"$1\" \"$2\" 2>&1", &[&dev.0, &dir])?;
        Ok(Fuse {
            dir,
            pid: daemon_of(&dev.0),
        })
    }

    /// `fusermount -u`, then waits for the daemon to exit: it still writes
    /// to the device after the unmount returns.
    pub(crate) fn finish(mut self) -> Result<(), String> {
        let r = sh("fusermount -u \"$1\"", &[&self.dir]);
        if let Some(pid) = self.pid.take() {
            let proc = PathBuf::from(format!("/proc/{pid}"));
            while proc.exists() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        r.map(drop)
    }
}

impl Drop for Fuse<'_> {
    fn drop(&mut self) {
        if self.pid.is_some() {
            let _ = Command::new("fusermount").arg("-u").arg(self.dir).status();
        }
    }
}

/// The pid of the exfat-fuse daemon serving `dev` (its command line names
/// the device).
fn daemon_of(dev: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        let is_fuse = args.first()?.ends_with(b"mount.exfat-fuse");
        (is_fuse && args.contains(&dev.as_bytes())).then_some(pid)
    })
}

/// A photo-and-document tree of about `target` bytes: three videos of 64
/// MiB, then photos of 2-6 MiB, documents of 4-512 KiB and notes of 100 B
/// to 16 KiB in nested folders. Contents: one 8 MiB pseudo-random pool,
/// each file a different slice of it behind its own name. Returns the file
/// count and bytes.
pub(crate) fn make_tree(dir: &Path, target: u64) -> Result<(u64, u64), String> {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 11
    };
    let pool: Vec<u8> = (0..MIB)
        .flat_map(|_| next().to_le_bytes())
        .collect::<Vec<u8>>();
    let (mut files, mut bytes) = (0u64, 0u64);
    let write = |rel: String, len: u64, at: u64| -> Result<u64, String> {
        let path = dir.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap_or(dir)).map_err(|e| e.to_string())?;
        let mut f = std::fs::File::create(&path).map_err(|e| e.to_string())?;
        let head = rel.as_bytes();
        let mut left = len;
        let n = head.len().min(left as usize);
        f.write_all(&head[..n]).map_err(|e| e.to_string())?;
        left -= n as u64;
        let mut pos = (at % pool.len() as u64) as usize;
        while left > 0 {
            let n = (pool.len() - pos).min(left as usize);
            f.write_all(&pool[pos..pos + n])
                .map_err(|e| e.to_string())?;
            left -= n as u64;
            pos = 0;
        }
        Ok(len)
    };
    let add = |files: &mut u64, bytes: &mut u64, len: Result<u64, String>| {
        *files += 1;
        *bytes += len?;
        Ok::<(), String>(())
    };
    for i in 0..3u64 {
        add(
            &mut files,
            &mut bytes,
            write(format!("Videos/holiday {i}.mp4"), 64 * MIB, next()),
        )?;
    }
    let mut i = 0u64;
    while bytes < target {
        let photo = 2 * MIB + next() % (4 * MIB);
        add(
            &mut files,
            &mut bytes,
            write(
                format!("DCIM/{}CANON/IMG_{:04}.JPG", 100 + i / 100, i),
                photo,
                next(),
            ),
        )?;
        for d in 0..4 {
            let len = 4 * KIB + next() % (508 * KIB);
            let ext = ["pdf", "docx", "xlsx", "odt"][d];
            let rel = format!(
                "Documents/{}/project {}/report {i}-{d}.{ext}",
                2019 + i % 6,
                i % 7
            );
            add(&mut files, &mut bytes, write(rel, len, next()))?;
        }
        for n in 0..6 {
            let len = 100 + next() % (16 * KIB);
            add(
                &mut files,
                &mut bytes,
                write(format!("Notes/{}/note {i}-{n}.txt", i % 10), len, next()),
            )?;
        }
        i += 1;
    }
    Ok((files, bytes))
}

/// SHA-256 of every file under `dir`, one sorted line per file.
pub(crate) fn sums(dir: &Path) -> Result<String, String> {
    sh(
        "cd \"$1\" && find . -type f -print0 | sort -z | xargs -0 sha256sum",
        &[&dir],
    )
}

/// Checks a result: `fsck.exfat -n` clean, the cluster size `cluster`
/// (recluster's dry run has nothing to do) and every file equal to `want`.
fn check(c: &Case, bin: &Path, img: &Path, mnt: &Path, want: &str) -> Result<(), String> {
    let cluster = c.to;
    if c.fat {
        sh("fsck.fat -n \"$1\" 2>&1", &[&img]).map_err(|e| format!("fsck.fat: {e}"))?;
    } else {
        sh("fsck.exfat -n \"$1\" 2>&1", &[&img]).map_err(|e| format!("fsck.exfat: {e}"))?;
    }
    let size = format!("{}K", cluster / KIB);
    let plan = sh(
        "\"$1\" recluster --cluster \"$2\" --dry-run --json \"$3\"",
        &[&bin, &size, &img],
    )?;
    let v: serde_json::Value = serde_json::from_str(&plan).map_err(|e| e.to_string())?;
    if v["step"] != "nothing" {
        return Err(format!(
            "{} is not at {size} clusters: {plan}",
            img.display()
        ));
    }
    let got = if c.fat {
        crate::bench_recluster_fat::sums_through_mtools(img, mnt)?
    } else {
        let dev = Loop::new(img, false)?;
        let fuse = Fuse::new(&dev, mnt)?;
        let got = sums(mnt);
        fuse.finish()?;
        got?
    };
    if got != want {
        return Err(format!("{}: files differ from the tree", img.display()));
    }
    Ok(())
}

/// The files below `from` copied to `to` (`cp -r`), one of them the mount
/// point `mnt` of the exFAT volume on `dev` through exfat-fuse, then
/// `sync`: a leg of the peers' way, or an image's fill.
pub(crate) fn fuse_copy(dev: &Loop, mnt: &Path, from: &Path, to: &Path) -> Result<(), String> {
    let fuse = Fuse::new(dev, mnt)?;
    let r = sh("cp -r \"$1\"/. \"$2\"/", &[&from, &to]);
    fuse.finish()?;
    r?;
    sh("sync", &[]).map(drop)
}

/// Runs `f` and returns its seconds.
pub(crate) fn timed(f: impl FnOnce() -> Result<(), String>) -> Result<f64, String> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

/// The figures of one case.
pub(crate) struct Figures {
    pub(crate) files: u64,
    pub(crate) tree_bytes: u64,
    pub(crate) used_pct: f64,
    /// Directories the recluster copies (the root included).
    pub(crate) dirs: u64,
    pub(crate) recluster: f64,
    pub(crate) written: u64,
    pub(crate) planned_written: u64,
    pub(crate) planned_read: u64,
    pub(crate) rss_kib: u64,
    pub(crate) off: f64,
    pub(crate) mkfs: f64,
    pub(crate) back: f64,
    pub(crate) floor: f64,
    pub(crate) floor_rw: f64,
    /// The dry run's bytes written before each flush (`None`: not
    /// simulated).
    pub(crate) stages: Option<Vec<u64>>,
    /// Those stages written by `dd`, each ended by its `fsync`.
    pub(crate) floor_staged: Option<f64>,
    /// The recluster refused the volume (exit 2, unchanged): its message.
    pub(crate) refused: Option<String>,
}

/// The image at `c.from`, filled with `tree` through exfat-fuse.
fn make_image(c: &Case, img: &Path, tree: &Path, mnt: &Path) -> Result<(), String> {
    if c.fat {
        return crate::bench_recluster_fat::make_image(c, img, tree);
    }
    let from = format!("{}K", c.from / KIB);
    let mut mkfs = Command::new("mkfs.exfat");
    mkfs.args(["-c", &from]).args(c.mkfs).arg(img);
    sh("truncate -s \"$1\" \"$2\"", &[&c.size.to_string(), &img])?;
    let out = mkfs.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{mkfs:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dev = Loop::new(img, false)?;
    fuse_copy(&dev, mnt, tree, mnt)
}

/// The peers' way on `img`: copy off, `mkfs.exfat` at `c.to`, copy back.
fn peers(c: &Case, img: &Path, off: &Path, mnt: &Path) -> Result<(f64, f64, f64), String> {
    if c.fat {
        return crate::bench_recluster_fat::peers(c, img, off);
    }
    let dev = Loop::new(img, true)?;
    let t_off = timed(|| fuse_copy(&dev, mnt, mnt, off))?;
    let to = format!("{}K", c.to / KIB);
    let t_mkfs = timed(|| {
        sh(
            "mkfs.exfat -c \"$1\" \"$2\" >/dev/null && sync",
            &[&to, &dev.0],
        )
        .map(drop)
    })?;
    let t_back = timed(|| fuse_copy(&dev, mnt, off, mnt))?;
    Ok((t_off, t_mkfs, t_back))
}

/// One case, both ways, checked.
fn run_case(bin: &Path, c: &Case, dir: &Path, tree: &Path, want: &str) -> Result<Figures, String> {
    let (img, peer, off, mnt) = (
        dir.join("ours.img"),
        dir.join("peer.img"),
        dir.join("off"),
        dir.join("mnt"),
    );
    make_image(c, &img, tree, &mnt)?;
    let fsck = if c.fat { "fsck.fat" } else { "fsck.exfat" };
    sh(&format!("{fsck} -n \"$1\" 2>&1"), &[&img]).map_err(|e| format!("{fsck} before: {e}"))?;
    sh("cp --sparse=always \"$1\" \"$2\" && sync", &[&img, &peer])?;
    let to = format!("{}K", c.to / KIB);
    let plan = match sh(
        "\"$1\" recluster --cluster \"$2\" --dry-run --json \"$3\"",
        &[&bin, &to, &img],
    ) {
        Ok(plan) => plan,
        Err(why) => {
            let peers = || peers(c, &peer, &off, &mnt);
            let checked = || check(c, bin, &peer, &mnt, want);
            return crate::bench_recluster_fat::refused(bin, &to, &img, why, peers, checked);
        }
    };
    let v: serde_json::Value = serde_json::from_str(&plan).map_err(|e| e.to_string())?;
    let p = &v["plan"];
    let num = |k: &str| {
        p[k].as_u64()
            .ok_or(format!("no {k} in the dry run: {plan}"))
    };
    let (planned_written, planned_read) = (num("bytes_written")?, num("bytes_read")?);
    let free = num("free_before")?;
    let dirs = num("directories_copied")?;
    // Absent for a job too large to simulate (a larger size moves data).
    let stages: Option<Vec<u64>> = v["flush_stages"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect());
    // Allocated, of the volume: at large clusters far more than the data.
    let used_pct = 100.0 * (1.0 - free as f64 / c.size as f64);
    let run = {
        let dev = Loop::new(&img, true)?;
        let mut cmd = Command::new(bin);
        cmd.args(["recluster", "--cluster", &to, "--yes", "-q", &dev.0]);
        measure(&cmd)?
    };
    let (t_off, t_mkfs, t_back) = peers(c, &peer, &off, &mnt)?;
    check(c, bin, &img, &mnt, want).map_err(|e| format!("recluster result: {e}"))?;
    check(c, bin, &peer, &mnt, want).map_err(|e| format!("peer result: {e}"))?;
    let (t_floor, t_floor_rw) = floor::floor(dir, planned_written, planned_read)?;
    let t_staged = match &stages {
        Some(s) => Some(floor::floor_staged(dir, s)?),
        None => None,
    };
    Ok(Figures {
        files: 0,
        tree_bytes: 0,
        used_pct,
        dirs,
        recluster: run.secs,
        written: run.write_bytes,
        planned_written,
        planned_read,
        rss_kib: run.max_rss_kib,
        off: t_off,
        mkfs: t_mkfs,
        back: t_back,
        floor: t_floor,
        floor_rw: t_floor_rw,
        stages,
        floor_staged: t_staged,
        refused: None,
    })
}

pub(crate) fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

pub(crate) fn size_name(b: u64) -> String {
    if b >= GIB {
        format!("{} GiB", b / GIB)
    } else {
        format!("{} KiB", b / KIB)
    }
}

/// Runs every case; returns the Markdown text.
pub fn run(bin: &Path) -> Result<String, String> {
    let dir =
        std::env::temp_dir().join(format!("mkfs-alloc-bench-recluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let result = run_in(bin, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(bin: &Path, dir: &Path) -> Result<String, String> {
    let load_before = load();
    let mut rows = Vec::new();
    let tree = dir.join("tree");
    // One tree per image size (every case here has the same size).
    let mut made: Option<(u64, u64, u64, String)> = None;
    for c in CASES {
        if made.as_ref().is_none_or(|m| m.0 != c.size) {
            let _ = std::fs::remove_dir_all(&tree);
            let (files, bytes) = make_tree(&tree, c.size * 2 / 5)?;
            made = Some((c.size, files, bytes, sums(&tree)?));
        }
        let Some((_, files, tree_bytes, want)) = made.clone() else {
            continue;
        };
        let work = dir.join("work");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        let mut f = run_case(bin, c, &work, &tree, &want)?;
        f.files = files;
        f.tree_bytes = tree_bytes;
        rows.push((c, f));
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(table(&rows, &load_before, &load()))
}

fn table(rows: &[(&Case, Figures)], before: &str, after: &str) -> String {
    let mut t = format!(
        "One run per case, the two ways one after the other. Load average before: {before}.\n\n\
         | case | files (data, % of the volume) | directories | allocated | recluster | copy off + mkfs + copy back | ratio | floor: write (read + write) | ratio to the floor: write (read + write) | staged floor: the same bytes in the job's flush stages | ratio to the staged floor | bytes written (planned / `write_bytes`) | bytes read (planned) | peak RSS |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for (c, f) in rows {
        let peer = f.off + f.mkfs + f.back;
        let made = if c.fat {
            format!(
                "FAT32 {} by `mkfs.fat {} -s {}`, filled by mtools",
                size_name(c.size),
                c.mkfs.join(" "),
                c.from / 512
            )
        } else if c.mkfs.is_empty() {
            format!(
                "exFAT {} by `mkfs.exfat -c {}K`",
                size_name(c.size),
                c.from / KIB
            )
        } else {
            format!(
                "exFAT {} by `mkfs.exfat -c {}K` `{}`",
                size_name(c.size),
                c.from / KIB,
                c.mkfs.join(" ")
            )
        };
        if let Some(why) = &f.refused {
            let pct = 100.0 * f.tree_bytes as f64 / c.size as f64;
            let (from, to) = (size_name(c.from), size_name(c.to));
            t.push_str(&format!(
                "| {made}, {from} → {to} | {} ({}, {pct:.0} %) | | | refused: {why} | {:.1} s ({:.1} + {:.2} + {:.1}) | | | | | | | | |\n",
                f.files, fmt_bytes(f.tree_bytes as f64), peer, f.off, f.mkfs, f.back
            ));
            continue;
        }
        let (staged, staged_ratio) = match (&f.stages, f.floor_staged) {
            (Some(st), Some(t)) => (
                format!(
                    "{t:.3} s ({} stages)",
                    st.iter().filter(|&&b| b > 0).count()
                ),
                format!("{:.2}x", f.recluster / t),
            ),
            _ => ("not simulated".to_string(), String::new()),
        };
        t.push_str(&format!(
            "| {made}, {} → {} | {} ({}, {:.0} %) | {} | {:.0} % | {:.3} s | {:.1} s ({:.1} + {:.2} + {:.1}) | {:.4}x | {:.3} s ({:.3} s) | {:.2}x ({:.2}x) | {} | {} | {} / {} | {} | {:.1} MiB |\n",
            size_name(c.from),
            size_name(c.to),
            f.files,
            fmt_bytes(f.tree_bytes as f64),
            100.0 * f.tree_bytes as f64 / c.size as f64,
            f.dirs,
            f.used_pct,
            f.recluster,
            peer,
            f.off,
            f.mkfs,
            f.back,
            f.recluster / peer,
            f.floor,
            f.floor_rw,
            f.recluster / f.floor,
            f.recluster / f.floor_rw,
            staged,
            staged_ratio,
            fmt_bytes(f.planned_written as f64),
            fmt_bytes(f.written as f64),
            fmt_bytes(f.planned_read as f64),
            f.rss_kib as f64 / 1024.0,
        ));
    }
    t.push_str(&format!(
        "\nBoth results checked: `fsck.exfat -n` (`fsck.fat -n`) clean, the new cluster size in place, the SHA-256 of every file (read through exfat-fuse, or mtools) equal to the tree's. Load average after: {after}.\n"
    ));
    t
}
