#![allow(clippy::unwrap_used)]

use super::sweep::{cut_points, Stage, Sweep};
use super::*;
use crate::MemDisk;

const BS: usize = 512;

/// Six mutating operations: two writes, a flush, a zeroing over a written
/// block, a write of two blocks, and a write with no flush after it.
fn run<D: BlockIo>(dev: &mut D) -> Result<(), IoError> {
    dev.write_blocks(0, &[1; BS])?; // op 0
    dev.write_blocks(1, &[2; BS])?; // op 1
    dev.flush()?; // op 2
    dev.write_zeroes(0, 1)?; // op 3
    dev.write_blocks(2, &[3; 2 * BS])?; // op 4
    dev.write_blocks(5, &[5; BS])?; // op 5
    Ok(())
}

fn disk() -> MemDisk {
    MemDisk::filled(512, 8, 0xD1).unwrap()
}

fn block(d: &MemDisk, i: usize) -> &[u8] {
    &d.as_bytes()[i * BS..(i + 1) * BS]
}

/// What a block holds: one of the values it may have (each block is
/// written with one byte value).
fn value(d: &MemDisk, i: usize) -> u8 {
    let b = block(d, i);
    assert!(b.iter().all(|&x| x == b[0]), "block {i} is torn inside");
    b[0]
}

#[test]
fn counting_counts_and_finds_the_flushes() {
    let mut dev = PowerCutIo::counting(disk());
    run(&mut dev).unwrap();
    assert_eq!(dev.ops_seen(), 6);
    assert_eq!(dev.flushes(), [2]);
    assert!(!dev.is_cut());
    assert_eq!(dev.pending_writes(), 3);
    // The inner device holds only what was flushed.
    assert_eq!(value(dev.inner(), 5), 0xD1);
    let all = dev.into_all_written().unwrap();
    let got: Vec<u8> = (0..8).map(|i| value(&all, i)).collect();
    assert_eq!(got, [0, 2, 3, 3, 0xD1, 5, 0xD1, 0xD1]);
}

#[test]
fn reads_before_the_cut_see_the_writes() {
    let mut dev = PowerCutIo::new(disk(), 100, 1);
    dev.write_blocks(1, &[7; 2 * BS]).unwrap();
    dev.write_zeroes(2, 1).unwrap();
    dev.write_blocks(3, &[8; BS]).unwrap();
    let mut got = vec![0; 4 * BS];
    dev.read_blocks(0, &mut got).unwrap();
    let per_block: Vec<u8> = got.chunks(BS).map(|b| b[0]).collect();
    assert_eq!(per_block, [0xD1, 7, 0, 8]);
    assert!(!dev.reads_as_zero());
    // Nothing reached the medium yet; a flush writes it through.
    assert_eq!(value(dev.inner(), 1), 0xD1);
    dev.flush().unwrap();
    assert_eq!(value(dev.inner(), 1), 7);
    assert_eq!(value(dev.inner(), 2), 0);
}

#[test]
fn flushed_writes_always_survive_and_later_ops_fail() {
    for cut_at in 3..=6 {
        for seed in 0..64 {
            let mut dev = PowerCutIo::new(disk(), cut_at, seed);
            let res = run(&mut dev);
            if cut_at < 6 {
                let err = res.unwrap_err();
                let lost = power_lost(&err).unwrap();
                assert_eq!((lost.cut_at, lost.ops_before), (cut_at, cut_at));
                assert!(dev.is_cut());
                // Everything fails from now on, reads too.
                assert!(power_lost(&dev.write_blocks(7, &[9; BS]).unwrap_err()).is_some());
                assert!(dev.flush().is_err());
                let mut b = [0; BS];
                assert!(power_lost(&dev.read_blocks(0, &mut b).unwrap_err()).is_some());
            } else {
                res.unwrap();
                assert!(!dev.is_cut(), "the job's end is not a cut by itself");
            }
            let m = dev.into_surviving().unwrap();
            // Op 1 was flushed: block 1 holds it whatever the seed.
            assert_eq!(value(&m, 1), 2, "cut {cut_at} seed {seed}");
            // Block 0: the flushed 1, or the unflushed zeroing (op 3).
            assert!(matches!(value(&m, 0), 1 | 0) && (cut_at > 3 || value(&m, 0) == 1));
            for i in [2, 3] {
                let v = value(&m, i);
                assert!(v == 0xD1 || (cut_at > 4 && v == 3), "block {i}: {v:#x}");
            }
            assert!(matches!(value(&m, 5), 0xD1 | 5));
            for i in [4, 6, 7] {
                assert_eq!(value(&m, i), 0xD1, "never written");
            }
        }
    }
}

