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

/// A fingerprint of the file's contents, `"CRC LEN"` exactly as coreutils'
/// `cksum` prints it (POSIX CRC-32 over the bytes and then the length),
/// computed here so that no tool is needed. A change detector for sentinel
/// and reproducibility checks, not a cryptographic hash: the images are not
/// adversarial.
#[track_caller]
pub fn file_hash(path: &Path) -> String {
    const CKSUM: crc::Crc<u32, crc::Table<16>> =
        crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_CKSUM);
    let mut f = File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let mut digest = CKSUM.digest();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
        len += n as u64;
    }
    // The length follows the data, least significant byte first, without
    // trailing zero bytes.
    let mut rest = len;
    while rest > 0 {
        digest.update(&[rest as u8]);
        rest >>= 8;
    }
    format!("{} {len}", digest.finalize())
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

pub use mkfs_alloc_testsupport::{sparse_file, test_data};
