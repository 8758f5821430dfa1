//! `choose_table` and `plan_table`: fixed cases and properties over random
//! media sizes, block sizes and alignments.
#![allow(clippy::unwrap_used, missing_docs)]

use mkfs_alloc_blockio::{BlockIo, MemDisk};
use mkfs_alloc_partition::{
    choose_table, plan_table, probe_signatures, wipe_for_table, write_table, FsKind,
    PartitionError, TableChoice, TableIds, TableKind, TableOptions, TablePlan, MAX_ALIGN,
    MIN_PARTITION_BYTES,
};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const TIB: u64 = 1 << 40;

fn opts(kind: TableKind, align: u64) -> TableOptions {
    TableOptions {
        align,
        ..TableOptions::new(kind, FsKind::Exfat)
    }
}

#[test]
fn choose_table_auto_and_fixed() {
    use TableKind::*;
    let auto = |bytes, whole| choose_table(TableChoice::Auto, bytes, whole).0;
    assert_eq!(auto(64 * MIB, false), None);
    assert_eq!(auto(4 * TIB, false), None);
    assert_eq!(auto(64 * MIB, true), Mbr);
    assert_eq!(auto(2 * TIB - 512, true), Mbr);
    assert_eq!(auto(2 * TIB, true), Gpt);
    assert_eq!(auto(8 * TIB, true), Gpt);
    for kind in [None, Mbr, Gpt] {
        let (k, why) = choose_table(TableChoice::Fixed(kind), 8 * TIB, false);
        assert_eq!(k, kind);
        assert!(!why.is_empty());
    }
}

#[test]
fn usual_layouts() {
    let p = plan_table(&opts(TableKind::Mbr, MIB), 64 * MIB, 512).unwrap();
    assert_eq!(
        (p.partition_start_lba(), p.partition_blocks()),
        (2048, 129_024)
    );
    assert_eq!(p.mbr().unwrap().partition_type(), 0x07);
    let p = plan_table(
        &TableOptions::new(TableKind::Mbr, FsKind::Fat32),
        64 * MIB,
        4096,
    )
    .unwrap();
    assert_eq!(
        (p.partition_start_lba(), p.partition_blocks()),
        (256, 16_128)
    );
    assert_eq!(p.mbr().unwrap().partition_type(), 0x0C);
    // GPT, 512: entries in LBAs 2..=33, backup entries 34 LBAs from the end.
    let p = plan_table(&opts(TableKind::Gpt, MIB), 64 * MIB, 512).unwrap();
    let g = p.gpt().unwrap();
    assert_eq!((g.first_usable_lba(), g.last_usable_lba()), (34, 131_038));
    assert_eq!(
        (p.partition_start_lba(), p.partition_blocks()),
        (2048, 128_991)
    );
    // GPT, 4096: 4 LBAs of entries.
    let p = plan_table(&opts(TableKind::Gpt, MIB), 64 * MIB, 4096).unwrap();
    let g = p.gpt().unwrap();
    assert_eq!((g.first_usable_lba(), g.last_usable_lba()), (6, 16_378));
    assert_eq!(
        (p.partition_start_lba(), p.partition_blocks()),
        (256, 16_123)
    );
}

#[test]
fn plan_serializes_for_the_cli() {
    let p = plan_table(
        &TableOptions {
            name: "LABEL".into(),
            ids: TableIds::Seeded(5),
            ..TableOptions::new(TableKind::Gpt, FsKind::Exfat)
        },
        64 * MIB,
        512,
    )
    .unwrap();
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["kind"], "gpt");
    assert_eq!(v["partition_start"], MIB);
    assert_eq!(
        v["partition_type_guid"],
        "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7"
    );
    assert_eq!(v["partition_name"], "LABEL");
    assert_eq!(v["mbr_type"], serde_json::Value::Null);
    let guid = v["disk_guid"].as_str().unwrap();
    assert_eq!(guid.len(), 36);
    assert_eq!(guid, p.gpt().unwrap().disk_guid().to_string());
}

