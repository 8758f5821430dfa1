//! systemd-repart 252: for each new partition with `Format=` it attaches a
//! loop device over the partition, takes `flock(LOCK_EX)` on it and runs
//! `mkfs.vfat -i SERIAL -n LABEL -F 32 /dev/loopN` or `mkfs.exfat
//! /dev/loopN` (found on `PATH`) under that lock, then writes the GPT. Into
//! an image file (`--empty=create --size=auto`) and onto a loop device
//! (`--empty=force`, which repart locks too). A pinned `--seed` gives both
//! runs the same table and serial.
//!
//! Not covered: `CopyFiles=` into a vfat partition, which repart 252 does
//! by mounting the new file system (the kernel's vfat driver; this
//! machine's kernel has none), and `--offline=` (from systemd 254).

use super::*;
use mkfs_alloc_tests::{fill_file, test_data, LoopDevice, MIB};
use serde_json::Value;

/// An ESP (vfat, label ESP) and a data partition (exfat; repart 252 passes
/// no label to mkfs.exfat).
const DEFINITIONS: &[(&str, &str)] = &[
    (
        "10-esp.conf",
        "[Partition]\nType=esp\nFormat=vfat\nLabel=ESP\nSizeMinBytes=64M\nSizeMaxBytes=64M\n",
    ),
    (
        "20-data.conf",
        "[Partition]\nType=linux-generic\nFormat=exfat\nLabel=data\n\
         SizeMinBytes=40M\nSizeMaxBytes=40M\n",
    ),
];

const SEED: &str = "--seed=0c8e3a7c-1c2b-4a5e-9e1f-2b3c4d5e6f70";

fn definitions(tmp: &TempDir) -> String {
    let dir = tmp.subdir("repart.d");
    for (name, text) in DEFINITIONS {
        std::fs::write(dir.join(name), text).expect("write a definition");
    }
    format!("--definitions={}", dir.display())
}

/// The GPT's partitions as (start, size, type, uuid, name), from `sfdisk -J`.
fn partitions(disk: &Path) -> Vec<(u64, u64, String, String, String)> {
    let out = tool("sfdisk", &["-J", &s(disk)]);
    out.assert_success();
    let doc: Value = serde_json::from_str(&out.stdout).expect("sfdisk -J is JSON");
    let parts = doc["partitiontable"]["partitions"].as_array().cloned();
    parts
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let text = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            let num = |k: &str| p[k].as_u64().unwrap_or_default();
            (
                num("start"),
                num("size"),
                text("type"),
                text("uuid"),
                text("name"),
            )
        })
        .collect()
}

/// What independent tools read from one disk image repart built.
struct Disk {
    table: Vec<(u64, u64, String, String, String)>,
    esp: BTreeMap<String, String>,
    data: BTreeMap<String, String>,
}

/// Reads `disk` (512-byte sectors): two partitions, the ESP a clean FAT32
/// that takes and returns files through mtools, the data partition a clean
/// exFAT.
fn read_disk(disk: &Path, tmp: &TempDir, tag: &str) -> Disk {
    let table = partitions(disk);
    assert_eq!(table.len(), 2, "{tag}: {table:?}");
    let esp = extract(
        disk,
        table[0].0 * 512,
        table[0].1 * 512,
        &tmp.join(&format!("{tag}-esp.img")),
    );
    let data = extract(
        disk,
        table[1].0 * 512,
        table[1].1 * 512,
        &tmp.join(&format!("{tag}-data.img")),
    );
    assert_fsck_clean(&esp, false);
    assert_fsck_clean(&data, true);
    let efi = tmp.join("BOOTX64.EFI");
    std::fs::write(&efi, test_data(300_001, 7)).expect("write the file");
    tool("mmd", &["-i", &s(&esp), "::/EFI", "::/EFI/BOOT"]).assert_success();
    tool("mcopy", &["-i", &s(&esp), &s(&efi), "::/EFI/BOOT/"]).assert_success();
    assert_file(&esp, "::/EFI/BOOT/BOOTX64.EFI", &efi, tmp);
    assert_fsck_clean(&esp, false);
    Disk {
        table,
        esp: blkid(&esp),
        data: blkid(&data),
    }
}

/// Ours must build what the real tools built: the same table, file systems
/// of the same type, FAT width, label and serial.
#[track_caller]
fn assert_same_disk(real: &Disk, ours: &Disk) {
    assert_eq!(ours.table, real.table, "the partition tables differ");
    assert_same_blkid(
        "ESP",
        &real.esp,
        &ours.esp,
        &["TYPE", "VERSION", "LABEL", "LABEL_FATBOOT", "UUID"],
    );
    assert_eq!(real.esp.get("VERSION").map(String::as_str), Some("FAT32"));
    assert_same_blkid("data partition", &real.data, &ours.data, &["TYPE", "LABEL"]);
    assert_eq!(real.data.get("TYPE").map(String::as_str), Some("exfat"));
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn systemd_repart_into_an_image_file_with_our_mkfs() {
    mkfs_alloc_tests::require_root();
    let repart = require_tool("systemd-repart");
    require_tool("sfdisk");
    let links = Links::new();
    let tmp = TempDir::new("repart-image");
    let defs = definitions(&tmp);
    let mut disks = Vec::new();
    for mkfs in Mkfs::BOTH {
        let img = tmp.join(&format!("{}.img", mkfs.tag()));
        let run = links.run(
            mkfs,
            &repart,
            &[
                &defs,
                "--empty=create",
                "--size=auto",
                "--dry-run=no",
                "--pretty=no",
                SEED,
                &s(&img),
            ],
        );
        assert!(
            run.success(),
            "systemd-repart with the {} mkfs:\n{run}",
            mkfs.tag()
        );
        disks.push(read_disk(&img, &tmp, mkfs.tag()));
    }
    assert_same_disk(&disks[0], &disks[1]);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn systemd_repart_on_a_loop_device_runs_our_mkfs_under_its_lock() {
    mkfs_alloc_tests::require_root();
    let repart = require_tool("systemd-repart");
    require_tool("sfdisk");
    let links = Links::new();
    let tmp = TempDir::new("repart-loop");
    let defs = definitions(&tmp);
    let mut disks = Vec::new();
    for mkfs in Mkfs::BOTH {
        let img = tmp.join(&format!("{}.img", mkfs.tag()));
        fill_file(&img, 160 * MIB, 0);
        let lo = LoopDevice::attach(&img);
        let run = links.run(
            mkfs,
            &repart,
            &[
                &defs,
                "--empty=force",
                "--dry-run=no",
                "--pretty=no",
                SEED,
                lo.path_str(),
            ],
        );
        assert!(
            run.success(),
            "systemd-repart with the {} mkfs:\n{run}",
            mkfs.tag()
        );
        lo.flush();
        drop(lo);
        disks.push(read_disk(&img, &tmp, mkfs.tag()));
    }
    assert_same_disk(&disks[0], &disks[1]);
}
