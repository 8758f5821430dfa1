//! [`Counting`]: counts the operations on another device, and optionally
//! logs them in order.

use crate::range::{blocks_of, inner_accessors};
use crate::{BlockIo, IoError, IoOp, IoStats};

/// One logged operation: what, first LBA, number of blocks.
///
/// Flushes are logged as `(IoOp::Flush, 0, 0)`.
pub type LogEntry = (IoOp, u64, u64);

/// A [`BlockIo`] wrapper that counts the successful operations passed to the
/// inner device and, when asked at construction, logs the mutating ones
/// (writes, zeroings, flushes) in order — for tests of write order.
///
/// ```
/// use mkfs_alloc_blockio::{BlockIo, Counting, IoOp, MemDisk};
///
/// let mut dev = Counting::new(MemDisk::new(512, 8)?, true);
/// dev.write_blocks(2, &[1; 1024])?;
/// dev.flush()?;
/// assert_eq!(dev.log(), [(IoOp::Write, 2, 2), (IoOp::Flush, 0, 0)]);
/// assert_eq!(dev.stats().bytes_written, 1024);
/// # Ok::<(), mkfs_alloc_blockio::IoError>(())
/// ```
#[derive(Debug)]
pub struct Counting<D> {
    inner: D,
    stats: IoStats,
    log: Option<Vec<LogEntry>>,
}

impl<D: BlockIo> Counting<D> {
    /// Wraps `inner`; with `record_log`, also logs every mutating operation.
    pub fn new(inner: D, record_log: bool) -> Self {
        Counting {
            inner,
            stats: IoStats::default(),
            log: record_log.then(Vec::new),
        }
    }

    /// Counters of the successful operations so far.
    pub fn stats(&self) -> IoStats {
        self.stats
    }

    /// The logged operations in order; empty when logging is off.
    pub fn log(&self) -> &[LogEntry] {
        self.log.as_deref().unwrap_or_default()
    }

    /// Returns the log so far and starts a new one (logging stays as it was).
    pub fn take_log(&mut self) -> Vec<LogEntry> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    inner_accessors!(
        "The inner device, mutably (operations on it are not counted).",
        "Returns the inner device."
    );

    fn record(&mut self, entry: LogEntry) {
        if let Some(log) = &mut self.log {
            log.push(entry);
        }
    }
}

impl<D: BlockIo> BlockIo for Counting<D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.inner.read_blocks(lba, dst)?;
        self.stats
            .add_read(u64::try_from(dst.len()).unwrap_or(u64::MAX));
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.inner.write_blocks(lba, src)?;
        self.stats
            .add_write(u64::try_from(src.len()).unwrap_or(u64::MAX));
        let blocks = blocks_of(self.inner.block_size(), src.len());
        self.record((IoOp::Write, lba, blocks));
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        self.inner.write_zeroes(lba, count)?;
        let bs = u64::from(self.inner.block_size());
        self.stats.add_zero(count.saturating_mul(bs));
        self.record((IoOp::Zero, lba, count));
        Ok(())
    }

    fn reads_as_zero(&self) -> bool {
        self.inner.reads_as_zero()
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.inner.flush()?;
        self.stats.add_flush();
        self.record((IoOp::Flush, 0, 0));
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::MemDisk;

    #[test]
    fn counts_and_logs_in_order() {
        let mut d = Counting::new(MemDisk::new(512, 16).unwrap(), true);
        d.write_blocks(4, &[1; 1024]).unwrap();
        d.write_zeroes(8, 3).unwrap();
        d.read_blocks(0, &mut [0; 512]).unwrap();
        d.flush().unwrap();
        d.write_blocks(0, &[2; 512]).unwrap();
        assert_eq!(
            d.log(),
            [
                (IoOp::Write, 4, 2),
                (IoOp::Zero, 8, 3),
                (IoOp::Flush, 0, 0),
                (IoOp::Write, 0, 1),
            ]
        );
        assert_eq!(
            d.stats(),
            IoStats {
                reads: 1,
                bytes_read: 512,
                writes: 2,
                bytes_written: 1536,
                zeroes: 1,
                bytes_zeroed: 1536,
                flushes: 1,
            }
        );
        assert_eq!(d.take_log().len(), 4);
        assert!(d.log().is_empty());
        d.flush().unwrap();
        assert_eq!(d.log(), [(IoOp::Flush, 0, 0)]);
        assert_eq!(d.into_inner().as_bytes()[4 * 512], 1);
    }

    #[test]
    fn failed_ops_are_not_counted_and_log_can_be_off() {
        let mut d = Counting::new(MemDisk::new(512, 4).unwrap(), false);
        assert!(d.write_blocks(4, &[0; 512]).is_err());
        assert!(d.write_zeroes(0, 5).is_err());
        d.write_blocks(0, &[0; 512]).unwrap();
        assert!(d.log().is_empty());
        assert_eq!(d.stats().writes, 1);
        assert_eq!(d.stats().zeroes, 0);
    }

    #[test]
    fn zeroing_is_forwarded_not_turned_into_writes() {
        let inner = Counting::new(MemDisk::new(512, 4).unwrap(), true);
        let mut outer = Counting::new(inner, true);
        outer.write_zeroes(0, 4).unwrap();
        assert_eq!(outer.inner().log(), [(IoOp::Zero, 0, 4)]);
        assert_eq!(outer.stats().writes, 0);
    }
}
