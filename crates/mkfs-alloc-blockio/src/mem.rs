//! [`MemDisk`]: a `Vec<u8>`-backed block device for tests.

use std::{fmt, io};

use crate::range::{block_range, buffer_range, check_block_size, invalid};
use crate::{BlockIo, IoError, IoOp};

/// A block device held in memory.
///
/// Useful for tests: [`MemDisk::filled`] pre-fills the disk with a sentinel
/// byte so that regions a formatter forgot to write stand out.
///
/// ```
/// use mkfs_alloc_blockio::{BlockIo, MemDisk};
///
/// let mut disk = MemDisk::new(512, 8)?;
/// disk.write_blocks(1, &[0xAA; 512])?;
/// assert_eq!(disk.as_bytes()[512], 0xAA);
/// # Ok::<(), mkfs_alloc_blockio::IoError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct MemDisk {
    data: Vec<u8>,
    block_size: u32,
    all_zero: bool,
}

impl MemDisk {
    /// A zeroed disk of `num_blocks` blocks of `block_size` bytes.
    ///
    /// [`reads_as_zero`](BlockIo::reads_as_zero) is true until the first
    /// write or zeroing.
    ///
    /// # Errors
    ///
    /// `InvalidInput` ([`IoOp::Open`]) if `block_size` is not a power of two
    /// or the size does not fit in memory addresses.
    pub fn new(block_size: u32, num_blocks: u64) -> Result<Self, IoError> {
        let len = Self::byte_len(block_size, num_blocks)?;
        Ok(MemDisk {
            data: vec![0; len],
            block_size,
            all_zero: true,
        })
    }

    /// A disk of `num_blocks` blocks of `block_size` bytes, every byte set to
    /// `byte` (a sentinel such as `0xD1`).
    ///
    /// [`reads_as_zero`](BlockIo::reads_as_zero) is false, even for `byte == 0`.
    ///
    /// # Errors
    ///
    /// As [`MemDisk::new`].
    pub fn filled(block_size: u32, num_blocks: u64, byte: u8) -> Result<Self, IoError> {
        let len = Self::byte_len(block_size, num_blocks)?;
        Ok(MemDisk {
            data: vec![byte; len],
            block_size,
            all_zero: false,
        })
    }

    /// Wraps existing contents, whose length must be a whole number of
    /// `block_size`-byte blocks.
    ///
    /// [`reads_as_zero`](BlockIo::reads_as_zero) is false.
    ///
    /// # Errors
    ///
    /// `InvalidInput` ([`IoOp::Open`]) if `block_size` is not a power of two
    /// or `data.len()` is not a multiple of it.
    pub fn from_vec(block_size: u32, data: Vec<u8>) -> Result<Self, IoError> {
        let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
        check_block_size(block_size).map_err(|e| IoError::new(IoOp::Open, 0, len, e))?;
        if len % u64::from(block_size) != 0 {
            return Err(invalid(
                IoOp::Open,
                0,
                len,
                format!("{len} bytes are not a whole number of {block_size}-byte blocks"),
            ));
        }
        Ok(MemDisk {
            data,
            block_size,
            all_zero: false,
        })
    }

    /// Returns the contents.
    pub fn into_inner(self) -> Vec<u8> {
        self.data
    }

    /// The whole disk as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// Byte length of a disk, checked to fit in `usize`.
    fn byte_len(block_size: u32, num_blocks: u64) -> Result<usize, IoError> {
        check_block_size(block_size).map_err(|e| IoError::new(IoOp::Open, 0, 0, e))?;
        num_blocks
            .checked_mul(u64::from(block_size))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                invalid(
                    IoOp::Open,
                    0,
                    u64::MAX,
                    format!(
                        "{num_blocks} blocks of {block_size} bytes do not fit in memory addresses"
                    ),
                )
            })
    }

    /// Checks a request and returns its byte range as `usize` indices.
    fn span(
        &self,
        op: IoOp,
        lba: u64,
        blocks_len: Span,
    ) -> Result<std::ops::Range<usize>, IoError> {
        let r = match blocks_len {
            Span::Buffer(len) => buffer_range(op, self.block_size, self.num_blocks(), lba, len)?,
            Span::Blocks(count) => block_range(op, self.block_size, self.num_blocks(), lba, count)?,
        };
        // In range of `self.data`, so both fit in `usize`.
        let to_usize = |v: u64| {
            usize::try_from(v).map_err(|e| {
                IoError::new(
                    op,
                    r.offset,
                    r.len,
                    io::Error::new(io::ErrorKind::InvalidInput, e),
                )
            })
        };
        let start = to_usize(r.offset)?;
        let len = to_usize(r.len)?;
        Ok(start..start.saturating_add(len))
    }
}

