//! The Android sparse image (what fastboot flashes and `simg2img` expands).
//!
//! Layout (AOSP libsparse, `sparse_format.h`; all little-endian): a 28-byte
//! file header (magic 0xED26FF3A, version 1.0, the header sizes, the block
//! size, the blocks of the expanded image, the number of chunks, a CRC-32
//! of the expanded image), then the chunks, each a 12-byte header (type,
//! reserved, blocks covered, bytes of header and data) and its data: RAW
//! (0xCAC1) the blocks themselves, FILL (0xCAC2) one 32-bit value repeated
//! over the blocks, DONT_CARE (0xCAC3) no data (the blocks are not
//! written), CRC32 (0xCAC4) the CRC-32 of every block before it, DONT_CARE
//! counted as zeros (`sparse_read.cpp`). The chunks cover the image's
//! blocks exactly, in order.
//!
//! The chunk count sits in the header, before the chunks: [`write_sparse`]
//! (any `Write`, a pipe too) reads the mapped blocks twice, first to count
//! the chunks (and take the CRC), then to write them; on a seekable output
//! [`write_sparse_seekable`] reads them once and patches the header.

use crate::crc32::Crc32;
use crate::read::ReadAt;
use crate::runs::{block_runs, check_ranges};
use crate::{ExportError, PIECE};
use mkfs_alloc_ondisk::sparse::{
    ChunkHeader, ChunkValue, SparseHeader, CHUNK_CRC32, CHUNK_DONT_CARE, CHUNK_FILL, CHUNK_RAW,
};
use mkfs_alloc_ondisk::zerocopy::IntoBytes;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;

const FILE_HEADER_LEN: usize = size_of::<SparseHeader>();
/// The most blocks one chunk covers: libsparse (`simg2img`, fastboot)
/// refuses a chunk of 2^31 blocks or more ("Failed to read sparse file":
/// it takes the 32-bit count as signed), so longer FILL and DONT_CARE runs
/// become several chunks; the image itself may have up to 2^32 - 1 blocks.
pub const MAX_CHUNK_BLOCKS: u64 = (1 << 31) - 1;
const CHUNK_HEADER_LEN: usize = size_of::<ChunkHeader>();

/// How to write a sparse image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SparseOptions {
    /// Block size: a power of two from 512 to 1 MiB that divides the image
    /// size (fastboot's images use 4096; see [`sparse_block_size`]).
    pub block_size: u32,
    /// Append a CRC32 chunk and put the same CRC-32 into the header.
    pub crc: bool,
}

impl SparseOptions {
    /// Blocks of `block_size` bytes, no CRC.
    pub fn new(block_size: u32) -> Self {
        SparseOptions {
            block_size,
            crc: false,
        }
    }

    /// With or without the CRC32 chunk.
    #[must_use]
    pub fn with_crc(mut self, crc: bool) -> Self {
        self.crc = crc;
        self
    }
}

/// The block size for a sparse image of `image_size` bytes: 4096 when it
/// divides the size, else the largest of 2048, 1024 and 512 that does;
/// `None` when none does (the expanded image would be longer than this one).
pub fn sparse_block_size(image_size: u64) -> Option<u32> {
    [4096u32, 2048, 1024, 512]
        .into_iter()
        .find(|&bs| image_size % u64::from(bs) == 0)
}

/// What a sparse image holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SparseSummary {
    /// Block size.
    pub block_size: u32,
    /// Blocks of the expanded image.
    pub blocks: u64,
    /// Chunks, the CRC32 chunk included.
    pub chunks: u64,
    /// Blocks carried as data (RAW).
    pub raw_blocks: u64,
    /// Blocks written from a repeated value (FILL; zeros the file system
    /// relies on among them).
    pub fill_blocks: u64,
    /// Blocks left unwritten (DONT_CARE).
    pub dont_care_blocks: u64,
    /// The CRC-32 of the expanded image, when asked for.
    pub crc: Option<u32>,
    /// Bytes of the sparse image.
    pub bytes: u64,
}

/// One chunk, as the walk finds it.
enum Chunk<'a> {
    Raw(&'a [u8]),
    Fill { value: u32, blocks: u64 },
    DontCare { blocks: u64 },
}

