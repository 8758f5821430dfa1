//! `--keep-data`: the original content of every unit the probe writes is
//! saved before the write and put back afterwards.
//!
//! Crash safety. A [`Backup`] such as [`Journal`](crate::Journal) saves
//! each original unit on another medium (never the probed device) and makes
//! it durable ([`Backup::commit`]) before the probe overwrites any of those
//! units. If the program, the host or the stick dies in the middle, every
//! unit that was overwritten has its original in the journal and
//! [`restore_journal`](crate::restore_journal) puts them back later.
//!
//! Restoring writes the records newest first. On a fake, two addresses can
//! share storage; a later save of the second address may hold this run's
//! pattern rather than the original. Newest-first restoring ends with the
//! oldest save of every storage cell, which is the original. Restoring is
//! idempotent: running it twice gives the same result.
//!
//! Every record is checked on its own: a damaged one is skipped and counted
//! ([`RestoreReport`]), and restoring goes on with the others.

use std::io;

use mkfs_alloc_blockio::BlockIo;

use crate::ProbeError;

/// What the probe tells its [`Backup`] before the first save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunInfo {
    /// Salt of this run's test blocks (recognises them on a restore).
    pub salt: u64,
    /// Size of every saved unit, in bytes.
    pub unit_bytes: u32,
    /// The device's announced size in bytes.
    pub announced_bytes: u64,
    /// The device's block size in bytes.
    pub block_size: u32,
}

/// One record loaded back from a [`Backup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loaded {
    /// The record is intact; its data belongs to this unit.
    Intact(u64),
    /// The record is damaged or missing; its unit, if still known.
    Damaged(Option<u64>),
}

/// Storage for the original units the probe overwrites.
pub trait Backup {
    /// Called once, before the first [`Backup::save`], with what identifies
    /// the run.
    ///
    /// # Errors
    ///
    /// The storage's I/O error; the probe then stops before writing.
    fn start(&mut self, run: &RunInfo) -> io::Result<()>;
    /// Records the original content `data` of `unit` (one unit of bytes).
    ///
    /// # Errors
    ///
    /// The storage's I/O error; the probe then stops before writing over the
    /// unit.
    fn save(&mut self, unit: u64, data: &[u8]) -> io::Result<()>;
    /// Makes every record saved so far durable. The probe calls this before
    /// writing over the units saved since the last commit.
    ///
    /// # Errors
    ///
    /// The storage's I/O error; the probe then writes over none of the units
    /// saved since the last commit.
    fn commit(&mut self) -> io::Result<()>;
    /// Number of records saved.
    fn records(&self) -> u64;
    /// Loads record `index` into `data` (one unit) and checks it.
    fn load(&mut self, index: u64, data: &mut [u8]) -> Loaded;
}

/// A [`Backup`] in memory (tests, or when losing the data in a crash is
/// acceptable).
#[derive(Debug, Default)]
pub struct MemBackup {
    saved: Vec<(u64, Vec<u8>)>,
    run: Option<RunInfo>,
}

impl MemBackup {
    /// An empty backup.
    pub fn new() -> Self {
        Self::default()
    }

    /// What [`Backup::start`] was told (`None` before the probe started).
    pub fn run(&self) -> Option<RunInfo> {
        self.run
    }
}

impl Backup for MemBackup {
    fn start(&mut self, run: &RunInfo) -> io::Result<()> {
        self.run = Some(*run);
        Ok(())
    }
    fn save(&mut self, unit: u64, data: &[u8]) -> io::Result<()> {
        self.saved.push((unit, data.to_vec()));
        Ok(())
    }
    fn commit(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn records(&self) -> u64 {
        self.saved.len() as u64
    }
    fn load(&mut self, index: u64, data: &mut [u8]) -> Loaded {
        match usize::try_from(index).ok().and_then(|i| self.saved.get(i)) {
            Some((unit, d)) if d.len() == data.len() => {
                data.copy_from_slice(d);
                Loaded::Intact(*unit)
            }
            Some((unit, _)) => Loaded::Damaged(Some(*unit)),
            None => Loaded::Damaged(None),
        }
    }
}

/// A record that could not be written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LostRecord {
    /// Its index in the journal.
    pub index: u64,
    /// The bytes of the device it held, `(offset, length)`, if its unit is
    /// known (a record whose head is damaged or that is missing names none).
    pub range: Option<(u64, u64)>,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RestoreReport {
    /// Records the journal must hold (committed before the device was
    /// overwritten).
    pub records: u64,
    /// Records written back.
    pub restored: u64,
    /// Bytes written to the device.
    pub bytes_written: u64,
    /// Records that could not be written back, damaged or missing, in
    /// index order.
    pub lost: Vec<LostRecord>,
}

impl RestoreReport {
    /// True when every record was written back.
    pub fn complete(&self) -> bool {
        self.lost.is_empty()
    }

    /// The device byte ranges that could not be restored, merged and sorted
    /// (records whose unit is unknown are not in it: see
    /// [`RestoreReport::lost_unknown`]).
    pub fn lost_ranges(&self) -> Vec<(u64, u64)> {
        let mut r: Vec<(u64, u64)> = self.lost.iter().filter_map(|l| l.range).collect();
        r.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (off, len) in r {
            match out.last_mut() {
                Some((o, l)) if *o + *l >= off => *l = (*l).max(off + len - *o),
                _ => out.push((off, len)),
            }
        }
        out
    }

    /// Lost records whose unit is unknown.
    pub fn lost_unknown(&self) -> u64 {
        self.lost.iter().filter(|l| l.range.is_none()).count() as u64
    }
}

/// Writes every record of `backup` back to `dev`, newest first, and flushes.
/// `unit_bytes` must be the unit size the records were saved with. Damaged
/// records are skipped and listed in the report.
///
/// # Errors
///
/// [`ProbeError::Io`] if the device refuses a write,
/// [`ProbeError::BlockSize`] if `unit_bytes` is not a multiple of the
/// device's block size.
pub fn restore<D: BlockIo + ?Sized>(
    dev: &mut D,
    backup: &mut dyn Backup,
    unit_bytes: u32,
) -> Result<RestoreReport, ProbeError> {
    let bs = u64::from(dev.block_size());
    let unit = u64::from(unit_bytes);
    if unit % bs != 0 {
        return Err(ProbeError::BlockSize(unit_bytes));
    }
    let units = dev.num_blocks() * bs / unit;
    let mut data = vec![0u8; unit_bytes as usize];
    let mut report = RestoreReport {
        records: backup.records(),
        ..RestoreReport::default()
    };
    for i in (0..backup.records()).rev() {
        match backup.load(i, &mut data) {
            Loaded::Intact(u) if u < units => {
                dev.write_blocks(u * unit / bs, &data)?;
                report.restored += 1;
                report.bytes_written += unit;
            }
            Loaded::Intact(u) | Loaded::Damaged(Some(u)) => report.lost.push(LostRecord {
                index: i,
                range: (u < units).then_some((u * unit, unit)),
            }),
            Loaded::Damaged(None) => report.lost.push(LostRecord {
                index: i,
                range: None,
            }),
        }
    }
    dev.flush()?;
    report.lost.reverse();
    Ok(report)
}
