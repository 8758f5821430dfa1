//! The whole-volume model (`mkfs_alloc::inspect::read_volume`) on volumes
//! other tools made and filled: `mkfs.fat` + mtools (`mcopy -i IMG@@OFFSET`,
//! whole medium and inside an MBR partition made by sfdisk) and
//! `mkfs.exfat` + exfat-fuse (on a loop device). The model must have no
//! findings; every file's path and size must be what the host tree holds
//! and what the `fatfs` crate lists; every file's chain, followed by the
//! independent decoder below, must hold the file's bytes. Damaged copies
//! (cross-link, lost cluster, FAT copies differing, dirty bit, a wrong
//! entry-set checksum, a bitmap bit clear) must give the finding, and the
//! model's refusal must agree with the verdict of `fsck.fat -n` /
//! `fsck.exfat -n` as the project's judge reads them.
//!
//! Tool tier: root, mkfs.fat, mkfs.exfat, mtools, sfdisk, exfat-fuse,
//! fsck.fat, fsck.exfat.

use mkfs_alloc::inspect::{read_volumes, EntrySet, Finding, Geometry, ModelOptions, ReadOnlyFile};
use mkfs_alloc::layout::FsKind;
use mkfs_alloc_tests::check::{fsck_verdict, with_volume, Fsck};
use mkfs_alloc_tests::checks::mtools;
use mkfs_alloc_tests::cmd::tool_stdin;
use mkfs_alloc_tests::{
    require_root, require_tool, run, sparse_file, test_data, FuseMount, LoopDevice, TempDir, MIB,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The host tree: relative path and bytes. Long names, nested directories,
/// an empty file, sizes around cluster boundaries.
fn host_files() -> Vec<(&'static str, Vec<u8>)> {
    let sizes: [(&str, usize); 8] = [
        ("top.txt", 1234),
        ("empty.dat", 0),
        ("Docs/A long document name.pdf", 70_000),
        ("Docs/Sub/deep.bin", 3 * 4096 + 1),
        ("Docs/Sub/exact.bin", 8192),
        ("Photos/IMG_0001.JPG", 200_000),
        ("Photos/IMG_0002.JPG", 150_000),
        ("Photos/Holiday picture with a long name.jpeg", 33_333),
    ];
    sizes
        .iter()
        .enumerate()
        .map(|(i, (p, n))| (*p, test_data(*n, i as u64 + 7)))
        .collect()
}

/// Writes the host tree under `dir`.
fn write_host_tree(dir: &Path) {
    for (p, data) in host_files() {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, data).expect("write");
    }
}

/// The model of the only volume of `img`, with its entry sets by path.
fn model_of(img: &Path) -> (mkfs_alloc::inspect::VolumeModel, BTreeMap<String, EntrySet>) {
    let mut dev = ReadOnlyFile::open(img, 512).expect("open");
    let mut sets = BTreeMap::new();
    let started = std::time::Instant::now();
    let mut models = read_volumes(&mut dev, &ModelOptions::default(), &mut |s| {
        sets.insert(s.path.clone(), s.clone());
    })
    .expect("read_volumes");
    eprintln!("model of {}: {:?}", img.display(), started.elapsed());
    assert_eq!(models.len(), 1, "one volume");
    (models.remove(0).expect("a readable volume"), sets)
}

/// FAT entry `n` of the FAT at `fat` (an independent decoder: fatgen103 §4).
fn fat_entry(img: &[u8], kind: FsKind, fat: usize, n: u32) -> u32 {
    let n = n as usize;
    match kind {
        FsKind::Fat12 => {
            let at = fat + n * 3 / 2;
            let v = u32::from(img[at]) | u32::from(img[at + 1]) << 8;
            if n % 2 == 0 {
                v & 0xFFF
            } else {
                v >> 4
            }
        }
        FsKind::Fat16 => u32::from(img[fat + 2 * n]) | u32::from(img[fat + 2 * n + 1]) << 8,
        _ => {
            let b = &img[fat + 4 * n..fat + 4 * n + 4];
            let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if kind == FsKind::Fat32 {
                v & 0x0FFF_FFFF
            } else {
                v
            }
        }
    }
}

