//! Re-cluster on exFAT images our formatter makes and fills (some files
//! fragmented by hand afterwards): the planner's figures and refusals, the
//! whole job, and a power-cut sweep whose every trial, rerun, holds every
//! file byte for byte (read back through the model's walk and this file's
//! own chain reader).

#![allow(clippy::unwrap_used)]

use super::*;
use mkfs_alloc_blockio::powercut::sweep::{Stage, Sweep};
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_inspect::model::RootDir;
use mkfs_alloc_inspect::InspectError;
use mkfs_alloc_layout::{plan as layout_plan, ClusterChoice, FormatOptions, FsKind, Medium, Prior};
use mkfs_alloc_populate::{plan_tree, TimePolicy, Tree};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// The bytes of a test file: a pattern from its path, so every file differs.
fn content(path: &str, len: usize) -> Vec<u8> {
    let seed = path
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    (0..len)
        .map(|i| {
            (seed.wrapping_add(u32::try_from(i).unwrap().wrapping_mul(2_654_435_761)) >> 13) as u8
        })
        .collect()
}

/// The files of the test tree and their sizes.
fn files(cluster: usize) -> Vec<(String, usize)> {
    files_in(cluster, 0)
}

/// [`files`] plus one small file in each of `dirs` more directories (each
/// directory is one more write of the job: more cut points).
fn files_in(cluster: usize, dirs: usize) -> Vec<(String, usize)> {
    let mut v = vec![
        ("/readme.txt".to_string(), 100),
        ("/empty".to_string(), 0),
        ("/one-cluster.bin".to_string(), cluster),
        (
            "/photos/a long photo name 0001.jpg".to_string(),
            3 * cluster + 17,
        ),
        ("/photos/b.jpg".to_string(), 2 * cluster + 1),
        ("/photos/frag-1.raw".to_string(), 5 * cluster + 300),
        ("/docs/deep/er/note.md".to_string(), 4097),
        ("/docs/frag-2.pdf".to_string(), 4 * cluster),
    ];
    for i in 0..12 {
        v.push((format!("/many/file-{i:02}.txt"), 700 * i + 1));
    }
    for d in 0..dirs {
        v.push((format!("/tree/d{:02}/x{d}.txt", d % 7), 10 + d));
        v.push((format!("/tree/d{:02}/e{d}/y.txt", d % 7), 300 + d));
    }
    v
}

/// How a test image is made.
#[derive(Clone, Copy)]
struct Shape {
    size: u64,
    cluster: u64,
    sector: u32,
    mbr: bool,
    dirs: usize,
    /// FAT and heap alignment in bytes (0: the formatter's own).
    align: u64,
}

impl Shape {
    fn files(&self) -> Vec<(String, usize)> {
        files_in(usize::try_from(self.cluster).unwrap(), self.dirs)
    }
}

/// A volume of `shape` through the facade (so with an MBR when asked),
/// filled with its tree, the `frag-` files fragmented.
fn shaped(shape: Shape) -> MemDisk {
    use crate::populate::{TimePolicy as Tp, Tree as T};
    use crate::MediumOptions;
    let mut opts = MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(shape.cluster)
        .pinned(
            7,
            mkfs_alloc_layout::Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        )
        .sector_size(shape.sector)
        .unwrap();
    if shape.align > 0 {
        opts = opts.align(shape.align);
    }
    if shape.mbr {
        opts = opts.table(mkfs_alloc_partition::TableKind::Mbr);
    }
    let mut disk = MemDisk::new(shape.sector, shape.size / u64::from(shape.sector)).unwrap();
    let mut tree = T::new();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (path, len) in shape.files() {
        tree.add_file(
            &path,
            std::io::Cursor::new(content(&path, len)),
            len as u64,
            t,
        )
        .unwrap();
    }
    let mut plan = opts
        .plan_for(&disk)
        .unwrap()
        .populate(tree, Tp::default())
        .unwrap();
    plan.format(&mut disk).unwrap();
    for (path, _) in shape.files() {
        if path.contains("frag-") {
            fragment(&mut disk, &path);
        }
    }
    disk
}

