//! The capacity probe's `--keep-data` journal file: what the probe saved of
//! a device before overwriting it, kept on another disk.
//!
//! Version 2 (written now):
//!
//! ```text
//! 0     JournalPrefix (32 bytes) + salt (8): JournalHeaderV2, 40 bytes
//! 40    serial, model, path: each a U16 length and that many UTF-8 bytes
//! 508   CRC-32 of bytes 0..508
//! 512   CommitSlot 0 (20 bytes)        the slot with the higher sequence
//! 1024  CommitSlot 1 (20 bytes)        number is the current one
//! 1536  records: RecordHead (24 bytes), then one unit of saved data
//! ```
//!
//! Version 1 (still read): a 32-byte [`JournalPrefix`], then records of a
//! [`RecordHeadV1`], the unit's data and a CRC-32 of both.
//!
//! Sources: this project's format (no external specification); the CRC is
//! CRC-32/ISO-HDLC (the `crc` crate's `CRC_32_ISO_HDLC`).

use core::mem::size_of;

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// First 8 bytes of every journal.
pub const JOURNAL_MAGIC: [u8; 8] = *b"MKFSPRJ1";

/// The start of every journal (both versions); version 1's whole header.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct JournalPrefix {
    /// [`JOURNAL_MAGIC`].
    pub magic: [u8; 8],
    /// Format version (1 or 2).
    pub version: U32,
    /// Bytes of one record's data (the probe's unit).
    pub unit_bytes: U32,
    /// The probed device's announced size, in bytes.
    pub announced_bytes: U64,
    /// The probed device's logical block size (version 2; zero in 1).
    pub block_size: U32,
    /// Zero.
    pub reserved: [u8; 4],
}
const _: () = assert!(size_of::<JournalPrefix>() == 32);

/// The fixed part of a version 2 header; the identity strings follow.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct JournalHeaderV2 {
    /// Magic, version, unit, size and block size.
    pub prefix: JournalPrefix,
    /// Salt of the run's test blocks.
    pub salt: U64,
}
const _: () = assert!(size_of::<JournalHeaderV2>() == 40);

/// Bytes of a version 2 header, its CRC-32 in the last four.
pub const HEADER_V2_LEN: usize = 512;

/// Where the two commit slots of version 2 start.
pub const COMMIT_SLOTS: [u64; 2] = [512, 1024];

/// Where version 2's records start.
pub const RECORDS_V2_AT: u64 = 1536;

/// Where version 1's records start (after its [`JournalPrefix`]).
pub const RECORDS_V1_AT: u64 = size_of::<JournalPrefix>() as u64;

/// The commit state of version 2: how many records were durably saved
/// before the device was overwritten, and whether they were written back.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CommitSlot {
    /// Increases with every commit; the higher of the two slots wins.
    pub seq: U32,
    /// 1 once every record was written back, else 0.
    pub state: U32,
    /// Records committed.
    pub committed: U64,
    /// CRC-32 of the 16 bytes above.
    pub crc: U32,
}
const _: () = assert!(size_of::<CommitSlot>() == 20);

/// The bytes of a [`CommitSlot`] its `crc` covers.
pub const COMMIT_SLOT_CHECKED: usize = core::mem::offset_of!(CommitSlot, crc);

/// The head of a version 2 record; one unit of data follows.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RecordHead {
    /// The record's own index (a record found at another index is damaged).
    pub index: U64,
    /// The device unit its data was saved from.
    pub unit: U64,
    /// CRC-32 of the data.
    pub data_crc: U32,
    /// CRC-32 of the 20 bytes above.
    pub head_crc: U32,
}
const _: () = assert!(size_of::<RecordHead>() == 24);

/// The bytes of a [`RecordHead`] its `head_crc` covers.
pub const RECORD_HEAD_CHECKED: usize = core::mem::offset_of!(RecordHead, head_crc);

/// The head of a version 1 record: the unit, then the data, then a CRC-32
/// ([`RecordTailV1`]) of the unit and the data.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RecordHeadV1 {
    /// The device unit its data was saved from.
    pub unit: U64,
}
const _: () = assert!(size_of::<RecordHeadV1>() == 8);

/// The end of a version 1 record.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RecordTailV1 {
    /// CRC-32 of the head and the data.
    pub crc: U32,
}
const _: () = assert!(size_of::<RecordTailV1>() == 4);

/// The length before each identity string of a version 2 header.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FieldLen {
    /// Bytes of UTF-8 that follow.
    pub len: U16,
}
const _: () = assert!(size_of::<FieldLen>() == 2);

/// Reads the little-endian CRC-32 stored at the end of `bytes` (a version 2
/// header's last four bytes), or `None` when `bytes` is shorter than four.
pub fn trailing_crc(bytes: &[u8]) -> Option<u32> {
    let (_, crc) = RecordTailV1::ref_from_suffix(bytes).ok()?;
    Some(crc.crc.get())
}
