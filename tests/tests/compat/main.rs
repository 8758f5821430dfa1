//! mkfs-alloc answering to `mkfs.fat`, `mkfs.vfat`, `mkfs.msdos`,
//! `mkdosfs` and `mkfs.exfat` (docs/mkfs-compat.md).
//!
//! - `lines.rs` (tool tier, root): every command line collected from the
//!   callers' sources and the options people type, run through our links
//!   and through the real dosfstools / exfatprogs on twin loop devices or
//!   images; `fsck` must pass both, and `blkid -p` (type, FAT width, label,
//!   UUID, sector size) and the cluster size must agree, except where the
//!   docs' table says ours differs on purpose.
//! - `refusals.rs` (pure): options we do not support are refused by name
//!   (exit 2, the target byte-identical), the probes callers make (no
//!   arguments: exit 1; `--help`'s version line; `-V`), `-C`, `--invariant`
//!   and permuted options, read back with `mkfs-alloc info`.
//! - `twins.rs` (tool tier): ours and the original on twin image files,
//!   compared from the boot sectors' bytes: labels (case, blank, `NO NAME`,
//!   the label entry), floppy boot sectors, `strtol` numbers and `-f 1`,
//!   width, cluster size, root entries and cluster count (within 3 %)
//!   across sizes, a cloud-localds seed's free space, and mkfs.exfat's
//!   default cluster size at its boundaries.
//! - `guid.rs` (pure): a given volume GUID (`mkfs.exfat -U`, `mkfs-alloc
//!   --volume-guid=GUID`) read back from its entry; malformed and null ones
//!   refused before anything is written.

mod guid;
mod lines;
mod refusals;
mod twins;

use mkfs_alloc_tests::{mkfs_alloc_bin, run, CmdOutput, TempDir};
use std::path::{Path, PathBuf};

/// The front-end names, each a link to the binary under test.
pub struct Links {
    dir: TempDir,
}

impl Links {
    /// `mkfs.fat`, `mkfs.vfat`, `mkdosfs` and `mkfs.exfat` as symbolic
    /// links; `mkfs.msdos` as a hard link (or a copy, across file systems:
    /// argv[0] is what counts).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Links {
        let dir = TempDir::new("compat-links");
        let bin = mkfs_alloc_bin();
        for name in ["mkfs.fat", "mkfs.vfat", "mkdosfs", "mkfs.exfat"] {
            std::os::unix::fs::symlink(&bin, dir.join(name)).expect("symlink the binary");
        }
        let msdos = dir.join("mkfs.msdos");
        if std::fs::hard_link(&bin, &msdos).is_err() {
            std::fs::copy(&bin, &msdos).expect("copy the binary");
        }
        Links { dir }
    }

    /// The link named `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Runs our `name` with `args`.
    pub fn run(&self, name: &str, args: &[&str]) -> CmdOutput {
        run(self.path(name), args)
    }
}

/// A path as a `&str` argument.
pub fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
