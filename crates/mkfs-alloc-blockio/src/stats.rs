//! Operation counters shared by [`ImageFile`](crate::ImageFile) and
//! `Counting` (the `testing` feature).

/// Counts of successful operations and the bytes they moved.
///
/// Zeroing is counted apart from writing: a [`write_zeroes`] call adds to
/// `zeroes` and `bytes_zeroed` only, even when the backend had to fall back to
/// writing zero buffers.
///
/// [`write_zeroes`]: crate::BlockIo::write_zeroes
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Number of `read_blocks` calls.
    pub reads: u64,
    /// Bytes read by `read_blocks`.
    pub bytes_read: u64,
    /// Number of `write_blocks` calls.
    pub writes: u64,
    /// Bytes written by `write_blocks`.
    pub bytes_written: u64,
    /// Number of `write_zeroes` calls.
    pub zeroes: u64,
    /// Bytes zeroed by `write_zeroes`.
    pub bytes_zeroed: u64,
    /// Number of `flush` calls.
    pub flushes: u64,
}

impl IoStats {
    /// Records one read of `bytes` bytes.
    pub(crate) fn add_read(&mut self, bytes: u64) {
        self.reads = self.reads.saturating_add(1);
        self.bytes_read = self.bytes_read.saturating_add(bytes);
    }

    /// Records one write of `bytes` bytes.
    pub(crate) fn add_write(&mut self, bytes: u64) {
        self.writes = self.writes.saturating_add(1);
        self.bytes_written = self.bytes_written.saturating_add(bytes);
    }

    /// Records one zeroing of `bytes` bytes.
    pub(crate) fn add_zero(&mut self, bytes: u64) {
        self.zeroes = self.zeroes.saturating_add(1);
        self.bytes_zeroed = self.bytes_zeroed.saturating_add(bytes);
    }

    /// Records one flush.
    pub(crate) fn add_flush(&mut self) {
        self.flushes = self.flushes.saturating_add(1);
    }
}
