//! `--keep-data`: the original content of every unit the probe writes is
//! saved before the write and put back afterwards.
//!
//! Crash safety. [`Journal`] appends each original unit to a file on
//! another medium (never the probed device) and syncs it
//! ([`Backup::commit`]) before the probe overwrites any of those units. If the
//! program, the host or the stick dies in the middle, every unit that was
//! overwritten has its original in the journal and [`restore_journal`] puts
//! them back later. Each record carries a CRC-32: a record torn by a crash
//! was never committed, so its unit was never overwritten, and it is ignored.
//!
//! Restoring writes the records newest first. On a fake, two addresses can
//! share storage; a later save of the second address may hold this run's
//! pattern rather than the original. Newest-first restoring ends with the
//! oldest save of every storage cell, which is the original. Restoring is
//! idempotent: running it twice gives the same result.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crc::{Crc, CRC_32_ISO_HDLC};

use mkfs_alloc_blockio::BlockIo;

use crate::ProbeError;

const CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);
const JOURNAL_MAGIC: [u8; 8] = *b"MKFSPRJ1";
const HEADER_LEN: u64 = 32;

/// Storage for the original units the probe overwrites.
pub trait Backup {
    /// Records the original content `data` of `unit` (one unit of bytes).
    fn save(&mut self, unit: u64, data: &[u8]) -> io::Result<()>;
    /// Makes every record saved so far durable. The probe calls this before
    /// writing over the units saved since the last commit.
    fn commit(&mut self) -> io::Result<()>;
    /// Number of records saved.
    fn records(&self) -> u64;
    /// Loads record `index` into `data`, returning its unit.
    fn load(&mut self, index: u64, data: &mut [u8]) -> io::Result<u64>;
}

/// A [`Backup`] in memory (tests, or when losing the data in a crash is
/// acceptable).
#[derive(Debug, Default)]
pub struct MemBackup {
    saved: Vec<(u64, Vec<u8>)>,
}

impl MemBackup {
    /// An empty backup.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Backup for MemBackup {
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
    fn load(&mut self, index: u64, data: &mut [u8]) -> io::Result<u64> {
        let (unit, d) = usize::try_from(index)
            .ok()
            .and_then(|i| self.saved.get(i))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such record"))?;
        data.copy_from_slice(d);
        Ok(*unit)
    }
}

/// A [`Backup`] in a journal file, synced before every overwrite. See the
/// module docs (`backup.rs`) for the crash-safety argument.
///
/// Layout: a 32-byte header (magic `MKFSPRJ1`, format version 1 as `u32`,
/// the unit size as `u32`, the device's announced size in bytes as `u64`,
/// 8 reserved bytes), then fixed-size records: the unit number (`u64`), one
/// unit of data, and a CRC-32 (ISO-HDLC) of both. All integers little-endian.
#[derive(Debug)]
pub struct Journal {
    file: File,
    unit_bytes: u32,
    announced_bytes: u64,
    records: u64,
}

impl Journal {
    /// Creates a new journal at `path` (which must not exist) for a device of
    /// `announced_bytes` probed in units of `unit_bytes`.
    ///
    /// # Errors
    ///
    /// The file exists or cannot be created and synced.
    pub fn create(path: &Path, announced_bytes: u64, unit_bytes: u32) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut h = [0u8; HEADER_LEN as usize];
        h[..8].copy_from_slice(&JOURNAL_MAGIC);
        h[8..12].copy_from_slice(&1u32.to_le_bytes());
        h[12..16].copy_from_slice(&unit_bytes.to_le_bytes());
        h[16..24].copy_from_slice(&announced_bytes.to_le_bytes());
        file.write_all(&h)?;
        file.sync_all()?;
        // The directory entry too, so that a power cut cannot lose the file
        // whose records were synced (Unix; Windows cannot open directories
        // as files and makes the entry durable with the file's metadata).
        #[cfg(unix)]
        {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            File::open(dir)?.sync_all()?;
        }
        Ok(Journal {
            file,
            unit_bytes,
            announced_bytes,
            records: 0,
        })
    }

    /// Opens an existing journal and counts its complete, intact records.
    ///
    /// # Errors
    ///
    /// The file cannot be read or is not a journal.
    pub fn open(path: &Path) -> io::Result<Self> {
        let mut file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut h = [0u8; HEADER_LEN as usize];
        file.read_exact(&mut h)?;
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "not a mkfs-alloc probe journal");
        if h[..8] != JOURNAL_MAGIC || h[8..12] != 1u32.to_le_bytes() {
            return Err(bad());
        }
        let unit_bytes = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
        if !unit_bytes.is_power_of_two() || !(512..=(1 << 20)).contains(&unit_bytes) {
            return Err(bad());
        }
        let mut a = [0u8; 8];
        a.copy_from_slice(&h[16..24]);
        let announced_bytes = u64::from_le_bytes(a);
        let mut j = Journal {
            file,
            unit_bytes,
            announced_bytes,
            records: 0,
        };
        let len = j.file.metadata()?.len();
        let full = len.saturating_sub(HEADER_LEN) / j.record_len();
        let mut data = vec![0u8; unit_bytes as usize];
        for i in 0..full {
            if j.read_record(i, &mut data).is_err() {
                break;
            }
            j.records = i + 1;
        }
        Ok(j)
    }

    /// The unit size the journal was written with.
    pub fn unit_bytes(&self) -> u32 {
        self.unit_bytes
    }

    /// The announced size of the device the journal belongs to.
    pub fn announced_bytes(&self) -> u64 {
        self.announced_bytes
    }

    fn record_len(&self) -> u64 {
        8 + u64::from(self.unit_bytes) + 4
    }

    fn read_record(&mut self, index: u64, data: &mut [u8]) -> io::Result<u64> {
        let mut rec = vec![0u8; self.record_len() as usize];
        self.file
            .seek(SeekFrom::Start(HEADER_LEN + index * self.record_len()))?;
        self.file.read_exact(&mut rec)?;
        let body = rec.len() - 4;
        let want = u32::from_le_bytes([rec[body], rec[body + 1], rec[body + 2], rec[body + 3]]);
        if CRC.checksum(&rec[..body]) != want {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "torn journal record",
            ));
        }
        let mut u = [0u8; 8];
        u.copy_from_slice(&rec[..8]);
        data.copy_from_slice(&rec[8..body]);
        Ok(u64::from_le_bytes(u))
    }
}