/// Writes the sparse image of an image of `image_size` bytes whose mapped
/// bytes are `ranges` (sorted, not overlapping), read from `image`, to
/// `out`, which need not seek (a pipe): the mapped blocks are read twice.
///
/// # Errors
///
/// [`ExportError::BlockSize`] (see [`SparseOptions::block_size`]),
/// [`ExportError::ImageSize`] (empty, or more than 2^32 - 1 blocks),
/// [`ExportError::Range`] (before anything is written), [`ExportError::Read`],
/// [`ExportError::Write`], and [`ExportError::Changed`] when the second
/// reading differed from the first.
pub fn write_sparse(
    image_size: u64,
    opts: SparseOptions,
    ranges: &[Range<u64>],
    image: &mut dyn ReadAt,
    out: &mut dyn Write,
) -> Result<SparseSummary, ExportError> {
    let blocks = check(image_size, opts, ranges)?;
    let mut buf = vec![0u8; PIECE];
    let mut first = Tally::new(opts);
    walk(image_size, opts, ranges, image, &mut buf, &mut |c| {
        first.add(&c);
        Ok(())
    })?;
    let mut out = BufWriter::with_capacity(PIECE, out);
    let mut second = Tally::new(opts);
    write_header(&mut out, opts, blocks, first.chunks(), first.crc())?;
    walk(image_size, opts, ranges, image, &mut buf, &mut |c| {
        second.add(&c);
        write_chunk(&mut out, opts, &c)
    })?;
    if second != first {
        return Err(ExportError::Changed);
    }
    finish(&mut out, &second, blocks)
}

/// [`write_sparse`] to an output that can seek back: the mapped blocks
/// are read once and the header is written again at the end, at the
/// position `out` had when called.
///
/// # Errors
///
/// As [`write_sparse`], without [`ExportError::Changed`].
pub fn write_sparse_seekable<W: Write + Seek>(
    image_size: u64,
    opts: SparseOptions,
    ranges: &[Range<u64>],
    image: &mut dyn ReadAt,
    out: W,
) -> Result<SparseSummary, ExportError> {
    let blocks = check(image_size, opts, ranges)?;
    let mut buf = vec![0u8; PIECE];
    let mut out = BufWriter::with_capacity(PIECE, out);
    let start = out.stream_position().map_err(ExportError::Write)?;
    write_header(&mut out, opts, blocks, 0, None)?;
    let mut tally = Tally::new(opts);
    walk(image_size, opts, ranges, image, &mut buf, &mut |c| {
        tally.add(&c);
        write_chunk(&mut out, opts, &c)
    })?;
    let summary = finish(&mut out, &tally, blocks)?;
    let end = out.stream_position().map_err(ExportError::Write)?;
    out.seek(SeekFrom::Start(start))
        .map_err(ExportError::Write)?;
    write_header(&mut out, opts, blocks, tally.chunks(), tally.crc())?;
    out.seek(SeekFrom::Start(end)).map_err(ExportError::Write)?;
    out.flush().map_err(ExportError::Write)?;
    Ok(summary)
}

/// Checks the options and ranges; returns the image's blocks.
fn check(image_size: u64, opts: SparseOptions, ranges: &[Range<u64>]) -> Result<u64, ExportError> {
    let bs = u64::from(opts.block_size);
    let bad = |why| ExportError::BlockSize {
        block_size: bs,
        why,
    };
    if !bs.is_power_of_two() || !(512..=PIECE as u64).contains(&bs) {
        return Err(bad(
            "a sparse image's block size must be a power of two from 512 bytes to 1 MiB",
        ));
    }
    if image_size % bs != 0 {
        return Err(bad(
            "it does not divide the image size (the expanded image would be longer)",
        ));
    }
    let blocks = image_size / bs;
    if blocks == 0 || blocks > u64::from(u32::MAX) {
        return Err(ExportError::ImageSize {
            size: image_size,
            why: "a sparse image holds 1 to 2^32 - 1 blocks",
        });
    }
    check_ranges(ranges, image_size)?;
    Ok(blocks)
}

