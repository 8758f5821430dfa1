//! The facade's guarantees to embedders: every check before the first
//! write, fresh identifiers unless pinned, pinned output reproducible.

use mkfs_alloc::blockio::BlockIo;
use mkfs_alloc::blockio::{Counting, MemDisk};
use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsKind, Geometry, Timestamp};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::{FormatError, Found, MediumOptions, MediumPlan, Writing};

const MIB: u64 = 1 << 20;

fn exfat(table: TableKind, sector_size: u32) -> MediumOptions {
    MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster(ClusterChoice::Bytes(32 * 1024))
        .table(table)
        .sector_size(sector_size)
        .expect("a valid sector size")
}

/// Plans for `dev` and formats it.
fn format<D: BlockIo>(opts: &MediumOptions, dev: &mut D) -> Result<MediumPlan, FormatError> {
    let mut plan = opts.plan_for(dev)?;
    plan.format(dev)?;
    Ok(plan)
}

/// A 64 MiB target of 4096-byte blocks that already holds exFAT.
fn old_exfat_on_4k() -> MemDisk {
    let mut disk = MemDisk::new(4096, 64 * MIB / 4096).expect("disk");
    format(&exfat(TableKind::None, 4096), &mut disk).expect("first format");
    assert_eq!(&disk.as_bytes()[3..11], b"EXFAT   ");
    disk
}

#[test]
fn a_sector_size_below_the_block_size_is_refused_before_any_write() {
    let mut disk = old_exfat_on_4k();
    let before = disk.as_bytes().to_vec();
    let opts = exfat(TableKind::Mbr, 512);

    // Planning refuses it.
    let e = opts
        .plan(64 * MIB, 4096)
        .expect_err("512-byte sectors on 4096-byte blocks");
    assert!(e.is_invalid_input(), "{e}");
    assert!(e.to_string().contains("4096"), "{e}");

    // So does the one-call path, without writing a byte.
    let mut counted = Counting::new(&mut disk, false);
    let e = format(&opts, &mut counted).expect_err("refused");
    assert!(e.is_invalid_input(), "{e}");
    assert_eq!(counted.stats().writes, 0, "nothing written");
    drop(counted);
    assert!(
        disk.as_bytes() == before.as_slice(),
        "target byte-identical"
    );
}

#[test]
fn a_plan_for_another_target_is_refused_before_any_write() {
    // Planned for 512-byte blocks, written to a 4096-byte-block target.
    let mut disk = old_exfat_on_4k();
    let before = disk.as_bytes().to_vec();
    let mut plan = exfat(TableKind::Mbr, 512)
        .plan(64 * MIB, 512)
        .expect("valid for 512");
    let found = Found::probe(&mut disk).expect("probe");
    let e = plan
        .format_with(&mut disk, Writing::new().found(&found))
        .expect_err("other target");
    assert!(e.is_invalid_input(), "{e}");
    assert!(
        disk.as_bytes() == before.as_slice(),
        "target byte-identical"
    );

    // A probe result of another target does not stand for this one.
    let mut other = MemDisk::new(4096, 32 * MIB / 4096).expect("disk");
    let other_found = Found::probe(&mut other).expect("probe");
    let mut plan = exfat(TableKind::Mbr, 4096)
        .plan(64 * MIB, 4096)
        .expect("valid");
    let e = plan
        .format_with(&mut disk, Writing::new().found(&other_found))
        .expect_err("other probe");
    assert!(matches!(e, FormatError::NotPlannedTarget { .. }), "{e}");
    assert!(
        disk.as_bytes() == before.as_slice(),
        "target byte-identical"
    );
}

/// (serial, MBR disk signature or GPT disk GUID, GPT partition GUID) of a
/// default format of a 64 MiB image.
fn identity(table: TableKind, opts: &FormatOptions) -> (u32, Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut disk = MemDisk::new(512, 64 * MIB / 512).expect("disk");
    let o = exfat(table, 512).format(opts.clone().fs(FsChoice::Fixed(FsKind::Exfat)));
    let plan = format(&o, &mut disk).expect("format");
    let b = disk.as_bytes();
    let (disk_id, part_id) = match table {
        // GPT header at LBA 1: disk GUID at 56; first entry at LBA 2: unique GUID at 16.
        TableKind::Gpt => (
            b[512 + 56..512 + 72].to_vec(),
            b[1024 + 16..1024 + 32].to_vec(),
        ),
        _ => (b[440..444].to_vec(), Vec::new()),
    };
    (plan.layout().serial(), disk_id, part_id, b.to_vec())
}

#[test]
fn default_formats_get_fresh_identifiers() {
    let d = FormatOptions::default();
    let (s1, disk1, part1, _) = identity(TableKind::Gpt, &d);
    let (s2, disk2, part2, _) = identity(TableKind::Gpt, &d);
    assert_ne!(s1, s2, "serial");
    assert_ne!(disk1, disk2, "GPT disk GUID");
    assert_ne!(part1, part2, "GPT partition GUID");
    let (_, sig1, _, _) = identity(TableKind::Mbr, &d);
    let (_, sig2, _, _) = identity(TableKind::Mbr, &d);
    assert_ne!(sig1, sig2, "MBR disk signature");
}

#[test]
fn pinned_formats_are_byte_identical() {
    let t = Timestamp {
        secs: 1_700_000_000,
        nanos: 0,
    };
    let pinned = FormatOptions::default().pinned(0x1234_ABCD, t);
    for table in [TableKind::None, TableKind::Mbr, TableKind::Gpt] {
        let (s1, _, _, a) = identity(table, &pinned);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let (s2, _, _, b) = identity(table, &pinned);
        assert_eq!(s1, 0x1234_ABCD);
        assert_eq!(s2, 0x1234_ABCD);
        assert!(a == b, "{table:?}: pinned formats differ");
    }
}

