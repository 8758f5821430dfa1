//! [`FileCopier`]: file data into an [`ImageFile`] without passing it
//! through user space where the host can.
//!
//! On Linux, in order (`--copy auto`):
//! 1. **clone** (`FICLONERANGE`, ioctl_ficlonerange(2)): the image shares
//!    the source's extents, nothing is copied. Only whole blocks of the
//!    image's file system, at offsets that are multiples of its block size
//!    in both files; XFS with `reflink=1`, btrfs, bcachefs, OCFS2. The tail
//!    of the range beyond its last whole host block is written by hand.
//! 2. **in-kernel copy** (`copy_file_range(2)`): the kernel moves the bytes
//!    from page cache to page cache (ext4 and most others).
//! 3. **read and write** (`pread`/`pwrite` through a 1 MiB buffer).
//!
//! A step that fails with `EXDEV` (another file system), `EOPNOTSUPP`,
//! `ENOSYS` or `ENOTTY` (unsupported) or `EINVAL` (an unaligned or
//! otherwise refused range) falls back to the next; the first three are
//! remembered (per source device for `EXDEV`) so a run does not ask again
//! for every file.
//!
//! Why the clone is asked for with `FICLONERANGE` and not left to
//! `copy_file_range` (which clones by itself where it can): the ioctl
//! clones or fails, so the counters say which bytes were shared and which
//! were copied, and `--copy reflink` can refuse instead of copying
//! silently. `copy_file_range` is then only asked where a clone failed, so
//! what it does is a copy.
//!
//! `--copy copy` reads and writes (never `copy_file_range`, which would
//! clone on XFS). macOS has no call that clones into the middle of a file
//! and Windows' block cloning (ReFS) is not used: both read and write.
//!
//! Checking that the source did not change during the copy is the caller's
//! (size and modification time from `fstat` before and after).

use crate::image::{read_exact_at, write_all_at};
use crate::{ImageFile, IoError, IoOp};
use std::fs::File;
use std::io;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as sys;

/// How file data may reach an image file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CopyMode {
    /// Clone where the host can, else copy in the kernel, else read and
    /// write.
    #[default]
    Auto,
    /// Clone, or fail: [`FileCopier::probe`] says beforehand whether it
    /// can, and a clone that fails later is an error.
    Reflink,
    /// Read and write, never clone.
    Copy,
}

/// How many bytes reached the image each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyCounts {
    /// Shared with the source (cloned): no data written.
    pub cloned: u64,
    /// Copied by the kernel (`copy_file_range`).
    pub copied_in_kernel: u64,
    /// Read and written by hand.
    pub written: u64,
}

/// Why the image cannot receive clones (`--copy reflink` refuses).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloneRefusal {
    /// Not Linux.
    #[error("this system has no call that clones part of a file into the middle of another (FICLONERANGE is Linux's)")]
    Unsupported,
    /// File data would not start on host blocks.
    #[error("file data would start at byte offsets that are not multiples of the block size of the image's file system ({host_block} bytes): {what}")]
    Unaligned {
        /// The image file system's block size.
        host_block: u64,
        /// What is not aligned.
        what: String,
    },
    /// The host refused a trial clone.
    #[error("the image's file system cannot share a block of {source_name} with it: {reason}")]
    Refused {
        /// The source file's name, for the message.
        source_name: String,
        /// Why, in words (from the error number).
        reason: String,
    },
}

/// Why a copy failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The source could not be read.
    #[error("reading the source at byte offset {offset} failed")]
    Source {
        /// Source offset.
        offset: u64,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The source ended before the bytes to copy (it shrank).
    #[error("the source ends at byte {at}, before the end of the range to copy")]
    SourceEnded {
        /// Where it ended.
        at: u64,
    },
    /// Writing (or cloning into) the image failed.
    #[error(transparent)]
    Target(#[from] IoError),
}

/// Copies byte ranges of host files into one image file (see the module).
#[derive(Debug)]
// Off Linux nothing is cloned: the directory and the fallbacks go unread.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct FileCopier {
    image: File,
    dir: PathBuf,
    size: u64,
    mode: CopyMode,
    host_block: u64,
    state: Fallbacks,
    counts: CopyCounts,
    buf: Vec<u8>,
}

/// What the host was found not to do, so it is not asked again.
#[derive(Debug, Default)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Fallbacks {
    /// The image's file system cannot clone.
    no_clone: bool,
    /// `copy_file_range` is missing or refused.
    no_kernel_copy: bool,
    /// Source devices (`st_dev`) a clone refused as another file system.
    clone_other_fs: Vec<u64>,
    /// Source devices `copy_file_range` refused as another file system.
    kernel_other_fs: Vec<u64>,
    /// Source devices found able to clone into the image ([`FileCopier::probe`]).
    probed: Vec<u64>,
}

/// Bytes read and written at a time by hand.
const BUF: usize = 1 << 20;
/// Zero runs of at least this many bytes are skipped by hand writes into a
/// range that already reads as zero (as `--rootdir` does).
const HOLE: usize = 64 << 10;

