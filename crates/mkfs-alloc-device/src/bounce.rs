//! The aligned bounce buffer of uncached transfers (`O_DIRECT` on Linux,
//! `FILE_FLAG_NO_BUFFERING` on Windows), shared by both platforms.

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
    pub(crate) fn buf(&mut self, len: usize) -> &mut [u8] {
        &mut self.storage[self.start..self.start + len]
    }
}
