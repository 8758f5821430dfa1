//! `cargo xtask bench --resize [--quick]` (root): `mkfs-alloc resize` (a
//! grow and a shrink of exFAT) and `mkfs-alloc convert --fs exfat` (of
//! FAT32) against the peers' way, copy off and back, and against the
//! floor, in one run.
//!
//! Per case an image is made by the peers' tools and filled with the
//! generated photo-and-document tree of `bench_recluster.rs` (40 % of the
//! smaller volume): exFAT by `mkfs.exfat` filled through exfat-fuse, FAT32
//! by `mkfs.fat -F 32` filled through mtools (`bench_resize_fat.rs`). For
//! the shrink the tree is copied in eight groups with a file of zeros after
//! each but the last, the zeros then deleted, so the data lies over the
//! whole volume and what lies past the new end must move. The image is
//! copied, so both ways start from the same bytes:
//! - ours: the release CLI on a direct-I/O loop device over the image (a
//!   grow's image file extended first; a shrink's cut afterwards, as the
//!   CLI does on an image file itself);
//! - the peers: every file copied off through the driver (exfat-fuse, or
//!   mtools for FAT32), `mkfs.exfat` at the new geometry, every file copied
//!   back through exfat-fuse, each leg ended by `sync`;
//! - the floor: the bytes the `--json` dry run says it writes, written by
//!   `dd oflag=direct conv=fsync` (a shrink's: the data it moves read by
//!   `dd iflag=direct` first), and the staged floor where the dry run gives
//!   `flush_stages` (`bench_recluster_floor.rs`).
//!
//! Both results are checked before any figure is reported: `fsck.exfat -n`
//! clean, `blkid` naming exFAT, the volume length `dump.exfat` reads equal
//! to the new size, and the SHA-256 of every file (read through
//! exfat-fuse) equal to the tree's. fatresize handles FAT16/32 only: the
//! table says so for these cases.

use crate::bench::measure;
use crate::bench_recluster::{fuse_copy, load, make_tree, sh, sums, timed, Fuse, Loop};
use crate::bench_recluster_floor as floor;
use crate::bench_resize_fat as fat;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Markers around the resize table in BENCHMARKS.md.
pub const BEGIN: &str = "<!-- bench-resize:begin -->";
pub const END: &str = "<!-- bench-resize:end -->";

/// What a case does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// `resize --size TO` of an exFAT volume of `from` bytes.
    Grow,
    /// The same, `to` below `from`, the data spread over the volume.
    Shrink,
    /// `convert --fs exfat` of a FAT32 volume of `from` (= `to`) bytes.
    Convert,
}

/// One case.
pub(crate) struct Case {
    pub(crate) kind: Kind,
    /// The volume's bytes before.
    pub(crate) from: u64,
    /// After.
    pub(crate) to: u64,
    /// The generated tree's bytes (about).
    pub(crate) tree: u64,
    /// Extra `mkfs.exfat` options.
    pub(crate) mkfs: &'static [&'static str],
}

/// The issue's sizes (8 GiB grown to 16 GiB and back, 4 GiB converted), or
/// an eighth of them with `quick`.
pub(crate) fn cases(quick: bool) -> [Case; 3] {
    let s = if quick { GIB } else { 8 * GIB };
    let tree = s * 2 / 5;
    [
        // At the default 1 MiB boundary 8 GiB at 32 KiB has room for a 1
        // MiB FAT and 16 GiB needs 2 MiB: refused (the grow moves no heap).
        Case {
            kind: Kind::Grow,
            from: s,
            to: 2 * s,
            tree,
            mkfs: &["-b", "4M"],
        },
        Case {
            kind: Kind::Shrink,
            from: 2 * s,
            to: s,
            tree,
            mkfs: &[],
        },
        Case {
            kind: Kind::Convert,
            from: s / 2,
            to: s / 2,
            tree: s / 5,
            mkfs: &[],
        },
    ]
}

