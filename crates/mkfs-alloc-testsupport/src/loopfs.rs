//! A host file system of a chosen kind on a loop device (`mount -o loop`
//! of a sparse file), unmounted on drop: XFS with `reflink=1` (it shares
//! extents between files: clones) and ext4 (it does not).

use crate::cmd::run;
use crate::tools::require_tool;
use crate::TempDir;
use std::path::{Path, PathBuf};

/// A mounted loop file system; unmounted (lazily if busy) on drop, which
/// also detaches its loop device (`mount -o loop` sets autoclear). Declare
/// it after the [`TempDir`] it lives in.
#[derive(Debug)]
pub struct LoopFs {
    mnt: PathBuf,
}

impl LoopFs {
    /// XFS made with `mkfs.xfs -m reflink=1` on a sparse file of `size`
    /// bytes (XFS needs at least 300 MiB) in `tmp`, mounted at
    /// `tmp/<name>`.
    #[track_caller]
    pub fn xfs_reflink(tmp: &TempDir, name: &str, size: u64) -> LoopFs {
        Self::make(tmp, name, size, "mkfs.xfs", &["-q", "-m", "reflink=1"])
    }

    /// ext4 (`mkfs.ext4 -q`) on a sparse file of `size` bytes, mounted at
    /// `tmp/<name>`.
    #[track_caller]
    pub fn ext4(tmp: &TempDir, name: &str, size: u64) -> LoopFs {
        Self::make(tmp, name, size, "mkfs.ext4", &["-q"])
    }

    #[track_caller]
    fn make(tmp: &TempDir, name: &str, size: u64, mkfs: &str, args: &[&str]) -> LoopFs {
        crate::tools::require_root();
        let backing = tmp.join(&format!("{name}.fs"));
        crate::sparse_file(&backing, size);
        let mut argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        argv.push(backing.as_os_str());
        let out = run(require_tool(mkfs), &argv);
        assert!(out.success(), "{mkfs} failed:\n{out}");
        let mnt = tmp.subdir(name);
        let out = run(
            require_tool("mount"),
            &[
                "-o".as_ref(),
                "loop".as_ref(),
                backing.as_os_str(),
                mnt.as_os_str(),
            ],
        );
        assert!(
            out.success(),
            "cannot loop-mount {mkfs}'s file system (root, loop module):\n{out}"
        );
        LoopFs { mnt }
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// A path inside the file system.
    pub fn join(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let Some(umount) = crate::tools::find_tool("umount") else {
            return;
        };
        let out = run(&umount, &[self.mnt.as_os_str()]);
        if !out.success() {
            let _ = run(&umount, &[std::ffi::OsStr::new("-l"), self.mnt.as_os_str()]);
        }
    }
}
