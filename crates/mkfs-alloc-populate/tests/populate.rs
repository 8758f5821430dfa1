//! Populated formats in memory: the same tree gives the same bytes whatever
//! its creation order; the clusters used are exactly advise's prediction;
//! every bad name is listed before anything is written; a source that
//! changes during the copy leaves no boot sector; the `fatfs` crate reads
//! the tree back (names, sizes, contents, mtimes).

use mkfs_alloc_advise::{footprint_for, scan, ScanOptions};
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::{
    plan, ClusterChoice, FormatOptions, FsChoice, FsKind, Layout, Medium, Prior, WriteError,
};
use mkfs_alloc_populate::{plan_tree, PopulateError, Problem, TimePolicy, Tree};
use mkfs_alloc_testsupport::TempDir;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// (path, contents) of the test tree; directories end in '/'.
fn entries() -> Vec<(String, Vec<u8>)> {
    let mut v = vec![
        ("README.TXT".to_string(), b"upper 8.3\n".to_vec()),
        ("readme.md".to_string(), b"lower 8.3\n".to_vec()),
        ("Mixed Case Long Name.txt".to_string(), vec![7u8; 5000]),
        ("docs/".to_string(), Vec::new()),
        ("docs/ünïcödé — file.txt".to_string(), b"utf-8\n".to_vec()),
        ("docs/empty".to_string(), Vec::new()),
        ("docs/deep/".to_string(), Vec::new()),
        (
            "docs/deep/big.bin".to_string(),
            (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        ),
        ("docs/deep/sparse.bin".to_string(), {
            let mut z = vec![0u8; 1 << 20];
            z[0] = 1;
            z
        }),
        ("emptydir/".to_string(), Vec::new()),
    ];
    for i in 0..40 {
        v.push((
            format!("many/file number {i:03} with a long name.dat"),
            vec![i as u8; i * 100],
        ));
    }
    v.push(("many/".to_string(), Vec::new()));
    // FAT at 512-byte clusters: `.`, `..` and 14 short names fill exactly
    // one cluster, so a short name stored with a long entry shows.
    v.push(("edge/".to_string(), Vec::new()));
    for i in 0..14 {
        let name = if i % 2 == 0 {
            format!("edge/E{i:02}.TXT")
        } else {
            format!("edge/e{i:02}.txt")
        };
        v.push((name, vec![b'e'; i]));
    }
    v
}

fn mtime_of(i: usize) -> SystemTime {
    // Some before 1980 (clamped), odd seconds, sub-second parts.
    let base = if i % 7 == 0 {
        100_000_000
    } else {
        1_600_000_001 + i as u64 * 3_601
    };
    SystemTime::UNIX_EPOCH + Duration::new(base, ((i as u64 * 123_456_789) % 1_000_000_000) as u32)
}

/// Creates the tree under `root` in the given order of `entries()` indices,
/// then sets every mtime (directories last, deepest first).
fn make_tree(root: &Path, order: &[usize]) {
    let e = entries();
    for &i in order {
        let (p, data) = &e[i];
        let path = root.join(p.trim_end_matches('/'));
        if p.ends_with('/') {
            fs::create_dir_all(&path).expect("mkdir");
        } else {
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, data).expect("write");
        }
    }
    let mut idx: Vec<usize> = (0..e.len()).collect();
    idx.sort_by_key(|&i| std::cmp::Reverse(e[i].0.matches('/').count()));
    for i in idx {
        let path = root.join(e[i].0.trim_end_matches('/'));
        let f = fs::File::open(&path).expect("open");
        f.set_modified(mtime_of(i)).expect("set mtime");
    }
    fs::File::open(root)
        .and_then(|f| f.set_modified(mtime_of(1)))
        .expect("root mtime");
}

fn layout(fs: FsKind, cluster: u64, size: u64) -> Layout {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_ABCD)
        .label("POP");
    plan(&opts, &Medium::whole(size, 512).expect("medium")).expect("plan")
}

