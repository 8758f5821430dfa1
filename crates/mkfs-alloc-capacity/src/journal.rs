//! The `--keep-data` journal file: a [`Backup`] on another disk, synced
//! before the probe overwrites anything, that [`restore_journal`](crate::restore_journal)
//! can replay after a crash.
//!
//! The format and the crash-safety argument are on [`Journal`].

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crc::{Crc, CRC_32_ISO_HDLC};

use crate::backup::{Backup, Loaded, RunInfo};

const CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);
const MAGIC: [u8; 8] = *b"MKFSPRJ1";
/// The format version this crate writes.
pub const JOURNAL_VERSION: u32 = 2;
const HEADER_LEN: usize = 512;
const SLOTS: [u64; 2] = [512, 1024];
const SLOT_LEN: usize = 20;
const RECORDS_AT: u64 = 1536;
const HEAD_LEN: usize = 24;
const V1_HEADER_LEN: u64 = 32;
/// Longest identity string kept (bytes); longer ones are cut at a character.
const MAX_FIELD: usize = 150;

fn le32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// What identifies the probed device, as far as the operating system tells
/// (the CLI fills it from the device crate). Stored in the journal, and
/// compared with the target of a restore.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceIdentity {
    /// Serial number, if reported.
    pub serial: Option<String>,
    /// Model, if reported.
    pub model: Option<String>,
    /// The path it was opened by (informative: device names change).
    pub path: Option<String>,
}

/// The header of a journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalHeader {
    /// Format version (1 or 2).
    pub version: u32,
    /// Unit size of the records, in bytes.
    pub unit_bytes: u32,
    /// The probed device's announced size, in bytes.
    pub announced_bytes: u64,
    /// The probed device's block size (`None` in version 1).
    pub block_size: Option<u32>,
    /// Salt of the run's test blocks (`None` in version 1).
    pub salt: Option<u64>,
    /// The probed device's identity (empty in version 1).
    pub identity: DeviceIdentity,
}

/// Why a journal cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing the journal file failed.
    #[error("journal I/O failed")]
    Io(#[from] io::Error),
    /// The file is not a probe journal.
    #[error("not a mkfs-alloc probe journal")]
    NotAJournal,
    /// A format version this crate does not read.
    #[error("journal format version {0} is not supported (versions 1 and {JOURNAL_VERSION} are)")]
    Version(u32),
    /// The header's checksum does not match: the unit size, salt and
    /// device identity cannot be trusted.
    #[error("the journal's header is damaged")]
    DamagedHeader,
    /// The probe stopped before saving anything: nothing was overwritten.
    #[error("the journal holds no saved blocks (the probe stopped before overwriting anything)")]
    Empty,
}

/// The state of a journal left on disk, for deciding what a new probe
/// tells its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalStatus {
    /// Unreadable or not a journal (the error says why).
    Unusable(String),
    /// No records were committed: nothing was overwritten.
    Empty,
    /// Every record was written back already.
    Restored,
    /// Committed records wait to be written back.
    Pending {
        /// Records committed.
        records: u64,
    },
}

/// One record read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// Intact: the unit its data belongs to.
    Intact(u64),
    /// Damaged: the unit, if its head is intact.
    Damaged(Option<u64>),
    /// Not in the file (the journal ends before it).
    Missing,
}

