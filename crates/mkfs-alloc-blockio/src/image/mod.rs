//! [`ImageFile`]: a (sparse) disk image file as a block device.
//!
//! Positioned I/O only (`pread`/`pwrite` on Unix, `seek_read`/`seek_write` on
//! Windows), so the file cursor is never relied on. On Linux,
//! [`write_zeroes`](BlockIo::write_zeroes) first asks the file system where
//! the range holds data (`SEEK_DATA`/`SEEK_HOLE`) and leaves holes alone;
//! ranges of up to [`SMALL_ZERO_RANGE`](crate::SMALL_ZERO_RANGE) bytes are then overwritten with
//! zeros where they hold data that is not zero yet (read first, in 64 KiB
//! pieces), larger ones get their holes punched with
//! `fallocate(PUNCH_HOLE | KEEP_SIZE)`, falling back to
//! `fallocate(ZERO_RANGE)`, then to writing zero buffers. Elsewhere it writes
//! zero buffers.
//!
//! Why small ranges are written: a punch changes the file's extent map, so
//! it takes a journal handle and the next `fdatasync` must commit the file
//! system's journal (ext4 on the benchmark machine, `strace -T`: 2-5 ms per
//! punch at a load of 5), while overwriting allocated blocks only writes
//! data. A format zeroes a few small ranges (the FAT, the bitmap, the old
//! boot regions); on a written 4 GiB image their seven punches were most of
//! the run (`BENCHMARKS.md`).

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::range::{block_range, buffer_range, check_block_size};
use crate::{BlockIo, IoError, IoOp, IoStats};

/// How a [`write_zeroes`](BlockIo::write_zeroes) call on an [`ImageFile`]
/// was carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroMethod {
    /// `fallocate(PUNCH_HOLE | KEEP_SIZE)`: the blocks were deallocated.
    PunchHole,
    /// `fallocate(ZERO_RANGE)`: the blocks were zeroed by the file system.
    ZeroRange,
    /// Zero buffers were written (over the parts holding data, on Linux).
    Writing,
    /// Nothing written: the range already read as zero (holes by Linux
    /// `SEEK_DATA`, and, in a range of up to
    /// [`SMALL_ZERO_RANGE`](crate::SMALL_ZERO_RANGE) bytes, data read back as
    /// zeros).
    AlreadyZero,
}

/// A disk image file accessed as fixed-size blocks.
///
/// The file size is a whole number of blocks (except for one opened with
/// [`open_read_only`](ImageFile::open_read_only)) and never changes after
/// opening. Counters of the work done are kept in [`ImageFile::stats`].
///
/// ```no_run
/// use mkfs_alloc_blockio::{BlockIo, ImageFile};
///
/// let mut img = ImageFile::create("disk.img", 64 << 20, 512)?;
/// assert!(img.reads_as_zero());
/// img.write_blocks(0, &[0xEB; 512])?;
/// img.flush()?;
/// # Ok::<(), mkfs_alloc_blockio::IoError>(())
/// ```
#[derive(Debug)]
pub struct ImageFile {
    file: File,
    path: PathBuf,
    block_size: u32,
    size: u64,
    all_zero: bool,
    stats: IoStats,
    last_zero: Option<ZeroMethod>,
    /// `fallocate` modes not yet found unsupported by this file system.
    #[cfg(target_os = "linux")]
    punch_ok: bool,
    #[cfg(target_os = "linux")]
    zero_range_ok: bool,
}

