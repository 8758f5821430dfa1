//! Volumes under 1 MiB without a partition table: floppy images. The medium
//! planner takes them with `--table none`: FAT12 fits a 360 KiB, 720 KiB, 1.44 MB or 2.88 MB floppy. Each image is
//! checked by `fsck.fat` and written and read back through mtools; the
//! classic 1.44 MB geometry (512-byte clusters, 224 root entries) is read by
//! the `fatfs` crate too. A table on such a medium is still refused, naming
//! the 1 MiB partition it needs, with the target unchanged.
//!
//! Two tiers: the formats are judged by `fsck.fat` and mtools (tool tier,
//! marked); the two refusals only run the CLI on files (pure tier).
//! CI time: under 1 s.

use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry, mtools};
use mkfs_alloc_tests::{file_hash, fill_file, mkfs_alloc, MkfsJson, TempDir, KIB};
use std::io::Read;

/// Formats a `size`-byte floppy image with `extra` options and checks it.
fn floppy(size: u64, extra: &[&str]) -> MkfsJson {
    let tmp = TempDir::new(&format!("floppy-{size}"));
    let img = tmp.join("floppy.img");
    let size_arg = size.to_string();
    let img_arg = img.to_string_lossy().into_owned();
    let mut args = vec![
        "--table", "none", "--fs", "fat12", "--size", &size_arg, "--serial", "F10997", "--label",
        "FLOPPY", "--json",
    ];
    args.extend_from_slice(extra);
    args.push(&img_arg);
    let out = mkfs_alloc(&args);
    out.assert_success();
    let j = MkfsJson::parse(&out);
    assert_eq!(j.str("fs"), "fat12");
    assert_eq!(std::fs::metadata(&img).map(|m| m.len()).ok(), Some(size));
    fsck_fat_clean(&img);
    let src = tmp.join("note.txt");
    std::fs::write(&src, b"a floppy\n").expect("write source");
    mtools("mcopy", &img, &[&src.to_string_lossy(), "::NOTE.TXT"]).assert_success();
    let back = mtools("mtype", &img, &["::NOTE.TXT"]);
    back.assert_success();
    assert_eq!(back.stdout, "a floppy\n");
    fsck_fat_clean(&img);
    if size == 1_474_560 && extra.contains(&"224") {
        // The classic 1.44 MB floppy: 2,847 clusters of 512 B.
        assert_eq!(fsck_fat_geometry(&img), (512, 512));
        assert_eq!(j.u64("cluster_count"), 2847);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&img)
            .expect("open");
        let fs = fatfs::FileSystem::new(f, fatfs::FsOptions::new()).expect("fatfs mounts");
        let mut text = String::new();
        fs.root_dir()
            .open_file("NOTE.TXT")
            .expect("fatfs open")
            .read_to_string(&mut text)
            .expect("fatfs read");
        assert_eq!(text, "a floppy\n");
    }
    j
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn floppy_sizes_format_without_a_table() {
    for size in [360 * KIB, 720 * KIB, 1_474_560, 2_949_120] {
        floppy(size, &[]);
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn the_classic_1_44_mb_floppy() {
    floppy(
        1_474_560,
        &[
            "--cluster",
            "512",
            "--root-entries",
            "224",
            "--align",
            "512",
        ],
    );
}

#[test]
fn a_table_still_needs_a_1_mib_partition() {
    let tmp = TempDir::new("floppy-mbr");
    let img = tmp.join("floppy.img");
    fill_file(&img, 720 * KIB, 0x6B);
    let before = file_hash(&img);
    let out = mkfs_alloc(&["--table", "mbr", "--fs", "fat12", &img.to_string_lossy()]);
    out.assert_code(2);
    assert!(out.stderr.contains("1048576"), "{out}");
    assert_eq!(file_hash(&img), before);
}

#[test]
fn a_volume_too_small_for_the_root_directory_names_root_entries() {
    let tmp = TempDir::new("floppy-8k");
    let img = tmp.join("tiny.img");
    fill_file(&img, 8 * KIB, 0x6C);
    let before = file_hash(&img);
    let img_arg = img.to_string_lossy().into_owned();
    let out = mkfs_alloc(&["--table", "none", "--fs", "fat12", &img_arg]);
    out.assert_code(2);
    assert!(out.stderr.contains("--root-entries"), "{out}");
    assert_eq!(file_hash(&img), before);
    // The hint works: 16 entries (one sector) leave room for clusters.
    let out = mkfs_alloc(&[
        "--table",
        "none",
        "--fs",
        "fat12",
        "--root-entries",
        "16",
        "--json",
        &img_arg,
    ]);
    out.assert_success();
    assert!(MkfsJson::parse(&out).u64("cluster_count") >= 1);
}
