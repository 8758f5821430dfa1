//! Independent readers of a re-clustered volume (tool tier), in three
//! recipes: a volume made by mkfs.exfat at 128 KiB clusters, on 512- and
//! 4096-byte sectors (a loop device of that block size), FAT at 4 MiB and
//! heap at 8 MiB (so the gap holds the new FAT), reclustered to 4 KiB; one
//! by mkfs.exfat at 4 KiB reclustered to 128 KiB (larger: every file
//! moves); both filled through exfat-fuse with a tree of nested
//! directories, long and non-ASCII names, empty files and directories,
//! sizes around both cluster sizes' boundaries and two fragmented files.
//! And a FAT32 volume by `mkfs.fat -F 32` at 32 KiB filled through mtools
//! with the same tree (less the name outside Unicode's basic plane, which
//! mtools cannot write), the two files around holes so that their chains
//! are split, reclustered to 4 KiB.
//!
//! - GRUB's exFAT and FAT drivers (`grub-fstest`): every directory lists
//!   exactly the tree, every file compares equal (`cmp`), and its CRC-32
//!   (`crc`) is the one of the bytes written.
//! - 7-Zip (p7zip 16.02, Debian `p7zip-full`) extracts the FAT32 result:
//!   every file equal, nothing else. It has no exFAT handler (it opens
//!   FAT12/16/32 and NTFS images, not exFAT ones): a test pins that it
//!   refuses the exFAT images before and after the re-cluster alike, so
//!   that TESTING.md stays true and a 7-Zip that learns exFAT makes it
//!   fail.
//!
//! The Linux kernel's exfat and vfat drivers read re-clustered volumes in
//! `cargo xtask test-kernel` (the `rc-*` cases), U-Boot's FAT driver in
//! `cargo xtask test-uboot`.

use mkfs_alloc_tests::checks::{
    dump_exfat_cluster_size, fsck_exfat_clean, fsck_fat_clean, fsck_fat_geometry,
};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, run_env, test_data, tool, FuseMount, LoopDevice, TempDir};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The tree written through exfat-fuse: (path, bytes). No name holds a
/// space: grub-fstest separates the names it lists by spaces.
fn tree() -> Vec<(String, Vec<u8>)> {
    let long = format!("{}.dat", "a_long_name_".repeat(20));
    let mut v: Vec<(String, Vec<u8>)> = vec![
        ("README.TXT".into(), b"reclustered\n".to_vec()),
        ("empty".into(), Vec::new()),
        ("sub/also-empty.txt".into(), Vec::new()),
        (long, test_data(7_000, 1)),
        ("Ünïcödé_Ωμέγα.txt".into(), test_data(32 * 1024 + 17, 2)),
        ("日本語/ファイル名.txt".into(), test_data(512, 3)),
        ("emoji-😀.txt".into(), test_data(513, 4)),
        ("a/b/c/d/e/f/deep.bin".into(), test_data(3 * 4096 + 17, 5)),
    ];
    for (i, n) in [1, 4095, 4096, 4097, 131_071, 131_072, 131_073, 262_145]
        .into_iter()
        .enumerate()
    {
        v.push((format!("sizes/{n}"), test_data(n, 10 + i as u64)));
    }
    for i in 0..40usize {
        v.push((
            format!("many/file{i:02}.txt"),
            test_data(200 + i * 37, 100 + i as u64),
        ));
    }
    v
}

/// An empty directory of the tree (it must list as empty).
const EMPTY_DIR: &str = "leer";

/// The two fragmented files: written in alternating 256 KiB pieces.
fn fragmented() -> [(String, Vec<u8>); 2] {
    [
        ("frag/interleaved-a.bin".into(), test_data(3 << 20, 21)),
        (
            "frag/interleaved-b.bin".into(),
            test_data((2 << 20) + 5, 22),
        ),
    ]
}

/// Writes `a` and `b` through the driver in alternating pieces, syncing
/// after each, so that the driver gives both fragmented chains.
fn write_interleaved(mnt: &Path, [a, b]: &[(String, Vec<u8>); 2], piece: usize) {
    std::fs::create_dir_all(mnt.join(&a.0).parent().expect("parent")).expect("mkdir");
    let mut fa = std::fs::File::create(mnt.join(&a.0)).expect("create");
    let mut fb = std::fs::File::create(mnt.join(&b.0)).expect("create");
    let (mut ca, mut cb) = (a.1.chunks(piece), b.1.chunks(piece));
    loop {
        let (pa, pb) = (ca.next(), cb.next());
        if pa.is_none() && pb.is_none() {
            break;
        }
        for (f, p) in [(&mut fa, pa), (&mut fb, pb)] {
            if let Some(p) = p {
                f.write_all(p).expect("write");
                f.sync_all().expect("sync");
            }
        }
    }
}

