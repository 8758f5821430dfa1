//! The Linux calls behind [`FileCopier`](super::FileCopier): `FICLONERANGE`
//! through `reflink-copy`'s safe wrapper, `copy_file_range`, `statfs` and
//! `O_TMPFILE` through rustix.

use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::num::NonZeroU64;
use std::path::Path;

/// What a failed clone or in-kernel copy means for the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fallback {
    /// Unsupported here: never ask again (`EOPNOTSUPP`, `ENOSYS`, `ENOTTY`).
    Never,
    /// The source is on another file system (`EXDEV`): not for its device.
    OtherFs,
    /// This range was refused (`EINVAL`, `ETXTBSY`): try the next way for it.
    ThisRange,
}

/// The fallback an error allows; `None` for a real failure.
pub(super) fn fallback(e: &io::Error) -> Option<Fallback> {
    let errno = Errno::from_io_error(e)?;
    if errno == Errno::OPNOTSUPP || errno == Errno::NOSYS || errno == Errno::NOTTY {
        Some(Fallback::Never)
    } else if errno == Errno::XDEV {
        Some(Fallback::OtherFs)
    } else if errno == Errno::INVAL || errno == Errno::TXTBSY {
        Some(Fallback::ThisRange)
    } else {
        None
    }
}

/// The reason a clone was refused, in words.
pub(super) fn why(e: &io::Error) -> String {
    match fallback(e) {
        Some(Fallback::Never) => format!(
            "it does not share extents ({e}); XFS made with reflink=1, btrfs and bcachefs do, ext4 does not"
        ),
        Some(Fallback::OtherFs) => "the source is on another file system".to_string(),
        Some(Fallback::ThisRange) => format!("the host refused the range ({e})"),
        None => e.to_string(),
    }
}

/// `st_dev` and size of `file`.
pub(super) fn dev_and_len(file: &File) -> io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(file)?;
    Ok((st.st_dev, u64::try_from(st.st_size).unwrap_or(0)))
}

/// The block size of `file`'s file system (`fstatfs`'s `f_bsize`), 4096
/// if it says something that is not a power of two.
pub(super) fn block_size(file: &File) -> io::Result<u64> {
    let st = rustix::fs::fstatfs(file)?;
    let bs = u64::try_from(st.f_bsize).unwrap_or(0);
    Ok(if bs.is_power_of_two() { bs } else { 4096 })
}

/// `FICLONERANGE`: `len` bytes of `src` at `src_offset` shared into `dst`
/// at `dst_offset`.
pub(super) fn clone_range(
    src: &File,
    src_offset: u64,
    dst: &File,
    dst_offset: u64,
    len: u64,
) -> io::Result<()> {
    let Some(len) = NonZeroU64::new(len) else {
        return Ok(());
    };
    reflink_copy::ReflinkBlockBuilder::new(src, dst, len)
        .from_offset(src_offset)
        .to_offset(dst_offset)
        .reflink_block()
}

/// Clones the first `len` bytes of `src` into an unnamed temporary file
/// in `dir` (removed when closed).
pub(super) fn trial_clone(dir: &Path, src: &File, len: u64) -> io::Result<()> {
    use rustix::fs::{openat, Mode, OFlags, CWD};
    let fd = openat(
        CWD,
        dir,
        OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )?;
    let tmp = File::from(fd);
    clone_range(src, 0, &tmp, 0, len)
}

/// How an in-kernel copy stopped early.
#[derive(Debug)]
pub(super) enum KernelCopyError {
    /// The source ended at this offset after this many bytes.
    Ended(u64, u64),
    /// The kernel failed after this many bytes.
    Failed(u64, io::Error),
}

/// `copy_file_range` of `len` bytes, in calls of up to 1 GiB; the bytes
/// copied.
pub(super) fn kernel_copy(
    src: &File,
    src_offset: u64,
    dst: &File,
    dst_offset: u64,
    len: u64,
) -> Result<u64, KernelCopyError> {
    let (mut off_in, mut off_out) = (src_offset, dst_offset);
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(1 << 30) as usize;
        match rustix::fs::copy_file_range(src, Some(&mut off_in), dst, Some(&mut off_out), n) {
            Ok(0) => return Err(KernelCopyError::Ended(done, off_in)),
            Ok(got) => done += got as u64,
            Err(Errno::INTR) => {}
            Err(e) => return Err(KernelCopyError::Failed(done, e.into())),
        }
    }
    Ok(done)
}
