//! Re-cluster when the new FAT does not fit the gap before the heap: the
//! heap's first clusters are evacuated first (a second switch), on images
//! whose FAT sits right before the heap, with files, a fragmented file, a
//! NoFatChain file and subdirectories in those clusters; each with a
//! power-cut sweep whose every trial, rerun, holds every file.

use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;

/// A volume of `size` at `cluster`, its tree, the `frag-` files fragmented.
fn prefixed(size: u64, cluster: u64, dirs: usize) -> (MemDisk, Vec<(String, usize)>) {
    let shape = Shape {
        size,
        cluster,
        sector: 512,
        mbr: false,
        dirs,
        align: 16 << 10,
    };
    (shaped(shape), shape.files())
}

#[test]
fn the_plan_moves_the_heap_start_and_counts_the_evacuation() {
    let (mut disk, _) = prefixed(32 << 20, 32 << 10, 2);
    let (m, _) = model_of(&disk).unwrap();
    let job = plan(&mut disk, 512).unwrap();
    let p = job.plan.unwrap();
    let e = p.evacuate.clone().unwrap();
    eprintln!("{:?}\n{:?}\n{e:?}", m.geometry, p.new);
    assert!(e.in_use > 0 && e.moved > 0);
    assert_eq!(
        p.new.heap_offset,
        p.old.heap_offset + u64::from(e.clusters) * p.old.cluster_size
    );
    assert!(p.new.fat_offset + p.new.fat_bytes <= p.new.heap_offset);
    assert_eq!(p.intent_offset, 24 * 512);
}

#[test]
fn an_evacuating_recluster_keeps_every_file() {
    let (mut disk, want) = prefixed(32 << 20, 32 << 10, 2);
    recluster(&mut disk, 512).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, 512);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert_eq!(plan(&mut disk, 512).unwrap().step, Step::Nothing);
}

#[test]
fn no_sector_for_the_intent_record_is_refused_unchanged() {
    // Aligned to 4 KiB the FAT starts at sector 24: no free sector there.
    let shape = Shape {
        size: 32 << 20,
        cluster: 32 << 10,
        sector: 512,
        mbr: false,
        dirs: 0,
        align: 4096,
    };
    let mut disk = shaped(shape);
    let before = disk.as_bytes().to_vec();
    match recluster(&mut disk, 512) {
        Err(ReclusterError::Refused(r @ Refusal::FatDoesNotFit { in_use, .. })) => {
            assert!(in_use > 0);
            assert!(r.to_string().contains("intent record"), "{r}");
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(disk.as_bytes() == &before[..]);
}

/// What lies in the heap's first clusters the plan to `target` evacuates:
/// (files wholly there, files crossing its end, directories there), each
/// file as (path, NoFatChain).
type Cases = (Vec<(String, bool)>, Vec<(String, bool)>, Vec<String>);

fn in_prefix(disk: &MemDisk, target: u64) -> Cases {
    let mut d = disk.clone();
    let p = plan(&mut d, target).unwrap().plan.unwrap();
    let lim = 2 + p.evacuate.unwrap().clusters;
    let (m, sets) = model_of(disk).unwrap();
    let mut fat = disk::FatReader::new(m.geometry.fat_offset, m.geometry.fat_bytes);
    let mut cases: Cases = Default::default();
    for s in sets.iter().filter(|s| s.first_cluster != 0) {
        let mut chain = vec![s.first_cluster];
        while (chain.len() as u64) < s.clusters {
            let c = *chain.last().unwrap();
            chain.push(if s.contiguous {
                c + 1
            } else {
                fat.get(&mut d, c).unwrap()
            });
        }
        let inside = chain.iter().filter(|&&c| c < lim).count();
        match (s.is_dir, inside) {
            (_, 0) => {}
            (true, _) => cases.2.push(s.path.clone()),
            (false, n) if n == chain.len() => cases.0.push((s.path.clone(), s.contiguous)),
            (false, _) => cases.1.push((s.path.clone(), s.contiguous)),
        }
    }
    cases
}

/// A power-cut sweep of the re-cluster of `disk` to `target`: every trial,
/// rerun, holds `want` at the new size with no finding.
fn evac_sweep(disk: &MemDisk, want: &[(String, usize)], target: u64, seeds: u64) -> SweepReport {
    let job = |dev: &mut dyn BlockIo| recluster(dev, target).map(|_| ());
    let report = Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = match check_tree(t.medium, want) {
                Ok(m) => m,
                Err(e) if t.stage == Stage::BeforeRerun && e.contains("exFAT") => return Ok(false),
                Err(e) => return Err(e),
            };
            if t.stage == Stage::AfterRerun
                && (m.geometry.cluster_size != target || !m.findings.is_empty())
            {
                return Err(format!(
                    "after the rerun: cluster {} findings {:?}",
                    m.geometry.cluster_size, m.findings
                ));
            }
            Ok(true)
        })
        .unwrap();
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points >= 150, "{report}");
    report
}

