//! The `--keep-data` journal file: a [`Backup`] on another disk, synced
//! before the probe overwrites anything, that [`restore_journal`](crate::restore_journal)
//! can replay after a crash.
//!
//! The format and the crash-safety argument are on [`Journal`].

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::mem::{offset_of, size_of};
use std::path::Path;

use crc::{Crc, CRC_32_ISO_HDLC};
use mkfs_alloc_ondisk::journal::{
    trailing_crc, CommitSlot, FieldLen, JournalHeaderV2, JournalPrefix, RecordHead, RecordHeadV1,
    RecordTailV1, COMMIT_SLOTS, COMMIT_SLOT_CHECKED, HEADER_V2_LEN, JOURNAL_MAGIC, RECORDS_V1_AT,
    RECORDS_V2_AT, RECORD_HEAD_CHECKED,
};
use mkfs_alloc_ondisk::zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::backup::{Backup, Loaded, RunInfo};

const CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);
/// The format version this crate writes.
pub const JOURNAL_VERSION: u32 = 2;
/// Longest identity string kept (bytes); longer ones are cut at a character.
const MAX_FIELD: usize = 150;

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
        let mut h = vec![0u8; HEADER_V2_LEN.min(usize::try_from(len).unwrap_or(usize::MAX))];
        file.read_exact(&mut h)?;
        // The magic and the version (12 bytes) decide what the file is; a
        // shorter version 1 header is a journal that holds nothing.
        let mut prefix = JournalPrefix::new_zeroed();
        let known = h.len().min(size_of::<JournalPrefix>());
        prefix.as_mut_bytes()[..known].copy_from_slice(&h[..known]);
        if known < offset_of!(JournalPrefix, unit_bytes) || prefix.magic != JOURNAL_MAGIC {
            return Err(JournalError::NotAJournal);
        }
        let version = prefix.version.get();
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
            1 => j.open_v1(&prefix, known, len)?,
            JOURNAL_VERSION => j.open_v2(&h, len)?,
            v => return Err(JournalError::Version(v)),
        }
        Ok(j)
    }

    fn open_v1(&mut self, h: &JournalPrefix, known: usize, len: u64) -> Result<(), JournalError> {
        if known < size_of::<JournalPrefix>() {
            return Err(JournalError::Empty);
        }
        let unit_bytes = h.unit_bytes.get();
        if !unit_ok(unit_bytes) {
            return Err(JournalError::DamagedHeader);
        }
        let header = JournalHeader {
            version: 1,
            unit_bytes,
            announced_bytes: h.announced_bytes.get(),
            block_size: None,
            salt: None,
            identity: DeviceIdentity::default(),
        };
        self.header = Some(header);
        self.records = len.saturating_sub(RECORDS_V1_AT) / self.record_len();
        self.committed = self.records;
        if self.committed == 0 {
            return Err(JournalError::Empty);
        }
        Ok(())
    }

    fn open_v2(&mut self, h: &[u8], len: u64) -> Result<(), JournalError> {
        if len <= RECORDS_V2_AT {
            // The probe stopped before its first record.
            return Err(JournalError::Empty);
        }
        let checked = HEADER_V2_LEN - size_of::<RecordTailV1>();
        if trailing_crc(h) != Some(CRC.checksum(&h[..checked])) {
            return Err(JournalError::DamagedHeader);
        }
        let (fixed, mut rest) =
            JournalHeaderV2::read_from_prefix(h).map_err(|_| JournalError::DamagedHeader)?;
        let unit_bytes = fixed.prefix.unit_bytes.get();
        if !unit_ok(unit_bytes) {
            return Err(JournalError::DamagedHeader);
        }
        let mut field = || -> Option<String> {
            let (n, tail) = FieldLen::read_from_prefix(rest).ok()?;
            let bytes = tail.get(..usize::from(n.len.get()))?;
            rest = &tail[bytes.len()..];
            let s = String::from_utf8_lossy(bytes).into_owned();
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
            announced_bytes: fixed.prefix.announced_bytes.get(),
            block_size: Some(fixed.prefix.block_size.get()),
            salt: Some(fixed.salt.get()),
            identity: identity.clone(),
        });
        self.identity = identity;
        let mut best: Option<(u32, u32, u64)> = None;
        for at in COMMIT_SLOTS {
            let mut s = CommitSlot::new_zeroed();
            self.file.seek(SeekFrom::Start(at))?;
            if self.file.read_exact(s.as_mut_bytes()).is_err() {
                continue;
            }
            if CRC.checksum(&s.as_bytes()[..COMMIT_SLOT_CHECKED]) != s.crc.get() {
                continue;
            }
            let slot = (s.seq.get(), s.state.get(), s.committed.get());
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
        self.records = (len - RECORDS_V2_AT) / self.record_len();
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
        let head = if self.version() == 1 {
            size_of::<RecordHeadV1>() + size_of::<RecordTailV1>()
        } else {
            size_of::<RecordHead>()
        };
        head as u64 + u64::from(self.unit_bytes())
    }

    fn record_at(&self, index: u64) -> u64 {
        let first = if self.version() == 1 {
            RECORDS_V1_AT
        } else {
            RECORDS_V2_AT
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
        let damaged_v1 = Ok(Record::Damaged(None));
        if self.version() == 1 {
            let Ok((checked, tail)) = RecordTailV1::ref_from_suffix(&rec) else {
                return damaged_v1;
            };
            let Ok((head, body)) = RecordHeadV1::ref_from_prefix(checked) else {
                return damaged_v1;
            };
            if CRC.checksum(checked) != tail.crc.get() {
                return damaged_v1;
            }
            data.copy_from_slice(body);
            return Ok(Record::Intact(head.unit.get()));
        }
        let Ok((head, body)) = RecordHead::ref_from_prefix(&rec) else {
            return Ok(Record::Damaged(None));
        };
        if CRC.checksum(&head.as_bytes()[..RECORD_HEAD_CHECKED]) != head.head_crc.get() {
            return Ok(Record::Damaged(None));
        }
        let unit = head.unit.get();
        if head.index.get() != index || CRC.checksum(body) != head.data_crc.get() {
            return Ok(Record::Damaged(Some(unit)));
        }
        data.copy_from_slice(body);
        Ok(Record::Intact(unit))
    }

    fn write_slot(&mut self, committed: u64, restored: bool) -> io::Result<()> {
        let seq = self.seq + 1;
        let mut s = CommitSlot {
            seq: seq.into(),
            state: u32::from(restored).into(),
            committed: committed.into(),
            crc: 0.into(),
        };
        s.crc = CRC.checksum(&s.as_bytes()[..COMMIT_SLOT_CHECKED]).into();
        self.file
            .seek(SeekFrom::Start(COMMIT_SLOTS[usize::from(seq % 2 == 1)]))?;
        self.file.write_all(s.as_bytes())?;
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
    let fixed = JournalHeaderV2 {
        prefix: JournalPrefix {
            magic: JOURNAL_MAGIC,
            version: JOURNAL_VERSION.into(),
            unit_bytes: run.unit_bytes.into(),
            announced_bytes: run.announced_bytes.into(),
            block_size: run.block_size.into(),
            reserved: [0; 4],
        },
        salt: run.salt.into(),
    };
    let mut h = Vec::with_capacity(HEADER_V2_LEN);
    h.extend_from_slice(fixed.as_bytes());
    // Three fields of at most MAX_FIELD bytes each fit before the CRC.
    for f in [&id.serial, &id.model, &id.path] {
        let s = f.as_deref().unwrap_or("");
        let mut n = s.len().min(MAX_FIELD);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        let len = FieldLen {
            len: u16::try_from(n).unwrap_or(0).into(),
        };
        h.extend_from_slice(len.as_bytes());
        h.extend_from_slice(&s.as_bytes()[..n]);
    }
    let checked = HEADER_V2_LEN - size_of::<RecordTailV1>();
    h.resize(checked, 0);
    let crc = RecordTailV1 {
        crc: CRC.checksum(&h).into(),
    };
    h.extend_from_slice(crc.as_bytes());
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
        let mut head = RecordHead {
            index: self.records.into(),
            unit: unit.into(),
            data_crc: CRC.checksum(data).into(),
            head_crc: 0.into(),
        };
        head.head_crc = CRC.checksum(&head.as_bytes()[..RECORD_HEAD_CHECKED]).into();
        let mut rec = Vec::with_capacity(self.record_len() as usize);
        rec.extend_from_slice(head.as_bytes());
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
