//! EFI System Partitions boot: `mkfs-alloc --esp` makes a FAT12, FAT16 or
//! FAT32 ESP behind an MBR (type 0xEF) or a GPT (type
//! C12A7328-F81F-11D2-BA4B-00A0C93EC93B); mtools copies in
//! `\EFI\BOOT\BOOTX64.EFI`, a GRUB image made by `grub-mkstandalone -O
//! x86_64-efi` whose embedded config prints a marker on the serial console and
//! halts; OVMF (the edk2 firmware, Debian `ovmf`) in QEMU must find the ESP,
//! load the file and run it: the marker on the serial console proves the
//! firmware's FAT driver read our file system. Plus one GPT FAT32 ESP with
//! 4096-byte sectors on a 4Kn virtio disk.
//!
//! QEMU runs with TCG (`-accel tcg`): each boot takes 30-60 s of CPU; the
//! seven cases run in parallel as separate tests (about 2-3 minutes on two
//! cores).

use mkfs_alloc_tests::checks::mtools;
use mkfs_alloc_tests::{mkfs_alloc, require_tool, run, MkfsJson, TempDir};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the boot loader prints; nothing else on the console contains it.
const MARKER: &str = "MKFS-ALLOC-ESP-BOOT-OK";

/// The firmware image (Debian `ovmf`).
const OVMF: &str = "/usr/share/ovmf/OVMF.fd";

/// A boot taking longer than this has hung.
const BOOT_TIMEOUT: Duration = Duration::from_secs(300);

/// Builds `BOOTX64.EFI` in `dir`: GRUB with an embedded config that prints
/// the marker on the first serial port and halts (powers off).
fn boot_loader(dir: &Path) -> std::path::PathBuf {
    let cfg = dir.join("grub.cfg");
    std::fs::write(
        &cfg,
        format!("serial --unit=0 --speed=115200\nterminal_output serial\necho {MARKER}\nhalt\n"),
    )
    .expect("write grub.cfg");
    let efi = dir.join("BOOTX64.EFI");
    run(
        require_tool("grub-mkstandalone"),
        &[
            "-O",
            "x86_64-efi",
            "-o",
            &efi.to_string_lossy(),
            "--modules=serial terminal echo halt",
            "--install-modules=serial terminal echo halt normal configfile",
            "--locales=",
            "--themes=",
            "--fonts=",
            &format!("boot/grub/grub.cfg={}", cfg.to_string_lossy()),
        ],
    )
    .assert_success();
    efi
}

/// Runs QEMU (TCG) with OVMF on `img` until it powers off; returns the
/// serial console output.
fn boot(img: &Path, sector: u32) -> (String, Duration) {
    let ovmf = require_tool(OVMF);
    let drive = format!("file={},format=raw,if=none,id=d0", img.to_string_lossy());
    let device = if sector == 4096 {
        "virtio-blk-pci,drive=d0,logical_block_size=4096,physical_block_size=4096"
    } else {
        "virtio-blk-pci,drive=d0"
    };
    let started = Instant::now();
    let mut child = Command::new(require_tool("qemu-system-x86_64"))
        .args(["-accel", "tcg", "-m", "256", "-bios"])
        .arg(&ovmf)
        .args(["-drive", &drive, "-device", device])
        .args([
            "-serial",
            "stdio",
            "-display",
            "none",
            "-no-reboot",
            "-net",
            "none",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qemu-system-x86_64");
    let mut out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    loop {
        match child.try_wait().expect("wait for qemu") {
            Some(_) => break,
            None if started.elapsed() > BOOT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            None => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    let console = String::from_utf8_lossy(&reader.join().expect("reader")).into_owned();
    (console, started.elapsed())
}

fn case(fs: &str, table: &str, size: &str, sector: u32, want_fs: &str) {
    let tmp = TempDir::new(&format!("esp-{fs}-{table}-{sector}"));
    let img = tmp.join("esp.img");
    let img_s = img.to_string_lossy().into_owned();
    let sector_s = sector.to_string();
    let out = mkfs_alloc(&[
        "--esp",
        "--fs",
        fs,
        "--table",
        table,
        "--size",
        size,
        "--sector-size",
        &sector_s,
        "--label",
        "ESP",
        "--serial",
        "E5B0E5B0",
        "--json",
        "-q",
        &img_s,
    ]);
    out.assert_success();
    let json = MkfsJson::parse(&out);
    assert_eq!(json.str("fs"), want_fs);
    let off = json.u64("partition_offset");

    // The table marks the partition as an ESP.
    if table == "mbr" {
        let sf = run(require_tool("sfdisk"), &["--json", &img_s]);
        sf.assert_success();
        assert!(sf.stdout.contains("\"type\": \"ef\""), "MBR type:\n{sf}");
    } else if sector == 512 {
        let sg = run(require_tool("sgdisk"), &["-i", "1", &img_s]);
        sg.assert_success();
        assert!(
            sg.stdout
                .contains("C12A7328-F81F-11D2-BA4B-00A0C93EC93B (EFI system partition)"),
            "GPT type:\n{sg}"
        );
    }

    // \EFI\BOOT\BOOTX64.EFI through mtools, at the partition's offset.
    let efi = boot_loader(&tmp.subdir("grub"));
    let vol = format!("{img_s}@@{off}");
    mtools("mmd", Path::new(&vol), &["::/EFI", "::/EFI/BOOT"]).assert_success();
    mtools(
        "mcopy",
        Path::new(&vol),
        &[&efi.to_string_lossy(), "::/EFI/BOOT/BOOTX64.EFI"],
    )
    .assert_success();
    let len = json.u64("volume_bytes");
    mkfs_alloc_tests::check::with_volume(&img, off, len, |v| {
        let (clean, out) =
            mkfs_alloc_tests::check::fsck_verdict(mkfs_alloc_tests::check::Fsck::Fat, v);
        assert!(clean, "fsck.fat:\n{out}");
    });

    let (console, took) = boot(&img, sector);
    eprintln!(
        "esp {want_fs} {table} {sector}: OVMF booted in {:.1} s",
        took.as_secs_f64()
    );
    assert!(
        console.contains(MARKER),
        "OVMF did not run \\EFI\\BOOT\\BOOTX64.EFI from the {want_fs} ESP ({table}, {sector}-byte sectors) within {} s; serial console:\n{console}",
        BOOT_TIMEOUT.as_secs()
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat12_mbr() {
    case("fat12", "mbr", "8M", 512, "fat12");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat12_gpt() {
    case("fat12", "gpt", "8M", 512, "fat12");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat16_mbr() {
    case("fat16", "mbr", "64M", 512, "fat16");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat16_gpt() {
    case("fat16", "gpt", "64M", 512, "fat16");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_mbr() {
    case("fat32", "mbr", "300M", 512, "fat32");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_gpt() {
    // --fs fat: the width the size allows (FAT32 at 300 MiB).
    case("fat", "gpt", "300M", 512, "fat32");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_gpt_4k_sectors() {
    case("fat32", "gpt", "300M", 4096, "fat32");
}
