//! `mkfs-alloc resize` as a black box: refusals leave the target
//! byte-identical (exit 2), `--dry-run` writes nothing (nor extends the
//! image); and (tool tier) a volume made by mkfs.exfat and filled through
//! exfat-fuse, its image extended by truncate, grown to the end: clean for
//! fsck.exfat, the new size in dump.exfat, every file byte-identical
//! through exfat-fuse, and fsck.exfat consistent on every state a cut
//! grow leaves; a FAT32 volume by mkfs.fat filled by mtools, grown within
//! its FATs' slack (the refusal beyond it names the size): fsck.fat clean,
//! the new size in minfo, every file byte-identical through mcopy.

use mkfs_alloc_tests::checks::{field_after, fsck_exfat_clean, fsck_fat_clean, mtools};
use mkfs_alloc_tests::recluster::{
    assert_files_through_fuse, fsck_every_cut_state_of, mkfs_exfat_filled, our_image_with,
};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, TempDir};

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
        &["resize", "--size", "16M", "--yes", p][..], // shrink
        &["resize", "--size", "12X", "--yes", p][..],
        &["resize", "--size", "max", p][..], // no --yes, no terminal
        &["resize", "--size", "1G", p][..],  // the same: not extended either
    ] {
        let out = mkfs_alloc(args);
        out.assert_code(2);
        assert!(std::fs::read(&img).expect("read") == before, "{args:?}");
    }
    let out = mkfs_alloc(&["resize", "--size", "16M", "--yes", p]);
    assert!(out.stderr.contains("shrinking"), "{out}");
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
    let most = out
        .stderr
        .split("at most ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no size in {out}"));
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
