//! Hostile sources: names that readers disagree on are refused
//! before anything is written; a tree changed between the walk and the
//! copy (a file or directory swapped for a symbolic link or another file)
//! never puts a byte from outside the tree into the volume.
//!
//! The library's API is the race window: `Tree::from_dir` walks,
//! `write_volume_with` copies; each test changes the tree in between, which
//! is exactly what a process racing a format can do (deterministic here).

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::{
    plan, ClusterChoice, FormatOptions, FsChoice, FsKind, Layout, Medium, Prior, WriteError,
};
use mkfs_alloc_populate::{plan_tree, PopulateError, Problem, TimePolicy, Tree};
use mkfs_alloc_testsupport::TempDir;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

fn layout(fs: FsKind, cluster: u64, size: u64) -> Layout {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_5678);
    plan(&opts, &Medium::whole(size, 512).expect("medium")).expect("plan")
}

fn problems(tree: Tree, fs: FsKind) -> Vec<(String, Problem)> {
    let cluster = if fs == FsKind::Fat16 { 2048 } else { 512 };
    let l = layout(fs, cluster, 64 << 20);
    match plan_tree(tree, &l, TimePolicy::default()) {
        Err(PopulateError::Names { problems, .. }) => {
            problems.into_iter().map(|p| (p.path, p.problem)).collect()
        }
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("{fs}: accepted"),
    }
}

/// U+FFFF and every other noncharacter, in FAT long names
/// and exFAT names alike.
#[test]
fn noncharacters_are_refused_on_every_file_system() {
    let names = [
        "\u{FFFF}",
        "\u{FFFE}",
        "\u{FDD0}",
        "\u{FDEF}",
        "\u{1FFFF}",
        "\u{10FFFE}",
    ];
    for fs in [FsKind::Exfat, FsKind::Fat32, FsKind::Fat16] {
        let mut tree = Tree::new();
        let t = SystemTime::UNIX_EPOCH;
        tree.add_file("/fine.txt", std::io::empty(), 1, t)
            .expect("add");
        for (i, c) in names.iter().enumerate() {
            tree.add_file(&format!("/dir/name{i}{c}.txt"), std::io::empty(), 1, t)
                .expect("add");
        }
        let got = problems(tree, fs);
        assert_eq!(got.len(), names.len(), "{fs}: {got:?}");
        for (i, c) in names.iter().enumerate() {
            let ch = c.chars().next().expect("one char");
            let want = (format!("/dir/name{i}{c}.txt"), Problem::Noncharacter { ch });
            assert!(got.contains(&want), "{fs}: {want:?} not in {got:?}");
        }
        let msg = Problem::Noncharacter { ch: '\u{FFFF}' }.to_string();
        assert!(
            msg.contains("U+FFFF") && msg.contains("noncharacter"),
            "{msg}"
        );
    }
}

/// A Linux name holding a surrogate in WTF-8 form (`ED A0 80`, U+D800) is
/// refused naming the surrogate; other bytes that are not UTF-8 are refused
/// as not Unicode.
#[cfg(unix)]
#[test]
fn surrogate_byte_names_are_refused_with_their_reason() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = TempDir::new("hostile-names");
    let src = tmp.subdir("src");
    fs::write(src.join(OsStr::from_bytes(b"sur\xED\xA0\x80.txt")), b"x").expect("write");
    fs::write(src.join(OsStr::from_bytes(b"bad\xFF.txt")), b"x").expect("write");
    fs::write(src.join("fine.txt"), b"x").expect("write");
    for fs in [FsKind::Exfat, FsKind::Fat32] {
        let tree = Tree::from_dir(&src).expect("walk");
        let got = problems(tree, fs);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got.iter().any(
                |(p, e)| p.contains("sur") && *e == Problem::UnpairedSurrogate { unit: 0xD800 }
            ),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|(p, e)| p.contains("bad") && *e == Problem::NotUnicode),
            "{got:?}"
        );
    }
}

/// The secret outside the tree: as long as the public file, so that a size
/// check alone cannot notice the swap.
const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-TREE-0123456789";
const PUBLIC: &[u8] = b"public-inside-the-tree-abcdefghijk";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    (0..hay.len().saturating_sub(needle.len()))
        .any(|i| hay[i] == needle[0] && hay[i..].starts_with(needle))
}

/// `src/` with `a.txt` and `dir/f.txt` (public), `outside/` with the same
/// names holding the secret.
fn race_tree(tmp: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    assert_eq!(SECRET.len(), PUBLIC.len());
    let src = tmp.subdir("src");
    let out = tmp.subdir("outside");
    for d in [&src, &out] {
        fs::create_dir_all(d.join("dir")).expect("mkdir");
    }
    for (d, data) in [(&src, PUBLIC), (&out, SECRET)] {
        fs::write(d.join("a.txt"), data).expect("write");
        fs::write(d.join("dir/f.txt"), data).expect("write");
    }
    (src, out)
}

/// Walks `src`, lets `swap` change it, then copies: the result and the
/// volume's bytes.
fn walk_swap_copy(
    src: &Path,
    fs_type: FsKind,
    swap: impl FnOnce(),
) -> (Result<(), WriteError>, Vec<u8>) {
    // Small volumes: the whole image is searched for the secret.
    let l = match fs_type {
        FsKind::Exfat => layout(fs_type, 512, 8 << 20),
        _ => layout(fs_type, 2048, 16 << 20),
    };
    let tree = Tree::from_dir(src).expect("walk");
    let mut p = plan_tree(tree, &l, TimePolicy::default()).expect("plan");
    swap();
    let mut disk = MemDisk::new(512, l.volume_bytes() / 512).expect("disk");
    let r = p
        .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
        .map(|_| ());
    (r, disk.into_inner())
}

