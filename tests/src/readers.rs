//! Independent readers of a volume changed in place (re-clustered,
//! resized, converted), and the volumes they read: made by mkfs.exfat or
//! mkfs.fat, filled through exfat-fuse or mtools with a tree of nested
//! directories, long and non-ASCII names, empty files and directories,
//! sizes around cluster boundaries and two fragmented files. Optionally
//! the tree lies past a filler that is deleted afterwards (so that a
//! shrink has to move it).
//!
//! The readers, none of them ours nor the driver that filled the volume
//! (but exfat-fuse on a volume mtools filled): GRUB's exFAT and FAT
//! drivers (`grub-fstest`), 7-Zip, the `fatfs` crate, fusefat, exfat-fuse.
//! Each must find every directory and file of the tree, every file
//! byte-identical.

use crate::checks::{fsck_exfat_clean, fsck_fat_clean};
use crate::tools::{require_fuse, require_root, require_tool};
use crate::{run, run_env, test_data, tool, CmdOutput, FuseMount, LoopDevice, TempDir};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The tree written through the filling driver: (path, bytes). No name
/// holds a space: grub-fstest separates the names it lists by spaces.
pub fn tree() -> Vec<(String, Vec<u8>)> {
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
pub const EMPTY_DIR: &str = "leer";

/// The two fragmented files: written in alternating 256 KiB pieces.
pub fn fragmented() -> [(String, Vec<u8>); 2] {
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

/// How a volume is made and filled.
#[derive(Clone, Copy)]
pub struct Fill {
    /// exFAT (mkfs.exfat, exfat-fuse) or FAT32 (mkfs.fat, mtools).
    pub exfat: bool,
    /// The image's size (`truncate -s`).
    pub size: &'static str,
    /// The formatter's options.
    pub mkfs: &'static [&'static str],
    /// A filler of this many bytes written before the tree and deleted
    /// after it (0: none): the tree lies past it. On FAT the directories
    /// are made before it (their first clusters stay below).
    pub past: u64,
}

/// A filled volume: the image and every file on it (path, bytes).
pub struct Filled {
    /// Holds the image.
    pub tmp: TempDir,
    /// The image file.
    pub img: PathBuf,
    /// Its sector size.
    pub sector: u32,
    /// Every file of the tree, the fragmented ones included.
    pub files: Vec<(String, Vec<u8>)>,
    /// FAT (mtools stores an upper-case 8.3 name without a long name).
    pub fat: bool,
}

/// The volume of `fill` on `sector`-byte sectors (exFAT: a loop device of
/// that block size, mkfs.exfat takes the device's), filled through
/// exfat-fuse or mtools (less the names outside Unicode's basic plane,
/// which mtools cannot write), both fragmented files split (by our model,
/// a precondition only), fsck clean.
pub fn filled(name: &str, fill: Fill, sector: u32) -> Filled {
    let tmp = TempDir::new(name);
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8").to_string();
    run("truncate", &["-s", fill.size, &p]).assert_success();
    let mut files = tree();
    let frag = fragmented();
    if fill.exfat {
        fill_exfat(&tmp, &img, fill, sector, &files, &frag);
    } else {
        files.retain(|(path, _)| path.chars().all(|c| u32::from(c) <= 0xFFFF));
        fill_fat(&tmp, &img, fill, &files, &frag);
    }
    for (rel, _) in &frag {
        let f = fragments_of(&img, sector, rel);
        assert!(f > 1, "/{rel} is in {f} fragment(s), not fragmented");
        eprintln!("/{rel}: {f} fragments as filled ({sector} B sectors)");
    }
    files.extend(frag);
    if fill.exfat {
        fsck_exfat_clean(&img);
    } else {
        fsck_fat_clean(&img);
    }
    Filled {
        tmp,
        img,
        sector,
        files,
        fat: !fill.exfat,
    }
}

/// mkfs.exfat on a loop device of `sector`-byte blocks, the filler (a
/// truncate through exfat-fuse allocates its clusters), the tree and the
/// fragmented files written through exfat-fuse, the filler deleted.
fn fill_exfat(
    tmp: &TempDir,
    img: &Path,
    fill: Fill,
    sector: u32,
    files: &[(String, Vec<u8>)],
    frag: &[(String, Vec<u8>); 2],
) {
    require_root();
    require_fuse();
    let lo = LoopDevice::attach_sector(img, sector);
    let mut args = fill.mkfs.to_vec();
    args.push(lo.path_str());
    run(require_tool("mkfs.exfat"), &args).assert_success();
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let filler = mnt.join("FILLER.BIN");
    if fill.past > 0 {
        let f = std::fs::File::create(&filler).expect("create the filler");
        f.set_len(fill.past).expect("allocate the filler");
        f.sync_all().expect("sync");
    }
    std::fs::create_dir_all(mnt.join(EMPTY_DIR)).expect("mkdir");
    for (path, data) in files {
        let f = mnt.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
    }
    write_interleaved(&mnt, frag, 256 << 10);
    if fill.past > 0 {
        std::fs::remove_file(&filler).expect("delete the filler");
    }
    m.unmount();
}

/// Pad files of two 32 KiB clusters: every second one is deleted before
/// the fragmented files go in, so that they take the holes.
const PADS: usize = 128;

/// mkfs.fat on the image, then with mtools (`mcopy -s`): with a filler,
/// every directory of the tree (`mmd`) and the filler first; a pad
/// directory, every second pad deleted (`mdel`), the FSInfo next-free hint
/// set to "unknown" (0xFFFFFFFF, FSI_Nxt_Free of Microsoft's FAT
/// specification) so that mtools allocates from the start, into the
/// holes; the fragmented files, the tree (into the directories made
/// before), then the rest of the pad and the filler gone.
fn fill_fat(
    tmp: &TempDir,
    img: &Path,
    fill: Fill,
    files: &[(String, Vec<u8>)],
    frag: &[(String, Vec<u8>); 2],
) {
    let mut args = fill.mkfs.to_vec();
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
    let mt = |tool: &str, args: &[String]| {
        let mut all = vec!["-i".to_string(), img.to_string_lossy().into_owned()];
        all.extend(args.iter().cloned());
        run_env(require_tool(tool), &all, &[("LC_ALL", "C.UTF-8")]).assert_success();
    };
    if fill.past > 0 {
        let mut dirs = BTreeSet::from([EMPTY_DIR.to_string()]);
        for (rel, _) in files.iter().chain(frag.iter()) {
            let parts: Vec<&str> = rel.split('/').collect();
            for depth in 1..parts.len() {
                dirs.insert(parts[..depth].join("/"));
            }
        }
        // BTreeSet order puts a parent before its children.
        mt(
            "mmd",
            &dirs.iter().map(|d| format!("::/{d}")).collect::<Vec<_>>(),
        );
        let filler = tmp.join("filler");
        std::fs::File::create(&filler)
            .and_then(|f| f.set_len(fill.past))
            .expect("filler");
        mt(
            "mcopy",
            &[
                filler.to_string_lossy().into_owned(),
                "::/FILLER.BIN".into(),
            ],
        );
    }
    let pads: Vec<(String, Vec<u8>)> = (0..PADS)
        .map(|i| (format!("pad/p{i:03}"), test_data(64 << 10, 500 + i as u64)))
        .collect();
    let pad = stage("pad", &pads);
    let first = stage("first", frag);
    let rest = stage("rest", files);
    std::fs::create_dir_all(rest.join(EMPTY_DIR)).expect("mkdir");
    let entries = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = vec!["-s".into()];
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").path().to_string_lossy().into_owned())
            .collect();
        names.sort();
        v.extend(names);
        v.push("::/".into());
        v
    };
    mt("mcopy", &entries(&pad));
    let odd: Vec<String> = (1..PADS)
        .step_by(2)
        .map(|i| format!("::/pad/p{i:03}"))
        .collect();
    mt("mdel", &odd);
    forget_next_free(img);
    mt("mcopy", &entries(&first));
    mt("mcopy", &entries(&rest));
    mt("mdeltree", &["::/pad".to_string()]);
    if fill.past > 0 {
        mt("mdel", &["::/FILLER.BIN".to_string()]);
    }
}

