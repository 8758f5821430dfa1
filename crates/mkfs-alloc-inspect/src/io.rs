//! Byte-addressed reads over any [`BlockIo`], and [`ReadOnlyFile`].

use std::io;
use std::path::Path;

use mkfs_alloc_blockio::{BlockIo, ImageFile, IoError, IoOp};

use crate::error::InspectError;

/// Largest single read issued to the device (the reader's memory bound).
pub(crate) const MAX_READ: usize = 1 << 20;

/// Reads arbitrary byte ranges from a block device, within its size.
pub(crate) struct Reader<'a, D: BlockIo + ?Sized> {
    dev: &'a mut D,
    bs: u64,
    size: u64,
    scratch: Vec<u8>,
}

impl<'a, D: BlockIo + ?Sized> Reader<'a, D> {
    /// A reader over the whole device.
    pub(crate) fn new(dev: &'a mut D) -> Self {
        let bs = u64::from(dev.block_size()).max(1);
        let size = dev.num_blocks().saturating_mul(bs);
        Reader {
            dev,
            bs,
            size,
            scratch: Vec::new(),
        }
    }

    /// Size of the medium in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Block size of the device.
    pub(crate) fn block_size(&self) -> u64 {
        self.bs
    }

    /// Checks that `offset..offset + len` lies on the medium.
    pub(crate) fn check(
        &self,
        what: &'static str,
        offset: u64,
        len: u64,
    ) -> Result<(), InspectError> {
        let end = offset.checked_add(len);
        match end {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(InspectError::Truncated {
                what,
                offset,
                end: end.unwrap_or(u64::MAX),
                size: self.size,
            }),
        }
    }

    /// Fills `buf` from byte `offset`; `what` names the structure for errors.
    pub(crate) fn read_at(
        &mut self,
        what: &'static str,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), InspectError> {
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        self.check(what, offset, len)?;
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset + done as u64;
            let rest = &mut buf[done..];
            let n = self.read_piece(pos, rest)?;
            done += n;
        }
        Ok(())
    }

    /// Reads a prefix of `dst` from `pos` (in range), at most [`MAX_READ`]
    /// bytes; returns how many bytes were read.
    fn read_piece(&mut self, pos: u64, dst: &mut [u8]) -> Result<usize, InspectError> {
        let bs = self.bs;
        let want = dst.len().min(MAX_READ);
        let want64 = want as u64;
        if pos % bs == 0 && want64 >= bs {
            // Aligned: read whole blocks straight into the caller's buffer.
            let whole = usize::try_from(want64 / bs * bs).unwrap_or(want);
            self.dev.read_blocks(pos / bs, &mut dst[..whole])?;
            return Ok(whole);
        }
        // Unaligned: go through the scratch buffer.
        let first = pos / bs;
        let skip = usize::try_from(pos % bs).unwrap_or(0);
        let span_end = (pos + want64).div_ceil(bs).min(self.size / bs);
        let blocks = span_end.saturating_sub(first).max(1);
        let span = usize::try_from(blocks * bs).unwrap_or(MAX_READ);
        if self.scratch.len() < span {
            self.scratch.resize(span, 0);
        }
        self.dev.read_blocks(first, &mut self.scratch[..span])?;
        let n = want.min(span - skip);
        dst[..n].copy_from_slice(&self.scratch[skip..skip + n]);
        Ok(n)
    }

    /// Reads `len` bytes from `offset` into a new vector (`len` is bounded by
    /// the caller).
    pub(crate) fn read_vec(
        &mut self,
        what: &'static str,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, InspectError> {
        self.check(what, offset, len as u64)?;
        let mut v = vec![0u8; len];
        self.read_at(what, offset, &mut v)?;
        Ok(v)
    }

    /// Like [`Reader::read_vec`], but `None` when the range is off the medium.
    pub(crate) fn read_opt(
        &mut self,
        offset: u64,
        len: usize,
    ) -> Result<Option<Vec<u8>>, InspectError> {
        if self.check("probe", offset, len as u64).is_err() {
            return Ok(None);
        }
        self.read_vec("probe", offset, len).map(Some)
    }
}

/// A file (image or block device) opened read-only, as a [`BlockIo`]: an
/// [`ImageFile`] from [`ImageFile::open_read_only`] (no write permission
/// needed; a block device's size found by seeking) that refuses writes
/// itself with `PermissionDenied`. A trailing partial block is not visible.
#[derive(Debug)]
pub struct ReadOnlyFile(ImageFile);

impl ReadOnlyFile {
    /// Opens `path` read-only with blocks of `block_size` bytes (a power of
    /// two).
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`]: the file cannot be opened or sized, is a directory, or
    /// `block_size` is not a power of two.
    pub fn open(path: impl AsRef<Path>, block_size: u32) -> Result<Self, IoError> {
        ImageFile::open_read_only(path, block_size).map(ReadOnlyFile)
    }

    /// Size in bytes (including a trailing partial block).
    pub fn size_bytes(&self) -> u64 {
        self.0.size_bytes()
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// The error of a write to a [`ReadOnlyFile`].
fn read_only(op: IoOp, offset: u64, len: u64) -> IoError {
    let source = io::Error::new(io::ErrorKind::PermissionDenied, "opened read-only");
    IoError::new(op, offset, len, source)
}

impl BlockIo for ReadOnlyFile {
    fn block_size(&self) -> u32 {
        self.0.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.0.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.0.read_blocks(lba, dst)
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let bs = u64::from(self.block_size());
        Err(read_only(
            IoOp::Write,
            lba.saturating_mul(bs),
            src.len() as u64,
        ))
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        let bs = u64::from(self.block_size());
        Err(read_only(
            IoOp::Zero,
            lba.saturating_mul(bs),
            count.saturating_mul(bs),
        ))
    }

    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    #[test]
    fn unaligned_reads() {
        let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
        let mut d = MemDisk::from_vec(512, data.clone()).unwrap();
        let mut r = Reader::new(&mut d);
        for (off, len) in [
            (0, 512),
            (1, 10),
            (500, 30),
            (511, 1026),
            (3000, 1096),
            (0, 4096),
        ] {
            let v = r.read_vec("t", off, len).unwrap();
            assert_eq!(v, data[off as usize..off as usize + len], "{off} {len}");
        }
        assert!(matches!(
            r.read_vec("t", 4000, 97),
            Err(InspectError::Truncated { .. })
        ));
        assert!(r.read_opt(u64::MAX, 2).unwrap().is_none());
    }

    #[test]
    fn read_only_file_refuses_writes() {
        let dir = mkfs_alloc_testsupport::TempDir::new("inspect-ro");
        let p = dir.join("ro.img");
        std::fs::write(&p, vec![7u8; 1500]).unwrap();
        let mut f = ReadOnlyFile::open(&p, 512).unwrap();
        assert_eq!(f.num_blocks(), 2);
        assert_eq!(f.size_bytes(), 1500);
        let mut b = [0u8; 512];
        f.read_blocks(1, &mut b).unwrap();
        assert_eq!(b, [7u8; 512]);
        assert!(f.read_blocks(2, &mut b).is_err());
        assert!(f.write_blocks(0, &b).is_err());
        std::fs::remove_file(&p).unwrap();
        assert!(ReadOnlyFile::open(&p, 512).is_err());
    }
}
