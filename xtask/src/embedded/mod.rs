//! `cargo xtask embedded [--json] [--no-mount] [--keep]`: the firmware
//! example (`examples/firmware/`) built for a Cortex-M3, run in QEMU,
//! measured and its images checked.
//!
//! 1. Build: `cargo build --release` of the firmware for
//!    `thumbv7m-none-eabi` (`opt-level = "z"`, `panic = "abort"`, LTO), in
//!    its own target directory.
//! 2. Run: the host files of [`JOBS`] are created (sparse, each the size of
//!    its "card"), and QEMU's `lm3s6965evb` (TCG) runs the firmware with
//!    semihosting to host files; the firmware formats each through a
//!    512-byte static sector buffer and prints its peak stack (the part of
//!    the stack cortex-m-rt painted that is no longer paint). QEMU must
//!    exit 0 within [`QEMU_TIMEOUT`] and the firmware must print `done`.
//! 3. Measure: from the ELF file, `flash_bytes` = text (code, vector table,
//!    read-only data) + data, `ram_bytes` = data + bss (the sector buffer
//!    included; the budget counts RAM besides it), and the firmware's own
//!    `stack_bytes`. Each is held to its budget ([`BUDGETS`]).
//! 4. Check (`check.rs`): each image is byte-identical to what the std CLI
//!    writes with the same options (`--serial`, `SOURCE_DATE_EPOCH`);
//!    `fsck.exfat -n` / `fsck.fat -n` are clean; mtools (`minfo`, `mdir`,
//!    a file copied in and back) or exfat-fuse (a read-write mount, a file
//!    written and read back) accept the volume. Mounting needs root; without
//!    it the command fails unless `--no-mount` says to leave it out (the
//!    report then says so).
//!
//! It prints one JSON object (`--json`) or a summary, and fails unless the
//! firmware ran to its end, every budget holds and every check passed.
//!
//! `cargo xtask embedded --fatfs [--json]` measures ChaN's FatFs `f_mkfs`
//! on the same CPU class instead, for comparison (see `fatfs.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{cargo, ensure_rust_targets, install_packages, run, target_dir, workspace_root};

mod check;
mod elf;
mod fatfs;

/// The board, its CPU and the Rust target the firmware is built for.
const MACHINE: &str = "lm3s6965evb";
const CPU: &str = "cortex-m3";
const TARGET: &str = "thumbv7m-none-eabi";

/// How long QEMU may run before the firmware counts as hung.
const QEMU_TIMEOUT: Duration = Duration::from_secs(300);

/// Tools this command runs, with their Debian packages.
pub const TOOLS: &[(&str, &str)] = &[
    ("qemu-system-arm", "qemu-system-arm"),
    ("fsck.exfat", "exfatprogs"),
    ("fsck.fat", "dosfstools"),
    ("mdir", "mtools"),
    ("mount.exfat-fuse", "exfat-fuse"),
    // `--fatfs`: the cross compiler and newlib-nano.
    ("arm-none-eabi-gcc", "gcc-arm-none-eabi"),
    (
        "/usr/lib/arm-none-eabi/lib/thumb/v7-m/nofp/libc_nano.a",
        "libnewlib-arm-none-eabi",
    ),
];

/// The firmware's budgets, in bytes: flash for a firmware that formats
/// exFAT and FAT32, static RAM besides the sector buffer, peak stack.
pub(crate) struct Budgets {
    pub(crate) flash: u64,
    pub(crate) static_ram: u64,
    pub(crate) stack: u64,
}

/// The budgets every run is held to.
pub(crate) const BUDGETS: Budgets = Budgets {
    flash: 24 << 10,
    static_ram: 1 << 10,
    stack: 4 << 10,
};

/// The serial and the time every image is pinned to (the firmware's
/// options say the same).
pub(crate) const SERIAL: &str = "1234ABCD";
pub(crate) const EPOCH: u64 = 1_700_000_000;

