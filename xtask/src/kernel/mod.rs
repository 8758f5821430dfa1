//! `cargo xtask test-kernel`: our images through the Linux kernel's own
//! `exfat` and `vfat` drivers, in QEMU.
//!
//! 1. The guest: the kernel `linux-image-amd64` depends on, fetched with
//!    `apt-get download` and unpacked with `dpkg -x` (cached in
//!    `<target>/kernel-test/`), and an initramfs written here: static
//!    busybox, the modules of [`MODULES`] with their dependencies, and
//!    `kernel_init.sh` as `/init`.
//! 2. The images: every case of [`CASES`] (the CI subset, or all with
//!    `--all`) is formatted, and `mkfs-alloc info --json` read; negative
//!    controls are then damaged on purpose ([`Fault`]).
//! 3. Two boots per batch of cases, each image a virtio disk with the
//!    case's logical block size: `kt.phase=write` (mount, statfs, write a
//!    file set or fill the volume, remount read-only and list the tree
//!    again), then `kt.phase=verify` (a fresh kernel lists it again). The batches (`--jobs`, default 2) run
//!    side by side; the boot costs more than a case, so one boot serves many.
//! 4. On the host: `fsck -n` of every volume, then the judgement
//!    ([`judge()`]): a case fails on any guest failure, any kernel log line
//!    while mounting, writing or unmounting, any statfs that differs from
//!    what mkfs-alloc reported, any tree that reads back differently, an
//!    FSInfo free count that differs from the counted one, an unclean fsck.
//!    A negative control passes only if its case fails with the expected
//!    finding; the command fails otherwise.
//!
//! Accelerator: TCG by default. `XTASK_KERNEL_ACCEL=kvm` uses KVM where it
//! runs a stock kernel (a PVM host's /dev/kvm does not: the guest hangs).
//! `XTASK_KERNEL_VERSION` picks another Debian kernel package.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::windows::output_with_timeout;
use crate::{cargo, find_tool, install_packages, is_root, run, target_dir, workspace_root};

mod boot;
mod cases;
mod change;
mod fill;
mod guest;
mod image;
mod judge;

// Shared with `test-uboot` (`crate::uboot`).
pub(crate) use cases::{Change, Make};
pub(crate) use change::apply as apply_change;
pub(crate) use fill::fill_mtools;
pub(crate) use image::{format_image, json_u64, read_volume, recluster, write_source_tree};
pub(crate) use judge::fsck_volume;

use boot::*;
use cases::*;
use guest::*;
use image::*;
use judge::*;

/// Tools `test-kernel` runs, with their Debian packages.
pub const TOOLS: &[(&str, &str)] = &[
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("busybox", "busybox-static"),
    ("modprobe", "kmod"),
    ("depmod", "kmod"),
    ("dpkg", "dpkg"),
    ("losetup", "mount"),
    ("fsck.exfat", "exfatprogs"),
    ("mkfs.exfat", "exfatprogs"),
    ("fsck.fat", "dosfstools"),
    ("mkfs.fat", "dosfstools"),
    ("truncate", "coreutils"),
    // Populated peer images are filled through exfat-fuse (`fill.rs`).
    ("mount.exfat-fuse", "exfat-fuse"),
    ("fusermount", "fuse"),
    // Populated FAT peer images are filled through mtools (`fill.rs`).
    ("mcopy", "mtools"),
];

/// Modules loaded in the guest (their dependencies come along).
const MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "nls_cp437",
    "nls_iso8859-1",
    "nls_utf8",
    "nls_ascii",
    "fat",
    "vfat",
    "exfat",
];

/// The guest's PID 1.
const INIT: &str = include_str!("../kernel_init.sh");

/// The listing of a tree, run by busybox `sh` in its root: the directories,
/// then every file's size, then every file's SHA-256, each sorted bytewise
/// (the guest's `KT-LIST` copy left out). The guest sources it as
/// `/listing.sh`; the host runs it on a `--rootdir` source with the same
/// busybox, so both print the same bytes for the same tree. Few processes
/// (`-exec {} +`): under TCG a fork costs milliseconds.
const LISTING: &str = "\
find . -type d ! -path . | sort
find . -type f ! -name KT-LIST -exec stat -c '%s %n' {} + | sort
find . -type f ! -name KT-LIST -exec sha256sum {} + | sort
";

