//! `mkfs-alloc recluster` under power cuts, the black box: a volume made by
//! mkfs.exfat at 128 KiB clusters and filled through exfat-fuse (the
//! independent writer) is served by `powercut.py`'s FUSE device under
//! `losetup --direct-io=on` (writes wait in a volatile cache until the
//! loop device's flush; at the cut a seeded subset of the unflushed
//! 512-byte blocks survives, every later I/O fails), and the CLI reclusters
//! it to 4 KiB, cut at one operation per trial. The surviving image is then
//! served again uncut and the same command run again: it must succeed, the
//! result must be clean for fsck.exfat, have 4 KiB clusters for dump.exfat,
//! and hold every file byte for byte as written, read back through
//! exfat-fuse. Before the rerun the test counts the states already readable
//! and intact (fsck.exfat finds nothing but the dirty flag the unfinished
//! run sets on purpose, and every file reads back right); a state that
//! fsck.exfat calls consistent but whose files differ fails the test.
//! The same the other way: made at 4 KiB, reclustered to 128 KiB (the
//! files copied into free clusters before the switch).
//! And FAT32: a volume made by mkfs.fat at 1 KiB clusters and filled by
//! mtools, reclustered to 512 bytes on the same device, each cut state
//! judged by fsck.fat (only the marks of an unfinished job) and mcopy
//! (every file as written), then finished by the same command.
//!
//! Tool tier: root, FUSE, fusepy, losetup, mkfs.exfat, exfat-fuse,
//! fsck.exfat, dump.exfat, mkfs.fat, mtools, fsck.fat.

use mkfs_alloc_tests::checks::{
    dump_exfat_cluster_size, fsck_exfat_clean, fsck_fat_clean, fsck_fat_geometry,
};
use mkfs_alloc_tests::device_cuts::{
    assert_counts, exfat_files_intact, fat_files_intact, sweep_on_a_device, DeviceJob,
};
use mkfs_alloc_tests::fat_cuts::cluster_size;
use mkfs_alloc_tests::recluster::{fat_tool_tree, mkfs_fat_filled, write_tree};
use mkfs_alloc_tests::tools::require_fuse;
use mkfs_alloc_tests::{
    require_root, require_tool, run, test_data, FuseMount, LoopDevice, TempDir,
};
use std::path::Path;

/// Evenly spread cut points before those around the fsyncs are added.
const SPREAD: usize = 12;

/// The tree written through exfat-fuse: (path, bytes). About 10 MiB in 59
/// files, two levels deep, a name with spaces and non-ASCII, an empty file.
fn tree() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..24usize {
        v.push((
            format!("photos/2026/IMG_{i:04}.JPG"),
            test_data(150_000 + i * 17_011, i as u64),
        ));
    }
    for i in 0..30usize {
        v.push((
            format!("docs/notes/n{i}.txt"),
            test_data(100 + i * 337, 100 + i as u64),
        ));
    }
    v.push(("docs/report.pdf".into(), test_data(2 << 20, 200)));
    v.push((
        "a name with spaces and ünïcode.txt".into(),
        test_data(5000, 3),
    ));
    v.push(("empty".into(), Vec::new()));
    v.push(("top.bin".into(), test_data(131_072, 4)));
    v.push(("odd.bin".into(), test_data(131_073, 5)));
    v
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.exfat, exfat-fuse)"]
fn cli_recluster_of_a_mkfs_exfat_volume_survives_power_cuts_on_a_device() {
    power_cuts_on_a_device(("128K", 128 << 10), ("4K", 4096));
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.exfat, exfat-fuse)"]
fn cli_recluster_to_a_larger_cluster_survives_power_cuts_on_a_device() {
    // 4 KiB to 128 KiB: the files are copied into free clusters first.
    power_cuts_on_a_device(("4K", 4096), ("128K", 128 << 10));
}

