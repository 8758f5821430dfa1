//! `--copy auto|reflink|copy`: on a loop-mounted XFS made with
//! `reflink=1` the file data of `--rootdir` is cloned into the image (the
//! JSON counts it, `filefrag -v` marks the image's extents `shared`, the
//! file system's free space hardly moves) and the image is byte-identical to
//! one whose data was read and written; fsck finds it clean. On ext4
//! `--copy reflink` is refused with the reason, exit 2, nothing created; so
//! it is on a device, at clusters below the host's 4 KiB blocks, and for a
//! source on another file system. Tool tier (root, loop mounts).

use mkfs_alloc_tests::checks::{fsck_exfat_clean, fsck_fat_clean};
use mkfs_alloc_tests::loopdev::LoopDevice;
use mkfs_alloc_tests::tempdir::TempDir;
use mkfs_alloc_tests::{mkfs_alloc, test_data, tool_ok, CmdOutput, MkfsJson};
use mkfs_alloc_testsupport::LoopFs;
use std::fs;
use std::path::Path;

const MIB: u64 = 1 << 20;
/// Files of the tree and their sizes: two large ones (one with a tail), a
/// few small ones, an empty one.
const FILES: &[(&str, u64)] = &[
    ("video.bin", 20 * MIB + 1000),
    ("sub/photo.raw", 8 * MIB),
    ("sub/notes.txt", 5000),
    ("sub/deeper/tiny", 7),
    ("empty", 0),
];

fn make_tree(root: &Path) {
    for (i, (name, len)) in FILES.iter().enumerate() {
        let p = root.join(name);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(&p, test_data(*len as usize, i as u64 + 7)).expect("write");
    }
}

/// Bytes of whole 4 KiB blocks in the tree's files: what a clone shares.
fn clonable() -> u64 {
    FILES.iter().map(|(_, len)| len / 4096 * 4096).sum()
}

fn format(fs: &str, cluster: &str, tree: &Path, image: &Path, copy: &str) -> CmdOutput {
    mkfs_alloc(&[
        "--fs",
        fs,
        "--cluster",
        cluster,
        "--size",
        "300M",
        "--serial",
        "1234ABCD",
        "--rootdir",
        &tree.to_string_lossy(),
        "--copy",
        copy,
        "--json",
        &image.to_string_lossy(),
    ])
}

fn copy_counts(out: &CmdOutput) -> (u64, u64, u64) {
    let j = MkfsJson::parse(out);
    let c = &j.value["rootdir"]["copy"];
    let n = |k: &str| {
        c[k].as_u64()
            .unwrap_or_else(|| panic!("no rootdir.copy.{k}:\n{out}"))
    };
    (n("cloned"), n("copied_in_kernel"), n("written"))
}

