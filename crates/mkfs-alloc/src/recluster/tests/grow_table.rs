//! Grow (`resize`) of an exFAT volume inside an MBR or GPT partition on a
//! medium extended after it: the entry grows first (GPT: the backup moved
//! to the new end), then the volume; refusals leave the medium unchanged;
//! power-cut sweeps in which every surviving state has a valid table whose
//! partition holds the volume and every file, and the rerun finishes to the
//! bytes of an uncut run.

use super::*;
use mkfs_alloc_inspect::partition::parse_gpt_header;
use mkfs_alloc_inspect::{read_partition_table, PartitionTable, TableKind as Tk};
use mkfs_alloc_partition::{PartitionGrow, TableKind};

/// 8 MiB at 32 KiB clusters in one partition of `table`, then 8 MiB of
/// free space after the medium's old end; its tree.
fn partitioned(table: TableKind) -> (MemDisk, Vec<(String, usize)>) {
    let shape = Shape {
        size: 8 << 20,
        cluster: 32 << 10,
        sector: 512,
        mbr: false,
        dirs: 6,
        align: 0,
    };
    let disk = tabled(shape, table);
    let mut v = disk.as_bytes().to_vec();
    v.resize(v.len() + (8 << 20), 0);
    (MemDisk::from_vec(512, v).unwrap(), shape.files())
}

/// [`shaped`] with a table of `table`.
pub(super) fn tabled(shape: Shape, table: TableKind) -> MemDisk {
    use crate::populate::{TimePolicy as Tp, Tree as T};
    use crate::MediumOptions;
    let opts = MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(shape.cluster)
        .pinned(
            7,
            mkfs_alloc_layout::Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        )
        .table(table);
    let mut disk = MemDisk::new(512, shape.size / 512).unwrap();
    let mut tree = T::new();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (path, len) in shape.files() {
        let data = std::io::Cursor::new(content(&path, len));
        tree.add_file(&path, data, len as u64, t).unwrap();
    }
    let plan = opts.plan_for(&disk).unwrap();
    plan.populate(tree, Tp::default())
        .unwrap()
        .format(&mut disk)
        .unwrap();
    disk
}

/// The table of `d`, checked: one valid GPT header with its array (both
/// CRCs) or an MBR, listing the partition; its size in bytes.
pub(super) fn table_of(d: &MemDisk) -> Result<(PartitionTable, u64), String> {
    let t = read_partition_table(&mut d.clone()).map_err(|e| e.to_string())?;
    let p = t.partitions.first().ok_or("no partition listed")?;
    let size = p.size;
    Ok((t, size))
}

/// After a finished grow or shrink: no warning, and for a GPT both headers valid at
/// LBA 1 and the last LBA, naming each other, the usable space ending
/// before the backup's array.
pub(super) fn check_clean_table(d: &MemDisk) -> Result<(), String> {
    let (t, _) = table_of(d)?;
    if !t.warnings.is_empty() {
        return Err(format!("table warnings: {:?}", t.warnings));
    }
    if t.kind == Tk::Gpt {
        let last = d.num_blocks() - 1;
        let p = parse_gpt_header(&read(d, 512, 512), 1).map_err(|e| e.to_string())?;
        let b = parse_gpt_header(&read(d, last * 512, 512), last).map_err(|e| e.to_string())?;
        if p.alternate_lba != last || b.alternate_lba != 1 || p.usable != b.usable {
            return Err(format!("headers disagree: {p:?} {b:?}"));
        }
        if p.usable.1 != last - 33 || b.entries_lba != last - 32 {
            return Err(format!("backup not at the end: {b:?}"));
        }
    }
    // A second read of the table finds nothing left to write.
    let part = PartitionGrow::read(&mut d.clone(), 1).map_err(|e| e.to_string())?;
    if part.changes() {
        return Err(format!("the table still changes: {part:?}"));
    }
    Ok(())
}

fn a_grow_in(table: TableKind) {
    let (disk, want) = partitioned(table);
    let (_, old_part) = table_of(&disk).unwrap();
    let mut d = disk.clone();
    let job = resize(&mut d, NewSize::Max).unwrap();
    let g = job.grow.unwrap();
    let t = g.table.as_ref().unwrap();
    assert_eq!(t.old_bytes(), old_part);
    assert_eq!(t.start_bytes(), 1 << 20);
    // Up to the medium's end, aligned to 1 MiB (a GPT's backup after it).
    assert_eq!(
        t.new_bytes(),
        (15 << 20) - u64::from(table == TableKind::Gpt) * (1 << 20)
    );
    assert_eq!(g.new_bytes, t.new_bytes());
    let m = check_tree(&d, &want).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert_eq!(m.geometry.fs_bytes, t.new_bytes());
    let (_, part) = table_of(&d).unwrap();
    assert_eq!(part, t.new_bytes());
    check_clean_table(&d).unwrap();
    assert_eq!(
        plan_resize(&mut d, NewSize::Max).unwrap().step,
        Step::Nothing
    );
}

#[test]
fn a_grow_inside_an_mbr_partition_grows_its_entry_and_keeps_every_file() {
    a_grow_in(TableKind::Mbr);
}

#[test]
fn a_grow_inside_a_gpt_partition_moves_the_backup_to_the_new_end() {
    a_grow_in(TableKind::Gpt);
}

