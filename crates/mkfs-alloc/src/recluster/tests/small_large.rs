//! FAT16 and FAT12 re-clustered to a larger size (`fat/small_coarse.rs`),
//! on volumes our formatter makes and fills (one file fragmented by hand):
//! the plan's geometry, the whole job read by the model and the `fatfs`
//! crate, the refusals with the target unchanged, and power-cut sweeps.

use super::small::{cut_everywhere, refused, set_entry, small, small_with, sweep_small, whole_job};
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

#[test]
fn a_larger_fat16_recluster_keeps_every_file_and_runs_again_as_nothing() {
    whole_job(FsKind::Fat16, F16, (512, 2048));
    whole_job(FsKind::Fat16, F16, (512, 1024));
}

#[test]
fn a_larger_fat12_recluster_keeps_every_file_and_runs_again_as_nothing() {
    whole_job(FsKind::Fat12, F12, (512, 2048));
    whole_job(FsKind::Fat12, 3 << 20, (1024, 4096));
}

#[test]
fn larger_small_fat_refusals_say_why_and_write_nothing() {
    // 8 MiB at 512 bytes is FAT16 (16,000 clusters); at 4 KiB 2,000: FAT12.
    let (mut disk, _) = small(FsKind::Fat16, 8 << 20, 512, 0);
    let before = disk.as_bytes().to_vec();
    match refused(recluster(&mut disk, 4096)) {
        Refusal::Fat(r @ FatRefusal::WidthChange { kind, from, .. }) => {
            assert_eq!((from, kind), (FsKind::Fat16, FsKind::Fat12));
            assert!(r.to_string().contains("convert"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    for c in [3072, 128 << 10] {
        assert!(
            matches!(
                refused(recluster(&mut disk, c)),
                Refusal::InvalidSize { .. }
            ),
            "{c}"
        );
    }
    assert!(disk.as_bytes() == &before[..]);
    // A FAT12 filled to the brim: too little space, saying how much.
    let (mut disk, _) = small(FsKind::Fat12, 1 << 20, 512, 0);
    fill(&mut disk);
    let before = disk.as_bytes().to_vec();
    match refused(recluster(&mut disk, 2048)) {
        r @ Refusal::TooLittleSpace { need, free } => {
            assert!(
                need > free && r.to_string().contains("free at least"),
                "{r}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(disk.as_bytes() == &before[..]);
}

/// One file over every free cluster but one in 64 (in the root region).
fn fill(disk: &mut MemDisk) {
    let (m, _) = model_of(disk).unwrap();
    let g = m.geometry.clone();
    let chain: Vec<u32> = (2..=g.cluster_count + 1)
        .filter(|&c| !m.used.get(c) && c % 64 != 0)
        .collect();
    let RootDir::Fixed { offset, entries } = g.root else {
        panic!("not FAT12/16");
    };
    let at = (0..u64::from(entries))
        .map(|i| offset + i * 32)
        .find(|&at| read(disk, at, 1)[0] == 0)
        .unwrap();
    let mut e = [0u8; 32];
    e[..11].copy_from_slice(b"FILL    BIN");
    e[26..28].copy_from_slice(&u16::try_from(chain[0]).unwrap().to_le_bytes());
    let size = u32::try_from(chain.len() as u64 * g.cluster_size).unwrap();
    e[28..32].copy_from_slice(&size.to_le_bytes());
    patch(disk, at, &e);
    for (i, &c) in chain.iter().enumerate() {
        set_entry(disk, &g, c, chain.get(i + 1).copied().unwrap_or(0xFFF));
    }
    assert!(!model_of(disk).unwrap().0.refused());
}

#[test]
fn larger_fat16_power_cuts_at_every_write_leave_every_file_intact() {
    // 100 files in 54 directories (CI time: one seed).
    let (disk, want) = small(FsKind::Fat16, F16, 512, 40);
    let t = std::time::Instant::now();
    let report = sweep_small(&disk, &want, 2048, 1);
    eprintln!(
        "larger FAT16 recluster sweep: {report} in {:?}",
        t.elapsed()
    );
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 100, "{report}");
}

#[test]
fn larger_fat12_power_cuts_at_every_write_leave_every_file_intact() {
    let (disk, want) = small(FsKind::Fat12, F12, 512, 60);
    let t = std::time::Instant::now();
    let report = sweep_small(&disk, &want, 2048, 1);
    eprintln!(
        "larger FAT12 recluster sweep: {report} in {:?}",
        t.elapsed()
    );
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 100, "{report}");
}

#[test]
fn a_cut_larger_fat12_job_is_named_redone_and_finished() {
    cut_everywhere(FsKind::Fat12, F12, (512, 2048), 1024);
}

/// A FAT12 of 2 MiB at 512 bytes holding `/big.bin` (96 KiB) and the test
/// tree, `/big.bin` then deleted (entries marked, chain freed): free
/// clusters early in the data region.
fn with_hole() -> (MemDisk, Vec<(String, usize)>) {
    let mut want = vec![("/big.bin".to_string(), 96 << 10)];
    want.extend(files_in(512, 20));
    let mut disk = small_with(
        FsKind::Fat12,
        F12,
        512,
        &want,
        mkfs_alloc_partition::TableKind::None,
    );
    let (m, sets) = model_of(&disk).unwrap();
    let g = m.geometry.clone();
    let big = sets.iter().find(|s| s.path == "/big.bin").unwrap();
    for i in 0..u64::from(big.at.entries) {
        patch(&mut disk, big.at.offset + 32 * i, &[0xE5]);
    }
    let mut c = big.first_cluster;
    for _ in 0..big.clusters {
        let next = super::small::entry(&disk, &g, 0, c);
        set_entry(&mut disk, &g, c, 0);
        c = next;
    }
    want.remove(0);
    (disk, want)
}

#[test]
fn files_past_a_free_start_keep_their_place_through_every_cut() {
    let (disk, want) = with_hole();
    let p = plan(&mut disk.clone(), 2048).unwrap().plan.unwrap();
    let c = p.coarse.clone().unwrap();
    eprintln!("{:?}\n{c:?}", p.fat);
    assert!(c.files_kept > 0, "{c:?}");
    let t = std::time::Instant::now();
    let report = sweep_small(&disk, &want, 2048, 3);
    eprintln!(
        "larger FAT12 with kept files: {report} in {:?}",
        t.elapsed()
    );
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 50, "{report}");
}
