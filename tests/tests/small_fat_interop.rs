//! FAT12 and FAT16 interoperability matrix: images made by `mkfs-alloc` are
//! checked by dosfstools (`fsck.fat -n`, `-v`), written and read by mtools,
//! listed and extracted by 7-Zip, read through fusefat on a loop device, and
//! written and read by the `fatfs` crate; `fsck.fat -n` must stay clean
//! throughout. Each width at the smallest and the largest size the planner
//! accepts for a cluster size (the largest sits 16 clusters below the next
//! width), 512- and 4096-byte sectors, and a fixed root directory filled
//! to its last entry.

use mkfs_alloc_layout::FsKind;
use mkfs_alloc_tests::checks::{
    check_small_fat_boot, fsck_fat_clean, fsck_fat_geometry, mtools, mtools_copy_in,
};
use mkfs_alloc_tests::fatfs_io::{fatfs_round_trip, open_fs};
use mkfs_alloc_tests::{
    format_planned, mkfs_alloc, plan_for, require_tool, run, smallest_valid, FormatArgs, FuseMount,
    LoopDevice, TempDir, KIB, MIB,
};

const LABEL: &str = "SMALLFAT";

/// Which size of a width and cluster size to test.
#[derive(Debug, Clone, Copy)]
enum At {
    Smallest,
    Largest,
    Bytes(u64),
}

/// The largest volume (whole sectors) the planner accepts for `fs` at this
/// cluster and sector size, searched upwards from the smallest.
fn largest_valid(fs: FsKind, cluster: u64, sector: u32) -> u64 {
    let lo = smallest_valid(fs, cluster, sector);
    let mut hi = lo * 2;
    while plan_for(fs, cluster, sector, hi).is_some() {
        hi *= 2;
    }
    mkfs_alloc_tests::sizes::largest_valid(fs, cluster, sector, lo, hi)
}

fn case(fs: FsKind, cluster: u64, sector: u32, at: At) {
    let size = match at {
        // The medium planner wants at least 1 MiB, even without a table.
        At::Smallest => smallest_valid(fs, cluster, sector).max(MIB),
        At::Largest => largest_valid(fs, cluster, sector),
        At::Bytes(b) => b,
    };
    let tmp = TempDir::new(&format!("{}-{cluster}-{sector}", fs.id()));
    let img = tmp.join("small.img");
    let args = FormatArgs {
        label: Some(LABEL),
        ..FormatArgs::new(fs.id(), cluster, sector, size)
    };
    let json = format_planned(&img, fs, &args);
    assert_eq!(json.str("fs"), fs.id());

    let boot = check_small_fat_boot(&img);
    assert_eq!(boot.cluster_size(), cluster);
    assert_eq!(u32::from(boot.bytes_per_sector), sector);
    assert_eq!(boot.cluster_count(), json.u64("cluster_count"));
    assert_eq!(boot.serial(), args.serial);
    fsck_fat_clean(&img);
    assert_eq!(
        fsck_fat_geometry(&img),
        (cluster, u64::from(sector)),
        "fsck.fat -v geometry"
    );
    let verbose = run(
        require_tool("fsck.fat"),
        &["-n", "-v", &img.to_string_lossy()],
    );
    let bits = if fs == FsKind::Fat12 {
        "2 FATs, 12 bit entries"
    } else {
        "2 FATs, 16 bit entries"
    };
    assert!(verbose.stdout.contains(bits), "fsck.fat -v:\n{verbose}");

    // mtools: copy in (more than one cluster, so a chain), list, read back.
    let (data, input) = mtools_copy_in(&img, tmp.path(), cluster, cluster ^ size, LABEL);
    mtools("mmd", &img, &["::/SUB"]).assert_success();
    mtools(
        "mcopy",
        &img,
        &[&input.to_string_lossy(), "::/SUB/AGAIN.BIN"],
    )
    .assert_success();
    fsck_fat_clean(&img);

    // 7-Zip lists the image and extracts the files.
    let seven = require_tool("7z");
    let img_s = img.to_string_lossy().into_owned();
    let list = run(&seven, &["l", img_s.as_str()]);
    list.assert_success();
    assert!(list.stdout.contains("DATA.BIN"), "7z l:\n{list}");
    let extracted = run(&seven, &["x", "-so", img_s.as_str(), "SUB/AGAIN.BIN"]);
    extracted.assert_success();
    assert!(extracted.stdout_bytes == data, "7z extracted other bytes");

    // fusefat, read-only, on a loop device with the image's sector size
    // (not above 32 KiB clusters: see fat32_interop.rs).
    if cluster <= 32 * KIB {
        let lo = LoopDevice::attach_sector(&img, sector);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::fusefat_ro(lo.path(), &mnt);
        let read = std::fs::read(mnt.join("SUB/AGAIN.BIN")).expect("read through fusefat");
        assert!(read == data, "fusefat read other bytes");
        m.unmount();
    }

    // The fatfs crate writes a file, reads it back; mtools and fsck agree.
    fatfs_round_trip(&img, cluster, &data);
}

macro_rules! cases {
    ($($name:ident: $fs:expr, $cluster:expr, $sector:expr, $at:expr;)*) => {
        $(
            #[test]
            #[ignore = "tool tier: cargo xtask test"]
            fn $name() {
                case($fs, $cluster, $sector, $at);
            }
        )*
    };
}