/// Finds the chunks, in order, and hands each to `emit`.
fn walk(
    image_size: u64,
    opts: SparseOptions,
    ranges: &[Range<u64>],
    image: &mut dyn ReadAt,
    buf: &mut [u8],
    emit: &mut dyn FnMut(Chunk<'_>) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let bs = u64::from(opts.block_size);
    let blocks = image_size / bs;
    let emit = &mut |c: Chunk<'_>| split_long(c, MAX_CHUNK_BLOCKS, emit);
    let mut pos = 0u64;
    for run in block_runs(ranges, bs) {
        if run.start > pos {
            emit(Chunk::DontCare {
                blocks: run.start - pos,
            })?;
        }
        let mut fill: Option<(u32, u64)> = None;
        let mut at = run.start;
        while at < run.end {
            let n = (run.end - at).min(buf.len() as u64 / bs);
            let piece = &mut buf[..(n * bs) as usize];
            image
                .read_exact_at(at * bs, piece)
                .map_err(|source| ExportError::Read {
                    offset: at * bs,
                    len: piece.len() as u64,
                    source,
                })?;
            split_piece(piece, bs as usize, &mut fill, emit)?;
            at += n;
        }
        if let Some((value, blocks)) = fill {
            emit(Chunk::Fill { value, blocks })?;
        }
        pos = run.end;
    }
    if blocks > pos {
        emit(Chunk::DontCare {
            blocks: blocks - pos,
        })?;
    }
    Ok(())
}

/// Hands `c` to `emit` as chunks of at most `max` blocks (RAW chunks are a
/// piece long at most, far below).
fn split_long(
    c: Chunk<'_>,
    max: u64,
    emit: &mut dyn FnMut(Chunk<'_>) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let (mut left, make): (u64, &dyn Fn(u64) -> Chunk<'static>) = match c {
        Chunk::Raw(_) => return emit(c),
        Chunk::Fill { value, blocks } => (blocks, &move |n| Chunk::Fill { value, blocks: n }),
        Chunk::DontCare { blocks } => (blocks, &|n| Chunk::DontCare { blocks: n }),
    };
    while left > 0 {
        let n = left.min(max);
        emit(make(n))?;
        left -= n;
    }
    Ok(())
}

/// Splits a piece of mapped blocks into RAW chunks and FILL runs; a FILL
/// run still open at the end is left in `fill` (it may go on in the next
/// piece).
fn split_piece(
    piece: &[u8],
    bs: usize,
    fill: &mut Option<(u32, u64)>,
    emit: &mut dyn FnMut(Chunk<'_>) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let mut raw_from: Option<usize> = None;
    for (i, block) in piece.chunks_exact(bs).enumerate() {
        match ChunkValue::repeated_in(block) {
            Some(value) => {
                if let Some(from) = raw_from.take() {
                    emit(Chunk::Raw(&piece[from * bs..i * bs]))?;
                }
                match fill {
                    Some((v, n)) if *v == value => *n += 1,
                    _ => {
                        if let Some((value, blocks)) = fill.take() {
                            emit(Chunk::Fill { value, blocks })?;
                        }
                        *fill = Some((value, 1));
                    }
                }
            }
            None => {
                if let Some((value, blocks)) = fill.take() {
                    emit(Chunk::Fill { value, blocks })?;
                }
                raw_from.get_or_insert(i);
            }
        }
    }
    if let Some(from) = raw_from {
        emit(Chunk::Raw(&piece[from * bs..]))?;
    }
    Ok(())
}

/// Counts chunks and blocks and takes the CRC, the same in both passes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tally {
    bs: u64,
    crc: Option<Crc32>,
    chunks: u64,
    fill_chunks: u64,
    raw: u64,
    fill: u64,
    dont_care: u64,
}

impl Tally {
    fn new(opts: SparseOptions) -> Self {
        Tally {
            bs: u64::from(opts.block_size),
            crc: opts.crc.then(Crc32::default),
            chunks: 0,
            fill_chunks: 0,
            raw: 0,
            fill: 0,
            dont_care: 0,
        }
    }

    fn add(&mut self, c: &Chunk<'_>) {
        self.chunks += 1;
        match *c {
            Chunk::Raw(data) => {
                self.raw += data.len() as u64 / self.bs;
                if let Some(crc) = &mut self.crc {
                    crc.update(data);
                }
            }
            Chunk::Fill { value, blocks } => {
                self.fill += blocks;
                self.fill_chunks += 1;
                if let Some(crc) = &mut self.crc {
                    if value == 0 {
                        crc.zeros(blocks * self.bs);
                    } else {
                        let word = ChunkValue(value.into());
                        let block: Vec<u8> = word
                            .as_bytes()
                            .iter()
                            .copied()
                            .cycle()
                            .take(self.bs as usize)
                            .collect();
                        for _ in 0..blocks {
                            crc.update(&block);
                        }
                    }
                }
            }
            Chunk::DontCare { blocks } => {
                self.dont_care += blocks;
                if let Some(crc) = &mut self.crc {
                    crc.zeros(blocks * self.bs);
                }
            }
        }
    }

    /// Chunks in the file, the CRC32 chunk included.
    fn chunks(&self) -> u64 {
        self.chunks + u64::from(self.crc.is_some())
    }

    fn crc(&self) -> Option<u32> {
        self.crc.map(|c| c.value())
    }
}

fn write_header(
    out: &mut dyn Write,
    opts: SparseOptions,
    blocks: u64,
    chunks: u64,
    crc: Option<u32>,
) -> Result<(), ExportError> {
    // Both fit: check() and the walk keep blocks (and so chunks) below 2^32.
    let h = SparseHeader::new(
        opts.block_size,
        blocks as u32,
        chunks as u32,
        crc.unwrap_or(0),
    );
    out.write_all(h.as_bytes()).map_err(ExportError::Write)
}

fn chunk_header(chunk_type: u16, blocks: u64, data_len: usize) -> ChunkHeader {
    ChunkHeader::new(chunk_type, blocks as u32, data_len as u32)
}

fn write_chunk(out: &mut dyn Write, opts: SparseOptions, c: &Chunk<'_>) -> Result<(), ExportError> {
    let bs = u64::from(opts.block_size);
    let w = |out: &mut dyn Write, bytes: &[u8]| out.write_all(bytes).map_err(ExportError::Write);
    match *c {
        Chunk::Raw(data) => {
            w(
                out,
                chunk_header(CHUNK_RAW, data.len() as u64 / bs, data.len()).as_bytes(),
            )?;
            w(out, data)
        }
        Chunk::Fill { value, blocks } => {
            w(out, chunk_header(CHUNK_FILL, blocks, 4).as_bytes())?;
            w(out, ChunkValue(value.into()).as_bytes())
        }
        Chunk::DontCare { blocks } => w(out, chunk_header(CHUNK_DONT_CARE, blocks, 0).as_bytes()),
    }
}

/// Writes the CRC32 chunk if asked for and flushes; the summary.
fn finish(out: &mut dyn Write, t: &Tally, blocks: u64) -> Result<SparseSummary, ExportError> {
    if let Some(crc) = t.crc() {
        out.write_all(chunk_header(CHUNK_CRC32, 0, 4).as_bytes())
            .and_then(|()| out.write_all(ChunkValue(crc.into()).as_bytes()))
            .map_err(ExportError::Write)?;
    }
    out.flush().map_err(ExportError::Write)?;
    // Headers, RAW data, and four bytes of each FILL and the CRC32 chunk.
    let bytes = FILE_HEADER_LEN as u64
        + t.chunks() * CHUNK_HEADER_LEN as u64
        + t.raw * t.bs
        + 4 * (t.fill_chunks + u64::from(t.crc.is_some()));
    Ok(SparseSummary {
        block_size: t.bs as u32,
        blocks,
        chunks: t.chunks(),
        raw_blocks: t.raw,
        fill_blocks: t.fill,
        dont_care_blocks: t.dont_care,
        crc: t.crc(),
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long FILL and DONT_CARE runs become chunks of at most the limit, in
    /// order, covering the same blocks; RAW chunks pass unchanged.
    #[test]
    fn long_runs_are_split_at_the_chunk_limit() {
        let mut got = Vec::new();
        let mut emit = |c: Chunk<'_>| {
            got.push(match c {
                Chunk::Raw(d) => ("raw", d.len() as u64),
                Chunk::Fill { value, blocks } => ("fill", u64::from(value) << 32 | blocks),
                Chunk::DontCare { blocks } => ("skip", blocks),
            });
            Ok(())
        };
        for c in [
            Chunk::DontCare { blocks: 7 },
            Chunk::Raw(&[1; 2048]),
            Chunk::Fill {
                value: 9,
                blocks: 6,
            },
            Chunk::DontCare { blocks: 2 },
        ] {
            split_long(c, 3, &mut emit).expect("emit");
        }
        let fill = |n: u64| ("fill", 9u64 << 32 | n);
        let want = [
            ("skip", 3),
            ("skip", 3),
            ("skip", 1),
            ("raw", 2048),
            fill(3),
            fill(3),
            ("skip", 2),
        ];
        assert_eq!(got, want);
    }
}
