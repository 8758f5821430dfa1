//! `cargo xtask test-windows`: the Windows build of the CLI, run under Wine.
//!
//! 1. Installs what is missing (mingw-w64, Wine; as root) and the rustup
//!    target, builds `mkfs-alloc.exe` (release, `x86_64-pc-windows-gnu`) and
//!    the Linux binary (debug: the one `cargo xtask test` builds).
//! 2. Builds `xtask/shim/bcryptprimitives.dll` and puts it next to the exe:
//!    Wine 8 (Debian 12) has no `ProcessPrng`, which Rust's std imports.
//! 3. In a fresh, temporary `WINEPREFIX`, formats images with the exe
//!    (exFAT and FAT32, no table, MBR, GPT, 4 KiB sectors, reformatting an
//!    existing image) and the same arguments with the Linux binary, both with
//!    `--serial` and `SOURCE_DATE_EPOCH`; the two images must be
//!    byte-identical (cksum, then a byte compare), and the volume (extracted
//!    from the partition `sfdisk --dump` finds) must pass `fsck.exfat -n` /
//!    `fsck.fat -n` (and `mdir` for FAT32).
//! 4. Also: `--help`, rejected input (exit code 2, nothing created, an
//!    existing image unchanged), `--dry-run --json` and `info --json` output
//!    identical to Linux's.
//!
//! Files live in `<target>/test-windows/` (`win/`, `linux/`, `logs/`); the
//! Wine prefix in a temporary directory, removed at the end (`--keep` keeps
//! it and says where).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::{cargo, ensure_rust_targets, install_packages, run, target_dir, workspace_root};

mod check;
mod wine;

use check::*;
pub(crate) use wine::output_with_timeout;
use wine::*;

/// Tools `test-windows` runs, with their Debian packages.
pub const TOOLS: &[(&str, &str)] = &[
    ("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"),
    ("wine", "wine"),
    ("wineboot", "wine"),
    ("wineserver", "wine"),
    ("/usr/lib/wine/wine64", "wine64"),
    ("fsck.exfat", "exfatprogs"),
    ("fsck.fat", "dosfstools"),
    ("mdir", "mtools"),
    ("sfdisk", "fdisk"),
    ("cksum", "coreutils"),
];

/// The Rust target of the Windows build.
const WIN_TARGET: &str = "x86_64-pc-windows-gnu";
/// Pinned identifiers: with these, both builds must write the same bytes.
const SERIAL: &str = "5EED1234";
const EPOCH: &str = "1700000000";
/// Limits for one Wine run: a hung Wine fails the step instead of CI.
const BOOT_LIMIT: Duration = Duration::from_secs(300);
const RUN_LIMIT: Duration = Duration::from_secs(180);
/// Wine DLL overrides: our `bcryptprimitives.dll` first; no Mono / Gecko
/// installer prompts during `wineboot`.
const DLL_OVERRIDES: &str = "bcryptprimitives=n,b;mscoree,mshtml=";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fs {
    Exfat,
    Fat32,
}

/// One formatting case: the same arguments for both builds.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    fs: Fs,
    /// Has a partition table (the volume is checked inside the partition).
    table: bool,
    /// Start from a copy of this earlier case's image (reformat, no --size).
    from: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        name: "exfat-none",
        args: &[
            "--fs",
            "exfat",
            "--cluster",
            "32K",
            "--size",
            "64M",
            "--label",
            "Wine Test",
        ],
        fs: Fs::Exfat,
        table: false,
        from: None,
    },
    Case {
        name: "exfat-mbr",
        args: &[
            "--table",
            "mbr",
            "--fs",
            "exfat",
            "--cluster",
            "4K",
            "--size",
            "64M",
        ],
        fs: Fs::Exfat,
        table: true,
        from: None,
    },
    Case {
        name: "exfat-gpt",
        args: &[
            "--table",
            "gpt",
            "--fs",
            "exfat",
            "--cluster",
            "128K",
            "--size",
            "96M",
        ],
        fs: Fs::Exfat,
        table: true,
        from: None,
    },
    Case {
        name: "exfat-4kn",
        args: &[
            "--fs",
            "exfat",
            "--sector-size",
            "4096",
            "--cluster",
            "64K",
            "--size",
            "64M",
        ],
        fs: Fs::Exfat,
        table: false,
        from: None,
    },
    Case {
        name: "fat32-none",
        args: &[
            "--fs",
            "fat32",
            "--cluster",
            "1K",
            "--size",
            "80M",
            "--label",
            "WINETEST",
        ],
        fs: Fs::Fat32,
        table: false,
        from: None,
    },
    Case {
        name: "fat32-mbr",
        args: &[
            "--table",
            "mbr",
            "--fs",
            "fat32",
            "--cluster",
            "1K",
            "--size",
            "80M",
        ],
        fs: Fs::Fat32,
        table: true,
        from: None,
    },
    Case {
        name: "fat32-gpt",
        args: &[
            "--table",
            "gpt",
            "--fs",
            "fat32",
            "--cluster",
            "512",
            "--size",
            "48M",
        ],
        fs: Fs::Fat32,
        table: true,
        from: None,
    },
    Case {
        // An existing exFAT image reformatted as FAT32 (keeps its size):
        // the zeroing path of the Windows image backend.
        name: "fat32-over-exfat",
        args: &["--fs", "fat32", "--cluster", "512"],
        fs: Fs::Fat32,
        table: false,
        from: Some("exfat-none"),
    },
];

