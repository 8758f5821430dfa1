//! `cargo xtask bench --populate`: writing a folder into a new volume —
//! `mkfs-alloc --rootdir` against `mkfs.fat` + `mcopy -s` (FAT32) and
//! `mkfs.exfat` + exfat-fuse + `cp -r` (exFAT), with `cp -r` to a local
//! directory plus `sync` as the floor. Wall time, bytes written and peak RSS
//! per run (see `bench::measure`); medians over the repetitions.

use crate::bench::{fmt_bytes, measure, median, summary, Sample};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// A deterministic generator (SplitMix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn fill(rng: &mut Rng, buf: &mut [u8]) {
    for c in buf.chunks_mut(8) {
        let v = rng.next().to_le_bytes();
        c.copy_from_slice(&v[..c.len()]);
    }
}

/// `files` files of 0..=44,000 bytes (22 KB on average, as the issue's
/// 20,000 files of 440 MB), 100 to a directory.
pub(crate) fn small_tree(dir: &Path, files: u64) -> Result<u64, String> {
    let mut rng = Rng(files);
    let mut total = 0;
    let mut buf = vec![0u8; 44_001];
    for i in 0..files {
        let d = dir.join(format!("album {:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
        }
        let len = (rng.next() % 44_001) as usize;
        fill(&mut rng, &mut buf[..len]);
        std::fs::write(
            d.join(format!("track {:05} - some title.dat", i)),
            &buf[..len],
        )
        .map_err(|e| e.to_string())?;
        total += len as u64;
    }
    Ok(total)
}

/// Four files of 256 MiB.
pub(crate) fn large_tree(dir: &Path) -> Result<u64, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut rng = Rng(7);
    let mut buf = vec![0u8; 4 * MIB as usize];
    for i in 0..4 {
        let mut f =
            std::fs::File::create(dir.join(format!("video{i}.mkv"))).map_err(|e| e.to_string())?;
        for _ in 0..64 {
            fill(&mut rng, &mut buf);
            f.write_all(&buf).map_err(|e| e.to_string())?;
        }
    }
    Ok(4 * 256 * MIB)
}

pub(crate) fn sh(script: &str, args: &[&Path]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script).arg("sh").args(args);
    c
}

/// Runs the populate benchmark and returns the Markdown table.
pub fn run(bin: &Path, reps: usize, quick: bool) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("mkfs-alloc-bench-pop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let trees = make_trees(&dir, quick)?;
    let img = dir.join("target.img");
    let mnt = dir.join("mnt");
    let copy = dir.join("copy");
    std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
    let mut table = String::new();
    table.push_str("| tree | file system | tool | wall time (median) | bytes written | peak RSS | time vs fastest peer | time vs cp floor |\n");
    table.push_str("|---|---|---|---|---|---|---|---|\n");
    for (label, tree, bytes) in &trees {
        let size = ((bytes * 3 / 2 + 300 * MIB) / MIB * MIB).to_string();
        let size_p = Path::new(&size);
        let floor_cmd = sh(
            "rm -rf \"$2\" && cp -r \"$1\" \"$2\" && sync",
            &[tree, &copy],
        );
        let mut floor = Vec::new();
        for _ in 0..reps {
            floor.push(measure(&floor_cmd)?);
        }
        let _ = std::fs::remove_dir_all(&copy);
        let floor_t = median(floor.iter().map(|s| s.secs).collect());
        for fs in ["fat32", "exfat"] {
            let (ours, peer) = commands(fs, bin, tree, &img, size_p, &mnt);
            let (a, b) = alternate(reps, &ours, &peer)?;
            table.push_str(&table_rows(label, fs, &a, &b, floor_t));
        }
        table.push_str(&format!(
            "| {label} | ext4 | cp -r + sync (floor) | {floor_t:.2} s | {} | {:.1} MiB | | 1.00 |\n",
            fmt_bytes(median(floor.iter().map(|s| s.write_bytes as f64).collect())),
            floor.iter().map(|s| s.max_rss_kib).max().unwrap_or(0) as f64 / 1024.0
        ));
    }
    let _ = std::fs::remove_file(&img);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(table)
}