/// The bytes of `set` read along its chain (or contiguous clusters).
fn read_file(img: &[u8], g: &Geometry, set: &EntrySet) -> Vec<u8> {
    let end = match g.kind {
        FsKind::Fat12 => 0xFF8,
        FsKind::Fat16 => 0xFFF8,
        FsKind::Fat32 => 0x0FFF_FFF8,
        _ => 0xFFFF_FFF8,
    };
    let fat = usize::try_from(g.fat_offset).expect("fits");
    let cs = usize::try_from(g.cluster_size).expect("fits");
    let mut out = Vec::new();
    let mut c = set.first_cluster;
    let mut walked = 0u64;
    while (2..end).contains(&c) && walked < set.clusters {
        let at = usize::try_from(g.data_offset).expect("fits") + (c as usize - 2) * cs;
        out.extend_from_slice(&img[at..at + cs]);
        walked += 1;
        c = if set.contiguous {
            c + 1
        } else {
            fat_entry(img, g.kind, fat, c)
        };
    }
    assert_eq!(
        walked, set.clusters,
        "{}: clusters along the chain",
        set.path
    );
    out.truncate(usize::try_from(set.size).expect("fits"));
    out
}

/// The model has no findings, and its files are the host tree's, with the
/// host's bytes along their chains.
fn assert_matches_host(
    img: &Path,
) -> (mkfs_alloc::inspect::VolumeModel, BTreeMap<String, EntrySet>) {
    let (m, sets) = model_of(img);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert!(!m.refused());
    let bytes = std::fs::read(img).expect("read image");
    let host = host_files();
    let files: Vec<&EntrySet> = sets.values().filter(|s| !s.is_dir).collect();
    assert_eq!(
        files.len(),
        host.len() + 1,
        "the host files and frag.bin: {:?}",
        sets.keys()
    );
    for (p, data) in &host {
        let s = sets
            .get(&format!("/{p}"))
            .unwrap_or_else(|| panic!("/{p} missing: {:?}", sets.keys()));
        assert_eq!(s.size, data.len() as u64, "{p}");
        assert!(
            read_file(&bytes, &m.geometry, s) == *data,
            "{p}: the bytes along its chain differ"
        );
    }
    let frag = &sets["/frag.bin"];
    assert!(frag.fragments >= 2, "frag.bin is fragmented: {frag:?}");
    assert!(read_file(&bytes, &m.geometry, frag) == frag_data(m.geometry.cluster_size));
    assert_eq!(m.used.count_set(), m.allocated_clusters);
    (m, sets)
}

/// The file written into the gap a deleted file left: longer than the gap,
/// so its chain has two runs.
fn frag_data(cluster: u64) -> Vec<u8> {
    test_data(usize::try_from(5 * cluster).expect("fits"), 99)
}

/// `fatfs`'s listing of the volume in `vol` (a file holding only it):
/// path -> size of every file.
fn fatfs_listing(vol: &Path) -> BTreeMap<String, u64> {
    fn walk(dir: fatfs::Dir<'_, std::fs::File>, at: &str, out: &mut BTreeMap<String, u64>) {
        for e in dir.iter() {
            let e = e.expect("fatfs entry");
            let name = e.file_name();
            if name == "." || name == ".." {
                continue;
            }
            let path = format!("{at}/{name}");
            if e.is_dir() {
                walk(e.to_dir(), &path, out);
            } else {
                out.insert(path, e.len());
            }
        }
    }
    let fs = mkfs_alloc_tests::fatfs_io::open_fs(vol);
    let mut out = BTreeMap::new();
    walk(fs.root_dir(), "", &mut out);
    out
}

