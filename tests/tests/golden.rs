//! Byte identity across refactors: a matrix of CLI runs, compat front-end
//! runs and library calls, each with every identifier pinned, whose images'
//! CRC-64 and length are recorded in `fixtures/golden/images.txt`. A change
//! of the code that changes one byte of one image fails here, naming the
//! case. A deliberate change of the format rewrites the file
//! (`MKFS_ALLOC_BLESS=1 cargo test -p mkfs-alloc-tests --test golden`), and
//! the diff of that file shows which cases changed.

use mkfs_alloc::blockio::{ImageFile, MemDisk};
use mkfs_alloc::layout::{FsKind, Timestamp};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::populate::{TimePolicy, Tree};
use mkfs_alloc::MediumOptions;
use mkfs_alloc_tests::{mkfs_alloc, mkfs_alloc_bin, run_env, TempDir, SOURCE_DATE_EPOCH};
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_XZ);

/// CLI runs: (case name, arguments before the target). `SOURCE_DATE_EPOCH`
/// is pinned; `ROOT` is replaced by the fixed tree's path.
#[rustfmt::skip]
const CLI: &[(&str, &[&str])] = &[
    ("exfat-64M-4K", &["--fs", "exfat", "--cluster", "4K", "--size", "64M", "--serial", "1234ABCD"]),
    ("exfat-256M-32K-4Kn", &["--fs", "exfat", "--cluster", "32K", "--sector-size", "4096", "--size", "256M", "--serial", "1234ABCD"]),
    ("exfat-1G-128K-gpt", &["--fs", "exfat", "--cluster", "128K", "--table", "gpt", "--size", "1G", "--serial", "1234ABCD", "--label", "Golden ü"]),
    ("exfat-8M-auto-mbr", &["--fs", "exfat", "--table", "mbr", "--size", "8M", "--serial", "1234ABCD"]),
    ("exfat-default-300M", &["--size", "300M", "--serial", "0BADF00D"]),
    ("fat32-64M-512", &["--fs", "fat32", "--cluster", "512", "--size", "64M", "--serial", "1234ABCD", "--label", "GOLD32"]),
    ("fat32-300M-4K-mbr", &["--fs", "fat32", "--cluster", "4K", "--table", "mbr", "--size", "300M", "--serial", "1234ABCD"]),
    ("fat32-esp-gpt", &["--fs", "fat32", "--esp", "--size", "260M", "--serial", "1234ABCD"]),
    ("fat32-4Kn-gpt", &["--fs", "fat32", "--cluster", "4K", "--sector-size", "4096", "--table", "gpt", "--size", "600M", "--serial", "1234ABCD"]),
    ("fat16-64M-4K", &["--fs", "fat16", "--cluster", "4K", "--size", "64M", "--serial", "1234ABCD", "--label", "GOLD16"]),
    ("fat16-16M-2K-mbr", &["--fs", "fat16", "--cluster", "2K", "--table", "mbr", "--size", "16M", "--serial", "1234ABCD", "--root-entries", "1024"]),
    ("fat12-4M-1K", &["--fs", "fat12", "--cluster", "1K", "--size", "4M", "--serial", "1234ABCD"]),
    ("fat-auto-32M", &["--fs", "fat", "--size", "32M", "--serial", "1234ABCD"]),
    ("sd-2G", &["--layout", "sd", "--size", "2G", "--serial", "1234ABCD"]),
    ("align-4M-fat32", &["--fs", "fat32", "--align", "4M", "--table", "mbr", "--size", "128M", "--serial", "1234ABCD"]),
    ("rootdir-exfat-auto", &["--fs", "exfat", "--rootdir", "ROOT", "--size", "auto", "--cluster", "auto", "--serial", "1234ABCD"]),
    ("rootdir-fat32-auto", &["--fs", "fat32", "--rootdir", "ROOT", "--size", "auto", "--serial", "1234ABCD", "--label", "TREE"]),
    ("rootdir-fat12-auto", &["--fs", "fat12", "--rootdir", "ROOT", "--size", "auto", "--cluster", "auto", "--serial", "1234ABCD"]),
    ("rootdir-exfat-slack", &["--fs", "exfat", "--rootdir", "ROOT", "--slack", "400", "--size", "auto", "--serial", "1234ABCD"]),
    ("rootdir-fat16-gpt", &["--fs", "fat16", "--table", "gpt", "--rootdir", "ROOT", "--size", "48M", "--serial", "1234ABCD"]),
];

