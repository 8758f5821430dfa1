//! The sparse writer against a reader written from the format's
//! description (AOSP libsparse, `sparse_format.h`): every mapped block
//! comes back, every unmapped one is DONT_CARE (a device keeps its old
//! bytes there), the CRC is the expanded image's; the pipe and the seekable
//! writers agree byte for byte. The real `simg2img` and libsparse check the
//! same in `tools.rs`.
#![allow(clippy::unwrap_used, clippy::single_range_in_vec_init)]

mod common;

use common::{expand, image, Chunk, Synthetic};
use mkfs_alloc_export::{write_sparse, write_sparse_seekable, ExportError, ReadAt, SparseOptions};
use proptest::prelude::*;
use std::io::Cursor;
use std::ops::Range;

const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

fn both(img: &[u8], opts: SparseOptions, mapped: &[Range<u64>]) -> Vec<u8> {
    let mut piped = Vec::new();
    let s1 = write_sparse(img.len() as u64, opts, mapped, &mut { img }, &mut piped).unwrap();
    let mut seek = Cursor::new(Vec::new());
    let s2 =
        write_sparse_seekable(img.len() as u64, opts, mapped, &mut { img }, &mut seek).unwrap();
    assert_eq!(piped, seek.into_inner(), "the two writers differ");
    assert_eq!(s1, s2);
    assert_eq!(s1.bytes, piped.len() as u64);
    assert_eq!(
        s1.raw_blocks + s1.fill_blocks + s1.dont_care_blocks,
        s1.blocks
    );
    piped
}

/// Checks a sparse image of `img` against the map.
fn check(img: &[u8], bs: u32, crc: bool, mapped: &[Range<u64>]) {
    let simg = both(img, SparseOptions::new(bs).with_crc(crc), mapped);
    // Onto a device of old bytes: mapped blocks are the image's, the rest untouched.
    let mut dev = vec![0xEEu8; img.len()];
    let (header_crc, chunks) = expand(&simg, &mut dev);
    let bs = u64::from(bs);
    // A block is mapped when any mapped byte falls in it (computed here,
    // not with the crate's own `block_runs`).
    let is_mapped: Vec<bool> = (0..img.len() as u64 / bs)
        .map(|b| {
            let block = b * bs..(b + 1) * bs;
            mapped
                .iter()
                .any(|r| r.start < block.end && block.start < r.end && r.start < r.end)
        })
        .collect();
    for (b, m) in is_mapped.iter().enumerate() {
        let at = b * bs as usize..(b + 1) * bs as usize;
        if *m {
            assert_eq!(dev[at.clone()], img[at], "mapped block {b}");
        } else {
            assert!(
                dev[at].iter().all(|&x| x == 0xEE),
                "unmapped block {b} written"
            );
        }
    }
    // The image is zero outside the map: expanded onto zeros, it is the image.
    let mut zeros = vec![0u8; img.len()];
    expand(&simg, &mut zeros);
    assert_eq!(zeros, img);
    let want = CRC32.checksum(img);
    match chunks.last() {
        Some(Chunk::Crc(c)) if crc => assert_eq!((*c, header_crc), (want, want)),
        _ if crc => panic!("no CRC32 chunk at the end"),
        _ => assert_eq!(header_crc, 0),
    }
    // Neighbouring chunks of one kind would have been one chunk, except RAW
    // chunks split at the 1 MiB read size.
    for w in chunks.windows(2) {
        assert!(
            !matches!((&w[0], &w[1]), (Chunk::DontCare(_), Chunk::DontCare(_))),
            "{w:?}"
        );
    }
}

#[test]
fn fixed_cases() {
    let size = 256 << 10;
    let cases: &[&[Range<u64>]] = &[
        &[],
        &[0..(256 << 10)],
        &[0..1, 4096..4097],
        &[0..512, 70_000..200_000, (255 << 10)..(256 << 10)],
        &[1000..3000, 3000..9000, 100_000..100_001],
    ];
    for (i, mapped) in cases.iter().enumerate() {
        let img = image(size, mapped, i as u64 + 1);
        for bs in [512, 4096, 65536] {
            for crc in [false, true] {
                check(&img, bs, crc, mapped);
            }
        }
    }
}