#[test]
fn a_grow_stops_at_the_next_partition_and_refusals_write_nothing() {
    let (mut d, want) = partitioned(TableKind::Mbr);
    // A second (non-FAT) partition at 12 MiB.
    let mut lba0 = read(&d, 0, 512);
    let e = 0x1BE + 16;
    lba0[e + 4] = 0x83;
    lba0[e + 8..e + 12].copy_from_slice(&((12u32 << 20) / 512).to_le_bytes());
    lba0[e + 12..e + 16].copy_from_slice(&((2u32 << 20) / 512).to_le_bytes());
    patch(&mut d, 0, &lba0);
    let before = d.as_bytes().to_vec();
    match resize(&mut d, NewSize::Bytes(12 << 20)) {
        Err(ReclusterError::Refused(Refusal::Resize(r))) => {
            assert!(matches!(r, ResizeRefusal::PastMedium { .. }), "{r}")
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(matches!(
        plan_resize_in(&mut d, NewSize::Max, Some(2)),
        Err(ReclusterError::NoVolume(_))
    ));
    assert!(d.as_bytes() == &before[..]);
    let job = resize(&mut d, NewSize::Max).unwrap();
    assert_eq!(job.grow.unwrap().new_bytes, 11 << 20);
    let m = check_tree(&d, &want).unwrap();
    assert_eq!(m.geometry.fs_bytes, 11 << 20);
    // The second entry is as it was.
    assert_eq!(read(&d, 0x1BE + 16, 16), before[0x1BE + 16..0x1BE + 32]);
}

/// A sweep of the grow of `table`'s image to the medium's end.
fn sweep_in(table: TableKind, seeds: u64) -> mkfs_alloc_blockio::powercut::sweep::SweepReport {
    let (disk, want) = partitioned(table);
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Max).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(&disk, job, |t| {
            let (_, part) = table_of(t.medium)?;
            // The partition crate reads it too (a GPT's backup when the
            // primary fails its CRC).
            PartitionGrow::read(&mut t.medium.clone(), 1).map_err(|e| e.to_string())?;
            let m = check_tree(t.medium, &want)?;
            if m.geometry.fs_bytes > part {
                return Err(format!("a volume of {} in {part}", m.geometry.fs_bytes));
            }
            if t.stage == Stage::AfterRerun {
                check_clean_table(t.medium)?;
                if !m.findings.is_empty() || m.geometry.fs_bytes != part {
                    return Err(format!("{} bytes, {:?}", m.geometry.fs_bytes, m.findings));
                }
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            }
            Ok(true)
        })
        .unwrap()
}

#[test]
fn power_cuts_in_a_grow_inside_an_mbr_partition_leave_every_file_intact() {
    let report = sweep_in(TableKind::Mbr, 8);
    eprintln!("grow sweep, MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

#[test]
fn power_cuts_in_a_grow_inside_a_gpt_partition_leave_every_file_intact() {
    let report = sweep_in(TableKind::Gpt, 8);
    eprintln!("grow sweep, GPT: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

#[test]
fn a_grow_cut_after_its_table_is_named_unfinished_and_finished_by_a_rerun() {
    use mkfs_alloc_blockio::PowerCutIo;
    let (disk, want) = partitioned(TableKind::Gpt);
    // Past the table's writes and the volume's intent record.
    let mut cut = PowerCutIo::new(disk, 12, 1);
    assert!(resize(&mut cut, NewSize::Max).is_err());
    let mut d = cut.into_surviving().unwrap();
    let (_, part) = table_of(&d).unwrap();
    let m = check_tree(&d, &want).unwrap();
    assert!(part > m.geometry.fs_bytes, "the table is grown first");
    let heap = m.geometry.data_offset;
    assert!(unfinished_resize(&mut d, 1 << 20, heap, 512).unwrap());
    assert_eq!(plan_resize(&mut d, NewSize::Max).unwrap().step, Step::Redo);
    resize(&mut d, NewSize::Max).unwrap();
    check_clean_table(&d).unwrap();
    assert_eq!(check_tree(&d, &want).unwrap().geometry.fs_bytes, part);
    assert!(!unfinished_resize(&mut d, 1 << 20, heap, 512).unwrap());
}

#[test]
fn a_fat32_volume_inside_a_gpt_partition_grows_with_it_within_its_fats_slack() {
    let (disk, want) = super::fat::fat32(80 << 20, 1024, 2, Some(TableKind::Gpt));
    let mut v = disk.as_bytes().to_vec();
    v.resize(v.len() + (64 << 20), 0);
    let mut d = MemDisk::from_vec(512, v).unwrap();
    let before = d.as_bytes().to_vec();
    let most = match plan_resize(&mut d, NewSize::Max) {
        Err(ReclusterError::Refused(Refusal::Resize(ResizeRefusal::FatFull { most, .. }))) => most,
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    assert!(d.as_bytes() == &before[..]);
    let job = resize(&mut d, NewSize::Bytes(most)).unwrap();
    let g = job.grow.unwrap();
    let t = g.table.unwrap();
    assert!(t.moves_backup());
    assert!(
        t.new_bytes() >= most && t.new_bytes() - most < 1 << 20,
        "{t:?}"
    );
    let m = super::fat::check_fat(&d, &want).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert_eq!(m.geometry.fs_bytes, most);
    assert_eq!(table_of(&d).unwrap().1, t.new_bytes());
    check_clean_table(&d).unwrap();
}
