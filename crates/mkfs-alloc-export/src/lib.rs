//! Flashing formats for a disk image, written from a map of the bytes that
//! matter instead of a scan of the image for holes.
//!
//! A formatter knows exactly which byte ranges of its image hold something
//! (partition tables, boot sectors, FATs, bitmaps, directories, file data)
//! or must read as zero for the file system to be right (a FAT's free
//! entries, a directory's unused slots). Everything else may hold anything.
//! From that map, an image and a [`Write`](std::io::Write) this crate
//! writes:
//!
//! - a **block map** for bmaptool ([`write_bmap`]): the bmap 2.0 XML with a
//!   SHA-256 per mapped range and of the file itself; `bmaptool copy --bmap
//!   FILE IMAGE DEVICE` then writes only the mapped blocks;
//! - an **Android sparse image** ([`write_sparse`],
//!   [`write_sparse_seekable`]): mapped blocks as RAW chunks (or FILL chunks
//!   where a block repeats one 32-bit value, zeros included), the rest as
//!   DONT_CARE, optionally with a CRC32 chunk; `simg2img` expands it back to
//!   the raw image and fastboot flashes it.
//!
//! ```text
//!  image size + mapped byte ranges ─┐
//!  the image (ReadAt)  ─────────────┼─► write_bmap   ─► Write (a file)
//!                                   └─► write_sparse ─► Write (a file or a pipe)
//! ```
//!
//! Both stream: the image is read in pieces of [`PIECE`] bytes and memory
//! stays bounded by the number of ranges (the bmap's XML is assembled in
//! memory, one line per range, because its own checksum precedes the
//! ranges). The ranges are byte ranges, sorted and not overlapping
//! (touching is fine); each format rounds them outwards to its block size
//! and merges what then touches.
//!
//! Mapped means "write this", unmapped "leave what is there": a range of
//! zeros the file system relies on must be mapped, or a device that held
//! something else keeps it. Sources: bmaptool 3.6 (`bmaptools/BmapCreate.py`
//! and `BmapCopy.py`: the XML it writes and what its copy checks) and AOSP
//! libsparse (`sparse_format.h`: headers and chunk types; `sparse_read.cpp`:
//! the CRC32 chunk checks the CRC-32 of all blocks before it, DONT_CARE
//! counted as zeros).
//!
//! ```
//! use mkfs_alloc_export::{write_bmap, write_sparse, SparseOptions};
//!
//! // A 64 KiB image: a boot block, and data at 32 KiB.
//! let mut image = vec![0u8; 64 << 10];
//! image[..512].fill(0xEB);
//! image[32 << 10..40 << 10].fill(0x5A);
//! let mapped = [0..4096, 32768..40960];
//!
//! let mut bmap = Vec::new();
//! let summary = write_bmap(image.len() as u64, 4096, &mapped, &mut image.as_slice(), &mut bmap)?;
//! assert_eq!(summary.mapped_blocks, 3);
//!
//! let mut simg = Vec::new();
//! let opts = SparseOptions::new(4096).with_crc(true);
//! write_sparse(image.len() as u64, opts, &mapped, &mut image.as_slice(), &mut simg)?;
//! assert_eq!(&simg[..4], &0xED26_FF3Au32.to_le_bytes());
//! # Ok::<(), mkfs_alloc_export::ExportError>(())
//! ```

#![warn(clippy::missing_errors_doc)]
mod bmap;
mod crc32;
mod image;
mod read;
mod replace;
mod runs;
mod sparse;

pub use bmap::{write_bmap, BmapSummary};
pub use image::{export_image, raw_path, Exported, ImageExportError, Outputs, BMAP_BLOCK};
pub use read::{BlockReader, ReadAt};
pub use replace::{replace_file, ReplaceError};
pub use runs::block_runs;
pub use sparse::{
    sparse_block_size, write_sparse, write_sparse_seekable, SparseOptions, SparseSummary,
    MAX_CHUNK_BLOCKS,
};

/// Bytes read from the image at a time (and the largest RAW chunk of a
/// sparse image).
pub const PIECE: usize = 1 << 20;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The block size is not usable for this format.
    #[error("block size {block_size}: {why}")]
    BlockSize {
        /// The block size asked for.
        block_size: u64,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The image is empty or too large for the format.
    #[error("an image of {size} bytes cannot be written in this format: {why}")]
    ImageSize {
        /// The image size.
        size: u64,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A mapped range is empty-ended, out of order, overlapping or beyond
    /// the image.
    #[error("mapped range {start}..{end} (number {index}): {why}")]
    Range {
        /// Position of the range in the list.
        index: usize,
        /// Its first byte.
        start: u64,
        /// Its end (exclusive).
        end: u64,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Reading the image failed.
    #[error("reading {len} bytes of the image at byte offset {offset} failed")]
    Read {
        /// Where the read started.
        offset: u64,
        /// How many bytes were asked for.
        len: u64,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The image read differently the second time (the sparse image's
    /// chunks are counted in a first reading): something wrote to it.
    #[error("the image changed while it was being exported")]
    Changed,
    /// Writing the output failed.
    #[error("writing the output failed")]
    Write(#[source] std::io::Error),
}
