//! `mkfs-alloc resize` as a black box: refusals leave the target
//! byte-identical (exit 2), `--dry-run` writes nothing (nor extends the
//! image); and (tool tier) a volume made by mkfs.exfat and filled through
//! exfat-fuse, its image extended by truncate, grown to the end: clean for
//! fsck.exfat, the new size in dump.exfat, every file byte-identical
//! through exfat-fuse, and fsck.exfat consistent on every state a cut
//! grow leaves; a FAT32 volume by mkfs.fat filled by mtools, grown within
//! its FATs' slack (the refusal beyond it names the size): fsck.fat clean,
//! the new size in minfo, every file byte-identical through mcopy; exFAT
//! volumes made by mkfs.exfat in partitions sfdisk made (MBR and GPT),
//! grown with their partition into the disk's extended tail: sfdisk
//! --verify and sgdisk -v clean, the new size in sfdisk -J, fsck.exfat
//! clean, every file byte-identical; of two partitions, none grown without
//! --partition (the image unchanged), the one chosen up to the next; and
//! the same choice of partition for `recluster` and `convert`. Shrinking:
//! `resize_shrink.rs`.

use mkfs_alloc_tests::checks::{field_after, fsck_exfat_clean, fsck_fat_clean, mtools};
use mkfs_alloc_tests::cmd::{tool_ok, tool_stdin};
use mkfs_alloc_tests::recluster::{
    assert_files_through_fuse, fsck_every_cut_state_of, mkfs_exfat_filled, our_image_with,
    tool_tree, write_interleaved, write_tree,
};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, FuseMount, LoopDevice, LoopOptions, TempDir};

fn set_len(img: &std::path::Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(img)
        .and_then(|f| f.set_len(len))
        .expect("set_len");
}

