//! `mkfs-alloc recluster` as a black box: refusals leave the target
//! byte-identical (exit 2), `--dry-run` writes nothing; and (tool tier) a
//! volume made by mkfs.exfat and filled through exfat-fuse, reclustered to
//! 4 KiB, is clean for fsck.exfat, has 4 KiB clusters for dump.exfat, and
//! reads back byte for byte through exfat-fuse; the same for volumes with
//! mkfs.exfat's default layout, whose new FAT covers the heap's first
//! clusters (evacuated first); and one made at 4 KiB, filled the same way,
//! reclustered to 128 KiB (its data copied into free clusters first).

use mkfs_alloc_tests::checks::{dump_exfat_cluster_size, fsck_exfat_clean};
use mkfs_alloc_tests::recluster::{
    assert_files_through_fuse, fsck_every_cut_state, mkfs_exfat_filled, our_image_with, tool_tree,
    write_interleaved, write_tree,
};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, FuseMount, LoopDevice, TempDir};

/// An exFAT image of ours at 128 KiB clusters holding a small tree.
fn our_image(tmp: &TempDir) -> std::path::PathBuf {
    our_image_with(tmp, &["--cluster", "128K"])
}

#[test]
fn a_dry_run_and_refusals_leave_the_target_byte_identical() {
    let tmp = TempDir::new("recluster-refusals");
    let img = our_image(&tmp);
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["recluster", "--cluster", "4K", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["plan"]["new"]["cluster_size"], 4096);
    assert_eq!(v["plan"]["clusters_moved"], 0);
    assert!(v["plan"]["space_gained"].as_i64().expect("gain") > 0);
    for args in [
        &["recluster", "--cluster", "64M", "--yes", p][..],
        &["recluster", "--cluster", "3000", "--yes", p][..],
        &["recluster", "--cluster", "4K", p][..], // no --yes, no terminal
    ] {
        mkfs_alloc(args).assert_code(2);
        assert!(std::fs::read(&img).expect("read") == before, "{args:?}");
    }
    // Damage one entry set's checksum (the root's first file entry).
    let mut damaged = before.clone();
    let root = root_file_entry(&damaged);
    damaged[root + 2] ^= 0xFF;
    std::fs::write(&img, &damaged).expect("write");
    let out = mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("checksum"), "{out}");
    assert!(std::fs::read(&img).expect("read") == damaged);
}

