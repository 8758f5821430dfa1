//! The firmware's images against the std CLI's and independent tools.
//!
//! Per job: the CLI formats a file of the same size with the same options
//! (`--serial`, `SOURCE_DATE_EPOCH`); the two files must be byte-identical.
//! The volume (`mkfs-alloc info --json` finds it) is copied out sparsely,
//! `fsck -n` must be clean, and a writer must accept it: mtools (FAT:
//! `minfo`, `mdir`, a file copied in and back) or exfat-fuse (exFAT: a
//! read-write mount, a file written and read back); then `fsck -n` again.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use mkfs_alloc_testsupport::{fsck_judge, FsckKind};
use serde_json::{json, Value};

use super::{Job, EPOCH, JOBS, SERIAL};
use crate::kernel::{json_u64, read_volume};
use crate::{cargo, is_root, run, target_dir, workspace_root};

/// What the checks found for one image.
pub(super) struct ImageCheck {
    pub(super) name: &'static str,
    /// Check name and outcome ("ok", "not run: ...") in order.
    steps: Vec<(&'static str, String)>,
    pub(super) failures: Vec<String>,
}

impl ImageCheck {
    fn step(&mut self, what: &'static str, result: Result<String, String>) {
        match result {
            Ok(outcome) => self.steps.push((what, outcome)),
            Err(e) => {
                self.steps.push((what, "FAILED".into()));
                self.failures.push(format!("{what}: {e}"));
            }
        }
    }

    pub(super) fn to_json(&self) -> Value {
        let steps: serde_json::Map<String, Value> = self
            .steps
            .iter()
            .map(|(k, v)| ((*k).to_string(), Value::from(v.as_str())))
            .collect();
        json!({"image": self.name, "checks": steps, "ok": self.failures.is_empty()})
    }

