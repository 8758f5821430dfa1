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

use mkfs_alloc_blockio::powercut::sweep::cut_points;
use mkfs_alloc_tests::checks::{dump_exfat_cluster_size, fsck_exfat_clean};
use mkfs_alloc_tests::device_cuts::{exfat_files_differing, flipped_copy};
use mkfs_alloc_tests::powercut::{CutStats, PowerCutDisk};
use mkfs_alloc_tests::recluster::fsck_findings_but_dirty;
use mkfs_alloc_tests::tools::require_fuse;
use mkfs_alloc_tests::{
    mkfs_alloc, require_root, require_tool, run, test_data, CmdOutput, FuseMount, LoopDevice,
    TempDir,
};
use std::path::Path;
use std::time::Instant;

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

/// The command of every run (the same each time).
fn recluster(dev: &Path, to: &str) -> CmdOutput {
    let dev = dev.to_string_lossy().into_owned();
    mkfs_alloc(&["recluster", "--cluster", to, "--yes", "-q", &dev])
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
    let started = Instant::now();
    let tmp = TempDir::new("recluster-powercut");
    let mnt = tmp.subdir("mnt");
    let disk_mnt = tmp.subdir("disk");
    let pristine = tmp.join("pristine.img");
    let img = tmp.join("cut.img");
    let control = tmp.join("control.img");
    let tree = tree();

    // The prepared volume: mkfs.exfat at `from`, filled through exfat-fuse
    // on a plain loop device, then read back through it once more.
    run(
        "truncate",
        &["-s", "40M", pristine.to_str().expect("utf-8")],
    )
    .assert_success();
    run(
        require_tool("mkfs.exfat"),
        &["-c", from, "-L", "CUTS", pristine.to_str().expect("utf-8")],
    )
    .assert_success();
    {
        let lo = LoopDevice::attach(&pristine);
        let m = FuseMount::exfat(lo.path(), &mnt);
        for (path, data) in &tree {
            let p = mnt.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, data).expect("write");
        }
        m.unmount();
    }
    fsck_exfat_clean(&pristine);
    assert_eq!(dump_exfat_cluster_size(&pristine), from_bytes);
    assert_eq!(
        exfat_files_differing(&pristine, &mnt, &tree).expect("mounts"),
        Vec::<String>::new(),
        "the prepared volume does not read back"
    );
    let prepared = std::fs::read(&pristine).expect("read the prepared image");

    // The uncut run: the operation count, where the fsyncs come, and proof
    // that the loop device's flushes reach the FUSE process.
    std::fs::write(&img, &prepared).expect("reset");
    let disk = PowerCutDisk::serve(&disk_mnt, &img, None, 0);
    recluster(disk.path(), to).assert_success();
    let uncut: CutStats = disk.remove();
    assert!(
        uncut.fsyncs > 0,
        "no fsync reached the FUSE process: {uncut:?}"
    );
    assert!(uncut.writes > 0 && !uncut.cut, "{uncut:?}");
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), to_bytes);
    assert_eq!(
        exfat_files_differing(&img, &mnt, &tree).expect("mounts"),
        Vec::<String>::new(),
        "the uncut run loses data"
    );

    // The comparison is over real bytes: in the uncut run's result, one
    // flipped byte inside a file's data (found by its contents in the
    // image: at every place they are, as a copied file's old clusters keep
    // them too) is caught.
    {
        let (name, data) = tree
            .iter()
            .find(|(p, _)| p == "docs/report.pdf")
            .expect("in the tree");
        flipped_copy(&img, data, &control);
        assert_eq!(
            exfat_files_differing(&control, &mnt, &tree).expect("mounts"),
            std::slice::from_ref(name),
            "a flipped data byte goes unnoticed"
        );
    }

    let points = cut_points(uncut.ops, &uncut.fsync_ops, SPREAD);
    let (mut failed_runs, mut intact_before, mut not_readable, mut kept, mut dropped) =
        (0, 0, 0, 0, 0);
    // Of the states intact before the rerun, those still in the old layout
    // and those already switched to the new one.
    let (mut old_layout, mut new_layout) = (0, 0);
    for &k in &points {
        let ctx = format!("cut at op {k} of {}", uncut.ops);
        std::fs::write(&img, &prepared).expect("reset");

        let disk = PowerCutDisk::serve(&disk_mnt, &img, Some(k), k);
        let out = recluster(disk.path(), to);
        let at_exit = disk.stats();
        assert!(
            !(at_exit.cut && out.success()),
            "{ctx}: the CLI reports success although the power went during its run:\n{out}"
        );
        failed_runs += usize::from(!out.success());
        let cut = disk.remove();
        kept += cut.kept;
        dropped += cut.dropped;

        // Before the rerun: consistent for fsck.exfat (but for the dirty
        // flag) means every file must read back as written.
        let findings = fsck_findings_but_dirty(&img).0;
        if findings.is_empty() {
            let differ = exfat_files_differing(&img, &mnt, &tree)
                .unwrap_or_else(|e| panic!("{ctx}: fsck-consistent but {e}"));
            assert!(
                differ.is_empty(),
                "{ctx}: MOUNTABLE BUT DAMAGED before the rerun: {differ:?}"
            );
            intact_before += 1;
            match dump_exfat_cluster_size(&img) {
                c if c == from_bytes => old_layout += 1,
                c if c == to_bytes => new_layout += 1,
                other => panic!("{ctx}: {other}-byte clusters before the rerun"),
            }
        } else {
            not_readable += 1;
            eprintln!("{ctx}: before the rerun fsck.exfat says {findings:?}");
        }

        let disk = PowerCutDisk::serve(&disk_mnt, &img, None, 0);
        let out = recluster(disk.path(), to);
        assert!(out.success(), "{ctx}: the rerun fails:\n{out}");
        let rerun = disk.remove();
        assert!(!rerun.cut, "{ctx}");
        fsck_exfat_clean(&img);
        assert_eq!(dump_exfat_cluster_size(&img), to_bytes, "{ctx}");
        let differ = exfat_files_differing(&img, &mnt, &tree)
            .unwrap_or_else(|e| panic!("{ctx}: after the rerun {e}"));
        assert!(
            differ.is_empty(),
            "{ctx}: after the rerun {differ:?} differ"
        );
    }
    eprintln!(
        "recluster {from} -> {to} of a 40 MiB mkfs.exfat volume ({} files): {} ops ({} writes, \
         {} fsyncs at {:?}); {} cut points (one seed each): the cut run failed in {}, {} already \
         readable and intact before the rerun ({old_layout} at {from}, {new_layout} at {to}; {} \
         not consistent), all {} intact after it; {kept} unflushed blocks kept, {dropped} lost; \
         {:.1} s",
        tree.len(),
        uncut.ops,
        uncut.writes,
        uncut.fsyncs,
        uncut.fsync_ops,
        points.len(),
        failed_runs,
        intact_before,
        not_readable,
        points.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.fat, mtools, fsck.fat)"]
