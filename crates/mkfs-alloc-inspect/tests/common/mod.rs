//! Helpers for the tests that use real tools. A missing tool fails the test
//! (it never skips): the tests exist to compare with those tools.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use mkfs_alloc_inspect::{inspect, InspectOptions, ReadOnlyFile, Report};

pub use mkfs_alloc_testsupport::{
    sparse_file as sparse, tool_stdin, with_timeout, FuseMount, LoopDevice, LoopOptions, TempDir,
};

/// Runs a tool; panics (naming its package) when it is missing or fails.
/// Returns stdout followed by stderr.
pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = mkfs_alloc_testsupport::tool(cmd, args);
    out.assert_success();
    out.stdout + &out.stderr
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

/// A loop device over `offset..offset+size` of an image (`-o`,
/// `--sizelimit`), detached on drop.
pub fn loop_at(img: &Path, offset: u64, size: Option<u64>) -> LoopDevice {
    let len = size.unwrap_or_else(|| std::fs::metadata(img).unwrap().len() - offset);
    LoopDevice::attach_with(
        img,
        LoopOptions {
            window: Some((offset, len)),
            ..LoopOptions::default()
        },
    )
}

/// exfat-fuse on `dev` at `dir` (created), unmounted on drop.
pub fn mount_exfat(dev: &LoopDevice, dir: &Path) -> FuseMount {
    std::fs::create_dir_all(dir).unwrap();
    FuseMount::exfat(dev.path(), dir)
}

/// Partitions `img` with one partition from 1 MiB of `size` bytes:
/// `label` "dos" (type `ty` as a hex byte) or "gpt" (type `ty` as a GUID).
pub fn partition(img: &Path, label: &str, ty: &str, size: u64) {
    // sfdisk --no-reread --no-tell-kernel IMG <<< "label: dos\nstart=2048, size=N, type=c"
    let script = format!(
        "label: {label}\nstart=2048, size={}, type={ty}\n",
        size / 512
    );
    tool_stdin(
        "sfdisk",
        &[
            "--no-reread",
            "--no-tell-kernel",
            "-q",
            img.to_str().unwrap(),
        ],
        &script,
    );
}

/// A deterministic file body.
pub fn body(len: usize, seed: u8) -> Vec<u8> {
    mkfs_alloc_testsupport::test_data(len, u64::from(seed))
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