/// How a volume is made, filled and re-clustered.
#[derive(Clone, Copy)]
struct Recipe {
    /// exFAT (mkfs.exfat, exfat-fuse) or FAT32 (mkfs.fat, mtools).
    exfat: bool,
    /// The image's size.
    size: &'static str,
    /// The formatter's options.
    mkfs: &'static [&'static str],
    /// `recluster --cluster` and the bytes it means.
    to: (&'static str, u64),
}

/// mkfs.exfat at 128 KiB, the new FAT fitting the gap, to 4 KiB.
const EXFAT_SMALLER: Recipe = Recipe {
    exfat: true,
    size: "256M",
    mkfs: &["-c", "128K", "-b", "4M", "-L", "READERS"],
    to: ("4K", 4096),
};

/// mkfs.exfat at 4 KiB to 128 KiB.
const EXFAT_LARGER: Recipe = Recipe {
    exfat: true,
    size: "256M",
    mkfs: &["-c", "4K", "-L", "READERS"],
    to: ("128K", 128 << 10),
};

/// mkfs.fat's FAT32 at 32 KiB (98,000 clusters of 3 GiB) to 4 KiB.
const FAT32_SMALLER: Recipe = Recipe {
    exfat: false,
    size: "3G",
    mkfs: &["-F", "32", "-s", "64", "-S", "512", "-n", "READERS"],
    to: ("4K", 4096),
};

/// The re-clustered image and every file on it (path, bytes).
struct Reclustered {
    _tmp: TempDir,
    img: PathBuf,
    sector: u32,
    files: Vec<(String, Vec<u8>)>,
    /// `7z l` of the image before the re-cluster.
    seven_before: mkfs_alloc_tests::CmdOutput,
    /// FAT32 (mtools stores an upper-case 8.3 name without a long name).
    fat: bool,
}

/// The volume of `recipe` on `sector`-byte sectors (exFAT: a loop device
/// of that block size, mkfs.exfat takes the device's), filled through
/// exfat-fuse or mtools, checked by fsck, reclustered, checked again.
fn reclustered(name: &str, recipe: Recipe, sector: u32) -> Reclustered {
    let tmp = TempDir::new(name);
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8").to_string();
    run("truncate", &["-s", recipe.size, &p]).assert_success();
    let mut files = tree();
    let frag = fragmented();
    if recipe.exfat {
        fill_exfat(&tmp, &img, recipe, sector, &files, &frag);
    } else {
        files.retain(|(path, _)| path.chars().all(|c| u32::from(c) <= 0xFFFF));
        fill_fat(&tmp, &img, recipe, &files, &frag);
    }
    // The fixture's premise (our model as a precondition only; the
    // verdicts are the readers'): the driver gave both files split chains.
    for (rel, _) in &frag {
        let f = fragments_of(&img, sector, rel);
        assert!(f > 1, "/{rel} is in {f} fragment(s), not fragmented");
        eprintln!("/{rel}: {f} fragments before the re-cluster ({sector} B sectors)");
    }
    files.extend(frag);
    let fsck = |img: &Path| {
        if recipe.exfat {
            fsck_exfat_clean(img);
        } else {
            fsck_fat_clean(img);
        }
    };
    fsck(&img);
    let seven_before = tool("7z", &["l", &p]);
    mkfs_alloc(&["recluster", "--cluster", recipe.to.0, "--yes", "-q", &p]).assert_success();
    fsck(&img);
    if recipe.exfat {
        assert_eq!(dump_exfat_cluster_size(&img), recipe.to.1);
        assert_eq!(
            u32::from(std::fs::read(&img).expect("read")[108]),
            sector.trailing_zeros(),
            "BytesPerSectorShift"
        );
    } else {
        assert_eq!(fsck_fat_geometry(&img), (recipe.to.1, u64::from(sector)));
    }
    Reclustered {
        _tmp: tmp,
        img,
        sector,
        files,
        seven_before,
        fat: !recipe.exfat,
    }
}

/// mkfs.exfat on a loop device of `sector`-byte blocks, the tree and the
/// fragmented files written through exfat-fuse.
fn fill_exfat(
    tmp: &TempDir,
    img: &Path,
    recipe: Recipe,
    sector: u32,
    files: &[(String, Vec<u8>)],
    frag: &[(String, Vec<u8>); 2],
) {
    require_root();
    require_fuse();
    let lo = LoopDevice::attach_sector(img, sector);
    let mut args = recipe.mkfs.to_vec();
    args.push(lo.path_str());
    run(require_tool("mkfs.exfat"), &args).assert_success();
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    std::fs::create_dir_all(mnt.join(EMPTY_DIR)).expect("mkdir");
    for (path, data) in files {
        let f = mnt.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
    }
    write_interleaved(&mnt, frag, 256 << 10);
    m.unmount();
}

