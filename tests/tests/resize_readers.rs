//! Independent readers of a resized and a converted volume (tool tier):
//! volumes made by mkfs.exfat or mkfs.fat and filled through exfat-fuse or
//! mtools (the tree of `mkfs_alloc_tests::readers`: nested directories,
//! long and non-ASCII names, empty files and an empty directory, sizes
//! around cluster boundaries, two fragmented files), changed by the CLI,
//! then read by readers that are neither ours nor (but for exfat-fuse on
//! a converted volume) the driver that filled them:
//!
//! - exFAT grown (256 MiB to the 1 GiB its image was extended to) and
//!   shrunk with its data moved (256 MiB at 4 KiB clusters, the tree past
//!   a 128 MiB filler, to 96 MiB): GRUB (`grub-fstest`: every directory
//!   listed exactly, every file `cmp` equal and its CRC-32), exfat-fuse
//!   (every file equal), dump.exfat (VolumeLength, ClusterCount), and
//!   7-Zip refusing exFAT (it has no handler; a 7-Zip that reads exFAT
//!   fails the pin);
//! - FAT32 grown within its FATs' slack (300 MiB, the image extended to
//!   400 MiB) and shrunk with its data moved (160 MiB at 1 KiB clusters,
//!   the files past a 96 MiB filler, to 80 MiB): GRUB, 7-Zip
//!   (extracts exactly the files, equal), fusefat, the `fatfs` crate,
//!   `fsck.fat -v` (the new cluster count);
//! - FAT32 converted to exFAT (300 MiB at 4 KiB clusters; as it is, and
//!   with `--cluster 32K`): GRUB's exFAT driver, exfat-fuse, dump.exfat,
//!   7-Zip refusing it.
//!
//! The Linux kernel's drivers read the same changes in `cargo xtask
//! test-kernel` (its `rs-*` and `cv-*` cases).

use mkfs_alloc_tests::checks::{
    dump_exfat_cluster_size, field_after, fsck_exfat_clean, fsck_fat_clean, fsck_fat_geometry,
};
use mkfs_alloc_tests::readers::{
    exfat_fuse_reads, fatfs_reads, filled, fusefat_reads, grub_reads, seven_zip_extracts,
    seven_zip_refuses_exfat, Fill, Filled,
};
use mkfs_alloc_tests::{mkfs_alloc, require_tool, run, CmdOutput};

const MIB: u64 = 1 << 20;

fn path(v: &Filled) -> String {
    v.img.to_str().expect("utf-8").to_string()
}

/// `dump.exfat` of the image.
fn dump(v: &Filled) -> CmdOutput {
    let out = run(require_tool("dump.exfat"), &[&path(v)]);
    out.assert_success();
    out
}

/// The clusters the shrink's `--json` says it moved.
fn moved(out: &CmdOutput) -> u64 {
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    v["grow"]["moved_clusters"].as_u64().unwrap_or(0)
}

/// The exFAT readers: GRUB, exfat-fuse, 7-Zip's refusal.
fn exfat_readers(v: &Filled, what: &str) {
    fsck_exfat_clean(&v.img);
    grub_reads(v, what);
    exfat_fuse_reads(v, what);
    seven_zip_refuses_exfat(&v.img, what);
}

/// The FAT readers: GRUB, 7-Zip, fusefat, the fatfs crate (last: it opens
/// the image read-write), fsck.fat after it.
fn fat_readers(v: &Filled, what: &str) {
    fsck_fat_clean(&v.img);
    grub_reads(v, what);
    seven_zip_extracts(v, what);
    fusefat_reads(v, what, "READERS");
    fatfs_reads(v, what);
    fsck_fat_clean(&v.img);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, grub-fstest, 7z)"]
fn every_reader_finds_every_file_of_a_grown_mkfs_exfat_volume() {
    let fill = Fill {
        exfat: true,
        size: "256M",
        mkfs: &["-L", "READERS"],
        past: 0,
    };
    let v = filled("resize-readers-exfat-grow", fill, 512);
    let p = path(&v);
    run("truncate", &["-s", "1G", &p]).assert_success();
    mkfs_alloc(&["resize", "--size", "max", "--yes", "-q", &p]).assert_success();
    let d = dump(&v);
    assert_eq!(
        field_after(&d, "Volume Length(sectors):"),
        (1 << 30) / 512,
        "{d}"
    );
    exfat_readers(&v, "grown exFAT");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, grub-fstest, 7z)"]