fn format(l: &Layout, tree: Tree, time: TimePolicy) -> Result<Vec<u8>, WriteError> {
    let mut p = plan_tree(tree, l, time).expect("plan tree");
    let mut disk = MemDisk::new(512, l.volume_bytes() / 512).expect("disk");
    p.write_to(&mut disk, Prior::Unknown, &mut |_, _| {})?;
    Ok(disk.into_inner())
}

fn sizes() -> [(FsKind, u64, u64); 6] {
    [
        (FsKind::Exfat, 4096, 64 << 20),
        (FsKind::Exfat, 512, 64 << 20),
        (FsKind::Fat32, 512, 64 << 20),
        (FsKind::Fat32, 4096, 300 << 20),
        (FsKind::Fat16, 2048, 64 << 20),
        (FsKind::Fat12, 4096, 8 << 20),
    ]
}

#[test]
fn same_tree_in_another_creation_order_gives_the_same_bytes() {
    let n = entries().len();
    let forward: Vec<usize> = (0..n).collect();
    let mut backward = forward.clone();
    backward.reverse();
    // Directories must exist before their files in creation; create_dir_all handles it.
    let (a, b) = (TempDir::new("order-a"), TempDir::new("order-b"));
    make_tree(a.path(), &forward);
    make_tree(b.path(), &backward);
    for (fs_type, cluster, size) in sizes() {
        let l = layout(fs_type, cluster, size);
        let time = TimePolicy::default();
        let x = format(&l, Tree::from_dir(a.path()).expect("tree"), time).expect("format");
        let y = format(&l, Tree::from_dir(b.path()).expect("tree"), time).expect("format");
        assert!(x == y, "{fs_type} {cluster}: images differ");
        // SOURCE_DATE_EPOCH changes them (newer mtimes are clamped).
        let clamp = TimePolicy {
            clamp: Some(1_600_000_000),
        };
        let z = format(&l, Tree::from_dir(a.path()).expect("tree"), clamp).expect("format");
        assert!(x != z, "{fs_type} {cluster}: the clamp changed nothing");
    }
}

/// Clusters in use on the written volume, counted from its own bitmap
/// (exFAT) or FAT (FAT32).
fn used_clusters(l: &Layout, img: &[u8]) -> u64 {
    let boot = &img[..512];
    match l.fs() {
        FsKind::Exfat => {
            let heap = u64::from(u32::from_le_bytes(boot[88..92].try_into().expect("4")));
            let count = u32::from_le_bytes(boot[92..96].try_into().expect("4")) as usize;
            let spc = 1u64 << boot[109];
            // The bitmap is cluster 2.
            let at = (heap * 512) as usize;
            let _ = spc;
            let bytes = &img[at..at + count.div_ceil(8)];
            bytes.iter().map(|b| u64::from(b.count_ones())).sum()
        }
        fs => {
            let rsvd = u64::from(u16::from_le_bytes([boot[14], boot[15]]));
            let fat_sz16 = u64::from(u16::from_le_bytes([boot[22], boot[23]]));
            let fat_sz = if fat_sz16 != 0 {
                fat_sz16
            } else {
                u64::from(u32::from_le_bytes(boot[36..40].try_into().expect("4")))
            };
            let at = (rsvd * 512) as usize;
            let fat = &img[at..at + (fat_sz * 512) as usize];
            let entry = |n: usize| -> u32 {
                match fs {
                    FsKind::Fat12 => {
                        let o = n + n / 2;
                        let v = u32::from(u16::from_le_bytes([fat[o], fat[o + 1]]));
                        if n % 2 == 0 {
                            v & 0xFFF
                        } else {
                            v >> 4
                        }
                    }
                    FsKind::Fat16 => u32::from(u16::from_le_bytes([fat[2 * n], fat[2 * n + 1]])),
                    _ => {
                        u32::from_le_bytes(fat[4 * n..4 * n + 4].try_into().expect("4"))
                            & 0x0FFF_FFFF
                    }
                }
            };
            (2..2 + l.cluster_count().get() as usize)
                .filter(|&n| entry(n) != 0)
                .count() as u64
        }
    }
}

