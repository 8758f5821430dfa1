//! Checks for the crash-safety, bad-input and random-option suites: what
//! `blkid` sees at an offset, non-panicking fsck verdicts (on the image or
//! on a loop-device window), sparse copies and cheap fingerprints of
//! sentinel images.
//!
//! The panicking checks of a finished image live in [`crate::checks`]; the
//! helpers here return verdicts, because a crash-safety test has to
//! *classify* an image (no file system / the new one / the old one) rather
//! than insist that it is valid.

use crate::cmd::{run, CmdOutput};
use crate::image::read_at;
use crate::loopdev::{LoopDevice, LoopOptions};
use crate::tools::require_tool;
use mkfs_alloc_testsupport::{fsck_findings, FsckKind};
use std::path::Path;

/// What `blkid -p -o export` reported.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Probe {
    /// `TYPE=` (`exfat`, `vfat`, ...), if a file system was found.
    pub fs_type: Option<String>,
    /// `UUID=`: for FAT and exFAT the volume serial as `XXXX-XXXX`.
    pub uuid: Option<String>,
    /// `PTTYPE=` (`dos`, `gpt`), if a partition table was found.
    pub pttype: Option<String>,
    /// The whole output, for messages.
    pub raw: String,
}

impl Probe {
    /// True when neither a file system nor a partition table was found.
    pub fn is_blank(&self) -> bool {
        self.fs_type.is_none() && self.pttype.is_none()
    }
}

/// `blkid -p -o export [--offset OFFSET] IMG`: low-level probing (no cache),
/// of the volume starting at byte `offset`. Panics on anything but "found"
/// (exit 0) or "nothing found" (exit 2) — e.g. on exit 8, "ambivalent
/// result", which means two signatures compete for the same place.
#[track_caller]
pub fn blkid_probe(image: &Path, offset: u64) -> Probe {
    let mut args: Vec<String> = vec!["-p".into(), "-o".into(), "export".into()];
    if offset != 0 {
        args.extend(["--offset".into(), offset.to_string()]);
    }
    args.push(image.to_string_lossy().into_owned());
    let out = run(require_tool("blkid"), &args);
    match out.code {
        Some(0) | Some(2) => {}
        _ => panic!("blkid failed or is ambivalent:\n{out}"),
    }
    let get = |key: &str| {
        out.stdout.lines().find_map(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix('='))
                .map(str::to_string)
        })
    };
    Probe {
        fs_type: get("TYPE"),
        uuid: get("UUID"),
        pttype: get("PTTYPE"),
        raw: out.to_string(),
    }
}

/// A volume serial the way blkid prints FAT and exFAT UUIDs: `1234-ABCD`.
pub fn serial_uuid(serial: u32) -> String {
    format!("{:04X}-{:04X}", serial >> 16, serial & 0xFFFF)
}

/// Which fsck to run: `fsck.exfat` for exFAT, `fsck.fat` for every FAT
/// width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsck {
    /// `fsck.exfat`.
    Exfat,
    /// `fsck.fat`.
    Fat,
}

impl From<mkfs_alloc_layout::FsKind> for Fsck {
    fn from(fs: mkfs_alloc_layout::FsKind) -> Self {
        if fs.is_fat() {
            Fsck::Fat
        } else {
            Fsck::Exfat
        }
    }
}

impl Fsck {
    /// The blkid `TYPE` of this file system.
    pub fn blkid_type(self) -> &'static str {
        match self {
            Fsck::Exfat => "exfat",
            Fsck::Fat => "vfat",
        }
    }

    /// From a blkid `TYPE`.
    pub fn from_blkid(t: &str) -> Option<Fsck> {
        match t {
            "exfat" => Some(Fsck::Exfat),
            "vfat" => Some(Fsck::Fat),
            _ => None,
        }
    }
}

/// The verdict of `fsck.exfat -n` / `fsck.fat -n` on `target` (an image or
/// a device): `true` when the shared judge calls it clean (exit 0, the
/// clean summary and nothing else: `mkfs_alloc_testsupport::fsck`).
#[track_caller]
pub fn fsck_verdict(fs: Fsck, target: &Path) -> (bool, CmdOutput) {
    let kind = match fs {
        Fsck::Exfat => FsckKind::Exfat,
        Fsck::Fat => FsckKind::Fat,
    };
    let out = run(require_tool(kind.program()), &[Path::new("-n"), target]);
    let clean = fsck_findings(kind, out.success(), &out.stdout, &out.stderr).is_empty();
    (clean, out)
}

/// Runs `f` on the volume at bytes `offset..offset + len` of `image`: the
/// image itself when the volume starts at 0 and spans it, else a loop device
/// window (`losetup -o OFFSET --sizelimit LEN`), detached afterwards.
#[track_caller]
pub fn with_volume<T>(image: &Path, offset: u64, len: u64, f: impl FnOnce(&Path) -> T) -> T {
    let whole = std::fs::metadata(image).map(|m| m.len()).unwrap_or(0);
    if offset == 0 && len == whole {
        return f(image);
    }
    let dev = LoopDevice::attach_with(
        image,
        LoopOptions {
            window: Some((offset, len)),
            read_only: true,
            ..LoopOptions::default()
        },
    );
    f(dev.path())
}

/// `cp --sparse=always SRC DST`: a copy that keeps holes, so copying a
/// mostly empty 128 MiB template costs a few metadata blocks.
#[track_caller]
pub fn sparse_copy(src: &Path, dst: &Path) {
    let cp = require_tool("cp");
    let out = run(
        cp,
        &[Path::new("--sparse=always"), Path::new("--"), src, dst],
    );
    out.assert_success();
}

/// A fingerprint of a sparse sentinel image that is cheap even at 4 GiB:
/// its length, its allocated block count, and the bytes of the data ranges
/// `ranges` (the only non-hole parts when it was made). Holes read as zero,
/// so the contents are unchanged when the length and allocation are the
/// same and the data ranges hold the same bytes: a non-zero write into a
/// hole would have allocated blocks, and zeroing a hole changes nothing.
#[track_caller]
pub fn sparse_fingerprint(image: &Path, ranges: &[(u64, u64)]) -> (u64, u64, Vec<u32>) {
    use std::os::unix::fs::MetadataExt;
    let m =
        std::fs::metadata(image).unwrap_or_else(|e| panic!("cannot stat {}: {e}", image.display()));
    let sums = ranges
        .iter()
        .map(|&(off, len)| {
            let bytes = read_at(image, off, usize::try_from(len).expect("range fits usize"));
            crate::boot::exfat_checksum(&bytes)
        })
        .collect();
    (m.len(), m.blocks(), sums)
}
