//! `--layout sd`: the SD Association's layout (SD Part 2), checked on the
//! images the binary writes.
//!
//! - The factory-formatted 64 GB card of exfatprogs PR #149: every published
//!   number read back from the written (sparse) image.
//! - Every capacity class boundary: the plan (`--dry-run --json`) against
//!   SD Card Formatter's algorithm, computed here on its own (`reference`).
//! - One card of every class written and handed to fsck.exfat / dump.exfat,
//!   fsck.fat, mtools, sfdisk and the `fatfs` crate.
//! - Refusals (options the layout decides, cards above 2 TiB, 4096-byte
//!   sectors) leave the target byte-identical.
//!
//! Root tier: the volumes are checked through `losetup -o` windows.
//! CI time: about 20 s.

use mkfs_alloc_tests::checks::{check_exfat_boot_region, fsck_exfat_clean, fsck_fat_clean, mtools};
use mkfs_alloc_tests::{
    file_hash, fill_file, mkfs_alloc, read_at, require_tool, run, sparse_file, LoopDevice,
    LoopOptions, MkfsJson, TempDir, MIB, TIB,
};
use serde_json::Value;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

mod cards;
mod edges;

const SECTOR: u64 = 512;

/// SD Card Formatter's algorithm (SD Part 2 as SD Card Formatter and
/// sdFormatLinux compute it: <https://github.com/profi200/sdFormatLinux>,
/// `source/format.cpp`), written out here apart from the layout crate's
/// `sd.rs` so that the two can disagree.
mod reference {
    /// One computed card layout, in 512-byte sectors.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Card {
        pub fs: &'static str,
        pub spc: u64,
        pub bu: u64,
        pub part_start: u64,
        pub rsvd: u64,
        pub fat: u64,
        pub data: u64,
        pub clusters: u64,
        pub mbr_type: u8,
        pub heads: u64,
        pub spt: u64,
    }

    /// `(largest card in sectors, file system, sectors per cluster, BU)`.
    const TABLE: [(u64, &str, u64, u64); 9] = [
        (1 << 14, "fat12", 16, 16),
        (1 << 17, "fat12", 32, 32),
        (1 << 19, "fat16", 32, 64),
        (1 << 21, "fat16", 32, 128),
        (1 << 22, "fat16", 64, 128),
        (1 << 26, "fat32", 64, 8192),
        (1 << 28, "exfat", 256, 32768),
        (1 << 30, "exfat", 512, 65536),
        (1 << 32, "exfat", 1024, 131072),
    ];

    /// `(largest card in MiB, heads, sectors per track)`; above: 255/63.
    const CHS: [(u64, u64, u64); 9] = [
        (2, 2, 16),
        (16, 2, 32),
        (32, 4, 32),
        (128, 8, 32),
        (256, 16, 32),
        (504, 16, 63),
        (1008, 32, 63),
        (2016, 64, 63),
        (4032, 128, 63),
    ];

    /// The layout of a card of `total` sectors; FAT32 (64 KiB clusters) on
    /// SDXC when `fat32`. `None` above 2 TiB.
    pub fn card(total: u64, fat32: bool) -> Option<Card> {
        let &(_, class_fs, class_spc, bu) = TABLE.iter().find(|row| total <= row.0)?;
        let (heads, spt) = CHS
            .iter()
            .find(|row| total / 2048 <= row.0)
            .map_or((255, 63), |row| (row.1, row.2));
        let (fs, spc) = if fat32 && class_fs == "exfat" {
            ("fat32", 128)
        } else {
            (class_fs, class_spc)
        };
        let mut c = match fs {
            "fat12" => small_fat(total, 12, spc, bu),
            "fat16" => small_fat(total, 16, spc, bu),
            "fat32" => fat32_card(total, spc, bu),
            _ => exfat(total, spc, bu),
        };
        // Every driver decides the width by the count: a FAT12 class whose
        // count reaches 4,085 (the top of the 64 MiB class), or a FAT32
        // class whose count stays below 65,525 (cards just above 2 GiB), is
        // recomputed as FAT16.
        if (c.fs == "fat12" && c.clusters >= 4085) || (c.fs == "fat32" && c.clusters < 65_525) {
            c = small_fat(total, 16, spc, bu);
            assert!((4085..65_525).contains(&c.clusters), "{total}: {c:?}");
        }
        c.heads = heads;
        c.spt = spt;
        Some(c)
    }

    fn blank(fs: &'static str, spc: u64, bu: u64) -> Card {
        Card {
            fs,
            spc,
            bu,
            part_start: 0,
            rsvd: 0,
            fat: 0,
            data: 0,
            clusters: 0,
            mbr_type: 0,
            heads: 0,
            spt: 0,
        }
    }

    /// FAT12/16: one reserved sector, two FATs, 512 root entries (32
    /// sectors); the partition starts `BU - (fsArea mod BU)` plus one BU
    /// (exactly one BU when fsArea is a multiple), moved by a BU while the
    /// FAT is too small, with the FAT size iterated to its fixed point.
    fn small_fat(total: u64, bits: u64, spc: u64, bu: u64) -> Card {
        let fat_for = |clusters: u64| ((clusters + 2) * bits).div_ceil(512 * 8);
        let mut fat = (total / spc * bits).div_ceil(512 * 8);
        loop {
            let area = 1 + 2 * fat + 32;
            let rem = area % bu;
            let mut start = if rem == 0 { bu } else { 2 * bu - rem };
            let mut clusters = (total - start - area) / spc;
            while fat_for(clusters) > fat {
                start += bu;
                clusters = (total - start - area) / spc;
            }
            if fat_for(clusters) == fat {
                let part = total - start;
                let mut c = blank(if bits == 12 { "fat12" } else { "fat16" }, spc, bu);
                c.part_start = start;
                c.rsvd = 1;
                c.fat = fat;
                c.data = area;
                c.clusters = clusters;
                c.mbr_type = match (bits, part) {
                    (12, _) => 0x01,
                    (_, p) if p < 65_536 => 0x04,
                    _ => 0x06,
                };
                return c;
            }
            fat = fat_for(clusters);
        }
    }

    /// FAT32: the partition at 1 BU; `RsvdSecCnt = BU - (2 FATsz mod BU)`
    /// (plus a BU while under 9), grown by a BU while the FAT is too small;
    /// the FAT shrunk one sector at a time to the fixed point.
    fn fat32_card(total: u64, spc: u64, bu: u64) -> Card {
        let fat_for = |clusters: u64| ((clusters + 2) * 32).div_ceil(512 * 8);
        let mut fat = (total / spc * 32).div_ceil(512 * 8);
        loop {
            let mut rsvd = bu - (2 * fat) % bu;
            if rsvd < 9 {
                rsvd += bu;
            }
            let mut clusters = (total - bu - rsvd - 2 * fat) / spc;
            while fat_for(clusters) > fat {
                rsvd += bu;
                clusters = (total - bu - rsvd - 2 * fat) / spc;
            }
            if fat_for(clusters) == fat {
                let mut c = blank("fat32", spc, bu);
                c.part_start = bu;
                c.rsvd = rsvd;
                c.fat = fat;
                c.data = rsvd + 2 * fat;
                c.clusters = clusters;
                c.mbr_type = if total <= 16_450_560 { 0x0B } else { 0x0C };
                return c;
            }
            fat -= 1;
        }
    }

    /// exFAT: partition at 1 BU, FAT at BU/2 for BU/2, heap at BU.
    fn exfat(total: u64, spc: u64, bu: u64) -> Card {
        let mut c = blank("exfat", spc, bu);
        c.part_start = bu;
        c.fat = bu / 2;
        c.data = bu;
        c.clusters = (total - 2 * bu) / spc;
        c.mbr_type = 0x07;
        c
    }
}