#[test]
fn used_clusters_equal_advise_prediction() {
    let t = TempDir::new("advise");
    let n = entries().len();
    make_tree(t.path(), &(0..n).collect::<Vec<_>>());
    // advise scans PATH arguments as root entries: give it each top entry.
    let mut tops: Vec<PathBuf> = fs::read_dir(t.path())
        .expect("ls")
        .map(|e| e.expect("entry").path())
        .collect();
    tops.sort();
    let data = scan(&tops, &ScanOptions::default()).expect("scan");
    for (fs_type, cluster, size) in sizes() {
        let l = layout(fs_type, cluster, size);
        let predicted = footprint_for(&l, &data).new_clusters();
        let img = format(
            &l,
            Tree::from_dir(t.path()).expect("tree"),
            TimePolicy::default(),
        )
        .expect("format");
        let used = used_clusters(&l, &img);
        assert_eq!(
            used,
            u64::from(l.used_clusters()) + predicted,
            "{fs_type} at {cluster}: used clusters differ from advise's prediction"
        );
        // advise's model is the one populate sizes directories with, so it
        // cannot catch a rule both get wrong: the spec's arithmetic, written
        // apart below, must agree too.
        assert_eq!(
            predicted,
            spec_clusters(fs_type, cluster, &entries()),
            "{fs_type} at {cluster}: clusters differ from the spec's count"
        );
    }
}

/// The clusters the test tree takes beyond an empty volume, from the specs
/// alone: every file ceil(size / cluster) clusters (none when empty); every
/// directory but the root its entries' bytes rounded up to whole clusters,
/// at least one. FAT (fatgen103 "FAT Directory Structure", "FAT Long
/// Directory Entries"): `.` and `..`, then per entry one short entry plus
/// ceil(UTF-16 units / 13) long entries unless the name is a short name
/// (8.3, each half in one case: the NT case bits cover it). exFAT
/// (specification §6.3, §7.4, §7.6, §7.7): per entry a File, a Stream
/// Extension and ceil(UTF-16 units / 15) File Name entries.
fn spec_clusters(fs: FsKind, cluster: u64, tree: &[(String, Vec<u8>)]) -> u64 {
    let clusters = |bytes: u64| bytes.div_ceil(cluster);
    let entry_bytes = |name: &str| -> u64 {
        let units = name.encode_utf16().count() as u64;
        match fs {
            FsKind::Exfat => 32 * (2 + units.div_ceil(15)),
            _ if is_short_name(name) => 32,
            _ => 32 * (1 + units.div_ceil(13)),
        }
    };
    let mut total = 0;
    let mut dirs: Vec<(&str, u64)> = vec![("", 0)];
    for (path, _) in tree.iter().filter(|(p, _)| p.ends_with('/')) {
        let own = if fs == FsKind::Exfat { 0 } else { 64 };
        dirs.push((path.trim_end_matches('/'), own));
    }
    for (path, data) in tree {
        let trimmed = path.trim_end_matches('/');
        let (parent, name) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
        let d = dirs
            .iter_mut()
            .find(|(p, _)| *p == parent)
            .expect("parent listed");
        d.1 += entry_bytes(name);
        if !path.ends_with('/') {
            total += clusters(data.len() as u64);
        }
    }
    // The root also holds the label entry (and on exFAT the bitmap and
    // up-case entries); its first cluster is the empty volume's, and
    // FAT12/16's root is the fixed area before the data region.
    let root = match fs {
        FsKind::Exfat => clusters(dirs[0].1 + 3 * 32) - 1,
        FsKind::Fat32 => clusters(dirs[0].1 + 32) - 1,
        _ => 0,
    };
    total
        + root
        + dirs[1..]
            .iter()
            .map(|(_, b)| clusters(*b).max(1))
            .sum::<u64>()
}

