//! FAT32 to exFAT at another cluster size in one job (`convert
//! --cluster`): the whole job, its refusals before the first write, and a
//! power-cut sweep over both parts whose every trial holds every file and
//! whose rerun finishes both.

use super::fat::fat32;
use super::*;
use crate::recluster::convert::{self, NewCluster};

fn refused(r: Result<convert::ConvertJob, ReclusterError>) -> ReclusterError {
    match r {
        Err(e) => e,
        Ok(j) => panic!("not refused: {:?}", j.conversion.step),
    }
}

#[test]
fn a_conversion_to_a_larger_cluster_keeps_every_file() {
    let (mut disk, want) = fat32(42 << 20, 512, 3, None);
    let job = convert::plan_with(&mut disk, NewCluster::Size(4096)).unwrap();
    assert_eq!(job.conversion.step, Step::Start);
    let r = job.recluster.as_ref().unwrap();
    assert_eq!(r.step, Step::Start);
    let p = r.plan.as_ref().unwrap();
    assert_eq!((p.old.cluster_size, p.new.cluster_size), (512, 4096));
    assert!(job.bytes_written() > job.conversion.plan.as_ref().unwrap().bytes_written);
    convert::run_with(&mut disk, &job).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.kind, FsKind::Exfat);
    assert_eq!(m.geometry.cluster_size, 4096);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    let again = convert::plan_with(&mut disk, NewCluster::Size(4096)).unwrap();
    assert!(again.is_done());
    // An exFAT volume at another size: the re-cluster alone.
    let job = convert::convert_with(&mut disk, NewCluster::Size(8192)).unwrap();
    assert_eq!(job.conversion.step, Step::Nothing);
    assert_eq!(
        check_tree(&disk, &want).unwrap().geometry.cluster_size,
        8192
    );
}

#[test]
fn a_conversion_to_a_smaller_cluster_keeps_every_file() {
    let (mut disk, want) = fat32(72 << 20, 1024, 3, None);
    convert::convert_with(&mut disk, NewCluster::Size(512)).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(
        (m.geometry.kind, m.geometry.cluster_size),
        (FsKind::Exfat, 512)
    );
    assert!(m.findings.is_empty(), "{:?}", m.findings);
}

#[test]
fn a_refused_cluster_size_writes_nothing() {
    let (mut disk, _) = fat32(42 << 20, 512, 0, None);
    let before = disk.as_bytes().to_vec();
    // Not a power of two; then past exFAT's largest size.
    for c in [3000, 64 << 20] {
        let e = refused(convert::convert_with(&mut disk, NewCluster::Size(c)));
        assert!(matches!(e, ReclusterError::Refused(_)), "{c}: {e}");
        assert!(disk.as_bytes() == &before[..], "{c}");
    }
}

/// The sweep: every trial holds every file (FAT32 or exFAT at either
/// size), and its rerun is a clean exFAT volume at the size asked.
fn sweep(disk: &MemDisk, want: &[(String, usize)], cluster: u64, seeds: u64) -> SweepReport {
    let job = move |dev: &mut dyn BlockIo| {
        convert::convert_with(dev, NewCluster::Size(cluster)).map(|_| ())
    };
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = check_tree(t.medium, want)?;
            if t.stage == Stage::AfterRerun {
                let g = &m.geometry;
                if g.kind != FsKind::Exfat || g.cluster_size != cluster || !m.findings.is_empty() {
                    return Err(format!(
                        "after the rerun: {:?} at {}: {:?}",
                        g.kind, g.cluster_size, m.findings
                    ));
                }
            }
            Ok(true)
        })
        .unwrap()
}

use mkfs_alloc_blockio::powercut::sweep::SweepReport;

#[test]
fn power_cuts_anywhere_in_a_conversion_and_its_recluster_leave_every_file_intact() {
    let (disk, want) = fat32(42 << 20, 512, 6, None);
    let report = sweep(&disk, &want, 4096, 1);
    eprintln!("FAT32 512 B to exFAT 4 KiB sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 60, "{report}");
}