/// The sweep of the module docs: mkfs.exfat at `from`, the CLI to `to`
/// (each as the option's text and bytes).
fn power_cuts_on_a_device((from, from_bytes): (&str, u64), (to, to_bytes): (&str, u64)) {
    require_root();
    require_fuse();
    for tool in [
        "losetup",
        "mkfs.exfat",
        "mount.exfat-fuse",
        "fsck.exfat",
        "dump.exfat",
    ] {
        require_tool(tool);
    }
    let tmp = TempDir::new("recluster-powercut");
    let mnt = tmp.subdir("mnt");
    let img = tmp.join("cut.img");
    let files = tree();

    // The prepared volume: mkfs.exfat at `from`, filled through exfat-fuse
    // on a plain loop device.
    run("truncate", &["-s", "40M", img.to_str().expect("utf-8")]).assert_success();
    run(
        require_tool("mkfs.exfat"),
        &["-c", from, "-L", "CUTS", img.to_str().expect("utf-8")],
    )
    .assert_success();
    {
        let lo = LoopDevice::attach(&img);
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_tree(&mnt, &files);
        m.unmount();
    }
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), from_bytes);

    let name = format!("recluster {from} -> {to} of a 40 MiB mkfs.exfat volume");
    let args = ["recluster", "--cluster", to, "--yes", "-q"];
    let intact = |p: &Path| exfat_files_intact(p, &mnt, &files);
    let layout = |p: &Path| format!("{} B", dump_exfat_cluster_size(p));
    let finished = |p: &Path| {
        fsck_exfat_clean(p);
        assert_eq!(dump_exfat_cluster_size(p), to_bytes);
    };
    let job = DeviceJob {
        name: &name,
        args: &args,
        files: &files,
        control: "docs/report.pdf",
        intact: &intact,
        layout: &layout,
        finished: &finished,
        spread: SPREAD,
    };
    let c = sweep_on_a_device(&tmp, &img, &job);
    assert_counts(&c, 15);
    assert_only_layouts(&c.layouts, from_bytes, to_bytes);
}

/// Every state intact before the rerun was at one of the two cluster
/// sizes.
#[track_caller]
fn assert_only_layouts(layouts: &std::collections::BTreeMap<String, usize>, from: u64, to: u64) {
    let allowed = [format!("{from} B"), format!("{to} B")];
    assert!(
        layouts.keys().all(|k| allowed.contains(k)),
        "a cut state at another cluster size: {layouts:?}"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.fat, mtools, fsck.fat)"]
fn cli_recluster_of_a_mkfs_fat_volume_survives_power_cuts_on_a_device() {
    require_root();
    require_fuse();
    for tool in ["losetup", "mkfs.fat", "mcopy", "fsck.fat"] {
        require_tool(tool);
    }
    let tmp = TempDir::new("recluster-fat-powercut");
    // 72 MiB at 1 KiB: 73,140 clusters; 142,232 at 512 bytes (FAT32 both).
    let img = mkfs_fat_filled(&tmp, 72 << 20, &["-F", "32", "-s", "2", "-S", "512"]);
    let files = fat_tool_tree();
    fsck_fat_clean(&img);
    let args = ["recluster", "--cluster", "512", "--yes", "-q"];
    let intact = |p: &Path| fat_files_intact(&tmp, p, &files);
    let layout = |p: &Path| format!("{} B", cluster_size(p));
    let finished = |p: &Path| {
        fsck_fat_clean(p);
        assert_eq!(fsck_fat_geometry(p), (512, 512));
    };
    let job = DeviceJob {
        name: "recluster 1K -> 512 of a 72 MiB mkfs.fat volume",
        args: &args,
        files: &files,
        control: &files[4].0,
        intact: &intact,
        layout: &layout,
        finished: &finished,
        spread: SPREAD,
    };
    let c = sweep_on_a_device(&tmp, &img, &job);
    assert_counts(&c, 15);
    assert_only_layouts(&c.layouts, 1024, 512);
}
