//! The scan: apparent sizes, hard links once, symlinks skipped or followed
//! without looping, unreadable entries counted, names measured.

use mkfs_alloc_advise::testtree;
use mkfs_alloc_advise::{scan, DirRecord, ScanError, ScanOptions, ScanProgress};
use mkfs_alloc_testsupport::TempDir;
use std::ffi::OsStr;
use std::fs;
use std::sync::Mutex;

fn write(p: &std::path::Path, n: usize) {
    fs::write(p, vec![7u8; n]).expect("write");
}

#[test]
fn counts_files_dirs_and_names() {
    let s = TempDir::new("basic");
    let top = s.join("top");
    fs::create_dir_all(top.join("sub/empty")).expect("dirs");
    write(&top.join("a.txt"), 10);
    write(&top.join("sub/b"), 5000);
    write(&top.join("sub/a name longer than fifteen units.txt"), 0);
    fs::write(top.join("sparse"), b"").expect("sparse");
    fs::File::options()
        .write(true)
        .open(top.join("sparse"))
        .expect("open")
        .set_len(1 << 30)
        .expect("set_len");

    let r = scan(std::slice::from_ref(&top), &ScanOptions::default()).expect("scan");
    assert_eq!(r.file_count(), 4);
    assert_eq!(r.dir_count(), 3);
    // Apparent sizes: the sparse file counts its length, not its blocks.
    assert_eq!(r.apparent_bytes, 10 + 5000 + (1 << 30));
    let mut sizes = r.file_sizes.clone();
    sizes.sort();
    assert_eq!(sizes, [0, 10, 5000, 1 << 30]);

    let mut root = DirRecord::default();
    root.add(OsStr::new("top"));
    assert_eq!(r.root, root);
    // Directories: top (a.txt, sub, sparse), sub (b, long name, empty), empty.
    let mut entries: Vec<u32> = r.dirs.iter().map(|d| d.entries).collect();
    entries.sort();
    assert_eq!(entries, [0, 3, 3]);
    let sub = r
        .dirs
        .iter()
        .find(|d| d.entries == 3 && d.exfat_entries == 3 + 3 + 5)
        .expect("sub");
    // FAT32: "b" 1 + 0 (8.3), "empty" 1, long name 1 + 3 LFN.
    assert_eq!(sub.fat32_entries, 1 + 1 + 4);
    assert_eq!(r.symlinks_skipped + r.unreadable + r.duplicates_skipped, 0);
}