/// A FAT volume made by mkfs.fat (`-F bits`, `-s` sectors per cluster),
/// inside an MBR partition at 1 MiB when `partition`, filled by mcopy.
fn fat_volume(tmp: &TempDir, bits: u8, size: u64, spc: u32, partition: bool) -> (PathBuf, u64) {
    let img = tmp.join("fat.img");
    sparse_file(&img, size);
    let offset = if partition {
        tool_stdin(
            "sfdisk",
            &[img.as_os_str()],
            "label: dos\nstart=2048, type=6\n",
        );
        MIB
    } else {
        0
    };
    let mut args = vec![
        "-F".to_string(),
        bits.to_string(),
        "-s".into(),
        spc.to_string(),
    ];
    if partition {
        args.extend(["--offset".into(), "2048".into()]);
    }
    args.push(img.to_string_lossy().into_owned());
    run(require_tool("mkfs.fat"), &args).assert_success();
    let target = PathBuf::from(format!("{}@@{offset}", img.display()));
    let host = tmp.subdir("host");
    write_host_tree(&host);
    let cs = u64::from(spc) * 512;
    let gap = tmp.join("gap.bin");
    std::fs::write(&gap, test_data(usize::try_from(3 * cs).expect("fits"), 5)).expect("write");
    let frag = tmp.join("frag.bin");
    std::fs::write(&frag, frag_data(cs)).expect("write");
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    mtools("mcopy", &target, &[&s(gap), "::/"]).assert_success();
    let (a, b, c, d) = (
        s(host.join("top.txt")),
        s(host.join("empty.dat")),
        s(host.join("Docs")),
        s(host.join("Photos")),
    );
    mtools("mcopy", &target, &["-s", &a, &b, &c, &d, "::/"]).assert_success();
    mtools("mdel", &target, &["::/gap.bin"]).assert_success();
    if bits == 32 {
        // FSInfo's next-free hint to "unknown" (FSI_Nxt_Free, byte 492 of
        // sector 1), so mtools looks for free clusters from the start and
        // fills the gap instead of allocating after the last file.
        patch(&img, offset + 512 + 492, &u32::MAX.to_le_bytes());
    }
    mtools("mcopy", &target, &[&s(frag), "::/"]).assert_success();
    (img, offset)
}

/// The volume's bytes alone, in a file of its own (for `fatfs`).
fn volume_file(tmp: &TempDir, img: &Path, offset: u64) -> PathBuf {
    let bytes = std::fs::read(img).expect("read");
    let out = tmp.join("volume-only.img");
    std::fs::write(&out, &bytes[usize::try_from(offset).expect("fits")..]).expect("write");
    out
}

/// What fsck says about the volume of `img` at `offset`: clean or not.
fn fsck_clean(fs: Fsck, img: &Path, offset: u64) -> (bool, String) {
    let len = std::fs::metadata(img).expect("stat").len() - offset;
    let (clean, out) = with_volume(img, offset, len, |t| fsck_verdict(fs, t));
    (clean, out.to_string())
}

fn patch(img: &Path, at: u64, new: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(img)
        .expect("open");
    f.seek(SeekFrom::Start(at)).expect("seek");
    f.write_all(new).expect("write");
}

/// A copy of `img` damaged by `damage`: the model has a finding of `kind`
/// and refuses the volume; fsck calls it not clean too, except where
/// `fsck_sees` is false (a damage the checker's `-n` run does not report:
/// the model is stricter there, and the test pins that it still is).
fn damaged(
    tmp: &TempDir,
    img: &Path,
    (offset, fs): (u64, Fsck),
    kind: &str,
    fsck_sees: bool,
    damage: impl FnOnce(&Path),
) {
    let copy = tmp.join(&format!("{kind}.img"));
    std::fs::copy(img, &copy).expect("copy");
    damage(&copy);
    let (m, _) = model_of(&copy);
    let kinds: Vec<&str> = m.findings.iter().map(Finding::kind).collect();
    assert!(kinds.contains(&kind), "{kind}: {:?}", m.findings);
    assert!(m.refused(), "{kind}: {:?}", m.findings);
    let (clean, out) = fsck_clean(fs, &copy, offset);
    assert_eq!(
        !clean, fsck_sees,
        "{kind}: fsck's verdict changed (the model: {:?}):\n{out}",
        m.findings
    );
    std::fs::remove_file(&copy).expect("rm");
}

/// The short entry of a FAT entry set.
fn short_entry(s: &EntrySet) -> u64 {
    s.at.offset + 32 * u64::from(s.at.entries - 1)
}