/// A [`Backup`] in a journal file.
///
/// Format version 2 (all integers little-endian):
///
/// ```text
/// offset 0     header, 512 bytes
///   0   magic "MKFSPRJ1"         8   format version (u32) = 2
///   12  unit size in bytes (u32) 16  the device's announced size in bytes (u64)
///   24  device block size (u32)  28  reserved (u32, 0)
///   32  salt of the run's test blocks (u64)
///   40  the device's serial, model and path: each a u16 length + UTF-8 bytes
///   508 CRC-32 (ISO-HDLC) of bytes 0..508
/// offset 512   commit slot A  } sequence (u32), state (u32: 0 probing,
/// offset 1024  commit slot B  } 1 restored), committed records (u64), CRC-32
///                               of those 16 bytes; the valid slot with the
///                               higher sequence counts
/// offset 1536  records, each 24 + unit bytes:
///   index (u64), unit number (u64), CRC-32 of the data (u32),
///   CRC-32 of the 20 bytes before (u32), then one unit of data
/// ```
///
/// Every record carries its own checksums, so one damaged record costs only
/// that record: a reader checks each on its own and skips the damaged ones.
/// A record with an intact head but damaged data still names its unit, so
/// the byte range that cannot be restored is known. [`Backup::commit`]
/// writes the other commit slot with the number of records saved, then
/// syncs; the probe overwrites units only after that returns. Records
/// beyond the committed count were never relied on (their units were not
/// overwritten); committed records missing from the file (a journal cut
/// short) are counted as lost. Alternating slots mean a write torn by a
/// crash leaves the previous commit readable.
///
/// Version 1 (the first `--keep-data`, kept readable): a 32-byte header
/// (magic, version 1, unit size, announced size, 8 reserved bytes), then
/// records of the unit number (u64), one unit of data and a CRC-32 of both.
/// It has no salt, identity or commit count: every complete record counts,
/// an incomplete last one is taken as torn by a crash, and the salt of the
/// test blocks is read back from the device.
#[derive(Debug)]
pub struct Journal {
    file: File,
    identity: DeviceIdentity,
    header: Option<JournalHeader>,
    /// Records saved (next index).
    records: u64,
    /// Records committed (the count in the newest valid slot).
    committed: u64,
    seq: u32,
    restored: bool,
}

