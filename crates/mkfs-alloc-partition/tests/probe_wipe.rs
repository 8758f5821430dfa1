//! `probe_signatures` and `wipe_for_table` against images made by `sgdisk`
//! and by this crate, cross-checked with `wipefs -n` and `blkid -p`.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::assert_sgdisk_clean;
use mkfs_alloc_blockio::{BlockIo, ImageFile, MemDisk};
use mkfs_alloc_partition::{
    plan_table, probe_signatures, wipe_for_table, write_table, FsKind, Signature, TableIds,
    TableKind, TableOptions,
};
use mkfs_alloc_testsupport::{tool as run, tool_ok as run_ok, TempDir};

const MIB: u64 = 1 << 20;
const SIZE: u64 = 64 * MIB;

fn kinds(sigs: &[Signature]) -> Vec<(u64, &str)> {
    sigs.iter().map(|s| (s.offset, s.kind.id())).collect()
}

/// Offsets and types `wipefs -n --json` reports.
fn wipefs(img: &str) -> Vec<(u64, String)> {
    let out = run_ok("wipefs", &["-n", "--json", img]);
    if out.trim().is_empty() {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut list: Vec<(u64, String)> = v["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let off = s["offset"].as_str().unwrap().trim_start_matches("0x");
            (
                u64::from_str_radix(off, 16).unwrap(),
                s["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    list.sort();
    list
}

/// `blkid -p IMG` output (exit status 2 means "nothing found").
fn blkid(img: &str) -> String {
    let out = run("blkid", &["-p", img]);
    assert!(matches!(out.code, Some(0 | 2)), "blkid -p {img}:\n{out}");
    out.stdout
}

/// Replaces the table on `img` by an MBR the way the CLI does: wipe, write.
fn wipe_and_write(img: &std::path::Path, kind: TableKind, bs: u32) {
    let plan = plan_table(
        &TableOptions {
            ids: TableIds::Seeded(9),
            ..TableOptions::new(kind, FsKind::Exfat)
        },
        SIZE,
        bs,
    )
    .unwrap();
    let mut dev = ImageFile::open(img, bs).unwrap();
    wipe_for_table(&plan, &[], &mut dev).unwrap();
    write_table(&plan, &mut dev).unwrap();
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sgdisk_gpt_found_then_replaced_by_mbr() {
    let dir = TempDir::new("probe-sgdisk");
    let img = dir.join("disk.img");
    let img_s = img.to_str().unwrap();
    drop(ImageFile::create(&img, SIZE, 512).unwrap());
    // An old GPT from sgdisk, and an ext superblock magic in its partition.
    run_ok(
        "sgdisk",
        &["-o", "-n", "1:2048:0", "-t", "1:0700", "-c", "1:OLD", img_s],
    );
    {
        let mut dev = ImageFile::open(&img, 512).unwrap();
        let mut sb = vec![0u8; 1024];
        sb[56] = 0x53;
        sb[57] = 0xEF;
        dev.write_blocks(2048 + 2, &sb).unwrap();
        let sigs = probe_signatures(&mut dev).unwrap();
        assert_eq!(
            kinds(&sigs),
            [
                (0, "pmbr"),
                (512, "gpt"),
                (MIB, "ext2"),
                (SIZE - 512, "gpt-backup"),
            ],
            "{sigs:#?}"
        );
        assert!(sigs[1].detail.contains("header CRC ok"), "{sigs:#?}");
        assert!(sigs[3].detail.contains("header CRC ok"), "{sigs:#?}");
        assert!(
            sigs[2].detail.contains("GPT partition 1 \"OLD\""),
            "{sigs:#?}"
        );
    }
    // wipefs sees the same tables at the same offsets (PMBR at its 55 AA).
    assert_eq!(
        wipefs(img_s),
        [
            (0x1FE, "PMBR".to_string()),
            (512, "gpt".to_string()),
            (SIZE - 512, "gpt".to_string()),
        ]
    );

    wipe_and_write(&img, TableKind::Mbr, 512);
    let mut dev = ImageFile::open(&img, 512).unwrap();
    let sigs = probe_signatures(&mut dev).unwrap();
    assert_eq!(kinds(&sigs), [(0, "mbr")], "{sigs:#?}");
    assert!(sigs[0].detail.contains("type 0x07, LBA 2048"), "{sigs:#?}");
    assert_eq!(wipefs(img_s), [(0x1FE, "dos".to_string())]);
    let b = blkid(img_s);
    assert!(b.contains("PTTYPE=\"dos\""), "{b}");
    assert!(!b.contains("gpt") && !b.contains("PMBR"), "{b}");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn old_4096_gpt_on_a_512_medium_is_wiped() {
    let dir = TempDir::new("probe-4k");
    let img = dir.join("disk.img");
    let img_s = img.to_str().unwrap();
    // A GPT laid out for 4096-byte sectors...
    {
        let plan = plan_table(
            &TableOptions::new(TableKind::Gpt, FsKind::Exfat),
            SIZE,
            4096,
        )
        .unwrap();
        let mut dev = ImageFile::create(&img, SIZE, 4096).unwrap();
        write_table(&plan, &mut dev).unwrap();
    }
    // ...seen on a 512-byte medium.
    let mut dev = ImageFile::open(&img, 512).unwrap();
    let sigs = probe_signatures(&mut dev).unwrap();
    assert_eq!(
        kinds(&sigs),
        [(0, "pmbr"), (4096, "gpt"), (SIZE - 4096, "gpt-backup")],
        "{sigs:#?}"
    );
    assert!(sigs[2].detail.contains("4096-byte sectors"), "{sigs:#?}");
    drop(dev);

    wipe_and_write(&img, TableKind::Gpt, 512);
    let mut dev = ImageFile::open(&img, 512).unwrap();
    let sigs = probe_signatures(&mut dev).unwrap();
    assert_eq!(
        kinds(&sigs),
        [(0, "pmbr"), (512, "gpt"), (SIZE - 512, "gpt-backup")],
        "{sigs:#?}"
    );
    assert_sgdisk_clean(img_s);
    assert_eq!(
        wipefs(img_s),
        [
            (0x1FE, "PMBR".to_string()),
            (512, "gpt".to_string()),
            (SIZE - 512, "gpt".to_string()),
        ]
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn superfloppy_exfat_replaced_by_mbr() {
    let dir = TempDir::new("probe-superfloppy");
    let img = dir.join("disk.img");
    let img_s = img.to_str().unwrap();
    {
        let mut dev = ImageFile::create(&img, SIZE, 512).unwrap();
        let mut boot = vec![0u8; 512];
        boot[..3].copy_from_slice(&[0xEB, 0x76, 0x90]);
        boot[3..11].copy_from_slice(b"EXFAT   ");
        boot[108] = 9;
        boot[510..].copy_from_slice(&[0x55, 0xAA]);
        dev.write_blocks(0, &boot).unwrap();
        let sigs = probe_signatures(&mut dev).unwrap();
        // A boot sector is not reported as an MBR.
        assert_eq!(kinds(&sigs), [(0, "exfat")], "{sigs:#?}");
    }
    wipe_and_write(&img, TableKind::Mbr, 512);
    let mut dev = ImageFile::open(&img, 512).unwrap();
    let sigs = probe_signatures(&mut dev).unwrap();
    assert_eq!(kinds(&sigs), [(0, "mbr")], "{sigs:#?}");
    let b = blkid(img_s);
    assert!(b.contains("PTTYPE=\"dos\"") && !b.contains("exfat"), "{b}");
}

#[test]
fn fat_boot_sector_kinds() {
    // FAT32 BPB (fatgen103): 512 bytes/sector, 8 sectors/cluster, 32 reserved, 2 FATs.
    let mut d = MemDisk::new(512, 2 * MIB / 512).unwrap();
    let mut bs = vec![0u8; 512];
    bs[..3].copy_from_slice(&[0xEB, 0x58, 0x90]);
    bs[11..13].copy_from_slice(&512u16.to_le_bytes());
    bs[13] = 8;
    bs[14..16].copy_from_slice(&32u16.to_le_bytes());
    bs[16] = 2;
    bs[21] = 0xF8; // media: F0 or F8..FF, as the Linux driver requires
    bs[32..36].copy_from_slice(&4096u32.to_le_bytes());
    bs[36..40].copy_from_slice(&8u32.to_le_bytes());
    bs[71..82].copy_from_slice(b"MYLABEL    ");
    bs[510..].copy_from_slice(&[0x55, 0xAA]);
    d.write_blocks(0, &bs).unwrap();
    let sigs = probe_signatures(&mut d).unwrap();
    assert_eq!(kinds(&sigs), [(0, "fat32")], "{sigs:#?}");
    assert!(sigs[0].detail.contains("\"MYLABEL\""), "{sigs:#?}");
    // FAT12: a FAT16-style BPB with few clusters.
    bs[17..19].copy_from_slice(&512u16.to_le_bytes());
    bs[19..21].copy_from_slice(&4096u16.to_le_bytes());
    bs[22..24].copy_from_slice(&2u16.to_le_bytes());
    d.write_blocks(0, &bs).unwrap();
    assert_eq!(kinds(&probe_signatures(&mut d).unwrap()), [(0, "fat12")]);
    // An empty disk has no signatures.
    let mut z = MemDisk::new(4096, 16).unwrap();
    assert!(probe_signatures(&mut z).unwrap().is_empty());
}
