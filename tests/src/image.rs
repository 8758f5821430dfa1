//! Image files: sentinel fills, hashes and reads at an offset.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The byte that sentinel-filled images hold where nothing was written.
pub const SENTINEL: u8 = 0xD1;

/// Creates (or truncates) `path` as `size` bytes of `byte`.
#[track_caller]
pub fn fill_file(path: &Path, size: u64, byte: u8) {
    let mut f =
        File::create(path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    write_repeated(&mut f, path, size, byte);
}

/// Writes `len` bytes of `byte` at the current position of `f` (`path` names
/// it in panics), a megabyte at a time.
#[track_caller]
fn write_repeated(f: &mut File, path: &Path, len: u64, byte: u8) {
    let chunk = vec![byte; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        left -= n as u64;
    }
}

/// Creates (or truncates) `path` as a sparse file of `size` bytes.
#[track_caller]
pub fn sparse_file(path: &Path, size: u64) {
    let f = File::create(path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    f.set_len(size)
        .unwrap_or_else(|e| panic!("cannot size {}: {e}", path.display()));
}

/// A fingerprint of the file's contents: coreutils' `cksum` (CRC-32 and
/// length). A change detector for sentinel and reproducibility checks, not a
/// cryptographic hash: it is ~40x faster than `sha256sum` here, and the
/// images are not adversarial.
#[track_caller]
pub fn file_hash(path: &Path) -> String {
    let out = crate::cmd::run(crate::tools::require_tool("cksum"), &[path]);
    out.assert_success();
    let mut words = out.stdout.split_whitespace();
    let (crc, len) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    assert!(
        crc.parse::<u32>().is_ok() && len.parse::<u64>().is_ok(),
        "unexpected cksum output:\n{out}"
    );
    format!("{crc} {len}")
}

/// Writes `len` bytes of `byte` at `offset` of an existing file.
#[track_caller]
pub fn fill_range(path: &Path, offset: u64, len: u64, byte: u8) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    f.seek(SeekFrom::Start(offset))
        .unwrap_or_else(|e| panic!("cannot seek {}: {e}", path.display()));
    write_repeated(&mut f, path, len, byte);
}

/// Reads `len` bytes at byte `offset` of `path`.
#[track_caller]
pub fn read_at(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let mut f = File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    f.seek(SeekFrom::Start(offset))
        .unwrap_or_else(|e| panic!("cannot seek {}: {e}", path.display()));
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf).unwrap_or_else(|e| {
        panic!(
            "cannot read {len} bytes at {offset} of {}: {e}",
            path.display()
        )
    });
    buf
}

/// Deterministic pseudo-random test data (xorshift), so that misplaced
/// blocks do not compare equal by accident.
pub fn test_data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
