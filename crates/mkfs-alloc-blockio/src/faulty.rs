//! [`FaultyIo`]: fault injection for crash-safety tests.
//!
//! A test first runs the formatter on `FaultyIo::new(disk, Fault::Never)` and
//! reads [`FaultyIo::ops_seen`] to learn the number `n` of mutating operations
//! (writes, zeroings, flushes); then, for every `k` in `0..n`, it runs again
//! with `Fault::FailAfter(k)` or `Fault::StopAfter(k)` and checks what the
//! device holds: exactly the first `k` operations.

use std::fmt;
use std::io;

use crate::range::{blocks_of, inner_accessors};
use crate::{BlockIo, IoError, IoOp};

/// Which mutating operations fail.
///
/// Mutating operations are `write_blocks`, `write_zeroes` and `flush`,
/// numbered from 0 in the order they reach the [`FaultyIo`]. In both fault
/// kinds operations `0..k` reach the device and persist; operation `k` and
/// every later one return an [`IoError`] and reach nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No fault: every operation is passed on. For counting operations.
    Never,
    /// A failing medium: mutating operation `k` and all later ones fail;
    /// reads keep working.
    FailAfter(u64),
    /// A pulled stick: from mutating operation `k` on, every operation,
    /// reads included, fails.
    StopAfter(u64),
}

/// The error inside the [`IoError`]s that a [`FaultyIo`] injects; find it
/// with [`injected_fault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFault {
    /// The fault the device was configured with.
    pub fault: Fault,
    /// The operation that was refused.
    pub op: IoOp,
    /// Number of mutating operations seen before this one.
    pub ops_before: u64,
}

impl fmt::Display for InjectedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "injected fault {:?}: {} refused after {} mutating operations",
            self.fault, self.op, self.ops_before
        )
    }
}

impl std::error::Error for InjectedFault {}

/// The [`InjectedFault`] inside `err`, if a [`FaultyIo`] made it.
pub fn injected_fault(err: &IoError) -> Option<&InjectedFault> {
    err.source.get_ref()?.downcast_ref::<InjectedFault>()
}

/// A [`BlockIo`] wrapper that fails operations as set by a [`Fault`].
///
/// ```
/// use mkfs_alloc_blockio::{injected_fault, BlockIo, Fault, FaultyIo, MemDisk};
///
/// let mut dev = FaultyIo::new(MemDisk::new(512, 4)?, Fault::FailAfter(1));
/// dev.write_blocks(0, &[1; 512])?; // op 0: passes
/// let err = dev.write_blocks(1, &[2; 512]).unwrap_err(); // op 1: fails
/// assert!(injected_fault(&err).is_some());
/// assert_eq!(dev.ops_seen(), 2);
/// assert_eq!(dev.into_inner().as_bytes()[512], 0);
/// # Ok::<(), mkfs_alloc_blockio::IoError>(())
/// ```
#[derive(Debug)]
pub struct FaultyIo<D> {
    inner: D,
    fault: Fault,
    ops_seen: u64,
}

impl<D: BlockIo> FaultyIo<D> {
    /// Wraps `inner`, injecting `fault`.
    pub fn new(inner: D, fault: Fault) -> Self {
        FaultyIo {
            inner,
            fault,
            ops_seen: 0,
        }
    }

    /// Number of mutating operations attempted so far, the refused ones
    /// included.
    pub fn ops_seen(&self) -> u64 {
        self.ops_seen
    }

    /// True once an operation has been refused or, for
    /// [`Fault::StopAfter`], the device is gone.
    pub fn tripped(&self) -> bool {
        match self.fault {
            Fault::Never => false,
            Fault::FailAfter(k) | Fault::StopAfter(k) => self.ops_seen > k,
        }
    }

    /// The configured fault.
    pub fn fault(&self) -> Fault {
        self.fault
    }

    inner_accessors!(
        "The inner device, mutably (operations on it bypass the fault).",
        "Returns the inner device, e.g. to check what persisted."
    );

    /// Counts one mutating operation and says whether it may pass.
    fn admit(&mut self, op: IoOp, lba: u64, blocks: u64) -> Result<(), IoError> {
        let index = self.ops_seen;
        self.ops_seen = self.ops_seen.saturating_add(1);
        let refused = match self.fault {
            Fault::Never => false,
            Fault::FailAfter(k) | Fault::StopAfter(k) => index >= k,
        };
        if refused {
            Err(self.injected(op, lba, blocks, index))
        } else {
            Ok(())
        }
    }

