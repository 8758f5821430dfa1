//! `cargo xtask features`: every library crate compiles with each feature
//! set an embedder can pick, and its tests compile on their own.
//!
//! `cargo test --workspace` unifies features across the workspace: a crate
//! whose tests use a feature another member turns on (blockio's `testing`,
//! say) builds there and fails for whoever runs `cargo test -p` on it alone;
//! a crate that only compiles with a default feature (advise's `scan`) or
//! with another crate's feature on (the facade without `populate`) is never
//! built that way by CI's other steps. For each publishable library crate
//! this checks, in its own target directory (`target/features`, so that the
//! other steps' builds are not invalidated):
//! - `cargo check -p CRATE --lib --no-default-features` (where it has
//!   default features), the smallest build an embedder can ask for;
//! - `cargo check -p CRATE --lib --all-features`;
//! - `cargo check -p CRATE --tests` alone (its dev-dependencies must name the
//!   features its tests use).

use std::process::Command;
use std::time::Instant;

use crate::{cargo, workspace_root};

/// Members that are not libraries an embedder builds.
const SKIP: &[&str] = &["mkfs-alloc-cli", "mkfs-alloc-tests", "xtask"];

/// One library crate: its name and whether it has default features.
struct Crate {
    name: String,
    has_default: bool,
}

/// The publishable library members, from `cargo metadata`.
fn library_crates() -> Result<Vec<Crate>, String> {
    let out = Command::new(cargo())
        .current_dir(workspace_root())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let packages = meta["packages"]
        .as_array()
        .ok_or("cargo metadata: no packages")?;
    let mut crates: Vec<Crate> = packages
        .iter()
        .filter(|p| {
            p["targets"].as_array().is_some_and(|t| {
                t.iter().any(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "lib"))
                })
            })
        })
        .filter_map(|p| {
            let name = p["name"].as_str()?.to_string();
            let has_default = p["features"]["default"]
                .as_array()
                .is_some_and(|d| !d.is_empty());
            (!SKIP.contains(&name.as_str())).then_some(Crate { name, has_default })
        })
        .collect();
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crates)
}

/// `cargo xtask features`: see the module docs. Runs every check, then
/// fails naming each that failed.
pub fn features_cmd(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("features takes no arguments (got {a:?})"));
    }
    let start = Instant::now();
    let root = workspace_root();
    let target_dir = root.join("target/features");
    let mut failed = Vec::new();
    let mut checks = 0;
    for krate in library_crates()? {
        let mut variants: Vec<&[&str]> = Vec::new();
        if krate.has_default {
            variants.push(&["--lib", "--no-default-features"]);
        }
        variants.push(&["--lib", "--all-features"]);
        variants.push(&["--tests"]);
        for flags in variants {
            checks += 1;
            let step = Instant::now();
            let status = Command::new(cargo())
                .current_dir(&root)
                .env("CARGO_TARGET_DIR", &target_dir)
                .args(["check", "--quiet", "-p", &krate.name])
                .args(flags)
                .status()
                .map_err(|e| format!("cargo check: {e}"))?;
            let line = format!("{} {}", krate.name, flags.join(" "));
            eprintln!(
                "  {line:<60} {:>5.1} s  {}",
                step.elapsed().as_secs_f64(),
                if status.success() { "ok" } else { "FAILED" }
            );
            if !status.success() {
                failed.push(line);
            }
        }
    }
    eprintln!(
        "xtask: features: {checks} checks in {:.0?}",
        start.elapsed()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {checks} feature checks failed:\n  {}",
            failed.len(),
            failed.join("\n  ")
        ))
    }
}