impl Journal {
    /// Creates an empty journal at `path` (which must not exist) for the
    /// device `identity`. The probe writes the header when it starts
    /// ([`Backup::start`]).
    ///
    /// # Errors
    ///
    /// The file exists or cannot be created and synced.
    pub fn create(path: &Path, identity: DeviceIdentity) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
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
            identity,
            header: None,
            records: 0,
            committed: 0,
            seq: 0,
            restored: false,
        })
    }

    /// Opens an existing journal and reads its header and commit state.
    ///
    /// # Errors
    ///
    /// See [`JournalError`].
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        // Read-only if it cannot be written (a journal on read-only media
        // can still be restored; it cannot be marked finished).
        let mut file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(_) => File::open(path)?,
        };
        let len = file.metadata()?.len();
        if len == 0 {
            return Err(JournalError::Empty);
        }
        let mut h = vec![0u8; HEADER_LEN.min(len as usize)];
        file.read_exact(&mut h)?;
        if h.len() < 12 || h[..8] != MAGIC {
            return Err(JournalError::NotAJournal);
        }
        let version = le32(&h, 8);
        let mut j = Journal {
            file,
            identity: DeviceIdentity::default(),
            header: None,
            records: 0,
            committed: 0,
            seq: 0,
            restored: false,
        };
        match version {
            1 => j.open_v1(&h, len)?,
            JOURNAL_VERSION => j.open_v2(&h, len)?,
            v => return Err(JournalError::Version(v)),
        }
        Ok(j)
    }

    fn open_v1(&mut self, h: &[u8], len: u64) -> Result<(), JournalError> {
        if (h.len() as u64) < V1_HEADER_LEN {
            return Err(JournalError::Empty);
        }
        let unit_bytes = le32(h, 12);
        if !unit_ok(unit_bytes) {
            return Err(JournalError::DamagedHeader);
        }
        let header = JournalHeader {
            version: 1,
            unit_bytes,
            announced_bytes: le64(h, 16),
            block_size: None,
            salt: None,
            identity: DeviceIdentity::default(),
        };
        self.header = Some(header);
        self.records = len.saturating_sub(V1_HEADER_LEN) / self.record_len();
        self.committed = self.records;
        if self.committed == 0 {
            return Err(JournalError::Empty);
        }
        Ok(())
    }

    fn open_v2(&mut self, h: &[u8], len: u64) -> Result<(), JournalError> {
        if len <= RECORDS_AT {
            // The probe stopped before its first record.
            return Err(JournalError::Empty);
        }
        if CRC.checksum(&h[..HEADER_LEN - 4]) != le32(h, HEADER_LEN - 4) {
            return Err(JournalError::DamagedHeader);
        }
        let unit_bytes = le32(h, 12);
        if !unit_ok(unit_bytes) {
            return Err(JournalError::DamagedHeader);
        }
        let mut at = 40;
        let mut field = || -> Option<String> {
            let n = usize::from(u16::from_le_bytes([h[at], h[at + 1]]));
            let s = String::from_utf8_lossy(h.get(at + 2..at + 2 + n)?).into_owned();
            at += 2 + n;
            (!s.is_empty()).then_some(s)
        };
        let identity = DeviceIdentity {
            serial: field(),
            model: field(),
            path: field(),
        };
        self.header = Some(JournalHeader {
            version: JOURNAL_VERSION,
            unit_bytes,
            announced_bytes: le64(h, 16),
            block_size: Some(le32(h, 24)),
            salt: Some(le64(h, 32)),
            identity: identity.clone(),
        });
        self.identity = identity;
        let mut best: Option<(u32, u32, u64)> = None;
        for at in SLOTS {
            let mut s = [0u8; SLOT_LEN];
            self.file.seek(SeekFrom::Start(at))?;
            if self.file.read_exact(&mut s).is_err() {
                continue;
            }
            if CRC.checksum(&s[..16]) != le32(&s, 16) {
                continue;
            }
            let slot = (le32(&s, 0), le32(&s, 4), le64(&s, 8));
            if best.is_none_or(|b| slot.0 > b.0) {
                best = Some(slot);
            }
        }
        let Some((seq, state, committed)) = best else {
            // Records but no readable commit: they may have been relied on.
            return Err(JournalError::DamagedHeader);
        };
        self.seq = seq;
        self.restored = state == 1;
        self.committed = committed;
        self.records = (len - RECORDS_AT) / self.record_len();
        if committed == 0 {
            return Err(JournalError::Empty);
        }
        Ok(())
    }

    /// What a journal at `path` holds, for a probe that finds it in its way.
    pub fn status(path: &Path) -> JournalStatus {
        match Journal::open(path) {
            Ok(j) if j.restored => JournalStatus::Restored,
            Ok(j) => JournalStatus::Pending {
                records: j.committed,
            },
            Err(JournalError::Empty) => JournalStatus::Empty,
            Err(e) => JournalStatus::Unusable(match &e {
                JournalError::Io(io) => format!("{e}: {io}"),
                _ => e.to_string(),
            }),
        }
    }

    /// The header (`None` before the probe started).
    pub fn header(&self) -> Option<&JournalHeader> {
        self.header.as_ref()
    }

    /// Records committed: every unit they name may have been overwritten.
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// Whole records present in the file.
    pub fn present(&self) -> u64 {
        self.records
    }

    /// True once [`Journal::mark_restored`] was called on it.
    pub fn is_restored(&self) -> bool {
        self.restored
    }

    fn unit_bytes(&self) -> u32 {
        self.header.as_ref().map_or(4096, |h| h.unit_bytes)
    }

    fn version(&self) -> u32 {
        self.header.as_ref().map_or(JOURNAL_VERSION, |h| h.version)
    }

    fn record_len(&self) -> u64 {
        let head = if self.version() == 1 { 12 } else { HEAD_LEN };
        head as u64 + u64::from(self.unit_bytes())
    }

    fn record_at(&self, index: u64) -> u64 {
        let first = if self.version() == 1 {
            V1_HEADER_LEN
        } else {
            RECORDS_AT
        };
        first + index * self.record_len()
    }

    /// Reads record `index` into `data` (one unit) and checks it on its own.
    ///
    /// # Errors
    ///
    /// Reading the file failed for another reason than its end.
    pub fn read_record(&mut self, index: u64, data: &mut [u8]) -> io::Result<Record> {
        let mut rec = vec![0u8; self.record_len() as usize];
        self.file.seek(SeekFrom::Start(self.record_at(index)))?;
        match self.file.read_exact(&mut rec) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Record::Missing),
            Err(e) => return Err(e),
        }
        if self.version() == 1 {
            let body = rec.len() - 4;
            if CRC.checksum(&rec[..body]) != le32(&rec, body) {
                return Ok(Record::Damaged(None));
            }
            data.copy_from_slice(&rec[8..body]);
            return Ok(Record::Intact(le64(&rec, 0)));
        }
        let (head, body) = rec.split_at(HEAD_LEN);
        if CRC.checksum(&head[..20]) != le32(head, 20) {
            return Ok(Record::Damaged(None));
        }
        let unit = le64(head, 8);
        if le64(head, 0) != index || CRC.checksum(body) != le32(head, 16) {
            return Ok(Record::Damaged(Some(unit)));
        }
        data.copy_from_slice(body);
        Ok(Record::Intact(unit))
    }

    fn write_slot(&mut self, committed: u64, restored: bool) -> io::Result<()> {
        let seq = self.seq + 1;
        let mut s = [0u8; SLOT_LEN];
        s[..4].copy_from_slice(&seq.to_le_bytes());
        s[4..8].copy_from_slice(&u32::from(restored).to_le_bytes());
        s[8..16].copy_from_slice(&committed.to_le_bytes());
        let crc = CRC.checksum(&s[..16]);
        s[16..].copy_from_slice(&crc.to_le_bytes());
        self.file.seek(SeekFrom::Start(SLOTS[(seq % 2) as usize]))?;
        self.file.write_all(&s)?;
        self.file.sync_data()?;
        self.seq = seq;
        self.committed = committed;
        self.restored = restored;
        Ok(())
    }

    /// Records (durably) that every record was written back, so that a
    /// journal left behind (its removal failed) is known to be finished.
    ///
    /// # Errors
    ///
    /// Writing or syncing the journal failed.
    pub fn mark_restored(&mut self) -> io::Result<()> {
        if self.version() == 1 {
            // Version 1 has no state: only removing the file finishes it.
            return Ok(());
        }
        self.write_slot(self.committed, true)
    }
}

