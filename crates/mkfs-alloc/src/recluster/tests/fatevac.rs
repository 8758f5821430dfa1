//! FAT32 to a smaller cluster size on a volume filled from its start past
//! the reach of the 16-bit reserved sector count: the evacuation moves the
//! clusters in use where the new FATs go first, in the old volume; every
//! power cut, rerun, holds every file byte for byte.

use super::fat::{check_fatfs, fat32_with, fat_contents};
use super::*;

/// 72 MiB at 1 KiB clusters, `n` files of 100 KiB from the start (375:
/// past the 32 MiB that 65,535 reserved sectors reach).
fn filled(n: usize) -> (MemDisk, Vec<(String, usize)>) {
    let more: Vec<(String, usize)> = (0..n)
        .map(|i| {
            (
                format!("/fill/a file of the fill {i:03}.bin"),
                100 << 10 | i,
            )
        })
        .collect();
    let mut want = files_in(1024, 2);
    want.extend(more);
    (fat32_with(72 << 20, 1024, &want, None), want)
}

/// `want`'s bytes, made once.
fn expected(want: &[(String, usize)]) -> BTreeMap<String, Vec<u8>> {
    want.iter()
        .map(|(p, len)| (p.clone(), content(p, *len)))
        .collect()
}

/// Whether `disk` holds exactly `want` (through the FAT's chains).
fn holds(disk: &MemDisk, want: &BTreeMap<String, Vec<u8>>) -> Result<VolumeModel, String> {
    let (m, got) = fat_contents(disk)?;
    if &got != want {
        let bad = want.keys().find(|k| got.get(*k) != want.get(*k));
        return Err(format!(
            "{bad:?} differs or is missing ({} files)",
            got.len()
        ));
    }
    Ok(m)
}

#[test]
fn a_volume_filled_past_the_reach_is_evacuated_then_reclustered() {
    let (mut disk, want) = filled(375);
    let exp = expected(&want);
    let job = plan(&mut disk, 512).unwrap();
    assert_eq!(job.step, Step::Start);
    let p = job.plan.clone().unwrap();
    let f = p.fat.clone().unwrap();
    eprintln!("{:?}\n{:?}\n{f:?} moved {}", p.old, p.new, p.clusters_moved);
    // The first free run is past the reach: the window is evacuated.
    assert!(f.evacuated > 1000, "{f:?}");
    assert!(f.reserved.1 <= 65_535);
    recluster(&mut disk, 512).unwrap();
    let m = holds(&disk, &exp).unwrap();
    assert_eq!(m.geometry.cluster_size, 512);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    check_fatfs(&disk, &want).unwrap();
    assert_eq!(plan(&mut disk, 512).unwrap().step, Step::Nothing);
}

/// The sweep runs on 4 MiB of files: the first free run is within reach,
/// but freeing the window right after the old FATs moves fewer clusters
/// than covering all of them, so the same evacuation runs (and each trial
/// is quick).
#[test]
fn evacuation_power_cuts_leave_every_file_intact_and_the_rerun_finishes() {
    let (mut disk, want) = filled(40);
    let f = plan(&mut disk, 512).unwrap().plan.unwrap().fat.unwrap();
    assert!(f.evacuated > 1000, "{f:?}");
    let exp = expected(&want);
    let job = |dev: &mut dyn BlockIo| recluster(dev, 512).map(|_| ());
    let report = Sweep::new()
        .seeds(2)
        .max_points(300)
        .run(&disk, job, |t| {
            let m = holds(t.medium, &exp)?;
            if t.stage == Stage::AfterRerun
                && (m.geometry.cluster_size != 512 || !m.findings.is_empty())
            {
                return Err(format!("after the rerun: {:?}", m.findings));
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("FAT32 evacuation sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 200, "{report}");
}
