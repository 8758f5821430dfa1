//! Replaying a journal after an interrupted `--keep-data` probe, with every
//! check done before the first write.
//!
//! Before writing anything, [`restore_journal`] refuses ([`Refusal`]) a
//! device whose size, block size, serial or model differ from the journal's,
//! a record that lies beyond the device, and any block to restore that
//! holds neither one of this run's test blocks nor data the journal saved
//! for it. A device the journal did not come from fails that last check
//! (its blocks hold its own data); so does the right device after it was
//! written to since.
//!
//! "Data the journal saved for it" has to allow for fakes. Two addresses
//! that share storage show up in the journal: the later one's record holds
//! the earlier one's test block. Such units form one class, and a block of
//! the class may hold the data saved for any unit of the class (after a
//! complete restore the shared cell holds the oldest save, which is the
//! original of another address). This keeps a restore repeatable, also
//! after a restore that was itself interrupted.
//!
//! Then every intact record is written back, newest first; damaged and
//! missing ones are skipped and listed in the [`RestoreReport`].

use std::collections::{HashMap, HashSet};

use crc::{Crc, CRC_64_XZ};
use mkfs_alloc_blockio::BlockIo;

use crate::backup::{LostRecord, RestoreReport};
use crate::journal::{DeviceIdentity, Journal, Record};
use crate::pattern::identify;
use crate::ProbeError;

const HASH: Crc<u64> = Crc::<u64>::new(&CRC_64_XZ);
/// Units per read of the check.
const CHECK_RUN: u64 = 64;

/// Why a restore refused to start (nothing was written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The device's size differs from the journal's.
    #[error("the journal is for a device of {journal} bytes, this one has {device}")]
    Size {
        /// Size in the journal, bytes.
        journal: u64,
        /// Size of the device, bytes.
        device: u64,
    },
    /// The device's block size differs from the journal's (or does not
    /// divide its unit size).
    #[error("the journal is for a device with {journal}-byte units or blocks, this one has {device}-byte blocks")]
    BlockSize {
        /// Block (or unit) size in the journal.
        journal: u32,
        /// Block size of the device.
        device: u32,
    },
    /// The device reports another serial number or model.
    #[error("the journal is for the device with {field} {journal:?}, this one reports {device:?}")]
    Identity {
        /// `serial` or `model`.
        field: &'static str,
        /// The value in the journal.
        journal: String,
        /// The value the device reports.
        device: String,
    },
    /// A record names a unit beyond the device.
    #[error("record {index} names byte {offset}, beyond the device")]
    Outside {
        /// The record.
        index: u64,
        /// Its byte offset.
        offset: u64,
    },
    /// Blocks to restore hold neither a test block of the journal's run nor
    /// data saved for them.
    #[error(
        "{count} of the {checked} blocks to restore hold neither a test block of the probe that wrote the journal nor the data it saved for them (the first at byte {first_offset}): this is not the device the journal came from, or it was written to since"
    )]
    Foreign {
        /// Blocks that fail the check.
        count: u64,
        /// Blocks checked.
        checked: u64,
        /// Byte offset of the first one.
        first_offset: u64,
    },
}

/// An intact record as the check needs it.
struct Entry {
    index: u64,
    unit: u64,
    hash: u64,
    /// The test block the record holds (salt, unit), if it holds one.
    probe: Option<(u64, u64)>,
}

/// Restores the journal onto `dev` (after a probe with `--keep-data` was
/// interrupted), `identity` being what the operating system reports for
/// `dev`. Every check runs before the first write: [`Refusal`] lists them.
/// Blocks holding data saved for another unit are accepted only where the
/// journal shows the two units share storage (a fake's wrap), so that a
/// restore can be repeated, also after a restore that was itself
/// interrupted. The caller keeps the journal unless
/// [`RestoreReport::complete`], and then removes it (after
/// [`Journal::mark_restored`]).
///
/// # Errors
///
/// [`ProbeError::Refused`] before anything is written; [`ProbeError::Io`]
/// if reading or writing the device fails; [`ProbeError::Journal`] if the
/// journal cannot be read.
pub fn restore_journal<D: BlockIo + ?Sized>(
    dev: &mut D,
    journal: &mut Journal,
    identity: &DeviceIdentity,
) -> Result<RestoreReport, ProbeError> {
    let header = journal
        .header()
        .cloned()
        .ok_or(ProbeError::Journal(crate::JournalError::Empty))?;
    let bs = dev.block_size();
    let size = dev.num_blocks() * u64::from(bs);
    if header.announced_bytes != size {
        return Err(Refusal::Size {
            journal: header.announced_bytes,
            device: size,
        }
        .into());
    }
    let jbs = header.block_size.unwrap_or(bs);
    if jbs != bs || header.unit_bytes % bs != 0 {
        return Err(Refusal::BlockSize {
            journal: if jbs != bs { jbs } else { header.unit_bytes },
            device: bs,
        }
        .into());
    }
    check_identity(&header.identity, identity)?;
    let unit = u64::from(header.unit_bytes);
    let units = size / unit;
    let (entries, mut lost) = scan(journal, units, unit)?;
    check_blocks(dev, &entries, header.salt, unit)?;

    // Every check passed: write the intact records back, newest first.
    let mut data = vec![0u8; unit as usize];
    let mut report = RestoreReport {
        records: journal.committed(),
        ..RestoreReport::default()
    };
    let bpu = unit / u64::from(bs);
    for e in entries.iter().rev() {
        match journal.read_record(e.index, &mut data) {
            Ok(Record::Intact(u)) if u == e.unit => {
                dev.write_blocks(u * bpu, &data)?;
                report.restored += 1;
                report.bytes_written += unit;
            }
            _ => lost.push(LostRecord {
                index: e.index,
                range: Some((e.unit * unit, unit)),
            }),
        }
    }
    dev.flush()?;
    lost.sort_unstable_by_key(|l| l.index);
    report.lost = lost;
    Ok(report)
}

