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
//!    ([`judge`]): a case fails on any guest failure, any kernel log line
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
const INIT: &str = include_str!("kernel_init.sh");

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

/// The kernel driver a case mounts with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Driver {
    Exfat,
    Vfat,
}

impl Driver {
    fn name(self) -> &'static str {
        match self {
            Driver::Exfat => "exfat",
            Driver::Vfat => "vfat",
        }
    }
}

/// How a case's image is made.
#[derive(Clone, Copy)]
enum Make {
    /// `mkfs-alloc ARGS --json IMAGE` (ARGS split at spaces).
    Ours(&'static str),
    /// A peer's formatter on an image of `size` bytes: `PROGRAM ARGS IMAGE`.
    Peer {
        size: u64,
        program: &'static str,
        args: &'static str,
    },
}

/// A fault injected into a negative control after formatting.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// exFAT VolumeFlags (boot sector byte 106): VolumeDirty set.
    ExfatDirty,
    /// exFAT: a boot-code byte changed, the boot checksum sector left alone.
    ExfatBootChecksum,
    /// FAT32: the FSInfo free cluster count lowered by 1000.
    FatFsinfoFree,
    /// Populated: a byte appended to a source file after the format (the
    /// image is intact; the volume no longer lists the source tree).
    SourceChanged,
}

/// One image through the kernel.
#[derive(Clone, Copy)]
struct Case {
    /// Name in the report (also the image's file name).
    name: &'static str,
    make: Make,
    driver: Driver,
    /// Logical sector size of the volume = the guest disk's block size.
    sector: u32,
    /// In the CI subset (the default run); `--all` runs every case.
    ci: bool,
    /// Negative control: the fault, and text one of the findings must hold.
    fault: Option<(Fault, &'static str)>,
    /// Populated with `--rootdir` (the tree of [`write_source_tree`]): the
    /// fresh volume must list exactly that tree.
    populated: bool,
    /// Fill the volume with one file instead of writing the file set: every
    /// cluster we reported free must take data.
    fill: bool,
}

/// A case formatted by mkfs-alloc with `args`.
const fn ours(name: &'static str, driver: Driver, sector: u32, args: &'static str) -> Case {
    Case {
        name,
        make: Make::Ours(args),
        driver,
        sector,
        ci: false,
        fault: None,
        populated: false,
        fill: false,
    }
}

/// A control case formatted by a peer tool.
const fn peer(
    name: &'static str,
    driver: Driver,
    sector: u32,
    size: u64,
    program: &'static str,
    args: &'static str,
) -> Case {
    Case {
        name,
        make: Make::Peer {
            size,
            program,
            args,
        },
        driver,
        sector,
        ci: false,
        fault: None,
        populated: false,
        fill: false,
    }
}

impl Case {
    /// Part of the CI subset.
    const fn ci(self) -> Case {
        Case { ci: true, ..self }
    }

    /// Populated from the source tree (`--rootdir` is added to the args).
    const fn populated(self) -> Case {
        Case {
            populated: true,
            ..self
        }
    }

    /// Fills the volume instead of writing the file set.
    const fn fill(self) -> Case {
        Case { fill: true, ..self }
    }

