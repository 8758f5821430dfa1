//! `info --files` on volumes filled through mtools (FAT) and exfat-fuse
//! (exFAT): the walk finds exactly the files put in, with long names, nested
//! directories and fragmented files. Needs root and the tools.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use common::*;
use mkfs_alloc_blockio::ImageFile;
use mkfs_alloc_inspect::{FsKind, Volume};
use mkfs_alloc_layout::units::{KIB, MIB};
use mkfs_alloc_layout::{plan, write_volume, ClusterChoice, FormatOptions, FsChoice, Medium};

/// The files to put in: path → size. Long names, Unicode, nesting, empty
/// files, sizes on and around cluster boundaries.
fn plan_files() -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    m.insert("/empty.txt".into(), 0);
    m.insert("/one byte".into(), 1);
    m.insert(
        "/A rather long file name with spaces and more than 15 characters.bin".into(),
        70_000,
    );
    m.insert("/exactly-32K.dat".into(), 32 * KIB);
    m.insert("/docs/Ünïcödé naïve café.txt".into(), 5_000);
    m.insert("/docs/deeper/still deeper/leaf.bin".into(), 300_001);
    m.insert("/docs/deeper/x".into(), 4_097);
    for i in 0..40 {
        m.insert(
            format!("/many/file number {i:03} with a long name.dat"),
            100 * i + 1,
        );
    }
    m
}

fn dirs_of(files: &BTreeMap<String, u64>) -> Vec<String> {
    let mut d: Vec<String> = Vec::new();
    for p in files.keys() {
        let mut cur = String::new();
        let parts: Vec<&str> = p.trim_start_matches('/').split('/').collect();
        for part in &parts[..parts.len() - 1] {
            cur.push('/');
            cur.push_str(part);
            if !d.contains(&cur) {
                d.push(cur.clone());
            }
        }
    }
    d
}

/// Checks the walk against the files put in (`extra` are files added on top
/// of `plan_files`).
fn check(v: &Volume, expected: &BTreeMap<String, u64>, dirs: usize) {
    assert!(v.error.is_none(), "{:?}", v.error);
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    let f = v.files.as_ref().unwrap();
    assert!(f.complete);
    let found: BTreeMap<String, u64> = f
        .entries
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| (e.path.clone(), e.size))
        .collect();
    assert_eq!(&found, expected);
    assert_eq!(f.count, expected.len() as u64);
    assert_eq!(f.dirs, dirs as u64);
    let total: u64 = expected.values().sum();
    assert_eq!(f.total_bytes, total);
    let cs = v.cluster_size.unwrap();
    let alloc: u64 = expected.values().map(|s| s.div_ceil(cs) * cs).sum();
    assert_eq!(f.allocated_bytes, alloc);
    // Waste (mkfs_alloc_layout::waste): files' and directories' clusters,
    // less the root directory's first cluster, minus the files' sizes. The
    // fixed FAT12/16 root is not in `dir_bytes`.
    let root_in_data = matches!(v.ours(), Some(FsKind::Fat32 | FsKind::Exfat));
    let root_first = |c: u64| if root_in_data { c } else { 0 };
    assert_eq!(f.waste_bytes, alloc + f.dir_bytes - root_first(cs) - total);
    for a in &f.at_cluster_sizes {
        let c = a.cluster_size;
        let want: u64 = expected.values().map(|s| s.div_ceil(c) * c).sum();
        assert_eq!(a.allocated_bytes, want, "at {c}");
        assert_eq!(a.waste_bytes, want + a.dir_bytes - root_first(c) - total);
        assert!(a.dir_bytes >= c * dirs as u64);
    }
    assert!(f.at_cluster_sizes.iter().any(|a| a.cluster_size == cs));
    // Used space covers the files and directories.
    assert!(v.used_bytes.unwrap() >= f.allocated_bytes + f.dir_bytes);
}

