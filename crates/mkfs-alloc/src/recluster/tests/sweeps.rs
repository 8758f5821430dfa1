//! exFAT to a smaller cluster size cut at every write (whole medium, many
//! directories inside an MBR partition, 4096-byte sectors): every file
//! intact before and after the same command runs again.

use super::*;

#[test]
fn power_cuts_at_every_write_leave_every_file_intact() {
    let disk = image(SIZE, OLD);
    let job = |dev: &mut dyn BlockIo| recluster(dev, 4096).map(|_| ());
    let report = Sweep::new()
        .seeds(12)
        .run(&disk, job, |t| {
            let m = match check_files(t.medium, 32 << 10) {
                Ok(m) => m,
                Err(e) if t.stage == Stage::BeforeRerun && e.contains("exFAT") => return Ok(false),
                Err(e) => return Err(e),
            };
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != 4096 || !m.findings.is_empty() {
                    return Err(format!(
                        "cluster {} findings {:?}",
                        m.geometry.cluster_size, m.findings
                    ));
                }
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("recluster sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points >= report.ops as usize);
}

/// A sweep over `shape`, 4 KiB clusters after; returns its report.
fn sweep(shape: Shape, seeds: u64) -> mkfs_alloc_blockio::powercut::sweep::SweepReport {
    let disk = shaped(shape);
    let want = shape.files();
    let job = |dev: &mut dyn BlockIo| recluster(dev, 4096).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(&disk, job, |t| {
            let m = check_tree(t.medium, &want)?;
            if t.stage == Stage::AfterRerun
                && (m.geometry.cluster_size != 4096 || !m.findings.is_empty())
            {
                return Err(format!("after the rerun: {:?}", m.findings));
            }
            Ok(true)
        })
        .unwrap()
}

#[test]
fn power_cuts_in_a_tree_of_many_directories_inside_an_mbr_partition() {
    let report = sweep(
        Shape {
            size: 16 << 20,
            cluster: 16 << 10,
            sector: 512,
            mbr: true,
            dirs: 40,
            align: 0,
        },
        4,
    );
    eprintln!("recluster sweep, MBR, many directories: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 50, "{report}");
}

#[test]
fn power_cuts_with_4096_byte_sectors() {
    let report = sweep(
        Shape {
            size: 16 << 20,
            cluster: 64 << 10,
            sector: 4096,
            mbr: false,
            dirs: 3,
            align: 0,
        },
        6,
    );
    eprintln!("recluster sweep, 4 KiB sectors: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}