/// Free bytes of the file system holding `p`, after a sync.
fn free_bytes(p: &Path) -> u64 {
    let out = tool_ok(
        "sh",
        &[
            "-c",
            "sync && stat -f -c '%f %S' \"$1\"",
            "sh",
            &p.to_string_lossy(),
        ],
    );
    let v: Vec<u64> = out
        .split_whitespace()
        .map(|x| x.parse().expect("number"))
        .collect();
    v[0] * v[1]
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn xfs_with_reflink_clones_the_file_data() {
    let tmp = TempDir::new("copy-xfs");
    let xfs = LoopFs::xfs_reflink(&tmp, "xfs", 1024 * MIB);
    let tree = xfs.join("tree");
    make_tree(&tree);
    for fs in ["exfat", "fat32"] {
        let (cloned_img, copied_img) = (xfs.join("cloned.img"), xfs.join("copied.img"));
        let before = free_bytes(xfs.path());
        let out = format(fs, "4K", &tree, &cloned_img, "reflink");
        out.assert_success();
        let after = free_bytes(xfs.path());
        let (cloned, kernel, written) = copy_counts(&out);
        assert_eq!(cloned, clonable(), "{fs}:\n{out}");
        assert_eq!(kernel, 0, "{fs}");
        assert_eq!(
            cloned + written,
            FILES.iter().map(|f| f.1).sum::<u64>(),
            "{fs}"
        );
        // The image took the metadata and the tails, not the 28 MiB of data.
        assert!(
            before - after < 4 * MIB,
            "{fs}: the image used {} bytes",
            before - after
        );
        let frag = tool_ok("filefrag", &["-v", &cloned_img.to_string_lossy()]);
        assert!(frag.contains("shared"), "{fs}: no shared extent:\n{frag}");
        // `--copy copy` reads and writes: the same bytes.
        let out = format(fs, "4K", &tree, &copied_img, "copy");
        out.assert_success();
        assert_eq!(copy_counts(&out).0, 0);
        let (a, b) = (
            fs::read(&cloned_img).expect("read"),
            fs::read(&copied_img).expect("read"),
        );
        assert!(a == b, "{fs}: the cloned image differs from the copied one");
        if fs == "exfat" {
            fsck_exfat_clean(&cloned_img);
        } else {
            fsck_fat_clean(&cloned_img);
        }
        fs::remove_file(&cloned_img).expect("rm");
        fs::remove_file(&copied_img).expect("rm");
    }
    // Clusters of 2 KiB on 4 KiB host blocks: `reflink` refuses, `auto`
    // clones what starts on a host block and copies the rest.
    let img = xfs.join("small-clusters.img");
    let out = format("exfat", "2K", &tree, &img, "reflink");
    out.assert_code(2);
    assert!(out.stderr.contains("clusters of 2048 bytes"), "{out}");
    assert!(!img.exists());
    let out = format("exfat", "2K", &tree, &img, "auto");
    out.assert_success();
    let (cloned, kernel, _) = copy_counts(&out);
    assert!(cloned + kernel >= clonable() - 8192, "{out}");
    let auto = fs::read(&img).expect("read");
    fs::remove_file(&img).expect("rm");
    format("exfat", "2K", &tree, &img, "copy").assert_success();
    assert!(
        auto == fs::read(&img).expect("read"),
        "2K clusters: auto and copy differ"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn ext4_refuses_reflink_and_auto_copies_in_the_kernel() {
    let tmp = TempDir::new("copy-ext4");
    let ext4 = LoopFs::ext4(&tmp, "ext4", 512 * MIB);
    let tree = ext4.join("tree");
    make_tree(&tree);
    let img = ext4.join("image.img");
    let out = format("exfat", "4K", &tree, &img, "reflink");
    out.assert_code(2);
    assert!(out.stderr.contains("does not share extents"), "{out}");
    assert!(out.stderr.contains("nothing was written"), "{out}");
    assert!(!img.exists(), "a refused run left {}", img.display());
    let out = format("exfat", "4K", &tree, &img, "auto");
    out.assert_success();
    let (cloned, kernel, _) = copy_counts(&out);
    assert_eq!((cloned, kernel), (0, clonable()), "{out}");
    let auto = fs::read(&img).expect("read");
    fs::remove_file(&img).expect("rm");
    format("exfat", "4K", &tree, &img, "copy").assert_success();
    assert!(
        auto == fs::read(&img).expect("read"),
        "auto and copy differ"
    );
    // A source on another file system (the image on XFS, the tree on ext4).
    let xfs = LoopFs::xfs_reflink(&tmp, "xfs", 512 * MIB);
    let img = xfs.join("image.img");
    let out = format("exfat", "4K", &tree, &img, "reflink");
    out.assert_code(2);
    assert!(out.stderr.contains("another file system"), "{out}");
    assert!(!img.exists());
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_device_refuses_reflink_and_is_left_alone() {
    let tmp = TempDir::new("copy-dev");
    let tree = tmp.join("tree");
    make_tree(&tree);
    let backing = tmp.join("dev.img");
    fs::write(&backing, vec![0x5A; 64 * MIB as usize]).expect("write");
    let dev = LoopDevice::attach(&backing);
    let out = mkfs_alloc(&[
        "--fs",
        "exfat",
        "--rootdir",
        &tree.to_string_lossy(),
        "--copy",
        "reflink",
        "--yes",
        dev.path_str(),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("is a device"), "{out}");
    drop(dev);
    assert!(fs::read(&backing).expect("read").iter().all(|&b| b == 0x5A));
}