impl Backup for Journal {
    fn save(&mut self, unit: u64, data: &[u8]) -> io::Result<()> {
        let mut rec = Vec::with_capacity(self.record_len() as usize);
        rec.extend_from_slice(&unit.to_le_bytes());
        rec.extend_from_slice(data);
        let crc = CRC.checksum(&rec);
        rec.extend_from_slice(&crc.to_le_bytes());
        self.file.seek(SeekFrom::Start(
            HEADER_LEN + self.records * self.record_len(),
        ))?;
        self.file.write_all(&rec)?;
        self.records += 1;
        Ok(())
    }
    fn commit(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn records(&self) -> u64 {
        self.records
    }
    fn load(&mut self, index: u64, data: &mut [u8]) -> io::Result<u64> {
        self.read_record(index, data)
    }
}

/// Writes every record of `backup` back to `dev`, newest first, and flushes.
/// `unit_bytes` must be the unit size the records were saved with. Returns
/// the bytes written.
///
/// # Errors
///
/// [`ProbeError::Backup`] if a record cannot be read,
/// [`ProbeError::Io`] if the device refuses a write,
/// [`ProbeError::JournalMismatch`] if a record lies outside the device.
pub fn restore<D: BlockIo + ?Sized>(
    dev: &mut D,
    backup: &mut dyn Backup,
    unit_bytes: u32,
) -> Result<u64, ProbeError> {
    let bs = u64::from(dev.block_size());
    let unit = u64::from(unit_bytes);
    if unit % bs != 0 {
        return Err(ProbeError::JournalMismatch(
            "the unit size is not a multiple of the device block size".into(),
        ));
    }
    let units = dev.num_blocks() * bs / unit;
    let mut data = vec![0u8; unit_bytes as usize];
    let mut written = 0;
    for i in (0..backup.records()).rev() {
        let u = backup.load(i, &mut data).map_err(ProbeError::Backup)?;
        if u >= units {
            return Err(ProbeError::JournalMismatch(format!(
                "record {i} names unit {u}, beyond the device"
            )));
        }
        dev.write_blocks(u * unit / bs, &data)?;
        written += unit;
    }
    dev.flush()?;
    Ok(written)
}

/// Restores the journal at `path` onto `dev` (after a probe with
/// `--keep-data` was interrupted). The caller removes the file afterwards.
///
/// # Errors
///
/// The journal cannot be read, belongs to a device of another size, or a
/// write fails (see [`restore`]).
pub fn restore_journal<D: BlockIo + ?Sized>(dev: &mut D, path: &Path) -> Result<u64, ProbeError> {
    let mut j = Journal::open(path).map_err(ProbeError::Backup)?;
    let size = dev.num_blocks() * u64::from(dev.block_size());
    if j.announced_bytes() != size {
        return Err(ProbeError::JournalMismatch(format!(
            "the journal is for a device of {} bytes, this one has {size}",
            j.announced_bytes()
        )));
    }
    let unit = j.unit_bytes();
    restore(dev, &mut j, unit)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn journal_round_trip_ignores_a_torn_tail_and_restores_newest_first() {
        let dir = mkfs_alloc_testsupport::TempDir::new("journal");
        let path = dir.join("j");
        let mut j = Journal::create(&path, 8 * 4096, 4096).unwrap();
        j.save(3, &[1; 4096]).unwrap();
        j.save(3, &[2; 4096]).unwrap(); // a later save of the same storage
        j.save(5, &[7; 4096]).unwrap();
        j.commit().unwrap();
        drop(j);
        // A torn record at the tail (crash during save) is ignored.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[9u8; 100]).unwrap();
        drop(f);
        let mut disk = MemDisk::new(512, 64).unwrap();
        let written = restore_journal(&mut disk, &path).unwrap();
        assert_eq!(written, 3 * 4096);
        assert!(disk.as_bytes()[3 * 4096..4 * 4096].iter().all(|&b| b == 1));
        assert!(disk.as_bytes()[5 * 4096..6 * 4096].iter().all(|&b| b == 7));
        // A device of another size is refused.
        let mut other = MemDisk::new(512, 128).unwrap();
        assert!(matches!(
            restore_journal(&mut other, &path),
            Err(ProbeError::JournalMismatch(_))
        ));
    }
}
