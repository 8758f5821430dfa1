//! `cargo xtask mutants [ARGS...]`: mutation testing of the on-disk and
//! layout crates (`cargo mutants`, crates.io's cargo-mutants, installed on
//! first use). Each mutant (an operator swapped, a function body replaced
//! by a default, a condition negated) is built and the tests run; a mutant
//! that no test catches is a change of behaviour the suite would let
//! through. ARGS go to cargo-mutants (`--shard K/N` samples one N-th of
//! the mutants in stage 1, `--file PATH`, `--re REGEX`).
//!
//! Two stages, because the whole pure tier costs a full workspace build per
//! mutant (about a minute on two cores, so hours for the 2,400 mutants):
//! 1. every mutant against the two crates' own tests (`--test-package`
//!    for both: layout's golden-byte test pins what ondisk's encoders write),
//!    a few seconds each (an incremental build of two crates), less the
//!    writer's 1 TiB streaming test (most of the crate's test time; stage 2
//!    runs it);
//! 2. the survivors of stage 1 again against the whole workspace's pure
//!    tier (`--iterate --test-workspace=true`: the golden-byte, sentinel and
//!    interop-model suites of `tests/` catch what the crates' own tests
//!    miss), without the tool tier's `--include-ignored`.
//!
//! Both build with the `mutants` profile (`opt-level = 1`). Not a CI step; TESTING.md
//! gives the figures and the surviving mutants. The report is
//! `target/mutants/mutants.out` (`caught.txt`, `missed.txt`, `timeout.txt`,
//! `unviable.txt`): after stage 2, `missed.txt` lists what the pure tier
//! lets through.

use crate::{cargo, run, target_dir, workspace_root};
use std::process::Command;

/// The crates mutated.
const CRATES: &[&str] = &["mkfs-alloc-ondisk", "mkfs-alloc-layout"];

/// Stage 1 leaves this test to stage 2: 12 s of the layout crate's 14.
const SLOW_TEST: &str = "one_tib_fat32_at_4k_streams_in_bounded_chunks";

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
    // Stage 2 takes stage 1's survivors whole: a shard of them would
    // sample twice.
    let mut unsharded = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--shard" {
            it.next();
        } else if !a.starts_with("--shard=") {
            unsharded.push(a.clone());
        }
    }
    for (stage, extra, args, test_args) in [
        (
            "1 (the two crates' own tests)",
            &[
                "--test-package",
                "mkfs-alloc-ondisk",
                "--test-package",
                "mkfs-alloc-layout",
            ][..],
            args,
            // What follows cargo-mutants' `--` goes to `cargo test`; the
            // second `--` hands `--skip` on to the test harness.
            &["--", "--", "--skip", SLOW_TEST][..],
        ),
        (
            "2 (stage 1's survivors, the workspace's pure tier)",
            &["--iterate", "--test-workspace=true"][..],
            &unsharded[..],
            &[][..],
        ),
    ] {
        eprintln!("xtask: mutants stage {stage}");
        let mut cmd = Command::new(cargo());
        cmd.current_dir(workspace_root()).arg("mutants");
        for c in CRATES {
            cmd.args(["--package", c]);
        }
        cmd.args(["--profile", "mutants", "--output"])
            .arg(&out)
            .args(extra)
            .args(args)
            .args(test_args);
        // cargo-mutants exits 2 when mutants are missed: that is the
        // finding, not a failure of the run; stage 2 must still run.
        let status = cmd
            .status()
            .map_err(|e| format!("cannot run cargo mutants: {e}"))?;
        match status.code() {
            Some(0 | 2 | 3) => {}
            _ => return Err(format!("cargo mutants stage {stage}: {status}")),
        }
    }
    Ok(())
}