#[test]
fn the_subset_varies_with_the_seed() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut dev = PowerCutIo::new(disk(), 6, seed);
        run(&mut dev).unwrap();
        let m = dev.into_surviving().unwrap();
        seen.insert([0, 2, 3, 5].map(|i| value(&m, i)));
    }
    // Four unflushed blocks, each kept or dropped on its own: all 16
    // combinations appear, the two halves of op 4 apart included.
    assert_eq!(seen.len(), 16, "{seen:?}");
    // The same seed gives the same medium.
    let same = |seed| {
        let mut dev = PowerCutIo::new(disk(), 6, seed);
        run(&mut dev).unwrap();
        dev.into_surviving().unwrap()
    };
    assert!(same(5) == same(5));
}

#[test]
fn zeroing_is_a_write_that_may_be_lost() {
    let (mut kept, mut lost) = (0, 0);
    for seed in 0..64 {
        let mut dev = PowerCutIo::new(disk(), 4, seed);
        assert!(run(&mut dev).is_err());
        let cut = dev.report();
        assert_eq!(cut.cut_at, Some(4));
        assert_eq!(cut.pending_writes, 1);
        assert_eq!(cut.blocks_kept + cut.blocks_dropped, 1);
        let m = dev.into_surviving().unwrap();
        match value(&m, 0) {
            0 => kept += 1,
            1 => lost += 1,
            v => panic!("block 0 holds {v:#x}"),
        }
    }
    assert!(kept > 0 && lost > 0, "kept {kept}, lost {lost}");
}

#[test]
fn two_writes_to_one_block_leave_either_or_neither() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut dev = PowerCutIo::new(disk(), 2, seed);
        dev.write_blocks(0, &[1; BS]).unwrap();
        dev.write_blocks(0, &[2; BS]).unwrap();
        seen.insert(value(&dev.into_surviving().unwrap(), 0));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 2, 0xD1]);
}

#[test]
fn invalid_requests_are_refused_before_the_cache() {
    let mut dev = PowerCutIo::counting(disk());
    assert!(dev.write_blocks(8, &[0; BS]).is_err());
    assert!(dev.write_zeroes(7, 2).is_err());
    assert!(dev.write_blocks(0, &[0; 100]).is_err());
    assert_eq!(dev.pending_writes(), 0);
}

#[test]
fn cut_points_cover_small_jobs_and_every_flush() {
    assert_eq!(cut_points(4, &[2], 10), [0, 1, 2, 3, 4]);
    let p = cut_points(1000, &[10, 500, 999], 5);
    assert_eq!(p, [0, 9, 10, 11, 250, 499, 500, 501, 750, 998, 999, 1000]);
}

#[test]
fn the_sweep_finds_a_commit_without_its_data() {
    // The commit block (0) is written in the same flush interval as its
    // data: a cut can keep the commit and lose the data.
    let job = |dev: &mut dyn BlockIo| -> Result<(), IoError> {
        dev.write_blocks(1, &[1; 2 * BS])?;
        dev.write_blocks(0, &[9; BS])?;
        dev.flush()
    };
    let check = |t: &super::sweep::Trial<'_, MemDisk>| {
        let m = t.medium.as_bytes();
        let committed = m[0] == 9;
        if committed && m[BS..3 * BS] != [1; 2 * BS] {
            return Err(format!("{:?}: committed without its data", t.stage));
        }
        Ok(committed)
    };
    let err = Sweep::new()
        .seeds(50)
        .run(&MemDisk::new(512, 4).unwrap(), job, check)
        .unwrap_err();
    assert!(err.message.contains("committed without its data"), "{err}");
    assert!(err.message.contains("before the rerun"), "{err}");
    assert_eq!(err.cut_at, 2);
    let _ = Stage::AfterRerun;
}