/// A name FAT stores in one short entry: ASCII, base of 1 to 8 and
/// extension of 0 to 3 characters of the short-name set, one dot at most,
/// and each half all upper or all lower case (fatgen103; the case of a
/// half in NTRes bits 3 and 4, as Windows NT writes them).
fn is_short_name(name: &str) -> bool {
    let (base, ext) = name.split_once('.').unwrap_or((name, ""));
    let ok = |s: &str, max: usize| (1..=max).contains(&s.len()) || (max == 3 && s.is_empty());
    let chars = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'()-@^_`{}~".contains(&b))
    };
    let one_case = |s: &str| {
        !(s.bytes().any(|b| b.is_ascii_lowercase()) && s.bytes().any(|b| b.is_ascii_uppercase()))
    };
    !base.is_empty()
        && ok(base, 8)
        && ok(ext, 3)
        && chars(base)
        && chars(ext)
        && one_case(base)
        && one_case(ext)
}

#[test]
fn every_bad_name_is_listed_before_writing() {
    let mut tree = Tree::new();
    let t = SystemTime::UNIX_EPOCH;
    for name in [
        "/ok.txt",
        "/a:b.txt",
        "/dir/what?",
        "/dir/trailing.",
        "/dir/trailing ",
        "/Same.txt",
        "/SAME.TXT",
        "/big.iso",
    ] {
        let len = if name == "/big.iso" { 5 << 30 } else { 1 };
        tree.add_file(name, std::io::empty(), len, t).expect("add");
    }
    tree.add_file(&format!("/{}", "x".repeat(256)), std::io::empty(), 1, t)
        .expect("add");
    let l = layout(FsKind::Fat32, 512, 64 << 20);
    let e = plan_tree(tree, &l, TimePolicy::default()).expect_err("refused");
    let PopulateError::Names { problems, .. } = &e else {
        panic!("unexpected {e}");
    };
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    for want in [
        "/a:b.txt",
        "/dir/what?",
        "/dir/trailing.",
        "/dir/trailing ",
        "/big.iso",
    ] {
        assert!(paths.contains(&want), "{want} not listed in {paths:?}");
    }
    assert!(problems
        .iter()
        .any(|p| matches!(p.problem, Problem::SameAfterUpcase { .. })));
    assert!(problems
        .iter()
        .any(|p| matches!(p.problem, Problem::TooLong { units: 256 })));
    assert!(!paths.contains(&"/ok.txt"));
    let msg = e.to_string();
    assert!(
        msg.contains("/dir/what?") && msg.contains("4 GiB - 1"),
        "{msg}"
    );

    // exFAT stores trailing dots and files over 4 GiB; the rest is still refused.
    let mut tree = Tree::new();
    tree.add_file("/trailing.", std::io::empty(), 1, t)
        .expect("add");
    tree.add_file("/a|b", std::io::empty(), 1, t).expect("add");
    let l = layout(FsKind::Exfat, 4096, 64 << 20);
    let e = plan_tree(tree, &l, TimePolicy::default()).expect_err("refused");
    let PopulateError::Names { problems, .. } = &e else {
        panic!("unexpected {e}");
    };
    assert_eq!(problems.len(), 1, "{e}");
    assert_eq!(problems[0].path, "/a|b");
}

#[test]
fn a_tree_too_large_is_refused_with_the_shortfall() {
    let mut tree = Tree::new();
    tree.add_file("/big", std::io::empty(), 100 << 20, SystemTime::UNIX_EPOCH)
        .expect("add");
    let l = layout(FsKind::Exfat, 4096, 64 << 20);
    let e = plan_tree(tree, &l, TimePolicy::default()).expect_err("too large");
    assert!(matches!(e, PopulateError::DoesNotFit { .. }), "{e}");
    assert!(e.to_string().contains("short"), "{e}");
}

