//! [`BlockStream`]: a [`BlockIo`] seen as a byte stream (`Read + Write + Seek`),
//! for the `gpt` crate, which seeks to byte offsets and writes 128-byte entries.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};

use mkfs_alloc_blockio::BlockIo;

/// Largest span moved by one `read`/`write` call, so that a large request does
/// not allocate a buffer of its size.
const MAX_SPAN: u64 = 1 << 20;

/// A byte cursor over a block device. Partial blocks are read, modified and
/// written back.
pub(crate) struct BlockStream<'a, D: BlockIo> {
    dev: &'a mut D,
    pos: u64,
    len: u64,
    bs: u64,
}

impl<'a, D: BlockIo> BlockStream<'a, D> {
    pub(crate) fn new(dev: &'a mut D) -> Self {
        let bs = u64::from(dev.block_size());
        let len = dev.num_blocks().saturating_mul(bs);
        BlockStream {
            dev,
            pos: 0,
            len,
            bs,
        }
    }

    /// The blocks covering `[pos, pos + n)`: first LBA, byte offset of `pos`
    /// inside the first block, and the buffer length in bytes.
    fn cover(&self, n: u64) -> io::Result<(u64, usize, usize)> {
        let lba = self.pos / self.bs;
        let head = self.pos % self.bs;
        let total = (head + n).next_multiple_of(self.bs);
        Ok((lba, to_usize(head)?, to_usize(total)?))
    }
}

fn to_usize(v: u64) -> io::Result<usize> {
    usize::try_from(v).map_err(io::Error::other)
}

impl<D: BlockIo> fmt::Debug for BlockStream<'_, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockStream")
            .field("pos", &self.pos)
            .field("len", &self.len)
            .field("block_size", &self.bs)
            .finish_non_exhaustive()
    }
}

impl<D: BlockIo> Read for BlockStream<'_, D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let n = want.min(self.len.saturating_sub(self.pos)).min(MAX_SPAN);
        if n == 0 {
            return Ok(0);
        }
        let (lba, head, total) = self.cover(n)?;
        let mut tmp = vec![0u8; total];
        self.dev
            .read_blocks(lba, &mut tmp)
            .map_err(io::Error::other)?;
        let n_us = to_usize(n)?;
        buf[..n_us].copy_from_slice(&tmp[head..head + n_us]);
        self.pos += n;
        Ok(n_us)
    }
}

impl<D: BlockIo> Write for BlockStream<'_, D> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let want = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let n = want.min(self.len.saturating_sub(self.pos)).min(MAX_SPAN);
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "write at byte {} is past the end of the device ({} bytes)",
                    self.pos, self.len
                ),
            ));
        }
        let (lba, head, total) = self.cover(n)?;
        let n_us = to_usize(n)?;
        if head == 0 && n_us == total {
            self.dev
                .write_blocks(lba, &buf[..n_us])
                .map_err(io::Error::other)?;
        } else {
            let mut tmp = vec![0u8; total];
            self.dev
                .read_blocks(lba, &mut tmp)
                .map_err(io::Error::other)?;
            tmp[head..head + n_us].copy_from_slice(&buf[..n_us]);
            self.dev.write_blocks(lba, &tmp).map_err(io::Error::other)?;
        }
        self.pos += n;
        Ok(n_us)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.dev.flush().map_err(io::Error::other)
    }
}

impl<D: BlockIo> Seek for BlockStream<'_, D> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let new = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let new = new.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "seek {to:?} from byte {} leaves the range 0..=u64::MAX",
                    self.pos
                ),
            )
        })?;
        self.pos = new;
        Ok(new)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn unaligned_read_modify_write() {
        for bs in [512u32, 4096] {
            let mut disk = MemDisk::filled(bs, 8, 0xD1).unwrap();
            let mut s = BlockStream::new(&mut disk);
            assert_eq!(s.seek(SeekFrom::End(0)).unwrap(), 8 * u64::from(bs));
            s.seek(SeekFrom::Start(u64::from(bs) - 3)).unwrap();
            s.write_all(&[1, 2, 3, 4, 5, 6]).unwrap();
            s.seek(SeekFrom::Current(-6)).unwrap();
            let mut back = [0u8; 8];
            s.read_exact(&mut back).unwrap();
            assert_eq!(back, [1, 2, 3, 4, 5, 6, 0xD1, 0xD1]);
            // Whole blocks, aligned.
            s.seek(SeekFrom::Start(u64::from(bs) * 2)).unwrap();
            s.write_all(&vec![7u8; bs as usize * 2]).unwrap();
            // Past the end.
            s.seek(SeekFrom::End(-1)).unwrap();
            assert!(s.write_all(&[0, 0]).is_err());
            let mut rest = Vec::new();
            s.seek(SeekFrom::End(-4)).unwrap();
            s.read_to_end(&mut rest).unwrap();
            assert_eq!(rest.len(), 4);
            let bytes = disk.as_bytes();
            let b = bs as usize;
            assert!(bytes[2 * b..4 * b].iter().all(|&x| x == 7));
            assert_eq!(bytes[8 * b - 1], 0);
        }
    }
}