fn unit_ok(unit_bytes: u32) -> bool {
    unit_bytes.is_power_of_two() && (512..=(1 << 20)).contains(&unit_bytes)
}

fn header_bytes(run: &RunInfo, id: &DeviceIdentity) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&JOURNAL_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&run.unit_bytes.to_le_bytes());
    h[16..24].copy_from_slice(&run.announced_bytes.to_le_bytes());
    h[24..28].copy_from_slice(&run.block_size.to_le_bytes());
    h[32..40].copy_from_slice(&run.salt.to_le_bytes());
    let mut at = 40;
    for f in [&id.serial, &id.model, &id.path] {
        let s = f.as_deref().unwrap_or("");
        let mut n = s.len().min(MAX_FIELD);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        h[at..at + 2].copy_from_slice(&(n as u16).to_le_bytes());
        h[at + 2..at + 2 + n].copy_from_slice(&s.as_bytes()[..n]);
        at += 2 + n;
    }
    let crc = CRC.checksum(&h[..HEADER_LEN - 4]);
    h[HEADER_LEN - 4..].copy_from_slice(&crc.to_le_bytes());
    h
}

impl Backup for Journal {
    fn start(&mut self, run: &RunInfo) -> io::Result<()> {
        let h = header_bytes(run, &self.identity);
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(&h)?;
        self.header = Some(JournalHeader {
            version: JOURNAL_VERSION,
            unit_bytes: run.unit_bytes,
            announced_bytes: run.announced_bytes,
            block_size: Some(run.block_size),
            salt: Some(run.salt),
            identity: self.identity.clone(),
        });
        self.records = 0;
        self.write_slot(0, false)
    }

    fn save(&mut self, unit: u64, data: &[u8]) -> io::Result<()> {
        let mut rec = Vec::with_capacity(self.record_len() as usize);
        rec.extend_from_slice(&self.records.to_le_bytes());
        rec.extend_from_slice(&unit.to_le_bytes());
        rec.extend_from_slice(&CRC.checksum(data).to_le_bytes());
        let head = CRC.checksum(&rec);
        rec.extend_from_slice(&head.to_le_bytes());
        rec.extend_from_slice(data);
        self.file
            .seek(SeekFrom::Start(self.record_at(self.records)))?;
        self.file.write_all(&rec)?;
        self.records += 1;
        Ok(())
    }

    fn commit(&mut self) -> io::Result<()> {
        self.write_slot(self.records, false)
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn load(&mut self, index: u64, data: &mut [u8]) -> Loaded {
        match self.read_record(index, data) {
            Ok(Record::Intact(u)) => Loaded::Intact(u),
            Ok(Record::Damaged(u)) => Loaded::Damaged(u),
            Ok(Record::Missing) | Err(_) => Loaded::Damaged(None),
        }
    }
}