/// One disk the firmware formats: the host file, its size (the card) and
/// the std CLI's arguments for the same options (besides `--serial`, the
/// time and the size, which come from the file).
pub(crate) struct Job {
    pub(crate) name: &'static str,
    pub(crate) size: u64,
    pub(crate) args: &'static str,
    /// exFAT (fsck.exfat, exfat-fuse) or FAT (fsck.fat, mtools).
    pub(crate) exfat: bool,
}

/// The disks, in the firmware's order (`examples/firmware/src/main.rs`,
/// `JOBS`: a difference shows as a byte mismatch).
pub(crate) const JOBS: &[Job] = &[
    Job {
        name: "exfat-mbr.img",
        size: 512 << 20,
        args: "--fs exfat --table mbr --label CARD",
        exfat: true,
    },
    Job {
        name: "fat32-mbr.img",
        size: 512 << 20,
        args: "--fs fat32 --table mbr --label CARD",
        exfat: false,
    },
    Job {
        name: "fat16-sfd.img",
        size: 32 << 20,
        args: "--fs fat16 --table none --fats 1 --root-entries 256 --label CARD",
        exfat: false,
    },
];

/// What the firmware printed.
#[derive(Debug, Default)]
struct Console {
    images_ok: Vec<String>,
    images_failed: Vec<String>,
    stack: Option<u64>,
    buffer: Option<u64>,
    done: bool,
}

/// `cargo xtask embedded`.
pub fn embedded_cmd(args: &[String]) -> Result<(), String> {
    let (mut json_out, mut mount, mut keep, mut fatfs) = (false, true, false, false);
    for a in args {
        match a.as_str() {
            "--json" => json_out = true,
            "--no-mount" => mount = false,
            "--keep" => keep = true,
            "--fatfs" => fatfs = true,
            other => {
                return Err(format!(
                    "unknown option {other:?}; valid: --json, --no-mount, --keep, --fatfs"
                ))
            }
        }
    }
    if fatfs {
        if !mount || keep {
            return Err("--fatfs takes only --json".into());
        }
        return fatfs::fatfs_cmd(json_out);
    }
    let start = Instant::now();
    let work = target_dir().join("embedded").join("run");
    let fw = run_firmware(&work.join("firmware"))?;
    let (console, raw, sizes) = (&fw.console, &fw.raw, fw.sizes);

    let mut failures = Vec::new();
    if !console.done {
        failures.push(format!(
            "the firmware did not run to its end: {}",
            raw.trim()
        ));
    }
    for name in &console.images_failed {
        failures.push(format!("the firmware could not format {name}"));
    }
    for job in JOBS {
        if console.done && !console.images_ok.iter().any(|n| n == job.name) {
            failures.push(format!(
                "the firmware did not report {} formatted",
                job.name
            ));
        }
    }
    let stack = console.stack.unwrap_or(0);
    let buffer = console.buffer.unwrap_or(0);
    let static_ram = sizes.ram().saturating_sub(buffer);
    for (what, got, max) in [
        ("flash", sizes.flash(), BUDGETS.flash),
        (
            "static RAM besides the sector buffer",
            static_ram,
            BUDGETS.static_ram,
        ),
        ("peak stack", stack, BUDGETS.stack),
    ] {
        if got > max {
            failures.push(format!("{what}: {got} bytes, over the budget of {max}"));
        }
    }
    if console.stack.is_none() || console.buffer.is_none() {
        failures.push("the firmware did not report its stack and buffer".into());
    }

    let checks = if console.done {
        check::check_images(&work, &fw.dir, mount)?
    } else {
        Vec::new()
    };
    for c in &checks {
        failures.extend(c.failures.iter().map(|f| format!("{}: {f}", c.name)));
    }
    let images: Vec<String> = JOBS
        .iter()
        .map(|j| fw.dir.join(j.name).display().to_string())
        .collect();
    let report = json!({
        "machine": MACHINE,
        "target": TARGET,
        "firmware": fw.elf.display().to_string(),
        "flash_bytes": sizes.flash(),
        "ram_bytes": sizes.ram(),
        "stack_bytes": stack,
        "sector_buffer_bytes": buffer,
        "sections": {"text": sizes.text, "data": sizes.data, "bss": sizes.bss},
        "budgets": {
            "flash_bytes": BUDGETS.flash,
            "static_ram_bytes_besides_buffer": BUDGETS.static_ram,
            "stack_bytes": BUDGETS.stack,
        },
        "images": images,
        "checks": checks.iter().map(check::ImageCheck::to_json).collect::<Vec<Value>>(),
        "qemu_seconds": (fw.qemu_secs * 100.0).round() / 100.0,
        "seconds": (start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        "ok": failures.is_empty(),
    });
    if json_out {
        println!("{report:#}");
    } else {
        println!(
            "firmware ({TARGET}, {MACHINE}): flash {} bytes (budget {}), RAM {} bytes \
             ({} of them the sector buffer; budget {} besides it), peak stack {} bytes (budget {})",
            sizes.flash(),
            BUDGETS.flash,
            sizes.ram(),
            buffer,
            BUDGETS.static_ram,
            stack,
            BUDGETS.stack
        );
        for c in &checks {
            println!("{}", c.summary());
        }
    }
    if !keep && failures.is_empty() {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        eprintln!("xtask: embedded: images kept in {}", work.display());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} failure(s):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

/// A run of the firmware: where it is, what it printed and wrote.
pub(crate) struct FirmwareRun {
    elf: PathBuf,
    sizes: elf::Sizes,
    /// The semihosting directory: the images, named as in [`JOBS`].
    pub(crate) dir: PathBuf,
    console: Console,
    /// Everything QEMU printed, and why it ended when it did not end well.
    raw: String,
    qemu_secs: f64,
}

impl FirmwareRun {
    /// The run went to its end and formatted every job.
    pub(crate) fn complete(&self) -> Result<(), String> {
        let missing: Vec<&str> = JOBS
            .iter()
            .map(|j| j.name)
            .filter(|n| !self.console.images_ok.iter().any(|o| o == n))
            .collect();
        if self.console.done && missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the firmware did not format {}: {}",
                missing.join(", "),
                self.raw.trim()
            ))
        }
    }
}

