//! [`Slice`]: a window of blocks of another device, e.g. one partition.

use crate::range::{block_range, buffer_range, inner_accessors, invalid};
use crate::{BlockIo, IoError, IoOp};

/// The blocks `[first_lba, first_lba + count)` of another [`BlockIo`], seen as
/// a device of its own whose LBA 0 is `first_lba`.
///
/// Lets a partition be formatted as if it were a whole device. Requests are
/// bounds-checked against the window; errors of the window's checks carry
/// byte offsets relative to the window, errors of the inner device carry the
/// inner device's offsets.
///
/// ```
/// use mkfs_alloc_blockio::{BlockIo, MemDisk, Slice};
///
/// let disk = MemDisk::new(512, 100)?;
/// let mut part = Slice::new(disk, 34, 50)?;
/// part.write_blocks(0, &[0xEB; 512])?;
/// assert!(part.write_blocks(50, &[0; 512]).is_err());
/// assert_eq!(part.into_inner().as_bytes()[34 * 512], 0xEB);
/// # Ok::<(), mkfs_alloc_blockio::IoError>(())
/// ```
#[derive(Debug)]
pub struct Slice<D: BlockIo> {
    inner: D,
    first_lba: u64,
    count: u64,
}

impl<D: BlockIo> Slice<D> {
    /// The `count` blocks of `inner` from `first_lba` on.
    ///
    /// # Errors
    ///
    /// `InvalidInput` ([`IoOp::Open`]) if the window does not fit in `inner`.
    pub fn new(inner: D, first_lba: u64, count: u64) -> Result<Self, IoError> {
        let bs = inner.block_size();
        let n = inner.num_blocks();
        let fits = matches!(first_lba.checked_add(count), Some(end) if end <= n);
        if !fits {
            return Err(invalid(
                IoOp::Open,
                first_lba.saturating_mul(u64::from(bs)),
                count.saturating_mul(u64::from(bs)),
                format!(
                    "window of {count} blocks at LBA {first_lba} does not fit in a device of \
                     {n} blocks"
                ),
            ));
        }
        Ok(Slice {
            inner,
            first_lba,
            count,
        })
    }

    /// First block of the window on the inner device.
    pub fn first_lba(&self) -> u64 {
        self.first_lba
    }

    inner_accessors!(
        "The inner device, mutably (for reads and writes outside the window).",
        "Returns the inner device."
    );
}

impl<D: BlockIo> BlockIo for Slice<D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.count
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        buffer_range(IoOp::Read, self.block_size(), self.count, lba, dst.len())?;
        // In range: `lba + blocks <= count`, and `first_lba + count` fits.
        self.inner.read_blocks(self.first_lba + lba, dst)
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        buffer_range(IoOp::Write, self.block_size(), self.count, lba, src.len())?;
        self.inner.write_blocks(self.first_lba + lba, src)
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        block_range(IoOp::Zero, self.block_size(), self.count, lba, count)?;
        self.inner.write_zeroes(self.first_lba + lba, count)
    }

    fn reads_as_zero(&self) -> bool {
        self.inner.reads_as_zero()
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.inner.flush()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::MemDisk;

    #[test]
    fn maps_lbas_into_the_window() {
        let disk = MemDisk::filled(512, 10, 0xD1).unwrap();
        let mut s = Slice::new(disk, 3, 4).unwrap();
        assert_eq!((s.num_blocks(), s.block_size(), s.first_lba()), (4, 512, 3));
        s.write_blocks(0, &[1; 512]).unwrap();
        s.write_blocks(3, &[2; 512]).unwrap();
        s.write_zeroes(1, 2).unwrap();
        let mut b = [0; 512];
        s.read_blocks(3, &mut b).unwrap();
        assert_eq!(b, [2; 512]);
        let bytes = s.into_inner().into_inner();
        let block = |i: usize| &bytes[i * 512..(i + 1) * 512];
        assert!(block(2).iter().all(|&x| x == 0xD1));
        assert!(block(3).iter().all(|&x| x == 1));
        assert!(block(4).iter().all(|&x| x == 0));
        assert!(block(5).iter().all(|&x| x == 0));
        assert!(block(6).iter().all(|&x| x == 2));
        assert!(block(7).iter().all(|&x| x == 0xD1));
    }

    #[test]
    fn bounds_are_the_window() {
        let mut s = Slice::new(MemDisk::new(512, 10).unwrap(), 3, 4).unwrap();
        let err = s.write_blocks(3, &[0; 1024]).unwrap_err();
        assert_eq!((err.op, err.offset), (IoOp::Write, 1536));
        assert!(s.read_blocks(4, &mut [0; 512]).is_err());
        assert!(s.write_zeroes(0, 5).is_err());
        assert!(s.write_zeroes(u64::MAX, 2).is_err());
        assert!(s.write_blocks(0, &[0; 100]).is_err());
        assert!(s.reads_as_zero(), "delegated, and nothing was written");
        s.write_blocks(0, &[0; 512]).unwrap();
        assert!(!s.reads_as_zero());

        assert!(Slice::new(MemDisk::new(512, 10).unwrap(), 3, 8).is_err());
        assert!(Slice::new(MemDisk::new(512, 10).unwrap(), u64::MAX, 2).is_err());
        assert!(Slice::new(MemDisk::new(512, 10).unwrap(), 10, 0).is_ok());
    }
}