/// `cargo xtask test-windows [--keep]`.
pub fn test_windows_cmd(args: &[String]) -> Result<(), String> {
    let mut keep = false;
    for a in args {
        match a.as_str() {
            "--keep" => keep = true,
            other => return Err(format!("unknown option {other:?}; valid: --keep")),
        }
    }
    let start = Instant::now();
    let mut laps = Laps::new();

    install_packages(TOOLS)?;
    ensure_rust_targets(&[WIN_TARGET])?;
    laps.mark("tools");
    let root = workspace_root();
    let (exe, linux_bin) = build_binaries(&root, &mut laps)?;
    let work = target_dir().join("test-windows");
    let (win_dir, linux_dir, logs) = work_dirs(&work)?;
    std::fs::copy(&exe, win_dir.join("mkfs-alloc.exe"))
        .map_err(|e| format!("copying {}: {e}", exe.display()))?;
    build_shim(&root.join("xtask").join("shim"), &win_dir)?;
    laps.mark("shim DLL");

    let wine = Wine::new(keep, &logs)?;
    wine.boot()?;
    laps.mark("wineboot --init");
    let ctx = Ctx {
        wine: &wine,
        linux_bin: &linux_bin,
        win_dir: &win_dir,
        linux_dir: &linux_dir,
        logs: &logs,
    };
    let report = run_checks(&ctx, &mut laps)?;
    drop(wine);

    eprintln!("xtask: test-windows: every image byte-identical to the Linux build's and clean:");
    for line in &report {
        eprintln!("  {line}");
    }
    eprintln!("xtask: test-windows: times:");
    for (what, t) in &laps.times {
        eprintln!("  {what:<28} {:>6.1} s", t.as_secs_f64());
    }
    eprintln!("xtask: test-windows passed in {:.0?}", start.elapsed());
    Ok(())
}

/// The time of each step of the run.
struct Laps {
    times: Vec<(String, Duration)>,
    lap: Instant,
}

impl Laps {
    fn new() -> Laps {
        Laps {
            times: Vec::new(),
            lap: Instant::now(),
        }
    }

    /// Ends the step `what`.
    fn mark(&mut self, what: &str) {
        self.times.push((what.to_string(), self.lap.elapsed()));
        self.lap = Instant::now();
    }
}

/// Builds the Windows exe (release, mingw) and the Linux binary (debug):
/// their paths.
fn build_binaries(root: &Path, laps: &mut Laps) -> Result<(PathBuf, PathBuf), String> {
    run(Command::new(cargo()).current_dir(root).args([
        "build",
        "--release",
        "-p",
        "mkfs-alloc-cli",
        "--target",
        WIN_TARGET,
    ]))?;
    laps.mark("build (Windows, release)");
    run(Command::new(cargo())
        .current_dir(root)
        .args(["build", "-p", "mkfs-alloc-cli"]))?;
    laps.mark("build (Linux, debug)");
    let target = target_dir();
    let exe = target
        .join(WIN_TARGET)
        .join("release")
        .join("mkfs-alloc.exe");
    let linux_bin = target.join("debug").join("mkfs-alloc");
    for b in [&exe, &linux_bin] {
        if !b.is_file() {
            return Err(format!("the build did not produce {}", b.display()));
        }
    }
    Ok((exe, linux_bin))
}

/// A fresh `work` with its `win`, `linux` and `logs` directories.
fn work_dirs(work: &Path) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    if work.exists() {
        std::fs::remove_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    }
    let win_dir = work.join("win");
    let linux_dir = work.join("linux");
    let logs = work.join("logs");
    for d in [&win_dir, &linux_dir, &logs] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    Ok((win_dir, linux_dir, logs))
}

/// Every case formatted and compared, then help, rejected input and JSON
/// output compared: the report lines of the cases.
fn run_checks(ctx: &Ctx<'_>, laps: &mut Laps) -> Result<Vec<String>, String> {
    let mut report = Vec::new();
    for case in CASES {
        report.push(ctx.format_case(case)?);
    }
    laps.mark("format + check images");
    ctx.help()?;
    ctx.rejected()?;
    ctx.same_output(
        "dry-run-json",
        &[
            "--dry-run",
            "--json",
            "--fs",
            "exfat",
            "--cluster",
            "32K",
            "--size",
            "8G",
            "big.img",
        ],
    )?;
    for case in CASES.iter().filter(|c| c.table) {
        let img = format!("{}.img", case.name);
        ctx.same_output(&format!("info-{}", case.name), &["info", "--json", &img])?;
    }
    laps.mark("help, rejected input, JSON");
    Ok(report)
}

/// Compiles the `ProcessPrng` shim into `dir/bcryptprimitives.dll`.
fn build_shim(shim: &Path, dir: &Path) -> Result<(), String> {
    run(Command::new("x86_64-w64-mingw32-gcc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-o"])
        .arg(dir.join("bcryptprimitives.dll"))
        .arg(shim.join("bcryptprimitives.c"))
        .arg(shim.join("bcryptprimitives.def"))
        .arg("-ladvapi32"))
}
