//! Grow (`resize`) on exFAT images our formatter makes and fills, then
//! extends: the plan, the refusals (the medium unchanged), the whole job,
//! and power-cut sweeps whose every trial, rerun, holds every file.

use super::*;

/// `disk` with `extra` zero bytes after it (an image file the user
/// extended).
fn extended(disk: &MemDisk, extra: u64) -> MemDisk {
    let mut v = disk.as_bytes().to_vec();
    v.resize(v.len() + usize::try_from(extra).unwrap(), 0);
    MemDisk::from_vec(disk.block_size(), v).unwrap()
}

fn grown_model(disk: &MemDisk) -> VolumeModel {
    let m = check_files(disk, usize::try_from(OLD).unwrap()).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    m
}

#[test]
fn a_grow_to_the_medium_end_keeps_every_file() {
    let disk = image(SIZE, OLD);
    let before = grown_model(&disk);
    let mut d = extended(&disk, SIZE);
    let job = resize(&mut d, NewSize::Max).unwrap();
    assert_eq!(job.step, Step::Start);
    let g = job.grow.unwrap();
    assert_eq!(g.new_bytes, 2 * SIZE);
    // The heap stays: no cluster is renumbered.
    assert_eq!(g.new.heap_offset, g.old.heap_offset);
    let m = grown_model(&d);
    assert_eq!(m.geometry.fs_bytes, 2 * SIZE);
    assert_eq!(m.geometry.cluster_count, g.new.cluster_count);
    assert!(m.geometry.cluster_count > before.geometry.cluster_count);
    assert_eq!(m.geometry.data_offset, before.geometry.data_offset);
    let gained = u64::from(g.new.cluster_count - g.old.cluster_count) * OLD;
    assert_eq!(m.free_clusters * OLD, g.free_after);
    assert_eq!(g.free_after, g.free_before + gained);
    // Both boot regions are the new volume, the record is gone.
    assert_eq!(read(&d, 0, 512)[..106], read(&d, 12 * 512, 512)[..106]);
    assert!(read(&d, g.intent_offset, 512).iter().all(|&b| b == 0));
    assert_eq!(
        plan_resize(&mut d, NewSize::Max).unwrap().step,
        Step::Nothing
    );
}

