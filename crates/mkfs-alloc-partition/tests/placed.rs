//! `plan_mbr_at`: an MBR partition placed by the caller (the SD layout),
//! with its own type byte and CHS geometry, written to memory and its entry
//! read back byte by byte. (`tests/tests/sd_layout/` reads the SD layout's
//! tables with `sfdisk -d`.)

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_partition::{
    plan_mbr_at, write_table, FsKind, MbrPlacement, PartitionError, TableKind, TableOptions,
};

const MIB: u64 = 1 << 20;

fn at(start_lba: u64) -> MbrPlacement {
    MbrPlacement {
        start_lba,
        partition_type: 0x06,
        heads: 8,
        sectors_per_track: 32,
    }
}

#[test]
fn a_placed_partition_keeps_its_start_type_and_geometry() {
    let opts = TableOptions::new(TableKind::Mbr, FsKind::Fat16);
    let plan = plan_mbr_at(&opts, at(63), 64 * MIB, 512).expect("placed");
    assert_eq!(plan.partition_start_lba(), 63);
    assert_eq!(plan.partition_blocks(), 64 * MIB / 512 - 63);
    let mbr = plan.mbr().expect("an MBR plan");
    assert_eq!(mbr.partition_type(), 0x06);
    assert_eq!(mbr.chs_geometry(), (8, 32));
    // The entry as written: type, LBA, and CHS in the 8 x 32 geometry.
    let mut disk = MemDisk::new(512, 64 * MIB / 512).expect("disk");
    write_table(&plan, &mut disk).expect("write");
    let e = &disk.as_bytes()[446..462];
    assert_eq!(e[4], 0x06);
    assert_eq!(u32::from_le_bytes([e[8], e[9], e[10], e[11]]), 63);
    // LBA 63 = cylinder 0, head 1, sector 32 (63 = 1 x 32 + 31).
    assert_eq!(&e[1..4], &[1, 32, 0]);
    // The last LBA (131071) = cylinder 511, head 7, sector 32.
    assert_eq!(
        &e[5..8],
        &[7, 32 | ((511 >> 8) << 6) as u8, (511 & 0xFF) as u8]
    );
    // Smaller than the 1 MiB a partition placed by alignment needs.
    plan_mbr_at(&opts, at(29), 64 * 1024, 512).expect("a 64 KiB card");
}

#[test]
fn what_a_placement_cannot_be() {
    let mbr = TableOptions::new(TableKind::Mbr, FsKind::Fat16);
    let gpt = TableOptions::new(TableKind::Gpt, FsKind::Fat16);
    let invalid =
        |r: Result<_, PartitionError>| matches!(r, Err(PartitionError::InvalidPlan { .. }));
    assert!(invalid(plan_mbr_at(&gpt, at(63), 64 * MIB, 512)));
    assert!(invalid(plan_mbr_at(&mbr, at(0), 64 * MIB, 512)));
    assert!(invalid(plan_mbr_at(
        &mbr,
        at(64 * MIB / 512),
        64 * MIB,
        512
    )));
    let bad_chs = MbrPlacement { heads: 0, ..at(63) };
    assert!(invalid(plan_mbr_at(&mbr, bad_chs, 64 * MIB, 512)));
    let bad_chs = MbrPlacement {
        sectors_per_track: 64,
        ..at(63)
    };
    assert!(invalid(plan_mbr_at(&mbr, bad_chs, 64 * MIB, 512)));
}