/// What a request covers: a buffer length in bytes or a block count.
#[derive(Clone, Copy)]
enum Span {
    Buffer(usize),
    Blocks(u64),
}

impl fmt::Debug for MemDisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemDisk")
            .field("block_size", &self.block_size)
            .field("num_blocks", &self.num_blocks())
            .field("all_zero", &self.all_zero)
            .finish_non_exhaustive()
    }
}

impl BlockIo for MemDisk {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn num_blocks(&self) -> u64 {
        // `block_size` is a power of two, never zero.
        u64::try_from(self.data.len()).unwrap_or(u64::MAX) / u64::from(self.block_size)
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        let span = self.span(IoOp::Read, lba, Span::Buffer(dst.len()))?;
        dst.copy_from_slice(&self.data[span]);
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let span = self.span(IoOp::Write, lba, Span::Buffer(src.len()))?;
        self.data[span].copy_from_slice(src);
        self.all_zero = false;
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        let span = self.span(IoOp::Zero, lba, Span::Blocks(count))?;
        self.data[span].fill(0);
        self.all_zero = false;
        Ok(())
    }

    fn reads_as_zero(&self) -> bool {
        self.all_zero
    }

    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn new_is_zeroed_until_written() {
        let mut d = MemDisk::new(512, 4).unwrap();
        assert_eq!(d.num_blocks(), 4);
        assert!(d.reads_as_zero());
        assert!(d.as_bytes().iter().all(|&b| b == 0));
        d.write_blocks(0, &[0; 512]).unwrap();
        assert!(!d.reads_as_zero());

        let mut d = MemDisk::new(512, 4).unwrap();
        d.write_zeroes(0, 1).unwrap();
        assert!(!d.reads_as_zero());
    }

    #[test]
    fn round_trip_and_zero() {
        let mut d = MemDisk::filled(512, 4, 0xD1).unwrap();
        assert!(!d.reads_as_zero());
        let src: Vec<u8> = (0..1024u32).map(|i| (i % 251) as u8).collect();
        d.write_blocks(1, &src).unwrap();
        let mut dst = vec![0; 1024];
        d.read_blocks(1, &mut dst).unwrap();
        assert_eq!(dst, src);
        d.write_zeroes(2, 2).unwrap();
        let bytes = d.clone().into_inner();
        assert!(bytes[..512].iter().all(|&b| b == 0xD1));
        assert_eq!(bytes[512..1024], src[..512]);
        assert!(bytes[1024..].iter().all(|&b| b == 0));
        // Empty requests at the end are fine.
        d.write_blocks(4, &[]).unwrap();
        d.write_zeroes(4, 0).unwrap();
    }

    #[test]
    fn bounds_and_alignment_errors_name_the_offset() {
        let mut d = MemDisk::new(512, 4).unwrap();
        let err = d.write_blocks(3, &[0; 1024]).unwrap_err();
        assert_eq!((err.op, err.offset, err.len), (IoOp::Write, 1536, 1024));
        assert_eq!(err.source.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("1536"), "{err}");

        let err = d.read_blocks(0, &mut [0; 100]).unwrap_err();
        assert_eq!((err.op, err.offset), (IoOp::Read, 0));
        assert_eq!(err.source.kind(), io::ErrorKind::InvalidInput);

        let err = d.write_zeroes(2, 3).unwrap_err();
        assert_eq!((err.op, err.offset), (IoOp::Zero, 1024));
        assert!(d.write_zeroes(u64::MAX, 2).is_err());
        assert!(d.read_blocks(u64::MAX, &mut [0; 512]).is_err());
        assert!(d.reads_as_zero(), "failed requests change nothing");
    }

    #[test]
    fn constructors_validate() {
        assert!(MemDisk::new(0, 4).is_err());
        assert!(MemDisk::new(500, 4).is_err());
        assert!(MemDisk::new(4096, u64::MAX).is_err());
        assert!(MemDisk::from_vec(512, vec![0; 1000]).is_err());
        let d = MemDisk::from_vec(512, vec![7; 1024]).unwrap();
        assert_eq!(d.num_blocks(), 2);
        assert!(!d.reads_as_zero());
        assert_eq!(d.into_inner(), vec![7; 1024]);
    }
}
