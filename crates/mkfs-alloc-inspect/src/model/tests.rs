//! The volume model on images our formatter makes and fills, clean and
//! damaged on purpose: each damage gives its finding, a clean volume none.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::exfat::parse_directory;
use crate::exfat::ExfatItem;
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::{plan, ClusterChoice, FormatOptions, Medium, Prior};
use mkfs_alloc_ondisk::exfat::set_checksum;
use mkfs_alloc_populate::{plan_tree, TimePolicy, Tree};
use std::time::{Duration, SystemTime};

const SIZE: u64 = 64 << 20;

/// A volume of `fs` (64 MiB with 4 KiB clusters; FAT32 with 512-byte
/// clusters to reach its minimum cluster count; FAT12 on 8 MiB) holding a
/// small tree: two files in the root, a directory with a file of 3
/// clusters, an empty file and a long name.
fn image(fs: FsKind) -> MemDisk {
    let (size, cluster) = match fs {
        FsKind::Fat12 => (8 << 20, 4096),
        FsKind::Fat32 => (SIZE, 512),
        _ => (SIZE, 4096),
    };
    let opts = FormatOptions::new()
        .fs(fs)
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_5678);
    let layout = plan(&opts, &Medium::whole(size, 512).expect("medium")).unwrap();
    let mut tree = Tree::new();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut add = |path: &str, len: usize| {
        let data = vec![0x5Au8; len];
        tree.add_file(path, std::io::Cursor::new(data), len as u64, t)
            .unwrap();
    };
    add("/a.txt", 100);
    add("/b.bin", 5000);
    add("/dir/c.dat", 3 * cluster as usize);
    add("/dir/empty", 0);
    add("/dir/A rather long file name.text", 10);
    let mut populated = plan_tree(tree, &layout, TimePolicy::default()).unwrap();
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    populated
        .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
        .unwrap();
    disk
}

fn model(disk: &mut MemDisk) -> (VolumeModel, Vec<EntrySet>) {
    let mut sets = Vec::new();
    let size = disk.num_blocks() * 512;
    let m = read_volume(disk, 0, size, &ModelOptions::default(), &mut |s| {
        sets.push(s.clone())
    })
    .unwrap();
    (m, sets)
}

fn set<'a>(sets: &'a [EntrySet], path: &str) -> &'a EntrySet {
    sets.iter().find(|s| s.path == path).unwrap()
}

fn bytes(disk: &mut MemDisk, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    let bs = 512u64;
    let first = offset / bs;
    let end = (offset + len as u64).div_ceil(bs);
    let mut buf = vec![0u8; usize::try_from((end - first) * bs).unwrap()];
    disk.read_blocks(first, &mut buf).unwrap();
    let skip = usize::try_from(offset - first * bs).unwrap();
    b.copy_from_slice(&buf[skip..skip + len]);
    b
}

fn patch(disk: &mut MemDisk, offset: u64, new: &[u8]) {
    let bs = 512u64;
    let first = offset / bs;
    let end = (offset + new.len() as u64).div_ceil(bs);
    let mut buf = vec![0u8; usize::try_from((end - first) * bs).unwrap()];
    disk.read_blocks(first, &mut buf).unwrap();
    let skip = usize::try_from(offset - first * bs).unwrap();
    buf[skip..skip + new.len()].copy_from_slice(new);
    disk.write_blocks(first, &buf).unwrap();
}

fn kinds(m: &VolumeModel) -> Vec<&'static str> {
    m.findings.iter().map(Finding::kind).collect()
}

/// Writes the FAT entry of `cluster` in every FAT copy (or only `copy`).
fn set_fat(disk: &mut MemDisk, g: &Geometry, cluster: u32, value: u32, copy: Option<u32>) {
    for c in 0..g.fat_count {
        if copy.is_some_and(|only| only != c) {
            continue;
        }
        let base = g.fat_offset + u64::from(c) * g.fat_bytes;
        match g.kind {
            FsKind::Fat12 => {
                let at = base + u64::from(cluster) * 3 / 2;
                let mut b = bytes(disk, at, 2);
                let mut v = u16::from_le_bytes([b[0], b[1]]);
                let val = u16::try_from(value & 0xFFF).unwrap();
                v = if cluster % 2 == 0 {
                    (v & 0xF000) | val
                } else {
                    (v & 0x000F) | (val << 4)
                };
                b.copy_from_slice(&v.to_le_bytes());
                patch(disk, at, &b);
            }
            FsKind::Fat16 => {
                let v = u16::try_from(value & 0xFFFF).unwrap();
                patch(disk, base + u64::from(cluster) * 2, &v.to_le_bytes());
            }
            _ => patch(disk, base + u64::from(cluster) * 4, &value.to_le_bytes()),
        }
    }
}

