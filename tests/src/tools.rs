//! External tools the tests need, and the Debian packages that provide them.

use std::path::{Path, PathBuf};

/// Every external tool the tests use, with the Debian package providing it.
/// `cargo xtask install-tools` installs the same packages.
pub const TOOLS: &[(&str, &str)] = include!("../../xtask/src/test_tools.in");

/// Directories searched besides `$PATH` (root tools live in sbin, which a
/// non-login shell may not have in its PATH).
const EXTRA_DIRS: &[&str] = &["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// Finds `name` in `$PATH` or the sbin directories.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    // An absolute path names a data file a package provides (firmware).
    if Path::new(name).is_absolute() {
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
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

/// The full path of tool `name`. Panics (never skips) when it is missing,
/// naming the package to install.
#[track_caller]
pub fn require_tool(name: &str) -> PathBuf {
    match find_tool(name) {
        Some(p) => p,
        None => {
            let pkg = package_of(name).unwrap_or("(unknown package)");
            panic!(
                "required tool `{name}` is not installed; install it with \
                 `apt-get install -y {pkg}` or run `cargo xtask install-tools`"
            )
        }
    }
}

/// Panics unless the process runs as root (loop devices and mounts need it).
#[track_caller]
pub fn require_root() {
    let out = crate::cmd::run(require_tool_any("id"), &["-u"]);
    assert_eq!(
        out.stdout.trim(),
        "0",
        "this test needs root (loop devices, FUSE mounts); run it as root as CI does"
    );
}

/// Like [`require_tool`] for basic tools not in [`TOOLS`] (coreutils).
#[track_caller]
fn require_tool_any(name: &str) -> PathBuf {
    find_tool(name).unwrap_or_else(|| panic!("required tool `{name}` is not installed"))
}
