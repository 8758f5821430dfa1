//! Positioned whole transfers on a Unix file descriptor (`pread`/`pwrite`
//! through `FileExt`), shared by Linux and macOS.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::{transfer_all, XferResult};

/// Reads all of `buf` from byte `offset` of `file`.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> XferResult {
    transfer_all(buf.len(), io::ErrorKind::UnexpectedEof, |done| {
        file.read_at(&mut buf[done..], offset + done as u64)
    })
}

/// Writes all of `buf` at byte `offset` of `file`.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> XferResult {
    transfer_all(buf.len(), io::ErrorKind::WriteZero, |done| {
        file.write_at(&buf[done..], offset + done as u64)
    })
}
