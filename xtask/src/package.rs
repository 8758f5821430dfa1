//! `cargo xtask package`: `cargo package --workspace` of every publishable
//! crate, each `.crate` built on its own in dependency order against the
//! others in Cargo's temporary local registry (`target/package/`).
//!
//! Cargo takes a registry crate of a given version for immutable: it
//! unpacks it into `$CARGO_HOME/registry/src/-HASH/NAME-VERSION/` once
//! (`sources/registry/local.rs`) and reuses what it compiled from it. Our
//! crates keep version 0.1.0 from one run to the next, so a second run
//! would build a dependent crate against the first run's copy of its
//! dependencies (seen: the CLI against an older `mkfs-alloc-capacity`).
//! So the check builds in its own target directory,
//! `target/package-check/`, and first removes what an earlier run left of
//! our crates: their unpacked copies in local registries (directories
//! starting with `-`) and their build artifacts there. Third-party
//! dependencies stay cached.

use crate::{cargo, run, workspace_root};
use std::path::PathBuf;
use std::process::Command;

/// Workspace members that are not published.
const UNPUBLISHED: &[&str] = &["mkfs-alloc-tests", "mkfs-alloc-testsupport", "xtask"];

pub(crate) fn package_cmd(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("package takes no arguments (got {a:?})"));
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let src = home.join("registry").join("src");
    let locals = std::fs::read_dir(&src).into_iter().flatten().flatten();
    for registry in locals.filter(|e| e.file_name().to_string_lossy().starts_with('-')) {
        let crates = std::fs::read_dir(registry.path())
            .into_iter()
            .flatten()
            .flatten();
        for c in crates.filter(|e| e.file_name().to_string_lossy().starts_with("mkfs-alloc")) {
            std::fs::remove_dir_all(c.path())
                .map_err(|e| format!("{}: {e}", c.path().display()))?;
            eprintln!("xtask: removed the stale unpacked {}", c.path().display());
        }
    }
    let target = crate::target_dir().join("package-check");
    remove_our_artifacts(&target.join("debug"))?;
    let mut cmd = Command::new(cargo());
    cmd.current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", &target)
        .args(["package", "--workspace"]);
    for p in UNPUBLISHED {
        cmd.args(["--exclude", p]);
    }
    run(&mut cmd)
}

/// Removes our crates' build artifacts under `debug` (third-party ones stay).
fn remove_our_artifacts(debug: &std::path::Path) -> Result<(), String> {
    for sub in ["deps", ".fingerprint", "build", "incremental"] {
        let entries = std::fs::read_dir(debug.join(sub))
            .into_iter()
            .flatten()
            .flatten();
        for e in entries {
            let name = e.file_name().to_string_lossy().replace('_', "-");
            if !(name.starts_with("mkfs-alloc") || name.starts_with("libmkfs-alloc")) {
                continue;
            }
            let p = e.path();
            let removed = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            removed.map_err(|err| format!("{}: {err}", p.display()))?;
        }
    }
    Ok(())
}
