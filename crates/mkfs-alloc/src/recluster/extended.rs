//! A medium read as longer than it is (zeros past its end): how a grow of
//! an image file is planned before the file is extended.

use mkfs_alloc_blockio::{BlockIo, IoError, IoOp};

/// A medium read as if it were `blocks` long, zeros past its end: a grow
/// of an image file planned before the file is extended (writes fail).
#[derive(Debug)]
pub struct Extended<D> {
    inner: D,
    blocks: u64,
}

impl<D: BlockIo> Extended<D> {
    /// `inner`, read as `blocks` blocks (at least its own length).
    pub fn new(inner: D, blocks: u64) -> Self {
        let blocks = blocks.max(inner.num_blocks());
        Extended { inner, blocks }
    }
}

impl<D: BlockIo> BlockIo for Extended<D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.blocks
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        let bs = u64::from(self.block_size());
        let have = self.inner.num_blocks();
        let n = dst.len() as u64 / bs;
        let inside = have.saturating_sub(lba).min(n);
        let split = usize::try_from(inside * bs).unwrap_or(0);
        let (a, b) = dst.split_at_mut(split);
        if inside > 0 {
            self.inner.read_blocks(lba, a)?;
        }
        b.fill(0);
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        Err(IoError::new(
            IoOp::Write,
            lba * u64::from(self.block_size()),
            src.len() as u64,
            std::io::Error::other("an extended view is read-only"),
        ))
    }

    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}
