//! Real programs that call `mkfs.vfat`, `mkfs.fat`, `mkdosfs` and
//! `mkfs.exfat` by name, run twice: with the real dosfstools / exfatprogs,
//! and with our links first on `PATH`. The caller must succeed both times,
//! and independent tools judge what it built: `fsck.fat -n` /
//! `fsck.exfat -n` clean, `blkid -p`'s type, FAT width and label equal to
//! the real tool's, the files read back with mtools equal to the input.
//!
//! - `repart.rs`: systemd-repart (252) into an image file and onto a loop
//!   device, under its own lock on the partition's loop device.
//! - `makefs.rs`: systemd-makefs, which runs mkfs under its lock on the
//!   device, for vfat and exfat.
//! - `genimage.rs`: genimage's `vfat` images (a 1440 KiB floppy, 32 MiB)
//!   with files added by mcopy.
//! - `localds.rs`: cloud-localds' `--filesystem=vfat` NoCloud seed (128 KiB,
//!   label `cidata`).
//!
//! Nothing here uses the network; loop devices are detached on drop.

mod genimage;
mod localds;
mod makefs;
mod repart;

use mkfs_alloc_tests::{mkfs_alloc_bin, require_tool, run_env, tool, CmdOutput, TempDir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which mkfs a caller finds on `PATH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mkfs {
    /// dosfstools 4.2 and exfatprogs, as installed.
    Real,
    /// Our links, first on `PATH`.
    Ours,
}

impl Mkfs {
    /// Both, the real tools first (their results are the reference).
    pub const BOTH: [Mkfs; 2] = [Mkfs::Real, Mkfs::Ours];

    /// A short name for file names and messages.
    pub fn tag(self) -> &'static str {
        match self {
            Mkfs::Real => "real",
            Mkfs::Ours => "ours",
        }
    }
}

/// The front-end names as symbolic links to the binary under test, and the
/// `PATH` a caller runs with.
pub struct Links {
    dir: TempDir,
}

impl Links {
    /// Links for every name a caller may exec.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Links {
        let dir = TempDir::new("caller-links");
        for name in mkfs_alloc_tests::FRONT_ENDS {
            std::os::unix::fs::symlink(mkfs_alloc_bin(), dir.join(name)).expect("symlink");
        }
        Links { dir }
    }

    /// `PATH` for `mkfs`: ours first, or the inherited one (on which the
    /// real tools must be: checked by name, so a caller never silently
    /// falls back to something else).
    pub fn path_for(&self, mkfs: Mkfs) -> String {
        for name in ["mkfs.fat", "mkfs.vfat", "mkdosfs", "mkfs.exfat"] {
            let found = require_tool(name);
            assert!(
                !found.starts_with(self.dir.path()),
                "the inherited PATH already holds our links: {}",
                found.display()
            );
        }
        let inherited = std::env::var("PATH").unwrap_or_default();
        match mkfs {
            Mkfs::Real => inherited,
            Mkfs::Ours => format!("{}:{inherited}", self.dir.path().display()),
        }
    }

    /// Runs the caller `program` with `args` and the `PATH` for `mkfs`.
    pub fn run(&self, mkfs: Mkfs, program: &Path, args: &[&str]) -> CmdOutput {
        run_env(program, args, &[("PATH", &self.path_for(mkfs))])
    }
}

/// `blkid -p -o export` of a file system image as key/value pairs.
pub fn blkid(image: &Path) -> BTreeMap<String, String> {
    let out = tool("blkid", &["-p", "-o", "export", &s(image)]);
    out.assert_success();
    out.stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| *k != "DEVNAME")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Asserts that `keys` of `ours`' blkid report equal the real tool's.
#[track_caller]
pub fn assert_same_blkid(
    what: &str,
    real: &BTreeMap<String, String>,
    ours: &BTreeMap<String, String>,
    keys: &[&str],
) {
    for key in keys {
        assert_eq!(
            ours.get(*key),
            real.get(*key),
            "{what}: blkid {key} differs\n real: {real:?}\n ours: {ours:?}"
        );
    }
}

/// `fsck.fat -n` (or `fsck.exfat -n`) must find nothing to repair.
#[track_caller]
pub fn assert_fsck_clean(image: &Path, exfat: bool) {
    let name = if exfat { "fsck.exfat" } else { "fsck.fat" };
    let out = tool(name, &["-n", &s(image)]);
    assert!(out.success(), "{name} -n {}:\n{out}", image.display());
}

/// The file `dos_path` (`::/boot/config.txt`) read with `mcopy` must equal
/// the bytes of `expected`.
#[track_caller]
pub fn assert_file(image: &Path, dos_path: &str, expected: &Path, scratch: &TempDir) {
    let out_path = scratch.join("mcopy.out");
    let _ = std::fs::remove_file(&out_path);
    let out = tool("mcopy", &["-n", "-i", &s(image), dos_path, &s(&out_path)]);
    assert!(
        out.success(),
        "mcopy {dos_path} from {}:\n{out}",
        image.display()
    );
    let got = std::fs::read(&out_path).expect("read the copied file");
    let want = std::fs::read(expected).expect("read the input file");
    assert!(
        got == want,
        "{dos_path} in {}: {} bytes read back, {} expected (or different bytes)",
        image.display(),
        got.len(),
        want.len()
    );
}

/// The names in the whole tree of an image (`mdir -/ -b`), sorted.
pub fn tree(image: &Path) -> Vec<String> {
    let out = tool("mdir", &["-/", "-b", "-i", &s(image), "::"]);
    out.assert_success();
    let mut names: Vec<String> = out.stdout.lines().map(str::to_string).collect();
    names.sort();
    names
}

/// Copies `len` bytes at `offset` of `image` into a new file `dest` (one
/// partition of a disk image, for tools that read a whole file).
pub fn extract(image: &Path, offset: u64, len: u64, dest: &Path) -> PathBuf {
    use std::io::{Read, Seek, SeekFrom};
    let mut src = std::fs::File::open(image).expect("open the disk image");
    src.seek(SeekFrom::Start(offset)).expect("seek");
    let mut out = std::fs::File::create(dest).expect("create the partition file");
    let copied = std::io::copy(&mut src.take(len), &mut out).expect("copy the partition");
    assert_eq!(copied, len, "{} ends inside a partition", image.display());
    dest.to_path_buf()
}

/// A path as a `String` argument.
pub fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
