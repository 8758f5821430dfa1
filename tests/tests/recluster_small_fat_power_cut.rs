//! `mkfs-alloc recluster` of FAT16 and FAT12 volumes under power cuts, the
//! black box (`mkfs_alloc_tests::device_cuts`: `powercut.py`'s FUSE device
//! under `losetup --direct-io=on`, the CLI on the loop device): a FAT16
//! made by `mkfs.fat -F 16` at 2 KiB and filled by mtools, reclustered to
//! 512 bytes, and a FAT12 made by `mkfs.fat -F 12` at 1 KiB, reclustered
//! to a larger 4 KiB. Each cut state is judged by fsck.fat -n (only the
//! marks of an unfinished job) and mcopy (every file as written) before
//! the same command finishes it: fsck.fat clean, the new cluster size,
//! the same FAT width, every file identical.
//!
//! Tool tier: root, FUSE, fusepy, losetup, mkfs.fat, mtools, fsck.fat.

use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry};
use mkfs_alloc_tests::device_cuts::{
    assert_counts, fat_files_intact, sweep_on_a_device, DeviceJob,
};
use mkfs_alloc_tests::fat_cuts::cluster_size;
use mkfs_alloc_tests::recluster::{fat_tool_tree, mkfs_fat_filled};
use mkfs_alloc_tests::tools::require_fuse;
use mkfs_alloc_tests::{require_root, require_tool, TempDir};
use std::path::Path;

/// The FAT type field of the extended BPB at 54 (`FAT12   `/`FAT16   `),
/// read by the project's independent decoder.
fn fat_type(img: &Path) -> String {
    String::from_utf8_lossy(&mkfs_alloc_tests::read_at(img, 54, 8)).into_owned()
}

/// mkfs.fat ARGS on `size` bytes, filled by mtools, reclustered to `to`
/// on the power-cut device at cut points spread over the run.
fn power_cuts(name: &str, size: u64, mkfs: &[&str], to: u64, width: &str, spread: usize) {
    require_root();
    require_fuse();
    for tool in ["losetup", "mkfs.fat", "mcopy", "fsck.fat"] {
        require_tool(tool);
    }
    let tmp = TempDir::new("recluster-small-fat-powercut");
    let img = mkfs_fat_filled(&tmp, size, mkfs);
    let files = fat_tool_tree();
    fsck_fat_clean(&img);
    let from = cluster_size(&img);
    assert_eq!(fat_type(&img), width, "mkfs.fat made another width");
    let to_arg = to.to_string();
    let args = ["recluster", "--cluster", &to_arg, "--yes", "-q"];
    let intact = |p: &Path| fat_files_intact(&tmp, p, &files);
    let layout = |p: &Path| format!("{} B", cluster_size(p));
    let finished = |p: &Path| {
        fsck_fat_clean(p);
        assert_eq!(fsck_fat_geometry(p), (to, 512));
        assert_eq!(fat_type(p), width);
    };
    let job = DeviceJob {
        name,
        args: &args,
        files: &files,
        control: "photos/Holiday in the mountains.raw",
        intact: &intact,
        layout: &layout,
        finished: &finished,
        spread,
    };
    let c = sweep_on_a_device(&tmp, &img, &job);
    assert_counts(&c, 20);
    // Both sides of the switch were seen intact.
    assert!(
        c.layouts.contains_key(&format!("{from} B")) && c.layouts.contains_key(&format!("{to} B")),
        "{c:?}"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.fat, mtools, fsck.fat)"]
fn cli_recluster_of_a_mkfs_fat_fat16_to_a_smaller_cluster_survives_power_cuts_on_a_device() {
    // 16 MiB at 2 KiB: 8,150 clusters; 32,600 at 512 bytes (FAT16 both).
    power_cuts(
        "recluster 2K -> 512 of a 16 MiB mkfs.fat FAT16",
        16 << 20,
        &["-F", "16", "-s", "4", "-S", "512"],
        512,
        "FAT16   ",
        14,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.fat, mtools, fsck.fat)"]
fn cli_recluster_of_a_mkfs_fat_fat12_to_a_larger_cluster_survives_power_cuts_on_a_device() {
    // 3 MiB at 1 KiB: about 3,050 clusters; 760 at 4 KiB (FAT12 both).
    power_cuts(
        "recluster 1K -> 4K of a 3 MiB mkfs.fat FAT12",
        3 << 20,
        &["-F", "12", "-s", "2", "-S", "512"],
        4096,
        "FAT12   ",
        20,
    );
}