    /// A negative control: `fault` injected; must fail with `expect`.
    const fn broken(self, fault: Fault, expect: &'static str) -> Case {
        Case {
            fault: Some((fault, expect)),
            ..self
        }
    }
}

const GIB: u64 = 1 << 30;
use Driver::{Exfat, Vfat};

/// The matrix. One line per case: mkfs-alloc's arguments, the driver, the
/// sector size (`.populated()` adds `--rootdir`, `.ci()` puts it in CI). The CI subset (`.ci()`) covers every pair of {exFAT, FAT32}
/// x {512, 4096-byte sectors} x {no table, MBR, GPT} x {small, large
/// cluster} with six cases per file system.
#[rustfmt::skip]
const CASES: &[Case] = &[
    // exFAT, the CI subset.
    ours("ex-512-none-512", Exfat, 512, "--fs exfat --cluster 512 --size 1G --label Fotos-ÄÖ").ci(),
    ours("ex-512-mbr-1m", Exfat, 512, "--fs exfat --table mbr --cluster 1M --size 2G --label 日本語").ci(),
    ours("ex-512-gpt-4k", Exfat, 512, "--fs exfat --table gpt --cluster 4K --size 1G --label Urlaub😀").ci(),
    ours("ex-4k-none-1m", Exfat, 4096, "--fs exfat --sector-size 4096 --cluster 1M --size 2G").ci(),
    ours("ex-4k-mbr-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --table mbr --cluster 4K --size 1G --label STICK").ci(),
    ours("ex-4k-gpt-256k", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 256K --size 4G --label Fotos").ci(),
    // exFAT, the rest of the product.
    ours("ex-512-none-1m", Exfat, 512, "--fs exfat --cluster 1M --size 2G"),
    ours("ex-512-mbr-4k", Exfat, 512, "--fs exfat --table mbr --cluster 4K --size 1G"),
    ours("ex-512-gpt-1m", Exfat, 512, "--fs exfat --table gpt --cluster 1M --size 2G"),
    ours("ex-4k-none-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --cluster 4K --size 1G"),
    ours("ex-4k-mbr-1m", Exfat, 4096, "--fs exfat --sector-size 4096 --table mbr --cluster 1M --size 2G"),
    ours("ex-4k-gpt-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 4K --size 1G"),
    // exFAT, extremes.
    ours("ex-512-none-32m", Exfat, 512, "--fs exfat --cluster 32M --size 128G --label BIG"),
    ours("ex-512-gpt-auto-64g", Exfat, 512, "--fs exfat --table gpt --size 64G"),
    ours("ex-512-none-4k-64m", Exfat, 512, "--fs exfat --cluster 4K --size 64M"),
    // An EFI System Partition: FAT16 with 64 KiB clusters.
    ours("f16-512-none-64k-esp", Vfat, 512, "--esp --fs fat16 --cluster 64K --size 2G"),
    // FAT32, the CI subset.
    ours("f32-512-none-512", Vfat, 512, "--fs fat32 --cluster 512 --size 256M --label PHOTOS").ci(),
    ours("f32-512-mbr-32k", Vfat, 512, "--fs fat32 --table mbr --cluster 32K --size 4G --label PHOTOS").ci(),
    ours("f32-512-gpt-4k", Vfat, 512, "--fs fat32 --table gpt --cluster 4K --size 1G").ci(),
    ours("f32-4k-none-64k", Vfat, 4096, "--fs fat32 --sector-size 4096 --cluster 64K --size 8G --label BIG").ci(),
    ours("f32-4k-mbr-4k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 4K --size 1G").ci(),
    ours("f32-4k-gpt-32k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table gpt --cluster 32K --size 4G").ci(),
    // FAT32, the rest of the product.
    ours("f32-512-none-32k", Vfat, 512, "--fs fat32 --cluster 32K --size 4G"),
    ours("f32-512-mbr-512", Vfat, 512, "--fs fat32 --table mbr --cluster 512 --size 256M"),
    ours("f32-512-gpt-32k", Vfat, 512, "--fs fat32 --table gpt --cluster 32K --size 4G"),
    ours("f32-4k-none-4k", Vfat, 4096, "--fs fat32 --sector-size 4096 --cluster 4K --size 1G"),
    ours("f32-4k-mbr-64k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 64K --size 8G"),
    ours("f32-4k-gpt-4k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table gpt --cluster 4K --size 1G"),
    // FAT32, extremes.
    ours("f32-512-none-auto-16g", Vfat, 512, "--fs fat32 --size 16G"),
    ours("f32-512-gpt-64k-64g", Vfat, 512, "--fs fat32 --table gpt --cluster 64K --size 64G"),
    // FAT16 and FAT12 (fixed root directory; no FSInfo).
    ours("f16-512-mbr-2k", Vfat, 512, "--fs fat16 --table mbr --cluster 2K --size 64M --label SMALL").ci(),
    ours("f12-512-none-4k", Vfat, 512, "--fs fat12 --cluster 4K --size 15M").ci(),
    ours("f16-4k-gpt-4k", Vfat, 4096, "--fs fat16 --sector-size 4096 --table gpt --cluster 4K --size 200M"),
    ours("f16-512-none-64k", Vfat, 512, "--fs fat16 --cluster 64K --size 4000M"),
    ours("f12-512-none-floppy", Vfat, 512, "--fs fat12 --size 1440K"),
    ours("f12-4k-mbr-4k", Vfat, 4096, "--fs fat12 --sector-size 4096 --table mbr --cluster 4K --size 12M"),
    // The SD Association layout (`--layout sd`): the factory 64 GB card of
    // exfatprogs PR #149, an SDSC card (partition moved off any power of
    // two so the data region lands on a boundary unit) and FAT32 on SDXC.
    ours("sd-512-exfat-64gb", Exfat, 512, "--layout sd --size 64037584896 --label CARD").ci(),
    ours("sd-512-fat16-1g", Vfat, 512, "--layout sd --size 1G --label CARD"),
    ours("sd-512-fat32-64gb", Vfat, 512, "--layout sd --fs fat32 --size 64037584896"),
    // Populated (`--rootdir`): the fresh volume lists exactly the source tree.
    ours("ex-512-none-4k-rootdir", Exfat, 512, "--fs exfat --cluster 4K --size 512M").populated().ci(),
    ours("f32-512-mbr-4k-rootdir", Vfat, 512, "--fs fat32 --table mbr --cluster 4K --size 1G").populated().ci(),
    ours("ex-4k-gpt-auto-rootdir", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --size auto").populated(),
    ours("f32-512-none-auto-rootdir", Vfat, 512, "--fs fat32 --size auto").populated(),
    ours("f16-512-none-2k-rootdir", Vfat, 512, "--fs fat16 --cluster 2K --size 100M").populated().ci(),
    ours("f12-512-mbr-4k-rootdir", Vfat, 512, "--fs fat12 --table mbr --cluster 4K --size 15M").populated(),
    // Filled to the last cluster (512 B clusters: below a page).
    ours("ex-512-none-4k-fill", Exfat, 512, "--fs exfat --cluster 4K --size 64M").fill().ci(),
    ours("f32-512-none-512-fill", Vfat, 512, "--fs fat32 --cluster 512 --size 64M").fill().ci(),
    ours("ex-512-none-512-fill", Exfat, 512, "--fs exfat --cluster 512 --size 64M").fill(),
    ours("ex-4k-gpt-32k-fill", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 32K --size 128M").fill(),
    ours("f32-4k-mbr-4k-fill", Vfat, 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 4K --size 300M").fill(),
    ours("f16-512-none-512-fill", Vfat, 512, "--fs fat16 --cluster 512 --size 16M").fill(),
    ours("f12-512-none-512-fill", Vfat, 512, "--fs fat12 --cluster 512 --size 2M").fill(),
    // Controls: the peers' images, judged against `mkfs-alloc info`.
    peer("ctl-mkfs.exfat", Exfat, 512, GIB, "mkfs.exfat", "-L CTRL").ci(),
    peer("ctl-mkfs.fat", Vfat, 512, GIB, "mkfs.fat", "-F 32 -n CTRL").ci(),
    peer("ctl-mkfs.exfat-128k", Exfat, 512, 8 * GIB, "mkfs.exfat", "-c 128K"),
    peer("ctl-mkfs.fat-4kn", Vfat, 4096, 8 * GIB, "mkfs.fat", "-F 32 -S 4096"),
    // Negative controls: must fail, with this finding.
    ours("neg-exfat-dirty", Exfat, 512, "--fs exfat --cluster 32K --size 256M")
        .broken(Fault::ExfatDirty, "not properly unmounted").ci(),
    ours("neg-exfat-checksum", Exfat, 512, "--fs exfat --cluster 32K --size 256M")
        .broken(Fault::ExfatBootChecksum, "Invalid boot checksum").ci(),
    ours("neg-fat32-fsinfo", Vfat, 512, "--fs fat32 --cluster 4K --size 1G")
        .broken(Fault::FatFsinfoFree, "FSInfo free count").ci(),
    ours("neg-rootdir-changed", Vfat, 512, "--fs fat32 --cluster 4K --size 512M").populated()
        .broken(Fault::SourceChanged, "--rootdir source").ci(),
];

/// Kernel log lines that are not about the volume: ignored in every step.
/// The guest's own cache drop, and what a slow (emulated, loaded) CPU makes
/// the timer code say.
const UNRELATED_KERNEL_LINES: &[&str] = &[
    "drop_caches: 3",
    "hrtimer: interrupt took",
    "clocksource",
    "tsc: Marking TSC unstable",
];

/// Options of `test-kernel`.
struct Options {
    all: bool,
    jobs: usize,
    only: Vec<String>,
    keep: bool,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        all: false,
        jobs: 2,
        only: Vec::new(),
        keep: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--all" => opts.all = true,
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
                    "unknown option {other:?}; valid: --all, --jobs N, --case NAME (repeatable), --keep"
                ))
            }
        }
    }
    Ok(opts)
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
    let opts = parse_options(args)?;
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

    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| {
            if opts.only.is_empty() {
                opts.all || c.ci
            } else {
                opts.only.iter().any(|o| o == c.name)
            }
        })
        .collect();
    if cases.is_empty() {
        return Err(format!("no case matches {:?}", opts.only));
    }
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
    let results: Vec<BatchResult> = std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .enumerate()
            .map(|(j, batch)| {
                let (guest, work) = (&guest, &work);
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
    });
    let boot_time = boot_start.elapsed();

    let mut failed = Vec::new();
    let mut table = Vec::new();
    for (batch, result) in batches.iter().zip(&results) {
        for image in batch {
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
            if !ok {
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
    eprintln!(
        "xtask: test-kernel finished in {:.0?} (tools, build and guest {:.0?}, boots {:.0?})",
        start.elapsed(),
        prep_time,
        boot_time
    );
    if opts.keep || !failed.is_empty() {
        eprintln!("xtask: images and consoles kept in {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
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

/// The accelerator: (name, QEMU arguments).
fn accel() -> (&'static str, &'static [&'static str]) {
    match std::env::var("XTASK_KERNEL_ACCEL").as_deref() {
        Ok("kvm") => ("KVM", &["-accel", "kvm", "-cpu", "host"]),
        _ => ("TCG", &["-accel", "tcg", "-cpu", "max"]),
    }
}

// --- the guest ---------------------------------------------------------------

/// A bootable guest.
struct Guest {
    version: String,
    kernel: PathBuf,
    initramfs: PathBuf,
}

/// Fetches the kernel (once) and writes the initramfs (every run: it is
/// quick, and always holds the current `kernel_init.sh`).
fn build_guest(dir: &Path) -> Result<Guest, String> {
    let version = kernel_version()?;
    let root = fetch_kernel(dir, &version)?;
    let kernel = root.join("boot").join(format!("vmlinuz-{version}"));
    if !kernel.is_file() {
        return Err(format!("{} is missing", kernel.display()));
    }
    let mut cpio = Cpio::default();
    for d in [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "mnt",
        "lib",
        "lib/modules",
    ] {
        cpio.add(d, 0o040_755, &[]);
    }
    // The console the kernel opens for PID 1, before devtmpfs is mounted.
    cpio.add_device("dev/console", 0o020_600, 5, 1);
    cpio.add("init", 0o100_755, INIT.as_bytes());
    cpio.add("listing.sh", 0o100_644, LISTING.as_bytes());
    let busybox = find_tool("busybox").ok_or("busybox is missing")?;
    let data = std::fs::read(&busybox).map_err(|e| format!("{}: {e}", busybox.display()))?;
    cpio.add("bin/busybox", 0o100_755, &data);
    let mut order = String::new();
    for module in module_files(&root, &version)? {
        let name = module
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("odd module path {}", module.display()))?
            .to_string();
        if !name.ends_with(".ko") {
            return Err(format!(
                "{name}: compressed modules are not supported (busybox insmod loads .ko)"
            ));
        }
        let data = std::fs::read(&module).map_err(|e| format!("{}: {e}", module.display()))?;
        cpio.add(&format!("lib/modules/{name}"), 0o100_644, &data);
        order.push_str(&name);
        order.push('\n');
    }
    cpio.add("modules.order", 0o100_644, order.as_bytes());
    let initramfs = dir.join("initramfs.cpio");
    std::fs::write(&initramfs, cpio.finish())
        .map_err(|e| format!("{}: {e}", initramfs.display()))?;
    eprintln!(
        "xtask: guest: Linux {version}, initramfs with modules {}",
        order.trim().replace('\n', " ")
    );
    Ok(Guest {
        version,
        kernel,
        initramfs,
    })
}

/// `$XTASK_KERNEL_VERSION`, else the version `linux-image-amd64` depends on.
fn kernel_version() -> Result<String, String> {
    if let Ok(v) = std::env::var("XTASK_KERNEL_VERSION") {
        return Ok(v);
    }
    for attempt in 0..2 {
        let out = Command::new("apt-cache")
            .args(["depends", "linux-image-amd64"])
            .output()
            .map_err(|e| format!("cannot run apt-cache: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let found = text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("Depends: linux-image-")
                .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        });
        if let Some(v) = found {
            return Ok(v.to_string());
        }
        if attempt == 0 && is_root() {
            run(Command::new("apt-get").arg("update"))?;
        }
    }
    Err("cannot tell which kernel linux-image-amd64 depends on (apt-cache depends)".into())
}

/// The unpacked kernel package in `dir/linux-VERSION` (fetched once).
fn fetch_kernel(dir: &Path, version: &str) -> Result<PathBuf, String> {
    let root = dir.join(format!("linux-{version}"));
    let done = root.join(".unpacked");
    if done.exists() {
        return Ok(root);
    }
    let _ = std::fs::remove_dir_all(&root);
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
    let package = format!("linux-image-{version}");
    run(Command::new("apt-get")
        .current_dir(&debs)
        .args(["download", &package]))?;
    let deb = std::fs::read_dir(&debs)
        .map_err(|e| format!("{}: {e}", debs.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{package}_")) && n.ends_with(".deb"))
        })
        .ok_or_else(|| format!("apt-get download left no {package}_*.deb"))?;
    run(Command::new("dpkg").arg("-x").arg(&deb).arg(&root))?;
    run(Command::new("depmod").arg("-b").arg(&root).arg(version))?;
    std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
    let _ = std::fs::remove_file(&deb);
    Ok(root)
}

/// The module files of [`MODULES`] and their dependencies, in load order.
fn module_files(root: &Path, version: &str) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = Vec::new();
    for module in MODULES {
        let out = Command::new("modprobe")
            .arg("-d")
            .arg(root)
            .args(["-S", version, "--show-depends", module])
            .output()
            .map_err(|e| format!("cannot run modprobe: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "modprobe --show-depends {module}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut words = line.split_whitespace();
            if words.next() == Some("insmod") {
                if let Some(path) = words.next().map(PathBuf::from) {
                    if !files.contains(&path) {
                        files.push(path);
                    }
                }
            }
        }
    }
    Ok(files)
}

/// A `newc` cpio archive (the initramfs format), built in memory.
#[derive(Default)]
struct Cpio {
    data: Vec<u8>,
    inode: u32,
}

impl Cpio {
    fn add(&mut self, name: &str, mode: u32, content: &[u8]) {
        self.entry(name, mode, content, (0, 0));
    }

    fn add_device(&mut self, name: &str, mode: u32, major: u32, minor: u32) {
        self.entry(name, mode, &[], (major, minor));
    }

    fn entry(&mut self, name: &str, mode: u32, content: &[u8], rdev: (u32, u32)) {
        self.inode += 1;
        let nlink = if mode & 0o040_000 != 0 { 2 } else { 1 };
        let fields = [
            self.inode,
            mode,
            0,
            0,
            nlink,
            0,
            u32::try_from(content.len()).unwrap_or(u32::MAX),
            0,
            0,
            rdev.0,
            rdev.1,
            u32::try_from(name.len() + 1).unwrap_or(u32::MAX),
            0,
        ];
        self.data.extend_from_slice(b"070701");
        for f in fields {
            self.data.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.data.extend_from_slice(name.as_bytes());
        self.data.push(0);
        self.pad();
        self.data.extend_from_slice(content);
        self.pad();
    }

    fn pad(&mut self) {
        while self.data.len() % 4 != 0 {
            self.data.push(0);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.data
    }
}

// --- the images ----------------------------------------------------------------

/// What mkfs-alloc says about a volume (`info --json`, and the format's
/// `--json` where we made the image).
struct Image<'a> {
    case: &'a Case,
    /// Short tag for the disk serial (`k03`).
    tag: String,
    path: PathBuf,
    /// From `info --json`: the volume.
    partition: u64,
    start: u64,
    size: u64,
    cluster_size: u64,
    cluster_count: u64,
    free_bytes: u64,
    /// From the format's `--json`: (cluster size, clusters, free bytes).
    format: Option<(u64, u64, u64)>,
    /// Populated: the listing digest and line count of the source tree.
    tree: Option<(String, u64)>,
}

/// The source tree of populated cases: 8.3 names in upper and lower case,
/// long, non-ASCII and 255-character names, a 300-entry directory, deep
/// nesting, an empty directory, sizes around cluster boundaries, 5 MiB.
fn write_source_tree(dir: &Path) -> Result<(), String> {
    let long = format!("{}.txt", "L".repeat(251));
    let mut files: Vec<(String, usize)> = [
        ("README", 100),
        ("readme.txt", 101),
        (".hidden", 3),
        ("Fotos/2024/IMG_0001.JPG", 70_000),
        ("Fotos/2024/img_0002.jpg", 4097),
        ("Fotos/2024/Urlaub am Meer.jpeg", 65_537),
        ("Dokumente/Größe-Übersicht.txt", 511),
        ("日本語/ファイル名.txt", 512),
        ("emoji-😀.txt", 513),
        ("a/b/c/d/e/f/g/h/deep.txt", 10),
        ("big.bin", 5 << 20),
    ]
    .iter()
    .map(|&(p, n)| (p.to_string(), n))
    .collect();
    for n in [0, 1, 4095, 4096, 4097, 32_769, (1 << 20) + 3] {
        files.push((format!("sizes/{n}"), n));
    }
    for i in 1..=300 {
        files.push((format!("many/entry {i:03} of the directory.txt"), 20));
    }
    files.push((long, 7));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("leer")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for (path, size) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let data: Vec<u8> = (0..size)
            .map(|_| {
                // xorshift64: reproducible bytes without a dependency.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The digest and line count of [`LISTING`] run in `dir` by busybox.
fn listing_digest(dir: &Path) -> Result<(String, u64), String> {
    let busybox = find_tool("busybox").ok_or("busybox is missing")?;
    let out = Command::new(&busybox)
        .args(["sh", "-c", LISTING])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run busybox sh: {e}"))?;
    if !out.status.success() {
        return Err(format!("listing {}: {}", dir.display(), out.status));
    }
    let list = dir.with_extension("list");
    std::fs::write(&list, &out.stdout).map_err(|e| format!("{}: {e}", list.display()))?;
    let sum = Command::new(&busybox)
        .args(["sha256sum"])
        .arg(&list)
        .output()
        .map_err(|e| format!("cannot run busybox sha256sum: {e}"))?;
    let digest = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .ok_or("busybox sha256sum printed nothing")?
        .to_string();
    let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
    Ok((digest, lines as u64))
}

fn json_u64(v: &Value, key: &str) -> Result<u64, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("no number {key:?} in {v}"))
}

/// Makes the image of `case`, reads it back with `info --json`, injects the
/// fault of a negative control.
fn prepare<'a>(case: &'a Case, index: usize, bin: &Path, work: &Path) -> Result<Image<'a>, String> {
    let path = work.join(format!("{}.img", case.name));
    let src = work.join(format!("{}.src", case.name));
    let mut rootdir = Vec::new();
    if case.populated {
        write_source_tree(&src)?;
        rootdir = vec!["--rootdir".into(), src.clone().into_os_string()];
    }
    let format = match case.make {
        Make::Ours(args) => {
            let out = Command::new(bin)
                .args(args.split_whitespace())
                .args(["--serial", "1234ABCD", "--json"])
                .args(&rootdir)
                .arg(&path)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{}: mkfs-alloc {args} failed ({}): {}",
                    case.name,
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let v: Value = serde_json::from_slice(&out.stdout)
                .map_err(|e| format!("{}: format --json: {e}", case.name))?;
            let cluster = json_u64(&v, "cluster_size")?;
            // usable_bytes is the free space before the --rootdir copy.
            let copied = v
                .get("rootdir")
                .map_or(Ok(0), |r| json_u64(r, "clusters"))?;
            Some((
                cluster,
                json_u64(&v, "cluster_count")?,
                json_u64(&v, "usable_bytes")? - copied * cluster,
            ))
        }
        Make::Peer {
            size,
            program,
            args,
        } => {
            File::create(&path)
                .and_then(|f| f.set_len(size))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            run(Command::new(program)
                .args(args.split_whitespace())
                .arg(&path))?;
            None
        }
    };
    let out = Command::new(bin)
        .args(["info", "--json"])
        .arg(&path)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let info: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{}: info --json: {e}", case.name))?;
    let volumes = info
        .get("volumes")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{}: info --json has no volumes", case.name))?;
    let [vol] = volumes.as_slice() else {
        return Err(format!(
            "{}: info found {} volumes, not 1",
            case.name,
            volumes.len()
        ));
    };
    let fs = vol.get("fs").and_then(Value::as_str).unwrap_or("");
    let fs_ok = match case.driver {
        Driver::Exfat => fs == "exfat",
        Driver::Vfat => fs.starts_with("fat"),
    };
    let sector = json_u64(vol, "sector_size")?;
    if !fs_ok || sector != u64::from(case.sector) {
        return Err(format!(
            "{}: info says {fs} with {sector}-byte sectors; the case says {} with {}",
            case.name,
            case.driver.name(),
            case.sector
        ));
    }
    if let Some((Fault::SourceChanged, _)) = case.fault {
        let readme = src.join("README");
        File::options()
            .append(true)
            .open(&readme)
            .and_then(|mut f| f.write_all(b"!"))
            .map_err(|e| format!("{}: {e}", readme.display()))?;
    }
    let tree = if case.populated {
        Some(listing_digest(&src)?)
    } else {
        None
    };
    let image = Image {
        case,
        tag: format!("k{index:02}"),
        partition: vol.get("partition").and_then(Value::as_u64).unwrap_or(0),
        start: json_u64(vol, "start")?,
        size: json_u64(vol, "size")?,
        cluster_size: json_u64(vol, "cluster_size")?,
        cluster_count: json_u64(vol, "cluster_count")?,
        free_bytes: json_u64(vol, "free_bytes")?,
        format,
        tree,
        path,
    };
    if let Some((fault, _)) = case.fault {
        inject(&image, fault).map_err(|e| format!("{}: {e}", image.path.display()))?;
    }
    Ok(image)
}

/// Damages a negative control's volume.
fn inject(image: &Image, fault: Fault) -> std::io::Result<()> {
    let mut f = File::options().read(true).write(true).open(&image.path)?;
    let mut patch = |offset: u64, change: &dyn Fn(&mut [u8])| -> std::io::Result<()> {
        let mut buf = [0u8; 4];
        f.seek(SeekFrom::Start(image.start + offset))?;
        f.read_exact(&mut buf)?;
        change(&mut buf);
        f.seek(SeekFrom::Start(image.start + offset))?;
        f.write_all(&buf)
    };
    match fault {
        Fault::ExfatDirty => patch(106, &|b| b[0] |= 0x02),
        Fault::ExfatBootChecksum => patch(200, &|b| b[0] ^= 0x55),
        Fault::SourceChanged => Ok(()), // the source, not the image: see prepare
        Fault::FatFsinfoFree => {
            let mut bpb = [0u8; 64];
            let mut r = File::open(&image.path)?;
            r.seek(SeekFrom::Start(image.start))?;
            r.read_exact(&mut bpb)?;
            let sector = u64::from(u16::from_le_bytes([bpb[11], bpb[12]]));
            let fsinfo = u64::from(u16::from_le_bytes([bpb[48], bpb[49]]));
            patch(fsinfo * sector + 488, &|b| {
                let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]).wrapping_sub(1000);
                b.copy_from_slice(&v.to_le_bytes());
            })
        }
    }
}

// --- the boots -----------------------------------------------------------------

/// What the guest reported about one case in one phase.
#[derive(Default)]
struct Seen {
    disk: String,
    statfs: BTreeMap<String, (u64, u64, u64)>,
    digest: BTreeMap<String, (String, u64)>,
    klog: Vec<(String, String)>,
    fails: Vec<String>,
    infos: Vec<String>,
    /// Fill mode: the file's size (and the cluster-sized appends it took).
    fill: Option<(u64, u64)>,
    time: Option<f64>,
}

/// The two boots of a batch.
#[derive(Default)]
struct BatchResult {
    /// Keyed by (phase, case tag).
    seen: BTreeMap<(String, String), Seen>,
    /// Boot-time kernel lines about disks or tables, by phase.
    boot_klog: Vec<(String, String)>,
    /// Phases that reached `KT END`.
    ended: Vec<String>,
    /// Guest uptime when /init started, by phase.
    booted: Vec<(String, f64)>,
    boots: Vec<(String, Duration)>,
    error: Option<String>,
}

impl BatchResult {
    /// The guest's notes on a case (both phases).
    fn notes(&self, tag: &str) -> Vec<String> {
        let mut notes = Vec::new();
        for ((_, t), seen) in &self.seen {
            if t == tag {
                for i in &seen.infos {
                    if !notes.contains(i) {
                        notes.push(i.clone());
                    }
                }
            }
        }
        notes
    }
}

/// Boots the batch twice (write, verify) and collects the reports.
fn run_batch(guest: &Guest, batch: &[&Image], dir: &Path) -> BatchResult {
    let mut result = BatchResult::default();
    if let Err(e) = std::fs::create_dir_all(dir) {
        result.error = Some(format!("{}: {e}", dir.display()));
        return result;
    }
    for phase in ["write", "verify"] {
        let started = Instant::now();
        let console = dir.join(format!("{phase}.console"));
        let outcome = boot(guest, batch, phase, &console);
        result.boots.push((phase.to_string(), started.elapsed()));
        let text = std::fs::read(console.with_extension("out"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        parse_console(&text, phase, &mut result);
        if let Err(e) = outcome {
            result.error = Some(format!("{phase} boot: {e}"));
            break;
        }
    }
    result
}

fn boot(guest: &Guest, batch: &[&Image], phase: &str, log: &Path) -> Result<(), String> {
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(accel().1)
        .args(["-m", "768", "-smp", "1", "-nodefaults", "-no-user-config"])
        .args(["-display", "none", "-no-reboot", "-serial", "stdio"])
        .arg("-kernel")
        .arg(&guest.kernel)
        .arg("-initrd")
        .arg(&guest.initramfs)
        .arg("-append")
        .arg(format!(
            "console=ttyS0 quiet loglevel=1 panic=-1 kt.phase={phase} kt.disks={}",
            batch.len()
        ));
    for (i, image) in batch.iter().enumerate() {
        let bs = image.case.sector;
        cmd.arg("-drive")
            .arg(format!(
                "file={},format=raw,if=none,id=d{i},cache=writeback",
                image.path.display()
            ))
            .arg("-device")
            .arg(format!(
                "virtio-blk-pci,drive=d{i},serial={}.{}.{}.{},logical_block_size={bs},physical_block_size={bs}",
                image.tag,
                image.case.driver.name(),
                image.partition,
                if image.case.fill { "fill" } else { "set" }
            ));
    }
    let limit = Duration::from_secs(120 + 180 * batch.len() as u64);
    let out = output_with_timeout(&mut cmd, limit, log)?;
    if !out.status.success() {
        return Err(format!(
            "qemu failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Reads the `KT` lines of a console log.
fn parse_console(text: &str, phase: &str, result: &mut BatchResult) {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let Some(rest) = line.strip_prefix("KT ") else {
            continue;
        };
        let (tag, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        if tag == "END" {
            result.ended.push(kind.to_string());
            continue;
        }
        if tag == "BOOTED" {
            result
                .booted
                .push((phase.to_string(), kind.parse().unwrap_or(0.0)));
            continue;
        }
        if tag == "-" {
            if let Some(l) = rest.strip_prefix("boot ") {
                result.boot_klog.push((phase.to_string(), l.to_string()));
            } else {
                result
                    .boot_klog
                    .push((phase.to_string(), format!("{kind} {rest}")));
            }
            continue;
        }
        let seen = result
            .seen
            .entry((phase.to_string(), tag.to_string()))
            .or_default();
        let words: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match kind {
            "DISK" => seen.disk = rest.to_string(),
            "STATFS" if words.len() == 4 => {
                seen.statfs
                    .insert(words[0].to_string(), (num(1), num(2), num(3)));
            }
            "DIGEST" if words.len() == 3 => {
                seen.digest
                    .insert(words[0].to_string(), (words[1].to_string(), num(2)));
            }
            "KLOG" => {
                let (step, l) = rest.split_once(' ').unwrap_or((rest, ""));
                seen.klog.push((step.to_string(), l.to_string()));
            }
            "FAIL" => seen.fails.push(rest.to_string()),
            "INFO" => seen.infos.push(rest.to_string()),
            "FILL" if words.len() == 2 => seen.fill = Some((num(0), num(1))),
            "TIME" => seen.time = rest.trim().parse().ok(),
            _ => seen.fails.push(format!("unreadable report: {line}")),
        }
    }
}

// --- the judgement ---------------------------------------------------------------

/// A boot-time line that every disk prints (its size, its queues, the
/// partitions found).
fn routine_boot_line(line: &str, disk: &str) -> bool {
    let text = line
        .split_once("] ")
        .filter(|(ts, _)| ts.starts_with('['))
        .map_or(line, |(_, t)| t);
    if text.starts_with("virtio_blk ")
        && (text.contains("logical blocks") || text.contains("default/read/poll queues"))
    {
        return true;
    }
    let mut words = text.split_whitespace();
    words.next() == Some(&format!("{disk}:")) && words.all(|w| w.starts_with(disk))
}

/// The findings about one case: an empty list is a pass.
fn judge(image: &Image, result: &BatchResult) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(e) = &result.error {
        f.push(format!("batch: {e}"));
    }
    let get = |phase: &str| result.seen.get(&(phase.to_string(), image.tag.clone()));
    let (Some(w), Some(v)) = (get("write"), get("verify")) else {
        f.push("the guest did not report on this case in both boots".into());
        return f;
    };
    for (phase, seen) in [("write", w), ("verify", v)] {
        if !result.ended.iter().any(|e| e == phase) {
            f.push(format!(
                "{phase}: the guest did not reach the end of the boot"
            ));
        }
        if seen.time.is_none() {
            f.push(format!("{phase}: the guest did not finish the case"));
        }
        for fail in &seen.fails {
            f.push(format!("{phase}: {fail}"));
        }
        for (step, line) in &seen.klog {
            if !UNRELATED_KERNEL_LINES.iter().any(|u| line.contains(u))
                && !exfat_end_of_heap_hint(image, line)
            {
                f.push(format!("{phase}: kernel during {step}: {line}"));
            }
        }
    }
    for (phase, line) in &result.boot_klog {
        let about_us = line.contains(&w.disk) && !w.disk.is_empty();
        let about_any = !line.contains("vd");
        if (about_us && !routine_boot_line(line, &w.disk)) || about_any {
            f.push(format!("{phase}: kernel at boot: {line}"));
        }
    }
    let statfs = |seen: &Seen, step: &str| seen.statfs.get(step).copied();
    let digest = |seen: &Seen, step: &str| seen.digest.get(step).cloned();
    // Every report a clean run makes (a failed step has said why already).
    if w.fails.is_empty() && v.fails.is_empty() {
        let fsinfo = image.case.driver == Driver::Vfat;
        let statfs_steps = [
            ("write", w, "fresh", true),
            ("write", w, "after-delete", true),
            ("write", w, "after-write", true),
            ("write", w, "remount", true),
            ("write", w, "fsinfo", fsinfo),
            ("verify", v, "cold", true),
            ("verify", v, "fsinfo", fsinfo),
        ];
        for (phase, seen, step, needed) in statfs_steps {
            if needed && statfs(seen, step).is_none() {
                f.push(format!("{phase}: no statfs at step {step}"));
            }
        }
        for (phase, seen, step) in [
            ("write", w, "fresh"),
            ("write", w, "written"),
            ("write", w, "remount"),
            ("verify", v, "cold"),
        ] {
            if digest(seen, step).is_none() {
                f.push(format!("{phase}: no tree listing at step {step}"));
            }
        }
    }
    // statfs of the fresh volume = what mkfs-alloc reported.
    if let Some((bsize, blocks, free)) = statfs(w, "fresh") {
        let mut expected = vec![(
            "info",
            image.cluster_size,
            image.cluster_count,
            image.free_bytes,
        )];
        if let Some((cs, count, usable)) = image.format {
            expected.push(("format", cs, count, usable));
        }
        for (src, cs, count, free_bytes) in expected {
            if (bsize, blocks, free * bsize) != (cs, count, free_bytes) {
                f.push(format!(
                    "statfs: cluster {bsize} B, {blocks} clusters, {free} free; mkfs-alloc {src}: cluster {cs} B, {count} clusters, {} free",
                    free_bytes / cs.max(1)
                ));
            }
        }
        if statfs(w, "after-delete").map(|s| s.2) != Some(free) {
            f.push(format!(
                "free clusters after writing and deleting 5 clusters: {:?}, fresh {free}",
                statfs(w, "after-delete")
            ));
        }
        if image.case.driver == Driver::Vfat {
            match statfs(w, "fsinfo") {
                Some((_, _, fsinfo)) if fsinfo == free => {}
                other => f.push(format!(
                    "FSInfo free count as the kernel reads it: {:?}, counted {free}",
                    other.map(|s| s.2)
                )),
            }
        }
    }
    match (digest(w, "fresh"), &image.tree) {
        (Some(got), Some(source)) if got != *source => f.push(format!(
            "the fresh volume lists {got:?}, the --rootdir source {source:?} (digest, lines)"
        )),
        (Some((_, lines)), None) if lines != 0 => {
            f.push(format!("the fresh root directory lists {lines} entries"));
        }
        _ => {}
    }
    // Fill: every cluster we reported free took data.
    if image.case.fill {
        match (w.fill, statfs(w, "fresh"), statfs(w, "after-write")) {
            (Some((bytes, _)), Some((bsize, _, free)), Some((_, _, left)))
                if bytes == free * bsize && left == 0 => {}
            (fill, fresh, full) => f.push(format!(
                "fill: file {:?} B, fresh free {:?} clusters of {:?} B, free when full {:?}",
                fill.map(|x| x.0),
                fresh.map(|x| x.2),
                fresh.map(|x| x.0),
                full.map(|x| x.2)
            )),
        }
    }
    // The tree and statfs read back after a remount and after a fresh boot.
    let written = statfs(w, "after-write");
    for (what, got) in [
        ("remount", statfs(w, "remount")),
        ("fresh boot", statfs(v, "cold")),
    ] {
        if written.is_some() && got != written {
            f.push(format!(
                "statfs after the {what} {got:?} != after writing {written:?}"
            ));
        }
    }
    let tree = digest(w, "written");
    for (what, got) in [
        ("remount", digest(w, "remount")),
        ("fresh boot", digest(v, "cold")),
    ] {
        if tree.is_some() && got != tree {
            f.push(format!(
                "tree after the {what} {got:?} != as written {tree:?}"
            ));
        }
    }
    if image.case.driver == Driver::Vfat {
        if let Some((_, _, cold)) = statfs(v, "cold") {
            if let Some((_, _, fsinfo)) = statfs(v, "fsinfo").filter(|s| s.2 != cold) {
                f.push(format!(
                    "FSInfo free count the kernel wrote back: {fsinfo}, counted {cold}"
                ));
            }
        }
    }
    f
}

/// Linux 6.1's exFAT logs `hint_cluster is invalid (N)` when a file that
/// ends in the volume's last cluster grows: the next cluster, N = cluster
/// count + 2, is past the heap, and the allocator starts over at cluster 2.
/// That is the normal case (later kernels log only other values), met when
/// a volume is filled; any other N is a finding.
fn exfat_end_of_heap_hint(image: &Image, line: &str) -> bool {
    image.case.driver == Driver::Exfat
        && line.contains(&format!(
            "hint_cluster is invalid ({})",
            image.cluster_count + 2
        ))
}

/// `fsck -n` of the volume on a read-only loop device: findings.
fn fsck(image: &Image) -> Vec<String> {
    let out = Command::new("losetup")
        .args(["-r", "-f", "--show", "-o"])
        .arg(image.start.to_string())
        .arg("--sizelimit")
        .arg(image.size.to_string())
        .arg(&image.path)
        .output();
    let loop_dev = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => {
            return vec![format!(
                "losetup: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )]
        }
        Err(e) => return vec![format!("cannot run losetup: {e}")],
    };
    let program = match image.case.driver {
        Driver::Exfat => "fsck.exfat",
        Driver::Vfat => "fsck.fat",
    };
    let out = Command::new(program).args(["-n", &loop_dev]).output();
    let _ = Command::new("losetup").args(["-d", &loop_dev]).status();
    match out {
        Err(e) => vec![format!("cannot run {program}: {e}")],
        Ok(o) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            // fsck.exfat 1.2 exits 0 after some errors: the text counts too.
            if o.status.success() && !text.to_lowercase().contains("error") {
                Vec::new()
            } else {
                vec![format!(
                    "host {program} -n ({}): {}",
                    o.status,
                    text.trim().replace('\n', " | ")
                )]
            }
        }
    }
}