/// Options of `test-kernel` and `test-uboot` (only it takes `--json`).
pub(crate) struct Options {
    pub(crate) all: bool,
    pub(crate) json: bool,
    pub(crate) jobs: usize,
    pub(crate) only: Vec<String>,
    pub(crate) keep: bool,
}

/// Reads the options of a QEMU suite; `--json` where `json` allows it.
pub(crate) fn parse_options(args: &[String], json: bool) -> Result<Options, String> {
    let mut opts = Options {
        all: false,
        json: false,
        jobs: 2,
        only: Vec::new(),
        keep: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--all" => opts.all = true,
            "--json" if json => opts.json = true,
            "--keep" => opts.keep = true,
            "--jobs" => {
                opts.jobs = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--jobs needs a positive number")?;
            }
            "--case" => opts
                .only
                .push(it.next().ok_or("--case needs a name")?.clone()),
            other => {
                return Err(format!(
                    "unknown option {other:?}; valid: --all,{} --jobs N, --case NAME (repeatable), --keep",
                    if json { " --json," } else { "" }
                ))
            }
        }
    }
    Ok(opts)
}

/// The cases of a QEMU suite to run: the named ones (every name must be a
/// case), or all (`--all`), or the CI subset.
pub(crate) fn select_cases<'a, C>(
    cases: &'a [C],
    opts: &Options,
    name: impl Fn(&C) -> &str,
    ci: impl Fn(&C) -> bool,
) -> Result<Vec<&'a C>, String> {
    if let Some(o) = opts
        .only
        .iter()
        .find(|o| !cases.iter().any(|c| name(c) == o.as_str()))
    {
        return Err(format!("no case is named {o:?}"));
    }
    Ok(cases
        .iter()
        .filter(|c| {
            if opts.only.is_empty() {
                opts.all || ci(c)
            } else {
                opts.only.iter().any(|o| o == name(c))
            }
        })
        .collect())
}

/// Installs what the command needs: [`TOOLS`], and busybox as the static
/// build (the guest has no libc).
pub fn install() -> Result<(), String> {
    install_packages(TOOLS)?;
    if find_tool("busybox").is_some_and(|b| is_static_elf(&b)) {
        return Ok(());
    }
    if !is_root() {
        return Err("busybox is not the static build; install it with:\n  sudo apt-get install -y busybox-static".into());
    }
    run(Command::new("apt-get")
        .args(["install", "-y", "busybox-static"])
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    match find_tool("busybox") {
        Some(b) if is_static_elf(&b) => Ok(()),
        _ => Err("busybox is still not the static build after installing busybox-static".into()),
    }
}

/// An ELF file without a program interpreter (statically linked).
fn is_static_elf(path: &Path) -> bool {
    let Ok(data) = std::fs::read(path) else {
        return false;
    };
    let u16_at = |o: usize| data.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u64_at = |o: usize| {
        data.get(o..o + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    if data.get(..5) != Some(b"\x7fELF\x02") {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    (0..usize::from(phnum)).all(|i| {
        let at = usize::try_from(phoff).unwrap_or(usize::MAX) + i * usize::from(phentsize);
        // PT_INTERP = 3: a dynamic executable.
        data.get(at..at + 4) != Some(&3u32.to_le_bytes()[..])
    })
}

/// `cargo xtask test-kernel [--all] [--jobs N] [--case NAME]... [--keep]`.
pub fn test_kernel_cmd(args: &[String]) -> Result<(), String> {
    let opts = parse_options(args, false)?;
    let start = Instant::now();
    install()?;
    // `--bin` finds the binary in whichever workspace package holds it.
    run(Command::new(cargo()).current_dir(workspace_root()).args([
        "build",
        "--workspace",
        "--bin",
        "mkfs-alloc",
    ]))?;
    let bin = target_dir().join("debug").join("mkfs-alloc");
    let dir = target_dir().join("kernel-test");
    let guest = build_guest(&dir)?;
    let prep_time = start.elapsed();

    let cases = select_cases(CASES, &opts, |c| c.name, |c| c.ci)?;
    let work = dir.join("run");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let mut images = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        images.push(prepare(case, i, &bin, &work)?);
    }

    // Batches: case i in batch i % jobs; each batch boots twice.
    let jobs = opts.jobs.min(images.len());
    let batches: Vec<Vec<&Image>> = (0..jobs)
        .map(|j| images.iter().skip(j).step_by(jobs).collect())
        .collect();
    let boot_start = Instant::now();
    let results = boot_batches(&guest, &batches, &work);
    let boot_time = boot_start.elapsed();

    let mut failed = Vec::new();
    let mut table = Vec::new();
    for (batch, result) in batches.iter().zip(&results) {
        for image in batch {
            if !report_case(image, result, &mut table) {
                failed.push(image.case.name);
            }
        }
    }
    eprintln!(
        "xtask: test-kernel: Linux {} under {}, {} cases in {} batches",
        guest.version,
        accel().0,
        images.len(),
        jobs
    );
    eprintln!(
        "  {:<26} {:<17} {:>7} {:>8}   (guest seconds per case)",
        "case", "result", "write", "verify"
    );
    eprintln!("{}", table.join("\n"));
    print_boot_times(&results);
    eprintln!(
        "xtask: test-kernel finished in {:.0?} (tools, build and guest {:.0?}, boots {:.0?})",
        start.elapsed(),
        prep_time,
        boot_time
    );
    finish(&opts, &work, &failed)
}

/// The end of a QEMU suite's run: the work directory kept (`--keep`, or
/// when a case failed) or removed, and the failed cases named.
pub(crate) fn finish(opts: &Options, work: &Path, failed: &[&str]) -> Result<(), String> {
    if opts.keep || !failed.is_empty() {
        eprintln!("xtask: images and consoles kept in {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(work);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} case(s) failed: {}",
            failed.len(),
            failed.join(", ")
        ))
    }
}

/// Runs the batches side by side, one thread each.
fn boot_batches(guest: &Guest, batches: &[Vec<&Image>], work: &Path) -> Vec<BatchResult> {
    std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .enumerate()
            .map(|(j, batch)| {
                s.spawn(move || run_batch(guest, batch, &work.join(format!("batch{j}"))))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| BatchResult {
                    error: Some("the batch thread panicked".into()),
                    ..BatchResult::default()
                })
            })
            .collect()
    })
}

