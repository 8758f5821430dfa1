//! FAT32 re-clustered to a larger size (`fat/coarse.rs`), on volumes our
//! formatter makes and fills (one file fragmented by hand): the plan, the
//! whole job read by the model and the `fatfs` crate, the refusals with
//! the target unchanged, and power-cut sweeps whose every trial holds every
//! file before its rerun (through both readers) and after it.

use super::fat::{check_fat, check_fatfs, fat32, fat32_with, refused, unfinished_fat_of};
use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;

/// 80 MiB at 512 bytes: about 163,000 clusters; 81,000 at 1 KiB.
const SIZE: u64 = 80 << 20;

#[test]
fn the_plan_keeps_the_data_region_and_puts_the_new_fats_at_the_old_ones_end() {
    let (mut disk, want) = fat32(SIZE, 512, 2, None);
    let job = plan(&mut disk, 1024).unwrap();
    assert_eq!(job.step, Step::Start);
    let p = job.plan.unwrap();
    let (f, c) = (p.fat.clone().unwrap(), p.coarse.clone().unwrap());
    eprintln!("{:?}\n{:?}\n{f:?}\n{c:?}", p.old, p.new);
    assert_eq!(c.group, 2);
    assert_eq!(p.new.heap_offset, p.old.heap_offset);
    assert_eq!(p.new.fat_offset + 2 * p.new.fat_bytes, p.new.heap_offset);
    // The new FATs do not touch the old first FAT.
    assert!(p.new.fat_offset >= p.old.fat_offset + p.old.fat_bytes);
    assert!(p.new.fat_bytes >= (u64::from(p.new.cluster_count) + 2) * 4);
    assert!(p.new.cluster_count >= 65_525);
    assert_eq!(u64::from(f.reserved.1) * 512, p.new.fat_offset);
    assert_eq!(p.files, want.len() as u64);
    // Some files keep their place, the fragmented one is copied.
    assert!(c.files_kept > 0 && c.files_moved > 0, "{c:?}");
    assert_eq!(c.files_kept + c.files_moved + 1, p.files, "one empty file");
    assert!(p.clusters_moved > 0);
    assert_eq!(p.dirs.len(), 11);
}

#[test]
fn a_larger_fat32_recluster_keeps_every_file_and_runs_again_as_nothing() {
    for (cluster, to, size) in [(512, 1024, SIZE), (512, 4096, 300 << 20)] {
        let (mut disk, want) = fat32(size, cluster, 3, None);
        let job = recluster(&mut disk, to).unwrap();
        let p = job.plan.unwrap();
        let m = check_fat(&disk, &want).unwrap();
        assert_eq!(m.geometry.cluster_size, to);
        assert_eq!(m.geometry.kind, FsKind::Fat32);
        assert!(m.findings.is_empty(), "{to}: {:?}", m.findings);
        check_fatfs(&disk, &want).unwrap();
        assert_eq!(m.geometry.data_offset, p.old.heap_offset + m.geometry.start);
        let free = u64::from(m.geometry.cluster_count) - m.used.count_set();
        assert_eq!(free * to, p.free_after, "{to}");
        // FSInfo says the free count; the boot sector and its backup agree;
        // the intent record is gone.
        let fsinfo = read(&disk, 512 + 488, 4);
        assert_eq!(
            u64::from(u32::from_le_bytes(fsinfo.try_into().unwrap())),
            free
        );
        assert_eq!(read(&disk, 0, 512), read(&disk, 6 * 512, 512));
        assert!(read(&disk, 24 * 512, 512).iter().all(|&b| b == 0));
        assert_eq!(plan(&mut disk, to).unwrap().step, Step::Nothing);
    }
}

