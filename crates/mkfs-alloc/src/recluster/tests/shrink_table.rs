//! Shrink (`resize` to a smaller size) of exFAT and FAT32 volumes inside an
//! MBR or GPT partition: the volume shrinks first, to its switch and
//! finish, then the entry, to the 1 MiB boundary after the volume's new
//! end (GPT: the backup, which stays at the medium's end, then the
//! primary). A run cut between the two is finished by the same command
//! ([`Step::Table`]); power-cut sweeps in which every surviving state has
//! a valid table whose partition holds the volume and every file, and the
//! rerun leaves the entry shrunk and every byte outside the partition but
//! the table's as it was.

use super::grow_table::{check_clean_table, table_of, tabled};
use super::shrink::{shrunk, spread};
use super::shrink_fat::{check_shrunk, spread_volume_in};
use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;
use mkfs_alloc_blockio::Slice;
use mkfs_alloc_partition::{PartitionGrow, TableKind};

const MIB: u64 = 1 << 20;
/// The exFAT volume's new size: not on a MiB, so the entry's end is
/// rounded up past it (partition start 1 MiB + 3 MiB + 64 KiB -> 5 MiB).
const EXFAT_NEW: u64 = 3 * MIB + (64 << 10);
/// The FAT32 volume's new size (still FAT32: 65,525 clusters and more).
const FAT32_NEW: u64 = 36 * MIB + (32 << 10);

/// 8 MiB of medium at 4 KiB clusters in one partition of `table`, its
/// files spread over the whole heap (data past the new end).
fn exfat_in(table: TableKind) -> (MemDisk, Vec<(String, usize)>) {
    let shape = Shape {
        size: 8 * MIB,
        cluster: 4096,
        sector: 512,
        mbr: false,
        dirs: 20,
        align: 0,
    };
    let mut disk = tabled(shape, table);
    let want = shape.files();
    spread(&mut disk, &want);
    (disk, want)
}

/// The entry's size in bytes for a volume of `bytes` at 1 MiB.
fn entry_for(bytes: u64) -> u64 {
    (MIB + bytes).next_multiple_of(MIB) - MIB
}

/// The bytes of `d` that are neither the table's (LBA 0..=33 and the last
/// 33 LBAs, which a GPT's backup holds) nor the old partition's
/// (`start`, `len`).
fn outside(d: &MemDisk, (start, len): (u64, u64)) -> Vec<u8> {
    let b = d.as_bytes();
    let (s, e) = (
        usize::try_from(start).unwrap(),
        usize::try_from(start + len).unwrap(),
    );
    let mut v = b[34 * 512..s].to_vec();
    v.extend_from_slice(&b[e..(b.len() - 33 * 512).max(e)]);
    v
}

/// Checks a finished shrink of `old` to `new` bytes of volume: the entry
/// `entry_for(new)`, the table clean, nothing outside the old partition
/// changed but the table, and a second plan finding nothing to do.
fn check_done(d: &MemDisk, old: &MemDisk, new: u64) -> Result<(), String> {
    let (_, part) = table_of(d)?;
    if part != entry_for(new) {
        return Err(format!("a partition of {part} for a volume of {new}"));
    }
    check_clean_table(d)?;
    let p = table_of(old)?.0.partitions[0].clone();
    if outside(d, (p.start, p.size)) != outside(old, (p.start, p.size)) {
        return Err("bytes outside the partition changed".into());
    }
    let step = plan_resize(&mut d.clone(), NewSize::Bytes(new)).map(|j| j.step);
    if !matches!(step, Ok(Step::Nothing)) {
        return Err(format!("a second plan: {step:?}"));
    }
    Ok(())
}

/// A volume's check in a sweep: every file (and at `Some(size)` that size
/// and no finding); its size in bytes.
type VolumeCheck<'a> = dyn Fn(&MemDisk, Option<u64>) -> Result<u64, String> + 'a;

/// A sweep of the shrink of `disk` to `new` bytes, `check` the volume's
/// own check (every file; at `Some(new)`, also its size and no finding).
fn sweep(disk: &MemDisk, new: u64, seeds: u64, check: &VolumeCheck<'_>) -> SweepReport {
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Bytes(new)).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let (_, part) = table_of(t.medium)?;
            // The partition crate reads it too (a GPT's backup when the
            // primary fails its CRC).
            PartitionGrow::read(&mut t.medium.clone(), 1).map_err(|e| e.to_string())?;
            let after = t.stage == Stage::AfterRerun;
            let bytes = check(t.medium, after.then_some(new))?;
            if bytes > part {
                return Err(format!("a volume of {bytes} in {part}"));
            }
            if after {
                check_done(t.medium, disk, new)?;
            }
            Ok(true)
        })
        .unwrap()
}

/// [`sweep`] of [`exfat_in`].
fn exfat_sweep(table: TableKind, seeds: u64) -> SweepReport {
    let (disk, want) = exfat_in(table);
    let check = |d: &MemDisk, new: Option<u64>| {
        let m = match new {
            Some(n) => shrunk(d, &want, n)?,
            None => check_tree(d, &want)?,
        };
        Ok(m.geometry.fs_bytes)
    };
    sweep(&disk, EXFAT_NEW, seeds, &check)
}