/// Pad files of two 32 KiB clusters: every second one is deleted before
/// the fragmented files go in, so that they take the holes.
const PADS: usize = 128;

/// mkfs.fat on the image, then with mtools (`mcopy -s`): a pad directory,
/// every second pad deleted (`mdel`), the FSInfo next-free hint set to
/// "unknown" (0xFFFFFFFF, FSI_Nxt_Free of Microsoft's FAT specification) so
/// that mtools allocates from the start, into the holes; the fragmented
/// files, the tree, then the rest of the pad gone (`mdeltree`).
fn fill_fat(
    tmp: &TempDir,
    img: &Path,
    recipe: Recipe,
    files: &[(String, Vec<u8>)],
    frag: &[(String, Vec<u8>); 2],
) {
    let mut args = recipe.mkfs.to_vec();
    args.push(img.to_str().expect("utf-8"));
    run(require_tool("mkfs.fat"), &args).assert_success();
    let stage = |dir: &str, files: &[(String, Vec<u8>)]| {
        let root = tmp.subdir(dir);
        for (path, data) in files {
            let f = root.join(path);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
            std::fs::write(&f, data).expect("write");
        }
        root
    };
    let pads: Vec<(String, Vec<u8>)> = (0..PADS)
        .map(|i| (format!("pad/p{i:03}"), test_data(64 << 10, 500 + i as u64)))
        .collect();
    let pad = stage("pad", &pads);
    let first = stage("first", frag);
    let rest = stage("rest", files);
    std::fs::create_dir_all(rest.join(EMPTY_DIR)).expect("mkdir");
    let mt = |tool: &str, args: &[String]| {
        let mut all = vec!["-i".to_string(), img.to_string_lossy().into_owned()];
        all.extend(args.iter().cloned());
        run_env(require_tool(tool), &all, &[("LC_ALL", "C.UTF-8")]).assert_success();
    };
    let entries = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").path().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v.push("::/".into());
        v
    };
    mt("mcopy", &[&["-s".to_string()][..], &entries(&pad)].concat());
    let odd: Vec<String> = (1..PADS)
        .step_by(2)
        .map(|i| format!("::/pad/p{i:03}"))
        .collect();
    mt("mdel", &odd);
    forget_next_free(img);
    mt(
        "mcopy",
        &[&["-s".to_string()][..], &entries(&first)].concat(),
    );
    mt(
        "mcopy",
        &[&["-s".to_string()][..], &entries(&rest)].concat(),
    );
    mt("mdeltree", &["::/pad".to_string()]);
}

/// The FSInfo next-free hint of the FAT32 volume `img` set to "unknown".
fn forget_next_free(img: &Path) {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::options()
        .read(true)
        .write(true)
        .open(img)
        .expect("open");
    let mut bpb = [0u8; 64];
    f.read_exact(&mut bpb).expect("read");
    let sector = u64::from(u16::from_le_bytes([bpb[11], bpb[12]]));
    let fsinfo = u64::from(u16::from_le_bytes([bpb[48], bpb[49]]));
    f.seek(SeekFrom::Start(fsinfo * sector + 492))
        .expect("seek");
    f.write_all(&[0xFF; 4]).expect("write");
}

/// The contiguous runs of the chain of the file `rel` on the volume `img`.
fn fragments_of(img: &Path, sector: u32, rel: &str) -> u64 {
    use mkfs_alloc::inspect::{read_volumes, ModelOptions, ReadOnlyFile};
    let mut dev = ReadOnlyFile::open(img, sector).expect("open");
    let want = format!("/{rel}");
    let mut found = None;
    read_volumes(&mut dev, &ModelOptions::default(), &mut |s| {
        if s.path == want {
            found = Some(s.fragments);
        }
    })
    .expect("read_volumes");
    found.unwrap_or_else(|| panic!("{want} is not on the volume"))
}