#[test]
fn errors_name_the_value_and_the_range() {
    let e = plan_table(&opts(TableKind::Gpt, 4096), 64 * MIB, 512).unwrap_err();
    assert!(matches!(e, PartitionError::InvalidAlignment { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("4096") && msg.contains("1048576") && msg.contains("power of two"),
        "{msg}"
    );

    let e = plan_table(&opts(TableKind::Mbr, 3 * MIB), 64 * MIB, 512).unwrap_err();
    assert!(matches!(e, PartitionError::InvalidAlignment { .. }), "{e}");
    let e = plan_table(&opts(TableKind::Mbr, 512), 64 * MIB, 4096).unwrap_err();
    assert!(e.to_string().contains("from 4096 to"), "{e}");
    // One largest alignment for both planners: the layout's 64 MiB.
    assert_eq!(MAX_ALIGN, mkfs_alloc_ondisk::MAX_ALIGN);
    assert_eq!(MAX_ALIGN, 64 * MIB);
    plan_table(&opts(TableKind::Mbr, 64 * MIB), TIB, 512).unwrap();
    let e = plan_table(&opts(TableKind::Gpt, 128 * MIB), TIB, 512).unwrap_err();
    assert!(
        matches!(e, PartitionError::InvalidAlignment { max, .. } if max == 64 * MIB),
        "{e}"
    );

    let e = plan_table(&opts(TableKind::Mbr, MIB), 2 * TIB + 512, 512).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, PartitionError::MbrTooLarge { .. }));
    assert!(
        msg.contains("2199023255552") && msg.contains("GPT"),
        "{msg}"
    );
    // 4096-byte sectors: up to 16 TiB.
    plan_table(&opts(TableKind::Mbr, MIB), 16 * TIB, 4096).unwrap();
    let e = plan_table(&opts(TableKind::Mbr, MIB), 16 * TIB + 4096, 4096).unwrap_err();
    assert!(e.to_string().contains("17592186044416"), "{e}");

    let e = plan_table(&opts(TableKind::Gpt, MIB), 2 * MIB, 512).unwrap_err();
    assert!(matches!(e, PartitionError::MediumTooSmall { .. }), "{e}");
    // The minimum it names works, one block less does not.
    let PartitionError::MediumTooSmall { min_bytes, .. } = e else {
        unreachable!()
    };
    plan_table(&opts(TableKind::Gpt, MIB), min_bytes, 512).unwrap();
    plan_table(&opts(TableKind::Gpt, MIB), min_bytes - 512, 512).unwrap_err();

    let e = plan_table(&opts(TableKind::Gpt, MIB), 64 * MIB, 1024).unwrap_err();
    assert!(e.to_string().contains("512 or 4096"), "{e}");

    let long = TableOptions {
        name: "x".repeat(37),
        ..opts(TableKind::Gpt, MIB)
    };
    let e = plan_table(&long, 64 * MIB, 512).unwrap_err();
    assert!(e.to_string().contains("at most 36"), "{e}");
}

#[test]
fn write_table_refuses_another_device() {
    let plan = plan_table(&opts(TableKind::Gpt, MIB), 8 * MIB, 512).unwrap();
    let mut d = MemDisk::new(512, 8 * MIB / 512 + 1).unwrap();
    let e = write_table(&plan, &mut d).unwrap_err();
    assert!(matches!(e, PartitionError::DeviceMismatch { .. }), "{e}");
    let mut d = MemDisk::new(4096, 8 * MIB / 4096).unwrap();
    assert!(write_table(&plan, &mut d).is_err());

    // The wipe checks the device too; a refused plan writes nothing. (A
    // plan cannot be edited: its fields are private, see the compile_fail
    // doctest of `TablePlan`.)
    let mut d = MemDisk::new(512, 8 * MIB / 512 + 1).unwrap();
    let e = wipe_for_table(&plan, &[], &mut d).unwrap_err();
    assert!(matches!(e, PartitionError::DeviceMismatch { .. }), "{e}");
    assert!(d.reads_as_zero(), "nothing was written");
}