fn fat_case(bits: u8, size: u64, spc: u32, partition: bool) {
    require_root();
    let tmp = TempDir::new(&format!("model-fat{bits}"));
    let (img, offset) = fat_volume(&tmp, bits, size, spc, partition);
    let (clean, out) = fsck_clean(Fsck::Fat, &img, offset);
    assert!(clean, "{out}");
    let (m, sets) = assert_matches_host(&img);
    let listed = fatfs_listing(&volume_file(&tmp, &img, offset));
    let model: BTreeMap<String, u64> = sets
        .values()
        .filter(|s| !s.is_dir)
        .map(|s| (s.path.clone(), s.size))
        .collect();
    assert_eq!(model, listed, "the model and fatfs list the same files");

    let g = m.geometry.clone();
    let (a, b) = (
        sets["/top.txt"].clone(),
        sets["/Photos/IMG_0001.JPG"].clone(),
    );
    damaged(&tmp, &img, (offset, Fsck::Fat), "cross_linked", true, |c| {
        let lo = u16::try_from(a.first_cluster & 0xFFFF).expect("fits");
        patch(c, short_entry(&b) + 26, &lo.to_le_bytes());
    });
    let free = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| !m.used.get(c))
        .expect("a free cluster");
    let fat_at = |copy: u32| g.fat_offset + u64::from(copy) * g.fat_bytes;
    let eoc = |c: &Path, copy: u32| match g.kind {
        FsKind::Fat32 => patch(
            c,
            fat_at(copy) + 4 * u64::from(free),
            &0x0FFF_FFFFu32.to_le_bytes(),
        ),
        FsKind::Fat16 => patch(
            c,
            fat_at(copy) + 2 * u64::from(free),
            &0xFFFFu16.to_le_bytes(),
        ),
        _ => {
            let at = fat_at(copy) + u64::from(free) * 3 / 2;
            let mut two = [0u8; 2];
            let f = std::fs::read(c).expect("read");
            let i = usize::try_from(at).expect("fits");
            two.copy_from_slice(&f[i..i + 2]);
            let v = u16::from_le_bytes(two);
            let v = if free % 2 == 0 {
                v | 0x0FFF
            } else {
                v | 0xFFF0
            };
            patch(c, at, &v.to_le_bytes());
        }
    };
    damaged(
        &tmp,
        &img,
        (offset, Fsck::Fat),
        "lost_clusters",
        true,
        |c| {
            for copy in 0..g.fat_count {
                eoc(c, copy);
            }
        },
    );
    damaged(
        &tmp,
        &img,
        (offset, Fsck::Fat),
        "fat_copies_differ",
        true,
        |c| eoc(c, 1),
    );
    // /Docs/Sub's `..` names itself instead of /Docs.
    let sub = sets["/Docs/Sub"].clone();
    damaged(&tmp, &img, (offset, Fsck::Fat), "dot_entry", true, |c| {
        let at = g.data_offset + u64::from(sub.first_cluster - 2) * g.cluster_size;
        let lo = u16::try_from(sub.first_cluster & 0xFFFF).expect("fits");
        patch(c, at + 32 + 26, &lo.to_le_bytes());
    });
    let dirty_at = offset + if g.kind == FsKind::Fat32 { 65 } else { 37 };
    damaged(&tmp, &img, (offset, Fsck::Fat), "dirty", true, |c| {
        patch(c, dirty_at, &[0x01])
    });
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat12_by_mkfs_fat_and_mtools() {
    fat_case(12, 8 * MIB, 4, false);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat16_in_an_mbr_partition_by_mkfs_fat_and_mtools() {
    fat_case(16, 65 * MIB, 8, true);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_by_mkfs_fat_and_mtools() {
    fat_case(32, 96 * MIB, 1, false);
}

/// An exFAT volume made by mkfs.exfat (4 KiB clusters) and filled through
/// exfat-fuse on a loop device, with a fragmented file.
fn exfat_volume(tmp: &TempDir) -> PathBuf {
    let img = tmp.join("exfat.img");
    sparse_file(&img, 64 * MIB);
    run(
        require_tool("mkfs.exfat"),
        &[Path::new("-c"), Path::new("4K"), &img],
    )
    .assert_success();
    let host = tmp.subdir("host");
    write_host_tree(&host);
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    std::fs::write(mnt.join("gap.bin"), test_data(3 * 4096, 5)).expect("write gap");
    for (p, data) in host_files() {
        let path = mnt.join(p);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, data).expect("write");
    }
    std::fs::remove_file(mnt.join("gap.bin")).expect("rm gap");
    std::fs::write(mnt.join("frag.bin"), frag_data(4096)).expect("write frag");
    m.unmount();
    drop(lo);
    img
}

/// The byte and bit of the exFAT bitmap that hold `cluster`.
fn bitmap_bit(g: &Geometry, bitmap_first: u32, cluster: u32) -> (u64, u8) {
    let at = g.data_offset + u64::from(bitmap_first - 2) * g.cluster_size;
    let i = u64::from(cluster - 2);
    (at + i / 8, 1 << (i % 8))
}

/// The first cluster of the allocation bitmap (the root's entry of type
/// 0x81, at the start of the root directory in what mkfs.exfat writes).
fn bitmap_first(img: &[u8], g: &Geometry) -> u32 {
    let mkfs_alloc::inspect::RootDir::Cluster(root) = g.root else {
        panic!("exFAT root")
    };
    let at = usize::try_from(g.data_offset + u64::from(root - 2) * g.cluster_size).expect("fits");
    let e = (at..at + 4096)
        .step_by(32)
        .find(|&o| img[o] == 0x81)
        .expect("bitmap entry");
    u32::from_le_bytes([img[e + 20], img[e + 21], img[e + 22], img[e + 23]])
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_by_mkfs_exfat_and_exfat_fuse() {
    require_root();
    require_tool("fusermount");
    let tmp = TempDir::new("model-exfat");
    let img = exfat_volume(&tmp);
    let (clean, out) = fsck_clean(Fsck::Exfat, &img, 0);
    assert!(clean, "{out}");
    let (m, sets) = assert_matches_host(&img);
    let g = m.geometry.clone();
    let bytes = std::fs::read(&img).expect("read");
    let bm = bitmap_first(&bytes, &g);
    let a = sets["/top.txt"].clone();
    damaged(&tmp, &img, (0, Fsck::Exfat), "set_checksum", true, |c| {
        patch(c, a.at.offset + 64 + 2, b"q");
    });
    let free = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| !m.used.get(c))
        .expect("free");
    let (byte, bit) = bitmap_bit(&g, bm, free);
    // fsck.exfat 1.2 -n does not report a bitmap bit set for a cluster no
    // chain reaches.
    damaged(&tmp, &img, (0, Fsck::Exfat), "lost_clusters", false, |c| {
        patch(
            c,
            byte,
            &[bytes[usize::try_from(byte).expect("fits")] | bit],
        );
    });
    // fsck.exfat 1.2 -n does not report VolumeDirty either.
    damaged(&tmp, &img, (0, Fsck::Exfat), "dirty", false, |c| {
        patch(c, 106, &[bytes[106] | 0x02]);
    });
    // IMG_0002's stream entry names IMG_0001's first cluster (the set
    // checksum fixed): a cluster reached twice.
    let (one, two) = (&sets["/Photos/IMG_0001.JPG"], &sets["/Photos/IMG_0002.JPG"]);
    damaged(&tmp, &img, (0, Fsck::Exfat), "cross_linked", true, |c| {
        let at = usize::try_from(two.at.offset).expect("fits");
        let n = 32 * two.at.entries as usize;
        let mut set = bytes[at..at + n].to_vec();
        set[52..56].copy_from_slice(&one.first_cluster.to_le_bytes());
        let sum = mkfs_alloc_ondisk::exfat::set_checksum(&set);
        set[2..4].copy_from_slice(&sum.to_le_bytes());
        patch(c, two.at.offset, &set);
    });
    let used = one.first_cluster;
    let (byte, bit) = bitmap_bit(&g, bm, used);
    damaged(&tmp, &img, (0, Fsck::Exfat), "bitmap_clear", true, |c| {
        patch(
            c,
            byte,
            &[bytes[usize::try_from(byte).expect("fits")] & !bit],
        );
    });
}
