//! The writer: [`Layout`](crate::Layout) → blocks, through `BlockIo`
//! (the `std` feature) or, in firmware, a
//! [`SectorDevice`](crate::writer::embedded::SectorDevice).
//!
//! Memory stays bounded: FAT and bitmap are generated in chunks of
//! [`CHUNK`] bytes, whatever the volume size; zero regions are handed to
//! `BlockIo::write_zeroes` (hole punching, `ZERO_RANGE`, `BLKZEROOUT`) or,
//! on a target that already reads as zero, skipped.
//!
//! Write order (so an interrupted format never leaves a half-valid file system):
//! 1. unless the target reads as zero: zero everything before the FAT — the
//!    old boot sector(s) and their backups — and, when the target may hold a
//!    file system ([`Prior::Unknown`]), flush, so the old file system is gone
//!    before anything new exists; no flush when the caller knows no file
//!    system is left ([`Prior::NoFileSystem`]) or the target reads as zero;
//! 2. FAT(s), allocation bitmap, up-case table, root directory, and the
//!    boot sectors no tool reads without sector 0 (exFAT main boot sectors
//!    1..11; FAT32 FSInfo, backup boot sector and backup FSInfo); flush, so
//!    that no cache can persist what follows before them;
//! 3. exFAT: the backup boot region (fsck.exfat restores a volume from it
//!    when sector 0 is bad, so it must not exist before step 2 is durable);
//!    then sector 0 (the main boot sector, which makes the volume
//!    recognisable); flush.
//!
//! A crash before step 3 leaves a volume with no main boot sector and (exFAT)
//! no backup boot region: no tool recognises it. That is two flushes on a
//! target that held no file system, three on one that may have.

pub mod embedded;
pub mod exfat;
pub mod fat;
pub(crate) mod sequence;

#[cfg(feature = "std")]
mod blockio;
#[cfg(feature = "std")]
pub use blockio::*;

/// `n` as a `usize` (a sector's length as a slice index): lossless on the
/// 32- and 64-bit targets the crate is built for, saturating on any other.
pub(crate) fn usize_of(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// `n` as a `u64` (a slice's length in byte arithmetic): lossless wherever
/// `usize` is at most 64 bits wide, as on every target Rust supports.
pub(crate) fn u64_of(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
