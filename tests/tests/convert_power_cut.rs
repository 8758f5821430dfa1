//! `mkfs-alloc convert --fs exfat` of a FAT32 volume under power cuts, the
//! black box (`mkfs_alloc_tests::device_cuts`: `powercut.py`'s FUSE device
//! under `losetup --direct-io=on`, the CLI on the loop device): a volume
//! made by `mkfs.fat -F 32` and filled by mtools. Each cut state is judged
//! by the fsck of the volume it holds (fsck.fat -n before the switch, only
//! the marks of an unfinished job; fsck.exfat -n after it, only the dirty
//! flag) and by that file system's independent reader (mcopy, exfat-fuse:
//! every file as written) before the same command finishes it:
//! fsck.exfat clean, exFAT, every file identical through exfat-fuse.
//!
//! Tool tier: root, FUSE, fusepy, losetup, mkfs.fat, mtools, fsck.fat,
//! fsck.exfat, exfat-fuse.

use mkfs_alloc_tests::checks::{fsck_exfat_clean, fsck_fat_clean};
use mkfs_alloc_tests::device_cuts::{
    assert_counts, exfat_files_intact, fat_files_intact, is_exfat, sweep_on_a_device, DeviceJob,
};
use mkfs_alloc_tests::recluster::{fat_tool_tree, mkfs_fat_filled};
use mkfs_alloc_tests::tools::require_fuse;
use mkfs_alloc_tests::{require_root, require_tool, TempDir};
use std::path::Path;

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.fat, mtools, fsck.fat, fsck.exfat, exfat-fuse)"]
fn cli_convert_of_a_mkfs_fat_fat32_to_exfat_survives_power_cuts_on_a_device() {
    require_root();
    require_fuse();
    for tool in [
        "losetup",
        "mkfs.fat",
        "mcopy",
        "fsck.fat",
        "fsck.exfat",
        "mount.exfat-fuse",
    ] {
        require_tool(tool);
    }
    let tmp = TempDir::new("convert-powercut");
    // 40 MiB at 512 bytes: about 81,000 clusters (FAT32).
    let img = mkfs_fat_filled(&tmp, 40 << 20, &["-F", "32", "-s", "1", "-S", "512"]);
    let files = fat_tool_tree();
    fsck_fat_clean(&img);
    let mnt = tmp.subdir("mnt");
    let args = ["convert", "--fs", "exfat", "--yes", "-q"];
    let intact = |p: &Path| {
        if is_exfat(p) {
            exfat_files_intact(p, &mnt, &files)
        } else {
            fat_files_intact(&tmp, p, &files)
        }
    };
    let layout = |p: &Path| if is_exfat(p) { "exFAT" } else { "FAT32" }.to_string();
    let finished = |p: &Path| {
        assert!(is_exfat(p), "not exFAT");
        fsck_exfat_clean(p);
    };
    let job = DeviceJob {
        name: "convert --fs exfat of a 40 MiB mkfs.fat FAT32",
        args: &args,
        files: &files,
        control: "photos/Holiday in the mountains.raw",
        intact: &intact,
        layout: &layout,
        finished: &finished,
        spread: 24,
    };
    let c = sweep_on_a_device(&tmp, &img, &job);
    // The conversion has fewer operations than the spread: every one is
    // a cut point.
    assert_eq!(c.points as u64, c.uncut.ops + 1, "{c:?}");
    assert_counts(&c, 15);
    assert_eq!(
        c.layouts.keys().cloned().collect::<Vec<_>>(),
        ["FAT32", "exFAT"],
        "{c:?}"
    );
}
