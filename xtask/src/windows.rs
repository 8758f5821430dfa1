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
    let mut times: Vec<(String, Duration)> = Vec::new();
    let mut lap = Instant::now();
    let mut mark = |what: &str, lap: &mut Instant| {
        times.push((what.to_string(), lap.elapsed()));
        *lap = Instant::now();
    };

    install_packages(TOOLS)?;
    ensure_rust_targets(&[WIN_TARGET])?;
    mark("tools", &mut lap);

    let root = workspace_root();
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "mkfs-alloc-cli",
        "--target",
        WIN_TARGET,
    ]))?;
    mark("build (Windows, release)", &mut lap);
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["build", "-p", "mkfs-alloc-cli"]))?;
    mark("build (Linux, debug)", &mut lap);

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

    let work = target.join("test-windows");
    if work.exists() {
        std::fs::remove_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    }
    let win_dir = work.join("win");
    let linux_dir = work.join("linux");
    let logs = work.join("logs");
    for d in [&win_dir, &linux_dir, &logs] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::copy(&exe, win_dir.join("mkfs-alloc.exe"))
        .map_err(|e| format!("copying {}: {e}", exe.display()))?;
    build_shim(&root.join("xtask").join("shim"), &win_dir)?;
    mark("shim DLL", &mut lap);

    let wine = Wine::new(keep, &logs)?;
    wine.boot()?;
    mark("wineboot --init", &mut lap);

    let ctx = Ctx {
        wine: &wine,
        linux_bin: &linux_bin,
        win_dir: &win_dir,
        linux_dir: &linux_dir,
        logs: &logs,
    };
    let mut report = Vec::new();
    for case in CASES {
        report.push(ctx.format_case(case)?);
    }
    mark("format + check images", &mut lap);
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
    mark("help, rejected input, JSON", &mut lap);
    drop(wine);

    eprintln!("xtask: test-windows: every image byte-identical to the Linux build's and clean:");
    for line in &report {
        eprintln!("  {line}");
    }
    eprintln!("xtask: test-windows: times:");
    for (what, t) in &times {
        eprintln!("  {what:<28} {:>6.1} s", t.as_secs_f64());
    }
    eprintln!("xtask: test-windows passed in {:.0?}", start.elapsed());
    Ok(())
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

/// A temporary Wine prefix; its wineserver is stopped and the prefix
/// removed on drop (unless kept).
struct Wine {
    prefix: PathBuf,
    keep: bool,
    logs: PathBuf,
}