/// The figures of one case.
pub(crate) struct Figures {
    pub(crate) files: u64,
    pub(crate) tree_bytes: u64,
    pub(crate) ours: f64,
    pub(crate) written: u64,
    pub(crate) rss_kib: u64,
    pub(crate) planned_written: u64,
    pub(crate) planned_read: u64,
    /// A shrink's bytes moved below the new end.
    pub(crate) moved: u64,
    pub(crate) stages: Option<Vec<u64>>,
    pub(crate) off: f64,
    pub(crate) mkfs: f64,
    pub(crate) back: f64,
    /// The floor: the planned bytes written by `dd` (a shrink's: its moved
    /// bytes read first).
    pub(crate) floor: f64,
    pub(crate) floor_staged: Option<f64>,
    pub(crate) load_before: String,
    pub(crate) load_after: String,
}

/// The volume's bytes from `dump.exfat`'s report: its volume length in
/// sectors times two to its sector size bits.
pub(crate) fn volume_bytes(dump: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let line = dump.lines().find(|l| l.trim_start().starts_with(name))?;
        line.rsplit(':').next()?.trim().parse().ok()
    };
    let sectors = field("Volume Length(sectors)")?;
    let bits = field("Sector Size Bits")?;
    (9..=12)
        .contains(&bits)
        .then(|| sectors.checked_mul(1 << bits))
        .flatten()
}

/// Whether a volume of `got` bytes is the `want` a job asked for: equal,
/// or for a conversion (`convert`) at most `want` and within its last MiB.
pub(crate) fn size_ok(got: u64, want: u64, convert: bool) -> bool {
    got == want || (convert && got <= want && got + MIB > want)
}

/// `truncate -s BYTES img`.
pub(crate) fn truncate(img: &Path, bytes: u64) -> Result<(), String> {
    sh("truncate -s \"$1\" \"$2\"", &[&bytes.to_string(), &img]).map(drop)
}

/// Checks a result: `fsck.exfat -n` clean, `blkid` says exFAT, the volume
/// is `bytes` long (a conversion's: within the last MiB of `bytes`, as the
/// FAT32 volume's sectors past its last whole cluster may be left out),
/// and every file (through exfat-fuse) equals `want`.
fn check(img: &Path, mnt: &Path, bytes: u64, convert: bool, want: &str) -> Result<(), String> {
    sh("fsck.exfat -n \"$1\" 2>&1", &[&img]).map_err(|e| format!("fsck.exfat: {e}"))?;
    let ty = sh("blkid -p -o value -s TYPE \"$1\"", &[&img])?;
    if ty.trim() != "exfat" {
        return Err(format!(
            "blkid: {} holds {:?}, not exfat",
            img.display(),
            ty.trim()
        ));
    }
    let dump = sh("dump.exfat \"$1\" 2>&1", &[&img])?;
    let got = volume_bytes(&dump).ok_or(format!("dump.exfat gave no volume length: {dump}"))?;
    if !size_ok(got, bytes, convert) {
        return Err(format!(
            "{}: the volume is {got} bytes, not {bytes}",
            img.display()
        ));
    }
    let dev = Loop::new(img, false)?;
    let fuse = Fuse::new(&dev, mnt)?;
    let got = sums(mnt);
    fuse.finish()?;
    if got? != want {
        return Err(format!("{}: files differ from the tree", img.display()));
    }
    Ok(())
}

/// `mkfs.exfat` on a sparse image of `c.from` bytes, filled with `tree`
/// through exfat-fuse; a shrink's spread over the volume.
fn make_exfat(c: &Case, img: &Path, tree: &Path, mnt: &Path) -> Result<(), String> {
    truncate(img, c.from)?;
    let opts = c.mkfs.join(" ");
    sh("mkfs.exfat $1 \"$2\" >/dev/null", &[&opts, &img])?;
    let dev = Loop::new(img, false)?;
    let fuse = Fuse::new(&dev, mnt)?;
    let r = if c.kind == Kind::Shrink {
        fill_spread(tree, mnt, c.from, img)
    } else {
        sh("cp -r \"$1\"/. \"$2\"/", &[&tree, &mnt]).map(drop)
    };
    fuse.finish()?;
    drop(dev);
    r?;
    if c.kind == Kind::Shrink {
        // The deleted zeros given back to the host file system.
        sh("fallocate --dig-holes \"$1\"", &[&img])?;
    }
    sh("sync", &[]).map(drop)
}

/// Groups the spread fill copies the tree in.
const GROUPS: usize = 8;

