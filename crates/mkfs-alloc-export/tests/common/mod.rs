//! Test images and a minimal sparse-image reader for the export tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::ops::Range;

/// A test image of `size` bytes: the `mapped` ranges hold a mix of
/// pseudo-random bytes, zero blocks, and blocks of one repeated 32-bit
/// value; everything else is zero (as a fresh sparse image is).
pub fn image(size: usize, mapped: &[Range<u64>], seed: u64) -> Vec<u8> {
    let mut img = vec![0u8; size];
    let data = mkfs_alloc_testsupport::test_data(size, seed);
    for r in mapped {
        let (s, e) = (r.start as usize, r.end as usize);
        img[s..e].copy_from_slice(&data[s..e]);
        // Every third 512-byte piece repeats a value, every fifth is zero.
        for p in (s / 512..e.div_ceil(512)).step_by(3) {
            let (ps, pe) = ((p * 512).max(s), ((p + 1) * 512).min(e));
            let word = [0xAB, 0xCD, p as u8, 0x01];
            for (i, b) in img[ps..pe].iter_mut().enumerate() {
                *b = word[(ps + i) % 4];
            }
        }
        for p in (s / 512..e.div_ceil(512)).step_by(5) {
            let (ps, pe) = ((p * 512).max(s), ((p + 1) * 512).min(e));
            img[ps..pe].fill(0);
        }
    }
    img
}

/// A chunk as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    Raw(u32),
    Fill(u32, u32),
    DontCare(u32),
    Crc(u32),
}

/// Expands a sparse image onto `base` (the device's old contents, which
/// DONT_CARE leaves alone); returns the header's checksum and the chunks.
pub fn expand(simg: &[u8], base: &mut [u8]) -> (u32, Vec<Chunk>) {
    let u16_at = |o: usize| u16::from_le_bytes([simg[o], simg[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(simg[o..o + 4].try_into().unwrap());
    assert_eq!(u32_at(0), 0xED26_FF3A);
    assert_eq!(
        (u16_at(4), u16_at(6), u16_at(8), u16_at(10)),
        (1, 0, 28, 12)
    );
    let bs = u32_at(12) as usize;
    let total = u32_at(16) as usize;
    let count = u32_at(20);
    assert_eq!(total * bs, base.len());
    let mut at = 28;
    let mut block = 0usize;
    let mut chunks = Vec::new();
    for _ in 0..count {
        let (ty, n, len) = (u16_at(at), u32_at(at + 4), u32_at(at + 8) as usize);
        let data = &simg[at + 12..at + len];
        let dst = &mut base[block * bs..(block + n as usize) * bs];
        match ty {
            0xCAC1 => {
                assert_eq!(data.len(), dst.len());
                dst.copy_from_slice(data);
                chunks.push(Chunk::Raw(n));
            }
            0xCAC2 => {
                assert_eq!(data.len(), 4);
                for (i, b) in dst.iter_mut().enumerate() {
                    *b = data[i % 4];
                }
                chunks.push(Chunk::Fill(n, u32_at(at + 12)));
            }
            0xCAC3 => {
                assert!(data.is_empty());
                chunks.push(Chunk::DontCare(n));
            }
            0xCAC4 => {
                assert_eq!((n, data.len()), (0, 4));
                chunks.push(Chunk::Crc(u32_at(at + 12)));
            }
            t => panic!("unknown chunk type {t:#x}"),
        }
        block += n as usize;
        at += len;
    }
    assert_eq!(at, simg.len(), "bytes after the last chunk");
    assert_eq!(block, total, "the chunks do not cover the image");
    (u32_at(24), chunks)
}

/// An image of any size whose bytes are a function of their offset (no
/// memory: the large images below are terabytes long).
pub struct Synthetic;

impl mkfs_alloc_export::ReadAt for Synthetic {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = ((offset + i as u64) % 251) as u8 | 1;
        }
        Ok(())
    }
}
