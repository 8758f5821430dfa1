//! Test guards shared by every test suite of mkfs-alloc (a dev-dependency
//! only; no dependencies of its own, so it never enters a library's normal
//! dependency tree and any crate of the workspace can use it).
//!
//! ```text
//!  cmd      run a command, capture stdout/stderr/exit code; tool(): run a required tool
//!  fsck     the one judge of fsck.exfat -n / fsck.fat -n output: exit status and text
//!  tools    the tool table (tool -> Debian package), require_tool/require_root/require_fuse
//!  tempdir  unique directory under std::env::temp_dir(), removed on drop
//!  loopdev  losetup guard (sector size, offset, size limit, read-only), detached on drop
//!  loopfs   XFS (reflink=1) or ext4 loop-mounted from a sparse file, unmounted on drop
//!  fuse     FUSE driver guard (exfat-fuse, fusefat, any driver), unmounted on drop
//!  mounts   tmpfs (read-only remount, tiny sizes) and bind mount guards, unmounted on drop
//!  timeout  run a closure with a deadline (a hang fails the test)
//! ```
//!
//! Policy: nothing here skips. A missing tool, root, loop device or FUSE
//! module panics with a message that names the tool and the package to
//! install. Tests that need any of them belong to the tool tier: they are
//! marked `#[ignore = "tool tier: cargo xtask test"]`, so a plain
//! `cargo test` lists them as ignored and `cargo xtask test` runs them with
//! `--include-ignored` (TESTING.md).

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

pub mod cmd;
pub mod fsck;
pub mod fuse;
pub mod loopdev;
pub mod loopfs;
pub mod mounts;
pub mod tempdir;
pub mod timeout;
pub mod tools;

pub use cmd::{run, run_env, tool, tool_ok, tool_stdin, CmdOutput};
pub use fsck::{fsck_exfat_findings_with_volume_guid, fsck_findings, fsck_judge, FsckKind};
pub use fuse::FuseMount;
pub use loopdev::{LoopDevice, LoopOptions};
pub use loopfs::LoopFs;
pub use mounts::{BindMount, TmpfsMount};
pub use tempdir::TempDir;
pub use timeout::with_timeout;
pub use tools::{find_tool, is_root, package_of, require_fuse, require_root, require_tool, TOOLS};

/// The reason every tool-tier test gives in its `#[ignore]` attribute
/// (a literal there; this constant documents the convention).
pub const TOOL_TIER: &str = "tool tier: cargo xtask test";

/// Creates (or truncates) `path` as a sparse file of `size` bytes.
#[track_caller]
pub fn sparse_file(path: &std::path::Path, size: u64) {
    let f = std::fs::File::create(path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    f.set_len(size)
        .unwrap_or_else(|e| panic!("cannot size {}: {e}", path.display()));
}

/// Deterministic pseudo-random test data (xorshift), so that misplaced
/// blocks do not compare equal by accident.
pub fn test_data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
