//! `mkfs-alloc resize` to a smaller size as a black box: an exFAT image
//! shrunk (the dry run writes nothing, the file cut to its new size), a
//! volume on a block device shrunk (the device keeps its size), and (tool
//! tier) a mkfs.exfat volume whose data exfat-fuse spread over all of it,
//! shrunk: clean for fsck.exfat on the result and on every cut state, the
//! new counts in dump.exfat, every file byte-identical through exfat-fuse.

use mkfs_alloc_tests::checks::{field_after, fsck_exfat_clean};
use mkfs_alloc_tests::recluster::{fsck_every_cut_state_of, our_image_with};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, FuseMount, LoopDevice, TempDir};

fn set_len_new(img: &std::path::Path, len: u64) {
    std::fs::File::create(img)
        .and_then(|f| f.set_len(len))
        .expect("image");
}

#[test]
fn an_exfat_image_shrunk_is_cut_to_its_new_size() {
    let tmp = TempDir::new("resize-shrink");
    let img = our_image_with(&tmp, &["--cluster", "32K"]);
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["resize", "--size", "16M", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["grow"]["volume_bytes"][0], 32 << 20, "{v:#}");
    assert_eq!(v["grow"]["volume_bytes"][1], 16 << 20, "{v:#}");
    assert!(v["grow"]["moved_clusters"].is_u64(), "{v:#}");
    let text = mkfs_alloc(&["resize", "--size", "16M", "--dry-run", p]);
    text.assert_success();
    assert!(text.stdout.contains("shrink exFAT"), "{text}");
    assert!(std::fs::read(&img).expect("read") == before);
    mkfs_alloc(&["resize", "--size", "16M", "--yes", "-q", p]).assert_success();
    assert_eq!(std::fs::metadata(&img).expect("meta").len(), 16 << 20);
    let info = mkfs_alloc(&["info", "--json", p]);
    info.assert_success();
    assert!(info.stdout.contains("16777216"), "{info}");
    let again = mkfs_alloc(&["resize", "--size", "16M", "--yes", p]);
    again.assert_success();
    assert!(again.stderr.contains("nothing to do"), "{again}");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fsck.exfat, dump.exfat)"]
fn an_exfat_volume_on_a_block_device_shrinks_and_the_device_keeps_its_size() {
    require_root();
    let tmp = TempDir::new("resize-shrink-device");
    let img = our_image_with(&tmp, &["--cluster", "32K"]);
    let lo = LoopDevice::attach(&img);
    let blocks = |p: &str| {
        use std::io::Seek;
        let mut f = std::fs::File::open(p).expect("open the device");
        f.seek(std::io::SeekFrom::End(0)).expect("seek")
    };
    let size = blocks(lo.path_str());
    mkfs_alloc(&["resize", "--size", "16M", "--yes", "-q", lo.path_str()]).assert_success();
    assert_eq!(blocks(lo.path_str()), size, "the device was resized");
    fsck_exfat_clean(lo.path());
    let dump = run(require_tool("dump.exfat"), &[lo.path_str()]);
    assert_eq!(
        field_after(&dump, "Volume Length(sectors):"),
        32768,
        "{dump}"
    );
}

/// Files written through `mnt`: `n` of `len` bytes each under nested
/// directories of `top` (seeded by `seed`).
fn spread_files(top: &str, n: usize, len: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let path = format!("{top}/d{}/sub {}/file {i:03}.bin", i % 4, i % 3);
            (path, test_data(len + i * 97, seed * 1000 + i as u64))
        })
        .collect()
}

