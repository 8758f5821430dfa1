//! Positioned reads of the image.

use mkfs_alloc_blockio::BlockIo;
use std::io;

/// Where the exporters read the image: whole byte ranges at an offset.
pub trait ReadAt {
    /// Fills all of `buf` from the image's byte `offset` on.
    ///
    /// # Errors
    ///
    /// The reader's error; a range beyond the image's end is an error.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

impl ReadAt for &[u8] {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).ok().filter(|&s| s <= self.len());
        let src = start
            .and_then(|s| self.get(s..s.checked_add(buf.len())?))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "beyond the image"))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// A [`BlockIo`] (an `ImageFile`, a `MemDisk`, a `Slice`) read by byte
/// ranges: reads that do not start and end on its blocks go through one
/// block-sized scratch buffer at each unaligned end.
#[derive(Debug)]
pub struct BlockReader<D> {
    dev: D,
    scratch: Vec<u8>,
}

impl<D: BlockIo> BlockReader<D> {
    /// Reads `dev`.
    pub fn new(dev: D) -> Self {
        let bs = dev.block_size() as usize;
        BlockReader {
            dev,
            scratch: vec![0; bs],
        }
    }

    /// The device back.
    pub fn into_inner(self) -> D {
        self.dev
    }
}

impl<D: BlockIo> ReadAt for BlockReader<D> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let bs = u64::from(self.dev.block_size());
        let mut at = offset;
        let mut done = 0usize;
        while done < buf.len() {
            let left = buf.len() - done;
            let within = at % bs;
            if within == 0 && left as u64 >= bs {
                // The aligned middle, straight into the caller's buffer.
                let n = (left as u64 / bs * bs) as usize;
                self.dev
                    .read_blocks(at / bs, &mut buf[done..done + n])
                    .map_err(|e| e.source)?;
                done += n;
                at += n as u64;
            } else {
                // An unaligned head or tail: one whole block, then the part wanted.
                self.dev
                    .read_blocks(at / bs, &mut self.scratch)
                    .map_err(|e| e.source)?;
                let n = ((bs - within) as usize).min(left);
                buf[done..done + n]
                    .copy_from_slice(&self.scratch[within as usize..within as usize + n]);
                done += n;
                at += n as u64;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn unaligned_reads_through_blocks() {
        let mut disk = MemDisk::new(512, 8).unwrap();
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        disk.write_blocks(0, &data).unwrap();
        let mut r = BlockReader::new(disk);
        for (off, len) in [
            (0, 4096),
            (1, 10),
            (511, 2),
            (100, 1500),
            (3000, 1096),
            (512, 512),
        ] {
            let mut buf = vec![0; len];
            r.read_exact_at(off as u64, &mut buf).unwrap();
            assert_eq!(buf, data[off..off + len], "{off}+{len}");
        }
        let mut buf = [0; 2];
        assert!(r.read_exact_at(4095, &mut buf).is_err());
        assert!((&data[..]).read_exact_at(4095, &mut buf).is_err());
    }
}
