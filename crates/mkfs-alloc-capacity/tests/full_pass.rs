//! `probe_full`: every block written and read back, against in-memory fakes
//! of every kind, including the ones sampling cannot prove (a wrap that is
//! not a power of two, a controller that keeps only the blocks written
//! last).

#![allow(clippy::unwrap_used)]

mod common;
use common::{opts, MIB};

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_capacity::{
    probe, probe_full, FakeKind, FakeStick, Mode, Phase, ProbeReport, Verdict,
};

/// A full pass over a fake; checks the progress calls on the way.
fn full(kind: FakeKind, announced: u64, real: u64, cache_blocks: usize) -> ProbeReport {
    let mut stick = FakeStick::new(kind, 512, announced / 512, real / 512, cache_blocks);
    let mut calls: Vec<(Phase, u64, u64)> = Vec::new();
    let r = probe_full(&mut stick, &opts(1), &mut |p, d, t| calls.push((p, d, t))).unwrap();
    assert_eq!(r.mode, Mode::Full);
    assert_eq!(r.announced_bytes, announced);
    // Every block written once, read once (the random IOPS writes aside).
    assert!(r.bytes_written >= announced && r.bytes_read >= announced);
    let last_write = calls.iter().rfind(|c| c.0 == Phase::Write).unwrap();
    let last_read = calls.iter().rfind(|c| c.0 == Phase::Verify).unwrap();
    assert_eq!((last_write.1, last_read.1), (announced, announced));
    let first_verify = calls.iter().position(|c| c.0 == Phase::Verify).unwrap();
    assert!(calls[..first_verify].iter().all(|c| c.0 == Phase::Write));
    assert!(calls
        .windows(2)
        .all(|w| w[0].0 != w[1].0 || w[0].1 <= w[1].1));
    r
}

#[test]
fn a_genuine_device_is_genuine_every_block_tested() {
    let mut disk = MemDisk::new(512, 24 * MIB / 512).unwrap();
    let r = probe_full(&mut disk, &opts(2), &mut |_, _, _| {}).unwrap();
    assert_eq!((r.verdict, r.real_bytes), (Verdict::Genuine, 24 * MIB));
    assert_eq!(r.bad_bytes, Some(0));
    let s = r.speeds.unwrap();
    assert_eq!(s.seq_bytes, 24 * MIB);
    assert!(s.seq_write_bytes_per_sec > 0.0 && s.random_write_iops.is_some());
    let r = full(FakeKind::Genuine, 8 * MIB, 0, 100);
    assert_eq!(r.verdict, Verdict::Genuine);
}

#[test]
fn wraps_that_are_not_powers_of_two_are_measured_exactly() {
    // "4 GB" wrapping at 3 GiB and "16 GB" at 12 GiB, scaled down; the
    // size is not a multiple of 4 KiB, so the unit shrinks and every block
    // is still tested.
    for (ann, real, cache) in [
        (40_000_000, 30 * MIB, 0),
        (160_000_000, 120 * MIB, 64),
        (64 * MIB, 24 * MIB + 4096, 0),
    ] {
        let r = full(FakeKind::Wraparound, ann, real, cache);
        assert_eq!(
            (r.verdict, r.real_bytes, r.wrap_bytes),
            (Verdict::Wraparound, real, Some(real)),
            "{ann} {real}: {r:?}"
        );
        assert_eq!(r.bad_bytes, Some(ann - real));
    }
}

#[test]
fn limbo_and_chain_are_found_to_the_block() {
    let r = full(FakeKind::Limbo, 48 * MIB, 20 * MIB + 8192, 2048);
    assert_eq!((r.verdict, r.real_bytes), (Verdict::Limbo, 20 * MIB + 8192));
    let r = full(
        FakeKind::Chain {
            modulus: 24 * MIB / 512,
        },
        64 * MIB,
        16 * MIB,
        0,
    );
    assert_eq!(
        (r.verdict, r.real_bytes, r.wrap_bytes),
        (Verdict::Chain, 16 * MIB, Some(24 * MIB))
    );
}

#[test]
fn a_controller_keeping_only_the_last_blocks_passes_sampling_but_not_the_full_pass() {
    // Nothing stored beyond the first block but a 16 MiB cache of the
    // blocks written last, answering reads after every reset: an FTL that
    // recycles its oldest blocks. Sampling (4 MiB cache search) reads back
    // everything it wrote; the full pass does not.
    let mut stick = FakeStick::new(FakeKind::Limbo, 512, 128 * MIB / 512, 1, 32768);
    let r = probe(&mut stick, &opts(3), None, &mut |_| {}).unwrap();
    assert_eq!((r.verdict, r.mode), (Verdict::Genuine, Mode::Sampling));
    let r = full(FakeKind::Limbo, 128 * MIB, 512, 32768);
    assert_eq!((r.verdict, r.real_bytes), (Verdict::Damaged, 0), "{r:?}");
    assert_eq!(r.bad_bytes, Some(112 * MIB));
}

#[test]
fn unreadable_blocks_are_damaged_and_named() {
    let r = full(
        FakeKind::Damaged {
            first: 20480,
            count: 16,
        },
        32 * MIB,
        0,
        0,
    );
    assert_eq!((r.verdict, r.real_bytes), (Verdict::Damaged, 10 * MIB));
    assert_eq!(r.bad_bytes, Some(8192));
    assert!(r.first_error.is_some());
}
