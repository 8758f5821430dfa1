//! Kernel mounts the tests make as root, unmounted on drop: tmpfs (a
//! read-only file system that binds root too, a tiny file system that runs
//! out of space) and bind mounts (a sysfs or procfs file inside a source
//! tree).

use crate::cmd::run;
use crate::tools::require_tool;
use std::path::{Path, PathBuf};

/// A mount point with a tmpfs on it, unmounted (lazily if busy) on drop.
/// Declare it after the [`TempDir`](crate::TempDir) holding `dir`.
#[derive(Debug)]
pub struct TmpfsMount {
    dir: PathBuf,
}

impl TmpfsMount {
    /// `mount -t tmpfs -o OPTIONS tmpfs DIR`. Panics (with mount's output)
    /// on failure: the test needs root.
    #[track_caller]
    pub fn mount(dir: &Path, options: &str) -> TmpfsMount {
        crate::tools::require_root();
        let mount = require_tool("mount");
        let out = run(
            mount,
            &[
                "-t",
                "tmpfs",
                "-o",
                options,
                "tmpfs",
                &dir.to_string_lossy(),
            ],
        );
        assert!(out.success(), "cannot mount a tmpfs (root needed):\n{out}");
        TmpfsMount {
            dir: dir.to_path_buf(),
        }
    }

    /// `mount -o remount,ro DIR`: everything in it becomes read-only, for
    /// root too (unlike file modes, which root ignores).
    #[track_caller]
    pub fn remount_read_only(&self) {
        let out = run(
            require_tool("mount"),
            &["-o", "remount,ro", &self.dir.to_string_lossy()],
        );
        assert!(out.success(), "cannot remount read-only:\n{out}");
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let Some(umount) = crate::tools::find_tool("umount") else {
            return;
        };
        let out = run(&umount, &[self.dir.as_os_str()]);
        if !out.success() {
            let _ = run(&umount, &[std::ffi::OsStr::new("-l"), self.dir.as_os_str()]);
        }
    }
}

/// A file or directory bind-mounted over `target` (`mount --bind SRC
/// TARGET`), unmounted on drop.
#[derive(Debug)]
pub struct BindMount {
    target: PathBuf,
}

impl BindMount {
    /// `mount --bind SRC TARGET`. Panics (with mount's output) on failure.
    #[track_caller]
    pub fn new(src: &Path, target: &Path) -> BindMount {
        crate::tools::require_root();
        let out = run(
            require_tool("mount"),
            &[
                std::ffi::OsStr::new("--bind"),
                src.as_os_str(),
                target.as_os_str(),
            ],
        );
        assert!(out.success(), "cannot bind-mount:\n{out}");
        BindMount {
            target: target.to_path_buf(),
        }
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        if let Some(umount) = crate::tools::find_tool("umount") {
            let _ = run(&umount, &[self.target.as_os_str()]);
        }
    }
}
