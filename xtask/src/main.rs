//! Project automation, run as `cargo xtask <command>` (alias in
//! `.cargo/config.toml`). Standard library, plus serde_json to read the
//! CLI's `--json` output.
//!
//! Commands:
//! - `install-tools [--windows] [--fuzz] [--kernel] [--uboot] [--embedded] [--dist] [--all]`:
//!   check the external tools the interoperability tests use (and, with the
//!   flags, those of `test-windows`, `fuzz`, `test-kernel`, `test-uboot`,
//!   `embedded` and `dist`), and install the missing Debian packages in
//!   one `apt-get` call (as root; otherwise print the command and fail);
//!   an installed package of another suite that Breaks them is moved to
//!   the version its sources prefer first (see `apt.rs`);
//! - `test [ARGS...] [-- TEST-ARGS...]`: the tool/root tier and the pure
//!   tier together: `install-tools`, `cargo build -p mkfs-alloc-cli`, then
//!   `cargo test --workspace [ARGS...] -- --include-ignored [TEST-ARGS...]`
//!   as root, with `MKFS_ALLOC_BIN` set and the sbin directories on `PATH`;
//! - `test-pure`: the pure tier's test executables run as user 65534 with
//!   an empty `PATH` (see `test.rs`);
//! - `bench`: see `bench.rs` (`--resize`: `bench_resize.rs`);
//! - `bench-probe [--write]`: `mkfs-alloc probe` vs f3probe on FUSE fake
//!   sticks (see `probe_bench.rs`); `bench-probe --full [--reps N]
//!   [--write]`: `probe --full`'s write pass against `dd oflag=direct`
//!   (see `probe_full_bench.rs`);
//! - `cross-check`: `cargo check` and `cargo clippy -D warnings` of the
//!   product crates for Windows and macOS (see [`CROSS_TARGETS`]);
//! - `test-windows`: the Windows build run under Wine, its images checked
//!   on Linux and compared with the Linux build's (see `windows/`);
//! - `fuzz [--secs N]`: every cargo-fuzz target for N seconds (see `fuzz.rs`);
//! - `test-kernel [--all]`: images through the Linux kernel's exfat and vfat
//!   drivers in QEMU (see `kernel/`);
//! - `test-uboot [--all] [--json]`: FAT images through U-Boot's FAT driver
//!   in QEMU (see `uboot/`);
//! - `embedded [--json] [--no-mount] [--keep]`: the firmware example built
//!   for a Cortex-M3, run in QEMU, measured against its budgets and its
//!   images checked (see `embedded/`); `embedded --fatfs [--json]`: ChaN's
//!   FatFs `f_mkfs` built for the same CPU and measured the same way;
//! - `package`: `cargo package --workspace` of the publishable crates (see
//!   `package.rs`);
//! - `dist [--check] [--no-windows]`: the static Linux tarball, the Debian
//!   packages and the Windows zip in `target/dist/`, and with `--check` (root)
//!   their tests (see `dist/`);
//! - `tidy [--no-std]`: the source-text invariants (see `tidy/`);
//! - `mutants [ARGS...]`: cargo-mutants over the on-disk and layout crates
//!   with the pure tier (see `mutants.rs`; not in CI);
//! - `man [DIR]`: the man pages (clap_mangen, through the CLI's hidden
//!   `man` command) into DIR, default `target/man`.
//!
//! To add a command, write a `fn(&[String]) -> Result<(), String>` and list
//! it in [`COMMANDS`].

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// A subcommand: name, one-line help, implementation.
type Cmd = (
    &'static str,
    &'static str,
    fn(&[String]) -> Result<(), String>,
);

