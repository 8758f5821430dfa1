//! `cargo xtask mutants [ARGS...]`: mutation testing of the on-disk and
//! layout crates with the pure tier (`cargo mutants`, crates.io's
//! cargo-mutants, installed on first use). Each mutant (an operator
//! swapped, a function body replaced by a default, a condition negated)
//! is built and the tests run; a mutant that no test catches is a change
//! of behaviour the suite would let through. ARGS go to cargo-mutants
//! (`--shard K/N`, `--file PATH`, `--list`, `--re REGEX`, `--jobs N`).
//!
//! The tests are the whole workspace's pure tier (`--test-workspace=true`:
//! the golden-byte and sentinel suites of `tests/` catch what the crates'
//! own tests miss), without the tool tier's `--include-ignored`. Not a CI
//! step: a full run takes hours on two cores (TESTING.md gives the figures
//! and the surviving mutants). The report is `target/mutants/mutants.out`
//! (`caught.txt`, `missed.txt`, `timeout.txt`, `unviable.txt`).

use crate::{cargo, run, target_dir, workspace_root};
use std::process::Command;

/// The crates mutated.
const CRATES: &[&str] = &["mkfs-alloc-ondisk", "mkfs-alloc-layout"];

/// `cargo xtask mutants [ARGS...]`.
pub(crate) fn mutants_cmd(args: &[String]) -> Result<(), String> {
    let has = Command::new(cargo())
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!("xtask: installing cargo-mutants (cargo install cargo-mutants --locked)");
        run(Command::new(cargo()).args(["install", "cargo-mutants", "--locked"]))?;
    }
    let out = target_dir().join("mutants");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cmd = Command::new(cargo());
    cmd.current_dir(workspace_root()).arg("mutants");
    for c in CRATES {
        cmd.args(["--package", c]);
    }
    cmd.args(["--test-workspace=true", "--output"])
        .arg(&out)
        .args(args);
    run(&mut cmd)
}