/// An exFAT volume of `size` bytes at `cluster`-byte clusters holding
/// [`files`], the `frag-` ones fragmented.
fn image(size: u64, cluster: u64) -> MemDisk {
    let opts = FormatOptions::new()
        .fs(FsKind::Exfat)
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_5678);
    let layout = layout_plan(&opts, &Medium::whole(size, 512).expect("medium")).unwrap();
    let mut tree = Tree::new();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (path, len) in files(usize::try_from(cluster).unwrap()) {
        let data = content(&path, len);
        tree.add_file(&path, std::io::Cursor::new(data), len as u64, t)
            .unwrap();
    }
    let mut populated = plan_tree(tree, &layout, TimePolicy::default()).unwrap();
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    populated
        .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
        .unwrap();
    for (path, _) in files(usize::try_from(cluster).unwrap()) {
        if path.contains("frag-") {
            fragment(&mut disk, &path);
        }
    }
    disk
}

fn model_of(disk: &MemDisk) -> Result<(VolumeModel, Vec<EntrySet>), InspectError> {
    model_of_io(disk)
}

/// [`model_of`] on any medium a sweep can clone.
fn model_of_io<D: BlockIo + Clone>(disk: &D) -> Result<(VolumeModel, Vec<EntrySet>), InspectError> {
    let mut d = disk.clone();
    let mut sets = Vec::new();
    let mut vols = read_volumes(&mut d, &ModelOptions::default(), &mut |s| {
        sets.push(s.clone())
    })?;
    assert_eq!(vols.len(), 1);
    Ok((vols.remove(0)?, sets))
}

fn read(disk: &MemDisk, offset: u64, len: usize) -> Vec<u8> {
    let o = usize::try_from(offset).unwrap();
    disk.as_bytes()[o..o + len].to_vec()
}

fn patch(disk: &mut MemDisk, offset: u64, new: &[u8]) {
    let bs = u64::from(disk.block_size());
    let first = offset / bs;
    let end = (offset + new.len() as u64).div_ceil(bs);
    let len = usize::try_from((end - first) * bs).unwrap();
    let mut buf = read(disk, first * bs, len);
    let skip = usize::try_from(offset - first * bs).unwrap();
    buf[skip..skip + new.len()].copy_from_slice(new);
    disk.write_blocks(first, &buf).unwrap();
}

/// Moves the second half of a contiguous file to the free clusters past
/// every used one, gives it a FAT chain (NoFatChain cleared, SetChecksum
/// recomputed) and updates the bitmap: a fragmented file, as a driver
/// leaves one.
fn fragment(disk: &mut MemDisk, path: &str) {
    let (m, sets) = model_of(disk).unwrap();
    let g = &m.geometry;
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    assert!(s.contiguous && s.clusters >= 2, "{path}");
    let cs = g.cluster_size;
    let at = |c: u32| g.data_offset + u64::from(c - 2) * cs;
    let last_used = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| m.used.get(c))
        .unwrap();
    let keep = u32::try_from(s.clusters / 2).unwrap();
    let n = u32::try_from(s.clusters).unwrap();
    let dest = last_used + 3;
    assert!(dest + n <= g.cluster_count + 1, "{g:?} {last_used}");
    let mut chain = Vec::new();
    for i in 0..n {
        let c = if i < keep {
            s.first_cluster + i
        } else {
            dest + i - keep
        };
        if i >= keep {
            let data = read(disk, at(s.first_cluster + i), usize::try_from(cs).unwrap());
            patch(disk, at(c), &data);
        }
        chain.push(c);
    }
    for (i, &c) in chain.iter().enumerate() {
        let next = chain.get(i + 1).copied().unwrap_or(0xFFFF_FFFF);
        patch(disk, g.fat_offset + 4 * u64::from(c), &next.to_le_bytes());
    }
    let (bm_first, _) = m.bitmap.unwrap();
    for c in keep..n {
        let old = s.first_cluster + c;
        let new = dest + c - keep;
        for (cl, on) in [(old, false), (new, true)] {
            let bit = u64::from(cl - 2);
            let byte_at = at(bm_first) + bit / 8;
            let mut b = read(disk, byte_at, 1)[0];
            if on {
                b |= 1 << (bit % 8);
            } else {
                b &= !(1 << (bit % 8));
            }
            patch(disk, byte_at, &[b]);
        }
    }
    let set_len = usize::try_from(s.at.entries).unwrap() * 32;
    let mut set = read(disk, s.at.offset, set_len);
    set[32 + 1] &= !0x02;
    let sum = mkfs_alloc_ondisk::exfat::set_checksum(&set);
    set[2..4].copy_from_slice(&sum.to_le_bytes());
    patch(disk, s.at.offset, &set);
}

