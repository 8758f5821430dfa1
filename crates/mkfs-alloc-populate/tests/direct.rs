//! File data through an image's `FileCopier` (`--copy auto`): the image is
//! byte-identical to one written through the writer, whatever way the host
//! took (clone, in-kernel copy, read and write; on the host file system the
//! tests run on); and a source written to after the walk with its size kept
//! is refused, through the copier or not, before any boot sector.

use mkfs_alloc_blockio::{BlockIo, CopyMode, ImageFile};
use mkfs_alloc_layout::{plan, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium, Prior};
use mkfs_alloc_populate::{plan_tree, Populated, TimePolicy, Tree};
use mkfs_alloc_testsupport::{test_data, TempDir};
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

const MIB: u64 = 1 << 20;

/// Files of 0 bytes to a few MiB, one with a 256 KiB zero run, one of
/// exactly 8 KiB, one 1 byte short of it.
fn make_tree(root: &Path) {
    fs::create_dir_all(root.join("sub")).expect("mkdir");
    for (i, len) in [0usize, 1, 4095, 8191, 8192, 100_000, 3 * MIB as usize + 17]
        .into_iter()
        .enumerate()
    {
        let mut data = test_data(len, i as u64 + 1);
        if len > MIB as usize {
            data[MIB as usize..MIB as usize + (256 << 10)].fill(0);
        }
        let dir = if i % 2 == 0 {
            root.to_path_buf()
        } else {
            root.join("sub")
        };
        fs::write(dir.join(format!("f{i}.bin")), &data).expect("write");
    }
}

fn planned(root: &Path, fs: FsKind) -> Populated {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(4096))
        .serial(0x1234_5678);
    let layout = plan(&opts, &Medium::whole(64 * MIB, 512).expect("medium")).expect("plan");
    let tree = Tree::from_dir(root).expect("walk");
    plan_tree(tree, &layout, TimePolicy::default()).expect("plan tree")
}

/// Formats a new image at `path`, through a copier when `mode` is given.
fn format(root: &Path, fs: FsKind, path: &Path, mode: Option<CopyMode>) -> Result<Vec<u8>, String> {
    let mut p = planned(root, fs);
    let mut img = ImageFile::create(path, 64 * MIB, 512).expect("image");
    if let Some(mode) = mode {
        p.copy_through(img.copier(mode).expect("copier"), 0);
    }
    let r = p.write_to(&mut img, Prior::NoFileSystem, &mut |_, _| {});
    let mut bytes = vec![0; 64 * MIB as usize];
    img.read_blocks(0, &mut bytes).expect("read");
    r.map(|_| bytes).map_err(|e| e.to_string())
}

#[test]
fn the_copier_gives_the_same_bytes() {
    let dir = TempDir::new("direct");
    make_tree(&dir.join("tree"));
    for fs in [FsKind::Exfat, FsKind::Fat16] {
        let plain = format(&dir.join("tree"), fs, &dir.join("plain.img"), None).expect("plain");
        let direct = format(
            &dir.join("tree"),
            fs,
            &dir.join("direct.img"),
            Some(CopyMode::Auto),
        )
        .expect("direct");
        assert!(plain == direct, "{fs:?}: the images differ");
        fs::remove_file(dir.join("plain.img")).expect("rm");
        fs::remove_file(dir.join("direct.img")).expect("rm");
    }
    // What went through the copier: the whole 4 KiB blocks of the files of
    // at least 4 KiB, by one way or another.
    let mut p = planned(&dir.join("tree"), FsKind::Exfat);
    let mut img = ImageFile::create(dir.join("c.img"), 64 * MIB, 512).expect("image");
    p.copy_through(img.copier(CopyMode::Auto).expect("copier"), 0);
    p.write_to(&mut img, Prior::NoFileSystem, &mut |_, _| {})
        .expect("write");
    let c = p.copy_counts().expect("counts");
    // Files of 8191, 8192, 100,000 and 3 MiB + 17 bytes; 4095 bytes is
    // below one block. The 256 KiB zero run may be skipped (a fresh image).
    let want = 4096 + 8192 + 98_304 + 3 * MIB;
    let got = c.cloned + c.copied_in_kernel + c.written;
    if img
        .copier(CopyMode::Auto)
        .expect("copier")
        .host_block_size()
        == 4096
    {
        assert!(got <= want && got + (256 << 10) >= want, "{c:?}");
    }
}

#[test]
fn a_source_rewritten_after_the_walk_is_refused() {
    let dir = TempDir::new("direct-changed");
    let root = dir.join("tree");
    make_tree(&root);
    for mode in [None, Some(CopyMode::Auto)] {
        let mut p = planned(&root, FsKind::Exfat);
        // Same size, other bytes, a later modification time.
        let f = root.join("f6.bin");
        let len = fs::metadata(&f).expect("stat").len() as usize;
        fs::write(&f, test_data(len, 99)).expect("rewrite");
        let later = SystemTime::now() + Duration::from_secs(10);
        fs::File::options()
            .write(true)
            .open(&f)
            .and_then(|h| h.set_modified(later))
            .expect("mtime");
        let path = dir.join("img");
        let mut img = ImageFile::create(&path, 64 * MIB, 512).expect("image");
        if let Some(mode) = mode {
            p.copy_through(img.copier(mode).expect("copier"), 0);
        }
        let e = p
            .write_to(&mut img, Prior::NoFileSystem, &mut |_, _| {})
            .expect_err("a rewritten source");
        assert!(e.to_string().contains("was modified"), "{mode:?}: {e}");
        let mut boot = vec![0; 512];
        img.read_blocks(0, &mut boot).expect("read");
        assert!(
            boot.iter().all(|&b| b == 0),
            "{mode:?}: a boot sector was written"
        );
        drop(img);
        fs::remove_file(&path).expect("rm");
        make_tree(&root);
    }
}

#[test]
fn a_path_inside_the_tree_is_found_by_identity_not_by_name() {
    let dir = TempDir::new("find-path");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("sub")).expect("test tree");
    fs::write(root.join("sub/file"), b"data").expect("test tree");
    fs::write(dir.path().join("outside"), b"x").expect("test tree");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("sub"), dir.path().join("link")).expect("test tree");
    let mut tree = Tree::new();
    tree.add_dir(&root, "/").expect("test tree");
    // An existing file, a new one in a directory of the tree, and one
    // reached through a link are inside; files beside the tree are not.
    let found = tree.find_path(&root.join("sub/file")).expect("inside");
    assert!(found.ends_with("sub/file"), "{}", found.display());
    assert!(tree.find_path(&root.join("sub/new.img")).is_some());
    #[cfg(unix)]
    assert!(tree.find_path(&dir.path().join("link/new.img")).is_some());
    assert_eq!(tree.find_path(&dir.path().join("outside")), None);
    assert_eq!(tree.find_path(&dir.path().join("new.img")), None);
}
