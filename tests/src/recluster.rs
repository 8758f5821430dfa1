//! What the re-cluster's black-box tests share: an image of ours holding
//! a small tree, the tree written through exfat-fuse and its comparison
//! read back through exfat-fuse, and fsck.exfat on every state a cut
//! re-cluster leaves; a FAT volume made by mkfs.fat and filled by mtools.

use crate::tools::require_tool;
use crate::{mkfs_alloc, run, test_data, FuseMount, LoopDevice, TempDir};
use std::path::{Path, PathBuf};

/// An exFAT image of ours of 32 MiB made with `opts` (cluster size,
/// alignment) holding a small tree (five files of 3 bytes to 280 KB, one of
/// 900 KB in `sub/`), in `tmp` as `v.img`.
pub fn our_image_with(tmp: &TempDir, opts: &[&str]) -> std::path::PathBuf {
    let tree = tmp.subdir("tree");
    std::fs::create_dir_all(tree.join("sub")).expect("mkdir");
    for i in 0..5usize {
        std::fs::write(tree.join(format!("f{i}.bin")), test_data(i * 70_000 + 3, 7)).expect("w");
    }
    std::fs::write(tree.join("sub/big.bin"), test_data(900_000, 9)).expect("w");
    let img = tmp.join("v.img");
    let mut args = vec!["--fs", "exfat"];
    args.extend_from_slice(opts);
    args.extend_from_slice(&[
        "--size",
        "32M",
        "--rootdir",
        tree.to_str().expect("utf-8"),
        "--yes",
        "-q",
        img.to_str().expect("utf-8"),
    ]);
    mkfs_alloc(&args).assert_success();
    img
}

/// Writes two files through the driver in alternating pieces, so that both
/// get fragmented chains.
pub fn write_interleaved(dir: &Path, a: &[u8], b: &[u8], piece: usize) {
    use std::io::Write;
    let mut fa = std::fs::File::create(dir.join("interleaved-a.bin")).expect("create");
    let mut fb = std::fs::File::create(dir.join("interleaved-b.bin")).expect("create");
    for (ca, cb) in a.chunks(piece).zip(b.chunks(piece)) {
        fa.write_all(ca).expect("write");
        fa.sync_all().expect("sync");
        fb.write_all(cb).expect("write");
        fb.sync_all().expect("sync");
    }
    // The longer one's tail (zip stops at the shorter).
    let both = a.len().min(b.len()).div_ceil(piece) * piece;
    fa.write_all(a.get(both..).unwrap_or_default())
        .expect("write");
    fb.write_all(b.get(both..).unwrap_or_default())
        .expect("write");
}

/// The tree written through exfat-fuse: (path, bytes).
pub fn tool_tree() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..40usize {
        v.push((
            format!("photos/IMG_{i:04}.JPG"),
            test_data(50_000 + i * 9_001, i as u64),
        ));
    }
    for i in 0..30usize {
        v.push((
            format!("docs/notes/n{i}.txt"),
            test_data(100 + i * 37, 100 + i as u64),
        ));
    }
    v.push((
        "a name with spaces and ünïcode.txt".into(),
        test_data(5000, 3),
    ));
    v.push(("empty".into(), Vec::new()));
    v
}

/// Writes `tree` (paths relative to `mnt`, their bytes) through a mount.
pub fn write_tree(mnt: &std::path::Path, tree: &[(String, Vec<u8>)]) {
    for (path, data) in tree {
        let f = mnt.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
    }
}