#[test]
fn the_data_cluster_choice_is_an_option_not_a_patch() {
    let opts = exfat(TableKind::None, 512).cluster(ClusterChoice::FromData(64 * 1024));
    let plan = opts.plan(64 * MIB, 512).expect("valid");
    assert_eq!(plan.layout().cluster_size().bytes(), 64 * 1024);
    assert_eq!(
        plan.layout().cluster_rule(),
        mkfs_alloc::layout::ClusterRule::FromData
    );
}

/// Without pinning, the GUIDs are fresh random values, not derived from the
/// 32-bit serial: two formats with the same serial get different ones.
#[test]
fn a_given_serial_does_not_pin_the_guids() {
    let same_serial = FormatOptions::new().serial(0x1234_ABCD).volume_guid(true);
    let (s1, disk1, part1, _) = identity(TableKind::Gpt, &same_serial);
    let (s2, disk2, part2, _) = identity(TableKind::Gpt, &same_serial);
    assert_eq!((s1, s2), (0x1234_ABCD, 0x1234_ABCD));
    assert_ne!(disk1, disk2, "GPT disk GUID");
    assert_ne!(part1, part2, "GPT partition GUID");
    // The exFAT volume GUID entry (0xA0) in the root directory differs too.
    let guid = || {
        let mut disk = MemDisk::new(512, 64 * MIB / 512).expect("disk");
        let mut plan = exfat(TableKind::None, 512)
            .format(same_serial.clone().fs(FsKind::Exfat))
            .plan_for(&disk)
            .expect("plan");
        plan.format(&mut disk).expect("format");
        let l = plan.layout();
        let Geometry::Exfat(g) = l.geometry() else {
            panic!("exFAT")
        };
        let root = l.cluster_offset(g.root_cluster()) as usize;
        let dir = &disk.as_bytes()[root..root + 32 * 8];
        let at = dir
            .chunks(32)
            .position(|e| e[0] == 0xA0)
            .expect("a volume GUID entry");
        dir[at * 32 + 6..at * 32 + 22].to_vec()
    };
    assert_ne!(guid(), guid(), "exFAT volume GUID");
}

#[test]
fn setters_check_what_they_can_and_never_panic() {
    assert!(MediumOptions::new().sector_size(1000).is_err());
    assert!(MediumOptions::new().sector_size(4096).is_ok());
    assert!(MediumOptions::new().root_entries(0).is_err());
    assert!(MediumOptions::new().root_entries(40_000).is_err());
    assert!(MediumOptions::new().root_entries(224).is_ok());
    // The rest is planning's: a cluster size that is no power of two.
    let e = MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(3000)
        .plan(64 * MIB, 512)
        .expect_err("3000 bytes");
    assert!(e.is_invalid_input(), "{e}");
}

/// A tree goes only into the volume it was planned for: the plan holds it
/// and formats it with its own layout.
#[test]
fn a_populated_plan_formats_the_volume_it_was_planned_for() {
    use mkfs_alloc::populate::{TimePolicy, Tree};
    let mut tree = Tree::new();
    tree.add_file("/a.txt", &b"abc"[..], 3, std::time::SystemTime::UNIX_EPOCH)
        .expect("add");
    let mut disk = MemDisk::new(512, 64 * MIB / 512).expect("disk");
    let plan = exfat(TableKind::Mbr, 512).plan_for(&disk).expect("plan");
    let layout = plan.layout().clone();
    let mut populated = plan
        .populate(tree, TimePolicy::default())
        .expect("the tree fits");
    assert_eq!(populated.layout(), &layout);
    assert_eq!(populated.content().expect("a tree").layout(), &layout);
    populated.format(&mut disk).expect("format");
    let start = populated.table().partition_start() as usize;
    assert_eq!(&disk.as_bytes()[start + 3..start + 11], b"EXFAT   ");
}

#[test]
fn a_tree_chooses_its_cluster_size_and_the_smallest_medium() {
    use mkfs_alloc::layout::ClusterRule;
    use mkfs_alloc::populate::{scan_result, TimePolicy, Tree};
    let tree = || {
        let mut t = Tree::new();
        for i in 0..40u64 {
            let len = 5000 * (i + 1);
            let data = std::io::Read::take(std::io::repeat(0x5A), len);
            let path = format!("/d{}/f{i}", i % 4);
            t.add_file(&path, data, len, std::time::SystemTime::UNIX_EPOCH)
                .expect("add");
        }
        t
    };
    let data = scan_result(&tree());
    let opts = MediumOptions::new().fs(FsKind::Exfat);
    let size = opts.size_for(&data, 512, 0.0).expect("a size holds it");
    assert_eq!(size % MIB, 0);
    let fits = |bytes: u64| {
        opts.plan(bytes, 512)
            .and_then(|p| p.fit_cluster(&data))
            .and_then(|p| p.populate(tree(), TimePolicy::default()))
    };
    let plan = fits(size).expect("the tree fits the size found");
    assert_eq!(plan.layout().cluster_rule(), ClusterRule::FromData);
    // Chosen once: the fitted plan's cluster size is no longer open.
    assert!(plan.recommend_cluster(&data).is_none());
    assert!(fits(size - MIB).is_err(), "{size} is not the smallest");
    // A cluster size the options fix is kept.
    let fixed = opts
        .clone()
        .cluster_size(64 << 10)
        .plan(size, 512)
        .expect("plan");
    assert!(fixed.recommend_cluster(&data).is_none());
    assert_eq!(
        fixed
            .fit_cluster(&data)
            .expect("kept")
            .layout()
            .cluster_size()
            .bytes(),
        64 << 10
    );
}
