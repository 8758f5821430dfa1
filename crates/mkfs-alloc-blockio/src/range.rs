//! Bounds and alignment checks shared by the backends (also those of other
//! crates, such as raw devices), and what the wrappers of another device ([`Slice`](crate::Slice),
//! `Counting`, `FaultyIo`) share.
//!
//! Every check returns an [`IoError`] of kind [`io::ErrorKind::InvalidInput`]
//! instead of panicking, with the (saturated) byte offset of the request.

use std::io;

use crate::{IoError, IoOp};

/// A validated block range: byte offset and byte length on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// Byte offset of the first block.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Builds an `InvalidInput` error for `op` over `len` bytes at `offset`.
pub fn invalid(op: IoOp, offset: u64, len: u64, msg: String) -> IoError {
    IoError::new(
        op,
        offset,
        len,
        io::Error::new(io::ErrorKind::InvalidInput, msg),
    )
}

/// Checks that `block_size` is a power of two (so also non-zero).
pub(crate) fn check_block_size(block_size: u32) -> Result<(), io::Error> {
    if block_size.is_power_of_two() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("block size {block_size} is not a power of two"),
        ))
    }
}

/// Checks a buffer of `buf_len` bytes at `lba` against a device of
/// `num_blocks` blocks of `block_size` bytes.
///
/// # Errors
///
/// An `InvalidInput` [`IoError`] (of `op`, at the request's byte offset)
/// for a buffer that is not whole blocks or a range that leaves the device.
pub fn buffer_range(
    op: IoOp,
    block_size: u32,
    num_blocks: u64,
    lba: u64,
    buf_len: usize,
) -> Result<ByteRange, IoError> {
    let bs = u64::from(block_size);
    let len = u64::try_from(buf_len).unwrap_or(u64::MAX);
    let offset = lba.saturating_mul(bs);
    if bs == 0 || len % bs != 0 {
        return Err(invalid(
            op,
            offset,
            len,
            format!("buffer of {len} bytes is not a whole number of {bs}-byte blocks"),
        ));
    }
    block_range(op, block_size, num_blocks, lba, len / bs)
}

/// Checks `count` blocks at `lba` against a device of `num_blocks` blocks of
/// `block_size` bytes.
///
/// # Errors
///
/// An `InvalidInput` [`IoError`] for a range that leaves the device (or
/// whose end overflows).
pub fn block_range(
    op: IoOp,
    block_size: u32,
    num_blocks: u64,
    lba: u64,
    count: u64,
) -> Result<ByteRange, IoError> {
    let bs = u64::from(block_size);
    let offset = lba.saturating_mul(bs);
    let len = count.saturating_mul(bs);
    let end = lba.checked_add(count);
    match end {
        Some(end) if end <= num_blocks => Ok(ByteRange { offset, len }),
        _ => Err(invalid(
            op,
            offset,
            len,
            format!(
                "blocks {lba}..{lba}+{count} are outside the device of {num_blocks} blocks \
                 of {bs} bytes"
            ),
        )),
    }
}

/// Whole blocks of `block_size` bytes (0 taken as 1) in `bytes` bytes.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn blocks_of(block_size: u32, bytes: usize) -> u64 {
    let bs = u64::from(block_size).max(1);
    u64::try_from(bytes).unwrap_or(u64::MAX) / bs
}

/// The `inner`, `inner_mut` and `into_inner` methods of a wrapper whose
/// field `inner: D` is the wrapped device; the arguments are the docs of
/// `inner_mut` and `into_inner`.
macro_rules! inner_accessors {
    ($inner_mut_doc:literal, $into_inner_doc:literal) => {
        /// The inner device.
        pub fn inner(&self) -> &D {
            &self.inner
        }

        #[doc = $inner_mut_doc]
        pub fn inner_mut(&mut self) -> &mut D {
            &mut self.inner
        }

        #[doc = $into_inner_doc]
        pub fn into_inner(self) -> D {
            self.inner
        }
    };
}
pub(crate) use inner_accessors;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn accepts_in_range_and_rejects_the_rest() {
        assert_eq!(
            buffer_range(IoOp::Read, 512, 4, 3, 512).unwrap(),
            ByteRange {
                offset: 1536,
                len: 512
            }
        );
        assert!(buffer_range(IoOp::Read, 512, 4, 3, 1024).is_err());
        assert!(buffer_range(IoOp::Read, 512, 4, 0, 100).is_err());
        assert!(block_range(IoOp::Zero, 512, 4, u64::MAX, 2).is_err());
        let err = block_range(IoOp::Zero, 512, 4, 5, 0).unwrap_err();
        assert_eq!(err.offset, 2560);
        assert_eq!(err.source.kind(), io::ErrorKind::InvalidInput);
        assert!(check_block_size(0).is_err());
        assert!(check_block_size(3000).is_err());
        assert!(check_block_size(4096).is_ok());
    }
}