/// Every file's bytes, read through the model's walk (entry sets) and this
/// reader's own walk of the chains in the FAT.
fn contents(disk: &MemDisk) -> Result<(VolumeModel, BTreeMap<String, Vec<u8>>), String> {
    let (m, sets) = model_of(disk).map_err(|e| e.to_string())?;
    let g = &m.geometry;
    let cs = g.cluster_size;
    let mut out = BTreeMap::new();
    for s in sets.iter().filter(|s| !s.is_dir) {
        let mut data = Vec::new();
        let mut c = s.first_cluster;
        let need = s.size.div_ceil(cs);
        for _ in 0..need {
            if !(2..=g.cluster_count + 1).contains(&c) {
                return Err(format!("{}: chain leaves the heap at {c}", s.path));
            }
            data.extend(read(
                disk,
                g.data_offset + u64::from(c - 2) * cs,
                usize::try_from(cs).unwrap(),
            ));
            c = if s.contiguous {
                c + 1
            } else {
                u32::from_le_bytes(
                    read(disk, g.fat_offset + 4 * u64::from(c), 4)
                        .try_into()
                        .unwrap(),
                )
            };
        }
        data.truncate(usize::try_from(s.size).unwrap());
        out.insert(s.path.clone(), data);
    }
    Ok((m, out))
}

/// Checks that `disk` holds exactly the test tree; returns the model.
fn check_files(disk: &MemDisk, cluster: usize) -> Result<VolumeModel, String> {
    check_tree(disk, &files(cluster))
}

/// Checks that `disk` holds exactly `want`; returns the model.
fn check_tree(disk: &MemDisk, want: &[(String, usize)]) -> Result<VolumeModel, String> {
    let (m, got) = contents(disk)?;
    for (path, len) in want {
        let (path, len) = (path.as_str(), *len);
        match got.get(path) {
            Some(d) if *d == content(path, len) => {}
            Some(_) => return Err(format!("{path}: content differs")),
            None => return Err(format!("{path}: missing")),
        }
    }
    if got.len() != want.len() {
        return Err(format!("{} files, {} expected", got.len(), want.len()));
    }
    Ok(m)
}

const SIZE: u64 = 8 << 20;
const OLD: u64 = 32 << 10;

#[test]
fn the_test_image_is_clean_and_fragmented() {
    let disk = image(SIZE, OLD);
    let m = check_files(&disk, 32 << 10).unwrap();
    assert!(!m.refused(), "{:?}", m.findings);
    let (_, sets) = model_of(&disk).unwrap();
    let frag = sets.iter().filter(|s| s.fragments > 1).count();
    assert_eq!(frag, 2);
}