/// Every subcommand.
const COMMANDS: &[Cmd] = &[
    (
        "install-tools",
        "install the missing test tools (Debian packages) [--windows] [--fuzz] [--kernel] [--uboot] [--embedded] [--dist] [--all]",
        test::install_tools_cmd,
    ),
    (
        "test",
        "both tiers, as root: install-tools, build the CLI, `cargo test --workspace [ARGS...] -- --include-ignored`",
        test::test_cmd,
    ),
    (
        "test-pure",
        "the pure tier as user 65534 with an empty PATH (root; proves plain `cargo test` needs no root or tools)",
        test::test_pure_cmd,
    ),
    (
        "bench",
        "mkfs-alloc vs mkfs.exfat / mkfs.fat side by side [--reps N] [--quick] [--write]; --populate: --rootdir vs mkfs + copy; --batch (root): 8 targets in one run vs 8 runs, --verify vs dd; --recluster (root): recluster vs copy off, mkfs, copy back; --resize [--quick] (root): resize 8G->16G and 16G->8G, convert FAT32->exFAT of 4G vs copy off, mkfs, copy back and the floor",
        bench_cmd,
    ),
    (
        "bench-probe",
        "mkfs-alloc probe vs f3probe on the same FUSE fake sticks (root) [--write]; --full [--reps N]: probe --full's write pass vs dd oflag=direct",
        bench_probe_cmd,
    ),
    (
        "man",
        "write the man pages (mkfs-alloc.1 and one per command) into DIR [default target/man]",
        man_cmd,
    ),
    (
        "cross-check",
        "cargo check + clippy -D warnings for Windows and macOS targets",
        cross_check_cmd,
    ),
    (
        "test-windows",
        "Windows exe under Wine: format images, fsck, compare with Linux [--keep]",
        windows::test_windows_cmd,
    ),
    (
        "fuzz",
        "run every cargo-fuzz target [--secs N] (default 30) on nightly",
        fuzz::fuzz_cmd,
    ),
    (
        "package",
        "cargo package --workspace of every publishable crate, each built from its .crate in dependency order",
        package::package_cmd,
    ),
    (
        "dist",
        "packages into target/dist: static Linux tarball, .deb (binary + optional mkfs.* links), Windows zip [--check] [--no-windows]",
        dist::dist_cmd,
    ),
    (
        "test-kernel",
        "images through the Linux kernel's exfat/vfat drivers in QEMU [--all] [--jobs N] [--case NAME] [--keep]",
        kernel::test_kernel_cmd,
    ),
    (
        "embedded",
        "the firmware example in QEMU (Cortex-M3): flash, RAM, stack against the budgets; images identical to the CLI's, fsck, mtools, exfat-fuse [--json] [--no-mount] [--keep]; --fatfs [--json]: FatFs' f_mkfs measured alike",
        embedded::embedded_cmd,
    ),
    (
        "test-uboot",
        "FAT images through U-Boot's FAT driver in QEMU [--all] [--json] [--jobs N] [--case NAME] [--keep]",
        uboot::test_uboot_cmd,
    ),
    (
        "features",
        "every library crate checked with no default features, all features, and its tests alone",
        features::features_cmd,
    ),
    (
        "mutants",
        "cargo-mutants over the on-disk and layout crates with the pure tier (not CI: hours) [ARGS to cargo mutants: --shard K/N, --file F, --list]",
        mutants::mutants_cmd,
    ),
    (
        "tidy",
        "the source-text invariants of ARCHITECTURE.md (file length, byte offsets outside ondisk, CLI flags in libraries, docs lints, no_std) [--no-std: also build the no_std crates]",
        tidy::tidy_cmd,
    ),
];

mod apt;
mod bench;
mod bench_batch;
mod bench_hosts;
mod bench_populate;
mod bench_recluster;
mod bench_recluster_fat;
mod bench_recluster_floor;
mod bench_resize;
mod bench_resize_fat;
mod bench_resize_table;
mod dist;
mod embedded;
mod features;
mod fuzz;
mod kernel;
mod mutants;
mod package;
mod probe_bench;
mod probe_full_bench;
mod test;
mod tidy;
mod uboot;
mod windows;

/// Targets of `cross-check`.
const CROSS_TARGETS: &[&str] = &[
    "x86_64-pc-windows-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// Packages left out of `cross-check`: host-only tooling. `xtask` and
/// `mkfs-alloc-tests` and `mkfs-alloc-testsupport` use `std::os::unix` (and
/// Linux tools); they do not
/// compile for Windows, and run nowhere but on Linux.
const CROSS_EXCLUDE: &[&str] = &["xtask", "mkfs-alloc-tests", "mkfs-alloc-testsupport"];

/// `cargo check` and `cargo clippy -- -D warnings` of the workspace (minus
/// [`CROSS_EXCLUDE`]) for every target of [`CROSS_TARGETS`]. Runs them all,
/// then fails naming every step that failed.
fn cross_check_cmd(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("cross-check takes no arguments (got {a:?})"));
    }
    let start = Instant::now();
    ensure_rust_targets(CROSS_TARGETS)?;
    let root = workspace_root();
    let mut failed = Vec::new();
    let mut times = Vec::new();
    for target in CROSS_TARGETS {
        for tool in ["check", "clippy"] {
            let step = Instant::now();
            let mut cmd = Command::new(cargo());
            cmd.current_dir(&root).args([tool, "--workspace"]);
            for p in CROSS_EXCLUDE {
                cmd.args(["--exclude", p]);
            }
            cmd.args(["--target", target]);
            if tool == "clippy" {
                cmd.args(["--", "-D", "warnings"]);
            }
            let result = run(&mut cmd);
            times.push(format!(
                "  {tool:<6} {target:<24} {:>6.1} s  {}",
                step.elapsed().as_secs_f64(),
                if result.is_ok() { "ok" } else { "FAILED" }
            ));
            if let Err(e) = result {
                failed.push(format!("{tool} --target {target}: {e}"));
            }
        }
    }
    eprintln!("xtask: cross-check summary:\n{}", times.join("\n"));
    eprintln!("xtask: cross-check finished in {:.0?}", start.elapsed());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} steps failed:\n  {}",
            failed.len(),
            CROSS_TARGETS.len() * 2,
            failed.join("\n  ")
        ))
    }
}