/// Mounts `img` through exfat-fuse and compares every file of `tree` and
/// the two interleaved files with the bytes written.
pub fn assert_files_through_fuse(
    tmp: &TempDir,
    img: &std::path::Path,
    tree: &[(String, Vec<u8>)],
    a: &[u8],
    b: &[u8],
) {
    let lo = LoopDevice::attach(img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    for (path, data) in tree {
        assert!(
            std::fs::read(mnt.join(path)).expect("read") == *data,
            "{path} differs"
        );
    }
    assert!(std::fs::read(mnt.join("interleaved-a.bin")).expect("read") == a);
    assert!(std::fs::read(mnt.join("interleaved-b.bin")).expect("read") == b);
    m.unmount();
}

/// fsck.exfat's findings on `img`, with the line a dirty volume gives
/// (VolumeDirty is set while a re-cluster is unfinished, on purpose) left
/// out and counted.
pub fn fsck_findings_but_dirty(img: &Path) -> (Vec<String>, bool) {
    use mkfs_alloc_testsupport::{fsck_findings, FsckKind};
    let out = run(require_tool("fsck.exfat"), &[Path::new("-n"), img]);
    let all = fsck_findings(FsckKind::Exfat, out.success(), &out.stdout, &out.stderr);
    let dirty = |l: &String| l.to_lowercase().contains("dirty");
    let was_dirty = all.iter().any(dirty);
    (all.into_iter().filter(|l| !dirty(l)).collect(), was_dirty)
}

/// fsck.exfat on every state a re-cluster of `img` to `cluster` leaves when
/// cut at each of its operations under 3 seeds: all consistent.
pub fn fsck_every_cut_state(img: &Path, cluster: u64) {
    fsck_every_cut_state_of(img, &|dev| {
        mkfs_alloc::recluster::recluster(dev, cluster).map(|_| ())
    });
}

/// A job of the in-place engine, run on a medium.
pub type EngineJob<'a> = dyn Fn(&mut dyn mkfs_alloc_blockio::BlockIo) -> Result<(), mkfs_alloc::recluster::ReclusterError>
    + 'a;

/// fsck.exfat on every state `job` (a re-cluster, a resize) leaves on
/// `img` when cut at each of its operations under 3 seeds: all
/// consistent.
pub fn fsck_every_cut_state_of(img: &Path, job: &EngineJob<'_>) {
    use mkfs_alloc_blockio::{BlockIo, ImageFile, PowerCutIo};
    require_tool("fsck.exfat");
    let img = img.to_path_buf();
    let restored = img.with_extension("restored");
    let mut torn_states = 0;
    let pristine = std::fs::read(&img).expect("read");
    let ops = {
        let mut count = PowerCutIo::counting(ImageFile::open(&img, 512).expect("open"));
        job(&mut count).expect("uncut");
        let n = count.ops_seen();
        drop(count.into_all_written().expect("write"));
        n
    };
    let (mut states, mut dirty_states) = (0, 0);
    for k in 0..ops {
        for seed in 0..3 {
            std::fs::write(&img, &pristine).expect("reset");
            let mut cut = PowerCutIo::new(ImageFile::open(&img, 512).expect("open"), k, seed);
            assert!(job(&mut cut).is_err());
            let mut dev = cut.into_surviving().expect("cut");
            dev.flush().expect("flush");
            drop(dev);
            let (findings, dirty) = fsck_findings_but_dirty(&img);
            states += 1;
            dirty_states += usize::from(dirty);
            if findings.is_empty() {
                continue;
            }
            // A main boot region torn in the switch: fsck.exfat offers to
            // restore it from the backup, and the backup is the whole
            // volume: with it restored, fsck.exfat finds it consistent.
            assert!(
                findings
                    .iter()
                    .any(|l| l.contains("restore the region from backup")),
                "cut at {k}, seed {seed}: {findings:?}"
            );
            let mut bytes = std::fs::read(&img).expect("read");
            let backup = bytes[12 * 512..24 * 512].to_vec();
            bytes[..12 * 512].copy_from_slice(&backup);
            std::fs::write(&restored, &bytes).expect("write");
            let (findings, _) = fsck_findings_but_dirty(&restored);
            assert!(
                findings.is_empty(),
                "cut at {k}, seed {seed}, main restored: {findings:?}"
            );
            torn_states += 1;
        }
    }
    eprintln!(
        "fsck.exfat on {states} cut states of {ops} ops: all consistent ({dirty_states} reported \
         only as dirty, {torn_states} a main boot region torn whose backup is consistent)"
    );
}

/// Files by path and bytes, as [`tool_tree`] gives them.
pub type Tree = Vec<(String, Vec<u8>)>;

/// An image of `size` made by `mkfs.exfat ARGS` in `tmp` (as `v.img`),
/// filled through exfat-fuse with [`tool_tree`] and then two files (of 3
/// and 2 MiB, from `seeds`) written interleaved in `piece`-byte pieces
/// ([`write_interleaved`]). Returns the image, the tree and the two files.
pub fn mkfs_exfat_filled(
    tmp: &TempDir,
    size: &str,
    args: &[&str],
    seeds: (u64, u64),
    piece: usize,
) -> (PathBuf, Tree, Vec<u8>, Vec<u8>) {
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", size, p]).assert_success();
    let mut mkfs_args = args.to_vec();
    mkfs_args.push(p);
    run(require_tool("mkfs.exfat"), &mkfs_args).assert_success();
    let tree = tool_tree();
    let (a, b) = (test_data(3 << 20, seeds.0), test_data(2 << 20, seeds.1));
    {
        let lo = LoopDevice::attach(&img);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_tree(&mnt, &tree);
        write_interleaved(&mnt, &a, &b, piece);
        m.unmount();
    }
    (img, tree, a, b)
}

/// The tree mtools writes: long names, subdirectories, sizes from empty
/// to several clusters.
pub fn fat_tool_tree() -> Vec<(String, Vec<u8>)> {
    let mut v = vec![
        ("readme.txt".to_string(), test_data(100, 1)),
        ("empty".to_string(), Vec::new()),
        (
            "A long photo name 0001.jpeg".to_string(),
            test_data(70_003, 2),
        ),
        ("photos/b.jpg".to_string(), test_data(9_000, 3)),
        (
            "photos/Holiday in the mountains.raw".to_string(),
            test_data(900_000, 4),
        ),
        ("docs/deep/er/note.md".to_string(), test_data(4097, 5)),
    ];
    for i in 0..30usize {
        v.push((
            format!("many/file number {i:02}.txt"),
            test_data(700 * i + 1, 6),
        ));
    }
    v
}

/// `mkfs.fat ARGS` on a sparse image of `size`, filled with [`fat_tool_tree`] by
/// mmd and mcopy.
pub fn mkfs_fat_filled(tmp: &TempDir, size: u64, args: &[&str]) -> PathBuf {
    let img = tmp.join("v.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(size))
        .expect("image");
    let mut all: Vec<&str> = args.to_vec();
    all.push(img.to_str().expect("utf-8"));
    run(require_tool("mkfs.fat"), &all).assert_success();
    let host = tmp.subdir("in");
    let mut made = std::collections::BTreeSet::new();
    for (i, (path, data)) in fat_tool_tree().iter().enumerate() {
        let mut dir = String::new();
        for part in path
            .split('/')
            .rev()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            dir = format!("{dir}/{part}");
            if made.insert(dir.clone()) {
                crate::checks::mtools("mmd", &img, &[&format!("::{dir}")]).assert_success();
            }
        }
        let file = host.join(format!("f{i}"));
        std::fs::write(&file, data).expect("write");
        let to = format!("::/{path}");
        crate::checks::mtools("mcopy", &img, &[file.to_str().expect("utf-8"), &to])
            .assert_success();
    }
    img
}