/// What `ls DIR` must print for each directory: the entries' names,
/// directories with a trailing `/`.
fn expected_listings(files: &[(String, Vec<u8>)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut dirs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    dirs.entry(String::new())
        .or_default()
        .insert(format!("{EMPTY_DIR}/"));
    dirs.entry(EMPTY_DIR.into()).or_default();
    for (rel, _) in files {
        let parts: Vec<&str> = rel.split('/').collect();
        for depth in 0..parts.len() {
            let dir = parts[..depth].join("/");
            let name = if depth + 1 == parts.len() {
                parts[depth].to_string()
            } else {
                format!("{}/", parts[depth])
            };
            dirs.entry(dir).or_default().insert(name);
        }
    }
    dirs
}

/// The name GRUB's FAT driver lists for `name`: an entry with only a short
/// name (an upper-case 8.3 name, as mtools stores it) in lower case (GRUB's
/// `fat.c` lowers short names and opens them case-insensitively); every
/// other name as it is (its long name).
fn grub_fat_name(name: String) -> String {
    let (base, ext) = name.split_once('.').unwrap_or((&name, ""));
    let short = |p: &str, max: usize| {
        p.len() <= max
            && p.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    };
    if !base.is_empty() && short(base, 8) && short(ext, 3) {
        name.to_ascii_lowercase()
    } else {
        name
    }
}

/// Runs `grub-fstest IMAGE ARGS...`.
fn grub(image: &Path, args: &[&str]) -> mkfs_alloc_tests::CmdOutput {
    let mut all = vec![image.to_string_lossy().into_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    tool("grub-fstest", &all)
}

/// CRC-32 (IEEE, reflected, as GRUB's `crc` command prints it).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, grub-fstest)"]
fn grub_reads_a_reclustered_mkfs_exfat_volume() {
    for sector in [512, 4096] {
        let name = format!("recluster-grub-{sector}");
        grub_reads(&reclustered(&name, EXFAT_SMALLER, sector));
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, grub-fstest)"]
fn grub_reads_a_mkfs_exfat_volume_reclustered_to_a_larger_size() {
    grub_reads(&reclustered("recluster-grub-larger", EXFAT_LARGER, 512));
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, grub-fstest)"]
fn grub_reads_a_reclustered_mkfs_fat_volume() {
    grub_reads(&reclustered("recluster-grub-fat32", FAT32_SMALLER, 512));
}

/// GRUB lists every directory of `r`, compares every file and its CRC-32.
fn grub_reads(r: &Reclustered) {
    for (dir, names) in expected_listings(&r.files) {
        let out = grub(&r.img, &["ls", &format!("/{dir}")]);
        out.assert_success();
        let listed: BTreeSet<String> = out.stdout.split_whitespace().map(String::from).collect();
        let names: BTreeSet<String> = names
            .into_iter()
            .map(|n| if r.fat { grub_fat_name(n) } else { n })
            .collect();
        assert_eq!(listed, names, "GRUB's listing of /{dir}");
    }
    let local = r.img.with_extension("file");
    for (rel, data) in &r.files {
        std::fs::write(&local, data).expect("write");
        let path = format!("/{rel}");
        let out = grub(&r.img, &["cmp", &path, &local.to_string_lossy()]);
        assert!(
            out.success() && out.stderr.trim().is_empty(),
            "GRUB read {path} differently:\n{out}"
        );
        let out = grub(&r.img, &["crc", &path]);
        out.assert_success();
        assert_eq!(
            out.stdout.trim(),
            format!("{:08x}", crc32(data)),
            "GRUB's CRC-32 of {path}"
        );
    }
    println!(
        "grub-fstest listed and compared {} files of the re-clustered volume ({} B sectors)",
        r.files.len(),
        r.sector
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse, 7z)"]
fn seven_zip_opens_no_exfat_volume_before_or_after_a_recluster() {
    for (name, recipe) in [
        ("recluster-7z", EXFAT_SMALLER),
        ("recluster-7z-larger", EXFAT_LARGER),
    ] {
        let r = reclustered(name, recipe, 512);
        let after = tool("7z", &["l", r.img.to_str().expect("utf-8")]);
        for (when, out) in [("before", &r.seven_before), ("after", &after)] {
            let text = format!("{}{}", out.stdout, out.stderr);
            assert!(
                !out.success() && text.contains("Cannot open the file as archive"),
                "7z l {when} the re-cluster to {} no longer refuses exFAT: TESTING.md and \
                 this suite should read the files through it now:\n{out}",
                recipe.to.0
            );
        }
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, 7z)"]
fn seven_zip_extracts_a_reclustered_mkfs_fat_volume() {
    let r = reclustered("recluster-7z-fat32", FAT32_SMALLER, 512);
    let out_dir = r.img.with_extension("7z");
    let out = tool(
        "7z",
        &[
            "x",
            "-y",
            &format!("-o{}", out_dir.display()),
            r.img.to_str().expect("utf-8"),
        ],
    );
    out.assert_success();
    let mut got = BTreeMap::new();
    let mut todo = vec![out_dir.clone()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(&out_dir).expect("below");
                let rel = rel.to_string_lossy().into_owned();
                got.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    let want: BTreeMap<String, Vec<u8>> = r.files.iter().cloned().collect();
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want), "the files 7z extracted");
    for (rel, data) in &want {
        assert!(got[rel] == *data, "7z extracted /{rel} differently");
    }
    assert!(
        out_dir.join(EMPTY_DIR).is_dir(),
        "7z did not extract the empty directory"
    );
    println!(
        "7z extracted {} files of the re-clustered FAT32 volume, all equal",
        want.len()
    );
}

#[test]
fn the_crc32_here_is_the_standard_one() {
    // The check value of CRC-32/ISO-HDLC.
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}