/// A free cluster near the end of the volume.
fn free_cluster(m: &VolumeModel) -> u32 {
    let last = m.geometry.cluster_count + 1;
    (2..=last).rev().find(|&c| !m.used.get(c)).unwrap()
}

#[test]
fn clean_volumes_have_no_findings_and_every_entry() {
    for fs in [FsKind::Exfat, FsKind::Fat32, FsKind::Fat16, FsKind::Fat12] {
        let mut disk = image(fs);
        let (m, sets) = model(&mut disk);
        assert!(m.findings.is_empty(), "{fs:?}: {:?}", m.findings);
        assert!(!m.refused(), "{fs:?}");
        assert_eq!((m.files, m.dirs), (5, 1), "{fs:?}");
        assert_eq!(m.geometry.kind, fs);
        let c = set(&sets, "/dir/c.dat");
        let cs = m.geometry.cluster_size;
        assert_eq!((c.size, c.clusters, c.fragments), (3 * cs, 3, 1), "{fs:?}");
        let long = set(&sets, "/dir/A rather long file name.text");
        // exFAT: file, stream, two name entries; FAT: three long-name
        // entries and the short entry.
        assert_eq!(long.at.entries, 4, "{fs:?}");
        assert!(long.at.offset >= m.geometry.data_offset, "{fs:?}");
        assert_eq!(set(&sets, "/dir/empty").clusters, 0);
        // Used clusters: what the FAT or bitmap marks.
        assert_eq!(m.used.count_set(), m.allocated_clusters, "{fs:?}");
    }
}

#[test]
fn entry_positions_point_at_the_entries() {
    let mut disk = image(FsKind::Exfat);
    let (_, sets) = model(&mut disk);
    let b = set(&sets, "/b.bin");
    let raw = bytes(&mut disk, b.at.offset, 32 * b.at.entries as usize);
    let items = parse_directory(&raw);
    assert!(
        matches!(&items[0], ExfatItem::File(f) if f.name == "b.bin" && f.data_length == 5000),
        "{items:?}"
    );
    let mut disk = image(FsKind::Fat32);
    let (_, sets) = model(&mut disk);
    let b = set(&sets, "/b.bin");
    let short = b.at.offset + 32 * u64::from(b.at.entries - 1);
    assert_eq!(bytes(&mut disk, short, 11), b"B       BIN");
}

#[test]
fn cross_link_and_lost_chain_on_fat() {
    for fs in [FsKind::Fat32, FsKind::Fat16, FsKind::Fat12] {
        let mut disk = image(fs);
        let (_, sets) = model(&mut disk);
        let a = set(&sets, "/a.txt");
        let b = set(&sets, "/b.bin");
        // b.bin's short entry names a.txt's first cluster: a.txt's cluster
        // is reached twice, and b.bin's own clusters by nobody.
        let short = b.at.offset + 32 * u64::from(b.at.entries - 1);
        let lo = u16::try_from(a.first_cluster & 0xFFFF).unwrap();
        patch(&mut disk, short + 26, &lo.to_le_bytes());
        let (m, _) = model(&mut disk);
        let k = kinds(&m);
        assert!(k.contains(&"cross_linked"), "{fs:?}: {:?}", m.findings);
        assert!(k.contains(&"lost_clusters"), "{fs:?}: {:?}", m.findings);
        assert!(m.refused());
        let lost = m.findings.iter().find_map(|f| match f {
            Finding::LostClusters { count, first } => Some((*count, *first)),
            _ => None,
        });
        assert_eq!(lost, Some((b.clusters, b.first_cluster)), "{fs:?}");
    }
}

