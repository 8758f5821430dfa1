//! The `--keep-data` journal after a crash: every intact record restored
//! past damaged ones, a journal cut short, a device the journal did not
//! come from refused before any write, repeated and interrupted restores on
//! a fake whose addresses share storage, version-1 journals, and a journal
//! disk that fills up.
//!
//! A crash is a pulled stick: `FaultyIo` with `Fault::StopAfter(k)` lets the
//! first `k` mutating operations through and fails everything after, so the
//! device keeps the test blocks written before and the probe's own restore
//! fails, leaving the journal as a crash does.

#![allow(clippy::unwrap_used)]

mod common;
use common::{opts, MIB};

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use mkfs_alloc_blockio::{BlockIo, Fault, FaultyIo, IoError, MemDisk};
use mkfs_alloc_capacity::{
    probe, restore_journal, Backup, DeviceIdentity, FakeKind, FakeStick, Journal, JournalStatus,
    Loaded, LostRecord, MemBackup, ProbeError, ProbeTarget, Record, Refusal, RunInfo,
};
use mkfs_alloc_ondisk::rng::SplitMix64;
use mkfs_alloc_testsupport::TempDir;

/// Size of the test disks.
const DISK: usize = 16 << 20;
const UNIT: u64 = 4096;
/// Where record `i` of a version-2 journal starts, and its length.
const RECORDS_AT: u64 = 1536;
const RECORD_LEN: u64 = 24 + UNIT;