    fn injected(&self, op: IoOp, lba: u64, blocks: u64, ops_before: u64) -> IoError {
        let bs = u64::from(self.inner.block_size());
        let source = io::Error::other(InjectedFault {
            fault: self.fault,
            op,
            ops_before,
        });
        IoError::new(
            op,
            lba.saturating_mul(bs),
            blocks.saturating_mul(bs),
            source,
        )
    }
}

impl<D: BlockIo> BlockIo for FaultyIo<D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        if matches!(self.fault, Fault::StopAfter(_)) && self.tripped() {
            let blocks = blocks_of(self.inner.block_size(), dst.len());
            return Err(self.injected(IoOp::Read, lba, blocks, self.ops_seen));
        }
        self.inner.read_blocks(lba, dst)
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let blocks = blocks_of(self.inner.block_size(), src.len());
        self.admit(IoOp::Write, lba, blocks)?;
        self.inner.write_blocks(lba, src)
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        self.admit(IoOp::Zero, lba, count)?;
        self.inner.write_zeroes(lba, count)
    }

    fn reads_as_zero(&self) -> bool {
        self.inner.reads_as_zero()
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.admit(IoOp::Flush, 0, 0)?;
        self.inner.flush()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{Counting, MemDisk};

    /// A small "run": five mutating operations, each leaving a mark.
    fn run<D: BlockIo>(dev: &mut D) -> Result<(), IoError> {
        dev.write_blocks(0, &[1; 512])?;
        dev.write_blocks(1, &[2; 512])?;
        dev.flush()?;
        dev.write_zeroes(2, 1)?;
        dev.write_blocks(3, &[4; 512])?;
        Ok(())
    }

    #[test]
    fn never_counts_the_ops_of_a_run() {
        let mut dev = FaultyIo::new(MemDisk::filled(512, 4, 0xD1).unwrap(), Fault::Never);
        run(&mut dev).unwrap();
        assert_eq!(dev.ops_seen(), 5);
        assert!(!dev.tripped());
    }

    #[test]
    fn stops_at_exactly_k() {
        for stop in [false, true] {
            for k in 0..=5u64 {
                let fault = if stop {
                    Fault::StopAfter(k)
                } else {
                    Fault::FailAfter(k)
                };
                let disk = Counting::new(MemDisk::filled(512, 4, 0xD1).unwrap(), true);
                let mut dev = FaultyIo::new(disk, fault);
                let res = run(&mut dev);
                let passed = dev.inner().log().len() as u64;
                assert_eq!(passed, k.min(5), "{fault:?}");
                if k < 5 {
                    let err = res.unwrap_err();
                    let inj = injected_fault(&err).unwrap();
                    assert_eq!((inj.fault, inj.ops_before), (fault, k));
                    assert!(dev.tripped());
                    // Every later op fails too, and nothing reaches the disk.
                    assert!(dev.write_blocks(0, &[9; 512]).is_err());
                    assert!(dev.flush().is_err());
                    assert_eq!(dev.inner().log().len() as u64, k);
                    // Reads work on a failing medium, not on a pulled stick.
                    let mut b = [0; 512];
                    assert_eq!(dev.read_blocks(0, &mut b).is_err(), stop, "{fault:?}");
                } else {
                    res.unwrap();
                    assert!(!dev.tripped());
                }
                let bytes = dev.into_inner().into_inner().into_inner();
                let expect: [u8; 4] = match k {
                    0 => [0xD1, 0xD1, 0xD1, 0xD1],
                    1..=2 => [1, if k == 2 { 2 } else { 0xD1 }, 0xD1, 0xD1],
                    3 => [1, 2, 0xD1, 0xD1],
                    4 => [1, 2, 0, 0xD1],
                    _ => [1, 2, 0, 4],
                };
                for (i, &e) in expect.iter().enumerate() {
                    assert!(
                        bytes[i * 512..(i + 1) * 512].iter().all(|&b| b == e),
                        "{fault:?} block {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn inner_errors_pass_through_and_count() {
        let mut dev = FaultyIo::new(MemDisk::new(512, 4).unwrap(), Fault::FailAfter(10));
        let err = dev.write_blocks(4, &[0; 512]).unwrap_err();
        assert!(injected_fault(&err).is_none());
        assert_eq!(err.source.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(dev.ops_seen(), 1);
        assert!(dev.reads_as_zero());
    }
}