/// Judges one case, adds its rows to `table`, and says whether it went as
/// it must (a negative control must fail with its own finding).
fn report_case(image: &Image, result: &BatchResult, table: &mut Vec<String>) -> bool {
    let mut findings = judge(image, result);
    findings.extend(fsck(image));
    let (verdict, ok) = match (image.case.fault, findings.is_empty()) {
        (None, true) => ("pass".to_string(), true),
        (None, false) => ("FAIL".to_string(), false),
        (Some((_, expect)), _) => {
            if findings.iter().any(|f| f.contains(expect)) {
                ("fails as it must".to_string(), true)
            } else {
                findings.insert(0, format!("negative control: no finding says {expect:?}"));
                ("CONTROL PASSED".to_string(), false)
            }
        }
    };
    let secs = |phase: &str| {
        result
            .seen
            .get(&(phase.to_string(), image.tag.clone()))
            .and_then(|s| s.time)
            .map_or_else(|| "-".to_string(), |t| format!("{t:.1}"))
    };
    table.push(format!(
        "  {:<26} {:<17} {:>7} {:>8}",
        image.case.name,
        verdict,
        secs("write"),
        secs("verify")
    ));
    for f in &findings {
        table.push(format!("      {f}"));
    }
    for n in result.notes(&image.tag) {
        table.push(format!("      note: {n}"));
    }
    ok
}

/// Per batch: the wall time of each boot and the guest's time to `/init`.
fn print_boot_times(results: &[BatchResult]) {
    for (j, r) in results.iter().enumerate() {
        eprintln!(
            "  batch {j}: boots {} (wall; kernel start to /init in the guest: {})",
            r.boots
                .iter()
                .map(|(p, t)| format!("{p} {:.1} s", t.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", "),
            r.booted
                .iter()
                .map(|(p, t)| format!("{p} {t:.1} s"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// The accelerator: (name, QEMU arguments).
fn accel() -> (&'static str, &'static [&'static str]) {
    match std::env::var("XTASK_KERNEL_ACCEL").as_deref() {
        Ok("kvm") => ("KVM", &["-accel", "kvm", "-cpu", "host"]),
        _ => ("TCG", &["-accel", "tcg", "-cpu", "max"]),
    }
}
