//! Tables written by this crate, checked with the real tools: `sgdisk -v`,
//! `sfdisk --json`, `fdisk -l`; 4096-byte sectors through a loop device
//! (`losetup --sector-size 4096`). A missing tool fails the test.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{assert_sgdisk_clean, sfdisk_json};
use mkfs_alloc_blockio::{BlockIo, ImageFile, MemDisk};
use mkfs_alloc_partition::{
    plan_table, wipe_for_table, write_table, FsKind, Guid, TableIds, TableKind, TableOptions,
    TablePlan,
};
use mkfs_alloc_testsupport::{tool_ok as run_ok, LoopDevice, TempDir};

const MIB: u64 = 1 << 20;
const TIB: u64 = 1 << 40;

fn options(kind: TableKind, fs: FsKind, name: &str, seed: u64) -> TableOptions {
    TableOptions {
        name: name.into(),
        ids: TableIds::Seeded(seed),
        ..TableOptions::new(kind, fs)
    }
}

/// Creates a sparse image, wipes it and writes the table of `opts`.
fn make_image(path: &std::path::Path, size: u64, bs: u32, opts: &TableOptions) -> TablePlan {
    let plan = plan_table(opts, size, bs).unwrap();
    let mut img = ImageFile::create(path, size, bs).unwrap();
    wipe_for_table(&plan, &[], &mut img).unwrap();
    write_table(&plan, &mut img).unwrap();
    plan
}

/// True if some line of `fdisk -l` shows the partition as `start end sectors`
/// followed by `type_name`.
fn fdisk_has_partition(listing: &str, plan: &TablePlan, type_name: &str) -> bool {
    let start = plan.partition_start_lba();
    let sectors = plan.partition_blocks();
    let want = [
        start.to_string(),
        (start + sectors - 1).to_string(),
        sectors.to_string(),
    ];
    listing.lines().any(|line| {
        let t: Vec<&str> = line.split_whitespace().collect();
        t.len() > 4 && t[1..4] == want && line.contains(type_name)
    })
}

