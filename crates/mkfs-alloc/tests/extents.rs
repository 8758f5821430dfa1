//! The extent map is exactly what a format depends on: formatted over old
//! bytes, the medium keeps them outside the map and holds, inside it, what
//! a format onto zeros holds there. So a device written only in the map's
//! ranges from a fresh image (bmaptool, fastboot) reads as the image does.

use mkfs_alloc::blockio::MemDisk;
use mkfs_alloc::layout::{FsKind, Timestamp};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::populate::{TimePolicy, Tree};
use mkfs_alloc::{ExtentMap, Found, MediumOptions, Writing};
use std::time::{Duration, SystemTime};

const MIB: u64 = 1 << 20;
const OLD: u8 = 0xEE;

fn tree() -> Tree {
    let mut t = Tree::new();
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, len) in [0usize, 1, 4095, 4096, 70_000, 300_000]
        .into_iter()
        .enumerate()
    {
        // Data with a 128 KiB zero run (a hole on a fresh image).
        let mut data: Vec<u8> = (0..len).map(|j| (j * 31 + i) as u8 | 1).collect();
        if len > 200_000 {
            data[64 << 10..192 << 10].fill(0);
        }
        let path = format!("/dir{}/file{i}.bin", i % 2);
        t.add_file(&path, std::io::Cursor::new(data), len as u64, mtime)
            .expect("add");
    }
    t
}

/// Formats `disk` (with the tree when `populated`); returns the map.
fn format(opts: &MediumOptions, disk: &mut MemDisk, populated: bool) -> ExtentMap {
    let mut plan = opts.plan_for(&*disk).expect("plan");
    let found = Found::probe(disk).expect("probe");
    if populated {
        let mut p = plan
            .populate(tree(), TimePolicy::default())
            .expect("populate");
        p.format_with(disk, Writing::new().found(&found))
            .expect("write");
        p.extents(&found)
    } else {
        plan.format_with(disk, Writing::new().found(&found))
            .expect("write");
        plan.extents(&found)
    }
}

#[test]
fn the_map_holds_every_byte_the_format_depends_on() {
    let cases = [
        (FsKind::Exfat, TableKind::Gpt, 64),
        (FsKind::Exfat, TableKind::None, 64),
        (FsKind::Fat32, TableKind::Mbr, 64),
        (FsKind::Fat16, TableKind::Mbr, 32),
        (FsKind::Fat12, TableKind::None, 8),
    ];
    for (fs, table, mib) in cases {
        for populated in [false, true] {
            let opts = MediumOptions::new().fs(fs).table(table).pinned(
                0x1234_ABCD,
                Timestamp {
                    secs: 1_700_000_000,
                    nanos: 0,
                },
            );
            let blocks = mib * MIB / 512;
            let mut fresh = MemDisk::new(512, blocks).expect("disk");
            let map = format(&opts, &mut fresh, populated);
            let mut old = MemDisk::filled(512, blocks, OLD).expect("disk");
            let map_old = format(&opts, &mut old, populated);
            assert_eq!(
                map, map_old,
                "{fs:?} {table:?}: the map depends on the plan alone"
            );
            let (a, b) = (fresh.as_bytes(), old.as_bytes());
            let what = format!(
                "{fs:?} {table:?} populated {populated}, map {:?}",
                map.ranges()
            );
            let mut at = 0usize;
            for r in map.ranges() {
                let (s, e) = (r.start as usize, r.end as usize);
                assert!(
                    b[at..s].iter().all(|&x| x == OLD),
                    "{what}: written before {s}"
                );
                assert!(
                    a[s..e] == b[s..e],
                    "{what}: {s}..{e} differs from the fresh format"
                );
                at = e;
            }
            assert!(
                b[at..].iter().all(|&x| x == OLD),
                "{what}: written after {at}"
            );
            // A handful of ranges, a small part of the medium.
            assert!(map.ranges().len() <= 8, "{:?}", map.ranges());
            assert!(
                map.mapped_bytes() < map.medium_bytes() / 2,
                "{fs:?}: {}",
                map.mapped_bytes()
            );
        }
    }
}