/// `len` bytes of seeded random data (fast in debug builds too).
fn test_data(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A device that can be pulled mid-probe.
struct Pulled<D: BlockIo>(FaultyIo<D>);

impl<D: BlockIo> BlockIo for Pulled<D> {
    fn block_size(&self) -> u32 {
        self.0.block_size()
    }
    fn num_blocks(&self) -> u64 {
        self.0.num_blocks()
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.0.read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.0.write_blocks(lba, src)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.0.flush()
    }
}

impl<D: BlockIo> ProbeTarget for Pulled<D> {
    fn reset(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

fn id(serial: &str) -> DeviceIdentity {
    DeviceIdentity {
        serial: Some(serial.into()),
        model: Some("Fake Stick".into()),
        path: Some("/dev/fake".into()),
    }
}

/// Runs a `--keep-data` probe with a journal at `j` on `dev`, pulling the
/// stick after `k` mutating operations; returns the device as left.
fn crash<D: BlockIo>(dev: D, k: u64, j: &Path, seed: u64) -> D {
    let mut journal = Journal::create(j, id("A1")).unwrap();
    let mut pulled = Pulled(FaultyIo::new(dev, Fault::StopAfter(k)));
    let err = probe(&mut pulled, &opts(seed), Some(&mut journal), &mut |_| {}).unwrap_err();
    assert!(matches!(err, ProbeError::Io(_)), "{err:?}");
    pulled.0.into_inner()
}

/// A 16 MiB disk of random data, and the same after a crashed probe.
fn crashed_disk(j: &Path) -> (Vec<u8>, MemDisk) {
    let orig = test_data(DISK, 0x5eed);
    let disk = MemDisk::from_vec(512, orig.clone()).unwrap();
    let disk = crash(disk, 40, j, 11);
    assert_ne!(disk.as_bytes(), &orig[..], "the crash left no test blocks");
    (orig, disk)
}

/// Units of the device that differ from `orig`.
fn changed(orig: &[u8], now: &[u8]) -> Vec<u64> {
    (0..orig.len() as u64 / UNIT)
        .filter(|&u| {
            let r = (u * UNIT) as usize..((u + 1) * UNIT) as usize;
            orig[r.clone()] != now[r]
        })
        .collect()
}

fn flip(j: &Path, at: u64) {
    let mut f = OpenOptions::new().read(true).write(true).open(j).unwrap();
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(at)).unwrap();
    std::io::Read::read_exact(&mut f, &mut b).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&[b[0] ^ 0x10]).unwrap();
}

/// The unit of every record of the journal at `j`.
fn units_of(j: &Path) -> Vec<u64> {
    let mut journal = Journal::open(j).unwrap();
    let mut data = vec![0u8; UNIT as usize];
    (0..journal.committed())
        .map(|i| match journal.read_record(i, &mut data).unwrap() {
            Record::Intact(u) => u,
            other => panic!("record {i}: {other:?}"),
        })
        .collect()
}

#[test]
fn every_intact_record_is_restored_past_damaged_ones() {
    let dir = TempDir::new("journal-damaged");
    let j = dir.join("j");
    let (orig, mut disk) = crashed_disk(&j);
    let units = units_of(&j);
    assert!(units.len() > 20);
    // One flipped byte in the data of record 5, one in the head of record 9.
    flip(&j, RECORDS_AT + 5 * RECORD_LEN + 24 + 1000);
    flip(&j, RECORDS_AT + 9 * RECORD_LEN + 9);
    let mut journal = Journal::open(&j).unwrap();
    let r = restore_journal(&mut disk, &mut journal, &id("A1")).unwrap();
    assert!(!r.complete());
    assert_eq!(r.records, units.len() as u64);
    assert_eq!(r.restored, units.len() as u64 - 2);
    assert_eq!(
        r.lost,
        vec![
            LostRecord {
                index: 5,
                range: Some((units[5] * UNIT, UNIT))
            },
            LostRecord {
                index: 9,
                range: None
            },
        ]
    );
    assert_eq!(r.lost_ranges(), vec![(units[5] * UNIT, UNIT)]);
    // Everything else is back.
    let left: Vec<u64> = changed(&orig, disk.as_bytes());
    assert!(
        left.iter().all(|u| *u == units[5] || *u == units[9]),
        "{left:?}"
    );
}

#[test]
fn a_journal_cut_short_restores_what_it_holds_and_counts_the_rest() {
    let dir = TempDir::new("journal-short");
    let j = dir.join("j");
    let (orig, mut disk) = crashed_disk(&j);
    let units = units_of(&j);
    let f = OpenOptions::new().write(true).open(&j).unwrap();
    f.set_len(RECORDS_AT + 12 * RECORD_LEN + 100).unwrap();
    drop(f);
    let mut journal = Journal::open(&j).unwrap();
    let r = restore_journal(&mut disk, &mut journal, &id("A1")).unwrap();
    assert_eq!((r.records, r.restored), (units.len() as u64, 12));
    assert_eq!(r.lost_unknown(), units.len() as u64 - 12);
    assert!(r.lost.iter().map(|l| l.index).eq(12..units.len() as u64));
    let left = changed(&orig, disk.as_bytes());
    assert!(left.iter().all(|u| units[12..].contains(u)), "{left:?}");
}

#[test]
fn records_after_the_last_commit_are_ignored() {
    let dir = TempDir::new("journal-torn");
    let j = dir.join("j");
    let (orig, mut disk) = crashed_disk(&j);
    // A record torn by the crash, after the last commit.
    let mut f = OpenOptions::new().append(true).open(&j).unwrap();
    f.write_all(&[7u8; 3000]).unwrap();
    drop(f);
    let mut journal = Journal::open(&j).unwrap();
    let r = restore_journal(&mut disk, &mut journal, &id("A1")).unwrap();
    assert!(r.complete(), "{r:?}");
    assert!(disk.as_bytes() == &orig[..]);
    // Finished: the state says so.
    journal.mark_restored().unwrap();
    assert_eq!(Journal::status(&j), JournalStatus::Restored);
}

#[test]
fn a_device_the_journal_did_not_come_from_is_refused_before_any_write() {
    let dir = TempDir::new("journal-other");
    let j = dir.join("j");
    let (_, mut disk) = crashed_disk(&j);
    let refused = |dev: &mut dyn BlockIo, who: &DeviceIdentity| {
        let mut journal = Journal::open(&j).unwrap();
        match restore_journal(dev, &mut journal, who) {
            Err(ProbeError::Refused(r)) => r,
            other => panic!("{other:?}"),
        }
    };
    // Another device of the same size and no identity: its blocks hold
    // neither the run's test blocks nor the saved data.
    let other_data = test_data(DISK, 0x07e4);
    let mut other = MemDisk::from_vec(512, other_data.clone()).unwrap();
    let r = refused(&mut other, &DeviceIdentity::default());
    assert!(
        matches!(r, Refusal::Foreign { count, checked, .. } if count == checked),
        "{r}"
    );
    assert!(other.as_bytes() == &other_data[..]);
    // The right content but another serial.
    let before = disk.as_bytes().to_vec();
    let r = refused(&mut disk, &id("B2"));
    assert!(
        matches!(
            r,
            Refusal::Identity {
                field: "serial",
                ..
            }
        ),
        "{r}"
    );
    // Another size, another block size.
    let mut small = MemDisk::new(512, (DISK / 2 / 512) as u64).unwrap();
    assert!(matches!(
        refused(&mut small, &id("A1")),
        Refusal::Size { .. }
    ));
    let mut big_blocks = MemDisk::from_vec(4096, before.clone()).unwrap();
    assert!(matches!(
        refused(&mut big_blocks, &id("A1")),
        Refusal::BlockSize { .. }
    ));
    // The right device, written to since: one block to restore changed.
    let u = units_of(&j)[3];
    disk.write_blocks(u * UNIT / 512, &[0x42; 512]).unwrap();
    let r = refused(&mut disk, &id("A1"));
    assert!(
        matches!(r, Refusal::Foreign { count: 1, first_offset, .. } if first_offset == u * UNIT)
    );
    let mut now = before;
    now[(u * UNIT) as usize..(u * UNIT) as usize + 512].fill(0x42);
    assert!(disk.as_bytes() == &now[..], "a refused restore wrote");
}

#[test]
fn restores_repeat_and_survive_interruption_on_a_fake_whose_addresses_share_storage() {
    let dir = TempDir::new("journal-fake");
    let real = 8 * MIB;
    let orig = test_data(real as usize, 0xfa4e);
    let new_stick = || {
        let mut s = FakeStick::new(FakeKind::Wraparound, 512, 64 * MIB / 512, real / 512, 0);
        s.write_blocks(0, &orig).unwrap();
        s
    };
    let storage = |s: &mut FakeStick| {
        let mut b = vec![0u8; real as usize];
        s.read_blocks(0, &mut b).unwrap();
        b
    };
    // How many mutating operations a whole probe takes.
    let mut count = Pulled(FaultyIo::new(new_stick(), Fault::Never));
    probe(
        &mut count,
        &opts(21),
        Some(&mut MemBackup::new()),
        &mut |_| {},
    )
    .unwrap();
    let ops = count.0.ops_seen();
    for k in [ops / 3, ops * 3 / 4] {
        let j = dir.join(&format!("j{k}"));
        let stick = crash(new_stick(), k, &j, 21);
        // A restore that is itself interrupted, then a whole one, then
        // another: each time the storage ends as it was.
        let mut failing = FaultyIo::new(stick, Fault::StopAfter(5));
        let mut journal = Journal::open(&j).unwrap();
        let e = restore_journal(&mut failing, &mut journal, &id("A1")).unwrap_err();
        assert!(matches!(e, ProbeError::Io(_)), "{e:?}");
        let mut stick = failing.into_inner();
        for _ in 0..2 {
            let mut journal = Journal::open(&j).unwrap();
            let r = restore_journal(&mut stick, &mut journal, &id("A1")).unwrap();
            assert!(r.complete(), "k {k}: {r:?}");
            assert!(storage(&mut stick) == orig, "k {k}: the storage differs");
        }
    }
}

#[test]
fn a_version_1_journal_is_still_restored() {
    let dir = TempDir::new("journal-v1");
    let orig = test_data(DISK, 0x1111);
    let mut backup = MemBackup::new();
    let mut pulled = Pulled(FaultyIo::new(
        MemDisk::from_vec(512, orig.clone()).unwrap(),
        Fault::StopAfter(40),
    ));
    probe(&mut pulled, &opts(31), Some(&mut backup), &mut |_| {}).unwrap_err();
    let disk = pulled.0.into_inner();
    // The first format: 32-byte header, then unit, data, CRC-32 of both.
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let mut v1 = Vec::new();
    v1.extend_from_slice(b"MKFSPRJ1");
    v1.extend_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&(UNIT as u32).to_le_bytes());
    v1.extend_from_slice(&(DISK as u64).to_le_bytes());
    v1.extend_from_slice(&[0; 8]);
    let mut data = vec![0u8; UNIT as usize];
    for i in 0..backup.records() {
        let Loaded::Intact(u) = backup.load(i, &mut data) else {
            panic!("record {i}")
        };
        let start = v1.len();
        v1.extend_from_slice(&u.to_le_bytes());
        v1.extend_from_slice(&data);
        let c = crc.checksum(&v1[start..]);
        v1.extend_from_slice(&c.to_le_bytes());
    }
    let j = dir.join("v1");
    std::fs::write(&j, &v1).unwrap();
    let mut whole = MemDisk::from_vec(512, disk.as_bytes().to_vec()).unwrap();
    let mut journal = Journal::open(&j).unwrap();
    assert_eq!(journal.header().unwrap().version, 1);
    let r = restore_journal(&mut whole, &mut journal, &id("A1")).unwrap();
    assert!(r.complete() && whole.as_bytes() == &orig[..], "{r:?}");
    // A damaged record costs that record only; another device is refused.
    flip(&j, 32 + 3 * (UNIT + 12) + 500);
    let mut partly = MemDisk::from_vec(512, disk.as_bytes().to_vec()).unwrap();
    let mut journal = Journal::open(&j).unwrap();
    let r = restore_journal(&mut partly, &mut journal, &id("A1")).unwrap();
    assert_eq!((r.restored, r.lost.len()), (r.records - 1, 1));
    let other = test_data(DISK, 0x2222);
    let mut other = MemDisk::from_vec(512, other).unwrap();
    let mut journal = Journal::open(&j).unwrap();
    assert!(matches!(
        restore_journal(&mut other, &mut journal, &id("A1")),
        Err(ProbeError::Refused(Refusal::Foreign { .. }))
    ));
}