cases! {
    fat12_512_s512_smallest: FsKind::Fat12, 512, 512, At::Smallest;
    fat12_512_s512_largest: FsKind::Fat12, 512, 512, At::Largest;
    fat12_4k_s512_largest: FsKind::Fat12, 4 * KIB, 512, At::Largest;
    fat12_4k_s4096_smallest: FsKind::Fat12, 4 * KIB, 4096, At::Smallest;
    fat12_64k_s512_largest: FsKind::Fat12, 64 * KIB, 512, At::Largest;
    fat12_32k_s4096_medium: FsKind::Fat12, 32 * KIB, 4096, At::Bytes(77 * MIB + 4096);
    fat16_512_s512_smallest: FsKind::Fat16, 512, 512, At::Smallest;
    fat16_2k_s512_largest: FsKind::Fat16, 2 * KIB, 512, At::Largest;
    fat16_4k_s512_medium: FsKind::Fat16, 4 * KIB, 512, At::Bytes(100 * MIB + 512);
    fat16_4k_s4096_smallest: FsKind::Fat16, 4 * KIB, 4096, At::Smallest;
    fat16_16k_s4096_largest: FsKind::Fat16, 16 * KIB, 4096, At::Largest;
    fat16_32k_s512_largest: FsKind::Fat16, 32 * KIB, 512, At::Largest;
    fat16_64k_s512_largest: FsKind::Fat16, 64 * KIB, 512, At::Largest;
}

/// The fixed root directory holds exactly its entries: with
/// `--root-entries 64` and a label, 63 files fit and the 64th does not;
/// fsck stays clean and the fatfs crate lists them all.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fixed_root_directory_fills_to_its_last_entry() {
    let tmp = TempDir::new("small-root-full");
    let img = tmp.join("root.img");
    let img_s = img.to_string_lossy().into_owned();
    mkfs_alloc(&[
        "--fs",
        "fat16",
        "--cluster",
        "2K",
        "--size",
        "16M",
        "--root-entries",
        "64",
        "--label",
        LABEL,
        "--serial",
        "1234ABCD",
        "-q",
        &img_s,
    ])
    .assert_success();
    let boot = check_small_fat_boot(&img);
    assert_eq!(boot.root_ent_cnt, 64);
    let input = tmp.join("f.txt");
    std::fs::write(&input, b"x").expect("write input");
    for i in 0..63 {
        // 8.3 upper-case names: one entry each.
        mtools(
            "mcopy",
            &img,
            &[&input.to_string_lossy(), &format!("::/F{i}.TXT")],
        )
        .assert_success();
    }
    let full = mtools("mcopy", &img, &[&input.to_string_lossy(), "::/F63.TXT"]);
    assert!(!full.success(), "a 65th root entry was written:\n{full}");
    fsck_fat_clean(&img);
    let fs = open_fs(&img);
    let names = fs.root_dir().iter().filter_map(Result::ok).count();
    assert_eq!(names, 63, "fatfs lists the files (not the label)");
}

/// `--fs auto` on volumes too small for FAT32 gives FAT16 / FAT12 that every
/// checker accepts, partitioned with the MBR type of the width.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn auto_small_volumes_with_mbr_types() {
    for (size, fs, mbr_type) in [
        ("20M", "fat16", "4"),
        ("12M", "fat12", "1"),
        ("200M", "fat32", "c"),
    ] {
        let tmp = TempDir::new(&format!("small-auto-{size}"));
        let img = tmp.join("auto.img");
        let img_s = img.to_string_lossy().into_owned();
        let out = mkfs_alloc(&["--size", size, "--table", "mbr", "--json", "-q", &img_s]);
        out.assert_success();
        let json = mkfs_alloc_tests::MkfsJson::parse(&out);
        let want = if size == "200M" { "fat32" } else { fs };
        assert_eq!(json.str("fs"), want, "{size}");
        let sf = run(require_tool("sfdisk"), &["--json", &img_s]);
        sf.assert_success();
        assert!(
            sf.stdout.contains(&format!("\"type\": \"{mbr_type}\"")),
            "{size}: MBR type {mbr_type}:\n{sf}"
        );
        let off = json.u64("partition_offset");
        let len = json.u64("volume_bytes");
        mkfs_alloc_tests::check::with_volume(&img, off, len, |v| {
            let (clean, out) =
                mkfs_alloc_tests::check::fsck_verdict(mkfs_alloc_tests::check::Fsck::Fat, v);
            assert!(clean, "{size}: fsck.fat:\n{out}");
        });
    }
}

/// A FAT12 or FAT16 boot sector with RootEntCnt 0 has no root directory:
/// `info` refuses the volume (exit 1, the field named) where it once
/// described it as a valid FAT16, as `fsck.fat -n` does ("Root directory
/// has zero size").
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_fixed_root_directory_of_zero_entries_is_refused() {
    let fsck = require_tool("fsck.fat");
    let tmp = TempDir::new("small-fat-root0");
    for (fs, size) in [("fat16", "32M"), ("fat12", "4M")] {
        let img = tmp.join(&format!("{fs}.img"));
        let i = img.to_string_lossy().into_owned();
        mkfs_alloc(&["--fs", fs, "--size", size, "-q", &i]).assert_success();
        mkfs_alloc(&["info", &i]).assert_success();
        let mut bytes = std::fs::read(&img).unwrap_or_else(|e| panic!("{e}"));
        bytes[17..19].copy_from_slice(&[0, 0]);
        std::fs::write(&img, &bytes).unwrap_or_else(|e| panic!("{e}"));
        let out = mkfs_alloc(&["info", &i]);
        out.assert_code(1);
        assert!(out.stderr.contains("RootEntCnt 0"), "{fs}: {out}");
        let check = run(&fsck, &["-n", &i]);
        assert!(
            !check.success()
                && (check.stdout.clone() + &check.stderr).contains("Root directory has zero size"),
            "{fs}: {check}"
        );
    }
}
