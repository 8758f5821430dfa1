//! Block I/O for mkfs-alloc: one small trait, [`BlockIo`], and its backends.
//!
//! ```text
//!  writer / partitioner ──► BlockIo ──┬─ MemDisk      (Vec<u8>, tests)
//!                                     ├─ ImageFile    (sparse image files)
//!                                     ├─ Slice<D>     (a window of another BlockIo)
//!                                     ├─ Counting<D>  (counters and an op log, tests)
//!                                     ├─ FaultyIo<D>  (fault injection, tests)
//!                                     └─ PowerCutIo<D> (power loss: unflushed writes lost, tests)
//! ```
//!
//! The test doubles, `Counting`, `FaultyIo` and `PowerCutIo` (with its
//! sweep harness, `powercut::sweep`), are built with the `testing` feature
//! only (and for this crate's own tests).
//!
//! Raw block devices (`Device`) live in the `mkfs-alloc-device` crate, so a
//! user of this crate compiles no OS device code.
//!
//! All offsets are in blocks of [`BlockIo::block_size`] bytes; every buffer is a
//! whole number of blocks. Errors carry the byte offset that failed.
//!
//! This crate has no `unsafe` code; the only crate allowed it is
//! `mkfs-alloc-device` (raw device ioctls).
//!
//! ```
//! use mkfs_alloc_blockio::{BlockIo, MemDisk, Slice};
//!
//! let mut disk = MemDisk::new(512, 2048)?; // 1 MiB of 512-byte blocks
//! disk.write_blocks(1, &[0xAB; 512])?;
//! // A window from block 1 on: block 0 of the slice is block 1 of the disk.
//! let mut part = Slice::new(&mut disk, 1, 100)?;
//! let mut block = [0u8; 512];
//! part.read_blocks(0, &mut block)?;
//! assert_eq!(block, [0xAB; 512]);
//! assert_eq!(part.num_blocks(), 100);
//! # Ok::<(), mkfs_alloc_blockio::IoError>(())
//! ```

#![warn(clippy::missing_errors_doc)]
use std::fmt;

#[cfg(any(test, feature = "testing"))]
mod counting;
#[cfg(any(test, feature = "testing"))]
mod faulty;
mod filecopy;
mod image;
mod mem;
#[cfg(any(test, feature = "testing"))]
pub mod powercut;
pub mod range;
mod slice;
mod stats;
mod watch;
mod zeroed;

#[cfg(any(test, feature = "testing"))]
pub use counting::{Counting, LogEntry};
#[cfg(any(test, feature = "testing"))]
pub use faulty::{injected_fault, Fault, FaultyIo, InjectedFault};
pub use filecopy::{CloneRefusal, CopyCounts, CopyError, CopyMode, FileCopier};
pub use image::{ImageFile, ZeroMethod};
pub use mem::MemDisk;
#[cfg(any(test, feature = "testing"))]
pub use powercut::{power_lost, CutReport, PowerCutIo, PowerLost};
pub use slice::Slice;
pub use stats::IoStats;
pub use watch::WriteWatch;
pub use zeroed::{zero_all, zero_blocks, Zeroed};

/// The kind of operation that failed, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// A read.
    Read,
    /// A write.
    Write,
    /// Zeroing a range (write of zeros, hole punch, zero-range or discard).
    Zero,
    /// Flushing caches to stable storage.
    Flush,
    /// Opening, creating or resizing the target.
    Open,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Zero => "zeroing",
            IoOp::Flush => "flush",
            IoOp::Open => "open",
        })
    }
}

/// An I/O failure, with the operation and the byte range that failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} of {len} bytes at byte offset {offset} failed")]
pub struct IoError {
    /// What was attempted.
    pub op: IoOp,
    /// Byte offset on the target where the failed operation started.
    pub offset: u64,
    /// Length in bytes of the failed operation.
    pub len: u64,
    /// The underlying error.
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// Builds an error for `op` over `len` bytes at `offset`.
    pub fn new(op: IoOp, offset: u64, len: u64, source: std::io::Error) -> Self {
        IoError {
            op,
            offset,
            len,
            source,
        }
    }
}

