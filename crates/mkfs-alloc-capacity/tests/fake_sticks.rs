//! The probe against in-memory fake sticks of every kind, with and without a
//! device cache, and `--keep-data` restoring every byte.

#![allow(clippy::unwrap_used)]

mod common;
use common::{opts, MIB};

use mkfs_alloc_blockio::{BlockIo, MemDisk};
use mkfs_alloc_capacity::{probe, FakeKind, FakeStick, MemBackup, Phase, ProbeReport, Verdict};
use mkfs_alloc_testsupport::test_data;

const GIB: u64 = 1 << 30;

fn run(kind: FakeKind, announced: u64, real: u64, cache_blocks: usize, seed: u64) -> ProbeReport {
    let mut stick = FakeStick::new(kind, 512, announced / 512, real / 512, cache_blocks);
    let mut phases = Vec::new();
    let r = probe(&mut stick, &opts(seed), None, &mut |p| phases.push(p)).unwrap();
    assert!(phases.contains(&Phase::CacheSearch));
    assert_eq!(r.resets, stick.resets());
    assert_eq!(r.announced_bytes, announced);
    r
}

#[test]
fn genuine_sticks_are_genuine_and_written_far_less_than_their_size() {
    for (cache, seed) in [(0, 1), (64, 2), (2048, 3)] {
        let r = run(FakeKind::Genuine, 256 * MIB, 0, cache, seed);
        assert_eq!(r.verdict, Verdict::Genuine, "{r:?}");
        assert_eq!(r.real_bytes, 256 * MIB);
        assert_eq!(r.cache_bytes, None);
        assert!(r.bytes_written < 8 * MIB, "{}", r.bytes_written);
        assert!(r.speeds.is_some());
    }
}

#[test]
fn wraparound_is_found_with_its_real_size() {
    for (ann, real, cache, seed) in [
        (256 * MIB, 32 * MIB, 0, 1),
        (256 * MIB, 32 * MIB, 512, 2),
        (512 * MIB, 16 * MIB, 64, 3),
        (300 * MIB, 64 * MIB, 128, 4),
    ] {
        let r = run(FakeKind::Wraparound, ann, real, cache, seed);
        assert_eq!(
            r.verdict,
            Verdict::Wraparound,
            "{ann} {real} {cache}: {r:?}"
        );
        assert_eq!(r.real_bytes, real);
        assert_eq!(r.wrap_bytes, Some(real));
    }
}

#[test]
fn a_wrap_that_is_not_a_power_of_two_is_reported_at_the_size_it_proves() {
    // A "4 GB" stick wrapping at 3 GiB (once called genuine: no sample
    // pair collided) and a "16 GB" one wrapping at 12 GiB (once reported
    // as 4 GiB real, the power of two dividing the distance seen).
    for (ann, real, cache, seed) in [
        (4_000_000_000, 3 * GIB, 0, 1),
        (4_000_000_000, 3 * GIB, 256, 2),
        (16_000_000_000, 12 * GIB, 0, 3),
        (16_000_000_000, 12 * GIB, 1024, 4),
        (1_000_000_000, 700 * MIB + 4096, 64, 5),
    ] {
        let r = run(FakeKind::Wraparound, ann, real, cache, seed);
        assert_eq!(
            (r.verdict, r.real_bytes, r.wrap_bytes),
            (Verdict::Wraparound, real, Some(real)),
            "{ann} wrapping at {real}, cache {cache}: {r:?}"
        );
        assert!(r.bytes_written < 32 * MIB, "{}", r.bytes_written);
    }
}

#[test]
fn a_chain_whose_wrap_is_not_a_power_of_two_is_found() {
    let r = run(
        FakeKind::Chain {
            modulus: 96 * MIB / 512,
        },
        512 * MIB,
        80 * MIB,
        128,
        6,
    );
    assert_eq!(
        (r.verdict, r.real_bytes, r.wrap_bytes),
        (Verdict::Chain, 80 * MIB, Some(96 * MIB)),
        "{r:?}"
    );
}

#[test]
fn limbo_is_found_to_the_unit_even_behind_a_cache() {
    for (ann, real, cache, seed) in [
        (256 * MIB, 40 * MIB + 12288, 0, 1),
        (256 * MIB, 100 * MIB, 64, 2),
        (256 * MIB, 31 * MIB + 4096, 1000, 3),
        (1024 * MIB, 200 * MIB, 3000, 4),
    ] {
        let r = run(FakeKind::Limbo, ann, real, cache, seed);
        assert_eq!(r.verdict, Verdict::Limbo, "{real} {cache}: {r:?}");
        assert_eq!(r.real_bytes, real);
        let c = r.cache_bytes.expect("the cache search found the bad end");
        assert!(
            c <= cache as u64 * 512 + 4096 && c + 4096 >= cache as u64 * 512 / 2,
            "{c}"
        );
    }
}

#[test]
fn a_cache_bigger_than_the_search_hides_limbo_as_documented() {
    // 8 MiB of cache, search limited to 4 MiB: everything written is still
    // in the cache when it is read back, so the fake passes (the documented
    // limit, shared with f3probe's cache search).
    let r = run(FakeKind::Limbo, 256 * MIB, 32 * MIB, 16384, 5);
    assert_eq!(r.verdict, Verdict::Genuine, "{r:?}");
}