fn assert_refused(what: &str, r: Result<(), WriteError>, img: &[u8]) {
    let e = r.expect_err(what);
    assert!(matches!(e, WriteError::Content(_)), "{what}: {e}");
    assert!(e.to_string().contains("replaced"), "{what}: {e}");
    assert!(
        !contains(img, SECRET),
        "{what}: the secret is in the volume"
    );
    assert!(
        img[..512].iter().all(|&b| b == 0),
        "{what}: a boot sector was written"
    );
}

/// A directory swapped for a symbolic link to a
/// directory outside the tree, between the walk and the copy.
#[test]
fn a_directory_swapped_for_a_link_is_not_followed() {
    use std::os::unix::fs::symlink;
    for fs_type in [FsKind::Exfat, FsKind::Fat16] {
        let tmp = TempDir::new("race-dir");
        let (src, out) = race_tree(&tmp);
        let (r, img) = walk_swap_copy(&src, fs_type, || {
            fs::rename(src.join("dir"), src.join("dir.old")).expect("rename");
            symlink(out.join("dir"), src.join("dir")).expect("symlink");
        });
        assert_refused("dir -> link", r, &img);
    }
}

/// A file swapped for a symbolic link to a secret of the same size.
#[test]
fn a_file_swapped_for_a_link_is_not_followed() {
    use std::os::unix::fs::symlink;
    for fs_type in [FsKind::Exfat, FsKind::Fat16] {
        let tmp = TempDir::new("race-file");
        let (src, out) = race_tree(&tmp);
        let (r, img) = walk_swap_copy(&src, fs_type, || {
            fs::remove_file(src.join("dir/f.txt")).expect("rm");
            symlink(out.join("dir/f.txt"), src.join("dir/f.txt")).expect("symlink");
        });
        assert_refused("file -> link", r, &img);
    }
}

/// A file swapped for a hard link to a secret (same size, same file
/// system): only its identity tells it apart.
#[test]
fn a_file_swapped_for_another_file_is_refused() {
    let tmp = TempDir::new("race-hardlink");
    let (src, out) = race_tree(&tmp);
    let (r, img) = walk_swap_copy(&src, FsKind::Exfat, || {
        fs::remove_file(src.join("a.txt")).expect("rm");
        fs::hard_link(out.join("a.txt"), src.join("a.txt")).expect("link");
    });
    assert_refused("file -> hard link", r, &img);
}

/// A directory replaced by another real directory (moved aside, a new one
/// made in its place holding a hard link to the secret).
#[test]
fn a_directory_replaced_by_another_is_refused() {
    let tmp = TempDir::new("race-newdir");
    let (src, out) = race_tree(&tmp);
    let (r, img) = walk_swap_copy(&src, FsKind::Fat16, || {
        fs::rename(src.join("dir"), src.join("dir.old")).expect("rename");
        fs::create_dir(src.join("dir")).expect("mkdir");
        fs::hard_link(out.join("dir/f.txt"), src.join("dir/f.txt")).expect("link");
    });
    assert_refused("dir -> new dir", r, &img);
}

/// The root given by path swapped for a link to another directory.
#[test]
fn a_swapped_root_is_refused() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("race-root");
    let (src, out) = race_tree(&tmp);
    let (r, img) = walk_swap_copy(&src, FsKind::Exfat, || {
        fs::rename(&src, tmp.join("src.old")).expect("rename");
        symlink(&out, &src).expect("symlink");
    });
    assert_refused("root -> link", r, &img);
}

/// Untouched, the same tree copies (the checks do not refuse a tree that
/// did not change), and the public bytes are in the volume.
#[test]
fn an_unchanged_tree_copies() {
    let tmp = TempDir::new("race-none");
    let (src, _) = race_tree(&tmp);
    let (r, img) = walk_swap_copy(&src, FsKind::Exfat, || {});
    r.expect("copy");
    assert!(contains(&img, PUBLIC) && !contains(&img, SECRET));
}

/// What the walk skips is counted by kind: links and FIFOs are not copied.
#[test]
#[cfg(unix)]
fn skipped_entries_are_counted_by_kind() {
    use mkfs_alloc_populate::SkipKind;
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("skipped-kinds");
    let src = tmp.join("src");
    fs::create_dir_all(src.join("d")).expect("mkdir");
    fs::write(src.join("f.txt"), b"kept").expect("write");
    symlink("f.txt", src.join("l1")).expect("symlink");
    symlink("../f.txt", src.join("d/l2")).expect("symlink");
    rustix::fs::mkfifoat(rustix::fs::CWD, src.join("p"), rustix::fs::Mode::RUSR).expect("mkfifo");
    let tree = Tree::from_dir(&src).expect("walk");
    let counts = tree.skipped_counts();
    assert_eq!(counts.get(&SkipKind::Symlink), Some(&2), "{counts:?}");
    assert_eq!(counts.get(&SkipKind::Fifo), Some(&1), "{counts:?}");
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert_eq!(tree.file_count(), 1);
}