#[test]
fn a_source_that_changes_leaves_no_boot_sector() {
    for fs_type in [FsKind::Exfat, FsKind::Fat32] {
        let t = TempDir::new("changes");
        let f = t.path().join("file.bin");
        fs::write(&f, vec![1u8; 10_000]).expect("write");
        let mut tree = Tree::new();
        tree.add_host_file(&f, "/file.bin").expect("add");
        let l = layout(fs_type, 512, 64 << 20);
        let mut p = plan_tree(tree, &l, TimePolicy::default()).expect("plan");
        fs::write(&f, vec![1u8; 5_000]).expect("shrink");
        let mut disk = MemDisk::new(512, l.volume_bytes() / 512).expect("disk");
        let e = p
            .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
            .expect_err("must fail");
        assert!(matches!(e, WriteError::Content(_)), "{e}");
        assert!(e.to_string().contains("changed"), "{e}");
        assert!(
            disk.as_bytes()[..512].iter().all(|&b| b == 0),
            "a boot sector was written"
        );
        // A reader that yields less than announced fails the same way.
        let mut tree = Tree::new();
        tree.add_file("/short", &b"abc"[..], 4, SystemTime::UNIX_EPOCH)
            .expect("add");
        let mut p = plan_tree(tree, &l, TimePolicy::default()).expect("plan");
        let mut disk = MemDisk::new(512, l.volume_bytes() / 512).expect("disk");
        let e = p
            .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
            .expect_err("must fail");
        assert!(matches!(e, WriteError::Content(_)), "{e}");
        assert!(disk.as_bytes()[..512].iter().all(|&b| b == 0));
    }
}

fn dos_expected(t: SystemTime) -> (u16, u16, u16, u16, u16, u16) {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
        .max(315_532_800);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // civil from days (Howard Hinnant)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y as u16,
        m as u16,
        d as u16,
        (rem / 3600) as u16,
        (rem / 60 % 60) as u16,
        (rem % 60 / 2 * 2) as u16,
    )
}

#[test]
fn fatfs_reads_back_the_tree() {
    let t = TempDir::new("fatfs");
    let e = entries();
    make_tree(t.path(), &(0..e.len()).collect::<Vec<_>>());
    for (fs_type, cluster, size) in [
        (FsKind::Fat32, 512, 64 << 20),
        (FsKind::Fat16, 2048, 64 << 20),
        (FsKind::Fat12, 4096, 8 << 20),
    ] {
        fatfs_reads(t.path(), &e, &layout(fs_type, cluster, size));
    }
}

fn fatfs_reads(src: &Path, e: &[(String, Vec<u8>)], l: &Layout) {
    let img = format(l, Tree::from_dir(src).expect("tree"), TimePolicy::default()).expect("format");
    let fsys = fatfs::FileSystem::new(std::io::Cursor::new(img), fatfs::FsOptions::new())
        .expect("fatfs mounts it");
    assert_eq!(
        format!("{:?}", fsys.fat_type()),
        format!("{:?}", l.fs()),
        "fatfs sees another FAT width"
    );
    let root = fsys.root_dir();
    for (i, (p, data)) in e.iter().enumerate() {
        let p = p.trim_end_matches('/');
        let (dir_path, name) = p.rsplit_once('/').unwrap_or(("", p));
        let dir = if dir_path.is_empty() {
            root.clone()
        } else {
            root.open_dir(dir_path).expect("dir")
        };
        let ent = dir
            .iter()
            .map(|x| x.expect("entry"))
            .find(|x| x.file_name() == name)
            .unwrap_or_else(|| panic!("{p} missing"));
        let m = ent.modified();
        let want = dos_expected(mtime_of(i));
        assert_eq!(
            (
                m.date.year,
                m.date.month,
                m.date.day,
                m.time.hour,
                m.time.min,
                m.time.sec
            ),
            want,
            "{p}: mtime"
        );
        if e[i].0.ends_with('/') {
            assert!(ent.is_dir(), "{p}");
            continue;
        }
        assert_eq!(ent.len(), data.len() as u64, "{p}: size");
        let mut got = Vec::new();
        ent.to_file().read_to_end(&mut got).expect("read");
        assert!(&got == data, "{p}: contents differ");
    }
}