fn cli_recluster_of_a_mkfs_fat_volume_survives_power_cuts_on_a_device() {
    use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry};
    use mkfs_alloc_tests::fat_cuts::{cluster_size, files_through_mcopy, fsck_fat_cut_findings};
    use mkfs_alloc_tests::recluster::{fat_tool_tree, mkfs_fat_filled};
    require_root();
    require_fuse();
    for tool in ["losetup", "mkfs.fat", "mcopy", "fsck.fat"] {
        require_tool(tool);
    }
    let started = Instant::now();
    let tmp = TempDir::new("recluster-fat-powercut");
    let disk_mnt = tmp.subdir("disk");
    // 72 MiB at 1 KiB: 73,140 clusters; 142,232 at 512 bytes (FAT32 both).
    let img = mkfs_fat_filled(&tmp, 72 << 20, &["-F", "32", "-s", "2", "-S", "512"]);
    let tree = fat_tool_tree();
    fsck_fat_clean(&img);
    assert_eq!(files_through_mcopy(&tmp, &img, &tree, false), Ok(()));
    let prepared = std::fs::read(&img).expect("read the prepared image");

    // The uncut run: the operation count and where the fsyncs come.
    let disk = PowerCutDisk::serve(&disk_mnt, &img, None, 0);
    recluster(disk.path(), "512").assert_success();
    let uncut: CutStats = disk.remove();
    assert!(
        uncut.fsyncs > 0 && uncut.writes > 0 && !uncut.cut,
        "{uncut:?}"
    );
    fsck_fat_clean(&img);
    assert_eq!(fsck_fat_geometry(&img), (512, 512));
    assert_eq!(files_through_mcopy(&tmp, &img, &tree, false), Ok(()));
    // The comparison is over real bytes: a flipped byte of a file's data
    // (at every place its bytes are: copied clusters keep them too) is
    // that file's difference.
    {
        let (name, data) = &tree[4];
        let control = tmp.join("control.img");
        flipped_copy(&img, data, &control);
        let got = files_through_mcopy(&tmp, &control, &tree, false);
        assert_eq!(got, Err(format!("{name} differs")));
    }

    let points = cut_points(uncut.ops, &uncut.fsync_ops, SPREAD);
    let (mut failed_runs, mut intact_before, mut not_consistent) = (0, 0, 0);
    let (mut old_layout, mut new_layout, mut kept, mut dropped) = (0, 0, 0, 0);
    for &k in &points {
        let ctx = format!("cut at op {k} of {}", uncut.ops);
        std::fs::write(&img, &prepared).expect("reset");
        let disk = PowerCutDisk::serve(&disk_mnt, &img, Some(k), k);
        let out = recluster(disk.path(), "512");
        let at_exit = disk.stats();
        assert!(
            !(at_exit.cut && out.success()),
            "{ctx}: the CLI reports success although the power went during its run:\n{out}"
        );
        failed_runs += usize::from(!out.success());
        let cut = disk.remove();
        (kept, dropped) = (kept + cut.kept, dropped + cut.dropped);

        // Before the rerun: fsck.fat finding only the marks of an
        // unfinished job means every file must read back as written.
        let (found, wrong, _) = fsck_fat_cut_findings(&img, false);
        if wrong.is_empty() {
            if let Err(e) = files_through_mcopy(&tmp, &img, &tree, false) {
                panic!("{ctx}: CONSISTENT BUT DAMAGED before the rerun: {e}\n{found:?}");
            }
            intact_before += 1;
            match cluster_size(&img) {
                1024 => old_layout += 1,
                512 => new_layout += 1,
                other => panic!("{ctx}: {other}-byte clusters before the rerun"),
            }
        } else {
            not_consistent += 1;
            eprintln!("{ctx}: before the rerun fsck.fat says {found:?}");
        }

        let disk = PowerCutDisk::serve(&disk_mnt, &img, None, 0);
        let out = recluster(disk.path(), "512");
        assert!(out.success(), "{ctx}: the rerun fails:\n{out}");
        assert!(!disk.remove().cut, "{ctx}");
        fsck_fat_clean(&img);
        assert_eq!(fsck_fat_geometry(&img), (512, 512), "{ctx}");
        if let Err(e) = files_through_mcopy(&tmp, &img, &tree, false) {
            panic!("{ctx}: after the rerun {e}");
        }
    }
    eprintln!(
        "recluster 1K -> 512 of a 72 MiB mkfs.fat volume ({} files): {} ops ({} writes, {} fsyncs \
         at {:?}); {} cut points (one seed each): the cut run failed in {failed_runs}, \
         {intact_before} already consistent and intact before the rerun ({old_layout} at 1 KiB, \
         {new_layout} at 512 B; {not_consistent} not consistent), all {} intact after it; {kept} \
         unflushed blocks kept, {dropped} lost; {:.1} s",
        tree.len(),
        uncut.ops,
        uncut.writes,
        uncut.fsyncs,
        uncut.fsync_ops,
        points.len(),
        points.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(intact_before + not_consistent, points.len());
}