/// `files` (size, path), in order, cut into `groups` runs of about equal
/// bytes, none empty.
pub(crate) fn groups(files: &[(u64, String)], groups: usize) -> Vec<Vec<String>> {
    let total: u64 = files.iter().map(|f| f.0).sum();
    let per = total.div_ceil(groups.max(1) as u64).max(1);
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    let mut in_group = 0u64;
    for (len, path) in files {
        if in_group >= per && out.len() < groups {
            out.push(Vec::new());
            in_group = 0;
        }
        if let Some(last) = out.last_mut() {
            last.push(path.clone());
        }
        in_group += len;
    }
    out.retain(|g| !g.is_empty());
    out
}

/// The tree copied into `mnt` in [`GROUPS`] groups, each but the last
/// followed by a file of zeros, the zeros deleted at the end: the files lie
/// over the whole `volume`, about 1/16 of it left free at its end.
fn fill_spread(tree: &Path, mnt: &Path, volume: u64, img: &Path) -> Result<(), String> {
    let list = sh(
        "cd \"$1\" && find . -type f -printf '%s %p\\n' | LC_ALL=C sort -k2",
        &[&tree],
    )?;
    let files: Vec<(u64, String)> = list
        .lines()
        .filter_map(|l| {
            let (n, p) = l.split_once(' ')?;
            Some((n.parse().ok()?, p.to_string()))
        })
        .collect();
    let data: u64 = files.iter().map(|f| f.0).sum();
    let parts = groups(&files, GROUPS);
    let pads = parts.len().saturating_sub(1).max(1) as u64;
    let pad = volume.saturating_sub(data + volume / 16) / pads / MIB * MIB;
    let names = img.with_extension("names");
    for (i, part) in parts.iter().enumerate() {
        let nul: Vec<u8> = part.iter().flat_map(|p| p.bytes().chain([0])).collect();
        std::fs::write(&names, nul).map_err(|e| e.to_string())?;
        sh(
            "cd \"$1\" && xargs -0 cp --parents -t \"$2\" <\"$3\"",
            &[&tree, &mnt, &names],
        )?;
        if i + 1 < parts.len() {
            let zeros = mnt.join(format!("zeros-{i}"));
            sh("truncate -s \"$1\" \"$2\"", &[&pad.to_string(), &zeros])?;
        }
    }
    let _ = std::fs::remove_file(&names);
    sh("rm -f \"$1\"/zeros-*", &[&mnt]).map(drop)
}

/// The peers' way on `img`: every file copied off (exfat-fuse, or mtools
/// for FAT32), `mkfs.exfat` at `c.to` (a grow's image extended first, a
/// shrink's cut between the legs), every file copied back through
/// exfat-fuse; each leg ended by `sync`, on direct-I/O loop devices.
fn peers(c: &Case, img: &Path, off: &Path, mnt: &Path) -> Result<(f64, f64, f64), String> {
    if c.kind == Kind::Grow {
        truncate(img, c.to)?;
    }
    std::fs::create_dir_all(off).map_err(|e| e.to_string())?;
    let dev = Loop::new(img, true)?;
    let t_off = timed(|| {
        if c.kind == Kind::Convert {
            return fat::copy_off(&dev, off);
        }
        fuse_copy(&dev, mnt, mnt, off)
    })?;
    let t = Instant::now();
    let dev = if c.kind == Kind::Shrink {
        drop(dev);
        truncate(img, c.to)?;
        Loop::new(img, true)?
    } else {
        dev
    };
    sh("mkfs.exfat \"$1\" >/dev/null && sync", &[&dev.0])?;
    let t_mkfs = t.elapsed().as_secs_f64();
    let t_back = timed(|| fuse_copy(&dev, mnt, off, mnt))?;
    Ok((t_off, t_mkfs, t_back))
}

/// The CLI's arguments for `c` on `target`.
fn job_args(c: &Case, target: &str) -> Vec<String> {
    let mut v: Vec<String> = match c.kind {
        Kind::Convert => vec!["convert".into(), "--fs".into(), "exfat".into()],
        _ => vec!["resize".into(), "--size".into(), format!("{}M", c.to / MIB)],
    };
    v.extend([target.to_string()]);
    v
}