#[test]
fn lost_cluster_on_fat_and_exfat() {
    for fs in [FsKind::Fat32, FsKind::Fat16, FsKind::Fat12] {
        let mut disk = image(fs);
        let (m, _) = model(&mut disk);
        let free = free_cluster(&m);
        set_fat(&mut disk, &m.geometry, free, 0x0FFF_FFFF, None);
        let (m, _) = model(&mut disk);
        assert_eq!(
            m.findings,
            vec![Finding::LostClusters {
                count: 1,
                first: free
            }],
            "{fs:?}"
        );
    }
    let mut disk = image(FsKind::Exfat);
    let (m, _) = model(&mut disk);
    let free = free_cluster(&m);
    let bit = bitmap_bit(&mut disk, &m.geometry, free);
    let old = bytes(&mut disk, bit.0, 1)[0];
    patch(&mut disk, bit.0, &[old | bit.1]);
    let (m, _) = model(&mut disk);
    assert_eq!(
        m.findings,
        vec![Finding::LostClusters {
            count: 1,
            first: free
        }]
    );
}

/// Where the exFAT bitmap bit of `cluster` is: byte offset and mask.
fn bitmap_bit(disk: &mut MemDisk, g: &Geometry, cluster: u32) -> (u64, u8) {
    let RootDir::Cluster(root) = g.root else {
        panic!("exFAT root")
    };
    let at = |c: u32| g.data_offset + u64::from(c - 2) * g.cluster_size;
    let raw = bytes(disk, at(root), usize::try_from(g.cluster_size).unwrap());
    let first = parse_directory(&raw)
        .into_iter()
        .find_map(|i| match i {
            ExfatItem::Bitmap { first_cluster, .. } => Some(first_cluster),
            _ => None,
        })
        .unwrap();
    let i = u64::from(cluster - 2);
    (at(first) + i / 8, 1 << (i % 8))
}

#[test]
fn bitmap_bit_clear_for_a_used_cluster() {
    let mut disk = image(FsKind::Exfat);
    let (_, sets) = model(&mut disk);
    let c = set(&sets, "/dir/c.dat");
    let (m, _) = model(&mut disk);
    let bit = bitmap_bit(&mut disk, &m.geometry, c.first_cluster + 1);
    let old = bytes(&mut disk, bit.0, 1)[0];
    patch(&mut disk, bit.0, &[old & !bit.1]);
    let (m, _) = model(&mut disk);
    assert_eq!(
        m.findings,
        vec![Finding::BitmapClear {
            count: 1,
            first: c.first_cluster + 1
        }]
    );
    assert!(m.refused());
}

#[test]
fn bad_set_checksum_and_name_hash() {
    let mut disk = image(FsKind::Exfat);
    let (_, sets) = model(&mut disk);
    let a = set(&sets, "/a.txt");
    // One name character changed: the set checksum no longer matches.
    let name_at = a.at.offset + 64 + 2;
    patch(&mut disk, name_at, b"q");
    let (m, sets2) = model(&mut disk);
    assert!(
        matches!(m.findings.first(), Some(Finding::SetChecksum { offset, .. }) if *offset == a.at.offset),
        "{:?}",
        m.findings
    );
    assert!(!sets2
        .iter()
        .any(|s| s.path.ends_with(".txt") && s.path.len() == 6));
    assert!(m.refused());

    // The name changed and the checksum fixed: now the name hash is wrong.
    let mut disk = image(FsKind::Exfat);
    patch(&mut disk, name_at, b"q");
    let n = usize::try_from(a.at.entries).unwrap() * 32;
    let mut raw = bytes(&mut disk, a.at.offset, n);
    let sum = set_checksum(&raw);
    raw[2..4].copy_from_slice(&sum.to_le_bytes());
    patch(&mut disk, a.at.offset, &raw);
    let (m, _) = model(&mut disk);
    assert!(
        matches!(&m.findings[..], [Finding::NameHash { path, .. }] if path == "/q.txt"),
        "{:?}",
        m.findings
    );
}