#[test]
fn a_dry_run_and_refusals_leave_the_target_byte_identical() {
    let tmp = TempDir::new("resize-refusals");
    let img = our_image_with(&tmp, &["--cluster", "32K"]);
    let p = img.to_str().expect("utf-8");
    set_len(&img, 64 << 20);
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["resize", "--size", "max", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["grow"]["volume_bytes"][1], 64 << 20, "{v:#}");
    assert_eq!(v["grow"]["cluster_size"], 32 << 10);
    // A dry run to a larger size does not extend the image.
    mkfs_alloc(&["resize", "--size", "1G", "--dry-run", p]).assert_success();
    for args in [
        &["resize", "--size", "1M", "--yes", p][..], // below the data
        &["resize", "--size", "12X", "--yes", p][..],
        &["resize", "--size", "max", p][..], // no --yes, no terminal
        &["resize", "--size", "1G", p][..],  // the same: not extended either
    ] {
        let out = mkfs_alloc(args);
        out.assert_code(2);
        assert!(std::fs::read(&img).expect("read") == before, "{args:?}");
    }
    let out = mkfs_alloc(&["resize", "--size", "1M", "--yes", p]);
    assert!(out.stderr.contains("smallest size"), "{out}");
    // Grown for real, twice: the second run has nothing to do.
    mkfs_alloc(&["resize", "--size", "max", "--yes", "-q", p]).assert_success();
    let after = std::fs::read(&img).expect("read");
    assert_ne!(after, before);
    mkfs_alloc(&["resize", "--size", "max", "--yes", "-q", p]).assert_success();
    assert!(std::fs::read(&img).expect("read") == after);
    // --size past the image's end extends it first.
    mkfs_alloc(&["resize", "--size", "96M", "--yes", "-q", p]).assert_success();
    assert_eq!(std::fs::metadata(&img).expect("meta").len(), 96 << 20);
    let info = mkfs_alloc(&["info", "--json", p]);
    info.assert_success();
    assert!(info.stdout.contains("100663296"), "{info}");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_filled_through_fuse_grows_to_the_end_of_its_extended_image() {
    require_root();
    require_fuse();
    require_tool("mkfs.exfat");
    let tmp = TempDir::new("resize-mkfs-exfat");
    let (img, tree, a, b) = mkfs_exfat_filled(&tmp, "256M", &["-L", "STICK"], (21, 22), 64 << 10);
    let p = img.to_str().expect("utf-8");
    fsck_exfat_clean(&img);
    run("truncate", &["-s", "1G", p]).assert_success();
    // Every state a cut grow leaves, on a copy.
    let copy = tmp.join("cut.img");
    std::fs::copy(&img, &copy).expect("copy");
    fsck_every_cut_state_of(&copy, &|dev| {
        mkfs_alloc::recluster::resize(dev, mkfs_alloc::recluster::NewSize::Max).map(|_| ())
    });
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&["resize", "--size", "max", "--yes", "--json", p]);
    out.assert_success();
    eprintln!(
        "resize of a 256 MiB mkfs.exfat volume to 1 GiB: {:.2} s\n{}",
        started.elapsed().as_secs_f64(),
        out.stdout
    );
    fsck_exfat_clean(&img);
    let dump = run(require_tool("dump.exfat"), &[p]);
    dump.assert_success();
    assert_eq!(field_after(&dump, "Volume Length(sectors):"), 2 << 20);
    assert_eq!(field_after(&dump, "Cluster Count:"), 261_632, "{dump}");
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn mkfs_fat_filled_by_mtools_grows_within_its_fats_slack() {
    let tmp = TempDir::new("resize-fat32");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    set_len_new(&img, 300 << 20);
    run(
        require_tool("mkfs.fat"),
        &["-F", "32", "-s", "8", "-S", "512", p],
    )
    .assert_success();
    mtools("mmd", &img, &["::/sub"]).assert_success();
    let host = tmp.subdir("in");
    let files: Vec<(String, Vec<u8>)> = (0..24usize)
        .map(|i| {
            let dir = if i % 3 == 0 { "sub/" } else { "" };
            (
                format!("{dir}file number {i:02}.bin"),
                test_data(i * 37_001 + 5, 40 + i as u64),
            )
        })
        .collect();
    for (i, (path, data)) in files.iter().enumerate() {
        let f = host.join(format!("f{i}"));
        std::fs::write(&f, data).expect("write");
        mtools(
            "mcopy",
            &img,
            &[f.to_str().expect("utf-8"), &format!("::/{path}")],
        )
        .assert_success();
    }
    fsck_fat_clean(&img);
    run("truncate", &["-s", "400M", p]).assert_success();
    let before = std::fs::read(&img).expect("read");
    // max: past the FATs' slack, refused with the largest size, unchanged.
    let out = mkfs_alloc(&["resize", "--size", "max", "--yes", p]);
    out.assert_code(2);
    assert!(std::fs::read(&img).expect("read") == before);
    let most = field_after(&out, "at most ");
    assert!(most > 300 << 20, "{out}");
    let out = mkfs_alloc(&["resize", "--size", &most.to_string(), "--yes", "--json", p]);
    out.assert_success();
    eprintln!(
        "resize of a 300 MiB mkfs.fat volume to {most} bytes:\n{}",
        out.stdout
    );
    fsck_fat_clean(&img);
    let info = mtools("minfo", &img, &[]);
    info.assert_success();
    assert!(
        info.stdout
            .contains(&format!("big size: {} sectors", most / 512)),
        "{info}"
    );
    let back = tmp.join("out");
    std::fs::create_dir_all(&back).expect("mkdir");
    mtools(
        "mcopy",
        &img,
        &["-s", "-n", "::/", back.to_str().expect("utf-8")],
    )
    .assert_success();
    for (path, data) in &files {
        assert!(
            std::fs::read(back.join(path)).expect("read") == *data,
            "{path} differs"
        );
    }
}

fn set_len_new(img: &std::path::Path, len: u64) {
    std::fs::File::create(img)
        .and_then(|f| f.set_len(len))
        .expect("image");
}

/// An image of `size` bytes partitioned by sfdisk from `script`, each
/// partition in `exfat` made by mkfs.exfat through a loop window over it
/// (partition nodes do not appear here), partition 1 filled through
/// exfat-fuse; its tree and interleaved files.
fn sfdisk_exfat(
    tmp: &TempDir,
    size: u64,
    script: &str,
    exfat: &[u32],
) -> (std::path::PathBuf, Tree, Vec<u8>, Vec<u8>) {
    let img = tmp.join("disk.img");
    set_len_new(&img, size);
    let p = img.to_str().expect("utf-8");
    tool_stdin("sfdisk", &["-q", p], script);
    for &n in exfat {
        let lo = window(&img, n);
        run(require_tool("mkfs.exfat"), &[lo.path_str()]).assert_success();
    }
    let tree = tool_tree();
    let (a, b) = (test_data(3 << 20, 31), test_data(2 << 20, 32));
    let lo = window(&img, 1);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    write_tree(&mnt, &tree);
    write_interleaved(&mnt, &a, &b, 64 << 10);
    m.unmount();
    (img, tree, a, b)
}

type Tree = Vec<(String, Vec<u8>)>;

/// `(start, size)` in bytes of partition `n` of `img`, from `sfdisk -J`.
fn partition_span(img: &std::path::Path, n: u32) -> (u64, u64) {
    let json = tool_ok("sfdisk", &["-J", img.to_str().expect("utf-8")]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("sfdisk -J");
    let p = &v["partitiontable"]["partitions"][n as usize - 1];
    let sector = v["partitiontable"]["sectorsize"].as_u64().unwrap_or(512);
    let (start, size) = (p["start"].as_u64(), p["size"].as_u64());
    match (start, size) {
        (Some(s), Some(z)) => (s * sector, z * sector),
        _ => panic!("no partition {n} in {json}"),
    }
}

/// A loop device over partition `n` of `img`.
fn window(img: &std::path::Path, n: u32) -> LoopDevice {
    let opts = LoopOptions {
        window: Some(partition_span(img, n)),
        ..LoopOptions::default()
    };
    LoopDevice::attach_with(img, opts)
}

/// The table of `img` is clean for sfdisk (and sgdisk for a GPT), its
/// partition 1 has `bytes`, its volume is clean for fsck.exfat and holds
/// every file through exfat-fuse.
fn check_grown(
    tmp: &TempDir,
    img: &std::path::Path,
    gpt: bool,
    bytes: u64,
    files: &(Tree, Vec<u8>, Vec<u8>),
) {
    let p = img.to_str().expect("utf-8");
    tool_ok("sfdisk", &["--verify", p]);
    if gpt {
        let out = tool_ok("sgdisk", &["-v", p]);
        assert!(out.contains("No problems found"), "{out}");
    }
    assert_eq!(partition_span(img, 1).1, bytes);
    let lo = window(img, 1);
    fsck_exfat_clean(lo.path());
    let dump = run(require_tool("dump.exfat"), &[lo.path_str()]);
    assert_eq!(
        field_after(&dump, "Volume Length(sectors):"),
        bytes / 512,
        "{dump}"
    );
    let mnt = tmp.subdir("check");
    let m = FuseMount::exfat(lo.path(), &mnt);
    for (path, data) in &files.0 {
        assert!(
            std::fs::read(mnt.join(path)).expect("read") == *data,
            "{path} differs"
        );
    }
    assert!(std::fs::read(mnt.join("interleaved-a.bin")).expect("read") == files.1);
    assert!(std::fs::read(mnt.join("interleaved-b.bin")).expect("read") == files.2);
    m.unmount();
}

fn grows_inside_its_partition(label: &str, gpt: bool) {
    require_root();
    require_fuse();
    let tmp = TempDir::new(if gpt { "resize-gpt" } else { "resize-mbr" });
    let script = format!(
        "label: {label}\nstart=2048, size=48M, type={}\n",
        if gpt {
            "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7"
        } else {
            "7"
        }
    );
    let (img, tree, a, b) = sfdisk_exfat(&tmp, 64 << 20, &script, &[1]);
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", "+32M", p]).assert_success();
    let out = mkfs_alloc(&["resize", "--size", "max", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    // Up to the new end (1 MiB aligned; a GPT's backup after it).
    let want: u64 = if gpt { 94 << 20 } else { 95 << 20 };
    assert_eq!(v["grow"]["partition"]["bytes"][1], want, "{v:#}");
    assert_eq!(v["grow"]["partition"]["backup_moved"], gpt, "{v:#}");
    let started = std::time::Instant::now();
    mkfs_alloc(&["resize", "--size", "max", "--yes", "-q", p]).assert_success();
    eprintln!(
        "resize inside a {label} partition: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    check_grown(&tmp, &img, gpt, want, &(tree, a, b));
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, sgdisk, mkfs.exfat, exfat-fuse)"]
fn an_sfdisk_mbr_partition_grows_with_its_exfat_volume() {
    grows_inside_its_partition("dos", false);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, sgdisk, mkfs.exfat, exfat-fuse)"]
fn an_sfdisk_gpt_partition_grows_with_its_exfat_volume_and_its_backup_moves() {
    grows_inside_its_partition("gpt", true);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, mkfs.exfat, exfat-fuse)"]
fn of_two_exfat_partitions_only_the_one_chosen_grows_up_to_the_next() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("resize-two");
    let script = "label: dos\nstart=2048, size=24M, type=7\nstart=40M, size=16M, type=7\n";
    let (img, tree, a, b) = sfdisk_exfat(&tmp, 64 << 20, script, &[1, 2]);
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["resize", "--size", "max", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("--partition"), "{out}");
    let out = mkfs_alloc(&["resize", "--size", "max", "--yes", "--partition", "3", p]);
    out.assert_code(2);
    assert!(std::fs::read(&img).expect("read") == before);
    let second = partition_span(&img, 2);
    mkfs_alloc(&[
        "resize",
        "--size",
        "max",
        "--yes",
        "-q",
        "--partition",
        "1",
        p,
    ])
    .assert_success();
    check_grown(&tmp, &img, false, 39 << 20, &(tree, a, b));
    assert_eq!(partition_span(&img, 2), second);
    let lo = window(&img, 2);
    fsck_exfat_clean(lo.path());
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, mkfs.exfat, exfat-fuse)"]
fn recluster_takes_the_same_partition_choice_and_leaves_the_other_volume_alone() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("recluster-two");
    let script = "label: dos\nstart=2048, size=24M, type=7\nstart=40M, size=16M, type=7\n";
    let (img, ..) = sfdisk_exfat(&tmp, 64 << 20, script, &[1, 2]);
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["recluster", "--cluster", "2K", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("--partition"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
    mkfs_alloc(&[
        "recluster",
        "--cluster",
        "2K",
        "--yes",
        "-q",
        "--partition",
        "2",
        p,
    ])
    .assert_success();
    let after = std::fs::read(&img).expect("read");
    // Partition 1 (the filled one) and the table: byte-identical.
    assert!(after[..25 << 20] == before[..25 << 20]);
    let lo = window(&img, 2);
    fsck_exfat_clean(lo.path());
    let dump = run(require_tool("dump.exfat"), &[lo.path_str()]);
    assert_eq!(field_after(&dump, "Cluster size:"), 2048, "{dump}");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, mkfs.fat, mtools, fsck.exfat)"]
fn convert_takes_the_same_partition_choice_and_changes_that_entry_alone() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("convert-two");
    let img = tmp.join("disk.img");
    set_len_new(&img, 128 << 20);
    let p = img.to_str().expect("utf-8");
    let script = "label: dos\nstart=2048, size=48M, type=c\nstart=64M, size=48M, type=c\n";
    tool_stdin("sfdisk", &["-q", p], script);
    for n in [1, 2] {
        let lo = window(&img, n);
        run(require_tool("mkfs.fat"), &["-F", "32", lo.path_str()]).assert_success();
    }
    let host = tmp.join("note.txt");
    let data = test_data(70_001, 9);
    std::fs::write(&host, &data).expect("write");
    let at = format!("{p}@@{}", 64u64 << 20);
    run(
        require_tool("mcopy"),
        &[
            "-i",
            &at,
            host.to_str().expect("utf-8"),
            "::/A long note.txt",
        ],
    )
    .assert_success();
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["convert", "--fs", "exfat", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("--partition"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
    mkfs_alloc(&[
        "convert",
        "--fs",
        "exfat",
        "--yes",
        "-q",
        "--partition",
        "2",
        p,
    ])
    .assert_success();
    let after = std::fs::read(&img).expect("read");
    // Partition 1 and the first entry byte-identical, the second's type 07h.
    assert!(after[0x1BE..0x1CE] == before[0x1BE..0x1CE]);
    assert_eq!(after[0x1CE + 4], 0x07);
    assert!(after[512..49 << 20] == before[512..49 << 20]);
    let lo = window(&img, 2);
    fsck_exfat_clean(lo.path());
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    assert!(std::fs::read(mnt.join("A long note.txt")).expect("read") == data);
    m.unmount();
}
