//! A medium seen through the writes a job would make, none of them made:
//! reads see the medium under what was written here, writes and flushes
//! stay in memory. `convert --cluster` plans the re-cluster of the volume a
//! conversion would make before the conversion writes anything, and
//! [`super::flush_stages`] counts a job's bytes between its flushes.

use std::collections::BTreeMap;

use mkfs_alloc_blockio::{BlockIo, IoError, IoOp};

/// `inner` read as it is, but for the blocks written to this overlay,
/// which are kept in memory and never reach `inner`; the bytes written
/// between one flush and the next are counted.
pub(super) struct Overlay<'a, D: BlockIo + ?Sized> {
    inner: &'a mut D,
    blocks: BTreeMap<u64, Vec<u8>>,
    /// Bytes written before each flush so far.
    stages: Vec<u64>,
    /// Bytes written since the last flush.
    stage: u64,
}

impl<'a, D: BlockIo + ?Sized> Overlay<'a, D> {
    /// An overlay with nothing written yet.
    pub(super) fn new(inner: &'a mut D) -> Self {
        Overlay {
            inner,
            blocks: BTreeMap::new(),
            stages: Vec::new(),
            stage: 0,
        }
    }

    /// The bytes written before each flush, in order, and those written
    /// after the last one (if any).
    pub(super) fn into_stages(self) -> Vec<u64> {
        let mut stages = self.stages;
        if self.stage > 0 {
            stages.push(self.stage);
        }
        stages
    }

    fn bs(&self) -> usize {
        usize::try_from(self.inner.block_size())
            .unwrap_or(512)
            .max(1)
    }

    /// Refuses `n` blocks at `lba` past the medium's end, as the medium would.
    fn check(&self, op: IoOp, lba: u64, n: u64) -> Result<(), IoError> {
        if lba.checked_add(n).is_none_or(|e| e > self.num_blocks()) {
            let bs = self.bs() as u64;
            return Err(IoError::new(
                op,
                lba.saturating_mul(bs),
                n.saturating_mul(bs),
                std::io::Error::from(std::io::ErrorKind::InvalidInput),
            ));
        }
        Ok(())
    }
}

impl<D: BlockIo + ?Sized> BlockIo for Overlay<'_, D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.inner.read_blocks(lba, dst)?;
        let bs = self.bs();
        let n = (dst.len() / bs) as u64;
        for (&b, data) in self.blocks.range(lba..lba.saturating_add(n)) {
            let at = usize::try_from(b - lba).unwrap_or(0) * bs;
            dst[at..at + bs].copy_from_slice(data);
        }
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let bs = self.bs();
        if src.len() % bs != 0 {
            return Err(IoError::new(
                IoOp::Write,
                lba * bs as u64,
                src.len() as u64,
                std::io::Error::from(std::io::ErrorKind::InvalidInput),
            ));
        }
        self.check(IoOp::Write, lba, (src.len() / bs) as u64)?;
        for (i, chunk) in src.chunks_exact(bs).enumerate() {
            self.blocks.insert(lba + i as u64, chunk.to_vec());
        }
        self.stage += src.len() as u64;
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        self.check(IoOp::Write, lba, count)?;
        let bs = self.bs();
        for b in lba..lba + count {
            self.blocks.insert(b, vec![0; bs]);
        }
        self.stage += count * bs as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.stages.push(std::mem::take(&mut self.stage));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn writes_are_read_back_counted_by_flush_and_never_reach_the_medium() {
        let mut disk = MemDisk::new(512, 8).unwrap();
        disk.write_blocks(1, &[7; 1024]).unwrap();
        let before = disk.as_bytes().to_vec();
        let mut o = Overlay::new(&mut disk);
        o.write_blocks(2, &[9; 512]).unwrap();
        assert!(o.write_blocks(8, &[0; 512]).is_err());
        assert!(o.write_zeroes(7, 2).is_err());
        o.flush().unwrap();
        o.write_zeroes(3, 1).unwrap();
        let mut b = vec![0u8; 1536];
        o.read_blocks(1, &mut b).unwrap();
        assert!(b[..512].iter().all(|&x| x == 7));
        assert!(b[512..1024].iter().all(|&x| x == 9));
        assert!(b[1024..].iter().all(|&x| x == 0));
        assert_eq!(o.into_stages(), vec![512, 512]);
        assert!(disk.as_bytes() == &before[..]);
    }
}