/// [`sweep`] of FAT32 on 40 MiB in `table`.
fn fat32_sweep(table: TableKind) -> SweepReport {
    let (disk, want) = spread_volume_in(&[], Some(table));
    let check = |d: &MemDisk, new: Option<u64>| {
        let m = super::fat::check_fat(d, &want)?;
        if let Some(n) = new {
            check_shrunk(d, &want, n)?;
        }
        Ok(m.geometry.fs_bytes)
    };
    // One seed: each trial reads the volume through two readers.
    sweep(&disk, FAT32_NEW, 1, &check)
}

fn a_shrink_in(table: TableKind) {
    let (disk, want) = exfat_in(table);
    let (_, old_part) = table_of(&disk).unwrap();
    let mut d = disk.clone();
    let job = plan_resize(&mut d, NewSize::Bytes(EXFAT_NEW)).unwrap();
    assert!(d.as_bytes() == disk.as_bytes(), "the plan wrote");
    assert_eq!(job.step, Step::Start);
    let g = job.grow.as_ref().unwrap();
    assert!(g.table.is_none(), "a shrink's entry is not written first");
    assert!(g.moved_clusters > 0, "{g:?}");
    let t = job.table_after.as_ref().unwrap();
    assert_eq!(t.old_bytes(), old_part);
    assert_eq!(t.new_bytes(), 4 * MIB);
    assert_eq!(t.sectors(), (old_part / 512, 4 * MIB / 512));
    run(&mut d, &job).unwrap();
    shrunk(&d, &want, EXFAT_NEW).unwrap();
    check_done(&d, &disk, EXFAT_NEW).unwrap();
}

#[test]
fn an_exfat_shrink_inside_an_mbr_partition_shrinks_its_entry_after_the_volume() {
    a_shrink_in(TableKind::Mbr);
}

#[test]
fn an_exfat_shrink_inside_a_gpt_partition_shrinks_its_entry_and_keeps_the_backup_at_the_end() {
    a_shrink_in(TableKind::Gpt);
}

#[test]
fn a_shrink_cut_before_its_table_write_is_finished_by_the_same_command() {
    for table in [TableKind::Mbr, TableKind::Gpt] {
        let (disk, want) = exfat_in(table);
        let p = table_of(&disk).unwrap().0.partitions[0].clone();
        // The volume's job alone (as a cut after its switch leaves it):
        // the volume shrunk, the entry as it was.
        let mut d = disk.clone();
        {
            let mut s = Slice::new(&mut d, p.start / 512, p.size / 512).unwrap();
            resize(&mut s, NewSize::Bytes(EXFAT_NEW)).unwrap();
        }
        assert_eq!(table_of(&d).unwrap().1, p.size);
        shrunk(&d, &want, EXFAT_NEW).unwrap();
        let before = d.as_bytes().to_vec();
        let job = plan_resize(&mut d, NewSize::Bytes(EXFAT_NEW)).unwrap();
        assert!(d.as_bytes() == &before[..], "the plan wrote");
        assert_eq!(job.step, Step::Table);
        assert!(job.grow.is_none());
        let t = job.table_after.as_ref().unwrap();
        assert_eq!(t.sectors(), (p.size / 512, 4 * MIB / 512));
        run(&mut d, &job).unwrap();
        shrunk(&d, &want, EXFAT_NEW).unwrap();
        check_done(&d, &disk, EXFAT_NEW).unwrap();
    }
}

#[test]
fn a_shrink_by_less_than_the_alignment_keeps_the_entry_and_a_refusal_writes_nothing() {
    let (mut d, want) = exfat_in(TableKind::Mbr);
    let (_, part) = table_of(&d).unwrap();
    // 64 KiB less: the entry's rounded end is its old end.
    let job = resize(&mut d, NewSize::Bytes(part - (64 << 10))).unwrap();
    assert!(job.table_after.is_none());
    assert_eq!(table_of(&d).unwrap().1, part);
    shrunk(&d, &want, part - (64 << 10)).unwrap();
    let before = d.as_bytes().to_vec();
    match resize(&mut d, NewSize::Bytes(MIB)) {
        Err(ReclusterError::Refused(Refusal::Resize(ResizeRefusal::BelowData { .. }))) => {}
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(d.as_bytes() == &before[..]);
}

#[test]
fn power_cuts_in_an_exfat_shrink_inside_an_mbr_partition_leave_every_file_intact() {
    let report = exfat_sweep(TableKind::Mbr, 3);
    eprintln!("shrink sweep, exFAT in MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points >= report.ops as usize);
}

#[test]
fn power_cuts_in_an_exfat_shrink_inside_a_gpt_partition_leave_every_file_intact() {
    let report = exfat_sweep(TableKind::Gpt, 3);
    eprintln!("shrink sweep, exFAT in GPT: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
}

#[test]
fn power_cuts_in_a_fat32_shrink_inside_an_mbr_partition_leave_every_file_intact() {
    let report = fat32_sweep(TableKind::Mbr);
    eprintln!("shrink sweep, FAT32 in MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
}

#[test]
fn power_cuts_in_a_fat32_shrink_inside_a_gpt_partition_leave_every_file_intact() {
    let report = fat32_sweep(TableKind::Gpt);
    eprintln!("shrink sweep, FAT32 in GPT: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
}
