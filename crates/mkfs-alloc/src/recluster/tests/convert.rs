//! FAT32 to exFAT on volumes our formatter makes and fills (one file
//! fragmented): the whole job (every file byte for byte through the
//! model's walk and this file's chain reader, the names, the time stamps
//! and attributes), the refusals, and a power-cut sweep whose every trial
//! holds every file and whose rerun finishes the same bytes as an uncut run.

use super::fat::{fat32, Table};
use super::*;
use crate::recluster::convert::{self, Conversion};

/// A FAT32 volume of 40 MiB at 512-byte clusters with the test tree and
/// `dirs` more directories.
fn volume(dirs: usize, table: Table) -> (MemDisk, Vec<(String, usize)>) {
    fat32((40 << 20) + (2 << 20), 512, dirs, table)
}

/// Each file's (modification stamp, attributes) as its entry set says,
/// FAT short entry or exFAT File entry; sets whose FAT short entry is in
/// the next cluster are left out.
fn stamps(disk: &MemDisk) -> BTreeMap<String, (u32, u8)> {
    let (m, sets) = model_of(disk).unwrap();
    let g = &m.geometry;
    let mut out = BTreeMap::new();
    for s in &sets {
        if g.kind == FsKind::Exfat {
            let e = read(disk, s.at.offset, 32);
            let t = u32::from_le_bytes(e[12..16].try_into().unwrap());
            out.insert(s.path.clone(), (t, e[4] & 0x37));
            continue;
        }
        let at = s.at.offset + 32 * u64::from(s.at.entries - 1);
        let cluster_end = |o: u64| (o - g.data_offset) / g.cluster_size;
        if cluster_end(at) != cluster_end(s.at.offset) {
            continue;
        }
        let e = read(disk, at, 32);
        let date = u32::from(u16::from_le_bytes([e[24], e[25]]));
        let time = u32::from(u16::from_le_bytes([e[22], e[23]]));
        out.insert(s.path.clone(), ((date << 16) | time, e[11] & 0x37));
    }
    out
}

#[test]
fn a_conversion_keeps_every_file_name_time_and_attribute() {
    let (mut disk, want) = volume(5, None);
    let before = stamps(&disk);
    let (m, _) = model_of(&disk).unwrap();
    let job = convert::convert(&mut disk).unwrap();
    assert_eq!(job.step, Step::Start);
    let p = job.plan.clone().unwrap();
    let after = check_tree(&disk, &want).unwrap();
    assert_eq!(after.geometry.kind, FsKind::Exfat);
    assert!(after.findings.is_empty(), "{:?}", after.findings);
    // No data moved: the same heap, the same cluster size.
    assert_eq!(after.geometry.data_offset, m.geometry.data_offset);
    assert_eq!(after.geometry.cluster_count, m.geometry.cluster_count);
    assert_eq!(
        after.geometry.fat_offset,
        m.geometry.fat_offset + m.geometry.fat_bytes
    );
    let free = u64::from(after.geometry.cluster_count) - after.used.count_set();
    assert_eq!(free * 512, p.free_after);
    let now = stamps(&disk);
    for (path, (t, a)) in &before {
        let got = now.get(path).unwrap_or_else(|| panic!("{path} missing"));
        assert_eq!(got.0, *t, "{path}: modification time");
        assert_eq!(got.1 & !0x10, a & !0x10, "{path}: attributes");
    }
    assert!(before.len() > want.len() / 2, "{}", before.len());
    // The serial is the volume's; the intent record is gone; again: nothing.
    let serial = u32::from_le_bytes(read(&disk, 100, 4).try_into().unwrap());
    assert_eq!(serial, p.serial);
    assert!(read(&disk, 24 * 512, 512).iter().all(|&b| b == 0));
    assert_eq!(convert::plan(&mut disk).unwrap().step, Step::Nothing);
}

#[test]
fn an_mbr_partition_gets_the_exfat_type() {
    let (mut disk, want) = volume(2, Some(mkfs_alloc_partition::TableKind::Mbr));
    assert!([0x0B, 0x0C].contains(&read(&disk, 446 + 4, 1)[0]));
    let job = convert::convert(&mut disk).unwrap();
    assert_eq!(job.plan.unwrap().partition_type, Some(0x07));
    assert_eq!(read(&disk, 446 + 4, 1)[0], 0x07);
    let m = check_tree(&disk, &want).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
}

fn refusal(r: Result<Conversion, ReclusterError>) -> Refusal {
    match r {
        Err(ReclusterError::Refused(r)) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    }
}