/// The trees: 5,000 (and, not `quick`, 20,000) small files and 4 large
/// ones; each with its label and size.
fn make_trees(dir: &Path, quick: bool) -> Result<Vec<(String, PathBuf, u64)>, String> {
    let mut trees: Vec<(String, PathBuf, u64)> = Vec::new();
    let counts: &[u64] = if quick { &[5_000] } else { &[5_000, 20_000] };
    for &n in counts {
        let t = dir.join(format!("small{n}"));
        let bytes = small_tree(&t, n)?;
        trees.push((
            format!("{n} small files ({})", fmt_bytes(bytes as f64)),
            t,
            bytes,
        ));
    }
    if !quick {
        let t = dir.join("large");
        let bytes = large_tree(&t)?;
        trees.push((
            format!("4 large files ({})", fmt_bytes(bytes as f64)),
            t,
            bytes,
        ));
    }
    Ok(trees)
}

/// Our command and the peer's for `fs` ("fat32" or "exfat"): mkfs-alloc
/// --rootdir; mkfs.fat + mcopy, or mkfs.exfat + exfat-fuse + cp -r.
fn commands(
    fs: &str,
    bin: &Path,
    tree: &Path,
    img: &Path,
    size_p: &Path,
    mnt: &Path,
) -> (Command, Command) {
    let mut ours = sh(
        "rm -f \"$3\" && \"$1\" --fs \"$4\" --cluster 4K --size \"$5\" --serial 1234ABCD -q --rootdir \"$2\" \"$3\"",
        &[bin, tree, img, Path::new(fs), size_p],
    );
    ours.env("SOURCE_DATE_EPOCH", "1700000000");
    let peer = if fs == "fat32" {
        sh(
            "rm -f \"$2\" && truncate -s \"$3\" \"$2\" && mkfs.fat -F 32 -s 8 \"$2\" >/dev/null && mcopy -s -Q -i \"$2\" \"$1\"/* ::/",
            &[tree, img, size_p],
        )
    } else {
        sh(
            "rm -f \"$2\" && truncate -s \"$3\" \"$2\" && mkfs.exfat -c 4K \"$2\" >/dev/null && L=$(losetup -f --show \"$2\") && mount.exfat-fuse \"$L\" \"$4\" 2>/dev/null && cp -r \"$1\"/. \"$4\"/ && umount \"$4\" && losetup -d \"$L\" && sync",
            &[tree, img, size_p, mnt],
        )
    };
    (ours, peer)
}

/// `reps` runs of each command, alternating which goes first.
fn alternate(
    reps: usize,
    ours: &Command,
    peer: &Command,
) -> Result<(Vec<Sample>, Vec<Sample>), String> {
    let (mut a, mut b): (Vec<Sample>, Vec<Sample>) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        if rep % 2 == 0 {
            a.push(measure(ours)?);
            b.push(measure(peer)?);
        } else {
            b.push(measure(peer)?);
            a.push(measure(ours)?);
        }
    }
    Ok((a, b))
}

/// Our row and the peer's for one tree and file system.
fn table_rows(label: &str, fs: &str, a: &[Sample], b: &[Sample], floor_t: f64) -> String {
    let peer_name = if fs == "fat32" {
        "mkfs.fat + mcopy -s"
    } else {
        "mkfs.exfat + exfat-fuse + cp -r"
    };
    let (ta, wa, ma) = summary(a);
    let (tb, wb, mb) = summary(b);
    let fs_name = if fs == "fat32" {
        "FAT32 4K"
    } else {
        "exFAT 4K"
    };
    eprintln!("bench: {label} {fs_name} done");
    format!(
        "| {label} | {fs_name} | mkfs-alloc --rootdir | {ta:.2} s | {} | {:.1} MiB | {:.2} | {:.2} |\n| {label} | {fs_name} | {peer_name} | {tb:.2} s | {} | {:.1} MiB | 1.00 | {:.2} |\n",
        fmt_bytes(wa),
        ma as f64 / 1024.0,
        ta / tb,
        ta / floor_t,
        fmt_bytes(wb),
        mb as f64 / 1024.0,
        tb / floor_t
    )
}
