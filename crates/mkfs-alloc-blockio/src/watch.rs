//! [`WriteWatch`]: whether anything was asked to be written to a target,
//! which tells a refusal (the target as it was) from a failure part-way.

use crate::{BlockIo, IoError};

/// A target that notes the first write (or zeroing) asked of it; reads,
/// flushes and the rest pass through.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemDisk;

    #[test]
    fn reads_and_flushes_are_not_writes() {
        let mut disk = MemDisk::new(512, 8).expect("a disk");
        let mut wrote = false;
        let mut w = WriteWatch::new(&mut disk, &mut wrote);
        let mut b = [0u8; 512];
        w.read_blocks(0, &mut b).expect("read");
        w.flush().expect("flush");
        assert_eq!((w.block_size(), w.num_blocks()), (512, 8));
        assert!(!wrote);
        let mut w = WriteWatch::new(&mut disk, &mut wrote);
        w.write_zeroes(1, 1).expect("zeroes");
        assert!(wrote, "a zeroing is a write");
        let mut wrote = false;
        WriteWatch::new(&mut disk, &mut wrote)
            .write_blocks(2, &[1; 512])
            .expect("write");
        assert!(wrote);
    }
}
