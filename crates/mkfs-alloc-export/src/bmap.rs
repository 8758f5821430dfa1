//! The bmaptool block map, format version 2.0.
//!
//! What bmaptool 3.6 reads (`bmaptools/BmapCopy.py`): the root element
//! `bmap` with `version="2.0"`; `ImageSize` (bytes), `BlockSize`,
//! `BlocksCount` (must equal the image size in blocks, rounded up),
//! `MappedBlocksCount` (must equal the blocks of all ranges: the copy fails
//! otherwise), `ChecksumType` (a `hashlib` name: `sha256`), and
//! `BmapFileChecksum`: the checksum of the whole file as written, with this
//! element's own value replaced by as many ASCII zeros; then `BlockMap`
//! with one `Range` per run of blocks, `first-last` (inclusive) or a single
//! block number, its `chksum` attribute the checksum of those blocks' bytes
//! (the last block only up to the image's end). Element texts may carry
//! surrounding spaces. Comments are free.

use crate::read::ReadAt;
use crate::runs::{block_runs, check_ranges};
use crate::{ExportError, PIECE};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::io::Write;
use std::ops::Range;

/// What [`write_bmap`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BmapSummary {
    /// Block size of the map.
    pub block_size: u64,
    /// Blocks of the image (the last one may be partial).
    pub blocks: u64,
    /// Blocks listed in the map.
    pub mapped_blocks: u64,
    /// Ranges listed.
    pub ranges: u64,
    /// Bytes of the map file.
    pub bytes: u64,
}

/// Writes the bmap 2.0 block map of an image of `image_size` bytes whose
/// mapped bytes are `ranges` (sorted, not overlapping), reading `image`
/// for the SHA-256 of every range, to `out`.
///
/// `block_size` is the map's block size (bmaptool writes in batches of it;
/// 4096 is what `bmaptool create` uses): a power of two from 512 to 1 MiB.
/// The image size need not be a multiple of it. Memory: the XML, about a
/// hundred bytes per range.
///
/// # Errors
///
/// [`ExportError::BlockSize`], [`ExportError::ImageSize`] (an empty
/// image), [`ExportError::Range`], [`ExportError::Read`],
/// [`ExportError::Write`]. Nothing is written to `out` before every range
/// has been read.
pub fn write_bmap(
    image_size: u64,
    block_size: u64,
    ranges: &[Range<u64>],
    image: &mut dyn ReadAt,
    out: &mut dyn Write,
) -> Result<BmapSummary, ExportError> {
    if !block_size.is_power_of_two() || !(512..=PIECE as u64).contains(&block_size) {
        return Err(ExportError::BlockSize {
            block_size,
            why: "a bmap's block size must be a power of two from 512 bytes to 1 MiB",
        });
    }
    if image_size == 0 {
        return Err(ExportError::ImageSize {
            size: 0,
            why: "bmaptool refuses an empty image",
        });
    }
    check_ranges(ranges, image_size)?;
    let blocks = image_size.div_ceil(block_size);
    let runs: Vec<Range<u64>> = block_runs(ranges, block_size).collect();
    let mapped_blocks: u64 = runs.iter().map(|r| r.end - r.start).sum();

    let mut xml = header(image_size, block_size, blocks, mapped_blocks);
    let zeros = "0".repeat(64);
    let _ = writeln!(xml, "    <BmapFileChecksum> {zeros} </BmapFileChecksum>\n");
    xml.push_str("    <!-- One Range per run of mapped blocks: first-last (inclusive) or\n");
    xml.push_str("         one block; chksum is the SHA-256 of its bytes. -->\n");
    xml.push_str("    <BlockMap>\n");
    let mut buf = vec![0u8; PIECE];
    for run in &runs {
        let start = run.start * block_size;
        let end = (run.end * block_size).min(image_size);
        let sum = hex(&range_sha256(image, start, end, &mut buf)?);
        let last = run.end - 1;
        if last == run.start {
            let _ = writeln!(xml, "        <Range chksum=\"{sum}\"> {last} </Range>");
        } else {
            let _ = writeln!(
                xml,
                "        <Range chksum=\"{sum}\"> {}-{last} </Range>",
                run.start
            );
        }
    }
    xml.push_str("    </BlockMap>\n</bmap>\n");

    // The file's own checksum, taken with its place holding zeros.
    let file_sum = hex(&Sha256::digest(xml.as_bytes()));
    let xml = xml.replacen(&zeros, &file_sum, 1);
    out.write_all(xml.as_bytes()).map_err(ExportError::Write)?;
    out.flush().map_err(ExportError::Write)?;
    Ok(BmapSummary {
        block_size,
        blocks,
        mapped_blocks,
        ranges: runs.len() as u64,
        bytes: xml.len() as u64,
    })
}