/// Copies the firmware's image `job` (one of [`JOBS`]) to `path`. The
/// firmware runs once per process (in `target/embedded/suites`), for the
/// first image asked for.
pub(crate) fn firmware_image(job: &str, path: &Path) -> Result<(), String> {
    static RUN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = RUN
        .get_or_init(|| {
            let fw = run_firmware(&target_dir().join("embedded").join("suites"))?;
            fw.complete()?;
            Ok(fw.dir)
        })
        .as_ref()
        .map_err(Clone::clone)?;
    let src = dir.join(job);
    let len = std::fs::metadata(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .len();
    check::sparse_copy(&src, 0, len, path)
}

/// Builds the firmware and runs it in QEMU with a fresh directory `dir`
/// holding the empty images of [`JOBS`].
pub(crate) fn run_firmware(dir: &Path) -> Result<FirmwareRun, String> {
    ensure_rust_targets(&[TARGET])?;
    install_packages(TOOLS)?;
    let elf = build_firmware()?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for job in JOBS {
        let path = dir.join(job.name);
        std::fs::File::create(&path)
            .and_then(|f| f.set_len(job.size))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let qemu_start = Instant::now();
    let (console, raw) = run_qemu(&elf, dir)?;
    let qemu_secs = qemu_start.elapsed().as_secs_f64();
    let bytes = std::fs::read(&elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    Ok(FirmwareRun {
        sizes: elf::sizes(&bytes)?,
        elf,
        dir: dir.to_path_buf(),
        console,
        raw,
        qemu_secs,
    })
}

/// Builds the firmware; returns the path of its ELF file.
fn build_firmware() -> Result<PathBuf, String> {
    let root = workspace_root();
    let dir = target_dir().join("embedded").join("build");
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(root.join("examples/firmware/Cargo.toml"))
        .args(["--target", TARGET, "--target-dir"])
        .arg(&dir))?;
    Ok(dir.join(TARGET).join("release").join("mkfs-alloc-firmware"))
}

/// Runs `elf` on QEMU's Cortex-M3 board (TCG) with semihosting, in `dir`
/// (the semihosting directory); returns its exit status (`None`: killed
/// after [`QEMU_TIMEOUT`]) and what it printed, stdout then stderr.
pub(super) fn qemu_semihosting(
    qemu: &Path,
    elf: &Path,
    dir: &Path,
) -> Result<(Option<std::process::ExitStatus>, String), String> {
    let mut cmd = Command::new(qemu);
    cmd.current_dir(dir)
        .args(["-machine", MACHINE, "-cpu", CPU, "-accel", "tcg"])
        .args(["-nographic", "-monitor", "none", "-serial", "none"])
        .args(["-semihosting-config", "enable=on,target=native"])
        .arg("-kernel")
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    eprintln!("+ {}", format!("{cmd:?}").replace('"', ""));
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run qemu-system-arm: {e}"))?;
    let deadline = Instant::now() + QEMU_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => return Err(format!("waiting for qemu-system-arm: {e}")),
        }
    };
    let out = child
        .wait_with_output()
        .map_err(|e| format!("reading qemu-system-arm's output: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((status, text))
}

/// Runs the firmware in QEMU with `dir` as the semihosting directory;
/// returns what it printed (parsed, and raw for errors).
fn run_qemu(elf: &Path, dir: &Path) -> Result<(Console, String), String> {
    let (status, text) = qemu_semihosting(Path::new("qemu-system-arm"), elf, dir)?;
    // QEMU writes the semihosting console to stderr, its own notes too.
    let mut console = parse_console(&text);
    match status {
        None => {
            console.done = false;
            Ok((
                console,
                format!("QEMU ran over {QEMU_TIMEOUT:?}; it printed: {text}"),
            ))
        }
        Some(s) if !s.success() => {
            console.done = false;
            Ok((console, format!("QEMU exited with {s}; it printed: {text}")))
        }
        Some(_) => Ok((console, text)),
    }
}

/// Reads the firmware's lines (`firmware: ...`).
fn parse_console(text: &str) -> Console {
    let mut c = Console::default();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("firmware: ") else {
            continue;
        };
        if let Some(v) = rest.strip_prefix("stack_peak_bytes=") {
            c.stack = v.trim().parse().ok();
        } else if let Some(v) = rest.strip_prefix("sector_buffer_bytes=") {
            c.buffer = v.trim().parse().ok();
        } else if let Some(image) = rest.strip_prefix("image ") {
            match image.rsplit_once(' ') {
                Some((name, "ok")) => c.images_ok.push(name.to_string()),
                Some((name, _)) => c.images_failed.push(name.to_string()),
                None => c.images_failed.push(image.to_string()),
            }
        } else if rest.trim() == "done" {
            c.done = true;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_firmware_lines() {
        let c = parse_console(
            "Timer with period zero, disabling\nfirmware: image a.img ok\n\
             firmware: image b.img FAILED\nfirmware: stack_peak_bytes=204\n\
             firmware: sector_buffer_bytes=512\nfirmware: done\n",
        );
        assert_eq!(c.images_ok, ["a.img"]);
        assert_eq!(c.images_failed, ["b.img"]);
        assert_eq!((c.stack, c.buffer, c.done), (Some(204), Some(512), true));
        assert!(!parse_console("firmware: panic\n").done);
    }
}