/// Byte offset of the first file entry (0x85) of the root directory.
fn root_file_entry(img: &[u8]) -> usize {
    let u32_at = |o: usize| u32::from_le_bytes(img[o..o + 4].try_into().expect("4"));
    let sector = 1usize << img[108];
    let cluster = sector << img[109];
    let heap = u32_at(88) as usize * sector;
    let root = heap + (u32_at(96) as usize - 2) * cluster;
    (root..root + cluster)
        .step_by(32)
        .find(|&o| img[o] == 0x85)
        .expect("a file entry in the root")
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_filled_through_fuse_reclusters_to_4k() {
    require_root();
    require_fuse();
    require_tool("mkfs.exfat");
    let tmp = TempDir::new("recluster-mkfs-exfat");
    let img = tmp.join("v.img");
    run("truncate", &["-s", "256M", img.to_str().expect("utf-8")]).assert_success();
    run(
        require_tool("mkfs.exfat"),
        &["-c", "128K", "-L", "STICK", img.to_str().expect("utf-8")],
    )
    .assert_success();
    let tree = tool_tree();
    let (a, b) = (test_data(3 << 20, 11), test_data(2 << 20, 12));
    {
        let lo = LoopDevice::attach(&img);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_tree(&mnt, &tree);
        write_interleaved(&mnt, &a, &b, 256 << 10);
        // In use (attached to a loop device, mounted): refused, unchanged
        // (exfat-fuse's own write-back flushed first: the daemon writes
        // the image after the files are closed).
        run("sync", &[] as &[&str]).assert_success();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let before = std::fs::read(&img).expect("read");
        let p = img.to_str().expect("utf-8");
        mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", p]).assert_code(2);
        assert!(std::fs::read(&img).expect("read") == before);
        m.unmount();
    }
    fsck_exfat_clean(&img);
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&[
        "recluster",
        "--cluster",
        "4K",
        "--yes",
        "--json",
        img.to_str().expect("utf-8"),
    ]);
    out.assert_success();
    eprintln!(
        "recluster of a 256 MiB mkfs.exfat volume, 128 KiB to 4 KiB: {:.2} s\n{}",
        started.elapsed().as_secs_f64(),
        out.stdout
    );
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 4096);
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_at_4k_filled_through_fuse_reclusters_to_128k() {
    mkfs_exfat_at_4k_reclusters_to_128k("256M");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_at_4k_without_a_gap_before_the_heap_reclusters_to_128k() {
    // 1 GiB at 4 KiB: mkfs.exfat's 1 MiB FAT ends at the heap, so the new
    // FAT goes over the old FAT's entries of free clusters.
    let json = mkfs_exfat_at_4k_reclusters_to_128k("1G");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let (old, new) = (&v["plan"]["old"], &v["plan"]["new"]);
    let old_end =
        old["fat_offset"].as_u64().expect("fat") + old["fat_bytes"].as_u64().expect("fat");
    assert_eq!(old_end, old["heap_offset"].as_u64().expect("heap"), "{v:#}");
    assert!(new["fat_offset"].as_u64().expect("fat") < old_end, "{v:#}");
}

/// A volume of `size` by `mkfs.exfat -c 4K`, filled through exfat-fuse
/// with [`tool_tree`] and two files written interleaved in 48 KiB pieces,
/// reclustered to 128 KiB: the dry run says what is copied; fsck.exfat
/// clean, dump.exfat 128 KiB, every file byte-identical through exfat-fuse.
/// Returns the JSON the dry run printed.
fn mkfs_exfat_at_4k_reclusters_to_128k(size: &str) -> String {
    require_root();
    require_fuse();
    let tmp = TempDir::new("recluster-larger");
    let (img, tree, a, b) = mkfs_exfat_filled(&tmp, size, &["-c", "4K"], (31, 32), 48 << 10);
    let p = img.to_str().expect("utf-8");
    fsck_exfat_clean(&img);
    let dry = mkfs_alloc(&["recluster", "--cluster", "128K", "--dry-run", "--json", p]);
    dry.assert_success();
    let v: serde_json::Value = serde_json::from_str(&dry.stdout).expect("json");
    let l = &v["plan"]["larger"];
    eprintln!("{l:#}");
    // The interleaved files are fragmented inside 128 KiB groups and the
    // small files share them: both are copied.
    assert!(l["files_moved"].as_u64().expect("moved") >= 2, "{v:#}");
    assert!(
        l["bytes_moved"].as_u64().expect("bytes") >= 5 << 20,
        "{v:#}"
    );
    assert_eq!(l["old_clusters_per_new"], 32);
    let text = mkfs_alloc(&["recluster", "--cluster", "128K", "--dry-run", p]);
    text.assert_success();
    assert!(text.stdout.contains(" copied first: "), "{text}");
    eprintln!("{}", text.stdout);
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&["recluster", "--cluster", "128K", "--yes", "--json", p]);
    out.assert_success();
    eprintln!(
        "recluster of a {size} mkfs.exfat volume, 4 KiB to 128 KiB: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 128 << 10);
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
    dry.stdout
}

/// A volume of `size` made by plain `mkfs.exfat -c CLUSTER` (its default
/// layout: the heap's start right after the FAT's 1 MiB boundary), filled
/// through exfat-fuse with [`tool_tree`] and two interleaved files, then
/// reclustered to `to`; checks fsck.exfat, dump.exfat and every file
/// through exfat-fuse. Returns the JSON the re-cluster printed.
fn mkfs_exfat_default_reclusters(size: &str, cluster: &str, to: &str, to_bytes: u64) -> String {
    require_root();
    require_fuse();
    let tmp = TempDir::new("recluster-evacuate");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", size, p]).assert_success();
    run(require_tool("mkfs.exfat"), &["-c", cluster, p]).assert_success();
    let tree = tool_tree();
    let (a, b) = (test_data(3 << 20, 21), test_data(2 << 20, 22));
    {
        let lo = LoopDevice::attach(&img);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_interleaved(&mnt, &a, &b, 256 << 10);
        write_tree(&mnt, &tree);
        m.unmount();
    }
    fsck_exfat_clean(&img);
    let dry = mkfs_alloc(&["recluster", "--cluster", to, "--dry-run", p]);
    dry.assert_success();
    assert!(dry.stdout.contains("evacuation"), "{dry}");
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&["recluster", "--cluster", to, "--yes", "--json", p]);
    out.assert_success();
    eprintln!(
        "recluster of a {size} mkfs.exfat volume, {cluster} to {to}: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), to_bytes);
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
    out.stdout
}

/// The evacuation the re-cluster's JSON reports: some of the heap's first
/// clusters were in use and the heap's start moved.
fn assert_evacuated(json: &str) {
    let v: serde_json::Value = serde_json::from_str(json).expect("json");
    let e = &v["plan"]["evacuation"];
    eprintln!("{e:#}");
    assert!(e["in_use"].as_u64().expect("in use") > 0, "{v:#}");
    assert!(v["plan"]["heap_moved_bytes"].as_u64().expect("moved") > 0);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_defaults_at_512k_recluster_to_4k_evacuating_the_heap_start() {
    assert_evacuated(&mkfs_exfat_default_reclusters("4G", "512K", "4K", 4096));
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_defaults_at_128k_recluster_to_4k_evacuating_the_heap_start() {
    assert_evacuated(&mkfs_exfat_default_reclusters("2G", "128K", "4K", 4096));
}

#[test]
fn info_says_a_cut_recluster_is_unfinished_and_the_same_command_finishes_it() {
    use mkfs_alloc_blockio::{ImageFile, PowerCutIo};
    let tmp = TempDir::new("recluster-unfinished");
    let img = our_image(&tmp);
    let p = img.to_str().expect("utf-8");
    {
        // Power cut after the intent record and VolumeDirty are durable.
        let mut cut = PowerCutIo::new(ImageFile::open(&img, 512).expect("open"), 6, 1);
        assert!(mkfs_alloc::recluster::recluster(&mut cut, 4096).is_err());
        drop(cut.into_surviving().expect("cut"));
    }
    let out = mkfs_alloc(&["info", p]);
    assert!(
        out.stdout
            .contains("re-cluster to 4 KiB clusters is unfinished"),
        "{out}"
    );
    mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", "-q", p]).assert_success();
    let out = mkfs_alloc(&["info", "--json", p]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["recluster_unfinished"], serde_json::json!([]));
    assert!(out.stdout.contains("4096"), "{out}");
}

#[test]
#[ignore = "tool tier: cargo xtask test (fsck.exfat)"]
fn fsck_exfat_finds_every_cut_state_consistent() {
    let tmp = TempDir::new("recluster-fsck-cuts");
    fsck_every_cut_state(&our_image(&tmp), 4096);
}

#[test]
#[ignore = "tool tier: cargo xtask test (fsck.exfat)"]
fn fsck_exfat_finds_every_cut_state_of_an_evacuation_consistent() {
    // Aligned to 16 KiB the FAT sits right before the heap: to 512 bytes,
    // the new FAT covers the heap's first 8 clusters (bitmap, up-case
    // table, root, files), evacuated first.
    let tmp = TempDir::new("recluster-fsck-evac-cuts");
    let img = our_image_with(&tmp, &["--cluster", "32K", "--align", "16K"]);
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "512", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert!(
        v["plan"]["evacuation"]["clusters_moved"]
            .as_u64()
            .expect("moved")
            > 0,
        "{v:#}"
    );
    fsck_every_cut_state(&img, 512);
}

#[test]
#[ignore = "tool tier: cargo xtask test (fsck.exfat)"]
fn fsck_exfat_finds_every_cut_state_of_a_larger_cluster_consistent() {
    // Our 4 KiB image to 64 KiB: the files are copied into free groups
    // before the switch.
    let tmp = TempDir::new("recluster-fsck-larger-cuts");
    let img = our_image_with(&tmp, &["--cluster", "4K"]);
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "64K", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert!(
        v["plan"]["larger"]["files_moved"].as_u64().expect("moved") > 0,
        "{v:#}"
    );
    fsck_every_cut_state(&img, 64 << 10);
}

#[test]
#[ignore = "tool tier: cargo xtask test (fsck.exfat)"]
fn fsck_exfat_finds_every_cut_state_of_a_larger_cluster_without_a_gap_consistent() {
    // Aligned to 16 KiB the FAT ends at the heap: the new FAT and the
    // intent record go over the old FAT's entries of free clusters.
    let tmp = TempDir::new("recluster-fsck-larger-nogap-cuts");
    let img = our_image_with(&tmp, &["--cluster", "4K", "--align", "16K"]);
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "64K", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let (old, new) = (&v["plan"]["old"], &v["plan"]["new"]);
    let old_end =
        old["fat_offset"].as_u64().expect("fat") + old["fat_bytes"].as_u64().expect("fat");
    assert_eq!(old_end, old["heap_offset"].as_u64().expect("heap"), "{v:#}");
    assert!(new["fat_offset"].as_u64().expect("fat") < old_end, "{v:#}");
    fsck_every_cut_state(&img, 64 << 10);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn a_directory_with_many_deleted_entries_is_copied_only_to_its_last_entry_in_use() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("recluster-deleted-entries");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", "256M", p]).assert_success();
    run(require_tool("mkfs.exfat"), &["-c", "128K", p]).assert_success();
    let mut tree = tool_tree();
    let (a, b) = (test_data(3 << 20, 31), test_data(2 << 20, 32));
    let name = |i: usize| format!("big/a-file-with-a-rather-long-name-{i:05}.txt");
    {
        let lo = LoopDevice::attach(&img);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_interleaved(&mnt, &a, &b, 256 << 10);
        write_tree(&mnt, &tree);
        // 2,000 sets of 5 entries (320,000 bytes: three 128 KiB clusters),
        // all but the first 20 deleted: their entries stay, marked unused.
        std::fs::create_dir(mnt.join("big")).expect("mkdir");
        // (Empty but for the 20 kept: a file of data takes a cluster.)
        for i in 0..2000 {
            let data = if i < 20 {
                format!("{i}")
            } else {
                String::new()
            };
            std::fs::write(mnt.join(name(i)), data).expect("write");
        }
        for i in 20..2000 {
            std::fs::remove_file(mnt.join(name(i))).expect("rm");
        }
        m.unmount();
    }
    fsck_exfat_clean(&img);
    tree.extend((0..20).map(|i| (name(i), format!("{i}").into_bytes())));
    let dry = mkfs_alloc(&["recluster", "--cluster", "32K", "--dry-run", "--json", p]);
    dry.assert_success();
    let v: serde_json::Value = serde_json::from_str(&dry.stdout).expect("json");
    let written = v["plan"]["bytes_written"].as_u64().expect("bytes_written");
    // Copied whole, the big directory alone would be 384 KiB and every
    // other directory 128 KiB: each copy is now its entries in use, rounded
    // up to 32 KiB.
    assert!(written < 384 << 10, "{v:#}");
    assert!(v["plan"]["evacuation"].is_null(), "{v:#}");
    mkfs_alloc(&["recluster", "--cluster", "32K", "--yes", p]).assert_success();
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 32 << 10);
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let listed = std::fs::read_dir(mnt.join("big")).expect("ls").count();
    m.unmount();
    assert_eq!(listed, 20);
    let again = mkfs_alloc(&["recluster", "--cluster", "32K", "--dry-run", "--json", p]);
    again.assert_success();
    let v: serde_json::Value = serde_json::from_str(&again.stdout).expect("json");
    assert_eq!(v["step"], "nothing", "{v:#}");
}
