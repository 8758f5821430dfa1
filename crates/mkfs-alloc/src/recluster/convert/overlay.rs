//! A medium seen through the writes a job would make, none of them made:
//! what plans the re-cluster of the volume a conversion would produce
//! before the conversion writes anything (`convert --cluster`'s checks up
//! front).

use std::collections::HashMap;

use mkfs_alloc_blockio::{BlockIo, IoError};

/// `inner` read as it is, but for the blocks written to this overlay,
/// which are kept in memory and never reach `inner`.
pub(super) struct Overlay<'a, D: BlockIo + ?Sized> {
    inner: &'a mut D,
    blocks: HashMap<u64, Vec<u8>>,
}

impl<'a, D: BlockIo + ?Sized> Overlay<'a, D> {
    /// An overlay with nothing written yet.
    pub(super) fn new(inner: &'a mut D) -> Self {
        Overlay {
            inner,
            blocks: HashMap::new(),
        }
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
        if self.blocks.is_empty() {
            return Ok(());
        }
        let bs = self.block_size().max(1) as usize;
        for (i, b) in dst.chunks_mut(bs).enumerate() {
            if let Some(w) = self.blocks.get(&(lba + i as u64)) {
                b.copy_from_slice(w);
            }
        }
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        // The bounds and the buffer's shape are checked as the medium would.
        let bs = self.block_size().max(1) as usize;
        let n = (src.len() / bs) as u64;
        if src.len() % bs != 0 || lba.checked_add(n).is_none_or(|e| e > self.num_blocks()) {
            return Err(IoError::new(
                mkfs_alloc_blockio::IoOp::Write,
                lba * bs as u64,
                src.len() as u64,
                std::io::Error::from(std::io::ErrorKind::InvalidInput),
            ));
        }
        for (i, b) in src.chunks(bs).enumerate() {
            self.blocks.insert(lba + i as u64, b.to_vec());
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn writes_are_read_back_and_never_reach_the_medium() {
        let mut disk = MemDisk::new(512, 8).unwrap();
        disk.write_blocks(1, &[7; 1024]).unwrap();
        let before = disk.as_bytes().to_vec();
        let mut o = Overlay::new(&mut disk);
        o.write_blocks(2, &[9; 512]).unwrap();
        assert!(o.write_blocks(8, &[0; 512]).is_err());
        let mut b = vec![0u8; 1536];
        o.read_blocks(1, &mut b).unwrap();
        assert!(b[..512].iter().all(|&x| x == 7));
        assert!(b[512..1024].iter().all(|&x| x == 9));
        assert!(b[1024..].iter().all(|&x| x == 0));
        drop(o);
        assert!(disk.as_bytes() == &before[..]);
    }
}
