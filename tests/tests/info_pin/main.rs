//! `mkfs-alloc info` prints the same report, text and JSON, with and
//! without `--files`, for images made by our CLI (exFAT, FAT32, FAT16 in an
//! MBR, FAT12), by mkfs.fat with files copied by mtools, by mkfs.exfat, and
//! for an exFAT image with a cross-linked file. The expected outputs are in
//! `expected/`, one file per image and mode; the image's path is written
//! `IMAGE` there, and mkfs.exfat's serial (which it draws at random)
//! `SERIAL`.

use mkfs_alloc_tests::tempdir::TempDir;
use mkfs_alloc_tests::{mkfs_alloc, require_tool, run};
use std::fs;
use std::path::{Path, PathBuf};

const MODES: [(&str, &[&str]); 4] = [
    ("txt", &[]),
    ("json", &["--json"]),
    ("files.txt", &["--files"]),
    ("files.json", &["--files", "--json"]),
];

/// A small tree: files of several sizes in nested directories.
fn tree(tmp: &TempDir) -> PathBuf {
    let root = tmp.subdir("tree");
    let sub = root.join("photos").join("2026");
    fs::create_dir_all(&sub).expect("mkdir");
    fs::create_dir_all(root.join("empty")).expect("mkdir");
    let files: [(&Path, &str, usize); 6] = [
        (&root, "readme.txt", 13),
        (&root, "zero.bin", 0),
        (&root, "A longer name with spaces.dat", 70_000),
        (&root.join("photos"), "one.jpg", 4096),
        (&sub, "two.jpg", 123_457),
        (&sub, "three.raw", 1 << 20),
    ];
    for (dir, name, len) in files {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        fs::write(dir.join(name), data).expect("write");
    }
    root
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The expected output's file.
fn expected(name: &str, mode: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/info_pin/expected")
        .join(format!("{name}.{mode}"))
}

/// Runs `info` in every mode on `img` and compares with the pinned output
/// (`serial`: the serial to write `SERIAL`). With `MKFS_ALLOC_PIN_INFO=1`
/// the outputs are written instead (only for a new image).
#[track_caller]
fn check(name: &str, img: &Path, serial: Option<&str>) {
    let mut failures = Vec::new();
    for (mode, args) in MODES {
        let mut a: Vec<&str> = vec!["info"];
        a.extend_from_slice(args);
        a.push(path_str(img));
        let out = mkfs_alloc(&a);
        let mut text = format!(
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            out.code, out.stdout, out.stderr
        )
        .replace(path_str(img), "IMAGE");
        if let Some(s) = serial {
            text = text
                .replace(s, "SERIAL")
                .replace(&format!("{}-{}", &s[..4], &s[4..]), "SERIAL");
        }
        let file = expected(name, mode);
        if std::env::var_os("MKFS_ALLOC_PIN_INFO").is_some() && !file.exists() {
            fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            fs::write(&file, &text).expect("write expected");
            continue;
        }
        let want = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if want != text {
            failures.push(format!(
                "{name} {mode}: differs from {}\n--- got\n{text}",
                file.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Formats `img` with our CLI: `args` then the tree.
fn ours(tmp: &TempDir, name: &str, args: &[&str]) -> PathBuf {
    let img = tmp.join(&format!("{name}.img"));
    let t = tree(tmp);
    let mut a = vec![
        "--rootdir",
        path_str(&t),
        "--serial",
        "1234ABCD",
        "-L",
        "PIN",
        "-y",
    ];
    a.extend_from_slice(args);
    a.push(path_str(&img));
    mkfs_alloc(&a).assert_success();
    img
}

#[test]
fn info_of_our_exfat_image() {
    let tmp = TempDir::new("info-pin-exfat");
    let img = ours(
        &tmp,
        "exfat",
        &["--fs", "exfat", "--size", "64M", "-c", "32K"],
    );
    check("ours-exfat", &img, None);
}

#[test]
fn info_of_our_fat32_image() {
    let tmp = TempDir::new("info-pin-fat32");
    let img = ours(
        &tmp,
        "fat32",
        &["--fs", "fat32", "--size", "300M", "-c", "4K"],
    );
    check("ours-fat32", &img, None);
}

#[test]
fn info_of_our_fat16_image_in_an_mbr() {
    let tmp = TempDir::new("info-pin-fat16");
    let img = ours(
        &tmp,
        "fat16",
        &["--fs", "fat16", "--size", "100M", "--table", "mbr"],
    );
    check("ours-fat16-mbr", &img, None);
}

#[test]
fn info_of_our_fat12_image() {
    let tmp = TempDir::new("info-pin-fat12");
    let img = ours(&tmp, "fat12", &["--fs", "fat12", "--size", "4M"]);
    check("ours-fat12", &img, None);
}

/// The root directory's first file entry (0x85) of an exFAT image with a
/// 32 KiB-cluster heap: the byte offset of the entry set.
fn file_entries(img: &[u8]) -> Vec<usize> {
    let heap = u32::from_le_bytes(img[88..92].try_into().expect("4 bytes")) as usize * 512;
    let cluster = 1usize << (img[108] + img[109]);
    let root = u32::from_le_bytes(img[96..100].try_into().expect("4 bytes")) as usize;
    let at = heap + (root - 2) * cluster;
    (0..cluster / 32)
        .map(|i| at + 32 * i)
        .filter(|&o| img[o] == 0x85)
        .collect()
}

/// An exFAT entry set's SetChecksum (exFAT specification §6.3.3): every
/// byte but the checksum's own two.
fn set_checksum(set: &[u8]) -> u16 {
    set.iter().enumerate().fold(0u16, |c, (i, &b)| {
        if i == 2 || i == 3 {
            c
        } else {
            c.rotate_right(1).wrapping_add(u16::from(b))
        }
    })
}

#[test]
fn info_of_an_exfat_image_with_a_cross_linked_file() {
    let tmp = TempDir::new("info-pin-crosslink");
    let img = ours(
        &tmp,
        "cross",
        &["--fs", "exfat", "--size", "64M", "-c", "32K"],
    );
    let mut bytes = fs::read(&img).expect("read image");
    // The first two root files with data: the second's FirstCluster becomes
    // the first's (the stream extension follows its file entry).
    let with_data: Vec<usize> = file_entries(&bytes)
        .into_iter()
        .filter(|&o| bytes[o + 32 + 20..o + 32 + 24] != [0; 4])
        .collect();
    assert!(with_data.len() >= 2, "two root files with data");
    let first: [u8; 4] = bytes[with_data[0] + 52..with_data[0] + 56]
        .try_into()
        .expect("4 bytes");
    let second = with_data[1];
    bytes[second + 52..second + 56].copy_from_slice(&first);
    let set_len = 32 * (1 + usize::from(bytes[second + 1]));
    let sum = set_checksum(&bytes[second..second + set_len]);
    bytes[second + 2..second + 4].copy_from_slice(&sum.to_le_bytes());
    fs::write(&img, &bytes).expect("write image");
    check("ours-exfat-crosslinked", &img, None);
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools)"]
fn info_of_a_mkfs_fat_image_filled_by_mtools() {
    let tmp = TempDir::new("info-pin-mkfsfat");
    let img = tmp.join("mkfsfat.img");
    mkfs_alloc_tests::sparse_file(&img, 200 << 20);
    let out = run(
        require_tool("mkfs.fat"),
        &["-F", "32", "-i", "5EED0001", "-n", "TOOLS", path_str(&img)],
    );
    out.assert_success();
    let t = tree(&tmp);
    let mut args = vec!["-s", "-i", path_str(&img)];
    let entries: Vec<String> = fs::read_dir(&t)
        .expect("tree")
        .map(|e| path_str(&e.expect("entry").path()).to_string())
        .collect();
    let mut sorted = entries.clone();
    sorted.sort();
    args.extend(sorted.iter().map(String::as_str));
    args.push("::/");
    run(require_tool("mcopy"), &args).assert_success();
    check("mkfs-fat-mtools", &img, None);
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.exfat)"]
fn info_of_a_mkfs_exfat_image() {
    let tmp = TempDir::new("info-pin-mkfsexfat");
    let img = tmp.join("mkfsexfat.img");
    mkfs_alloc_tests::sparse_file(&img, 300 << 20);
    run(
        require_tool("mkfs.exfat"),
        &["-L", "TOOLS", "-c", "64K", path_str(&img)],
    )
    .assert_success();
    let bytes = fs::read(&img).expect("read image");
    let serial = format!(
        "{:08X}",
        u32::from_le_bytes(bytes[100..104].try_into().expect("4 bytes"))
    );
    check("mkfs-exfat", &img, Some(&serial));
}