impl Wine {
    fn new(keep: bool, logs: &Path) -> Result<Self, String> {
        let prefix = std::env::temp_dir().join(format!("mkfs-alloc-wine-{}", std::process::id()));
        if prefix.exists() {
            std::fs::remove_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        }
        Ok(Self {
            prefix,
            keep,
            logs: logs.to_path_buf(),
        })
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", DLL_OVERRIDES)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY");
        cmd
    }

    fn boot(&self) -> Result<(), String> {
        let mut cmd = self.command("wineboot");
        cmd.arg("--init");
        let out = output_with_timeout(&mut cmd, BOOT_LIMIT, &self.logs.join("wineboot"))?;
        if !out.status.success() {
            return Err(format!(
                "`wineboot --init` failed ({}) with WINEPREFIX={}:\n{}",
                out.status,
                self.prefix.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// `wine mkfs-alloc.exe ARGS` in `dir`.
    fn exe(&self, dir: &Path, args: &[&str], log: &Path) -> Result<Output, String> {
        let mut cmd = self.command("wine");
        cmd.current_dir(dir)
            .arg("mkfs-alloc.exe")
            .args(args)
            .env("SOURCE_DATE_EPOCH", EPOCH);
        output_with_timeout(&mut cmd, RUN_LIMIT, log)
    }
}

impl Drop for Wine {
    fn drop(&mut self) {
        // Stops the wineserver of our prefix (and its processes) only.
        let _ = self
            .command("wineserver")
            .arg("-k")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if self.keep {
            eprintln!("xtask: kept the Wine prefix {}", self.prefix.display());
        } else if self.prefix.exists() {
            let _ = std::fs::remove_dir_all(&self.prefix);
        }
    }
}

/// Runs `cmd` with stdin closed and stdout / stderr in `LOG.out` /
/// `LOG.err` (files, not pipes: the wineserver Wine starts may inherit them
/// and outlive the command), killing it after `limit`.
pub(crate) fn output_with_timeout(
    cmd: &mut Command,
    limit: Duration,
    log: &Path,
) -> Result<Output, String> {
    let shown = format!("{cmd:?}").replace('"', "");
    eprintln!("+ {shown}");
    let out_path = log.with_extension("out");
    let err_path = log.with_extension("err");
    let out_file = File::create(&out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let err_file = File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(err_file)
        .spawn()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{shown}` did not finish in {} s (killed); output in {} and {}",
                    limit.as_secs(),
                    out_path.display(),
                    err_path.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for `{shown}`: {e}")),
        }
    };
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    Ok(Output {
        status,
        stdout: read(&out_path)?,
        stderr: read(&err_path)?,
    })
}

/// Runs a Linux command in `dir`, output captured.
fn output_in(program: &Path, dir: &Path, args: &[&str]) -> Result<Output, String> {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH);
    let shown = format!("{cmd:?}").replace('"', "");
    eprintln!("+ {shown}");
    cmd.output()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))
}

fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

struct Ctx<'a> {
    wine: &'a Wine,
    linux_bin: &'a Path,
    win_dir: &'a Path,
    linux_dir: &'a Path,
    logs: &'a Path,
}

impl Ctx<'_> {
    /// Formats with both builds, compares, checks; returns a summary line.
    fn format_case(&self, case: &Case) -> Result<String, String> {
        let img = format!("{}.img", case.name);
        if let Some(from) = case.from {
            let src = format!("{from}.img");
            for dir in [self.win_dir, self.linux_dir] {
                std::fs::copy(dir.join(&src), dir.join(&img))
                    .map_err(|e| format!("copying {src} to {img}: {e}"))?;
            }
        }
        let mut args = vec!["-q", "--serial", SERIAL];
        args.extend_from_slice(case.args);
        args.push(&img);

        let t = Instant::now();
        let win = self
            .wine
            .exe(self.win_dir, &args, &self.logs.join(case.name))?;
        let win_secs = t.elapsed().as_secs_f64();
        if !win.status.success() {
            return Err(format!(
                "case {}: {}",
                case.name,
                describe("mkfs-alloc.exe under Wine failed", &win)
            ));
        }
        let linux = output_in(self.linux_bin, self.linux_dir, &args)?;
        if !linux.status.success() {
            return Err(format!(
                "case {}: {}",
                case.name,
                describe("the Linux mkfs-alloc failed", &linux)
            ));
        }

        let win_img = self.win_dir.join(&img);
        let linux_img = self.linux_dir.join(&img);
        let (win_sum, linux_sum) = (cksum(&win_img)?, cksum(&linux_img)?);
        if let Some(diff) = first_difference(&win_img, &linux_img)? {
            return Err(format!(
                "case {}: the Windows and Linux images differ ({diff}); cksum {win_sum} (Windows) vs {linux_sum} (Linux); images in {} and {}",
                case.name,
                win_img.display(),
                linux_img.display()
            ));
        }
        if win_sum != linux_sum {
            return Err(format!(
                "case {}: cksum {win_sum} (Windows) vs {linux_sum} (Linux), yet the bytes compare equal",
                case.name
            ));
        }

        let volume = if case.table {
            let (offset, len) = partition(&win_img)?;
            let part = self.logs.join(format!("{}.part", case.name));
            extract(&win_img, offset, len, &part)?;
            part
        } else {
            win_img.clone()
        };
        let fsck_result = fsck(case.fs, &volume);
        if case.table {
            let _ = std::fs::remove_file(&volume);
        }
        fsck_result.map_err(|e| format!("case {}: {e}", case.name))?;
        Ok(format!(
            "{:<18} cksum {win_sum:<22} fsck ok   wine {win_secs:.1} s",
            case.name
        ))
    }

    /// `--help` prints the usage and exits 0.
    fn help(&self) -> Result<(), String> {
        let out = self
            .wine
            .exe(self.win_dir, &["--help"], &self.logs.join("help"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("Usage:") || !text.contains("--cluster") {
            return Err(describe(
                "`mkfs-alloc.exe --help` did not exit 0 with the usage",
                &out,
            ));
        }
        Ok(())
    }

    /// Rejected input exits with 2, creates nothing, changes nothing.
    fn rejected(&self) -> Result<(), String> {
        let out = self.wine.exe(
            self.win_dir,
            &[
                "--fs",
                "fat32",
                "--cluster",
                "32K",
                "--size",
                "1G",
                "rejected.img",
            ],
            &self.logs.join("rejected-new"),
        )?;
        if out.status.code() != Some(2)
            || !String::from_utf8_lossy(&out.stderr).contains("too small")
        {
            return Err(describe(
                "FAT32 at 32K on 1 GiB: expected exit code 2 and \"too small\"",
                &out,
            ));
        }
        if self.win_dir.join("rejected.img").exists() {
            return Err("rejected input created rejected.img".to_string());
        }

        let sentinel = self.win_dir.join("sentinel.img");
        let original = self.win_dir.join("exfat-none.img");
        std::fs::copy(&original, &sentinel).map_err(|e| format!("sentinel.img: {e}"))?;
        let out = self.wine.exe(
            self.win_dir,
            &["--fs", "exfat", "--cluster", "64M", "sentinel.img"],
            &self.logs.join("rejected-existing"),
        )?;
        if out.status.code() != Some(2) {
            return Err(describe(
                "exFAT at 64M clusters on an existing image: expected exit code 2",
                &out,
            ));
        }
        if let Some(diff) = first_difference(&sentinel, &original)? {
            return Err(format!("rejected input changed sentinel.img ({diff})"));
        }
        let _ = std::fs::remove_file(&sentinel);
        Ok(())
    }

    /// Both builds print the same stdout and exit 0.
    fn same_output(&self, name: &str, args: &[&str]) -> Result<(), String> {
        let win = self.wine.exe(self.win_dir, args, &self.logs.join(name))?;
        let linux = output_in(self.linux_bin, self.linux_dir, args)?;
        if !win.status.success() || !linux.status.success() {
            return Err(format!(
                "{name}: {}\n{}",
                describe("Windows", &win),
                describe("Linux", &linux)
            ));
        }
        if win.stdout != linux.stdout {
            let path = self.logs.join(format!("{name}.linux.out"));
            let _ = std::fs::write(&path, &linux.stdout);
            return Err(format!(
                "{name}: `mkfs-alloc {}` prints different output on Windows ({}) and Linux ({})",
                args.join(" "),
                self.logs.join(format!("{name}.out")).display(),
                path.display()
            ));
        }
        Ok(())
    }
}

/// `cksum FILE` as "CRC SIZE".
fn cksum(path: &Path) -> Result<String, String> {
    let out = Command::new("cksum")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run cksum: {e}"))?;
    if !out.status.success() {
        return Err(describe(&format!("cksum {}", path.display()), &out));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.split_whitespace().take(2).collect();
    Ok(fields.join(" "))
}

/// `None` if the files are equal, else where they first differ.
fn first_difference(a: &Path, b: &Path) -> Result<Option<String>, String> {
    let open = |p: &Path| File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let len = |f: &File, p: &Path| {
        f.metadata()
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let (la, lb) = (len(&fa, a)?, len(&fb, b)?);
    if la != lb {
        return Ok(Some(format!("sizes {la} and {lb}")));
    }
    let mut ba = vec![0u8; 1 << 20];
    let mut bb = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < la {
        let n = usize::try_from((la - pos).min(1 << 20)).unwrap_or(1 << 20);
        fa.read_exact(&mut ba[..n])
            .map_err(|e| format!("{}: {e}", a.display()))?;
        fb.read_exact(&mut bb[..n])
            .map_err(|e| format!("{}: {e}", b.display()))?;
        if let Some(i) = ba[..n].iter().zip(&bb[..n]).position(|(x, y)| x != y) {
            return Ok(Some(format!("first at byte {}", pos + i as u64)));
        }
        pos += n as u64;
    }
    Ok(None)
}

/// Offset and length in bytes of the only partition, from `sfdisk --dump`.
fn partition(img: &Path) -> Result<(u64, u64), String> {
    let out = Command::new("sfdisk")
        .arg("--dump")
        .arg(img)
        .output()
        .map_err(|e| format!("cannot run sfdisk: {e}"))?;
    if !out.status.success() {
        return Err(describe(&format!("sfdisk --dump {}", img.display()), &out));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut sector = 512u64;
    let mut parts = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("sector-size:") {
            sector = v.trim().parse().map_err(|_| format!("sfdisk: {line:?}"))?;
        }
        if line.contains("start=") {
            let field = |name: &str| -> Option<u64> {
                line.split(',')
                    .flat_map(|f| f.split(':'))
                    .find_map(|f| f.trim().strip_prefix(name))
                    .and_then(|v| v.trim().parse().ok())
            };
            match (field("start="), field("size=")) {
                (Some(s), Some(n)) => parts.push((s * sector, n * sector)),
                _ => return Err(format!("sfdisk --dump: cannot parse {line:?}")),
            }
        }
    }
    match parts.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!(
            "{}: expected one partition, sfdisk --dump says:\n{text}",
            img.display()
        )),
    }
}

/// Copies `len` bytes at `offset` of `img` into `dest` (like `dd`).
fn extract(img: &Path, offset: u64, len: u64, dest: &Path) -> Result<(), String> {
    let mut src = File::open(img).map_err(|e| format!("{}: {e}", img.display()))?;
    src.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("{}: {e}", img.display()))?;
    let mut out = File::create(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let copied = std::io::copy(&mut src.take(len), &mut out)
        .map_err(|e| format!("{} -> {}: {e}", img.display(), dest.display()))?;
    out.flush()
        .map_err(|e| format!("{}: {e}", dest.display()))?;
    if copied != len {
        return Err(format!(
            "{}: partition at {offset} + {len} runs past the end of the image",
            img.display()
        ));
    }
    Ok(())
}

/// `fsck.exfat -n` / `fsck.fat -n` + `mdir` on a volume.
fn fsck(fs: Fs, volume: &Path) -> Result<(), String> {
    let mut checks: Vec<Command> = Vec::new();
    match fs {
        Fs::Exfat => {
            let mut c = Command::new("fsck.exfat");
            c.arg("-n").arg(volume);
            checks.push(c);
        }
        Fs::Fat32 => {
            let mut c = Command::new("fsck.fat");
            c.arg("-n").arg(volume);
            checks.push(c);
            let mut c = Command::new("mdir");
            c.arg("-i")
                .arg(volume)
                .arg("::")
                .env("MTOOLS_SKIP_CHECK", "1");
            checks.push(c);
        }
    }
    for mut c in checks {
        let shown = format!("{c:?}").replace('"', "");
        eprintln!("+ {shown}");
        let out = c
            .output()
            .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
        if !out.status.success() {
            return Err(describe(&format!("`{shown}` failed"), &out));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_finds_the_byte() -> Result<(), String> {
        let dir = std::env::temp_dir().join(format!("xtask-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let (a, b) = (dir.join("a"), dir.join("b"));
        let mut data = vec![7u8; (1 << 20) + 100];
        std::fs::write(&a, &data).map_err(|e| e.to_string())?;
        std::fs::write(&b, &data).map_err(|e| e.to_string())?;
        assert_eq!(first_difference(&a, &b)?, None);
        data[(1 << 20) + 5] = 8;
        std::fs::write(&b, &data).map_err(|e| e.to_string())?;
        assert_eq!(
            first_difference(&a, &b)?.as_deref(),
            Some("first at byte 1048581")
        );
        std::fs::write(&b, &data[..10]).map_err(|e| e.to_string())?;
        assert!(first_difference(&a, &b)?.is_some_and(|d| d.starts_with("sizes")));
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