/// Free bytes as `mdir` reports them.
fn mdir_free(img: &str) -> u64 {
    let out = run("mdir", &["-i", img, "::/"]);
    let line = out.lines().find(|l| l.contains("bytes free")).unwrap();
    line.replace("bytes free", "")
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// mtools: `mmd -i IMG ::/dir`, `mcopy -i IMG FILE ::/path`, `mdel`.
fn fill_fat(img: &Path, t: &TempDir, cs: u64) -> BTreeMap<String, u64> {
    let files = plan_files();
    let imgs = img.to_str().unwrap();
    for d in dirs_of(&files) {
        run("mmd", &["-i", imgs, &format!("::{d}")]);
    }
    for (i, (p, &size)) in files.iter().enumerate() {
        let src = t.join(&format!("src{i}"));
        std::fs::write(&src, body(size as usize, i as u8)).unwrap();
        run(
            "mcopy",
            &["-i", imgs, src.to_str().unwrap(), &format!("::{p}")],
        );
    }
    // Fragment a file: a, b, c in a row, a filler that leaves 3 clusters
    // free, delete b (a 2-cluster hole), then copy a 4-cluster file: no free
    // run is long enough, so it takes the hole and the tail.
    let mut expected = files;
    let copy = |name: &str, size: u64, expected: &mut BTreeMap<String, u64>| {
        let src = t.join("frag");
        std::fs::write(&src, body(size as usize, 7)).unwrap();
        run(
            "mcopy",
            &["-i", imgs, src.to_str().unwrap(), &format!("::{name}")],
        );
        expected.insert(name.into(), size);
    };
    copy("/frag-a", 3 * cs, &mut expected);
    copy("/frag-b", 2 * cs, &mut expected);
    copy("/frag-c", cs, &mut expected);
    let free = mdir_free(imgs);
    copy("/filler", free - 3 * cs, &mut expected);
    run("mdel", &["-i", imgs, "::/frag-b"]);
    expected.remove("/frag-b");
    copy("/fragmented big file.bin", 4 * cs, &mut expected);
    expected
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat_filled_by_mtools() {
    let t = TempDir::new("mtools");
    // (mkfs.fat arguments, size)
    let cases: [(&[&str], u64); 3] = [
        (&["-F", "32", "-s", "1"], 100 * MIB),
        (&["-F", "16", "-s", "4"], 64 * MIB),
        (&["-F", "12", "-s", "8"], 8 * MIB),
    ];
    for (i, (args, size)) in cases.iter().enumerate() {
        let img = t.join(&format!("m{i}.img"));
        sparse(&img, *size);
        // mkfs.fat ARGS -n FILES IMG
        let mut a = args.to_vec();
        a.extend_from_slice(&["-n", "FILES", img.to_str().unwrap()]);
        run("mkfs.fat", &a);
        let cs = 512 * args[3].parse::<u64>().unwrap();
        let expected = fill_fat(&img, &t, cs);
        let r = inspect_file(&img, true);
        let v = &r.volumes[0];
        assert!(matches!(
            v.ours(),
            Some(FsKind::Fat12 | FsKind::Fat16 | FsKind::Fat32)
        ));
        check(v, &expected, dirs_of(&plan_files()).len());
        let f = v.files.as_ref().unwrap();
        assert!(
            f.fragmented >= 1,
            "case {i}: the fragmented file was not seen"
        );
        let frag = f
            .entries
            .as_ref()
            .unwrap()
            .iter()
            .find(|e| e.path == "/fragmented big file.bin")
            .unwrap();
        assert!(frag.fragments.unwrap() >= 2, "{frag:?}");
        // fsck.fat agrees that the volume is sound.
        run("fsck.fat", &["-n", img.to_str().unwrap()]);
    }
}

/// Writes the planned files through an exfat-fuse mount, with a fragmented
/// file made by alternating appends.
fn fill_exfat(img: &Path, t: &TempDir) -> BTreeMap<String, u64> {
    let lo = loop_at(img, 0, None);
    let mnt = mount_exfat(&lo, &t.join("mnt"));
    let root = mnt.dir().to_path_buf();
    let mut expected = plan_files();
    for d in dirs_of(&expected) {
        std::fs::create_dir_all(root.join(d.trim_start_matches('/'))).unwrap();
    }
    for (i, (p, &size)) in expected.iter().enumerate() {
        std::fs::write(
            root.join(p.trim_start_matches('/')),
            body(size as usize, i as u8),
        )
        .unwrap();
    }
    // Two files grown alternately, one deleted, then more written.
    {
        let mut a = std::fs::File::create(root.join("frag one")).unwrap();
        let mut b = std::fs::File::create(root.join("frag two")).unwrap();
        for _ in 0..8 {
            a.write_all(&body(40_000, 1)).unwrap();
            a.sync_all().unwrap();
            b.write_all(&body(40_000, 2)).unwrap();
            b.sync_all().unwrap();
        }
    }
    std::fs::remove_file(root.join("frag two")).unwrap();
    std::fs::write(root.join("after the delete.bin"), body(150_000, 3)).unwrap();
    expected.insert("/frag one".into(), 320_000);
    expected.insert("/after the delete.bin".into(), 150_000);
    // An empty directory too.
    std::fs::create_dir(root.join("empty dir")).unwrap();
    mnt.unmount();
    drop(lo);
    expected
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_filled_through_fuse() {
    let t = TempDir::new("fuse");
    for (i, ours) in [false, true].into_iter().enumerate() {
        let img = t.join(&format!("x{i}.img"));
        if ours {
            let opts = FormatOptions::new()
                .fs(FsChoice::Fixed(FsKind::Exfat))
                .cluster(ClusterChoice::Bytes(4 * KIB))
                .label("OURS")
                .serial(0xABCD_0001);
            let layout = plan(&opts, &Medium::whole(64 * MIB, 512).expect("medium")).unwrap();
            let mut dev = ImageFile::create(&img, 64 * MIB, 512).unwrap();
            write_volume(&layout, &mut dev, &mut |_, _| {}).unwrap();
        } else {
            sparse(&img, 64 * MIB);
            // mkfs.exfat -c 8K -L TOOL IMG
            run(
                "mkfs.exfat",
                &["-c", "8K", "-L", "TOOL", img.to_str().unwrap()],
            );
        }
        let expected = fill_exfat(&img, &t);
        let r = inspect_file(&img, true);
        let v = &r.volumes[0];
        assert_eq!(v.ours(), Some(FsKind::Exfat));
        check(v, &expected, dirs_of(&plan_files()).len() + 1);
        let f = v.files.as_ref().unwrap();
        let frag = f
            .entries
            .as_ref()
            .unwrap()
            .iter()
            .find(|e| e.path == "/frag one")
            .unwrap();
        assert!(frag.fragments.unwrap() >= 2, "{frag:?}");
        assert!(f.fragmented >= 1);
        run("fsck.exfat", &["-n", img.to_str().unwrap()]);
    }
}