/// Compat front-end runs: (case name, front end, arguments, image size in
/// KiB made first). The image is the last argument.
#[rustfmt::skip]
const COMPAT: &[(&str, &str, &[&str], u64)] = &[
    ("mkfs.fat-floppy", "mkfs.fat", &["-i", "1234ABCD", "-n", "FLOPPY"], 1440),
    ("mkfs.vfat-F32", "mkfs.vfat", &["-F", "32", "-i", "1234ABCD", "-n", "esp"], 300 * 1024),
    ("mkfs.fat-S4096", "mkfs.fat", &["-S", "4096", "-i", "1234ABCD"], 64 * 1024),
    ("mkdosfs-F16-s8", "mkdosfs", &["-F", "16", "-s", "8", "-i", "1234ABCD"], 32 * 1024),
    ("mkfs.exfat-c", "mkfs.exfat", &["-c", "64K", "-L", "EXGOLD"], 256 * 1024),
];

/// The fixed tree of the `--rootdir` cases: long and short names, non-ASCII
/// names, nested directories, empty and multi-cluster files. Every mtime is
/// newer than the pinned `SOURCE_DATE_EPOCH`, so every stored time is it.
fn make_tree(root: &Path) {
    let files: &[(&str, usize)] = &[
        ("README.TXT", 700),
        ("a long file name with spaces.txt", 5000),
        ("Überraschung €.dat", 70_000),
        ("dir/sub/deep/file.bin", 300_000),
        ("dir/empty", 0),
        ("DCIM/100CAM/IMG_0001.JPG", 1_200_000),
        ("DCIM/100CAM/IMG_0002.JPG", 33_000),
        ("mixedCase.Txt", 10),
    ];
    for (i, (name, len)) in files.iter().enumerate() {
        let path = root.join(name);
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        let mut x = 0x9E37_79B9_u32.wrapping_mul(i as u32 + 1);
        let data: Vec<u8> = (0..*len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        fs::write(path, data).expect("write a tree file");
    }
    fs::create_dir_all(root.join("empty dir")).expect("mkdir");
}

/// CRC-64 and length of a file, read in pieces.
fn digest(path: &Path) -> String {
    let mut f = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut d = CRC64.digest();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).expect("read the image");
        if n == 0 {
            break;
        }
        d.update(&buf[..n]);
        len += n as u64;
    }
    format!("{:016x} {len}", d.finalize())
}

fn digest_bytes(bytes: &[u8]) -> String {
    format!("{:016x} {}", CRC64.checksum(bytes), bytes.len())
}

fn pinned() -> (u32, Timestamp) {
    (
        0x1234_ABCD,
        Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
    )
}