fn check_identity(journal: &DeviceIdentity, device: &DeviceIdentity) -> Result<(), Refusal> {
    let fields = [
        ("serial", &journal.serial, &device.serial),
        ("model", &journal.model, &device.model),
    ];
    for (field, j, d) in fields {
        if let (Some(j), Some(d)) = (j, d) {
            if j.trim() != d.trim() {
                return Err(Refusal::Identity {
                    field,
                    journal: j.clone(),
                    device: d.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Reads every committed record: the intact ones, and the lost ones
/// (damaged, or missing from a journal cut short).
fn scan(
    journal: &mut Journal,
    units: u64,
    unit: u64,
) -> Result<(Vec<Entry>, Vec<LostRecord>), ProbeError> {
    let mut data = vec![0u8; unit as usize];
    let mut scratch = vec![0u8; unit as usize];
    let mut entries = Vec::new();
    let mut lost = Vec::new();
    for index in 0..journal.committed() {
        let rec = journal
            .read_record(index, &mut data)
            .map_err(|e| ProbeError::Journal(e.into()))?;
        match rec {
            Record::Intact(u) if u >= units => {
                return Err(Refusal::Outside {
                    index,
                    offset: u.saturating_mul(unit),
                }
                .into())
            }
            Record::Intact(u) => entries.push(Entry {
                index,
                unit: u,
                hash: HASH.checksum(&data),
                probe: identify(&data, &mut scratch),
            }),
            Record::Damaged(u) => lost.push(LostRecord {
                index,
                range: u.filter(|&u| u < units).map(|u| (u * unit, unit)),
            }),
            Record::Missing => lost.push(LostRecord { index, range: None }),
        }
    }
    Ok((entries, lost))
}

/// What a block of the device holds: its hash, and the test block it is
/// (salt, unit), if it is one.
type Held = (u64, Option<(u64, u64)>);

/// Reads every unit to restore and checks that it holds a test block of the
/// run (`salt`; for a version-1 journal, the salt most blocks carry) or
/// data saved for its class.
fn check_blocks<D: BlockIo + ?Sized>(
    dev: &mut D,
    entries: &[Entry],
    salt: Option<u64>,
    unit: u64,
) -> Result<(), ProbeError> {
    let mut wanted: Vec<u64> = entries.iter().map(|e| e.unit).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let held = read_units(dev, &wanted, unit)?;
    let salt = salt.or_else(|| common_salt(&held));
    let ours = |p: Option<(u64, u64)>| p.filter(|&(s, _)| Some(s) == salt);

    // Classes of units that share storage, linked by records that hold
    // another unit's test block of this run.
    let mut parent: HashMap<u64, u64> = HashMap::new();
    for e in entries {
        if let Some((_, other)) = ours(e.probe) {
            union(&mut parent, e.unit, other);
        }
    }
    let saved: HashSet<(u64, u64)> = entries
        .iter()
        .filter(|e| ours(e.probe).is_none())
        .map(|e| (find(&mut parent, e.unit), e.hash))
        .collect();
    let mut bad = 0u64;
    let mut first = None;
    for (&u, &(hash, probe)) in wanted.iter().zip(&held) {
        let class = find(&mut parent, u);
        if ours(probe).is_none() && !saved.contains(&(class, hash)) {
            bad += 1;
            first.get_or_insert(u * unit);
        }
    }
    match first {
        None => Ok(()),
        Some(first_offset) => Err(Refusal::Foreign {
            count: bad,
            checked: wanted.len() as u64,
            first_offset,
        }
        .into()),
    }
}

/// Reads the sorted, distinct `units` in runs.
fn read_units<D: BlockIo + ?Sized>(
    dev: &mut D,
    units: &[u64],
    unit: u64,
) -> Result<Vec<Held>, ProbeError> {
    let bpu = unit / u64::from(dev.block_size());
    let mut buf = vec![0u8; (unit * CHECK_RUN) as usize];
    let mut scratch = vec![0u8; unit as usize];
    let mut out = Vec::with_capacity(units.len());
    let mut i = 0;
    while i < units.len() {
        let first = units[i];
        let mut count = 1;
        while i + count < units.len()
            && (count as u64) < CHECK_RUN
            && units[i + count] == first + count as u64
        {
            count += 1;
        }
        let b = &mut buf[..unit as usize * count];
        dev.read_blocks(first * bpu, b)?;
        for chunk in b.chunks(unit as usize) {
            out.push((HASH.checksum(chunk), identify(chunk, &mut scratch)));
        }
        i += count;
    }
    Ok(out)
}

/// The salt most test blocks read back carry (version-1 journals, which do
/// not record it).
fn common_salt(held: &[Held]) -> Option<u64> {
    let mut count: HashMap<u64, u64> = HashMap::new();
    for (_, p) in held {
        if let Some((s, _)) = p {
            *count.entry(*s).or_default() += 1;
        }
    }
    count
        .into_iter()
        .max_by_key(|&(s, c)| (c, s))
        .map(|(s, _)| s)
}

fn find(parent: &mut HashMap<u64, u64>, u: u64) -> u64 {
    let mut root = u;
    while let Some(&p) = parent.get(&root) {
        if p == root {
            break;
        }
        root = p;
    }
    // Path compression.
    let mut x = u;
    while x != root {
        let next = parent.get(&x).copied().unwrap_or(root);
        parent.insert(x, root);
        x = next;
    }
    root
}

fn union(parent: &mut HashMap<u64, u64>, a: u64, b: u64) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent.insert(ra.max(rb), ra.min(rb));
    }
}