fn every_reader_finds_every_file_of_a_shrunk_mkfs_exfat_volume_whose_data_moved() {
    let fill = Fill {
        exfat: true,
        size: "256M",
        mkfs: &["-c", "4K", "-L", "READERS"],
        past: 128 * MIB,
    };
    let v = filled("resize-readers-exfat-shrink", fill, 512);
    let p = path(&v);
    let out = mkfs_alloc(&["resize", "--size", "96M", "--yes", "--json", &p]);
    let moved = moved(&out);
    assert!(moved > 0, "the shrink moved nothing: {out}");
    assert_eq!(std::fs::metadata(&v.img).expect("meta").len(), 96 * MIB);
    let d = dump(&v);
    assert_eq!(
        field_after(&d, "Volume Length(sectors):"),
        96 * MIB / 512,
        "{d}"
    );
    let count = serde_json::from_str::<serde_json::Value>(&out.stdout).expect("json")["grow"]
        ["cluster_count"][1]
        .as_u64()
        .expect("count");
    assert_eq!(field_after(&d, "Cluster Count:"), count, "{d}");
    println!("exFAT shrink 256 MiB to 96 MiB: {moved} clusters moved");
    exfat_readers(&v, "shrunk exFAT");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.fat, mtools, grub-fstest, 7z, fusefat)"]
fn every_reader_finds_every_file_of_a_mkfs_fat_volume_grown_within_its_fats_slack() {
    let fill = Fill {
        exfat: false,
        size: "300M",
        mkfs: &["-F", "32", "-s", "8", "-S", "512", "-n", "READERS"],
        past: 0,
    };
    let v = filled("resize-readers-fat32-grow", fill, 512);
    let p = path(&v);
    run("truncate", &["-s", "400M", &p]).assert_success();
    let out = mkfs_alloc(&["resize", "--size", "max", "--yes", &p]);
    out.assert_code(2);
    let most = field_after(&out, "at most ");
    assert!(most > 300 * MIB, "{out}");
    mkfs_alloc(&["resize", "--size", &most.to_string(), "--yes", "-q", &p]).assert_success();
    println!("FAT32 grow 300 MiB to {most} bytes (the FATs' slack)");
    fat_readers(&v, "grown FAT32");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.fat, mtools, grub-fstest, 7z, fusefat)"]
fn every_reader_finds_every_file_of_a_shrunk_mkfs_fat_volume_whose_data_moved() {
    let fill = Fill {
        exfat: false,
        size: "160M",
        mkfs: &["-F", "32", "-s", "2", "-S", "512", "-n", "READERS"],
        past: 96 * MIB,
    };
    let v = filled("resize-readers-fat32-shrink", fill, 512);
    let p = path(&v);
    let (_, clusters_before) = cluster_count(&v);
    let out = mkfs_alloc(&["resize", "--size", "80M", "--yes", "--json", &p]);
    let moved = moved(&out);
    assert!(moved > 0, "the shrink moved nothing: {out}");
    assert_eq!(std::fs::metadata(&v.img).expect("meta").len(), 80 * MIB);
    let (cluster, clusters) = cluster_count(&v);
    assert_eq!(cluster, 1024);
    assert!(
        clusters < clusters_before / 2,
        "{clusters} of {clusters_before}"
    );
    println!("FAT32 shrink 160 MiB to 80 MiB: {moved} clusters moved, {clusters_before} to {clusters} clusters");
    fat_readers(&v, "shrunk FAT32");
}

/// The cluster size and count `fsck.fat -n -v` reads (`N data clusters`).
fn cluster_count(v: &Filled) -> (u64, u64) {
    let out = run(require_tool("fsck.fat"), &["-n", "-v", &path(v)]);
    out.assert_success();
    let count = out
        .stdout
        .lines()
        .find_map(|l| {
            l.split_once(" data clusters (")
                .map(|(n, _)| n.trim().parse().ok())
        })
        .flatten()
        .unwrap_or_else(|| panic!("no data cluster count in {out}"));
    (fsck_fat_geometry(&v.img).0, count)
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.fat, mtools, exfat-fuse, grub-fstest, 7z)"]
fn every_reader_finds_every_file_of_a_mkfs_fat_volume_converted_to_exfat() {
    for (cluster, bytes) in [(None, 4096), (Some("32K"), 32 << 10)] {
        let fill = Fill {
            exfat: false,
            size: "300M",
            mkfs: &["-F", "32", "-s", "8", "-S", "512", "-n", "READERS"],
            past: 0,
        };
        let name = format!("convert-readers-{}", cluster.unwrap_or("kept"));
        let mut v = filled(&name, fill, 512);
        let p = path(&v);
        let mut args = vec!["convert", "--fs", "exfat", "--yes", "-q"];
        if let Some(c) = cluster {
            args.extend(["--cluster", c]);
        }
        args.push(&p);
        mkfs_alloc(&args).assert_success();
        assert_eq!(dump_exfat_cluster_size(&v.img), bytes);
        // An exFAT volume now: its names are the ones FAT held, listed as
        // they are (no 8.3 folding).
        v.fat = false;
        exfat_readers(&v, &format!("converted (clusters {bytes} B)"));
    }
}