fn check_gpt(target: &str, plan: &TablePlan, name: &str) {
    assert_sgdisk_clean(target);

    let t = sfdisk_json(target);
    assert_eq!(t["label"], "gpt", "{t}");
    assert_eq!(t["id"], plan.gpt().unwrap().disk_guid().to_string(), "{t}");
    assert_eq!(t["sectorsize"], u64::from(plan.block_size()), "{t}");
    assert_eq!(t["firstlba"], plan.gpt().unwrap().first_usable_lba(), "{t}");
    assert_eq!(t["lastlba"], plan.gpt().unwrap().last_usable_lba(), "{t}");
    let parts = t["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{t}");
    let p = &parts[0];
    assert_eq!(p["start"], plan.partition_start_lba(), "{t}");
    assert_eq!(p["size"], plan.partition_blocks(), "{t}");
    assert_eq!(p["type"], "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "{t}");
    assert_eq!(
        p["uuid"],
        plan.gpt().unwrap().partition_guid().to_string(),
        "{t}"
    );
    if name.is_empty() {
        let n = p.get("name").and_then(|n| n.as_str()).unwrap_or("");
        assert_eq!(n, "", "{t}");
    } else {
        assert_eq!(p["name"], name, "{t}");
    }

    let listing = run_ok("fdisk", &["-l", target]);
    assert!(listing.contains("Disklabel type: gpt"), "{listing}");
    let id = format!("Disk identifier: {}", plan.gpt().unwrap().disk_guid());
    assert!(listing.contains(&id), "{listing}");
    let ss = format!(
        "Sector size (logical/physical): {} bytes",
        plan.block_size()
    );
    assert!(listing.contains(&ss), "{listing}");
    assert!(
        fdisk_has_partition(&listing, plan, "Microsoft basic data"),
        "{listing}"
    );
}

fn check_mbr(target: &str, plan: &TablePlan) {
    let t = sfdisk_json(target);
    assert_eq!(t["label"], "dos", "{t}");
    let id = format!("0x{:08x}", plan.mbr().unwrap().disk_signature());
    assert_eq!(t["id"], id, "{t}");
    assert_eq!(t["sectorsize"], u64::from(plan.block_size()), "{t}");
    let parts = t["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{t}");
    let p = &parts[0];
    assert_eq!(p["start"], plan.partition_start_lba(), "{t}");
    assert_eq!(p["size"], plan.partition_blocks(), "{t}");
    assert_eq!(
        p["type"],
        format!("{:x}", plan.mbr().unwrap().partition_type()),
        "{t}"
    );

    let listing = run_ok("fdisk", &["-l", target]);
    assert!(listing.contains("Disklabel type: dos"), "{listing}");
    assert!(
        listing.contains(&format!("Disk identifier: {id}")),
        "{listing}"
    );
    let type_name = match plan.mbr().unwrap().partition_type() {
        0x0C => "W95 FAT32 (LBA)",
        _ => "HPFS/NTFS/exFAT",
    };
    assert!(fdisk_has_partition(&listing, plan, type_name), "{listing}");
}

/// Writes to an image, then checks the image (512) or a loop device (4096).
fn write_and_check(kind: TableKind, fs: FsKind, bs: u32, size: u64, name: &str, seed: u64) {
    let dir = TempDir::new(&format!("{kind:?}-{bs}-{size}-{seed}"));
    let img = dir.join("disk.img");
    let plan = make_image(&img, size, bs, &options(kind, fs, name, seed));
    assert_eq!(plan.partition_start() % plan.align(), 0);
    let loop_dev;
    let target = if bs == 512 {
        img.to_str().unwrap()
    } else {
        loop_dev = LoopDevice::attach_sector(&img, bs);
        loop_dev.path_str()
    };
    match kind {
        TableKind::Gpt => check_gpt(target, &plan, name),
        TableKind::Mbr => check_mbr(target, &plan),
        TableKind::None => unreachable!(),
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn gpt_512_small() {
    write_and_check(TableKind::Gpt, FsKind::Exfat, 512, 64 * MIB, "MYDATA", 1);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn gpt_512_odd_size_and_unicode_name() {
    // Not a multiple of 1 MiB; the name is at the 36-unit limit.
    let name = "Données-été-ÄÖÜ-0123456789abcdefghi";
    assert_eq!(name.encode_utf16().count(), 35);
    write_and_check(
        TableKind::Gpt,
        FsKind::Fat32,
        512,
        100 * MIB + 7 * 512,
        name,
        2,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn gpt_512_three_tib_sparse() {
    write_and_check(TableKind::Gpt, FsKind::Exfat, 512, 3 * TIB, "BIG", 3);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn gpt_4096_loop() {
    write_and_check(TableKind::Gpt, FsKind::Exfat, 4096, 64 * MIB, "FOURK", 4);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn gpt_4096_loop_eight_tib_sparse() {
    write_and_check(TableKind::Gpt, FsKind::Exfat, 4096, 8 * TIB, "", 5);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mbr_512_fat32() {
    write_and_check(TableKind::Mbr, FsKind::Fat32, 512, 64 * MIB, "", 6);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mbr_512_exfat_at_the_2tib_limit() {
    // Exactly 2^32 sectors: the largest medium an MBR describes at 512 bytes.
    write_and_check(TableKind::Mbr, FsKind::Exfat, 512, 2 * TIB, "", 7);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mbr_4096_loop() {
    write_and_check(TableKind::Mbr, FsKind::Exfat, 4096, 64 * MIB, "", 8);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mbr_4096_loop_beyond_2tib() {
    // 4096-byte sectors let MBR reach 16 TiB.
    write_and_check(TableKind::Mbr, FsKind::Fat32, 4096, 4 * TIB, "", 9);
}

#[test]
fn output_is_pinned_by_the_seed() {
    for kind in [TableKind::Mbr, TableKind::Gpt] {
        for bs in [512u32, 4096] {
            let opts = options(kind, FsKind::Exfat, "PINNED", 77);
            let plan = plan_table(&opts, 16 * MIB, bs).unwrap();
            let blocks = 16 * MIB / u64::from(bs);
            let write = |plan: &TablePlan, fill: u8| {
                let mut d = MemDisk::filled(bs, blocks, fill).unwrap();
                wipe_for_table(plan, &[], &mut d).unwrap();
                write_table(plan, &mut d).unwrap();
                d.into_inner()
            };
            let a = write(&plan, 0);
            assert_eq!(a, write(&plan, 0), "{kind:?} {bs}");
            // An image file gets the same bytes.
            let dir = TempDir::new(&format!("pinned-{kind:?}-{bs}"));
            let img = dir.join("disk.img");
            make_image(&img, 16 * MIB, bs, &opts);
            assert!(std::fs::read(&img).unwrap() == a, "{kind:?} {bs}");
            // On a disk pre-filled with a sentinel, only the middle of the
            // volume (after its first MiB, before the last MiB of the
            // medium) keeps it: wipe and write cover everything else.
            let sentinel = write(&plan, 0xD1);
            let keep = (plan.partition_start() + MIB) as usize..(16 * MIB - MIB) as usize;
            for (i, (&x, &y)) in sentinel.iter().zip(&a).enumerate() {
                if keep.contains(&i) {
                    assert_eq!(x, 0xD1, "{kind:?} {bs} byte {i}");
                } else {
                    assert_eq!(x, y, "{kind:?} {bs} byte {i}");
                }
            }
            // Another seed changes the identifiers, nothing else.
            let other = plan_table(
                &TableOptions {
                    ids: TableIds::Seeded(78),
                    ..opts
                },
                16 * MIB,
                bs,
            )
            .unwrap();
            assert_ne!(a, write(&other, 0), "{kind:?} {bs}");
            assert_eq!(other.partition_start(), plan.partition_start());
            assert_eq!(other.partition_len(), plan.partition_len());
        }
    }
    // The values themselves are pinned: changing the mixer changes every
    // table the CLI writes.
    let plan = plan_table(
        &options(TableKind::Gpt, FsKind::Exfat, "", 0),
        16 * MIB,
        512,
    )
    .unwrap();
    let g = plan.gpt().unwrap().disk_guid().to_bytes();
    assert_eq!(g[6] >> 4, 4, "version 4 shaped");
    assert_eq!(g[8] >> 6, 2, "RFC 4122 variant");
    let gpt = plan.gpt().unwrap();
    assert_ne!(gpt.disk_guid(), gpt.partition_guid());
    assert_ne!(gpt.disk_guid(), Guid::NIL);
}

#[test]
fn none_writes_nothing() {
    let plan = plan_table(
        &TableOptions::new(TableKind::None, FsKind::Exfat),
        8 * MIB,
        512,
    )
    .unwrap();
    assert_eq!((plan.partition_start(), plan.partition_len()), (0, 8 * MIB));
    let mut d = MemDisk::filled(512, 8 * MIB / 512, 0xD1).unwrap();
    write_table(&plan, &mut d).unwrap();
    assert!(d.as_bytes().iter().all(|&b| b == 0xD1));
    assert_eq!(d.num_blocks(), 8 * MIB / 512);
}
