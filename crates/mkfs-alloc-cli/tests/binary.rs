//! The built binary runs and reports this package's version.
//!
//! Besides what it checks, this file makes `cargo test` build the
//! `mkfs-alloc` binary (cargo builds a package's binaries when one of its
//! integration tests is selected), which the `tests/` package's suites run
//! from `target/<profile>/mkfs-alloc` (TESTING.md, "The two tiers").

use std::process::Command;

#[test]
fn version_names_the_package_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_mkfs-alloc"))
        .arg("--version")
        .output()
        .expect("the mkfs-alloc binary runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(env!("CARGO_PKG_VERSION")),
        "--version printed {text:?}"
    );
}
