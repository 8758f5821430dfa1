//! `cargo xtask bench --populate`, second table: where the image lives
//! decides how file data gets into it. On a loop-mounted XFS made with
//! `mkfs.xfs -m reflink=1` (it shares extents between files) and on a
//! loop-mounted ext4 (it does not), with the trees on the same file system
//! as the image: `mkfs-alloc --rootdir --copy auto` (clones on XFS, copies
//! in the kernel on ext4) against `--copy copy` (read and write: the path
//! before clones), `cp -r --reflink=always` (the floor on XFS), `cp -r`
//! (coreutils' default, which clones on XFS too), `cp -r --reflink=never`
//! (the copying floor) and the peers (`mkfs.exfat` + exfat-fuse + `cp -r`,
//! `mkfs.fat` + `mcopy -s`). Per run: wall time, bytes written, the disk
//! space the run added to the host file system (`stat -f` before and after,
//! each after `sync`: shared extents are not counted twice, as `du` of the
//! image would) and peak RSS; medians over the repetitions, the commands in
//! a rotating order.

use crate::bench::{fmt_bytes, measure, median, Sample};
use crate::bench_populate::{large_tree, sh, small_tree};
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    Xfs,
    Ext4,
}

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::Xfs => "XFS reflink=1",
            Host::Ext4 => "ext4",
        }
    }
}

/// One command of the table.
struct Tool {
    name: &'static str,
    cmd: Command,
    /// What it leaves behind (removed before each run).
    output: PathBuf,
}

/// A loop-mounted host file system, unmounted and removed on drop.
struct Mounted {
    backing: PathBuf,
    mnt: PathBuf,
}

impl Mounted {
    fn new(dir: &Path, host: Host) -> Result<Mounted, String> {
        let backing = dir.join(format!("{host:?}.fs"));
        let mnt = dir.join(format!("{host:?}"));
        std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
        let f = std::fs::File::create(&backing).map_err(|e| e.to_string())?;
        f.set_len(8 * GIB).map_err(|e| e.to_string())?;
        drop(f);
        let mut mkfs = match host {
            Host::Xfs => sh("mkfs.xfs -q -m reflink=1 \"$1\"", &[&backing]),
            Host::Ext4 => sh("mkfs.ext4 -q \"$1\"", &[&backing]),
        };
        crate::run(&mut mkfs)?;
        crate::run(&mut sh("mount -o loop \"$1\" \"$2\"", &[&backing, &mnt]))?;
        Ok(Mounted { backing, mnt })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = std::fs::remove_file(&self.backing);
    }
}

/// Bytes in use on the file system holding `p`, after a `sync`.
fn used(p: &Path) -> Result<u64, String> {
    crate::run(&mut Command::new("sync"))?;
    let out = Command::new("stat")
        .args(["-f", "-c", "%b %f %S"])
        .arg(p)
        .output()
        .map_err(|e| e.to_string())?;
    let v: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match v[..] {
        [blocks, free, size] => Ok((blocks - free) * size),
        _ => Err(format!("stat -f {}: {out:?}", p.display())),
    }
}

fn remove(p: &Path) {
    if p.is_dir() {
        let _ = std::fs::remove_dir_all(p);
    } else {
        let _ = std::fs::remove_file(p);
    }
}

/// The commands for one tree on one host.
fn tools(host: Host, bin: &Path, tree: &Path, mnt: &Path, size: u64) -> Vec<Tool> {
    let img = mnt.join("target.img");
    let copy = mnt.join("copy");
    let fuse = mnt.join("fuse");
    let _ = std::fs::create_dir_all(&fuse);
    let size = size.to_string();
    let size = Path::new(&size);
    let ours = |fs: &str, mode: &str| {
        let mut c = sh(
            "\"$1\" --fs \"$4\" --cluster 4K --size \"$5\" --serial 1234ABCD -q --copy \"$6\" --rootdir \"$2\" \"$3\"",
            &[bin, tree, &img, Path::new(fs), size, Path::new(mode)],
        );
        c.env("SOURCE_DATE_EPOCH", "1700000000");
        c
    };
    let cp = |flags: &str| {
        sh(
            &format!("cp -r {flags} \"$1\" \"$2\" && sync"),
            &[tree, &copy],
        )
    };
    let mut v = vec![
        Tool {
            name: "mkfs-alloc --rootdir --copy auto (exFAT 4K)",
            cmd: ours("exfat", "auto"),
            output: img.clone(),
        },
        Tool {
            name: "mkfs-alloc --rootdir --copy copy (exFAT 4K)",
            cmd: ours("exfat", "copy"),
            output: img.clone(),
        },
        Tool {
            name: "mkfs-alloc --rootdir --copy auto (FAT32 4K)",
            cmd: ours("fat32", "auto"),
            output: img.clone(),
        },
        Tool {
            name: "cp -r",
            cmd: cp(""),
            output: copy.clone(),
        },
    ];
    if host == Host::Xfs {
        v.push(Tool {
            name: "cp -r --reflink=always",
            cmd: cp("--reflink=always"),
            output: copy.clone(),
        });
        v.push(Tool {
            name: "cp -r --reflink=never",
            cmd: cp("--reflink=never"),
            output: copy.clone(),
        });
    }
    v.push(Tool {
        name: "mkfs.exfat + exfat-fuse + cp -r",
        cmd: sh(
            "truncate -s \"$3\" \"$2\" && mkfs.exfat -c 4K \"$2\" >/dev/null && L=$(losetup -f --show \"$2\") && mount.exfat-fuse \"$L\" \"$4\" 2>/dev/null && cp -r \"$1\"/. \"$4\"/ && umount \"$4\" && losetup -d \"$L\" && sync",
            &[tree, &img, size, &fuse],
        ),
        output: img.clone(),
    });
    v.push(Tool {
        name: "mkfs.fat + mcopy -s",
        cmd: sh(
            "truncate -s \"$3\" \"$2\" && mkfs.fat -F 32 -s 8 \"$2\" >/dev/null && mcopy -s -Q -i \"$2\" \"$1\"/* ::/ && sync",
            &[tree, &img, size],
        ),
        output: img,
    });
    v
}

