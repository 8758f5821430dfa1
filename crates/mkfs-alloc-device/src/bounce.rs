//! The aligned bounce buffer of uncached transfers (`O_DIRECT` on Linux,
//! `FILE_FLAG_NO_BUFFERING` on Windows), shared by both platforms.

use crate::XferResult;

/// Size of the bounce buffer: the largest piece of one uncached transfer.
pub(crate) const BOUNCE: usize = 1 << 20;
/// Alignment of uncached buffers: covers every logical block size.
pub(crate) const ALIGN: usize = 4096;

/// A buffer aligned to [`ALIGN`] (safe code: the aligned window of a larger
/// allocation, found with `align_offset`).
#[derive(Debug)]
pub(crate) struct Bounce {
    storage: Vec<u8>,
    start: usize,
}

impl Bounce {
    /// A zeroed buffer of [`BOUNCE`] aligned bytes.
    pub(crate) fn new() -> Bounce {
        let storage = vec![0u8; BOUNCE + ALIGN];
        let start = storage.as_ptr().align_offset(ALIGN).min(ALIGN);
        Bounce { storage, start }
    }

    /// The first `len` (at most [`BOUNCE`]) aligned bytes.
    fn buf(&mut self, len: usize) -> &mut [u8] {
        &mut self.storage[self.start..self.start + len]
    }

    /// Reads `dst` from byte `offset` in pieces of at most [`BOUNCE`] bytes,
    /// each through the aligned buffer: `read(buf, at)` fills all of `buf`
    /// from byte `at`. A failure carries the bytes done before it.
    pub(crate) fn read(
        &mut self,
        offset: u64,
        dst: &mut [u8],
        mut read: impl FnMut(&mut [u8], u64) -> XferResult,
    ) -> XferResult {
        let mut done = 0usize;
        while done < dst.len() {
            let n = (dst.len() - done).min(BOUNCE);
            let buf = self.buf(n);
            read(buf, offset + done as u64).map_err(|(got, e)| (done as u64 + got, e))?;
            dst[done..done + n].copy_from_slice(buf);
            done += n;
        }
        Ok(())
    }

    /// Writes `src` at byte `offset` in pieces of at most [`BOUNCE`] bytes,
    /// each through the aligned buffer: `write(buf, at)` writes all of `buf`
    /// at byte `at`. A failure carries the bytes done before it.
    pub(crate) fn write(
        &mut self,
        offset: u64,
        src: &[u8],
        mut write: impl FnMut(&[u8], u64) -> XferResult,
    ) -> XferResult {
        let mut done = 0usize;
        while done < src.len() {
            let n = (src.len() - done).min(BOUNCE);
            let buf = self.buf(n);
            buf.copy_from_slice(&src[done..done + n]);
            write(buf, offset + done as u64).map_err(|(put, e)| (done as u64 + put, e))?;
            done += n;
        }
        Ok(())
    }
}