/// `mkfs-alloc --layout sd --serial 5D000001 EXTRA... IMG` (pinned time).
fn sd_format(img: &Path, extra: &[&str]) -> mkfs_alloc_tests::CmdOutput {
    let img = img.to_string_lossy().into_owned();
    let mut args = vec!["--layout", "sd", "--serial", "5D000001", "--json"];
    args.extend_from_slice(extra);
    args.push(&img);
    mkfs_alloc(&args)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number `{key}` in {v:#}"))
}

fn le(b: &[u8], at: usize, n: usize) -> u64 {
    b[at..at + n]
        .iter()
        .rev()
        .fold(0, |acc, &x| (acc << 8) | u64::from(x))
}

/// The one MBR partition entry: (type, start LBA, sectors, start CHS, end CHS).
fn mbr_entry(img: &Path) -> (u8, u64, u64, [u8; 3], [u8; 3]) {
    let lba0 = read_at(img, 0, 512);
    assert_eq!(&lba0[510..], &[0x55, 0xAA], "MBR signature");
    let e = &lba0[446..462];
    for other in 1..4 {
        assert!(
            lba0[446 + 16 * other..462 + 16 * other]
                .iter()
                .all(|&b| b == 0),
            "MBR entry {other} is not empty"
        );
    }
    (
        e[4],
        le(e, 8, 4),
        le(e, 12, 4),
        [e[1], e[2], e[3]],
        [e[5], e[6], e[7]],
    )
}

/// CHS bytes (head, sector | cylinder high bits, cylinder low) of `lba`, or
/// the largest address beyond cylinder 1023.
fn chs(lba: u64, heads: u64, spt: u64) -> [u8; 3] {
    let (c, rest) = (lba / (heads * spt), lba % (heads * spt));
    let (h, s) = (rest / spt, rest % spt + 1);
    let (c, h, s) = if c > 1023 {
        (1023, heads - 1, spt)
    } else {
        (c, h, s)
    };
    [h as u8, (s as u8) | (((c >> 8) as u8) << 6), c as u8]
}

/// `sfdisk -d IMG`: the one partition's start, size and type.
fn sfdisk_dump(img: &Path) -> (u64, u64, String) {
    let out = run(require_tool("sfdisk"), &[Path::new("-d"), img]);
    out.assert_success();
    let line = out
        .lines()
        .find(|l| l.contains("start="))
        .unwrap_or_else(|| panic!("no partition in sfdisk -d:\n{out}"));
    let field = |key: &str| {
        line.split(',')
            .find_map(|f| f.trim().strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no {key} in {line}"))
    };
    let start = line
        .split_once("start=")
        .and_then(|(_, r)| r.split(',').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no start in {line}"));
    (start, field("size=").parse().expect("size"), field("type="))
}

/// The partition of `img` as a read-write loop device window.
fn partition(img: &Path, start: u64, sectors: u64) -> LoopDevice {
    LoopDevice::attach_with(
        img,
        LoopOptions {
            window: Some((start * SECTOR, sectors * SECTOR)),
            ..LoopOptions::default()
        },
    )
}

/// The 64 GB card of exfatprogs PR #149 (factory formatted, dump.exfat):
/// partition at sector 32,768, VolumeLength 125,040,640, FatOffset and
/// FatLength 16,384, ClusterHeapOffset 32,768, 488,312 clusters of 128 KiB.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn the_factory_formatted_64_gb_card() {
    let tmp = TempDir::new("sd-64gb");
    let img = tmp.join("card.img");
    let total = 32_768 + 125_040_640;
    let size = (total * SECTOR).to_string();
    let out = sd_format(&img, &["--size", &size, "--label", "CARD"]);
    out.assert_success();
    let j = MkfsJson::parse(&out).value;
    assert_eq!(j["layout"], "sd");
    assert_eq!(j["sd"]["class"], "SDXC");

    // The MBR, read from the image.
    let (ty, start, sectors, first, last) = mbr_entry(&img);
    assert_eq!((ty, start, sectors), (0x07, 32_768, 125_040_640));
    assert_eq!(first, chs(32_768, 255, 63));
    assert_eq!(last, [254, 0xFF, 0xFF], "SDXC end CHS is the maximum");
    assert_eq!(sfdisk_dump(&img), (32_768, 125_040_640, "7".to_string()));

    // The exFAT boot sector, read from the image.
    let at = start * SECTOR;
    let bs = read_at(&img, at, 512);
    assert_eq!(&bs[3..11], b"EXFAT   ");
    assert_eq!(le(&bs, 64, 8), 32_768, "PartitionOffset");
    assert_eq!(le(&bs, 72, 8), 125_040_640, "VolumeLength");
    assert_eq!(le(&bs, 80, 4), 16_384, "FatOffset");
    assert_eq!(le(&bs, 84, 4), 16_384, "FatLength");
    assert_eq!(le(&bs, 88, 4), 32_768, "ClusterHeapOffset");
    assert_eq!(le(&bs, 92, 4), 488_312, "ClusterCount");
    assert_eq!(
        (bs[108], bs[109]),
        (9, 8),
        "512-byte sectors, 128 KiB clusters"
    );

    // The Flash Parameters record in sector 9: the GUID, EraseBlockSize
    // BU/2 = 8 MiB, every other field zero.
    let oem = read_at(&img, at + 9 * SECTOR, 512);
    let guid = [
        0x46, 0x7E, 0x0C, 0x0A, 0x99, 0x33, 0x21, 0x40, 0x90, 0xC8, 0xFA, 0x6D, 0x38, 0x9C, 0x4B,
        0xA2,
    ];
    assert_eq!(&oem[..16], &guid, "Flash Parameters GUID");
    assert_eq!(le(&oem, 16, 4), 8 * MIB, "EraseBlockSize");
    assert!(oem[20..].iter().all(|&b| b == 0), "other fields are zero");

    // The boot checksum covers it (main and backup regions identical), and
    // the independent tools accept the volume.
    let dev = partition(&img, start, sectors);
    check_exfat_boot_region(dev.path());
    fsck_exfat_clean(dev.path());
    let dump = run(require_tool("dump.exfat"), &[dev.path()]);
    dump.assert_success();
    for (key, want) in [
        ("Volume Length(sectors):", 125_040_640),
        ("FAT Offset(sector offset):", 16_384),
        ("FAT Length(sectors):", 16_384),
        ("Cluster Heap Offset (sector offset):", 32_768),
        ("Cluster Count:", 488_312),
    ] {
        assert_eq!(
            mkfs_alloc_tests::checks::field_after(&dump, key),
            want,
            "dump.exfat {key}"
        );
    }
    drop(dev);

    // `info` recognises the layout.
    assert_eq!(info_layout(&img), "sd");
}

/// Every capacity class boundary (the last card of a class, the first of
/// the next, and one sector less), and FAT32 forced on SDXC: the plan the
/// binary makes equals SD Card Formatter's algorithm, field by field.
#[test]
fn every_class_boundary_follows_the_reference_algorithm() {
    let tmp = TempDir::new("sd-classes");
    let img = tmp.join("plan.img");
    let mut checked = 0;
    for log2 in [14u32, 17, 19, 21, 22, 26, 28, 30, 32] {
        let max = 1u64 << log2;
        let mut sizes = vec![max - 1, max, max * 3 / 4 + 17];
        if log2 < 32 {
            sizes.push(max + 1);
        }
        for total in sizes {
            for fat32 in [false, true] {
                let want = reference::card(total, fat32).expect("up to 2 TiB");
                if fat32 && want.fs != "fat32" {
                    continue;
                }
                let size = (total * SECTOR).to_string();
                let mut args = vec!["--dry-run", "--size", &size];
                if fat32 {
                    args.extend(["--fs", "fat32"]);
                }
                let out = sd_format(&img, &args);
                if want.rsvd > u64::from(u16::MAX) {
                    // sdFormatLinux refuses these too.
                    out.assert_code(2);
                    assert!(out.stderr.contains("reserved sectors"), "{out}");
                    continue;
                }
                out.assert_success();
                let j = MkfsJson::parse(&out).value;
                let what = format!("{total} sectors, fat32 {fat32}: {want:?}\n{j:#}");
                assert_eq!(j["fs"], want.fs, "{what}");
                assert_eq!(u(&j, "cluster_size"), want.spc * SECTOR, "{what}");
                assert_eq!(
                    u(&j, "partition_offset"),
                    want.part_start * SECTOR,
                    "{what}"
                );
                assert_eq!(
                    u(&j, "volume_bytes"),
                    (total - want.part_start) * SECTOR,
                    "{what}"
                );
                assert_eq!(u(&j, "cluster_count"), want.clusters, "{what}");
                let fat_at = if want.fs == "exfat" {
                    want.bu / 2
                } else {
                    want.rsvd
                };
                assert_eq!(u(&j, "fat_offset"), fat_at * SECTOR, "{what}");
                assert_eq!(u(&j, "fat_bytes"), want.fat * SECTOR, "{what}");
                assert_eq!(u(&j, "data_offset"), want.data * SECTOR, "{what}");
                assert_eq!(
                    u(&j, "data_offset_on_medium") % (want.bu * SECTOR),
                    0,
                    "the data region is on a boundary unit: {what}"
                );
                assert_eq!(
                    u(&j["table"], "mbr_type"),
                    u64::from(want.mbr_type),
                    "{what}"
                );
                assert_eq!(u(&j["sd"], "heads"), want.heads, "{what}");
                assert_eq!(u(&j["sd"], "sectors_per_track"), want.spt, "{what}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "only {checked} cards checked");
    assert!(!img.exists(), "a dry run created the image");
}

/// `info --json IMG`'s `layout`: `"sd"` when the medium holds exactly the
/// SD layout of its size.
fn info_layout(img: &Path) -> String {
    let info = mkfs_alloc(&["info", "--json", &img.to_string_lossy()]);
    info.assert_success();
    let v: Value = serde_json::from_str(&info.stdout).expect("info --json");
    v["layout"].as_str().unwrap_or_default().to_string()
}