#[test]
fn larger_fat32_refusals_say_why_and_write_nothing() {
    let (mut disk, _) = fat32(SIZE, 512, 0, None);
    let before = disk.as_bytes().to_vec();
    // 80 MiB at 2 KiB is 40,000 clusters: FAT16's count.
    match refused(recluster(&mut disk, 2048)) {
        Refusal::Fat(r @ FatRefusal::TypeChange { kind, .. }) => {
            assert_eq!(kind, FsKind::Fat16);
            assert!(r.to_string().contains("convert"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        refused(recluster(&mut disk, 3072)),
        Refusal::InvalidSize { .. }
    ));
    assert!(disk.as_bytes() == &before[..]);
    // A file over every other cluster: no group is wholly free, nothing
    // to copy it into.
    let mut want = files_in(512, 0);
    want.push(("/big.bin".into(), 20 << 20));
    want.push(("/spread.bin".into(), 27 << 20));
    let mut disk = fat32_with(SIZE, 512, &want, None);
    interleave(&mut disk, "/spread.bin");
    let (m, _) = model_of(&disk).unwrap();
    assert!(!m.refused(), "{:?}", m.findings);
    let before = disk.as_bytes().to_vec();
    match refused(recluster(&mut disk, 1024)) {
        r @ Refusal::TooLittleSpace { need, free } => {
            assert!(need > free, "{r}");
            assert!(r.to_string().contains("free"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(disk.as_bytes() == &before[..]);
}

/// Spreads a file's chain over the second cluster of every pair no other
/// data uses, from the data region's start, in both FATs (its data not
/// moved: only the layout matters).
fn interleave(disk: &mut MemDisk, path: &str) {
    let (m, sets) = model_of(disk).unwrap();
    let g = m.geometry.clone();
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    let n = u32::try_from(s.clusters).unwrap();
    let fats = |disk: &mut MemDisk, c: u32, v: u32| {
        for copy in 0..u64::from(g.fat_count) {
            let off = g.fat_offset + copy * g.fat_bytes + 4 * u64::from(c);
            patch(disk, off, &v.to_le_bytes());
        }
    };
    for c in s.first_cluster..s.first_cluster + n {
        fats(disk, c, 0);
    }
    let own = s.first_cluster..s.first_cluster + n;
    let chain: Vec<u32> = (2..=g.cluster_count + 1)
        .filter(|&c| c % 2 == 1 && (own.contains(&c) || !m.used.get(c)))
        .take(n as usize)
        .collect();
    assert_eq!(chain.len(), n as usize);
    assert!(*chain.last().unwrap() <= g.cluster_count + 1);
    for (i, &c) in chain.iter().enumerate() {
        fats(disk, c, chain.get(i + 1).copied().unwrap_or(0x0FFF_FFFF));
    }
    // The entry's first cluster, in the root directory's first clusters.
    let dir = g.data_offset..g.data_offset + 64 * g.cluster_size;
    let bytes = read(
        disk,
        dir.start,
        usize::try_from(dir.end - dir.start).unwrap(),
    );
    let size = u32::try_from(s.size).unwrap();
    let at = bytes
        .chunks_exact(32)
        .position(|e| e[11] != 0x0F && e[28..32] == size.to_le_bytes())
        .unwrap();
    let e = dir.start + 32 * at as u64;
    let new = chain[0];
    patch(
        disk,
        e + 26,
        &u16::try_from(new & 0xFFFF).unwrap().to_le_bytes(),
    );
    patch(
        disk,
        e + 20,
        &u16::try_from(new >> 16).unwrap().to_le_bytes(),
    );
    // FSInfo's free count stays right: as many clusters freed as taken.
}

/// A sweep over a FAT32 volume from `cluster` to `to`: before the rerun
/// the medium reads intact through the model and `fatfs`, or not at all.
fn sweep_larger(disk: &MemDisk, want: &[(String, usize)], to: u64, seeds: u64) -> SweepReport {
    let job = |dev: &mut dyn BlockIo| recluster(dev, to).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = check_fat(t.medium, want)?;
            check_fatfs(t.medium, want)?;
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != to || !m.findings.is_empty() {
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

#[test]
fn larger_fat32_power_cuts_at_every_write_leave_every_file_intact() {
    let (disk, want) = fat32(SIZE, 512, 6, None);
    let report = sweep_larger(&disk, &want, 1024, 3);
    eprintln!("FAT32 recluster sweep, 512 B to 1 KiB: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 90, "{report}");
}

#[test]
fn larger_fat32_power_cuts_inside_an_mbr_partition() {
    let mbr = Some(mkfs_alloc_partition::TableKind::Mbr);
    let (disk, want) = fat32(SIZE + (1 << 20), 512, 12, mbr);
    let report = sweep_larger(&disk, &want, 1024, 1);
    eprintln!("FAT32 recluster sweep, 512 B to 1 KiB, MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 90, "{report}");
}

#[test]
fn a_cut_larger_fat32_job_is_named_by_info_and_redone_or_finished() {
    use mkfs_alloc_blockio::PowerCutIo;
    let (disk, want) = fat32(SIZE, 512, 0, None);
    let ops = {
        let mut count = PowerCutIo::counting(disk.clone());
        recluster(&mut count, 1024).unwrap();
        count.ops_seen()
    };
    let mut seen = std::collections::BTreeSet::new();
    for k in 0..ops {
        let mut cut = PowerCutIo::new(disk.clone(), k, 0);
        assert!(recluster(&mut cut, 1024).is_err());
        let mut d = cut.into_surviving().unwrap();
        let step = plan(&mut d, 1024).unwrap().step;
        let (m, _) = model_of(&d).unwrap();
        let named = unfinished_fat_of(&mut d, &m.geometry);
        assert_eq!(named.is_some(), step != Step::Start, "cut at {k}: {step:?}");
        if let Some(c) = named {
            assert_eq!(c, 1024, "cut at {k}");
        }
        if matches!(step, Step::Redo | Step::Finish) {
            assert!(
                matches!(
                    plan(&mut d, 4096),
                    Err(ReclusterError::OtherJob { cluster: 1024 })
                ),
                "cut at {k}: {step:?}"
            );
        }
        seen.insert(step.to_string());
        recluster(&mut d, 1024).unwrap();
        let m = check_fat(&d, &want).unwrap();
        assert!(m.findings.is_empty(), "cut at {k}: {:?}", m.findings);
        assert_eq!(unfinished_fat_of(&mut d, &m.geometry), None, "cut at {k}");
    }
    for s in [Step::Start, Step::Redo, Step::Finish] {
        assert!(seen.contains(&s.to_string()), "{seen:?}");
    }
}