/// A dry run's bytes written, read and moved, and its flush stages.
pub(crate) type Planned = (u64, u64, u64, Option<Vec<u64>>);

/// The planned bytes written, read and moved, and the flush stages, from
/// the `--json` dry run's report `plan`; an error if it would refuse or
/// has nothing to do.
pub(crate) fn planned(kind: Kind, plan: &str) -> Result<Planned, String> {
    let v: serde_json::Value = serde_json::from_str(plan).map_err(|e| e.to_string())?;
    if v["step"] != "start" || !v["would_refuse"].is_null() {
        return Err(format!("the dry run plans no fresh job: {plan}"));
    }
    let num = |x: &serde_json::Value, k: &str| {
        x[k].as_u64()
            .ok_or(format!("no {k} in the dry run: {plan}"))
    };
    let (w, r, m) = match kind {
        Kind::Convert => (num(&v, "job_bytes_written")?, 0, 0),
        _ => {
            let g = &v["grow"];
            (
                num(g, "bytes_written")?,
                num(g, "bytes_read")?,
                num(g, "moved_bytes")?,
            )
        }
    };
    let stages = v["flush_stages"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect());
    Ok((w, r, m, stages))
}

/// One case, both ways, checked.
fn run_case(bin: &Path, c: &Case, dir: &Path, tree: &Path, want: &str) -> Result<Figures, String> {
    let load_before = load();
    let (img, peer, off, mnt) = (
        dir.join("ours.img"),
        dir.join("peer.img"),
        dir.join("off"),
        dir.join("mnt"),
    );
    if c.kind == Kind::Convert {
        fat::make_image(c.from, &img, tree)?;
        sh("fsck.fat -n \"$1\" 2>&1", &[&img]).map_err(|e| format!("fsck.fat before: {e}"))?;
    } else {
        make_exfat(c, &img, tree, &mnt)?;
        sh("fsck.exfat -n \"$1\" 2>&1", &[&img]).map_err(|e| format!("fsck.exfat before: {e}"))?;
    }
    sh("cp --sparse=always \"$1\" \"$2\" && sync", &[&img, &peer])?;
    if c.kind == Kind::Grow {
        truncate(&img, c.to)?;
    }
    let mut dry = Command::new(bin);
    dry.args(job_args(c, &img.to_string_lossy()))
        .args(["--dry-run", "--json"]);
    let out = dry.output().map_err(|e| format!("{dry:?}: {e}"))?;
    let plan = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{dry:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let (planned_written, planned_read, moved, stages) = planned(c.kind, &plan)?;
    if c.kind == Kind::Shrink && moved == 0 {
        return Err(format!(
            "the shrink moves nothing: the fill is not spread: {plan}"
        ));
    }
    let run = {
        let dev = Loop::new(&img, true)?;
        let mut cmd = Command::new(bin);
        cmd.args(job_args(c, &dev.0)).args(["--yes", "-q"]);
        measure(&cmd)?
    };
    if c.kind == Kind::Shrink {
        truncate(&img, c.to)?;
    }
    let (t_off, t_mkfs, t_back) = peers(c, &peer, &off, &mnt)?;
    let convert = c.kind == Kind::Convert;
    check(&img, &mnt, c.to, convert, want).map_err(|e| format!("our result: {e}"))?;
    check(&peer, &mnt, c.to, false, want).map_err(|e| format!("peer result: {e}"))?;
    let (t_w, t_rw) = floor::floor(dir, planned_written, moved)?;
    let t_staged = match &stages {
        Some(s) => Some(floor::floor_staged(dir, s)?),
        None => None,
    };
    Ok(Figures {
        files: 0,
        tree_bytes: 0,
        ours: run.secs,
        written: run.write_bytes,
        rss_kib: run.max_rss_kib,
        planned_written,
        planned_read,
        moved,
        stages,
        off: t_off,
        mkfs: t_mkfs,
        back: t_back,
        floor: if c.kind == Kind::Shrink { t_rw } else { t_w },
        floor_staged: t_staged,
        load_before,
        load_after: load(),
    })
}

/// Runs every case in a scratch directory under `scratch` (root: loop
/// devices and FUSE mounts); returns the Markdown text.
pub fn run(bin: &Path, scratch: &Path, quick: bool) -> Result<String, String> {
    if !crate::is_root() {
        return Err("bench --resize needs root (loop devices, exfat-fuse mounts)".into());
    }
    let dir = scratch.join(format!("bench-resize-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let result = run_in(bin, &dir, quick);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(bin: &Path, dir: &Path, quick: bool) -> Result<String, String> {
    let uptime = |when: &str| {
        let u = sh("uptime", &[]).unwrap_or_default();
        eprintln!("xtask: uptime {when}: {}", u.trim());
        u.trim().to_string()
    };
    let before = uptime("before");
    let mut rows = Vec::new();
    let tree = dir.join("tree");
    let mut made: Option<(u64, u64, u64, String)> = None;
    let cases = cases(quick);
    for c in &cases {
        if made.as_ref().is_none_or(|m| m.0 != c.tree) {
            let _ = std::fs::remove_dir_all(&tree);
            let (files, bytes) = make_tree(&tree, c.tree)?;
            made = Some((c.tree, files, bytes, sums(&tree)?));
        }
        let Some((_, files, tree_bytes, want)) = made.clone() else {
            continue;
        };
        let work = dir.join("work");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        eprintln!("xtask: bench --resize: {:?} {} -> {}", c.kind, c.from, c.to);
        let mut f = run_case(bin, c, &work, &tree, &want)?;
        f.files = files;
        f.tree_bytes = tree_bytes;
        rows.push((c, f));
        let _ = std::fs::remove_dir_all(&work);
        uptime("after the case");
    }
    let after = uptime("after");
    Ok(crate::bench_resize_table::table(
        &rows, &before, &after, quick,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_volume_length_is_read_from_dump_exfat() {
        let dump = "exfatprogs version : 1.2.0\n\
            Volume Length(sectors): \t\t131072\n\
            FAT Offset(sector offset): \t\t2048\n\
            Sector Size Bits: \t\t\t12\n\
            Sector per Cluster bits: \t\t3\n";
        assert_eq!(volume_bytes(dump), Some(131_072 << 12));
        assert_eq!(volume_bytes("Volume Length(sectors): 8\n"), None);
        let bad = dump.replace("\t12", "\t20");
        assert_eq!(volume_bytes(&bad), None);
    }

    #[test]
    fn only_a_conversion_may_leave_out_the_last_sectors() {
        assert!(size_ok(GIB, GIB, false));
        assert!(!size_ok(GIB - 2048, GIB, false));
        assert!(size_ok(GIB - 2048, GIB, true));
        assert!(!size_ok(GIB - MIB, GIB, true));
        assert!(!size_ok(GIB + 512, GIB, true));
    }

    #[test]
    fn the_groups_cover_every_file_in_order_at_about_equal_bytes() {
        let files: Vec<(u64, String)> = (0..100).map(|i| (10, format!("f{i}"))).collect();
        let g = groups(&files, 8);
        assert_eq!(g.len(), 8);
        let flat: Vec<String> = g.concat();
        assert_eq!(flat, files.iter().map(|f| f.1.clone()).collect::<Vec<_>>());
        assert!(g.iter().all(|p| (9..=16).contains(&p.len())), "{g:?}");
        assert_eq!(groups(&files[..3], 8).len(), 3);
        assert!(groups(&[], 8).is_empty());
    }

    #[test]
    fn a_dry_run_that_would_refuse_or_do_nothing_is_no_figure() {
        let grow = r#"{"step":"start","would_refuse":null,"grow":{"bytes_written":4096,"bytes_read":512,"moved_bytes":0},"flush_stages":[1,2]}"#;
        assert_eq!(
            planned(Kind::Grow, grow).expect("a grow plan"),
            (4096, 512, 0, Some(vec![1, 2]))
        );
        let refuse = grow.replace("null", "\"busy\"");
        assert!(planned(Kind::Grow, &refuse).is_err());
        let done = grow.replace("\"start\"", "\"nothing to do\"");
        assert!(planned(Kind::Grow, &done).is_err());
        let conv = r#"{"step":"start","would_refuse":null,"job_bytes_written":9}"#;
        assert_eq!(
            planned(Kind::Convert, conv).expect("a conversion plan"),
            (9, 0, 0, None)
        );
    }
}