#[test]
fn power_cuts_while_evacuating_files_directories_and_a_fragmented_chain() {
    // Many directories: each is one more write in both phases, so one more
    // cut point.
    let (disk, want) = prefixed(32 << 20, 32 << 10, 60);
    let (whole, crossing, dirs) = in_prefix(&disk, 512);
    // The bitmap, the up-case table and the root are there, and: NoFatChain
    // files, a subdirectory, a fragmented file whose chain leaves the prefix.
    assert!(whole.iter().any(|f| f.1), "{whole:?}");
    assert!(dirs.iter().any(|d| d != "/"), "{dirs:?}");
    assert!(crossing.iter().any(|f| !f.1), "{crossing:?}");
    let report = evac_sweep(&disk, &want, 512, 2);
    eprintln!("evacuating recluster sweep: {report}");
}

#[test]
fn power_cuts_while_evacuating_a_nofatchain_file_across_the_prefix_end() {
    // 4 KiB clusters to 512 bytes: the prefix ends inside the first photo,
    // a NoFatChain file of four clusters.
    let (disk, want) = prefixed(20 << 20, 4 << 10, 50);
    let (_, crossing, dirs) = in_prefix(&disk, 512);
    assert!(crossing.iter().any(|f| f.1), "{crossing:?}");
    assert!(dirs.len() > 2, "{dirs:?}");
    let report = evac_sweep(&disk, &want, 512, 2);
    eprintln!("evacuating recluster sweep, NoFatChain across the end: {report}");
}

#[test]
fn a_cut_evacuation_is_found_unfinished_and_the_same_command_finishes_it() {
    use mkfs_alloc_blockio::PowerCutIo;
    let (disk, want) = prefixed(32 << 20, 32 << 10, 2);
    let (m, _) = model_of(&disk).unwrap();
    let h = m.geometry.data_offset;
    // Cut after the intent record and VolumeDirty are flushed.
    let mut cut = PowerCutIo::new(disk, 6, 1);
    assert!(recluster(&mut cut, 512).is_err());
    let mut d = cut.into_surviving().unwrap();
    assert_eq!(unfinished(&mut d, h, 512).unwrap(), None);
    assert_eq!(unfinished_at(&mut d, 0, h, 512).unwrap(), Some(512));
    assert!(matches!(
        plan(&mut d, 1024),
        Err(ReclusterError::OtherJob { cluster: 512 })
    ));
    assert_eq!(plan(&mut d, 512).unwrap().step, Step::Redo);
    recluster(&mut d, 512).unwrap();
    check_tree(&d, &want).unwrap();
    let h = model_of(&d).unwrap().0.geometry.data_offset;
    assert_eq!(unfinished_at(&mut d, 0, h, 512).unwrap(), None);
}

#[test]
fn too_little_space_for_the_evacuation_says_how_much_to_free() {
    // Nearly full at 32 KiB: the prefix's data and the copies do not fit.
    let opts = FormatOptions::new()
        .fs(FsKind::Exfat)
        .cluster(ClusterChoice::Bytes(32 << 10))
        .align(16 << 10)
        .serial(1);
    let size = 32u64 << 20;
    let layout = layout_plan(&opts, &Medium::whole(size, 512).expect("medium")).unwrap();
    let mut tree = Tree::new();
    let t = SystemTime::UNIX_EPOCH;
    for i in 0..4 {
        let len = if i == 0 { 32 << 10 } else { 338 * (32 << 10) };
        let path = format!("/f{i}");
        tree.add_file(&path, std::io::Cursor::new(vec![7u8; len]), len as u64, t)
            .unwrap();
    }
    let mut populated = plan_tree(tree, &layout, TimePolicy::default()).unwrap();
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    populated
        .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
        .unwrap();
    let before = disk.as_bytes().to_vec();
    match recluster(&mut disk, 512) {
        Err(ReclusterError::Refused(r @ Refusal::TooLittleSpace { need, free })) => {
            assert!(need > free);
            assert!(r.to_string().contains("free at least"), "{r}");
        }
        other => panic!("{:?}", other.map(|j| j.plan)),
    }
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn progress_counts_the_bytes_written_up_to_the_plans_total() {
    let (mut disk, want) = prefixed(32 << 20, 32 << 10, 2);
    let job = plan(&mut disk, 512).unwrap();
    let total = job.plan.as_ref().unwrap().bytes_written;
    let mut calls = Vec::new();
    run_with_progress(&mut disk, &job, &mut |d, t| calls.push((d, t))).unwrap();
    check_tree(&disk, &want).unwrap();
    assert!(calls.len() > 10, "{calls:?}");
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(calls.iter().all(|&(d, t)| t == total && d <= t));
    assert_eq!(calls.last(), Some(&(total, total)));
    // The estimate is close: most of the bytes are counted before the end.
    let before_end = calls[calls.len() - 2].0;
    assert!(before_end * 10 >= total * 8, "{before_end} of {total}");
}
