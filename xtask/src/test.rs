//! `cargo xtask test` (both tiers: the pure one and the tool/root one) and
//! `cargo xtask install-tools` (the Debian packages the tests need).

use crate::{cargo, find_tool, install_packages, is_root, run, target_dir, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Tools the tests run, with the Debian package of each (shared with the
/// tests' guards in `crates/mkfs-alloc-testsupport`).
const TOOLS: &[(&str, &str)] = include!("../../crates/mkfs-alloc-testsupport/src/tools.in");

pub(crate) fn install_tools_cmd(args: &[String]) -> Result<(), String> {
    let mut tools: Vec<(&str, &'static str)> = TOOLS.to_vec();
    let mut kernel = false;
    for a in args {
        match a.as_str() {
            "--windows" => tools.extend_from_slice(crate::windows::TOOLS),
            "--fuzz" => tools.extend_from_slice(crate::fuzz::TOOLS),
            "--dist" => tools.extend_from_slice(crate::dist::TOOLS),
            "--kernel" => kernel = true,
            "--uboot" => tools.extend_from_slice(crate::uboot::TOOLS),
            "--embedded" => tools.extend_from_slice(crate::embedded::TOOLS),
            "--all" => {
                tools.extend_from_slice(crate::embedded::TOOLS);
                tools.extend_from_slice(crate::windows::TOOLS);
                tools.extend_from_slice(crate::fuzz::TOOLS);
                tools.extend_from_slice(crate::uboot::TOOLS);
                tools.extend_from_slice(crate::dist::TOOLS);
                kernel = true;
            }
            other => {
                return Err(format!(
                    "unknown option {other:?}; valid: --windows, --fuzz, --kernel, --uboot, --embedded, --dist, --all"
                ))
            }
        }
    }
    if kernel {
        tools.extend_from_slice(crate::kernel::TOOLS);
    }
    install_packages(&tools)?;
    install_fusepy()?;
    if kernel {
        crate::kernel::install()?;
    }
    check_fuse();
    Ok(())
}

/// Installs the missing packages (root) or says how to (not root).
pub(crate) fn install_tools() -> Result<(), String> {
    install_packages(TOOLS)?;
    install_fusepy()?;
    check_fuse();
    Ok(())
}

/// The Python module `fusepy` (PyPI) behind the fake-stick tests
/// (`tests/src/fakestick.py`): installed with pip when `import fuse` fails.
fn install_fusepy() -> Result<(), String> {
    let has = || {
        Command::new("python3")
            .args(["-c", "import fuse"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has() {
        return Ok(());
    }
    eprintln!("xtask: installing the Python module fusepy (python3 -m pip install fusepy)");
    // Debian's system Python refuses pip without this flag (PEP 668).
    let plain = run(Command::new("python3").args(["-m", "pip", "install", "fusepy"]));
    if plain.is_err() || !has() {
        run(Command::new("python3").args([
            "-m",
            "pip",
            "install",
            "--break-system-packages",
            "fusepy",
        ]))?;
    }
    if has() {
        Ok(())
    } else {
        Err("fusepy is still missing after pip install; the fake-stick tests need it".into())
    }
}

/// Warns when `/dev/fuse` is missing (after trying `modprobe fuse` as root).
fn check_fuse() {
    if !Path::new("/dev/fuse").exists() {
        // The FUSE tests fail with their own message; try to help first.
        if is_root() {
            let _ = run(Command::new("modprobe").arg("fuse"));
        }
        if !Path::new("/dev/fuse").exists() {
            eprintln!("xtask: warning: /dev/fuse is missing; the FUSE mount tests will fail");
        }
    }
}

/// `cargo xtask test`: every test, the tool/root tier included. The tool
/// tier's tests are `#[ignore = "tool tier: cargo xtask test"]` so that a
/// plain `cargo test` passes on a bare machine; here they run, and a missing
/// tool or missing root FAILS them (the guards of
/// `crates/mkfs-alloc-testsupport` panic naming the tool and its package).
/// Nothing is skipped, and nothing runs twice: without arguments the pure
/// tier runs as `test-pure` runs it (user 65534, an empty `PATH`, which is
/// stricter than root with every tool), then the doctests, then the tool
/// tier alone (`--ignored`) as root. With arguments (a package, a filter)
/// both tiers run as root (`--include-ignored`), for a developer's narrow run.
pub(crate) fn test_cmd(args: &[String]) -> Result<(), String> {
    let start = Instant::now();
    if !is_root() {
        return Err(
            "`cargo xtask test` runs the root tier (loop devices, FUSE and tmpfs \
             mounts): run it as root, as CI does; plain `cargo test` runs the pure tier"
                .into(),
        );
    }
    install_tools()?;
    let root = workspace_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["build", "-p", "mkfs-alloc-cli"]))?;
    let bin = target_dir().join("debug").join("mkfs-alloc");
    if !bin.is_file() {
        return Err(format!(
            "`cargo build -p mkfs-alloc-cli` did not produce {}",
            bin.display()
        ));
    }
    // ARGS go to cargo, TEST-ARGS (after `--`) to the test harness.
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (cargo_args, test_args) = (&args[..split], args.get(split + 1..).unwrap_or(&[]));
    let cargo_test = |targets: &[&str], harness: &[&str]| {
        run(Command::new(cargo())
            .current_dir(&root)
            .args(["test", "--workspace"])
            .args(targets)
            .args(cargo_args)
            .arg("--")
            .args(harness)
            .args(test_args)
            .env("MKFS_ALLOC_BIN", &bin)
            .env("PATH", path_with_sbin()))
    };
    if args.is_empty() {
        let pure = Instant::now();
        test_pure_cmd(&[])?;
        eprintln!("xtask: pure tier finished in {:.0?}", pure.elapsed());
        cargo_test(&["--doc"], &[])?;
        // The doctests ran above; `--ignored` would run their `ignore`
        // blocks, which are not meant to compile.
        cargo_test(&["--lib", "--bins", "--tests"], &["--ignored"])?;
        sdmmc_doctest(&root)?;
    } else {
        cargo_test(&[], &["--include-ignored"])?;
        if cargo_args.is_empty() {
            sdmmc_doctest(&root)?;
        }
    }
    eprintln!("xtask: test finished in {:.0?}", start.elapsed());
    Ok(())
}

/// The doctest of `embedded::format_sdmmc`: its feature (`embedded-sdmmc`)
/// is enabled only by the firmware example, which the workspace excludes,
/// so `cargo test --workspace` never compiles it. Run with the feature on,
/// and fail unless the doctest itself ran and passed.
fn sdmmc_doctest(root: &Path) -> Result<(), String> {
    let args = [
        "test",
        "-p",
        "mkfs-alloc-layout",
        "--features",
        "embedded-sdmmc",
        "--doc",
        "format_sdmmc",
    ];
    eprintln!("+ cargo {}", args.join(" "));
    let out = Command::new(cargo())
        .current_dir(root)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo test --doc: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    if !out.status.success() {
        return Err("the format_sdmmc doctest failed".into());
    }
    sdmmc_doctest_ran(&text)
}

/// Whether the harness output shows the `format_sdmmc` doctest passing.
fn sdmmc_doctest_ran(text: &str) -> Result<(), String> {
    let ran = text
        .lines()
        .any(|l| l.contains("embedded::sdmmc::format_sdmmc") && l.ends_with("... ok"));
    if ran {
        Ok(())
    } else {
        Err("the format_sdmmc doctest did not run (filter matched nothing?)".into())
    }
}

/// `$PATH` with the sbin directories appended where missing: the tests find
/// tools on `PATH` only (root tools such as `losetup` and `mkfs.exfat` live
/// in sbin, which a non-login shell may lack).
fn path_with_sbin() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    for extra in ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
        if !dirs.iter().any(|d| d == Path::new(extra)) {
            dirs.push(PathBuf::from(extra));
        }
    }
    std::env::join_paths(dirs).unwrap_or(path)
}

/// The user the pure tier runs as in `test-pure` (nobody).
const NOBODY: u32 = 65534;

/// `cargo xtask test-pure`: the pure tier as a bare machine sees it. Builds
/// the test executables (`cargo test --workspace --no-run`) and runs each
/// one as user 65534 with an empty `PATH` (no tool can be found), a scratch
/// `HOME`/`TMPDIR` and without `--include-ignored`. A tool-tier test someone
/// forgot to mark fails here (its guard cannot find the tool, or root), so
/// plain `cargo test` stays green on machines without root or tools.
/// Doctests are not run (they need rustdoc; they use no tools).
pub(crate) fn test_pure_cmd(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("test-pure takes no arguments".into());
    }
    if !is_root() {
        return Err("test-pure drops to user 65534 with setpriv: run it as root".into());
    }
    let setpriv = find_tool("setpriv").ok_or("setpriv is missing: apt-get install util-linux")?;
    let root = workspace_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["build", "-p", "mkfs-alloc-cli"]))?;
    let out = Command::new(cargo())
        .current_dir(&root)
        .args(["test", "--workspace", "--no-run", "--message-format=json"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo test --no-run: {e}"))?;
    if !out.status.success() {
        return Err("`cargo test --workspace --no-run` failed".into());
    }
    // A scratch directory user 65534 owns: HOME, TMPDIR, an empty PATH
    // directory, and hard links (or copies) of the executables, so that
    // nothing depends on the build directory being readable to others.
    let scratch = pure_scratch()?;
    let place = |src: &Path| -> Result<PathBuf, String> {
        let name = src.file_name().ok_or("an executable without a name")?;
        let dst = scratch.join("exe").join(name);
        if std::fs::hard_link(src, &dst).is_err() {
            std::fs::copy(src, &dst).map_err(|e| format!("copy {}: {e}", src.display()))?;
        }
        Ok(dst)
    };
    let bin = place(&target_dir().join("debug").join("mkfs-alloc"))?;
    // The facade's example, which a test runs beside the CLI.
    let example = place(
        &target_dir()
            .join("debug")
            .join("examples")
            .join("image_from_dir"),
    )?;
    let (mut binaries, mut passed, mut ignored, mut failed) = (0u64, 0u64, 0u64, Vec::new());
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_test = msg["reason"] == "compiler-artifact" && msg["profile"]["test"] == true;
        let Some(exe) = msg["executable"].as_str().filter(|_| is_test) else {
            continue;
        };
        let name = msg["target"]["name"].as_str().unwrap_or("?").to_string();
        let exe = place(Path::new(exe))?;
        let run = Command::new(&setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&exe)
            .arg("--test-threads=2")
            .current_dir(scratch.join("tmp"))
            .env_clear()
            .env("PATH", scratch.join("bin"))
            .env("HOME", scratch.join("home"))
            .env("TMPDIR", scratch.join("tmp"))
            .env("MKFS_ALLOC_BIN", &bin)
            .env("MKFS_ALLOC_EXAMPLE_IMAGE_FROM_DIR", &example)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        binaries += 1;
        let stdout = String::from_utf8_lossy(&run.stdout);
        let (p, i) = result_counts(&stdout);
        passed += p;
        ignored += i;
        if !run.status.success() {
            eprintln!("{stdout}{}", String::from_utf8_lossy(&run.stderr));
            failed.push(name);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!(
        "xtask: pure tier as user {NOBODY} with an empty PATH: {binaries} test executables, \
         {passed} tests passed, {ignored} ignored (tool tier), {} executables failed",
        failed.len()
    );
    pure_verdict(binaries, passed, &failed)
}

/// The verdict of a `test-pure` run: a run that ran no test executable, or
/// whose executables passed no test, proves nothing and fails (a build
/// that lists no executables, a filter gone wrong), as does any failed one.
fn pure_verdict(binaries: u64, passed: u64, failed: &[String]) -> Result<(), String> {
    if binaries == 0 || passed == 0 {
        return Err(format!(
            "test-pure ran {binaries} test executables and {passed} tests passed: \
             nothing was tested (does `cargo test --workspace --no-run \
             --message-format=json` list the executables?)"
        ));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "pure-tier tests failed without root or tools: {} (mark tool-tier tests \
             #[ignore = \"tool tier: cargo xtask test\"], TESTING.md)",
            failed.join(", ")
        ))
    }
}