impl ImageFile {
    /// A [`FileCopier`] into this image (a second descriptor of the file).
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`]: the descriptor cannot be duplicated or the image's
    /// file system not asked for its block size.
    pub fn copier(&self, mode: CopyMode) -> Result<FileCopier, IoError> {
        let err = |e| IoError::new(IoOp::Open, 0, self.size_bytes(), e);
        let image = self.file().try_clone().map_err(err)?;
        let host_block = host_block_size(&image).map_err(err)?;
        let dir = self
            .path()
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), PathBuf::from);
        Ok(FileCopier {
            image,
            dir,
            size: self.size_bytes(),
            mode,
            host_block,
            state: Fallbacks::default(),
            counts: CopyCounts::default(),
            buf: Vec::new(),
        })
    }
}

impl FileCopier {
    /// The mode it copies in.
    pub fn mode(&self) -> CopyMode {
        self.mode
    }

    /// Block size of the image's file system (`statfs`), the unit of a
    /// clone; 4096 where it cannot be asked.
    pub fn host_block_size(&self) -> u64 {
        self.host_block
    }

    /// Bytes copied so far, by way.
    pub fn counts(&self) -> CopyCounts {
        self.counts
    }

    /// Whether data placed at `offset` in runs of `unit` bytes (the data
    /// region's start and the cluster size) starts on host blocks, so
    /// that it can be cloned; the reason if not.
    ///
    /// # Errors
    ///
    /// [`CloneRefusal::Unaligned`].
    pub fn check_alignment(&self, offset: u64, unit: u64) -> Result<(), CloneRefusal> {
        let hb = self.host_block;
        let what = if unit % hb != 0 {
            format!("clusters of {unit} bytes")
        } else if offset % hb != 0 {
            format!("the data region starts at byte {offset} of the image")
        } else {
            return Ok(());
        };
        Err(CloneRefusal::Unaligned {
            host_block: hb,
            what,
        })
    }

    /// Checks, before anything is written, that `src` (named `name` in
    /// messages) can be cloned into the image: one host block of it is
    /// cloned into an unnamed temporary file beside the image
    /// (`O_TMPFILE`, gone when closed). A source smaller than one host
    /// block has nothing to clone and passes; one success per source
    /// device is remembered.
    ///
    /// # Errors
    ///
    /// [`CloneRefusal::Unsupported`] off Linux, [`CloneRefusal::Refused`]
    /// with the host's reason.
    pub fn probe(&mut self, src: &File, name: &str) -> Result<(), CloneRefusal> {
        #[cfg(target_os = "linux")]
        {
            let refused = |reason: String| CloneRefusal::Refused {
                source_name: name.to_string(),
                reason,
            };
            let (dev, len) = sys::dev_and_len(src).map_err(|e| refused(e.to_string()))?;
            if len < self.host_block || self.state.probed.contains(&dev) {
                return Ok(());
            }
            sys::trial_clone(&self.dir, src, self.host_block).map_err(|e| refused(sys::why(&e)))?;
            self.state.probed.push(dev);
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (src, name);
            Err(CloneRefusal::Unsupported)
        }
    }

    /// Copies `len` bytes of `src` from `src_offset` into the image at
    /// byte `offset`, by the cheapest way [`mode`](Self::mode) allows (see
    /// the module). `zeroed`: the image range reads as zero already (a new
    /// sparse image), so the source's holes and zero runs need not be
    /// written.
    ///
    /// # Errors
    ///
    /// [`CopyError::Source`], [`CopyError::SourceEnded`],
    /// [`CopyError::Target`] (also a range beyond the image, and in
    /// [`CopyMode::Reflink`] a clone the host refused).
    pub fn copy(
        &mut self,
        src: &File,
        src_offset: u64,
        offset: u64,
        len: u64,
        zeroed: bool,
    ) -> Result<(), CopyError> {
        let end = offset.checked_add(len).filter(|&e| e <= self.size);
        if end.is_none() {
            return Err(crate::range::invalid(
                IoOp::Write,
                offset,
                len,
                format!(
                    "{len} bytes at byte {offset} do not fit in an image of {} bytes",
                    self.size
                ),
            )
            .into());
        }
        let mut done = 0;
        if self.mode != CopyMode::Copy {
            done = self.clone_head(src, src_offset, offset, len)?;
        }
        let (src_offset, offset, len) = (src_offset + done, offset + done, len - done);
        if len == 0 {
            return Ok(());
        }
        if self.mode == CopyMode::Auto
            && done == 0
            && self.kernel_copy(src, src_offset, offset, len, zeroed)?
        {
            return Ok(());
        }
        self.by_hand(src, src_offset, offset, len, zeroed)
    }

    /// Clones the whole host blocks at the start of the range; returns
    /// the bytes cloned (0 when nothing could be).
    #[allow(unused_variables)]
    fn clone_head(
        &mut self,
        src: &File,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> Result<u64, CopyError> {
        let hb = self.host_block;
        let head = len / hb * hb;
        let reflink = self.mode == CopyMode::Reflink;
        let target_err =
            |e: io::Error| CopyError::Target(IoError::new(IoOp::Write, offset, head, e));
        if head == 0 {
            return Ok(0);
        }
        if src_offset % hb != 0 || offset % hb != 0 {
            return if reflink {
                Err(target_err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("not on {hb}-byte host blocks: cannot clone"),
                )))
            } else {
                Ok(0)
            };
        }
        #[cfg(target_os = "linux")]
        {
            if self.state.no_clone && !reflink {
                return Ok(0);
            }
            let dev = sys::dev_and_len(src).map(|(d, _)| d).ok();
            if !reflink && dev.is_some_and(|d| self.state.clone_other_fs.contains(&d)) {
                return Ok(0);
            }
            match sys::clone_range(src, src_offset, &self.image, offset, head) {
                Ok(()) => {
                    self.counts.cloned += head;
                    Ok(head)
                }
                Err(e) if reflink => Err(target_err(e)),
                Err(e) => match sys::fallback(&e) {
                    Some(sys::Fallback::Never) => {
                        self.state.no_clone = true;
                        Ok(0)
                    }
                    Some(sys::Fallback::OtherFs) => {
                        self.state.clone_other_fs.extend(dev);
                        Ok(0)
                    }
                    Some(sys::Fallback::ThisRange) => Ok(0),
                    None => Err(target_err(e)),
                },
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            if reflink {
                return Err(target_err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    CloneRefusal::Unsupported.to_string(),
                )));
            }
            Ok(0)
        }
    }

    /// `copy_file_range` of the whole range (its data extents only when
    /// `zeroed`); false when the kernel cannot, before anything was copied.
    #[allow(unused_variables)]
    fn kernel_copy(
        &mut self,
        src: &File,
        src_offset: u64,
        offset: u64,
        len: u64,
        zeroed: bool,
    ) -> Result<bool, CopyError> {
        #[cfg(target_os = "linux")]
        {
            let dev = sys::dev_and_len(src).map(|(d, _)| d).ok();
            if self.state.no_kernel_copy
                || dev.is_some_and(|d| self.state.kernel_other_fs.contains(&d))
            {
                return Ok(false);
            }
            let src_end = src_offset + len;
            let mut at = src_offset;
            while let Some(start) = if zeroed {
                crate::image::next_data(src, at, src_end)
            } else {
                (at < src_end).then_some(at)
            } {
                let stop = if zeroed {
                    crate::image::hole_after(src, start, src_end)
                } else {
                    src_end
                };
                let dst = offset + (start - src_offset);
                match sys::kernel_copy(src, start, &self.image, dst, stop - start) {
                    Ok(n) => self.counts.copied_in_kernel += n,
                    Err(sys::KernelCopyError::Ended(n, end)) => {
                        self.counts.copied_in_kernel += n;
                        return Err(CopyError::SourceEnded { at: end });
                    }
                    Err(sys::KernelCopyError::Failed(n, e)) => {
                        self.counts.copied_in_kernel += n;
                        let first = n == 0 && start == src_offset;
                        match sys::fallback(&e) {
                            Some(f) if first => {
                                match f {
                                    sys::Fallback::Never => self.state.no_kernel_copy = true,
                                    sys::Fallback::OtherFs => {
                                        self.state.kernel_other_fs.extend(dev)
                                    }
                                    sys::Fallback::ThisRange => {}
                                }
                                return Ok(false);
                            }
                            _ => {
                                let len = stop - start - n;
                                return Err(IoError::new(IoOp::Write, dst + n, len, e).into());
                            }
                        }
                    }
                }
                at = stop;
            }
            Ok(true)
        }
        #[cfg(not(target_os = "linux"))]
        Ok(false)
    }

    /// Reads and writes through the buffer; with `zeroed`, pieces of
    /// [`HOLE`] zero bytes are not written.
    fn by_hand(
        &mut self,
        src: &File,
        src_offset: u64,
        offset: u64,
        len: u64,
        zeroed: bool,
    ) -> Result<(), CopyError> {
        if self.buf.is_empty() {
            self.buf = vec![0; BUF];
        }
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(BUF as u64) as usize;
            let piece = &mut self.buf[..n];
            let at = src_offset + done;
            read_exact_at(src, piece, at).map_err(|e| {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    CopyError::SourceEnded { at }
                } else {
                    CopyError::Source {
                        offset: at,
                        source: e,
                    }
                }
            })?;
            for (i, part) in piece.chunks(HOLE).enumerate() {
                if zeroed && part.len() == HOLE && part.iter().all(|&b| b == 0) {
                    continue;
                }
                let dst = offset + done + (i * HOLE) as u64;
                write_all_at(&self.image, part, dst)
                    .map_err(|e| IoError::new(IoOp::Write, dst, part.len() as u64, e))?;
                self.counts.written += part.len() as u64;
            }
            done += n as u64;
        }
        Ok(())
    }
}

/// The block size of the file system holding `file`.
fn host_block_size(file: &File) -> io::Result<u64> {
    #[cfg(target_os = "linux")]
    {
        sys::block_size(file)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Ok(4096)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