/// The rustup targets installed for the toolchain that runs cargo.
fn installed_rust_targets() -> Result<Vec<String>, String> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("cannot run `rustup target list --installed`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`rustup target list --installed` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect())
}

/// `rustup target add` of the targets that are missing.
fn ensure_rust_targets(targets: &[&str]) -> Result<(), String> {
    let installed = installed_rust_targets()?;
    let missing: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|t| !installed.iter().any(|i| i == t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    run(Command::new("rustup")
        .args(["target", "add"])
        .args(&missing))
}

/// The cargo target directory: `$CARGO_TARGET_DIR` (relative to the
/// workspace root) or `<root>/target`.
fn target_dir() -> PathBuf {
    let root = workspace_root();
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    if target.is_absolute() {
        target
    } else {
        root.join(target)
    }
}

/// Markers around the generated table in BENCHMARKS.md.
const BENCH_BEGIN: &str = "<!-- bench:begin -->";
const BENCH_END: &str = "<!-- bench:end -->";
/// Markers around the populate table in BENCHMARKS.md.
const POP_BEGIN: &str = "<!-- bench-populate:begin -->";
const POP_END: &str = "<!-- bench-populate:end -->";
/// Markers around the batch tables in BENCHMARKS.md.
const BATCH_BEGIN: &str = "<!-- bench-batch:begin -->";
const BATCH_END: &str = "<!-- bench-batch:end -->";
/// Markers around the host file systems' table (clones) in BENCHMARKS.md.
const HOSTS_BEGIN: &str = "<!-- bench-hosts:begin -->";
const HOSTS_END: &str = "<!-- bench-hosts:end -->";

fn bench_cmd(args: &[String]) -> Result<(), String> {
    let mut reps = 5usize;
    let mut quick = false;
    let mut write = false;
    let mut populate = false;
    let mut batch = false;
    let mut recluster = false;
    let mut resize = false;
    let mut hosts_only = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--write" => write = true,
            "--populate" => populate = true,
            "--batch" => batch = true,
            "--recluster" => recluster = true,
            "--resize" => resize = true,
            "--hosts-only" => {
                populate = true;
                hosts_only = true;
            }
            "--reps" => {
                reps = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--reps needs a positive number")?;
            }
            other => {
                return Err(format!(
                    "unknown option {other:?}; valid: --reps N, --quick, --write, --populate, --hosts-only, --batch, --recluster, --resize"
                ))
            }
        }
    }
    test::install_tools()?;
    install_packages(BENCH_TOOLS)?;
    let root = workspace_root();
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "mkfs-alloc-cli",
    ]))?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let bin = if target.is_absolute() {
        target
    } else {
        root.join(target)
    }
    .join("release")
    .join("mkfs-alloc");
    let mut tables = Vec::new();
    if resize {
        let table = bench_resize::run(&bin, &target_dir(), quick)?;
        tables.push((table, bench_resize::BEGIN, bench_resize::END));
    } else if recluster {
        if !is_root() {
            return Err("bench --recluster needs root (loop devices, exfat-fuse mounts)".into());
        }
        tables.push((
            bench_recluster::run(&bin)?,
            bench_recluster::BEGIN,
            bench_recluster::END,
        ));
    } else if batch {
        tables.push((bench_batch::run(&bin, reps, quick)?, BATCH_BEGIN, BATCH_END));
    } else if !populate {
        tables.push((bench::run(&bin, reps, quick)?, BENCH_BEGIN, BENCH_END));
    }
    if populate && !hosts_only && !batch && !recluster && !resize {
        tables.push((bench_populate::run(&bin, reps, quick)?, POP_BEGIN, POP_END));
    }
    if populate && !batch && !recluster && !resize {
        // XFS (reflink=1) and ext4 on loop devices: root, as the peers' mounts.
        tables.push((bench_hosts::run(&bin, reps, quick)?, HOSTS_BEGIN, HOSTS_END));
    }
    for (table, begin, end) in &tables {
        println!("{table}");
        if write {
            write_table(&root.join("BENCHMARKS.md"), table, begin, end)?;
        }
    }
    Ok(())
}