impl ImageFile {
    /// Creates a new sparse image of `size_bytes` bytes at `path`.
    ///
    /// Fails if `path` already exists. [`reads_as_zero`](BlockIo::reads_as_zero)
    /// is true until the first write.
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`] at offset 0: `block_size` not a power of two,
    /// `size_bytes` not a multiple of it, the file exists, or the file system
    /// refused the size (the new file is then removed).
    pub fn create(
        path: impl AsRef<Path>,
        size_bytes: u64,
        block_size: u32,
    ) -> Result<Self, IoError> {
        let path = path.as_ref();
        let open_err = |e: io::Error| open_error(path, size_bytes, e);
        check_size(size_bytes, block_size).map_err(open_err)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(open_err)?;
        if let Err(e) = file.set_len(size_bytes) {
            drop(file);
            // Best effort: the file is ours and useless; the set_len error is
            // the one worth reporting.
            let _ = std::fs::remove_file(path);
            return Err(open_err(e));
        }
        Ok(Self::from_file(file, path, size_bytes, block_size, true))
    }

    /// Opens an existing image for reading and writing, keeping its size.
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`] at offset 0: `block_size` not a power of two, the file
    /// cannot be opened, or its size is not a multiple of `block_size`.
    pub fn open(path: impl AsRef<Path>, block_size: u32) -> Result<Self, IoError> {
        let path = path.as_ref();
        let (file, size) = open_existing(path, block_size)?;
        check_size(size, block_size).map_err(|e| open_error(path, size, e))?;
        Ok(Self::from_file(file, path, size, block_size, false))
    }

    /// Opens an existing image or a block device read-only (for probing and
    /// inspection; no write permission needed). Writes fail with the
    /// operating system's error. A block device's size is found by seeking
    /// to its end. A trailing partial block is not visible (it is counted in
    /// [`size_bytes`](ImageFile::size_bytes), not in the blocks).
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`] at offset 0: `block_size` not a power of two, a
    /// directory, or the file cannot be opened or sized.
    pub fn open_read_only(path: impl AsRef<Path>, block_size: u32) -> Result<Self, IoError> {
        let path = path.as_ref();
        let open_err = |e: io::Error| open_error(path, 0, e);
        check_block_size(block_size).map_err(open_err)?;
        let mut file = OpenOptions::new().read(true).open(path).map_err(open_err)?;
        let meta = file.metadata().map_err(open_err)?;
        if meta.is_dir() {
            return Err(open_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a directory",
            )));
        }
        // A block device's metadata says 0 bytes; its end says how large it is.
        let size = if meta.is_file() {
            meta.len()
        } else {
            file.seek(SeekFrom::End(0)).map_err(open_err)?
        };
        Ok(Self::from_file(file, path, size, block_size, false))
    }

    /// Opens an existing image and grows it, sparsely, to `new_size` bytes.
    ///
    /// A file already of `new_size` bytes is left as it is.
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`] at offset 0: as [`ImageFile::open`] for `new_size`,
    /// or the file is larger than `new_size` (images are never shrunk).
    pub fn open_resize(
        path: impl AsRef<Path>,
        new_size: u64,
        block_size: u32,
    ) -> Result<Self, IoError> {
        let path = path.as_ref();
        let open_err = |e: io::Error| open_error(path, new_size, e);
        check_size(new_size, block_size).map_err(open_err)?;
        let (file, size) = open_existing(path, block_size)?;
        if size > new_size {
            return Err(open_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the file has {size} bytes; refusing to shrink it to {new_size}"),
            )));
        }
        if size < new_size {
            file.set_len(new_size).map_err(open_err)?;
        }
        Ok(Self::from_file(file, path, new_size, block_size, false))
    }

    /// Size of the image in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// Takes an exclusive advisory lock on the file (`flock(LOCK_EX |
    /// LOCK_NB)`), held until the image is dropped, so that two formatting
    /// runs never write one image at once. Does nothing where `flock` does
    /// not exist (Windows).
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::WouldBlock`] when another process holds a lock on
    /// the file; other errors of `flock`.
    pub fn try_lock_exclusive(&self) -> io::Result<()> {
        lock(&self.file, true)
    }

    /// Takes a shared advisory lock (`flock(LOCK_SH | LOCK_NB)`), held until
    /// the image is dropped: fails with [`io::ErrorKind::WouldBlock`] while
    /// another process formats the file (for a read-only look, such as a dry
    /// run, that must say the file is in use).
    ///
    /// # Errors
    ///
    /// As [`ImageFile::try_lock_exclusive`].
    pub fn try_lock_shared(&self) -> io::Result<()> {
        lock(&self.file, false)
    }

    /// The open file's metadata (`fstat`: the file locked and written, even
    /// if its path has been renamed or replaced since it was opened).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// Path the image was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the file's data to its disk and drops it from the page cache
    /// (`fdatasync`, then `posix_fadvise(POSIX_FADV_DONTNEED)` on Linux), so
    /// that the next reads come from the disk: a read-back check after a
    /// format. Elsewhere only the sync.
    ///
    /// # Errors
    ///
    /// The sync's or the advice's error.
    pub fn forget_cached(&self) -> io::Result<()> {
        self.file.sync_data()?;
        #[cfg(target_os = "linux")]
        rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::DontNeed)?;
        Ok(())
    }

    /// The open file (for [`FileCopier`](crate::FileCopier)).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Counters of the successful operations so far.
    pub fn stats(&self) -> IoStats {
        self.stats
    }

    /// How the last successful [`write_zeroes`](BlockIo::write_zeroes) was
    /// done, or `None` before the first one.
    pub fn last_zero_method(&self) -> Option<ZeroMethod> {
        self.last_zero
    }

    fn from_file(file: File, path: &Path, size: u64, block_size: u32, all_zero: bool) -> Self {
        ImageFile {
            file,
            path: path.to_path_buf(),
            block_size,
            size,
            all_zero,
            stats: IoStats::default(),
            last_zero: None,
            #[cfg(target_os = "linux")]
            punch_ok: true,
            #[cfg(target_os = "linux")]
            zero_range_ok: true,
        }
    }

    /// Zeroes `len` bytes at `offset` (already bounds-checked), by the
    /// cheapest method the file system supports.
    fn zero_bytes(&mut self, offset: u64, len: u64) -> io::Result<ZeroMethod> {
        #[cfg(target_os = "linux")]
        {
            let end = offset + len;
            let Some(first) = next_data(&self.file, offset, end) else {
                return Ok(ZeroMethod::AlreadyZero);
            };
            if len <= crate::SMALL_ZERO_RANGE {
                let wrote = self.write_zeros_over_data(first, end)?;
                return Ok(if wrote {
                    ZeroMethod::Writing
                } else {
                    ZeroMethod::AlreadyZero
                });
            }
            if let Some(method) = self.zero_by_fallocate(offset, len)? {
                return Ok(method);
            }
        }
        self.write_zeros(offset, len)?;
        Ok(ZeroMethod::Writing)
    }

    /// `fallocate(PUNCH_HOLE)`, else `fallocate(ZERO_RANGE)`; `None` when the
    /// file system supports neither (remembered for the next calls).
    #[cfg(target_os = "linux")]
    fn zero_by_fallocate(&mut self, offset: u64, len: u64) -> io::Result<Option<ZeroMethod>> {
        use rustix::fs::{fallocate, FallocateFlags};

        if self.punch_ok {
            let mode = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            match fallocate(&self.file, mode, offset, len) {
                Ok(()) => return Ok(Some(ZeroMethod::PunchHole)),
                Err(e) if fallocate_unsupported(e) => self.punch_ok = false,
                Err(e) => return Err(e.into()),
            }
        }
        if self.zero_range_ok {
            let mode = FallocateFlags::ZERO_RANGE | FallocateFlags::KEEP_SIZE;
            match fallocate(&self.file, mode, offset, len) {
                Ok(()) => return Ok(Some(ZeroMethod::ZeroRange)),
                Err(e) if fallocate_unsupported(e) => self.zero_range_ok = false,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// Zeroes the data extents in `first..end`, where `first` is the start
    /// of the first one; the holes between them are skipped, and so is every
    /// 64 KiB piece that already reads as zero (read first: a read from the
    /// page cache costs less than writing, and an old image's end, zeroed by
    /// the last format, would otherwise be rewritten by every format).
    /// Returns whether anything was written.
    #[cfg(target_os = "linux")]
    fn write_zeros_over_data(&mut self, first: u64, end: u64) -> io::Result<bool> {
        let mut wrote = false;
        let mut buf = vec![0u8; ZERO_PIECE];
        let mut data = Some(first);
        while let Some(start) = data {
            let stop = hole_after(&self.file, start, end);
            let mut at = start;
            while at < stop {
                let n = usize::try_from(stop - at).map_or(ZERO_PIECE, |left| left.min(ZERO_PIECE));
                let piece = &mut buf[..n];
                // A piece that cannot be read is written: zeroing must not
                // depend on reading.
                let zero =
                    read_exact_at(&self.file, piece, at).is_ok() && piece.iter().all(|&b| b == 0);
                if !zero {
                    self.write_zeros(at, n as u64)?;
                    wrote = true;
                }
                at += n as u64;
            }
            data = next_data(&self.file, stop, end);
        }
        Ok(wrote)
    }

    /// Writes zeros over `len` bytes at `offset` from one static 64 KiB
    /// buffer (reused, so its pages are faulted in once: a fresh 1 MiB
    /// buffer per call made the kernel's copy fault on every page, several
    /// times the cost of the copy, `perf record`). Not through
    /// `write_blocks`, so that the counters stay apart.
    fn write_zeros(&mut self, offset: u64, len: u64) -> io::Result<()> {
        static ZEROS: [u8; ZERO_PIECE] = [0; ZERO_PIECE];
        let mut done = 0u64;
        while done < len {
            let n = usize::try_from(len - done).map_or(ZEROS.len(), |left| left.min(ZEROS.len()));
            write_all_at(&self.file, &ZEROS[..n], offset + done)?;
            done += n as u64;
        }
        Ok(())
    }
}

/// Bytes of one zero write, and of one read when checking for zeros.
const ZERO_PIECE: usize = 64 << 10;

/// Start of the first data at or after `from` and before `end`, by
/// `SEEK_DATA`; `None` when `from..end` is a hole. A file system without
/// hole reporting (or any error) answers `from`: all of it is treated as
/// data, which is always safe.
#[cfg(target_os = "linux")]
pub(crate) fn next_data(file: &File, from: u64, end: u64) -> Option<u64> {
    use rustix::fs::{seek, SeekFrom};

    if from >= end {
        return None;
    }
    match seek(file, SeekFrom::Data(from)) {
        Ok(at) if at >= end => None,
        Ok(at) => Some(at.max(from)),
        // ENXIO: no data at or after `from`.
        Err(rustix::io::Errno::NXIO) => None,
        Err(_) => Some(from),
    }
}

/// End of the data extent holding `at` (the next hole, by `SEEK_HOLE`),
/// capped at `end`; `end` on any error.
#[cfg(target_os = "linux")]
pub(crate) fn hole_after(file: &File, at: u64, end: u64) -> u64 {
    use rustix::fs::{seek, SeekFrom};

    match seek(file, SeekFrom::Hole(at)) {
        Ok(hole) if hole > at => hole.min(end),
        _ => end,
    }
}

/// True for the errors by which `fallocate` says a mode is not supported.
#[cfg(target_os = "linux")]
fn fallocate_unsupported(e: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    e == Errno::OPNOTSUPP || e == Errno::NOSYS || e == Errno::INVAL
}

/// Opens an existing file read-write and returns it with its size.
fn open_existing(path: &Path, block_size: u32) -> Result<(File, u64), IoError> {
    check_block_size(block_size).map_err(|e| open_error(path, 0, e))?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| open_error(path, 0, e))?;
    let size = file.metadata().map_err(|e| open_error(path, 0, e))?.len();
    Ok((file, size))
}

/// Checks that `size` is a whole number of `block_size`-byte blocks.
fn check_size(size: u64, block_size: u32) -> io::Result<()> {
    check_block_size(block_size)?;
    if size % u64::from(block_size) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("size {size} bytes is not a multiple of the block size {block_size}"),
        ));
    }
    Ok(())
}

/// An [`IoOp::Open`] error at offset 0 whose message names the path; the
/// error kind is kept.
fn open_error(path: &Path, len: u64, e: io::Error) -> IoError {
    let source = io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    IoError::new(IoOp::Open, 0, len, source)
}

impl BlockIo for ImageFile {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn num_blocks(&self) -> u64 {
        self.size / u64::from(self.block_size)
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        let r = buffer_range(
            IoOp::Read,
            self.block_size,
            self.num_blocks(),
            lba,
            dst.len(),
        )?;
        read_exact_at(&self.file, dst, r.offset)
            .map_err(|e| IoError::new(IoOp::Read, r.offset, r.len, e))?;
        self.stats.add_read(r.len);
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let r = buffer_range(
            IoOp::Write,
            self.block_size,
            self.num_blocks(),
            lba,
            src.len(),
        )?;
        // Cleared before writing: a partial write also leaves data behind.
        self.all_zero = false;
        write_all_at(&self.file, src, r.offset)
            .map_err(|e| IoError::new(IoOp::Write, r.offset, r.len, e))?;
        self.stats.add_write(r.len);
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        let r = block_range(IoOp::Zero, self.block_size, self.num_blocks(), lba, count)?;
        if r.len > 0 {
            let method = self
                .zero_bytes(r.offset, r.len)
                .map_err(|e| IoError::new(IoOp::Zero, r.offset, r.len, e))?;
            self.last_zero = Some(method);
        }
        self.stats.add_zero(r.len);
        Ok(())
    }

    fn reads_as_zero(&self) -> bool {
        self.all_zero
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.file
            .sync_data()
            .map_err(|e| IoError::new(IoOp::Flush, 0, self.size, e))?;
        self.stats.add_flush();
        Ok(())
    }
}

#[cfg(unix)]
fn lock(file: &File, exclusive: bool) -> io::Result<()> {
    use rustix::fs::{flock, FlockOperation};
    let op = if exclusive {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    flock(file, op).map_err(io::Error::from)
}

#[cfg(not(unix))]
fn lock(_file: &File, _exclusive: bool) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(unix)]
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(windows)]
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                ))
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(windows)]
pub(crate) fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "failed to write whole buffer",
                ))
            }
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