#[test]
fn the_journal_records_the_device_and_says_what_a_leftover_holds() {
    let dir = TempDir::new("journal-status");
    let j = dir.join("j");
    std::fs::write(&j, b"").unwrap();
    assert_eq!(Journal::status(&j), JournalStatus::Empty);
    std::fs::write(&j, b"not a journal at all").unwrap();
    assert!(matches!(Journal::status(&j), JournalStatus::Unusable(_)));
    std::fs::remove_file(&j).unwrap();
    let _ = crashed_disk(&j);
    let n = units_of(&j).len() as u64;
    assert_eq!(Journal::status(&j), JournalStatus::Pending { records: n });
    let journal = Journal::open(&j).unwrap();
    let h = journal.header().unwrap();
    assert_eq!(h.identity, id("A1"));
    assert_eq!(
        (h.version, h.unit_bytes, h.announced_bytes, h.block_size),
        (2, 4096, DISK as u64, Some(512))
    );
    assert!(h.salt.is_some());
}

/// A backup whose disk fills up after `room` records.
struct FillsUp {
    inner: MemBackup,
    room: u64,
}

impl Backup for FillsUp {
    fn start(&mut self, run: &RunInfo) -> std::io::Result<()> {
        self.inner.start(run)
    }
    fn save(&mut self, unit: u64, data: &[u8]) -> std::io::Result<()> {
        if self.inner.records() >= self.room {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        self.inner.save(unit, data)
    }
    fn commit(&mut self) -> std::io::Result<()> {
        self.inner.commit()
    }
    fn records(&self) -> u64 {
        self.inner.records()
    }
    fn load(&mut self, index: u64, data: &mut [u8]) -> Loaded {
        self.inner.load(index, data)
    }
}

#[test]
fn a_full_journal_disk_stops_the_probe_with_everything_written_back() {
    let orig = test_data(DISK, 0x3333);
    for room in [0, 50, 300, 1000] {
        let mut disk = MemDisk::from_vec(512, orig.clone()).unwrap();
        let mut b = FillsUp {
            inner: MemBackup::new(),
            room,
        };
        match probe(&mut disk, &opts(41), Some(&mut b), &mut |_| {}) {
            Err(ProbeError::Backup { restored, .. }) => {
                assert!(restored.complete() && restored.restored == room.min(restored.records))
            }
            other => panic!("{room}: {other:?}"),
        }
        assert!(disk.as_bytes() == &orig[..], "{room}: the disk differs");
    }
}