/// Replaces the text between `begin` and `end` in `path` with `table`.
fn write_table(path: &Path, table: &str, begin: &str, end: &str) -> Result<(), String> {
    let doc = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(a), Some(b)) = (doc.find(begin), doc.find(end)) else {
        return Err(format!(
            "{} has no {begin} ... {end} markers",
            path.display()
        ));
    };
    let new = format!("{}{begin}\n{table}{}", &doc[..a], &doc[b..]);
    std::fs::write(path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("xtask: updated {}", path.display());
    Ok(())
}

fn bench_probe_cmd(args: &[String]) -> Result<(), String> {
    let (mut write, mut full, mut reps) = (false, false, 3usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--write" => write = true,
            "--full" => full = true,
            "--reps" => {
                reps = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--reps needs a positive number")?;
            }
            _ => return Err("valid: [--full [--reps N]] [--write]".into()),
        }
    }
    if !is_root() {
        return Err("bench-probe needs root (FUSE mounts, loop devices)".into());
    }
    test::install_tools()?;
    let root = workspace_root();
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "mkfs-alloc-cli",
    ]))?;
    let bin = target_dir().join("release").join("mkfs-alloc");
    let (table, markers) = if full {
        (
            probe_full_bench::run(&root, &bin, reps)?,
            probe_full_bench::MARKERS,
        )
    } else {
        (probe_bench::run(&root, &bin)?, probe_bench::MARKERS)
    };
    println!("{table}");
    if write {
        probe_bench::write(&root, &table, markers)?;
        eprintln!("xtask: updated BENCHMARKS.md");
    }
    Ok(())
}

/// Tools only the benchmark runs.
const BENCH_TOOLS: &[(&str, &str)] = &[("/usr/bin/time", "time")];

/// Directories searched besides `$PATH`.
const EXTRA_DIRS: &[&str] = &["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((name, rest)) = args.split_first() else {
        usage();
        return ExitCode::from(2);
    };
    if matches!(name.as_str(), "help" | "-h" | "--help") {
        usage();
        return ExitCode::SUCCESS;
    }
    let Some((_, _, run)) = COMMANDS.iter().find(|(n, _, _)| n == name) else {
        eprintln!("xtask: unknown command {name:?}");
        usage();
        return ExitCode::from(2);
    };
    match run(rest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {name}: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() {
    eprintln!("usage: cargo xtask <command> [args]\n\ncommands:");
    for (name, help, _) in COMMANDS {
        eprintln!("  {name:<15} {help}");
    }
}

/// The workspace root (the parent of this crate's directory).
/// `cargo xtask man [DIR]`: builds the CLI and has it write its man pages.
fn man_cmd(args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let dir = match args {
        [] => root.join("target").join("man"),
        [d] => PathBuf::from(d),
        _ => return Err("usage: cargo xtask man [DIR]".into()),
    };
    run(Command::new(cargo())
        .current_dir(&root)
        .args([
            "run",
            "-q",
            "-p",
            "mkfs-alloc-cli",
            "--bin",
            "mkfs-alloc",
            "--",
            "man",
        ])
        .arg(&dir))?;
    eprintln!("xtask: man pages in {}", dir.display());
    Ok(())
}

fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// The cargo that runs us, else `cargo` from PATH.
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

fn find_tool(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    // An absolute path names a data file a package provides (firmware).
    if Path::new(name).is_absolute() {
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Debian packages providing the tools that are missing, without duplicates.
fn missing_packages(tools: &[(&str, &'static str)]) -> Vec<&'static str> {
    let mut pkgs: Vec<&'static str> = Vec::new();
    for (tool, pkg) in tools {
        if find_tool(tool).is_none() && !pkgs.contains(pkg) {
            pkgs.push(pkg);
        }
    }
    pkgs
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs a command, echoing it; error if it cannot start or exits non-zero.
fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}").replace('"', "");
    eprintln!("+ {shown}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Installs the packages of the missing `tools` (root) in one `apt-get`
/// call, or says how to (not root).
fn install_packages(tools: &[(&str, &'static str)]) -> Result<(), String> {
    let pkgs = missing_packages(tools);
    if pkgs.is_empty() {
        eprintln!("xtask: all needed tools are installed");
    } else {
        let list = pkgs.join(" ");
        if !is_root() {
            return Err(format!(
                "missing test tools; install them with:\n  sudo apt-get update && sudo apt-get install -y {list}"
            ));
        }
        eprintln!("xtask: installing {list}");
        run(Command::new("apt-get")
            .arg("update")
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
        apt::install(&pkgs)?;
        let still = missing_packages(tools);
        if !still.is_empty() {
            return Err(format!(
                "still missing after apt-get install: {}",
                still.join(" ")
            ));
        }
    }
    Ok(())
}