#[test]
fn refusals_leave_the_medium_unchanged() {
    let disk = image(SIZE, OLD);
    let mut d = extended(&disk, SIZE);
    let before = d.as_bytes().to_vec();
    let refused = |r: Result<Job, ReclusterError>| match r {
        Err(ReclusterError::Refused(Refusal::Resize(r))) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    let r = refused(resize(&mut d, NewSize::Bytes(3 * SIZE)));
    assert!(matches!(r, ResizeRefusal::PastMedium { .. }), "{r}");
    let r = refused(resize(&mut d, NewSize::Bytes(SIZE / 64)));
    assert!(matches!(r, ResizeRefusal::BelowData { .. }), "{r}");
    assert!(d.as_bytes() == &before[..]);
    // The same size: nothing to do, nothing written.
    let mut same = disk.clone();
    assert_eq!(resize(&mut same, NewSize::Max).unwrap().step, Step::Nothing);
    assert!(same.as_bytes() == disk.as_bytes());
}

#[test]
fn a_fat_that_cannot_grow_names_the_largest_size() {
    // 4 KiB clusters: the 8 MiB volume's FAT region holds entries for far
    // fewer clusters than 1 GiB needs.
    let disk = image(SIZE, 4096);
    let mut d = extended(&disk, 1 << 30);
    let before = d.as_bytes().to_vec();
    match resize(&mut d, NewSize::Max) {
        Err(ReclusterError::Refused(Refusal::Resize(r @ ResizeRefusal::FatFull { most, .. }))) => {
            assert!(most > SIZE && most < SIZE + (1 << 30), "{r}");
            assert!(r.to_string().contains("at most"), "{r}");
            // That size is accepted.
            let job = plan_resize(&mut d, NewSize::Bytes(most)).unwrap();
            assert_eq!(job.step, Step::Start);
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(d.as_bytes() == &before[..]);
}

#[test]
fn a_recluster_waits_for_an_unfinished_resize() {
    use mkfs_alloc_blockio::PowerCutIo;
    let d = extended(&image(SIZE, OLD), SIZE);
    let mut cut = PowerCutIo::new(d, 4, 1);
    assert!(resize(&mut cut, NewSize::Max).is_err());
    let mut d = cut.into_surviving().unwrap();
    let heap = model_of(&d).unwrap().0.geometry.data_offset;
    // info names the resize, not a re-cluster.
    assert!(unfinished_resize(&mut d, 0, heap, 512).unwrap());
    assert_eq!(unfinished_at(&mut d, 0, heap, 512).unwrap(), None);
    assert!(matches!(
        plan(&mut d, 4096),
        Err(ReclusterError::UnfinishedResize)
    ));
    assert_eq!(plan_resize(&mut d, NewSize::Max).unwrap().step, Step::Redo);
    resize(&mut d, NewSize::Max).unwrap();
    grown_model(&d);
    assert!(!unfinished_resize(&mut d, 0, heap, 512).unwrap());
}

/// A sweep of the grow of `disk` to its medium's end; returns its report.
fn sweep(disk: &MemDisk, seeds: u64) -> mkfs_alloc_blockio::powercut::sweep::SweepReport {
    let want = disk.num_blocks() * 512;
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Max).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = match check_files(t.medium, usize::try_from(OLD).unwrap()) {
                Ok(m) => m,
                Err(e) if t.stage == Stage::BeforeRerun && e.contains("exFAT") => return Ok(false),
                Err(e) => return Err(e),
            };
            if t.stage == Stage::AfterRerun {
                if m.geometry.fs_bytes != want || !m.findings.is_empty() {
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
fn power_cuts_in_a_grow_leave_every_file_intact() {
    let report = sweep(&extended(&image(SIZE, OLD), SIZE), 12);
    eprintln!("grow sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points >= report.ops as usize);
}

#[test]
fn power_cuts_in_a_grow_by_one_cluster_whose_bitmap_goes_to_old_free_space() {
    let disk = extended(&image(SIZE, OLD), OLD);
    let mut d = disk.clone();
    let g = plan_resize(&mut d, NewSize::Max).unwrap().grow.unwrap();
    assert_eq!(g.new.cluster_count, g.old.cluster_count + 1);
    assert!(g.bitmap.0 <= g.old.cluster_count + 1, "{g:?}");
    let report = sweep(&disk, 12);
    eprintln!("grow sweep, one cluster: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

#[test]
fn power_cuts_in_a_grow_whose_fat_grows_into_the_gap() {
    // 4 KiB clusters: the FAT's new entries pass the old FatLength.
    let disk = extended(&image(SIZE, 4096), 3 * SIZE);
    let mut d = disk.clone();
    let g = plan_resize(&mut d, NewSize::Max).unwrap().grow.unwrap();
    assert!(g.new.fat_bytes > g.old.fat_bytes, "{g:?}");
    let want = files(4096);
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Max).map(|_| ());
    let report = Sweep::new()
        .seeds(12)
        .run(&disk, job, |t| {
            let m = check_tree(t.medium, &want)?;
            if t.stage == Stage::AfterRerun
                && (m.geometry.fs_bytes != 4 * SIZE || !m.findings.is_empty())
            {
                return Err(format!("after the rerun: {:?}", m.findings));
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("grow sweep, FAT grown: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

#[test]
fn power_cuts_in_a_grow_with_4096_byte_sectors_inside_many_directories() {
    let shape = Shape {
        size: 16 << 20,
        cluster: 64 << 10,
        sector: 4096,
        mbr: false,
        dirs: 20,
        align: 0,
    };
    let disk = shaped(shape);
    let mut v = disk.as_bytes().to_vec();
    v.resize(v.len() + (16 << 20), 0);
    let disk = MemDisk::from_vec(4096, v).unwrap();
    let want = shape.files();
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Max).map(|_| ());
    let report = Sweep::new()
        .seeds(12)
        .run(&disk, job, |t| {
            let m = check_tree(t.medium, &want)?;
            if t.stage == Stage::AfterRerun
                && (m.geometry.fs_bytes != 32 << 20 || !m.findings.is_empty())
            {
                return Err(format!("after the rerun: {:?}", m.findings));
            }
            if t.stage == Stage::AfterRerun && t.medium.as_bytes() != t.reference.as_bytes() {
                return Err("the rerun's bytes differ from an uncut run's".into());
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("grow sweep, 4 KiB sectors: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

/// A FAT32 image of ours (80 MiB at 1 KiB clusters) on a medium `extra`
/// bytes longer; its tree.
fn fat32_extended(extra: u64) -> (MemDisk, Vec<(String, usize)>) {
    let (disk, want) = super::fat::fat32(80 << 20, 1024, 2, None);
    (extended(&disk, extra), want)
}

#[test]
fn a_fat32_grow_uses_the_fats_slack_and_names_the_largest_size_beyond_it() {
    let (mut d, want) = fat32_extended(64 << 20);
    let before = d.as_bytes().to_vec();
    let most = match plan_resize(&mut d, NewSize::Max) {
        Err(ReclusterError::Refused(Refusal::Resize(ResizeRefusal::FatFull { most, .. }))) => most,
        Ok(j) => {
            let g = j.grow.unwrap();
            panic!("the FAT holds {} clusters", g.new.cluster_count)
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    assert!(d.as_bytes() == &before[..]);
    assert!(most > 80 << 20, "no slack: {most}");
    let job = resize(&mut d, NewSize::Bytes(most)).unwrap();
    let g = job.grow.unwrap();
    assert_eq!(g.fs, mkfs_alloc_inspect::FsKind::Fat32);
    let m = super::fat::check_fat(&d, &want).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert_eq!(m.geometry.cluster_count, g.new.cluster_count);
    assert_eq!(m.geometry.fs_bytes, most);
    assert_eq!(m.free_clusters * 1024, g.free_after);
    super::fat::check_fatfs(&d, &want).unwrap();
    // Boot sector and its backup agree; the record is gone.
    assert_eq!(read(&d, 0, 512), read(&d, 6 * 512, 512));
    assert!(read(&d, 24 * 512, 512).iter().all(|&b| b == 0));
    assert_eq!(
        plan_resize(&mut d, NewSize::Bytes(most)).unwrap().step,
        Step::Nothing
    );
}

#[test]
fn power_cuts_in_a_fat32_grow_leave_every_file_intact() {
    let (disk, want) = fat32_extended(64 << 20);
    let most = match plan_resize(&mut disk.clone(), NewSize::Max) {
        Err(ReclusterError::Refused(Refusal::Resize(ResizeRefusal::FatFull { most, .. }))) => most,
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Bytes(most)).map(|_| ());
    let report = Sweep::new()
        .seeds(4)
        .run(&disk, job, |t| {
            let m = super::fat::check_fat(t.medium, &want)?;
            if t.stage == Stage::AfterRerun {
                if m.geometry.fs_bytes != most || !m.findings.is_empty() {
                    return Err(format!("{} bytes, {:?}", m.geometry.fs_bytes, m.findings));
                }
                super::fat::check_fatfs(t.medium, &want)?;
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("grow sweep, FAT32: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}