fn header(image_size: u64, block_size: u64, blocks: u64, mapped: u64) -> String {
    let permille = mapped.saturating_mul(1000) / blocks.max(1);
    let mut xml = String::from("<?xml version=\"1.0\" ?>\n");
    xml.push_str("<!-- Block map of a disk image written by mkfs-alloc: the blocks that hold\n");
    xml.push_str("     partition tables, boot sectors, file-system metadata and file data,\n");
    xml.push_str("     or zeros the file system relies on. The others may hold anything:\n");
    xml.push_str("     `bmaptool copy` writes only these. Made from the format's plan,\n");
    xml.push_str("     not from the image's holes. -->\n");
    xml.push_str("<bmap version=\"2.0\">\n");
    let _ = writeln!(xml, "    <ImageSize> {image_size} </ImageSize>");
    let _ = writeln!(xml, "    <BlockSize> {block_size} </BlockSize>");
    let _ = writeln!(xml, "    <BlocksCount> {blocks} </BlocksCount>");
    let _ = writeln!(
        xml,
        "    <!-- {} bytes mapped, {}.{}% of the image -->",
        mapped * block_size,
        permille / 10,
        permille % 10
    );
    let _ = writeln!(xml, "    <MappedBlocksCount> {mapped} </MappedBlocksCount>");
    xml.push_str("    <ChecksumType> sha256 </ChecksumType>\n");
    xml.push_str("    <!-- SHA-256 of this file with the value below as 64 zeros. -->\n");
    xml
}

/// SHA-256 of the image's bytes `start..end`, read in pieces.
fn range_sha256(
    image: &mut dyn ReadAt,
    start: u64,
    end: u64,
    buf: &mut [u8],
) -> Result<[u8; 32], ExportError> {
    let mut h = Sha256::new();
    let mut at = start;
    while at < end {
        let n = (end - at).min(buf.len() as u64) as usize;
        image
            .read_exact_at(at, &mut buf[..n])
            .map_err(|source| ExportError::Read {
                offset: at,
                len: n as u64,
                source,
            })?;
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(h.finalize().into())
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    fn bmap(image: &[u8], bs: u64, ranges: &[Range<u64>]) -> String {
        let mut out = Vec::new();
        write_bmap(image.len() as u64, bs, ranges, &mut { image }, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn file_checksum_covers_the_file_with_zeros_in_its_place() {
        let image = vec![7u8; 10_000];
        let text = bmap(&image, 4096, &[0..1, 9000..10_000]);
        let field = text
            .split("<BmapFileChecksum> ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap();
        let zeroed = text.replacen(field, &"0".repeat(64), 1);
        assert_eq!(hex(&Sha256::digest(zeroed.as_bytes())), field);
        assert!(text.contains("<BlocksCount> 3 </BlocksCount>"));
        assert!(text.contains("<MappedBlocksCount> 2 </MappedBlocksCount>"));
        // Block 0 alone, block 2 partial: its checksum covers 10000 - 8192 bytes.
        let last = hex(&Sha256::digest(&image[8192..]));
        assert!(text.contains(&format!("<Range chksum=\"{last}\"> 2 </Range>")));
    }

    #[test]
    fn refusals() {
        let image = [0u8; 4096];
        let mut out = Vec::new();
        let mut r = &image[..];
        assert!(matches!(
            write_bmap(4096, 1000, &[], &mut r, &mut out),
            Err(ExportError::BlockSize { .. })
        ));
        assert!(matches!(
            write_bmap(0, 4096, &[], &mut r, &mut out),
            Err(ExportError::ImageSize { .. })
        ));
        assert!(matches!(
            write_bmap(4096, 512, &[0..5000], &mut r, &mut out),
            Err(ExportError::Range { .. })
        ));
        assert!(out.is_empty());
    }
}
