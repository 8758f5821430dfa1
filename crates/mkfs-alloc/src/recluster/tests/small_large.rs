//! FAT16 and FAT12 re-clustered to a larger size (`fat/small_coarse.rs`),
//! on volumes our formatter makes and fills (one file fragmented by hand):
//! the plan's geometry, the whole job read by the model and the `fatfs`
//! crate, the refusals with the target unchanged, and power-cut sweeps.

use super::small::{check_fatfs, check_small, refused, small, sweep_small};
use super::*;

/// 16 MiB at 512 bytes: about 32,600 clusters; 8,100 at 2 KiB (FAT16).
const F16: u64 = 16 << 20;
/// 2 MiB at 512 bytes: about 4,000 clusters; 1,000 at 2 KiB (FAT12).
const F12: u64 = 2 << 20;

#[test]
fn the_larger_plan_starts_the_data_region_whole_groups_in_past_free_clusters() {
    for (kind, size, to) in [(FsKind::Fat16, F16, 2048), (FsKind::Fat12, F12, 2048)] {
        let (mut disk, want) = small(kind, size, 512, 2);
        let (m, _) = model_of(&disk).unwrap();
        assert_eq!(m.geometry.kind, kind);
        let job = plan(&mut disk, to).unwrap();
        assert_eq!(job.step, Step::Start);
        let p = job.plan.unwrap();
        let (f, c) = (p.fat.clone().unwrap(), p.coarse.clone().unwrap());
        eprintln!("{:?}\n{:?}\n{f:?}\n{c:?}", p.old, p.new);
        assert_eq!(c.group, 4);
        assert_eq!(f.covered % 4, 0);
        assert_eq!(p.new.heap_offset, p.old.heap_offset + f.covered * 512);
        // The FATs and the root region (512 entries) end where data starts.
        assert_eq!(
            p.new.fat_offset + 2 * p.new.fat_bytes + 32 * 512,
            p.new.heap_offset
        );
        assert!(p.new.fat_offset > p.old.heap_offset);
        assert_eq!(u64::from(f.reserved.1) * 512, p.new.fat_offset);
        assert_eq!(FsKind::fat_width(u64::from(p.new.cluster_count)), kind);
        assert_eq!(p.files, want.len() as u64);
        assert_eq!(c.files_kept + c.files_moved + 1, p.files, "one empty file");
    }
}

/// Runs the whole job on a FAT volume of `kind` and checks its result.
fn whole_job(kind: FsKind, size: u64, from: u64, to: u64) {
    let (mut disk, want) = small(kind, size, from, 3);
    let job = recluster(&mut disk, to).unwrap();
    let p = job.plan.unwrap();
    let m = check_small(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, to);
    assert_eq!(m.geometry.kind, kind);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    check_fatfs(&disk, &want).unwrap();
    let free = u64::from(m.geometry.cluster_count) - m.used.count_set();
    assert_eq!(free * to, p.free_after);
    // Both records are zeroed; running again is nothing to do.
    let rsvd = (m.geometry.fat_offset - m.geometry.start) / 512;
    assert!(read(&disk, (rsvd - 1) * 512, 512).iter().all(|&b| b == 0));
    assert_eq!(plan(&mut disk, to).unwrap().step, Step::Nothing);
}

#[test]
fn a_larger_fat16_recluster_keeps_every_file_and_runs_again_as_nothing() {
    whole_job(FsKind::Fat16, F16, 512, 2048);
    whole_job(FsKind::Fat16, F16, 512, 1024);
}

#[test]
fn a_larger_fat12_recluster_keeps_every_file_and_runs_again_as_nothing() {
    whole_job(FsKind::Fat12, F12, 512, 2048);
    whole_job(FsKind::Fat12, 3 << 20, 1024, 4096);
}
