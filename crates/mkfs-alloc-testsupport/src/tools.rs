//! External tools and privileges the tool tier needs: one table of tools
//! with their Debian packages, and guards that FAIL (never skip) when
//! something is missing.

use std::path::{Path, PathBuf};

/// Every external tool the tests use, with the Debian package providing it.
/// `cargo xtask install-tools` installs the same packages.
pub const TOOLS: &[(&str, &str)] = include!("tools.in");

/// Finds `name` on `$PATH` (only there: hiding a tool from `PATH` hides it
/// from the tests too; `cargo xtask test` puts the sbin directories on it).
/// An absolute `name` is a data file a package provides (firmware).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    if Path::new(name).is_absolute() {
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The Debian package that provides `name`, if it is one of [`TOOLS`].
pub fn package_of(name: &str) -> Option<&'static str> {
    TOOLS
        .iter()
        .find(|(tool, _)| *tool == name)
        .map(|(_, pkg)| *pkg)
}

/// The full path of tool `name`. Panics (never skips) when it is not on
/// `PATH`, naming the tool and the package to install.
#[track_caller]
pub fn require_tool(name: &str) -> PathBuf {
    match find_tool(name) {
        Some(p) => p,
        None => {
            let pkg = package_of(name).unwrap_or("(a package providing it)");
            panic!(
                "required tool `{name}` is not on PATH; install it with \
                 `apt-get install -y {pkg}` or run `cargo xtask install-tools` \
                 (tool tier: run these tests with `cargo xtask test`)"
            )
        }
    }
}

/// Like [`require_tool`] for several tools at once.
#[track_caller]
pub fn require_tools(names: &[&str]) {
    for name in names {
        require_tool(name);
    }
}

/// The effective user id, from `/proc/self/status` (no tool needed).
pub fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// True when the process runs as root.
pub fn is_root() -> bool {
    euid() == Some(0)
}

/// Panics unless the process runs as root (loop devices, mounts need it).
#[track_caller]
pub fn require_root() {
    assert!(
        is_root(),
        "this test needs root (loop devices, FUSE and tmpfs mounts; euid is {:?}); \
         run `cargo xtask test` as root, as CI does",
        euid()
    );
}

/// Panics unless `/dev/fuse` exists (root and the `fuse` module).
#[track_caller]
pub fn require_fuse() {
    require_root();
    require_tool("fusermount");
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: load the fuse module (`modprobe fuse`) to run the mount tests"
    );
}