#[test]
fn the_plan_of_a_smaller_cluster_moves_no_data() {
    let mut disk = image(SIZE, OLD);
    let job = plan(&mut disk, 4096).unwrap();
    assert_eq!(job.step, Step::Start);
    let p = job.plan.unwrap();
    assert_eq!(p.ratio, 8);
    assert_eq!(p.clusters_moved, 0);
    assert_eq!(p.new.heap_offset, p.old.heap_offset);
    assert_eq!(p.new.cluster_count, p.old.cluster_count * 8);
    // The new FAT sits in the gap after the old one, before the intent.
    assert!(p.new.fat_offset >= p.old.fat_offset + p.old.fat_bytes);
    assert!(p.new.fat_offset + p.new.fat_bytes <= p.intent_offset);
    assert!(p.new.fat_bytes >= (u64::from(p.new.cluster_count) + 2) * 4);
    // The root and the four directories (photos, docs, docs/deep,
    // docs/deep/er, many) are copied.
    assert_eq!(p.dirs.len(), 6);
    // Each copy is its entries in use rounded up to whole new clusters:
    // the root's few entries take one new cluster, not its old 32 KiB.
    assert!(p.dirs.iter().all(|d| d.bytes % 4096 == 0 && d.bytes > 0));
    assert_eq!(p.dirs[0].bytes, 4096);
    assert!(p.dirs.iter().map(|d| d.bytes).sum::<u64>() < 6 * OLD);
    assert_eq!(p.files, files(32 << 10).len() as u64);
    assert!(p.space_gained() > 0);
    let (a_old, a_new) = p.files_allocated;
    assert!(a_new < a_old);
    assert!(p.bytes_written < 1 << 20);
}