/// Checks the invariants of a successful plan.
fn check_plan(p: &TablePlan, medium: u64, bs: u64, align: u64) {
    let blocks = medium / bs;
    assert_eq!(p.partition_start() % align, 0);
    assert_eq!(p.partition_start() % bs, 0);
    assert_eq!(p.partition_len() % bs, 0);
    assert!(p.partition_len() >= MIN_PARTITION_BYTES);
    let end = p.partition_start() + p.partition_len();
    match p.kind() {
        TableKind::Mbr => {
            assert!(p.partition_start() >= bs, "after LBA 0");
            assert_eq!(end, blocks * bs, "to the end of the medium");
            assert!(p.partition_start_lba() + p.partition_blocks() <= 1 << 32);
        }
        TableKind::Gpt => {
            let entry_blocks = 16384 / bs;
            let first = p.gpt().unwrap().first_usable_lba();
            let last = p.gpt().unwrap().last_usable_lba();
            assert_eq!(first, 2 + entry_blocks);
            assert_eq!(last, blocks - 2 - entry_blocks, "before the backup entries");
            assert!(p.partition_start_lba() >= first);
            assert_eq!(end, (last + 1) * bs, "up to the last usable LBA");
        }
        TableKind::None => unreachable!(),
    }
    assert!(end <= medium);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn plans_are_aligned_and_inside_the_medium(
        medium in (8 * MIB)..=(8 * TIB),
        bs in prop_oneof![Just(512u64), Just(4096u64)],
        align_shift in 12u32..=26,
        gpt in any::<bool>(),
    ) {
        let kind = if gpt { TableKind::Gpt } else { TableKind::Mbr };
        let align = 1u64 << align_shift;
        let bs32 = u32::try_from(bs).unwrap();
        match plan_table(&opts(kind, align), medium, bs32) {
            Ok(p) => {
                prop_assert!(align >= bs && (!gpt || align >= MIB));
                prop_assert!(gpt || medium / bs <= 1 << 32);
                check_plan(&p, medium, bs, align);
            }
            Err(PartitionError::InvalidAlignment { min, .. }) => {
                prop_assert!(align < min);
                prop_assert_eq!(min, if gpt { MIB } else { bs });
            }
            Err(PartitionError::MbrTooLarge { max_bytes, .. }) => {
                prop_assert!(!gpt);
                prop_assert_eq!(max_bytes, bs << 32);
                prop_assert!(medium / bs > 1 << 32);
            }
            Err(PartitionError::MediumTooSmall { min_bytes, .. }) => {
                prop_assert!(medium < min_bytes);
                prop_assert!(min_bytes <= 2 * align + 2 * MIB);
            }
            Err(e) => prop_assert!(false, "unexpected error: {}", e),
        }
    }

    #[test]
    fn any_input_gives_a_plan_or_a_clean_error(
        medium in any::<u64>(),
        bs in any::<u32>(),
        align in any::<u64>(),
        kind in prop_oneof![Just(TableKind::None), Just(TableKind::Mbr), Just(TableKind::Gpt)],
    ) {
        match plan_table(&opts(kind, align), medium, bs) {
            Ok(p) => {
                prop_assert!(p.partition_start() + p.partition_len() <= medium);
                // Without a table the file system's planner decides.
                prop_assert!(p.partition_len() >= MIN_PARTITION_BYTES || kind == TableKind::None);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Written GPTs read back with valid CRCs at the planned places.
    #[test]
    fn written_gpt_probes_clean(
        mib in 3u64..=12,
        extra_blocks in 0u64..8,
        bs in prop_oneof![Just(512u32), Just(4096u32)],
        seed in any::<u64>(),
    ) {
        let medium = mib * MIB + extra_blocks * u64::from(bs);
        let plan = plan_table(&TableOptions { ids: TableIds::Seeded(seed), ..opts(TableKind::Gpt, MIB) }, medium, bs)
            .unwrap();
        let mut d = MemDisk::new(bs, medium / u64::from(bs)).unwrap();
        write_table(&plan, &mut d).unwrap();
        let sigs = probe_signatures(&mut d).unwrap();
        let found: Vec<(u64, &str)> = sigs.iter().map(|s| (s.offset, s.kind.id())).collect();
        let bsz = u64::from(bs);
        prop_assert_eq!(found, vec![(0, "pmbr"), (bsz, "gpt"), (medium - bsz, "gpt-backup")]);
        for s in &sigs[1..] {
            prop_assert!(s.detail.contains("header CRC ok"), "{:?}", s);
            let guid = plan.gpt().unwrap().disk_guid().to_string();
            prop_assert!(s.detail.contains(&guid), "{:?}", s);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A size search asks the footprint, not a table plan, for each size:
    /// the two agree on every medium, including the ones refused, and the
    /// MBR type byte `holding` sets is the one `plan_table` gives.
    #[test]
    fn the_footprint_places_the_partition_as_plan_table_does(
        medium in 0u64..=(3 * TIB),
        bs in prop_oneof![Just(512u32), Just(4096u32)],
        align_shift in 12u32..=26,
        kind in prop_oneof![Just(TableKind::None), Just(TableKind::Mbr), Just(TableKind::Gpt)],
        fs in prop_oneof![
            Just(FsKind::Exfat),
            Just(FsKind::Fat32),
            Just(FsKind::Fat16),
            Just(FsKind::Fat12)
        ],
        esp in any::<bool>(),
    ) {
        let o = TableOptions {
            esp,
            ..opts(kind, (1u64 << align_shift).max(u64::from(bs)))
        };
        let fp = mkfs_alloc_partition::TableFootprint::of(&o, bs);
        let planned = plan_table(&o, medium, bs);
        match (fp, &planned) {
            (Ok(fp), Ok(p)) => {
                prop_assert_eq!(fp.partition_start(), p.partition_start());
                prop_assert_eq!(fp.partition_len(medium).ok(), Some(p.partition_len()));
                let direct = plan_table(&TableOptions { fs_type: fs, ..o.clone() }, medium, bs).unwrap();
                prop_assert_eq!(&p.clone().holding(fs), &direct);
            }
            (Ok(fp), Err(e)) => prop_assert_eq!(fp.partition_len(medium).err().map(|f| f.to_string()), Some(e.to_string())),
            (Err(f), Err(e)) => prop_assert_eq!(f.to_string(), e.to_string()),
            (Err(f), Ok(_)) => prop_assert!(false, "footprint refused what plan_table accepts: {f}"),
        }
    }
}
