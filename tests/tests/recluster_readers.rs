//! Independent readers of a re-clustered volume (tool tier), in three
//! recipes: a volume made by mkfs.exfat at 128 KiB clusters, on 512- and
//! 4096-byte sectors (a loop device of that block size), FAT at 4 MiB and
//! heap at 8 MiB (so the gap holds the new FAT), reclustered to 4 KiB; one
//! by mkfs.exfat at 4 KiB reclustered to 128 KiB (larger: every file
//! moves); both filled through exfat-fuse with a tree of nested
//! directories, long and non-ASCII names, empty files and directories,
//! sizes around both cluster sizes' boundaries and two fragmented files.
//! And a FAT32 volume by `mkfs.fat -F 32` at 32 KiB filled through mtools
//! with the same tree (less the name outside Unicode's basic plane, which
//! mtools cannot write), the two files around holes so that their chains
//! are split, reclustered to 4 KiB.
//!
//! - GRUB's exFAT and FAT drivers (`grub-fstest`): every directory lists
//!   exactly the tree, every file compares equal (`cmp`), and its CRC-32
//!   (`crc`) is the one of the bytes written.
//! - 7-Zip (p7zip 16.02, Debian `p7zip-full`) extracts the FAT32 result:
//!   every file equal, nothing else. It has no exFAT handler (it opens
//!   FAT12/16/32 and NTFS images, not exFAT ones): a test pins that it
//!   refuses the exFAT images before and after the re-cluster alike, so
//!   that TESTING.md stays true and a 7-Zip that learns exFAT makes it
//!   fail.
//!
//! The Linux kernel's exfat and vfat drivers read re-clustered volumes in
//! `cargo xtask test-kernel` (the `rc-*` cases), U-Boot's FAT driver in
//! `cargo xtask test-uboot`.

use mkfs_alloc_tests::checks::{
    dump_exfat_cluster_size, fsck_exfat_clean, fsck_fat_clean, fsck_fat_geometry,
};
use mkfs_alloc_tests::readers::{
    crc32, filled, grub_reads, seven_zip_extracts, seven_zip_refuses_exfat, Fill, Filled,
};
use mkfs_alloc_tests::{mkfs_alloc, tool};

/// How a volume is made, filled and re-clustered.
#[derive(Clone, Copy)]
struct Recipe {
    /// The volume and its fill.
    fill: Fill,
    /// `recluster --cluster` and the bytes it means.
    to: (&'static str, u64),
}

/// mkfs.exfat at 128 KiB, the new FAT fitting the gap, to 4 KiB.
const EXFAT_SMALLER: Recipe = Recipe {
    fill: Fill {
        exfat: true,
        size: "256M",
        mkfs: &["-c", "128K", "-b", "4M", "-L", "READERS"],
        past: 0,
    },
    to: ("4K", 4096),
};

/// mkfs.exfat at 4 KiB to 128 KiB.
const EXFAT_LARGER: Recipe = Recipe {
    fill: Fill {
        exfat: true,
        size: "256M",
        mkfs: &["-c", "4K", "-L", "READERS"],
        past: 0,
    },
    to: ("128K", 128 << 10),
};

/// mkfs.fat's FAT32 at 32 KiB (98,000 clusters of 3 GiB) to 4 KiB.
const FAT32_SMALLER: Recipe = Recipe {
    fill: Fill {
        exfat: false,
        size: "3G",
        mkfs: &["-F", "32", "-s", "64", "-S", "512", "-n", "READERS"],
        past: 0,
    },
    to: ("4K", 4096),
};

/// The re-clustered volume, and `7z l` of its image before the re-cluster.
struct Reclustered {
    v: Filled,
    seven_before: mkfs_alloc_tests::CmdOutput,
}

/// The volume of `recipe` on `sector`-byte sectors, filled (see
/// [`filled`]), reclustered, checked by fsck and at the new size.
fn reclustered(name: &str, recipe: Recipe, sector: u32) -> Reclustered {
    let v = filled(name, recipe.fill, sector);
    let p = v.img.to_str().expect("utf-8").to_string();
    let seven_before = tool("7z", &["l", &p]);
    mkfs_alloc(&["recluster", "--cluster", recipe.to.0, "--yes", "-q", &p]).assert_success();
    if recipe.fill.exfat {
        fsck_exfat_clean(&v.img);
        assert_eq!(dump_exfat_cluster_size(&v.img), recipe.to.1);
        assert_eq!(
            u32::from(std::fs::read(&v.img).expect("read")[108]),
            sector.trailing_zeros(),
            "BytesPerSectorShift"
        );
    } else {
        fsck_fat_clean(&v.img);
        assert_eq!(fsck_fat_geometry(&v.img), (recipe.to.1, u64::from(sector)));
    }
    Reclustered { v, seven_before }
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, grub-fstest)"]
fn grub_reads_a_reclustered_mkfs_exfat_volume() {
    for sector in [512, 4096] {
        let name = format!("recluster-grub-{sector}");
        grub_reads(&reclustered(&name, EXFAT_SMALLER, sector).v, "re-clustered");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, grub-fstest)"]
fn grub_reads_a_mkfs_exfat_volume_reclustered_to_a_larger_size() {
    grub_reads(
        &reclustered("recluster-grub-larger", EXFAT_LARGER, 512).v,
        "re-clustered",
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, grub-fstest)"]
fn grub_reads_a_reclustered_mkfs_fat_volume() {
    grub_reads(
        &reclustered("recluster-grub-fat32", FAT32_SMALLER, 512).v,
        "re-clustered",
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, 7z)"]
fn seven_zip_opens_no_exfat_volume_before_or_after_a_recluster() {
    for (name, recipe) in [
        ("recluster-7z", EXFAT_SMALLER),
        ("recluster-7z-larger", EXFAT_LARGER),
    ] {
        let r = reclustered(name, recipe, 512);
        // Before: the image as mkfs.exfat and exfat-fuse left it.
        let text = format!("{}{}", r.seven_before.stdout, r.seven_before.stderr);
        assert!(
            !r.seven_before.success() && text.contains("Cannot open the file as archive"),
            "7z l before the re-cluster to {} no longer refuses exFAT:\n{}",
            recipe.to.0,
            r.seven_before
        );
        seven_zip_refuses_exfat(&r.v.img, &format!("re-clustered to {}", recipe.to.0));
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, 7z)"]
fn seven_zip_extracts_a_reclustered_mkfs_fat_volume() {
    let r = reclustered("recluster-7z-fat32", FAT32_SMALLER, 512);
    seven_zip_extracts(&r.v, "re-clustered FAT32");
}

#[test]
fn the_crc32_here_is_the_standard_one() {
    // The check value of CRC-32/ISO-HDLC.
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}