#[test]
fn refusals_say_why() {
    let mut disk = image(SIZE, OLD);
    let e = |r: Result<Job, ReclusterError>| match r {
        Err(ReclusterError::Refused(r)) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    assert!(matches!(
        e(plan(&mut disk, 64 << 20)),
        Refusal::InvalidSize { .. }
    ));
    assert!(matches!(
        e(plan(&mut disk, 3000)),
        Refusal::InvalidSize { .. }
    ));
    assert_eq!(plan(&mut disk, OLD).unwrap().step, Step::Nothing);
    // A damaged entry set: refused, nothing written.
    let (_, sets) = model_of(&disk).unwrap();
    let s = sets.iter().find(|s| s.path == "/readme.txt").unwrap();
    let mut b = read(&disk, s.at.offset + 2, 1);
    b[0] ^= 0xFF;
    patch(&mut disk, s.at.offset + 2, &b);
    let before = disk.as_bytes().to_vec();
    assert!(matches!(
        e(recluster(&mut disk, 4096)),
        Refusal::Damaged { .. }
    ));
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn too_little_space_says_how_much_to_free() {
    // A volume nearly full: the directory copies and the bitmap do not fit.
    let size = 4u64 << 20;
    let opts = FormatOptions::new()
        .fs(FsKind::Exfat)
        .cluster(ClusterChoice::Bytes(OLD))
        .serial(1);
    let layout = layout_plan(&opts, &Medium::whole(size, 512).expect("medium")).unwrap();
    let mut tree = Tree::new();
    let t = SystemTime::UNIX_EPOCH;
    // 112 clusters: bitmap, up-case, root and /d are left, none free (the
    // copies, of the entries in use, would fit one free cluster).
    let big = usize::try_from(108 * OLD).unwrap();
    tree.add_file(
        "/d/big",
        std::io::Cursor::new(vec![7u8; big]),
        big as u64,
        t,
    )
    .unwrap();
    let mut populated = plan_tree(tree, &layout, TimePolicy::default()).unwrap();
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    populated
        .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
        .unwrap();
    match plan(&mut disk, 512) {
        Err(ReclusterError::Refused(r @ Refusal::TooLittleSpace { need, free })) => {
            assert!(need > free);
            assert!(r.to_string().contains("free at least"));
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
}

#[test]
fn a_recluster_keeps_every_file_and_runs_again_as_nothing() {
    let mut disk = image(SIZE, OLD);
    let job = recluster(&mut disk, 4096).unwrap();
    let p = job.plan.unwrap();
    let m = check_files(&disk, 32 << 10).unwrap();
    assert_eq!(m.geometry.cluster_size, 4096);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    let free = (u64::from(m.geometry.cluster_count) - m.used.count_set()) * 4096;
    assert_eq!(free, p.free_after);
    // Both boot regions are the new volume, the intent record is gone.
    assert_eq!(
        read(&disk, 0, 512)[..106],
        read(&disk, 12 * 512, 512)[..106]
    );
    assert!(read(&disk, p.intent_offset, 512).iter().all(|&b| b == 0));
    assert_eq!(plan(&mut disk, 4096).unwrap().step, Step::Nothing);
    // And down again, to 512 bytes.
    recluster(&mut disk, 512).unwrap();
    let m = check_files(&disk, 32 << 10).unwrap();
    assert_eq!(m.geometry.cluster_size, 512);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
}

#[test]
fn a_cut_job_is_found_unfinished_until_it_is_run_again() {
    use mkfs_alloc_blockio::PowerCutIo;
    let disk = image(SIZE, OLD);
    let heap = |d: &mut MemDisk| {
        let (m, _) = model_of(d).unwrap();
        m.geometry.data_offset
    };
    let mut d = disk.clone();
    let h = heap(&mut d);
    assert_eq!(unfinished(&mut d, h, 512).unwrap(), None);
    // Cut after the intent record and VolumeDirty are flushed.
    let mut cut = PowerCutIo::new(disk, 6, 1);
    assert!(recluster(&mut cut, 4096).is_err());
    let mut d = cut.into_surviving().unwrap();
    assert_eq!(unfinished(&mut d, h, 512).unwrap(), Some(4096));
    assert!(matches!(
        plan(&mut d, 2048),
        Err(ReclusterError::OtherJob { cluster: 4096 })
    ));
    assert_eq!(plan(&mut d, 4096).unwrap().step, Step::Redo);
    recluster(&mut d, 4096).unwrap();
    assert_eq!(unfinished(&mut d, h, 512).unwrap(), None);
}

#[test]
fn a_new_fat_larger_than_the_gap_plans_the_evacuation_of_the_heap_start() {
    // 600 MiB aligned to 1 MiB: a gap of about 1 MiB after the old FAT;
    // at 512-byte clusters the new FAT needs about 4.7 MiB.
    let shape = Shape {
        size: 600 << 20,
        cluster: 32 << 10,
        sector: 512,
        mbr: false,
        dirs: 0,
        align: 0,
    };
    let mut disk = shaped(shape);
    let p = plan(&mut disk, 512).unwrap().plan.unwrap();
    let e = p.evacuate.clone().unwrap();
    assert!(e.clusters > 0 && e.in_use > 0 && e.in_use <= u64::from(e.clusters));
    let moved = u64::from(e.clusters) * p.old.cluster_size;
    assert_eq!(p.new.heap_offset, p.old.heap_offset + moved);
    assert!(p.new.fat_offset + p.new.fat_bytes <= p.new.heap_offset);
    assert!(p.new.fat_bytes > (4 << 20), "{p:?}");
}

#[test]
fn an_unknown_entry_is_refused_before_the_first_write() {
    let mut disk = image(SIZE, OLD);
    let (m, _) = model_of(&disk).unwrap();
    let g = &m.geometry;
    let RootDir::Cluster(root) = g.root else {
        panic!("exFAT has a root chain")
    };
    let at = g.data_offset + u64::from(root - 2) * g.cluster_size;
    let root_bytes = read(&disk, at, usize::try_from(g.cluster_size).unwrap());
    let free = root_bytes.chunks(32).position(|e| e[0] == 0).unwrap() as u64;
    // A benign primary entry of a type this version does not know.
    let mut e = [0u8; 32];
    e[0] = 0xA1;
    patch(&mut disk, at + 32 * free, &e);
    let before = disk.as_bytes().to_vec();
    match recluster(&mut disk, 4096) {
        Err(ReclusterError::Refused(Refusal::Unsupported { what })) => {
            assert!(what.contains("0xa1"), "{what}");
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(disk.as_bytes() == &before[..]);
}

mod auto;
mod bad;
mod coarse;
mod convert;
mod convert_cluster;
mod evac;
mod fat;
mod fat4k;
mod fat_coarse;
mod fatevac;
mod grow;
mod grow_table;
mod report;
mod shrink;
mod shrink_fat;
mod shrink_table;
mod small;
mod small_large;
mod sweeps;
mod to_fat32;