#[test]
fn fat_copies_differ() {
    for fs in [FsKind::Fat32, FsKind::Fat16, FsKind::Fat12] {
        let mut disk = image(fs);
        let (m, _) = model(&mut disk);
        let free = free_cluster(&m);
        set_fat(&mut disk, &m.geometry, free, 0x0FFF_FFF7, Some(1));
        let (m, _) = model(&mut disk);
        assert!(
            matches!(&m.findings[..], [Finding::FatCopiesDiffer { copy: 1, .. }]),
            "{fs:?}: {:?}",
            m.findings
        );
    }
}

#[test]
fn dirty_marks() {
    let mut disk = image(FsKind::Exfat);
    let flags = bytes(&mut disk, 106, 1)[0];
    patch(&mut disk, 106, &[flags | 0x02]);
    let (m, _) = model(&mut disk);
    assert_eq!(
        m.findings,
        vec![Finding::Dirty {
            mark: DirtyMark::VolumeDirty
        }]
    );
    assert!(m.refused());
    for fs in [FsKind::Fat32, FsKind::Fat16] {
        let mut disk = image(fs);
        let (m, _) = model(&mut disk);
        let clean = if fs == FsKind::Fat32 {
            0x0FFF_FFFF
        } else {
            0xFFFF
        };
        let bit = if fs == FsKind::Fat32 {
            0x0800_0000
        } else {
            0x8000
        };
        set_fat(&mut disk, &m.geometry, 1, clean & !bit, None);
        let (m, _) = model(&mut disk);
        assert_eq!(
            m.findings,
            vec![Finding::Dirty {
                mark: DirtyMark::FatCleanBit
            }],
            "{fs:?}"
        );
    }
    let mut disk = image(FsKind::Fat16);
    patch(&mut disk, 37, &[0x01]);
    let (m, _) = model(&mut disk);
    assert_eq!(
        m.findings,
        vec![Finding::Dirty {
            mark: DirtyMark::BootSectorBit
        }]
    );
}

#[test]
fn chain_longer_or_shorter_than_the_size() {
    let mut disk = image(FsKind::Fat32);
    let (_, sets) = model(&mut disk);
    let c = set(&sets, "/dir/c.dat");
    let short = c.at.offset + 32 * u64::from(c.at.entries - 1);
    patch(&mut disk, short + 28, &512u32.to_le_bytes());
    let (m, _) = model(&mut disk);
    assert!(
        matches!(
            &m.findings[..],
            [Finding::ChainTooLong {
                size: 512,
                chain_bytes: 1536,
                ..
            }]
        ),
        "{:?}",
        m.findings
    );
    patch(&mut disk, short + 28, &20000u32.to_le_bytes());
    let (m, _) = model(&mut disk);
    assert!(
        matches!(
            &m.findings[..],
            [Finding::ChainTooShort { size: 20000, .. }]
        ),
        "{:?}",
        m.findings
    );
}

#[test]
fn long_name_checksum() {
    let mut disk = image(FsKind::Fat32);
    let (_, sets) = model(&mut disk);
    let long = set(&sets, "/dir/A rather long file name.text");
    let chk = bytes(&mut disk, long.at.offset + 13, 1)[0];
    patch(&mut disk, long.at.offset + 13, &[chk ^ 0xFF]);
    let (m, _) = model(&mut disk);
    assert!(
        m.findings
            .iter()
            .any(|f| matches!(f, Finding::LongName { .. })),
        "{:?}",
        m.findings
    );
}

#[test]
fn bad_clusters_do_not_refuse() {
    let mut disk = image(FsKind::Fat32);
    let (m, _) = model(&mut disk);
    let free = free_cluster(&m);
    set_fat(&mut disk, &m.geometry, free, 0x0FFF_FFF7, None);
    let (m, _) = model(&mut disk);
    assert_eq!(
        m.findings,
        vec![Finding::BadClusters {
            count: 1,
            first: free
        }]
    );
    assert!(!m.refused());
}