/// A block device: fixed-size blocks addressed by LBA.
///
/// Buffers passed to [`read_blocks`](BlockIo::read_blocks) and
/// [`write_blocks`](BlockIo::write_blocks) must be a whole number of blocks and
/// stay inside [`num_blocks`](BlockIo::num_blocks).
pub trait BlockIo {
    /// Size of one block in bytes (a power of two, 512..=4096 for real media).
    fn block_size(&self) -> u32;
    /// Number of blocks.
    fn num_blocks(&self) -> u64;
    /// Reads `dst.len() / block_size` blocks starting at `lba`.
    ///
    /// # Errors
    ///
    /// An [`IoError`] for a buffer that is not whole blocks or that leaves the
    /// device (`InvalidInput`), or the backend's read failure.
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError>;
    /// Writes `src.len() / block_size` blocks starting at `lba`.
    ///
    /// # Errors
    ///
    /// As [`BlockIo::read_blocks`], for a write.
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError>;
    /// Makes `count` blocks from `lba` read as zero.
    ///
    /// Backends override this with something cheaper than writing zeros
    /// (hole punching, `ZERO_RANGE`, `BLKZEROOUT`); the default writes zeros
    /// in large chunks.
    ///
    /// # Errors
    ///
    /// An [`IoError`] for a range that leaves the device, or the backend's
    /// failure to zero it.
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        write_zeroes_by_writing(self, lba, count)
    }
    /// True when every block reads as zero right now (a freshly created sparse
    /// image). Writers may then skip zero-filling. Defaults to `false`.
    fn reads_as_zero(&self) -> bool {
        false
    }
    /// Flushes written data to stable storage.
    ///
    /// # Errors
    ///
    /// The backend's [`IoError`] when the data cannot be made durable.
    fn flush(&mut self) -> Result<(), IoError>;
}

/// [`ImageFile`] overwrites zero ranges of up to this many bytes that hold
/// data with zeros instead of punching holes: rewriting a few hundred KiB of
/// allocated blocks costs less than the journal work a hole punch needs (see
/// the `image` module). Devices keep `BLKZEROOUT` at every size: a loop
/// device turns it into one `fallocate` of its backing file, cheaper than
/// the writes (measured in `BENCHMARKS.md`).
pub const SMALL_ZERO_RANGE: u64 = 1 << 20;

/// Size of the zero buffer used by [`write_zeroes_by_writing`].
pub const ZERO_CHUNK: usize = 1 << 20;

/// Zeroes `count` blocks from `lba` by writing zero buffers of up to
/// [`ZERO_CHUNK`] bytes. The fallback of [`BlockIo::write_zeroes`].
///
/// # Errors
///
/// As [`BlockIo::write_blocks`].
pub fn write_zeroes_by_writing<D: BlockIo + ?Sized>(
    dev: &mut D,
    lba: u64,
    count: u64,
) -> Result<(), IoError> {
    let bs = u64::from(dev.block_size());
    let per_chunk = (ZERO_CHUNK as u64 / bs).max(1);
    let zeros = vec![0u8; (per_chunk * bs) as usize];
    let mut done = 0u64;
    while done < count {
        let n = per_chunk.min(count - done);
        dev.write_blocks(lba + done, &zeros[..(n * bs) as usize])?;
        done += n;
    }
    Ok(())
}

impl<T: BlockIo + ?Sized> BlockIo for &mut T {
    fn block_size(&self) -> u32 {
        (**self).block_size()
    }
    fn num_blocks(&self) -> u64 {
        (**self).num_blocks()
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        (**self).read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        (**self).write_blocks(lba, src)
    }
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        (**self).write_zeroes(lba, count)
    }
    fn reads_as_zero(&self) -> bool {
        (**self).reads_as_zero()
    }
    fn flush(&mut self) -> Result<(), IoError> {
        (**self).flush()
    }
}
