//! Project automation, run as `cargo xtask <command>` (alias in
//! `.cargo/config.toml`). Standard library only.
//!
//! Commands:
//! - `install-tools`: check the external tools the interoperability tests
//!   use, and install the missing Debian packages (as root: `apt-get`;
//!   otherwise print the command and fail);
//! - `test [ARGS...]`: `install-tools`, `cargo build -p mkfs-alloc`, then
//!   `cargo test --workspace [ARGS...]` with `MKFS_ALLOC_BIN` set.
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
        "install the test tools (Debian packages) that are missing",
        install_tools_cmd,
    ),
    (
        "test",
        "install-tools, build the CLI, run `cargo test --workspace [ARGS...]`",
        test_cmd,
    ),
    (
        "bench",
        "mkfs-alloc vs mkfs.exfat / mkfs.fat side by side [--reps N] [--quick] [--write]",
        bench_cmd,
    ),
];

mod bench;

/// Markers around the generated table in BENCHMARKS.md.
const BENCH_BEGIN: &str = "<!-- bench:begin -->";
const BENCH_END: &str = "<!-- bench:end -->";

fn bench_cmd(args: &[String]) -> Result<(), String> {
    let mut reps = 5usize;
    let mut quick = false;
    let mut write = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--write" => write = true,
            "--reps" => {
                reps = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--reps needs a positive number")?;
            }
            other => {
                return Err(format!(
                    "unknown option {other:?}; valid: --reps N, --quick, --write"
                ))
            }
        }
    }
    install_tools()?;
    let root = workspace_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["build", "--release", "-p", "mkfs-alloc"]))?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let bin = if target.is_absolute() {
        target
    } else {
        root.join(target)
    }
    .join("release")
    .join("mkfs-alloc");
    let table = bench::run(&bin, reps, quick)?;
    println!("{table}");
    if write {
        let path = root.join("BENCHMARKS.md");
        let doc = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (Some(a), Some(b)) = (doc.find(BENCH_BEGIN), doc.find(BENCH_END)) else {
            return Err(format!(
                "{} has no {BENCH_BEGIN} ... {BENCH_END} markers",
                path.display()
            ));
        };
        let new = format!("{}{BENCH_BEGIN}\n{table}{}", &doc[..a], &doc[b..]);
        std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("xtask: updated {}", path.display());
    }
    Ok(())
}

/// Tools the tests run, with the Debian package of each. Keep in sync with
/// `tests/src/tools.rs` (`TOOLS`).
const TOOLS: &[(&str, &str)] = &[
    ("mkfs.exfat", "exfatprogs"),
    ("fsck.exfat", "exfatprogs"),
    ("dump.exfat", "exfatprogs"),
    ("mkfs.fat", "dosfstools"),
    ("fsck.fat", "dosfstools"),
    ("mcopy", "mtools"),
    ("mdir", "mtools"),
    ("mtype", "mtools"),
    ("7z", "p7zip-full"),
    ("mount.exfat-fuse", "exfat-fuse"),
    ("fusefat", "fusefat"),
    ("fusermount", "fuse"),
    ("losetup", "mount"),
    ("sgdisk", "gdisk"),
    ("sfdisk", "fdisk"),
    ("cksum", "coreutils"),
    ("/usr/bin/time", "time"),
];

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
fn missing_packages() -> Vec<&'static str> {
    let mut pkgs: Vec<&'static str> = Vec::new();
    for (tool, pkg) in TOOLS {
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

fn install_tools_cmd(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("install-tools takes no arguments (got {a:?})"));
    }
    install_tools()
}

/// Installs the missing packages (root) or says how to (not root).
fn install_tools() -> Result<(), String> {
    let pkgs = missing_packages();
    if pkgs.is_empty() {
        eprintln!("xtask: all test tools are installed");
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
        run(Command::new("apt-get")
            .args(["install", "-y"])
            .args(&pkgs)
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
        let still = missing_packages();
        if !still.is_empty() {
            return Err(format!(
                "still missing after apt-get install: {}",
                still.join(" ")
            ));
        }
    }
    if !Path::new("/dev/fuse").exists() {
        // The FUSE tests fail with their own message; try to help first.
        if is_root() {
            let _ = run(Command::new("modprobe").arg("fuse"));
        }
        if !Path::new("/dev/fuse").exists() {
            eprintln!("xtask: warning: /dev/fuse is missing; the FUSE mount tests will fail");
        }
    }
    Ok(())
}

fn test_cmd(args: &[String]) -> Result<(), String> {
    let start = Instant::now();
    install_tools()?;
    let root = workspace_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["build", "-p", "mkfs-alloc"]))?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    let bin = target.join("debug").join("mkfs-alloc");
    if !bin.is_file() {
        return Err(format!(
            "`cargo build -p mkfs-alloc` did not produce {}",
            bin.display()
        ));
    }
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["test", "--workspace"])
        .args(args)
        .env("MKFS_ALLOC_BIN", &bin))?;
    eprintln!("xtask: test finished in {:.0?}", start.elapsed());
    Ok(())
}