/// Median time, bytes written and disk space added, and the peak RSS.
struct Result3 {
    secs: f64,
    written: f64,
    added: f64,
    rss_kib: u64,
}

/// `reps` rounds over the tools, each round starting one tool later.
fn measure_all(tools: &[Tool], mnt: &Path, reps: usize) -> Result<Vec<Result3>, String> {
    let n = tools.len();
    let mut samples: Vec<Vec<(Sample, u64)>> = (0..n).map(|_| Vec::new()).collect();
    for rep in 0..reps {
        for k in 0..n {
            let i = (rep + k) % n;
            let t = &tools[i];
            remove(&t.output);
            let before = used(mnt)?;
            let s = measure(&t.cmd)?;
            let after = used(mnt)?;
            remove(&t.output);
            samples[i].push((s, after.saturating_sub(before)));
        }
    }
    Ok(samples
        .iter()
        .map(|v| Result3 {
            secs: median(v.iter().map(|(s, _)| s.secs).collect()),
            written: median(v.iter().map(|(s, _)| s.write_bytes as f64).collect()),
            added: median(v.iter().map(|(_, a)| *a as f64).collect()),
            rss_kib: v.iter().map(|(s, _)| s.max_rss_kib).max().unwrap_or(0),
        })
        .collect())
}

/// Runs the table and returns it in Markdown.
pub fn run(bin: &Path, reps: usize, quick: bool) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("mkfs-alloc-bench-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut table = String::from(
        "| host file system | tree | tool | wall time (median) | bytes written | disk space added | peak RSS | time vs --copy copy | time vs floor |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let result = (|| {
        for host in [Host::Xfs, Host::Ext4] {
            let m = Mounted::new(&dir, host)?;
            let small_n = if quick { 5_000 } else { 20_000 };
            let trees = [
                (format!("{small_n} small files"), m.mnt.join("small"), true),
                ("4 x 256 MiB".to_string(), m.mnt.join("large"), false),
            ];
            for (label, tree, small) in &trees {
                let bytes = if *small {
                    small_tree(tree, small_n)?
                } else {
                    large_tree(tree)?
                };
                let size = (bytes * 3 / 2 + 300 * MIB) / MIB * MIB;
                let tools = tools(host, bin, tree, &m.mnt, size);
                let r = measure_all(&tools, &m.mnt, reps)?;
                let pick = |name: &str| tools.iter().position(|t| t.name == name);
                let base = pick("mkfs-alloc --rootdir --copy copy (exFAT 4K)").map(|i| r[i].secs);
                let floor_name = match host {
                    Host::Xfs => "cp -r --reflink=always",
                    Host::Ext4 => "cp -r",
                };
                let floor = pick(floor_name).map(|i| r[i].secs);
                let label = format!("{label} ({})", fmt_bytes(bytes as f64));
                for (t, x) in tools.iter().zip(&r) {
                    let ratio =
                        |d: Option<f64>| d.map_or("".into(), |d| format!("{:.3}", x.secs / d));
                    table.push_str(&format!(
                        "| {} | {label} | {} | {:.3} s | {} | {} | {:.1} MiB | {} | {} |\n",
                        host.name(),
                        t.name,
                        x.secs,
                        fmt_bytes(x.written),
                        fmt_bytes(x.added),
                        x.rss_kib as f64 / 1024.0,
                        ratio(base),
                        ratio(floor),
                    ));
                }
                eprintln!("bench: {} {label} done", host.name());
                remove(tree);
            }
        }
        Ok::<(), String>(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|()| table)
}
