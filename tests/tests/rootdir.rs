//! `--rootdir DIR`: the tree written into the new volume reads back exactly
//! (names, sizes, contents, mtimes) through exfat-fuse, mtools and 7-Zip,
//! fsck finds the volumes clean, the bytes do not depend on creation order
//! or the host's time zone, bad names are all listed before anything is
//! written, and `--size auto` gives the smallest image that holds the tree.

use mkfs_alloc_tests::check::with_volume;
use mkfs_alloc_tests::checks::{fsck_exfat_clean, fsck_fat_clean, mtools};
use mkfs_alloc_tests::cmd::run_env;
use mkfs_alloc_tests::fuse::FuseMount;
use mkfs_alloc_tests::image::file_hash;
use mkfs_alloc_tests::loopdev::{LoopDevice, LoopOptions};
use mkfs_alloc_tests::tempdir::TempDir;
use mkfs_alloc_tests::tools::require_tool;
use mkfs_alloc_tests::{mkfs_alloc_env, BindMount, MkfsJson};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The regular files and directories of the source tree ('/' ends a directory).
fn entries() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = vec![
        ("README.TXT".into(), b"upper-case 8.3\n".to_vec()),
        ("readme.md".into(), b"lower-case 8.3\n".to_vec()),
        ("Mixed Case Long Name.txt".into(), vec![b'm'; 5000]),
        ("docs/".into(), Vec::new()),
        ("docs/ünïcödé — naïve.txt".into(), b"utf-8\n".to_vec()),
        ("docs/empty".into(), Vec::new()),
        ("docs/deep/".into(), Vec::new()),
        (
            "docs/deep/big.bin".into(),
            (0..3_000_000u32).map(|i| (i % 251) as u8).collect(),
        ),
        ("docs/deep/sparse.bin".into(), {
            let mut z = vec![0u8; 4 << 20];
            z[1 << 20] = 1;
            z
        }),
        ("emptydir/".into(), Vec::new()),
        ("many/".into(), Vec::new()),
    ];
    for i in 0..60 {
        v.push((
            format!("many/track {i:02} - a long title.mp3"),
            vec![i as u8; i * 700],
        ));
    }
    v
}

fn mtime_of(i: usize) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(1_500_000_001 + i as u64 * 86_399, 250_000_000)
}

/// Builds the tree in `order`, plus a symlink, a FIFO and a hard link.
fn make_tree(root: &Path, order: &[usize]) {
    let e = entries();
    fs::create_dir_all(root).expect("mkdir");
    for &i in order {
        let path = root.join(e[i].0.trim_end_matches('/'));
        if e[i].0.ends_with('/') {
            fs::create_dir_all(&path).expect("mkdir");
        } else {
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, &e[i].1).expect("write");
        }
    }
    std::os::unix::fs::symlink("README.TXT", root.join("link")).expect("symlink");
    let fifo = run_env(require_tool("mkfifo"), &[root.join("fifo")], &[]);
    fifo.assert_success();
    fs::hard_link(root.join("readme.md"), root.join("docs/hardlink.md")).expect("hard link");
    let mut idx: Vec<usize> = (0..e.len()).collect();
    idx.sort_by_key(|&i| std::cmp::Reverse(e[i].0.matches('/').count()));
    for i in idx {
        let f = fs::File::open(root.join(e[i].0.trim_end_matches('/'))).expect("open");
        f.set_modified(mtime_of(i)).expect("mtime");
    }
    for p in ["docs/hardlink.md", "readme.md"] {
        fs::File::open(root.join(p))
            .and_then(|f| f.set_modified(mtime_of(1)))
            .expect("mtime");
    }
}

/// (size or None for a directory, contents hash, mtime seconds) by relative path.
type Listing = BTreeMap<String, (Option<u64>, u64, i64)>;

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn listing(root: &Path, with_dir_times: bool) -> Listing {
    let mut out = Listing::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for ent in fs::read_dir(&d).expect("read_dir") {
            let ent = ent.expect("entry");
            let ft = ent.file_type().expect("type");
            let rel = ent
                .path()
                .strip_prefix(root)
                .expect("prefix")
                .to_string_lossy()
                .into_owned();
            let m = ent.metadata().expect("stat");
            let secs = m
                .modified()
                .expect("mtime")
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("after 1970")
                .as_secs() as i64;
            if ft.is_dir() {
                out.insert(rel, (None, 0, if with_dir_times { secs } else { 0 }));
                stack.push(ent.path());
            } else if ft.is_file() {
                let data = fs::read(ent.path()).expect("read");
                out.insert(rel, (Some(data.len() as u64), fnv(&data), secs));
            }
        }
    }
    out
}