#[test]
fn more_than_one_piece_and_long_fills() {
    // 3 MiB of data, then 2 MiB of a repeated value, all mapped.
    let mut img = mkfs_alloc_testsupport::test_data(8 << 20, 9);
    for (i, b) in img[3 << 20..5 << 20].iter_mut().enumerate() {
        *b = [1, 2, 3, 4][i % 4];
    }
    img[6 << 20..].fill(0);
    let mapped = [0..(7 << 20)];
    check(&img, 4096, true, &mapped);
    let simg = both(&img, SparseOptions::new(4096), &mapped);
    let mut dev = vec![0; img.len()];
    let (_, chunks) = expand(&simg, &mut dev);
    assert!(
        chunks.contains(&Chunk::Fill(512, 0x0403_0201)),
        "{chunks:?}"
    );
    assert!(chunks.contains(&Chunk::Fill(256, 0)), "{chunks:?}");
    assert_eq!(chunks.last(), Some(&Chunk::DontCare(256)));
}

#[test]
fn refusals_write_nothing() {
    let img = vec![0u8; 10_240];
    let mut out = Vec::new();
    let mut r = &img[..];
    let e = write_sparse(10_240, SparseOptions::new(4096), &[], &mut r, &mut out);
    assert!(matches!(e, Err(ExportError::BlockSize { .. })), "{e:?}");
    let e = write_sparse(
        10_240,
        SparseOptions::new(512),
        &[0..20_000],
        &mut r,
        &mut out,
    );
    assert!(matches!(e, Err(ExportError::Range { .. })), "{e:?}");
    let e = write_sparse(0, SparseOptions::new(512), &[], &mut r, &mut out);
    assert!(matches!(e, Err(ExportError::ImageSize { .. })), "{e:?}");
    assert!(out.is_empty());
}

/// An image that changes after it has been read once.
struct Fickle {
    reads: usize,
}

impl ReadAt for Fickle {
    fn read_exact_at(&mut self, _offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.reads += 1;
        buf.fill(0);
        buf[1] = self.reads as u8;
        Ok(())
    }
}

#[test]
fn a_changing_image_is_noticed() {
    let mut out = Vec::new();
    let e = write_sparse(
        8192,
        SparseOptions::new(4096).with_crc(true),
        &[0..4096],
        &mut Fickle { reads: 0 },
        &mut out,
    );
    assert!(matches!(e, Err(ExportError::Changed)), "{e:?}");
}

fn ranges(size: u64) -> impl Strategy<Value = Vec<Range<u64>>> {
    prop::collection::vec((0..size, 0..size / 4), 0..8).prop_map(move |mut v| {
        v.sort();
        let mut out: Vec<Range<u64>> = Vec::new();
        let mut end = 0;
        for (start, len) in v {
            let start = start.max(end);
            let stop = (start + len).min(size);
            if stop > start {
                out.push(start..stop);
                end = stop;
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_map(mapped in ranges(192 << 10), seed in 1u64.., bs in prop::sample::select(vec![512u32, 1024, 4096]), crc: bool) {
        let img = image(192 << 10, &mapped, seed);
        check(&img, bs, crc, &mapped);
    }
}

/// The chunk headers of a sparse image: (type, blocks).
fn chunk_headers(simg: &[u8]) -> Vec<(u16, u32)> {
    let u32_at = |o: usize| u32::from_le_bytes(simg[o..o + 4].try_into().unwrap());
    let count = u32_at(20);
    let mut at = 28;
    (0..count)
        .map(|_| {
            let h = (u16::from_le_bytes([simg[at], simg[at + 1]]), u32_at(at + 4));
            at += u32_at(at + 8) as usize;
            h
        })
        .collect()
}

/// Images of 2^31 blocks and more (up to the format's 2^32 - 1) mapped
/// only at their ends: no chunk covers 2^31 blocks or more (libsparse
/// refuses those), the chunks cover the image exactly, the mapped blocks
/// are RAW.
#[test]
fn images_of_2_31_blocks_and_more_have_no_chunk_libsparse_refuses() {
    for (bs, blocks) in [
        (4096u32, 1u64 << 31),
        (4096, 2_197_265_625),
        (512, (1 << 32) - 1),
    ] {
        let size = blocks * u64::from(bs);
        let mapped = [0..8192, size - 4096..size];
        let mut out = Vec::new();
        let s = write_sparse(
            size,
            SparseOptions::new(bs),
            &mapped,
            &mut Synthetic,
            &mut out,
        )
        .unwrap();
        let chunks = chunk_headers(&out);
        assert_eq!(chunks.len() as u64, s.chunks);
        let total: u64 = chunks.iter().map(|&(_, n)| u64::from(n)).sum();
        assert_eq!(total, blocks, "{bs} x {blocks}");
        assert!(
            chunks.iter().all(|&(_, n)| u64::from(n) < 1 << 31),
            "{bs} x {blocks}: {chunks:?}"
        );
        assert_eq!(s.raw_blocks * u64::from(bs), 8192 + 4096, "{s:?}");
    }
}