#[test]
fn a_directory_cycle_ends() {
    // /dir's chain loops onto itself: reported, and the walk ends.
    let mut disk = image(FsKind::Fat32);
    let (m, sets) = model(&mut disk);
    let d = set(&sets, "/dir");
    set_fat(
        &mut disk,
        &m.geometry,
        d.first_cluster,
        d.first_cluster,
        None,
    );
    let (m, _) = model(&mut disk);
    assert!(
        m.findings
            .iter()
            .any(|f| matches!(f, Finding::BrokenChain { path, problem: crate::ChainProblem::Loop { .. } } if path == "/dir")),
        "{:?}",
        m.findings
    );
}

#[test]
fn inside_a_partition_and_memory() {
    let mut disk = image(FsKind::Exfat);
    let (m, _) = model(&mut disk);
    assert_eq!(
        m.used.memory_bytes() as u64,
        u64::from(m.geometry.cluster_count).div_ceil(64) * 8
    );
    // 2 TiB at 4 KiB: 2^29 clusters, 64 MiB of bits.
    assert_eq!(ClusterBits::new(1 << 29).memory_bytes(), 64 << 20);
    let models = read_volumes(&mut disk, &ModelOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(models.len(), 1);
    assert!(models[0].as_ref().unwrap().findings.is_empty());
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let mut disk = MemDisk::from_vec(512, vec![0xA5; 1 << 20]).unwrap();
    assert!(read_volume(&mut disk, 0, 1 << 20, &ModelOptions::default(), &mut |_| {}).is_err());
    assert!(read_volume(
        &mut disk,
        u64::MAX - 10,
        100,
        &ModelOptions::default(),
        &mut |_| {}
    )
    .is_err());
}

#[test]
fn upcase_table_checksum() {
    let mut disk = image(FsKind::Exfat);
    let (m, _) = model(&mut disk);
    let g = &m.geometry;
    let RootDir::Cluster(root) = g.root else {
        panic!("exFAT root")
    };
    let at = g.data_offset + u64::from(root - 2) * g.cluster_size;
    let raw = bytes(&mut disk, at, usize::try_from(g.cluster_size).unwrap());
    // The up-case entry (type 0x82): TableChecksum at bytes 4..8.
    let i = raw.chunks_exact(32).position(|e| e[0] == 0x82).unwrap();
    let e = at + 32 * i as u64;
    let old = bytes(&mut disk, e + 4, 1)[0];
    patch(&mut disk, e + 4, &[old ^ 1]);
    let (m, _) = model(&mut disk);
    assert!(
        matches!(&m.findings[..], [Finding::UpcaseTable { why }] if why.starts_with("TableChecksum")),
        "{:?}",
        m.findings
    );
}

#[test]
fn dot_entries_name_their_directories() {
    for fs in [FsKind::Fat32, FsKind::Fat16] {
        let mut disk = image(fs);
        let (m, sets) = model(&mut disk);
        let d = set(&sets, "/dir");
        let g = &m.geometry;
        let at = g.data_offset + u64::from(d.first_cluster - 2) * g.cluster_size;
        assert_eq!(bytes(&mut disk, at, 2), b". ");
        // `..` of a child of the root names 0; make it name the directory.
        let lo = u16::try_from(d.first_cluster).unwrap();
        patch(&mut disk, at + 32 + 26, &lo.to_le_bytes());
        let (m, _) = model(&mut disk);
        assert_eq!(
            m.findings,
            vec![Finding::DotEntry {
                dir: "/dir".into(),
                name: "..".into(),
                first: d.first_cluster,
                expected: 0
            }],
            "{fs:?}"
        );
    }
}

/// A finding reads as JSON by its kind, its words and whether it refuses
/// an in-place change.
#[test]
fn findings_serialize_as_kind_message_and_refusal() {
    let f = Finding::BadClusters { count: 3, first: 7 };
    let v = serde_json::to_value(&f).unwrap();
    assert_eq!(v["kind"], "bad_clusters");
    assert_eq!(v["message"], f.to_string());
    assert_eq!(v["refuses_change"], false);
    let d = serde_json::to_value(Finding::Dirty {
        mark: DirtyMark::VolumeDirty,
    })
    .unwrap();
    assert_eq!(
        (d["kind"].as_str(), d["refuses_change"].as_bool()),
        (Some("dirty"), Some(true))
    );
    assert_eq!(d.as_object().map(|o| o.len()), Some(3));
}