/// The source listing as a file system with `resolution`-second times stores it.
fn expected(src: &Path, resolution: i64, with_dir_times: bool) -> Listing {
    listing(src, with_dir_times)
        .into_iter()
        .map(|(k, (s, h, t))| {
            (
                k,
                (
                    s,
                    h,
                    if s.is_none() && !with_dir_times {
                        0
                    } else {
                        t - t % resolution
                    },
                ),
            )
        })
        .collect()
}

const EPOCH: &str = "1900000000";

fn format(src: &Path, image: &Path, fs_name: &str, extra: &[&str], tz: &str) -> MkfsJson {
    let mut args = vec![
        "--fs",
        fs_name,
        "--cluster",
        "4K",
        "--serial",
        "1234ABCD",
        "--json",
        "--rootdir",
    ];
    let src_s = src.to_string_lossy().into_owned();
    let img_s = image.to_string_lossy().into_owned();
    args.push(&src_s);
    args.extend_from_slice(extra);
    args.push(&img_s);
    let out = mkfs_alloc_env(&args, &[("SOURCE_DATE_EPOCH", EPOCH), ("TZ", tz)]);
    out.assert_success();
    MkfsJson::parse(&out)
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_reads_back_through_exfat_fuse() {
    let tmp = TempDir::new("rootdir-exfat");
    let src = tmp.join("src");
    make_tree(&src, &(0..entries().len()).collect::<Vec<_>>());
    let img = tmp.join("ex.img");
    let j = format(&src, &img, "exfat", &["--size", "64M"], "UTC");
    let rd = &j.value["rootdir"];
    // 67 files and a second hard link to one of them.
    assert_eq!(rd["files"], 68, "{rd}");
    assert_eq!(rd["skipped_counts"]["symlink"], 1, "{rd}");
    assert_eq!(rd["skipped_counts"]["fifo"], 1, "{rd}");
    fsck_exfat_clean(&img);
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let got = listing(&mnt, true);
    m.unmount();
    assert_eq!(got, expected(&src, 1, true), "exfat-fuse sees another tree");
    // Read and written (`--copy copy`), the sparse file's zero run stays a
    // hole in the image (a fresh sparse image); the bytes are the same as
    // `--copy auto`'s, which lets the kernel copy it (`copy_file_range`
    // copies the zeros of a source's data extents, as cp does).
    // (The image exfat-fuse mounted may have changed: compare fresh ones.)
    let (img1, img2) = (tmp.join("ex-auto.img"), tmp.join("ex-copied.img"));
    format(&src, &img1, "exfat", &["--size", "64M"], "UTC");
    format(
        &src,
        &img2,
        "exfat",
        &["--size", "64M", "--copy", "copy"],
        "UTC",
    );
    assert!(fs::read(&img1).expect("read") == fs::read(&img2).expect("read"));
    let allocated = fs::metadata(&img2)
        .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)
        .expect("stat");
    assert!(
        allocated < 6 << 20,
        "the image allocates {allocated} bytes: holes were written"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_reads_back_through_mtools_and_7z() {
    let tmp = TempDir::new("rootdir-fat32");
    let src = tmp.join("src");
    make_tree(&src, &(0..entries().len()).collect::<Vec<_>>());
    let img = tmp.join("f.img");
    format(&src, &img, "fat32", &["--size", "300M"], "UTC");
    fsck_fat_clean(&img);
    // mtools: copy everything out, keeping mtimes (FAT times are read as local: TZ=UTC).
    let out_dir = tmp.subdir("mcopy");
    mcopy_all_out(&img.to_string_lossy(), &out_dir);
    assert_eq!(
        listing(&out_dir, false),
        expected(&src, 2, false),
        "mtools sees another tree"
    );
    // 7-Zip: names, sizes and contents.
    let x = tmp.subdir("7z");
    let o = run_env(
        require_tool("7z"),
        &[
            "x",
            "-y",
            &format!("-o{}", x.display()),
            &img.to_string_lossy(),
        ],
        &[("TZ", "UTC")],
    );
    o.assert_success();
    let strip = |l: Listing| -> BTreeMap<String, (Option<u64>, u64)> {
        l.into_iter().map(|(k, (s, h, _))| (k, (s, h))).collect()
    };
    assert_eq!(
        strip(listing(&x, false)),
        strip(expected(&src, 2, false)),
        "7z sees another tree"
    );
    // 8.3 aliases as Windows makes them.
    let dir = mtools("mdir", &img, &["::/many"]);
    dir.assert_success();
    assert!(dir.stdout.contains("TRACK0~1 MP3"), "{}", dir.stdout);
    assert!(
        dir.stdout.contains("TRACK0~9 MP3") && dir.stdout.contains("TRACK~10 MP3"),
        "{}",
        dir.stdout
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn same_bytes_whatever_the_order_and_the_time_zone() {
    let tmp = TempDir::new("rootdir-repro");
    let n = entries().len();
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    make_tree(&a, &(0..n).collect::<Vec<_>>());
    make_tree(&b, &(0..n).rev().collect::<Vec<_>>());
    for fs_name in ["exfat", "fat32"] {
        let (ia, ib) = (tmp.join("a.img"), tmp.join("b.img"));
        let _ = fs::remove_file(&ia);
        let _ = fs::remove_file(&ib);
        format(&a, &ia, fs_name, &["--size", "300M"], "UTC");
        format(&b, &ib, fs_name, &["--size", "300M"], "Asia/Kolkata");
        assert_eq!(file_hash(&ia), file_hash(&ib), "{fs_name}: images differ");
    }
}

#[test]
fn bad_names_are_all_listed_and_nothing_is_written() {
    let tmp = TempDir::new("rootdir-names");
    let src = tmp.join("src");
    fs::create_dir_all(src.join("sub")).expect("mkdir");
    for n in ["ok.txt", "a:b", "sub/what?", "sub/dot.", "Same", "SAME"] {
        fs::write(src.join(n), b"x").expect("write");
    }
    let img = tmp.join("t.img");
    fs::write(&img, vec![0xD1u8; 64 << 20]).expect("sentinel");
    let before = file_hash(&img);
    let args = [
        "--fs",
        "fat32",
        "--rootdir",
        &src.to_string_lossy(),
        &img.to_string_lossy(),
    ];
    let out = mkfs_alloc_env(&args, &[]);
    out.assert_code(2);
    for bad in ["a:b", "sub/what?", "sub/dot.", "SAME"] {
        assert!(
            out.stderr.contains(bad),
            "{bad} not listed:\n{}",
            out.stderr
        );
    }
    assert!(!out.stderr.contains("ok.txt"), "{}", out.stderr);
    assert_eq!(file_hash(&img), before, "the target changed");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn size_auto_is_the_smallest_that_holds_the_tree() {
    let tmp = TempDir::new("rootdir-auto");
    let src = tmp.join("src");
    make_tree(&src, &(0..entries().len()).collect::<Vec<_>>());
    for fs_name in ["exfat", "fat32"] {
        let img = tmp.join(&format!("{fs_name}.img"));
        let j = format(
            &src,
            &img,
            fs_name,
            &["--size", "auto", "--table", "mbr"],
            "UTC",
        );
        let size = fs::metadata(&img).expect("stat").len();
        assert_eq!(size % (1 << 20), 0, "{fs_name}: {size} is not whole MiB");
        let off = j.value["table"]["partition_start"].as_u64().expect("start");
        let len = j.value["table"]["partition_len"].as_u64().expect("len");
        with_volume(&img, off, len, |dev| {
            if fs_name == "exfat" {
                fsck_exfat_clean(dev);
            } else {
                fsck_fat_clean(dev);
            }
        });
        // 10 % slack left; one MiB less would not hold the tree plus slack.
        let free = j.value["usable_bytes"].as_u64().expect("usable");
        let used = j.value["rootdir"]["bytes_on_disk"]
            .as_u64()
            .expect("on disk");
        assert!(
            free >= used + used / 10,
            "{fs_name}: {free} free for {used}"
        );
        // With --slack 0: the auto size holds the tree, one MiB less does not.
        let z = tmp.join(&format!("{fs_name}-0.img"));
        format(
            &src,
            &z,
            fs_name,
            &["--size", "auto", "--table", "mbr", "--slack", "0"],
            "UTC",
        );
        let z_size = fs::metadata(&z).expect("stat").len();
        assert!(z_size <= size);
        let smaller = tmp.join("smaller.img");
        let _ = fs::remove_file(&smaller);
        let s = format!("{}", z_size - (1 << 20));
        let (src_s, img_s) = (src.to_string_lossy(), smaller.to_string_lossy());
        let args = [
            "--fs",
            fs_name,
            "--cluster",
            "4K",
            "--table",
            "mbr",
            "--serial",
            "1234ABCD",
            "--size",
            &s,
            "--rootdir",
            &src_s,
            &img_s,
        ];
        let out = mkfs_alloc_env(&args, &[("SOURCE_DATE_EPOCH", EPOCH)]);
        if fs_name == "exfat" || out.code != Some(2) || !out.stderr.contains("too small") {
            out.assert_code(2);
            assert!(out.stderr.contains("short"), "{fs_name}: {}", out.stderr);
        }
    }
}

/// A source file whose contents are shorter than its size at the walk (a
/// sysfs attribute bind-mounted into the tree: 4096 bytes by `stat`, a few
/// when read) stops the format: exit 1, no boot sector written.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_source_that_changes_fails_cleanly() {
    mkfs_alloc_tests::require_root();
    let tmp = TempDir::new("rootdir-changes");
    let src = tmp.subdir("src");
    fs::write(src.join("a.txt"), b"fine").expect("write");
    let target = src.join("b.txt");
    fs::write(&target, b"").expect("write");
    let attr = "/sys/kernel/uevent_seqnum";
    let _guard = BindMount::new(Path::new(attr), &target);
    assert_eq!(fs::metadata(&target).expect("stat").len(), 4096);
    for fs_name in ["exfat", "fat32"] {
        // An existing (sparse) image: a run that fails after creating its
        // image removes it, so the check needs one the run did not create.
        let img = tmp.join(&format!("{fs_name}.img"));
        fs::File::create(&img)
            .and_then(|f| f.set_len(300 << 20))
            .expect("image");
        let (src_s, img_s) = (src.to_string_lossy(), img.to_string_lossy());
        let args = ["--fs", fs_name, "--rootdir", &src_s, &img_s];
        let out = mkfs_alloc_env(&args, &[]);
        out.assert_code(1);
        assert!(
            out.stderr.contains("changed during the copy"),
            "{}",
            out.stderr
        );
        let head = fs::read(&img).expect("read");
        assert!(
            head[..512].iter().all(|&b| b == 0),
            "{fs_name}: a boot sector was written"
        );
        assert!(
            head[512..12 * 512].iter().all(|&b| b == 0),
            "{fs_name}: boot sectors were written"
        );
    }
}

/// On a block device (a loop device: a whole disk, so `--table auto` gives
/// an MBR): the partition's volume holds exactly the tree.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn on_a_device_with_a_partition_table() {
    mkfs_alloc_tests::require_root();
    let tmp = TempDir::new("rootdir-device");
    let src = tmp.join("src");
    make_tree(&src, &(0..entries().len()).collect::<Vec<_>>());
    let img = tmp.join("disk.img");
    let f = fs::File::create(&img).expect("create");
    f.set_len(300 << 20).expect("size");
    drop(f);
    for fs_name in ["exfat", "fat32"] {
        let (off, len) = {
            let lo = LoopDevice::attach(&img);
            let (src_s, dev_s) = (src.to_string_lossy(), lo.path().to_string_lossy());
            let args = [
                "--fs",
                fs_name,
                "--cluster",
                "4K",
                "--yes",
                "--json",
                "--rootdir",
                &src_s,
                &dev_s,
            ];
            let out = mkfs_alloc_env(&args, &[("SOURCE_DATE_EPOCH", EPOCH)]);
            out.assert_success();
            let j = MkfsJson::parse(&out);
            assert_eq!(j.value["table"]["kind"], "mbr", "{}", j.value["table"]);
            (
                j.value["table"]["partition_start"].as_u64().expect("start"),
                j.value["table"]["partition_len"].as_u64().expect("len"),
            )
        };
        let window = LoopDevice::attach_with(
            &img,
            LoopOptions {
                window: Some((off, len)),
                ..LoopOptions::default()
            },
        );
        if fs_name == "exfat" {
            fsck_exfat_clean(window.path());
            let mnt = tmp.subdir("mnt");
            let m = FuseMount::exfat(window.path(), &mnt);
            let got = listing(&mnt, true);
            m.unmount();
            assert_eq!(got, expected(&src, 1, true), "exfat-fuse sees another tree");
        } else {
            fsck_fat_clean(window.path());
        }
        drop(window);
        if fs_name == "fat32" {
            let at = tmp.join(&format!("disk.img@@{off}"));
            let out_dir = tmp.subdir("mcopy-dev");
            mcopy_all_out(&at.to_string_lossy(), &out_dir);
            assert_eq!(listing(&out_dir, false), expected(&src, 2, false));
        }
    }
}

/// `mcopy -s -m -n -i IMAGE ::/* DIR` under `TZ=UTC` (FAT times are read
/// as local): the whole tree out of a FAT volume, keeping mtimes.
fn mcopy_all_out(image: &str, dir: &Path) {
    let dir = dir.to_string_lossy();
    run_env(
        require_tool("mcopy"),
        &["-s", "-m", "-n", "-i", image, "::/*", &dir],
        &[("TZ", "UTC")],
    )
    .assert_success();
}

/// FAT12 and FAT16 (fixed root directory, 12- and 16-bit FATs): fsck.fat is
/// clean and mtools extracts exactly the tree.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat12_and_fat16_read_back_through_mtools() {
    let tmp = TempDir::new("rootdir-smallfat");
    let src = tmp.join("src");
    make_tree(&src, &(0..entries().len()).collect::<Vec<_>>());
    for (fs_name, cluster, size) in [("fat16", "2K", "64M"), ("fat12", "8K", "30M")] {
        let img = tmp.join(&format!("{fs_name}.img"));
        let (src_s, img_s) = (src.to_string_lossy(), img.to_string_lossy());
        let args = [
            "--fs",
            fs_name,
            "--cluster",
            cluster,
            "--size",
            size,
            "--serial",
            "1234ABCD",
            "-q",
            "--rootdir",
            &src_s,
            &img_s,
        ];
        mkfs_alloc_env(&args, &[("SOURCE_DATE_EPOCH", EPOCH)]).assert_success();
        fsck_fat_clean(&img);
        let out_dir = tmp.subdir(&format!("mcopy-{fs_name}"));
        mcopy_all_out(&img_s, &out_dir);
        assert_eq!(
            listing(&out_dir, false),
            expected(&src, 2, false),
            "{fs_name}"
        );
    }
}

/// A source file that cannot be read (a write-only sysctl bind-mounted into
/// the tree: root cannot open it for reading either) is reported before
/// anything is written: exit 2, its path listed, the target unchanged.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn an_unreadable_source_is_reported_before_writing() {
    mkfs_alloc_tests::require_root();
    let tmp = TempDir::new("rootdir-unreadable");
    let src = tmp.subdir("src");
    fs::write(src.join("fine.txt"), b"fine").expect("write");
    let target = src.join("secret.txt");
    fs::write(&target, b"").expect("write");
    let attr = "/proc/sys/vm/compact_memory";
    let _guard = BindMount::new(Path::new(attr), &target);
    assert!(fs::File::open(&target).is_err(), "{attr} is readable here");
    let img = tmp.join("t.img");
    fs::write(&img, vec![0xD1u8; 64 << 20]).expect("sentinel");
    let before = file_hash(&img);
    let (src_s, img_s) = (src.to_string_lossy(), img.to_string_lossy());
    let out = mkfs_alloc_env(&["--fs", "exfat", "--rootdir", &src_s, &img_s], &[]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("cannot be read") && out.stderr.contains("secret.txt"),
        "{}",
        out.stderr
    );
    assert_eq!(file_hash(&img), before, "the target changed");
}