/// A scratch directory user 65534 owns, with `bin` (the empty PATH), `tmp`,
/// `home` and `exe` (the test executables) in it.
fn pure_scratch() -> Result<PathBuf, String> {
    let scratch = std::env::temp_dir().join(format!("mkfs-alloc-test-pure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    for d in ["bin", "tmp", "home", "exe"] {
        let p = scratch.join(d);
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY))
            .map_err(|e| format!("chown {}: {e}", p.display()))?;
    }
    Ok(scratch)
}

/// (passed, ignored) from a test executable's last line
/// "test result: ok. P passed; F failed; I ignored; ...", zeros without one.
fn result_counts(stdout: &str) -> (u64, u64) {
    let Some(result) = stdout.lines().rev().find(|l| l.starts_with("test result")) else {
        return (0, 0);
    };
    let words: Vec<&str> = result.split_whitespace().collect();
    let num = |word: &str| {
        words
            .iter()
            .position(|w| w.trim_end_matches([';', ',']) == word)
            .and_then(|i| words.get(i.checked_sub(1)?)?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (num("passed"), num("ignored"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pure_run_that_ran_nothing_fails() {
        assert!(pure_verdict(0, 0, &[]).is_err());
        assert!(pure_verdict(12, 0, &[]).is_err());
        assert!(pure_verdict(12, 247, &[]).is_ok());
        let failed = pure_verdict(12, 247, &["upcase".into()]);
        assert!(failed.is_err_and(|e| e.contains("upcase")));
    }

    #[test]
    fn the_sdmmc_doctest_must_have_run() {
        let ran = "test crates/mkfs-alloc-layout/src/writer/embedded/sdmmc.rs - \
                   writer::embedded::sdmmc::format_sdmmc (line 15) ... ok\n\
                   test result: ok. 1 passed; 0 failed; 0 ignored";
        assert!(sdmmc_doctest_ran(ran).is_ok());
        assert!(sdmmc_doctest_ran("test result: ok. 0 passed; 0 failed").is_err());
    }
}