#[test]
fn refusals_say_why_and_leave_the_target_byte_identical() {
    // FAT16: not supported yet.
    let mut disk = MemDisk::new(512, (64 << 20) / 512).unwrap();
    let mut plan = crate::MediumOptions::new()
        .fs(FsKind::Fat16)
        .plan_for(&disk)
        .unwrap();
    plan.format(&mut disk).unwrap();
    let before = disk.as_bytes().to_vec();
    let r = refusal(convert::convert(&mut disk));
    assert!(r.to_string().contains("Fat16"), "{r}");
    assert!(disk.as_bytes() == &before[..]);
    // A damaged FAT32 (a directory's chain cut): refused.
    let (mut disk, _) = volume(0, None);
    let (m, sets) = model_of(&disk).unwrap();
    let d = sets.iter().find(|s| s.path == "/photos/b.jpg").unwrap();
    patch(
        &mut disk,
        m.geometry.fat_offset + 4 * u64::from(d.first_cluster),
        &[0; 4],
    );
    let before = disk.as_bytes().to_vec();
    assert!(matches!(
        refusal(convert::convert(&mut disk)),
        Refusal::Damaged { .. }
    ));
    assert!(disk.as_bytes() == &before[..]);
    // Too little space: the job says how much to free.
    let (mut disk, _) = volume(0, None);
    let (m, _) = model_of(&disk).unwrap();
    let g = m.geometry.clone();
    let last = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| !m.used.get(c))
        .unwrap();
    // One file over nearly every free cluster.
    let first = (2..=g.cluster_count + 1).find(|&c| !m.used.get(c)).unwrap();
    let free: Vec<u32> = (first..=last).filter(|&c| !m.used.get(c)).collect();
    let keep = 3;
    let chain = &free[..free.len() - keep];
    for copy in 0..u64::from(g.fat_count) {
        for (i, &c) in chain.iter().enumerate() {
            let next = chain.get(i + 1).copied().unwrap_or(0x0FFF_FFFF);
            patch(
                &mut disk,
                g.fat_offset + copy * g.fat_bytes + 4 * u64::from(c),
                &next.to_le_bytes(),
            );
        }
    }
    let sets = model_of(&disk).unwrap().1;
    let e = sets.iter().find(|s| s.path == "/empty").unwrap();
    let at = e.at.offset + 32 * u64::from(e.at.entries - 1);
    let mut short = read(&disk, at, 32);
    short[20..22].copy_from_slice(&((chain[0] >> 16) as u16).to_le_bytes());
    short[26..28].copy_from_slice(&(chain[0] as u16).to_le_bytes());
    short[28..32].copy_from_slice(&(u32::try_from(chain.len()).unwrap() * 512).to_le_bytes());
    patch(&mut disk, at, &short);
    let before = disk.as_bytes().to_vec();
    match refusal(convert::convert(&mut disk)) {
        r @ Refusal::TooLittleSpace { need, free } => {
            assert_eq!(free, 512 * keep as u64);
            assert!(need > free);
            assert!(r.to_string().contains("free at least"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(disk.as_bytes() == &before[..]);
}

/// The sweep: every trial holds every file (FAT32 or exFAT), and its rerun
/// is a clean exFAT volume byte for byte the uncut run's.
fn sweep(disk: &MemDisk, want: &[(String, usize)], seeds: u64) -> SweepReport {
    let job = |dev: &mut dyn BlockIo| convert::convert(dev).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = check_tree(t.medium, want)?;
            if t.stage == Stage::AfterRerun {
                if m.geometry.kind != FsKind::Exfat || !m.findings.is_empty() {
                    return Err(format!("after the rerun: {:?}", m.findings));
                }
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            }
            Ok(true)
        })
        .unwrap()
}

use mkfs_alloc_blockio::powercut::sweep::SweepReport;

#[test]
fn power_cuts_at_every_write_leave_every_file_intact() {
    let (disk, want) = volume(150, None);
    let report = sweep(&disk, &want, 2);
    eprintln!("FAT32 to exFAT sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 200, "{report}");
}

#[test]
fn power_cuts_inside_an_mbr_partition() {
    let (disk, want) = volume(10, Some(mkfs_alloc_partition::TableKind::Mbr));
    let report = sweep(&disk, &want, 1);
    eprintln!("FAT32 to exFAT sweep, MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

#[test]
fn a_cut_conversion_is_redone_before_its_switch_and_finished_after_it() {
    use mkfs_alloc_blockio::PowerCutIo;
    let (disk, want) = volume(0, None);
    let ops = {
        let mut count = PowerCutIo::counting(disk.clone());
        convert::convert(&mut count).unwrap();
        count.ops_seen()
    };
    let mut seen = std::collections::BTreeSet::new();
    for k in 0..ops {
        let mut cut = PowerCutIo::new(disk.clone(), k, 0);
        assert!(convert::convert(&mut cut).is_err());
        let mut d = cut.into_surviving().unwrap();
        let step = convert::plan(&mut d).unwrap().step;
        let (m, _) = model_of(&d).unwrap();
        let g = &m.geometry;
        let named = convert::unfinished(&mut d, g.start, g.fat_offset, g.sector_size).unwrap();
        assert_eq!(named, step != Step::Start, "cut at {k}: {step:?}");
        // The re-cluster does not take the record for one of its own.
        assert_eq!(
            super::super::unfinished_at(&mut d, g.start, g.data_offset, 512).unwrap(),
            None
        );
        seen.insert(step.to_string());
        convert::convert(&mut d).unwrap();
        let m = check_tree(&d, &want).unwrap();
        assert!(m.findings.is_empty(), "cut at {k}: {:?}", m.findings);
        let g = &m.geometry;
        assert!(!convert::unfinished(&mut d, g.start, g.fat_offset, 512).unwrap());
    }
    for s in [Step::Start, Step::Redo, Step::Finish] {
        assert!(seen.contains(&s.to_string()), "{seen:?}");
    }
}
