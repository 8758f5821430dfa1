//! Independent readers of a re-clustered volume (tool tier): a volume made
//! by mkfs.exfat at 128 KiB clusters, on 512- and 4096-byte sectors (a loop
//! device of that block size), FAT at 4 MiB and heap at 8 MiB (so the
//! gap holds the new FAT) and filled through exfat-fuse with a tree of
//! nested directories, long and non-ASCII names, empty files and
//! directories, sizes around both cluster sizes' boundaries and two
//! fragmented files, then reclustered to 4 KiB by `mkfs-alloc recluster`.
//!
//! - GRUB's exFAT driver (`grub-fstest`): every directory lists exactly the
//!   tree, every file compares equal (`cmp`), and its CRC-32 (`crc`) is the
//!   one of the bytes written.
//! - 7-Zip (p7zip 16.02, Debian `p7zip-full`) has no exFAT handler (it
//!   opens FAT12/16/32 and NTFS images, not exFAT ones): a test pins that it
//!   refuses the image before and after the re-cluster alike, so that
//!   TESTING.md stays true and a 7-Zip that learns exFAT makes it fail.
//!
//! The Linux kernel's exfat driver reads re-clustered volumes in
//! `cargo xtask test-kernel` (the `rc-*` cases).

use mkfs_alloc_tests::checks::{dump_exfat_cluster_size, fsck_exfat_clean};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, tool, FuseMount, LoopDevice, TempDir};
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

/// The re-clustered image and every file on it (path, bytes).
struct Reclustered {
    _tmp: TempDir,
    img: PathBuf,
    sector: u32,
    files: Vec<(String, Vec<u8>)>,
    /// `7z l` of the image before the re-cluster.
    seven_before: mkfs_alloc_tests::CmdOutput,
}

/// mkfs.exfat at 128 KiB clusters on `sector`-byte sectors (a loop device
/// of that block size: mkfs.exfat takes the device's), filled through
/// exfat-fuse, checked by fsck.exfat, reclustered to 4 KiB, checked again.
fn reclustered(name: &str, sector: u32) -> Reclustered {
    require_root();
    require_fuse();
    let tmp = TempDir::new(name);
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8").to_string();
    run("truncate", &["-s", "256M", &p]).assert_success();
    let mut files = tree();
    let frag = fragmented();
    {
        let lo = LoopDevice::attach_sector(&img, sector);
        run(
            require_tool("mkfs.exfat"),
            &["-c", "128K", "-b", "4M", "-L", "READERS", lo.path_str()],
        )
        .assert_success();
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        std::fs::create_dir_all(mnt.join(EMPTY_DIR)).expect("mkdir");
        for (path, data) in &files {
            let f = mnt.join(path);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
            std::fs::write(&f, data).expect("write");
        }
        write_interleaved(&mnt, &frag, 256 << 10);
        m.unmount();
    }
    // The fixture's premise (our model as a precondition only; the
    // verdicts are the readers'): exfat-fuse gave both files split chains.
    for (rel, _) in &frag {
        let f = fragments_of(&img, sector, rel);
        assert!(f > 1, "/{rel} is in {f} fragment(s), not fragmented");
        eprintln!("/{rel}: {f} fragments before the re-cluster ({sector} B sectors)");
    }
    files.extend(frag);
    fsck_exfat_clean(&img);
    let seven_before = tool("7z", &["l", &p]);
    mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", "-q", &p]).assert_success();
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 4096);
    assert_eq!(
        u32::from(std::fs::read(&img).expect("read")[108]),
        sector.trailing_zeros(),
        "BytesPerSectorShift"
    );
    Reclustered {
        _tmp: tmp,
        img,
        sector,
        files,
        seven_before,
    }
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
        grub_reads(&reclustered(&format!("recluster-grub-{sector}"), sector));
    }
}

/// GRUB lists every directory of `r`, compares every file and its CRC-32.
fn grub_reads(r: &Reclustered) {
    for (dir, names) in expected_listings(&r.files) {
        let out = grub(&r.img, &["ls", &format!("/{dir}")]);
        out.assert_success();
        let listed: BTreeSet<String> = out.stdout.split_whitespace().map(String::from).collect();
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
    let r = reclustered("recluster-7z", 512);
    let after = tool("7z", &["l", r.img.to_str().expect("utf-8")]);
    for (when, out) in [("before", &r.seven_before), ("after", &after)] {
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(
            !out.success() && text.contains("Cannot open the file as archive"),
            "7z l {when} the re-cluster no longer refuses exFAT: TESTING.md and this \
             suite should read the files through it now:\n{out}"
        );
    }
}

#[test]
fn the_crc32_here_is_the_standard_one() {
    // The check value of CRC-32/ISO-HDLC.
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}