/// The library's cases: the same plans an embedder makes.
fn library_cases(tmp: &Path, out: &mut BTreeMap<String, String>) {
    let (serial, time) = pinned();
    let plain: &[(&str, FsKind, u64, TableKind, u64, u32)] = &[
        (
            "api-exfat-mbr",
            FsKind::Exfat,
            32 << 10,
            TableKind::Mbr,
            256 << 20,
            512,
        ),
        (
            "api-exfat-none-4Kn",
            FsKind::Exfat,
            64 << 10,
            TableKind::None,
            512 << 20,
            4096,
        ),
        (
            "api-fat32-gpt",
            FsKind::Fat32,
            4096,
            TableKind::Gpt,
            300 << 20,
            512,
        ),
        (
            "api-fat16-none",
            FsKind::Fat16,
            2048,
            TableKind::None,
            40 << 20,
            512,
        ),
        (
            "api-fat12-mbr",
            FsKind::Fat12,
            1024,
            TableKind::Mbr,
            3 << 20,
            512,
        ),
    ];
    for &(name, fs, cluster, table, size, block) in plain {
        let mut disk = MemDisk::new(block, size / u64::from(block)).expect("a disk");
        let opts = MediumOptions::new()
            .fs(fs)
            .cluster_size(cluster)
            .table(table)
            .label("APIGOLD")
            .pinned(serial, time)
            .sector_size(block)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut plan = opts
            .plan_for(&disk)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        plan.format(&mut disk)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        out.insert(name.to_string(), digest_bytes(disk.as_bytes()));
    }

    // A populated plan, through an image file.
    for (name, fs) in [
        ("api-populated-exfat", FsKind::Exfat),
        ("api-populated-fat32", FsKind::Fat32),
    ] {
        let path = tmp.join(format!("{name}.img"));
        let mut tree = Tree::new();
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        tree.add_file("/hello.txt", &b"hello\n"[..], 6, t)
            .expect("add");
        tree.add_file("/docs/a rather long name.md", &[7u8; 9000][..], 9000, t)
            .expect("add");
        let mut image = ImageFile::create(&path, 300 << 20, 512).expect("create");
        let opts = MediumOptions::new()
            .fs(fs)
            .cluster_size(4096)
            .label("POP")
            .pinned(serial, time);
        let mut plan = opts
            .plan_for(&image)
            .and_then(|p| p.populate(tree, TimePolicy::default()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        plan.format(&mut image)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        drop(image);
        out.insert(name.to_string(), digest(&path));
    }
}

fn golden_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/golden/images.txt")
}

#[test]
fn every_image_is_byte_identical_to_the_recorded_one() {
    let tmp = TempDir::new("golden");
    let root = tmp.join("tree");
    make_tree(&root);
    let root_s = root.to_string_lossy().into_owned();
    let mut got = BTreeMap::new();

    for (name, args) in CLI {
        let img = tmp.join(&format!("{name}.img"));
        let mut a: Vec<&str> = args
            .iter()
            .map(|s| if *s == "ROOT" { root_s.as_str() } else { s })
            .collect();
        a.push("--yes");
        let img_s = img.to_string_lossy().into_owned();
        a.push(&img_s);
        mkfs_alloc(&a).assert_success();
        got.insert(name.to_string(), digest(&img));
        fs::remove_file(&img).expect("remove");
    }

    let bin_dir = tmp.join("bin");
    fs::create_dir_all(&bin_dir).expect("mkdir");
    let bin = mkfs_alloc_bin();
    for (name, front, args, kib) in COMPAT {
        let link = bin_dir.join(front);
        if !link.exists() {
            std::os::unix::fs::symlink(&bin, &link).expect("symlink the binary");
        }
        let img = tmp.join(&format!("{name}.img"));
        fs::File::create(&img)
            .and_then(|f| f.set_len(kib * 1024))
            .expect("make the image");
        let mut a: Vec<&str> = args.to_vec();
        let img_s = img.to_string_lossy().into_owned();
        a.push(&img_s);
        run_env(&link, &a, &[("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)]).assert_success();
        got.insert(name.to_string(), digest(&img));
        fs::remove_file(&img).expect("remove");
    }

    library_cases(tmp.path(), &mut got);

    let text: String = got.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
    let file = golden_file();
    if std::env::var_os("MKFS_ALLOC_BLESS").is_some() {
        fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        fs::write(&file, &text).expect("write the golden file");
        return;
    }
    let want = fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e} (MKFS_ALLOC_BLESS=1 writes it)", file.display()));
    let want: BTreeMap<&str, &str> = want.lines().filter_map(|l| l.split_once(' ')).collect();
    assert_eq!(want.len(), got.len(), "cases recorded vs run:\n{text}");
    let differ: Vec<String> = got
        .iter()
        .filter(|(k, v)| want.get(k.as_str()) != Some(&v.as_str()))
        .map(|(k, v)| format!("{k}: now {v}, recorded {:?}", want.get(k.as_str())))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} images differ from the recorded bytes:\n{}",
        differ.len(),
        got.len(),
        differ.join("\n")
    );
}