#[cfg(unix)]
#[test]
fn links_special_files_and_unreadable_entries() {
    use std::os::unix::fs::symlink;
    let s = TempDir::new("links");
    let top = s.join("top");
    fs::create_dir_all(top.join("d")).expect("dirs");
    write(&top.join("d/f"), 100);
    fs::hard_link(top.join("d/f"), top.join("hard")).expect("hard link");
    symlink("d", top.join("link-to-dir")).expect("symlink");
    symlink("d/f", top.join("link-to-file")).expect("symlink");
    symlink("..", top.join("d/loop")).expect("symlink");
    symlink("missing", top.join("broken")).expect("symlink");
    write(&top.join("what?.txt"), 1);
    // A special file (a socket; std cannot make a FIFO, and no tool is run).
    let _socket = std::os::unix::net::UnixListener::bind(top.join("socket")).expect("unix socket");

    // By default each hard link is a file, as a copy onto FAT/exFAT stores it.
    let r = scan(std::slice::from_ref(&top), &ScanOptions::default()).expect("scan");
    assert_eq!(r.file_count(), 3, "d/f, hard (its second link), what?.txt");
    assert_eq!(r.apparent_bytes, 201);
    assert_eq!(r.duplicates_skipped, 0);
    assert_eq!(r.hard_links_as_files, 1);
    let once = ScanOptions {
        hard_links_once: true,
        ..ScanOptions::default()
    };
    let r = scan(std::slice::from_ref(&top), &once).expect("scan");
    assert_eq!(
        r.file_count(),
        2,
        "f once (hard link counted once), what?.txt"
    );
    assert_eq!(r.apparent_bytes, 101);
    assert_eq!(r.duplicates_skipped, 1);
    assert_eq!(r.hard_links_as_files, 0);
    assert_eq!(r.symlinks_skipped, 4);
    assert_eq!(r.special_skipped, 1);
    assert_eq!(r.invalid_names, 1);
    assert!(r.invalid_name_paths[0].ends_with("what?.txt"));
    assert_eq!(r.unreadable, 0);

    let follow = ScanOptions {
        follow_symlinks: true,
        hard_links_once: true,
        ..ScanOptions::default()
    };
    let r = scan(std::slice::from_ref(&top), &follow).expect("scan");
    // link-to-file is the same inode as d/f: counted once. link-to-dir and
    // d/loop lead to directories already walked.
    assert_eq!(r.file_count(), 2);
    assert_eq!(r.dir_count(), 2);
    assert_eq!(r.duplicates_skipped, 1 + 1 + 2);
    assert_eq!(r.unreadable, 1, "the broken link");
    assert!(r.unreadable_paths[0].path.ends_with("broken"));

    // Following links, each link to d/f is a file of its own by default.
    let follow_each = ScanOptions {
        follow_symlinks: true,
        ..ScanOptions::default()
    };
    let r = scan(std::slice::from_ref(&top), &follow_each).expect("scan");
    assert_eq!(r.file_count(), 4, "d/f, hard, link-to-file, what?.txt");
    assert_eq!(r.hard_links_as_files, 2);
    assert_eq!(r.duplicates_skipped, 2, "link-to-dir and d/loop");
}

#[test]
fn path_arguments() {
    let s = TempDir::new("args");
    write(&s.join("one"), 3);
    fs::create_dir(s.join("dir")).expect("dir");
    let r = scan(
        &[s.join("one"), s.join("dir"), s.join("dir")],
        &ScanOptions::default(),
    )
    .expect("scan");
    assert_eq!(r.root.entries, 2, "a directory given twice is counted once");
    assert_eq!(r.file_count(), 1);
    assert_eq!(r.dir_count(), 1);

    let e = scan(&[s.join("nope")], &ScanOptions::default()).expect_err("missing");
    assert!(matches!(e, ScanError::Path { .. }));
    assert!(e.to_string().contains("nope"));
}

#[test]
fn progress_and_histogram() {
    let s = TempDir::new("progress");
    let tree = s.join("t");
    let stats = testtree::flat_sparse(&tree, 3000, 100, 1 << 20, 7).expect("tree");
    let seen = Mutex::new(Vec::<ScanProgress>::new());
    let cb = |p: &ScanProgress| seen.lock().expect("lock").push(*p);
    let opts = ScanOptions {
        progress: Some(&cb),
        progress_interval: std::time::Duration::ZERO,
        threads: 2,
        ..ScanOptions::default()
    };
    let r = scan(&[tree], &opts).expect("scan");
    assert_eq!(r.file_count(), stats.files);
    assert_eq!(r.dir_count(), stats.dirs);
    assert_eq!(r.apparent_bytes, stats.bytes);
    let seen = seen.into_inner().expect("lock");
    let last = seen.last().expect("at least the final report");
    assert_eq!(last.files, stats.files);
    assert_eq!(last.bytes, stats.bytes);
    assert_eq!(last.directories, stats.dirs);

    let h = r.histogram();
    assert_eq!(h.iter().map(|b| b.files).sum::<u64>(), stats.files);
    assert_eq!(h.iter().map(|b| b.bytes).sum::<u64>(), stats.bytes);
    for b in &h {
        assert!(b.min <= b.max);
    }
    assert!(h.last().expect("bucket").max >= (1 << 20) - 1);
}