fn write_files(mnt: &std::path::Path, files: &[(String, Vec<u8>)]) {
    for (path, data) in files {
        let f = mnt.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn mkfs_exfat_with_data_over_the_whole_volume_shrinks_and_every_file_stays() {
    require_root();
    require_fuse();
    require_tool("mkfs.exfat");
    let tmp = TempDir::new("resize-shrink-exfat");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    set_len_new(&img, 16 << 20);
    run(
        require_tool("mkfs.exfat"),
        &["-c", "32K", "-L", "SHRINK", p],
    )
    .assert_success();
    // Fill, delete every other file, fill again: the data is spread over
    // the whole volume, with holes below the new end.
    let first = spread_files("first", 48, 260_000, 1);
    let second = spread_files("second", 12, 90_000, 2);
    let mut kept = Vec::new();
    {
        let lo = LoopDevice::attach(&img);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_files(&mnt, &first);
        for (i, (path, data)) in first.iter().enumerate() {
            if i % 2 == 0 {
                std::fs::remove_file(mnt.join(path)).expect("rm");
            } else {
                kept.push((path.clone(), data.clone()));
            }
        }
        write_files(&mnt, &second);
        m.unmount();
    }
    kept.extend(second);
    fsck_exfat_clean(&img);
    let before = std::fs::read(&img).expect("read");
    // Below what the data needs: refused, unchanged.
    let out = mkfs_alloc(&["resize", "--size", "6M", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("smallest size"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
    // To the smallest size the refusal names, rounded up to whole MiB.
    let least = out
        .stderr
        .split("shrinks to is ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no size in {out}"));
    let new = least.div_ceil(1 << 20) << 20;
    assert!(new < 16 << 20, "{out}");
    let size = new.to_string();
    // Every state a cut shrink leaves, on a copy.
    let copy = tmp.join("cut.img");
    std::fs::copy(&img, &copy).expect("copy");
    fsck_every_cut_state_of(&copy, &|dev| {
        mkfs_alloc::recluster::resize(dev, mkfs_alloc::recluster::NewSize::Bytes(new)).map(|_| ())
    });
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&["resize", "--size", &size, "--yes", "--json", p]);
    out.assert_success();
    eprintln!(
        "shrink of a 16 MiB mkfs.exfat volume to {new} bytes: {:.2} s\n{}",
        started.elapsed().as_secs_f64(),
        out.stdout
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert!(
        v["grow"]["moved_clusters"].as_u64().unwrap_or(0) > 0,
        "{v:#}"
    );
    let clusters = v["grow"]["cluster_count"][1].as_u64().expect("count");
    assert_eq!(std::fs::metadata(&img).expect("meta").len(), new);
    fsck_exfat_clean(&img);
    let dump = run(require_tool("dump.exfat"), &[p]);
    dump.assert_success();
    assert_eq!(field_after(&dump, "Volume Length(sectors):"), new / 512);
    assert_eq!(field_after(&dump, "Cluster Count:"), clusters, "{dump}");
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt2");
    let m = FuseMount::exfat(lo.path(), &mnt);
    for (path, data) in &kept {
        assert!(
            std::fs::read(mnt.join(path)).expect("read") == *data,
            "{path} differs"
        );
    }
    for (i, (path, _)) in first.iter().enumerate() {
        assert_eq!(mnt.join(path).exists(), i % 2 == 1, "{path}");
    }
    m.unmount();
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn mkfs_fat32_filled_by_mtools_past_the_new_end_shrinks_and_every_file_stays() {
    use mkfs_alloc_tests::checks::{fsck_fat_clean, mtools};
    use mkfs_alloc_tests::fat_cuts::{
        assert_files_through_mcopy, fsck_fat_every_cut_state_of, CutJob, FatCuts,
    };
    use mkfs_alloc_tests::recluster::{fat_tool_tree, mkfs_fat_filled};
    use mkfs_alloc_tests::{read_at, Fat32Boot};
    let tmp = TempDir::new("resize-shrink-fat32");
    // 48 MiB at 512-byte clusters: about 97,000 clusters.
    let img = mkfs_fat_filled(&tmp, 48 << 20, &["-F", "32", "-s", "1", "-S", "512"]);
    let p = img.to_str().expect("utf-8");
    // A directory, a filler, then files in the directory, then the filler
    // deleted: the later files (and the directory's later clusters) lie
    // past the new end, with the space below it free.
    mtools("mmd", &img, &["::/late"]).assert_success();
    let host = tmp.subdir("spread");
    let filler = host.join("filler");
    std::fs::write(&filler, test_data(36 << 20, 9)).expect("write");
    mtools(
        "mcopy",
        &img,
        &[filler.to_str().expect("utf-8"), "::/FILLER.BIN"],
    )
    .assert_success();
    let mut files = fat_tool_tree();
    for i in 0..12usize {
        let path = format!("late/late file {i:02}.bin");
        let data = test_data(150_000 + i * 4099, 20 + i as u64);
        let f = host.join(format!("l{i}"));
        std::fs::write(&f, &data).expect("write");
        mtools(
            "mcopy",
            &img,
            &[f.to_str().expect("utf-8"), &format!("::/{path}")],
        )
        .assert_success();
        files.push((path, data));
    }
    mtools("mdel", &img, &["::/FILLER.BIN"]).assert_success();
    fsck_fat_clean(&img);
    let before = std::fs::read(&img).expect("read");
    // Fewer clusters than FAT32 has: refused, naming the least size.
    let out = mkfs_alloc(&["resize", "--size", "20M", "--yes", p]);
    out.assert_code(2);
    let least = field_after(&out, "no less than ");
    assert!(std::fs::read(&img).expect("read") == before);
    let new: u64 = 34 << 20;
    assert!(least < new, "{out}");
    let size = new.to_string();
    let dry = mkfs_alloc(&["resize", "--size", &size, "--dry-run", p]);
    dry.assert_success();
    assert!(dry.stdout.contains("shrink FAT32"), "{dry}");
    let json = mkfs_alloc(&["resize", "--size", &size, "--dry-run", "--json", p]);
    json.assert_success();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(v["grow"]["volume_bytes"][1], new, "{v:#}");
    let moved = v["grow"]["moved_clusters"].as_u64().unwrap_or(0);
    assert!(moved > 3000, "{v:#}");
    assert!(std::fs::read(&img).expect("read") == before);
    // fsck.fat and mcopy on cut states of the shrink, each finished by the
    // same command, on a copy.
    let copy = tmp.join("cut.img");
    std::fs::copy(&img, &copy).expect("copy");
    let job = CutJob {
        run: &|dev| {
            mkfs_alloc::recluster::resize(dev, mkfs_alloc::recluster::NewSize::Bytes(new))
                .map(|_| ())
        },
        args: &["resize", "--size", &size],
        // The volume at the new size; the image cut to it, unless the cut
        // came after the switch: a rerun that only finishes the job leaves
        // the image as long as it was.
        done: &|img| {
            let boot = Fat32Boot::from_bytes(&read_at(img, 0, 512));
            let tot = u64::from(boot.tot_sec32) * 512;
            match std::fs::metadata(img).map(|m| m.len()) {
                Ok(len) if tot == new && (len == new || len == 48 << 20) => Ok(()),
                other => Err(format!("{tot} bytes of volume, the image {other:?}")),
            }
        },
    };
    let sweep = FatCuts {
        to: 512,
        sector: 512,
        seeds: 1,
        max_points: 24,
        rerun: true,
        lost_clusters: true,
    };
    let c = fsck_fat_every_cut_state_of(&tmp, &copy, sweep, &files, &job);
    assert_eq!(c.intact_before, c.states);
    assert_eq!(c.finished_by_rerun, c.states);
    assert!(c.states > 20, "{c:?}");
    let started = std::time::Instant::now();
    mkfs_alloc(&["resize", "--size", &size, "--yes", "-q", p]).assert_success();
    eprintln!(
        "shrink of a 48 MiB mkfs.fat -F 32 volume to {new} bytes, {moved} clusters moved: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(std::fs::metadata(&img).expect("meta").len(), new);
    let fsck = fsck_fat_clean(&img);
    eprintln!("{fsck}");
    assert_files_through_mcopy(&tmp, &img, &files);
    let dir = mtools("mdir", &img, &["-a", "::/"]);
    assert!(!dir.stdout.contains("FILLER"), "{dir}");
    let again = mkfs_alloc(&["resize", "--size", &size, "--yes", p]);
    again.assert_success();
    assert!(again.stderr.contains("nothing to do"), "{again}");
}