#[test]
fn chain_is_found() {
    for (cache, seed) in [(0u64, 1), (256, 2)] {
        let modulus = 64 * MIB / 512;
        let r = run(
            FakeKind::Chain { modulus },
            512 * MIB,
            48 * MIB,
            cache as usize,
            seed,
        );
        assert_eq!(r.verdict, Verdict::Chain, "{r:?}");
        assert_eq!(r.real_bytes, 48 * MIB);
        assert_eq!(r.wrap_bytes, Some(64 * MIB));
    }
}

#[test]
fn read_errors_are_damaged() {
    let r = run(
        FakeKind::Damaged {
            first: 1,
            count: 1 << 20,
        },
        256 * MIB,
        0,
        0,
        1,
    );
    assert_eq!(r.verdict, Verdict::Damaged, "{r:?}");
    assert!(r.first_error.is_some());
}

#[test]
fn every_seed_agrees() {
    for seed in 10..30 {
        let r = run(FakeKind::Wraparound, 128 * MIB, 16 * MIB, 32, seed);
        assert_eq!((r.verdict, r.real_bytes), (Verdict::Wraparound, 16 * MIB));
        let r = run(FakeKind::Limbo, 128 * MIB, 17 * MIB + 8192, 32, seed);
        assert_eq!((r.verdict, r.real_bytes), (Verdict::Limbo, 17 * MIB + 8192));
    }
}

#[test]
fn keep_data_restores_a_genuine_disk_byte_for_byte() {
    let mut disk = MemDisk::new(512, 128 * MIB / 512).unwrap();
    let orig = test_data(disk.as_bytes().len(), 0x1234_5678_9abc_def0);
    disk.write_blocks(0, &orig).unwrap();
    let mut backup = MemBackup::new();
    let r = probe(&mut disk, &opts(7), Some(&mut backup), &mut |_| {}).unwrap();
    assert_eq!(r.verdict, Verdict::Genuine);
    assert!(r.bytes_restored.unwrap() > 0);
    assert!(
        disk.as_bytes() == &orig[..],
        "the disk differs after --keep-data"
    );
}

#[test]
fn keep_data_restores_the_real_storage_of_a_wraparound_fake() {
    let real = 16 * MIB;
    let mut stick = FakeStick::new(FakeKind::Wraparound, 512, 128 * MIB / 512, real / 512, 64);
    let orig = test_data(real as usize, 0x1234_5678_9abc_def0);
    stick.write_blocks(0, &orig).unwrap();
    // Push the original out of the cache so that only the storage holds it.
    stick.write_blocks(0, &orig[..64 * 512]).unwrap();
    let mut backup = MemBackup::new();
    let r = probe(&mut stick, &opts(8), Some(&mut backup), &mut |_| {}).unwrap();
    assert_eq!(r.verdict, Verdict::Wraparound);
    let mut back = vec![0u8; real as usize];
    stick.read_blocks(0, &mut back).unwrap();
    assert!(back == orig, "the real storage differs after --keep-data");
}

#[test]
fn a_second_run_sees_the_first_runs_blocks_as_stale_not_good() {
    let mut stick = FakeStick::new(FakeKind::Limbo, 512, 256 * MIB / 512, 24 * MIB / 512, 100);
    for seed in [40, 41] {
        let r = probe(&mut stick, &opts(seed), None, &mut |_| {}).unwrap();
        assert_eq!(
            (r.verdict, r.real_bytes),
            (Verdict::Limbo, 24 * MIB),
            "{r:?}"
        );
    }
    let mut stick = FakeStick::new(
        FakeKind::Wraparound,
        512,
        256 * MIB / 512,
        32 * MIB / 512,
        100,
    );
    for seed in [42, 43] {
        let r = probe(&mut stick, &opts(seed), None, &mut |_| {}).unwrap();
        assert_eq!(
            (r.verdict, r.real_bytes),
            (Verdict::Wraparound, 32 * MIB),
            "{r:?}"
        );
    }
}

/// Real storage of at most twice the cache search's length (4 MiB here):
/// the end of a wraparound fake reads back, so the whole search length is
/// the flush, and the bisect's filler shares cells a multiple of the wrap
/// apart instead of needing twice that at the start. Every seed, with and
/// without a device cache, agrees on the exact size.
#[test]
fn a_real_size_within_twice_the_cache_search_is_found() {
    for (kind, ann, real, wrap) in [
        (FakeKind::Wraparound, 32 * MIB, 4 * MIB, Some(4 * MIB)),
        (FakeKind::Wraparound, 64 * MIB, 8 * MIB, Some(8 * MIB)),
        (FakeKind::Wraparound, 64 * MIB, 2 * MIB, Some(2 * MIB)),
        (FakeKind::Wraparound, 128 * MIB, 6 * MIB, Some(6 * MIB)),
        (
            FakeKind::Chain {
                modulus: 8 * MIB / 512,
            },
            64 * MIB,
            6 * MIB,
            Some(8 * MIB),
        ),
        (FakeKind::Limbo, 64 * MIB, 6 * MIB, None),
    ] {
        for (cache, seed) in [(0, 1), (64, 2), (512, 3), (0, 4), (64, 5)] {
            let r = run(kind, ann, real, cache, seed);
            let want = match kind {
                FakeKind::Wraparound => Verdict::Wraparound,
                FakeKind::Chain { .. } => Verdict::Chain,
                _ => Verdict::Limbo,
            };
            assert_eq!(
                (r.verdict, r.real_bytes, r.wrap_bytes),
                (want, real, wrap),
                "{kind:?} {ann} storing {real}, cache {cache}, seed {seed}: {r:?}"
            );
        }
    }
}
