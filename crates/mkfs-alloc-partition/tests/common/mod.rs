//! Helpers for the tests that check our tables with the real tools.
#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Debian package that ships `tool`, for the failure message.
fn package_of(tool: &str) -> &'static str {
    match tool {
        "sgdisk" => "gdisk",
        "sfdisk" | "fdisk" => "fdisk",
        "losetup" => "mount (util-linux)",
        "wipefs" | "blkid" => "util-linux",
        _ => "?",
    }
}

/// Runs `tool args`, panicking (never skipping) if the tool is missing.
pub fn run(tool: &str, args: &[&str]) -> Output {
    match Command::new(tool).args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => panic!(
            "`{tool}` is not installed: install the {} package; this test needs it",
            package_of(tool)
        ),
        Err(e) => panic!("cannot run `{tool}`: {e}"),
    }
}

/// Runs `tool args`, asserts success and returns stdout.
pub fn run_ok(tool: &str, args: &[&str]) -> String {
    let out = run(tool, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "`{tool} {}` failed ({}):\n{stdout}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `sgdisk -v` must exit 0 and report no problems.
pub fn assert_sgdisk_clean(target: &str) {
    let out = run_ok("sgdisk", &["-v", target]);
    assert!(
        out.contains("No problems found"),
        "sgdisk -v {target} found problems:\n{out}"
    );
}

/// `sfdisk --json` parsed: the `partitiontable` object.
pub fn sfdisk_json(target: &str) -> serde_json::Value {
    let out = run_ok("sfdisk", &["--json", target]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["partitiontable"].clone()
}

/// A temporary directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mkfs-alloc-partition-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A loop device over an image, detached on drop.
pub struct LoopDev(String);

impl LoopDev {
    /// `losetup -f --show --sector-size SS IMG`.
    pub fn attach(image: &Path, sector_size: u32) -> Self {
        let ss = sector_size.to_string();
        let img = image.to_str().unwrap();
        let out = run_ok("losetup", &["-f", "--show", "--sector-size", &ss, img]);
        let dev = out.trim().to_string();
        assert!(dev.starts_with("/dev/loop"), "losetup printed {out:?}");
        LoopDev(dev)
    }

    pub fn path(&self) -> &str {
        &self.0
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}
