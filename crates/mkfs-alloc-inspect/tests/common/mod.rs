//! Helpers for the tests that use real tools. A missing tool fails the test
//! (it never skips): the tests exist to compare with those tools.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mkfs_alloc_inspect::{inspect, InspectOptions, ReadOnlyFile, Report};

/// A temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "mkfs-alloc-inspect-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a tool; panics with its output when it is missing or fails.
pub fn run(cmd: &str, args: &[&str]) -> String {
    run_stdin(cmd, args, None)
}

/// Runs a tool with `input` on stdin.
pub fn run_stdin(cmd: &str, args: &[&str], input: Option<&str>) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut c = Command::new(cmd);
    c.args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap_or_else(|e| {
        panic!("cannot run {cmd} (needed by this test; install dosfstools, exfatprogs, exfat-fuse, mtools, fdisk/util-linux): {e}")
    });
    if let Some(i) = input {
        child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout + &String::from_utf8_lossy(&out.stderr)
}

/// Creates a sparse file of `size` bytes.
pub fn sparse(path: &Path, size: u64) {
    let f = std::fs::File::create(path).unwrap();
    f.set_len(size).unwrap();
}

/// Runs `f` in a thread; fails if it takes longer than `secs` seconds
/// (a hang) or panics.
pub fn with_timeout<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("took longer than {secs} s: a hang")
        }
        Err(e) => panic!("the inspection panicked: {e}"),
    }
}

/// Inspects an image file, read-only, with a 10 s timeout.
pub fn inspect_file(path: &Path, files: bool) -> Report {
    let path = path.to_path_buf();
    with_timeout(10, move || {
        let mut dev = ReadOnlyFile::open(&path, 512).unwrap();
        let opts = InspectOptions {
            files,
            list_files: files,
            ..InspectOptions::default()
        };
        inspect(&mut dev, &opts).unwrap()
    })
}

/// A loop device over part of an image, detached on drop.
pub struct Loop(pub String);

impl Loop {
    pub fn new(img: &Path, offset: u64, size: Option<u64>) -> Self {
        let off = offset.to_string();
        let mut args = vec!["-f", "--show", "-o", off.as_str()];
        let sz;
        if let Some(s) = size {
            sz = s.to_string();
            args.push("--sizelimit");
            args.push(sz.as_str());
        }
        let img = img.to_str().unwrap();
        args.push(img);
        Loop(
            run("losetup", &args)
                .lines()
                .next()
                .unwrap()
                .trim()
                .to_string(),
        )
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// An exfat-fuse mount, unmounted on drop.
pub struct FuseMount(pub PathBuf);

impl FuseMount {
    pub fn new(dev: &str, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        run("mount.exfat-fuse", &[dev, dir.to_str().unwrap()]);
        FuseMount(dir.to_path_buf())
    }

    pub fn unmount(self) {
        run("fusermount", &["-u", self.0.to_str().unwrap()]);
        std::mem::forget(self);
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        let _ = Command::new("fusermount")
            .args(["-u", self.0.to_str().unwrap()])
            .status();
    }
}

/// Partitions `img` with one partition from 1 MiB of `size` bytes:
/// `label` "dos" (type `ty` as a hex byte) or "gpt" (type `ty` as a GUID).
pub fn partition(img: &Path, label: &str, ty: &str, size: u64) {
    // sfdisk --no-reread --no-tell-kernel IMG <<< "label: dos\nstart=2048, size=N, type=c"
    let script = format!(
        "label: {label}\nstart=2048, size={}, type={ty}\n",
        size / 512
    );
    run_stdin(
        "sfdisk",
        &[
            "--no-reread",
            "--no-tell-kernel",
            "-q",
            img.to_str().unwrap(),
        ],
        Some(&script),
    );
}

/// A deterministic file body.
pub fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// The number next to `key` on the first line of a tool's output that
/// contains it: after it (`Cluster Count: 1984`, `starts at byte 16384`) or,
/// failing that, before it (`74841 data clusters`). Decimal or 0x hex.
pub fn field(out: &str, key: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("no {key:?} in:\n{out}"));
    let pos = line.find(key).unwrap();
    let num = |t: &str| -> Option<u64> {
        match t.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => t.parse().ok(),
        }
    };
    let after = line[pos + key.len()..].trim_start_matches([':', ' ', '\t']);
    after
        .split_whitespace()
        .next()
        .and_then(num)
        .or_else(|| line[..pos].split_whitespace().last().and_then(num))
        .or_else(|| line.split_whitespace().last().and_then(num))
        .unwrap_or_else(|| panic!("no number next to {key:?} in {line:?}"))
}