/// The FSInfo next-free hint of the FAT32 volume `img` set to "unknown".
fn forget_next_free(img: &Path) {
    use std::io::{Seek, SeekFrom};
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
pub fn fragments_of(img: &Path, sector: u32, rel: &str) -> u64 {
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
pub fn expected_listings(files: &[(String, Vec<u8>)]) -> BTreeMap<String, BTreeSet<String>> {
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
fn grub(image: &Path, args: &[&str]) -> CmdOutput {
    let mut all = vec![image.to_string_lossy().into_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    tool("grub-fstest", &all)
}

/// CRC-32 (IEEE, reflected, as GRUB's `crc` command prints it).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// GRUB lists every directory of `v` exactly, compares every file and
/// prints its CRC-32 (the one of the bytes written). `what` names the
/// volume in the messages.
pub fn grub_reads(v: &Filled, what: &str) {
    for (dir, names) in expected_listings(&v.files) {
        let out = grub(&v.img, &["ls", &format!("/{dir}")]);
        out.assert_success();
        let listed: BTreeSet<String> = out.stdout.split_whitespace().map(String::from).collect();
        let names: BTreeSet<String> = names
            .into_iter()
            .map(|n| if v.fat { grub_fat_name(n) } else { n })
            .collect();
        assert_eq!(listed, names, "GRUB's listing of /{dir} ({what})");
    }
    let local = v.img.with_extension("file");
    for (rel, data) in &v.files {
        std::fs::write(&local, data).expect("write");
        let path = format!("/{rel}");
        let out = grub(&v.img, &["cmp", &path, &local.to_string_lossy()]);
        assert!(
            out.success() && out.stderr.trim().is_empty(),
            "GRUB read {path} differently ({what}):\n{out}"
        );
        let out = grub(&v.img, &["crc", &path]);
        out.assert_success();
        assert_eq!(
            out.stdout.trim(),
            format!("{:08x}", crc32(data)),
            "GRUB's CRC-32 of {path} ({what})"
        );
    }
    println!(
        "grub-fstest listed and compared {} files of the {what} volume ({} B sectors)",
        v.files.len(),
        v.sector
    );
}

/// Every file below `root` (relative path with `/`, bytes), and whether
/// the empty directory `empty` is there.
fn files_below(root: &Path, empty: &str) -> (BTreeMap<String, Vec<u8>>, bool) {
    let mut got = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("below");
                let rel = rel.to_string_lossy().into_owned();
                got.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    (got, root.join(empty).is_dir())
}

/// `got` holds exactly `files`, each byte-identical, and the empty
/// directory; `reader` and `what` name who read what.
fn assert_same(
    files: &[(String, Vec<u8>)],
    got: &BTreeMap<String, Vec<u8>>,
    empty: bool,
    reader: &str,
    what: &str,
) {
    let want: BTreeMap<&str, &Vec<u8>> = files.iter().map(|(p, d)| (p.as_str(), d)).collect();
    let names = |m: Vec<&str>| m.into_iter().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        names(got.keys().map(String::as_str).collect()),
        names(want.keys().copied().collect()),
        "the files {reader} found on the {what} volume"
    );
    for (rel, data) in &want {
        assert!(
            got[*rel] == **data,
            "{reader} read /{rel} differently ({what})"
        );
    }
    assert!(
        empty,
        "{reader} found no empty directory {EMPTY_DIR} ({what})"
    );
    println!(
        "{reader} read {} files of the {what} volume, all byte-identical",
        want.len()
    );
}

/// 7-Zip extracts the FAT volume of `v`: exactly its files, each equal,
/// and the empty directory.
pub fn seven_zip_extracts(v: &Filled, what: &str) {
    let out_dir = v.img.with_extension("7z");
    let out = tool(
        "7z",
        &[
            "x",
            "-y",
            &format!("-o{}", out_dir.display()),
            v.img.to_str().expect("utf-8"),
        ],
    );
    out.assert_success();
    let (got, empty) = files_below(&out_dir, EMPTY_DIR);
    assert_same(&v.files, &got, empty, "7z", what);
}

/// 7-Zip refuses the exFAT image `img` (it has no exFAT handler); if a
/// 7-Zip that reads exFAT fails this, compare the files through it.
pub fn seven_zip_refuses_exfat(img: &Path, what: &str) {
    let out = tool("7z", &["l", img.to_str().expect("utf-8")]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        !out.success() && text.contains("Cannot open the file as archive"),
        "7z l of the {what} exFAT volume no longer refuses it: TESTING.md and \
         these suites should read the files through it now:\n{out}"
    );
}

/// exfat-fuse (on a loop device) finds exactly the files of `v`, equal.
pub fn exfat_fuse_reads(v: &Filled, what: &str) {
    require_root();
    require_fuse();
    let lo = LoopDevice::attach_sector(&v.img, v.sector);
    let mnt = v.tmp.subdir("read-fuse");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let (got, empty) = files_below(&mnt, EMPTY_DIR);
    m.unmount();
    assert_same(&v.files, &got, empty, "exfat-fuse", what);
}

/// fusefat, read-only on a loop device, finds exactly the files of `v`.
/// fusefat 0.1a ignores the case bits of a short-only name (mtools stores
/// `empty` as `EMPTY` with the lower-case flag; Linux's vfat driver and
/// mtools show `empty`) and lists the volume label entry as an empty file
/// in the root: so a short-only name is expected in upper case, and the
/// entry named `label` must be there, empty, and is left out.
pub fn fusefat_reads(v: &Filled, what: &str, label: &str) {
    require_root();
    require_fuse();
    let lo = LoopDevice::attach_sector(&v.img, v.sector);
    let mnt = v.tmp.subdir("read-fusefat");
    let m = FuseMount::fusefat_ro(lo.path(), &mnt);
    let (mut got, empty) = files_below(&mnt, &short_only_upper(EMPTY_DIR));
    m.unmount();
    assert_eq!(
        got.remove(label).map(|d| d.len()),
        Some(0),
        "fusefat lists no empty entry for the label {label} ({what})"
    );
    let folded: Vec<(String, Vec<u8>)> = v
        .files
        .iter()
        .map(|(rel, d)| {
            let rel: Vec<String> = rel.split('/').map(short_only_upper).collect();
            (rel.join("/"), d.clone())
        })
        .collect();
    assert_same(&folded, &got, empty, "fusefat", what);
}

/// `name` in upper case if mtools stores it as a short name only (8.3,
/// ASCII letters, digits, `_` or `-`, not mixed case), as it is otherwise.
fn short_only_upper(name: &str) -> String {
    let (base, ext) = name.split_once('.').unwrap_or((name, ""));
    let fits = |p: &str, max: usize| {
        p.len() <= max
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let mixed = name.bytes().any(|b| b.is_ascii_lowercase())
        && name.bytes().any(|b| b.is_ascii_uppercase());
    if !base.is_empty() && fits(base, 8) && fits(ext, 3) && !mixed {
        name.to_ascii_uppercase()
    } else {
        name.to_string()
    }
}

/// The `fatfs` crate walks the FAT volume of `v` (long names) and finds
/// exactly its files, equal.
pub fn fatfs_reads(v: &Filled, what: &str) {
    let fs = crate::fatfs_io::open_fs(&v.img);
    let mut got = BTreeMap::new();
    let mut empty = false;
    let mut todo = vec![(String::new(), fs.root_dir())];
    while let Some((at, dir)) = todo.pop() {
        for e in dir.iter() {
            let e = e.expect("fatfs directory entry");
            let name = e.file_name();
            if name == "." || name == ".." {
                continue;
            }
            let rel = if at.is_empty() {
                name
            } else {
                format!("{at}/{name}")
            };
            if e.is_dir() {
                if rel == EMPTY_DIR {
                    empty = e.to_dir().iter().filter_map(Result::ok).all(|c| {
                        let n = c.file_name();
                        n == "." || n == ".."
                    });
                }
                todo.push((rel, e.to_dir()));
            } else {
                let mut data = Vec::new();
                e.to_file().read_to_end(&mut data).expect("fatfs read");
                got.insert(rel, data);
            }
        }
    }
    assert_same(&v.files, &got, empty, "the fatfs crate", what);
}
