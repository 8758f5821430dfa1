//! Whether a format has begun to write: a failure before the first write is
//! a refusal (exit 2, the target as it was), one after it an I/O failure
//! (exit 1).

use crate::target::{Action, Opened, Target};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::blockio::{BlockIo, IoError};

/// A target that notes the first write (or zeroing) asked of it.
pub struct WriteWatch<'a> {
    io: &'a mut dyn BlockIo,
    wrote: &'a mut bool,
}

impl<'a> WriteWatch<'a> {
    /// Watches `io`; `wrote` becomes true at the first write asked for
    /// (before it is tried: a write that fails may have written part).
    pub fn new(io: &'a mut dyn BlockIo, wrote: &'a mut bool) -> Self {
        WriteWatch { io, wrote }
    }
}

impl BlockIo for WriteWatch<'_> {
    fn block_size(&self) -> u32 {
        self.io.block_size()
    }
    fn num_blocks(&self) -> u64 {
        self.io.num_blocks()
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.io.read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        *self.wrote = true;
        self.io.write_blocks(lba, src)
    }
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        *self.wrote = true;
        self.io.write_zeroes(lba, count)
    }
    fn reads_as_zero(&self) -> bool {
        self.io.reads_as_zero()
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.io.flush()
    }
}

/// An image that did not take the size it was opened with is no image
/// (`mkfs_alloc_device::target::Target::check_opened`: a file of `/proc` or
/// `/sys`); exit 2.
pub fn check_opened(target: &Target, opened: &Opened) -> Result<(), Failure> {
    target.check_opened(opened)
}

/// A failure of a run on an opened target: before the first write
/// (`wrote` false) it is a refusal (exit 2) and a grown image gets its old
/// length back; after it, it stays what it was.
pub fn settle(failure: Failure, wrote: bool, target: &Target) -> Failure {
    if wrote {
        return failure;
    }
    if let (Action::Grow(_), Some(len)) = (target.action(), target.len_before()) {
        let restored = std::fs::OpenOptions::new()
            .write(true)
            .open(target.path())
            .and_then(|f| f.set_len(len));
        if let Err(e) = restored {
            return Failure::Io(anyhow!(
                "{}; the image was grown but nothing was written, and shrinking it back to {len} bytes failed: {e}",
                crate::text::error_text(failure.error())
            ));
        }
    }
    match failure {
        Failure::Io(e) => usage(anyhow!(
            "{}; nothing was written",
            crate::text::error_text(&e)
        )),
        f => f,
    }
}
