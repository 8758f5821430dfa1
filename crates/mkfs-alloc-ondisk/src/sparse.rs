//! The Android sparse image format (what fastboot flashes and `simg2img`
//! expands): a [`SparseHeader`], then chunks, each a [`ChunkHeader`] and
//! its data. All little-endian.
//!
//! Sources: AOSP `system/core/libsparse/sparse_format.h` (the two headers,
//! the magic and the chunk types; RAW data is `chunk_sz` blocks, FILL and
//! CRC32 data four bytes, DONT_CARE none) and `sparse_read.cpp` (a CRC32
//! chunk holds the CRC-32 of every block before it, DONT_CARE blocks
//! counted as zeros; the chunks must cover `total_blks` exactly).

use core::mem::size_of;

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// `magic` of a sparse image.
pub const SPARSE_MAGIC: u32 = 0xED26_FF3A;
/// A chunk of data blocks.
pub const CHUNK_RAW: u16 = 0xCAC1;
/// A chunk of blocks that repeat one 32-bit value.
pub const CHUNK_FILL: u16 = 0xCAC2;
/// A chunk of blocks not written.
pub const CHUNK_DONT_CARE: u16 = 0xCAC3;
/// A chunk holding the CRC-32 of all blocks before it.
pub const CHUNK_CRC32: u16 = 0xCAC4;

/// The file header: the first 28 bytes.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SparseHeader {
    /// [`SPARSE_MAGIC`].
    pub magic: U32,
    /// 1: readers refuse a higher major version.
    pub major_version: U16,
    /// 0: readers accept higher minor versions.
    pub minor_version: U16,
    /// Bytes of this header (28).
    pub file_hdr_sz: U16,
    /// Bytes of a chunk header (12).
    pub chunk_hdr_sz: U16,
    /// Block size in bytes, a multiple of 4.
    pub blk_sz: U32,
    /// Blocks of the expanded image.
    pub total_blks: U32,
    /// Chunks in the file.
    pub total_chunks: U32,
    /// CRC-32 of the expanded image, DONT_CARE as zeros (0: not given).
    pub image_checksum: U32,
}
const _: () = assert!(size_of::<SparseHeader>() == 28);

/// A chunk header: 12 bytes before the chunk's data.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ChunkHeader {
    /// [`CHUNK_RAW`], [`CHUNK_FILL`], [`CHUNK_DONT_CARE`] or [`CHUNK_CRC32`].
    pub chunk_type: U16,
    /// Zero.
    pub reserved1: U16,
    /// Blocks of the expanded image this chunk covers.
    pub chunk_sz: U32,
    /// Bytes of this header and the data after it.
    pub total_sz: U32,
}
const _: () = assert!(size_of::<ChunkHeader>() == 12);

impl SparseHeader {
    /// The header of version 1.0 with these counts.
    pub fn new(block_size: u32, blocks: u32, chunks: u32, image_checksum: u32) -> Self {
        SparseHeader {
            magic: SPARSE_MAGIC.into(),
            major_version: 1.into(),
            minor_version: 0.into(),
            file_hdr_sz: (size_of::<SparseHeader>() as u16).into(),
            chunk_hdr_sz: (size_of::<ChunkHeader>() as u16).into(),
            blk_sz: block_size.into(),
            total_blks: blocks.into(),
            total_chunks: chunks.into(),
            image_checksum: image_checksum.into(),
        }
    }
}

impl ChunkHeader {
    /// A chunk of `chunk_type` covering `blocks` blocks, followed by
    /// `data_len` bytes of data.
    pub fn new(chunk_type: u16, blocks: u32, data_len: u32) -> Self {
        ChunkHeader {
            chunk_type: chunk_type.into(),
            reserved1: 0.into(),
            chunk_sz: blocks.into(),
            total_sz: (size_of::<ChunkHeader>() as u32 + data_len).into(),
        }
    }
}

/// The value a FILL chunk repeats (or a CRC32 chunk holds): four bytes.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ChunkValue(pub U32);

impl ChunkValue {
    /// The 32-bit value `block` repeats, if it is one value repeated
    /// (every byte equal to the one a value's width before it).
    pub fn repeated_in(block: &[u8]) -> Option<u32> {
        const W: usize = size_of::<ChunkValue>();
        let (first, _) = ChunkValue::read_from_prefix(block).ok()?;
        let periodic = block.get(W..)? == block.get(..block.len() - W)?;
        periodic.then_some(first.0.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_values() {
        assert_eq!(ChunkValue::repeated_in(&[0; 512]), Some(0));
        let mut b = [0u8; 16];
        for (i, x) in b.iter_mut().enumerate() {
            *x = [1, 2, 3, 4][i % 4];
        }
        assert_eq!(ChunkValue::repeated_in(&b), Some(0x0403_0201));
        b[15] = 9;
        assert_eq!(ChunkValue::repeated_in(&b), None);
        assert_eq!(ChunkValue::repeated_in(&[1, 2]), None);
    }
}