    pub(super) fn summary(&self) -> String {
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!("  {}: {}", self.name, steps.join(", "))
    }
}

/// Checks every job's image in `fw`; scratch files go to `work`.
pub(super) fn check_images(work: &Path, fw: &Path, mount: bool) -> Result<Vec<ImageCheck>, String> {
    run(Command::new(cargo()).current_dir(workspace_root()).args([
        "build",
        "-p",
        "mkfs-alloc-cli",
        "--bin",
        "mkfs-alloc",
    ]))?;
    let bin = target_dir().join("debug").join("mkfs-alloc");
    let cli = work.join("cli");
    std::fs::create_dir_all(&cli).map_err(|e| format!("{}: {e}", cli.display()))?;
    let mut out = Vec::new();
    for job in JOBS {
        let mut c = ImageCheck {
            name: job.name,
            steps: Vec::new(),
            failures: Vec::new(),
        };
        let image = fw.join(job.name);
        let theirs = cli.join(job.name);
        c.step(
            "identical to the CLI's",
            cli_image(&bin, job, &theirs).and_then(|()| {
                same_bytes(&image, &theirs).map(|()| format!("yes ({} bytes)", job.size))
            }),
        );
        match volume_copy(&bin, job, &image, &work.join(format!("{}.vol", job.name))) {
            Err(e) => c.step("volume", Err(e)),
            Ok(vol) => {
                let fsck = if job.exfat {
                    FsckKind::Exfat
                } else {
                    FsckKind::Fat
                };
                c.step(fsck.program(), fsck_clean(fsck, &vol));
                if job.exfat {
                    if mount {
                        c.step("exfat-fuse", fuse_round_trip(&vol, work));
                    } else {
                        c.step("exfat-fuse", Ok("not run (--no-mount)".into()));
                    }
                } else {
                    c.step("mtools", mtools_round_trip(&vol, work));
                }
                if mount || !job.exfat {
                    c.step("fsck after writing", fsck_clean(fsck, &vol));
                }
            }
        }
        out.push(c);
    }
    Ok(out)
}

/// Formats `path` (a new file of the job's size) with the CLI.
fn cli_image(bin: &Path, job: &Job, path: &Path) -> Result<(), String> {
    let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.set_len(job.size)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    drop(f);
    let out = Command::new(bin)
        .args(job.args.split_whitespace())
        .args(["--serial", SERIAL, "-q"])
        .arg(path)
        .env("SOURCE_DATE_EPOCH", EPOCH.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "mkfs-alloc {} failed ({}): {}",
            job.args,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether two files hold the same bytes; the error names the first
/// difference.
fn same_bytes(a: &Path, b: &Path) -> Result<(), String> {
    let open = |p: &Path| File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (la, lb) = (
        fa.metadata().map_err(|e| e.to_string())?.len(),
        fb.metadata().map_err(|e| e.to_string())?.len(),
    );
    if la != lb {
        return Err(format!("{la} bytes against the CLI's {lb}"));
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut at = 0u64;
    while at < la {
        let n = (la - at).min(ba.len() as u64) as usize;
        fa.read_exact(&mut ba[..n]).map_err(|e| e.to_string())?;
        fb.read_exact(&mut bb[..n]).map_err(|e| e.to_string())?;
        if let Some(i) = (0..n).find(|&i| ba[i] != bb[i]) {
            let off = at + i as u64;
            return Err(format!(
                "first difference at byte {off} (sector {}): {:#04x} against the CLI's {:#04x}",
                off / 512,
                ba[i],
                bb[i]
            ));
        }
        at += n as u64;
    }
    Ok(())
}

/// Copies the one volume of `image` (as `info --json` places it) into a
/// sparse file `out`.
fn volume_copy(bin: &Path, job: &Job, image: &Path, out: &Path) -> Result<PathBuf, String> {
    let vol = read_volume(job.name, bin, image)?;
    let (start, size) = (json_u64(&vol, "start")?, json_u64(&vol, "size")?);
    sparse_copy(image, start, size, out)?;
    Ok(out.to_path_buf())
}

/// Copies `size` bytes at `start` of `src` into a new file `dst`, leaving
/// holes where whole MiB are zero.
pub(crate) fn sparse_copy(src: &Path, start: u64, size: u64, dst: &Path) -> Result<(), String> {
    let mut from = File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
    from.seek(SeekFrom::Start(start))
        .map_err(|e| e.to_string())?;
    let mut to = File::create(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < size {
        let n = (size - done).min(buf.len() as u64) as usize;
        from.read_exact(&mut buf[..n])
            .map_err(|e| format!("{}: {e}", src.display()))?;
        if buf[..n].iter().any(|&b| b != 0) {
            to.seek(SeekFrom::Start(done)).map_err(|e| e.to_string())?;
            to.write_all(&buf[..n])
                .map_err(|e| format!("{}: {e}", dst.display()))?;
        }
        done += n as u64;
    }
    to.set_len(size)
        .map_err(|e| format!("{}: {e}", dst.display()))
}

/// `PROGRAM -n VOLUME`, judged by the shared judge: exit 0, the clean
/// summary and nothing else (fsck.exfat 1.2 exits 0 after some errors).
fn fsck_clean(kind: FsckKind, vol: &Path) -> Result<String, String> {
    let program = kind.program();
    let out = Command::new(program)
        .arg("-n")
        .arg(vol)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    fsck_judge(kind, &out)
        .map(|_| "clean".into())
        .map_err(|e| e.trim().replace('\n', " | "))
}

/// A small file's bytes, to write into a volume and read back.
const PROBE: &[u8] = b"written by the host into a volume the firmware formatted\n";

/// mtools: `minfo` and `mdir` read the volume, a file goes in and comes
/// back equal.
fn mtools_round_trip(vol: &Path, work: &Path) -> Result<String, String> {
    let image = vol.display().to_string();
    let src = work.join("probe.txt");
    let back = work.join("probe.back");
    std::fs::write(&src, PROBE).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&back);
    let steps: [Vec<String>; 4] = [
        vec!["minfo".into(), "-i".into(), image.clone(), "::".into()],
        vec![
            "mcopy".into(),
            "-i".into(),
            image.clone(),
            src.display().to_string(),
            "::/PROBE.TXT".into(),
        ],
        vec!["mdir".into(), "-i".into(), image.clone(), "::".into()],
        vec![
            "mcopy".into(),
            "-i".into(),
            image,
            "::/PROBE.TXT".into(),
            back.display().to_string(),
        ],
    ];
    for argv in &steps {
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}): {}",
                argv.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let got = std::fs::read(&back).map_err(|e| format!("{}: {e}", back.display()))?;
    if got == PROBE {
        Ok("minfo, mdir, a file copied in and back".into())
    } else {
        Err("the file copied back differs".into())
    }
}

/// exfat-fuse: a read-write mount, a file written, unmounted, mounted
/// again read-only, the file read back equal.
fn fuse_round_trip(vol: &Path, work: &Path) -> Result<String, String> {
    if !is_root() {
        return Err("mounting with exfat-fuse needs root (or pass --no-mount)".into());
    }
    let dir = work.join("mnt");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    // exfat-fuse (run as root) wants a block device: a loop device over the
    // volume's copy.
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(vol)
        .output()
        .map_err(|e| format!("cannot run losetup: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let result = fuse_on(Path::new(&dev), &dir);
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    result
}

/// The mounts of [`fuse_round_trip`] on the loop device `vol`.
fn fuse_on(vol: &Path, dir: &Path) -> Result<String, String> {
    let mount = |ro: bool| -> Result<(), String> {
        let mut cmd = Command::new("mount.exfat-fuse");
        if ro {
            cmd.args(["-o", "ro"]);
        }
        let out = cmd
            .arg(vol)
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount.exfat-fuse: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "mount.exfat-fuse failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    let umount = || {
        Command::new("umount")
            .arg(dir)
            .status()
            .map_err(|e| e.to_string())
            .and_then(|s| s.success().then_some(()).ok_or(format!("umount: {s}")))
    };
    mount(false)?;
    let wrote = std::fs::write(dir.join("probe.txt"), PROBE).map_err(|e| e.to_string());
    umount()?;
    wrote?;
    mount(true)?;
    let got = std::fs::read(dir.join("probe.txt")).map_err(|e| e.to_string());
    umount()?;
    if got? == PROBE {
        Ok("mounted, a file written and read back".into())
    } else {
        Err("the file read back differs".into())
    }
}
