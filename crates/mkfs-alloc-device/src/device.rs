//! [`Device`]: an exclusively opened block device as a [`BlockIo`], over the
//! platform's raw handle (`sys::RawDevice`).

use std::io;
use std::path::Path;

use mkfs_alloc_blockio::range::{block_range, buffer_range, invalid};
use mkfs_alloc_blockio::{write_zeroes_by_writing, BlockIo, IoError, IoOp};

use crate::{finish, sys, DeviceError, DeviceInfo};

/// An exclusively opened block device, usable as a [`BlockIo`] whose block
/// size is the device's logical block size.
///
/// Linux opens with `O_EXCL`: opening fails with [`DeviceError::Busy`] if the
/// device is mounted by the kernel or opened exclusively elsewhere (FUSE
/// mounts are not caught by `O_EXCL`: check [`refusal`](crate::refusal) first). macOS opens
/// with `O_EXLOCK`. Windows locks and dismounts the disk's volumes for as
/// long as the `Device` lives.
///
/// ```no_run
/// use mkfs_alloc_blockio::BlockIo;
/// use mkfs_alloc_device as device;
/// use std::path::Path;
///
/// let info = device::inspect(Path::new("/dev/sdb"))?;
/// if let Some(r) = device::refusal(&info) {
///     panic!("{}", r.reason);
/// }
/// let mut dev = device::Device::open(&info.path)?;
/// dev.write_blocks(0, &vec![0; dev.block_size() as usize])?;
/// dev.flush()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Device {
    raw: sys::RawDevice,
    info: DeviceInfo,
    block_size: u32,
    num_blocks: u64,
    /// Whether the fast zeroing path may still be supported.
    zero_fast: bool,
}

impl Device {
    /// Opens the block device at `path` exclusively for reading and writing.
    ///
    /// The [`info`](Device::info) is gathered through the open handle. The
    /// device's size must be a whole number of logical blocks.
    ///
    /// # Errors
    ///
    /// [`DeviceError::NotABlockDevice`], [`DeviceError::Busy`] (held by a
    /// mount or another program), [`DeviceError::Io`] (permission denied,
    /// ...), [`DeviceError::Invalid`] (odd geometry).
    pub fn open(path: &Path) -> Result<Device, DeviceError> {
        Self::open_with(path, false)
    }

    /// Opens like [`Device::open`], with the operating system's caches
    /// bypassed, so that every read comes from the device and every write
    /// reaches it (the counterfeit-capacity probe needs this): `O_DIRECT` on
    /// Linux (through a 4096-aligned bounce buffer), `F_NOCACHE` on the raw
    /// node on macOS, `FILE_FLAG_NO_BUFFERING` on Windows (as every open
    /// there). The device's own cache is not affected.
    ///
    /// # Errors
    ///
    /// As [`Device::open`]; `EINVAL` ([`DeviceError::Io`]) if the device
    /// refuses direct I/O.
    pub fn open_uncached(path: &Path) -> Result<Device, DeviceError> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, uncached: bool) -> Result<Device, DeviceError> {
        let (raw, mut info) = sys::RawDevice::open(path, uncached)?;
        finish(&mut info)?;
        let block_size = info.logical_block_size;
        if info.size_bytes % u64::from(block_size) != 0 {
            return Err(DeviceError::Invalid {
                path: info.path.clone(),
                detail: format!(
                    "size {} bytes is not a multiple of the logical block size {block_size}",
                    info.size_bytes
                ),
            });
        }
        let num_blocks = info.size_bytes / u64::from(block_size);
        Ok(Device {
            raw,
            info,
            block_size,
            num_blocks,
            zero_fast: true,
        })
    }

    /// Limits the device to its first `size_bytes` bytes (a multiple of the
    /// logical block size, at most the device size): I/O beyond fails as
    /// out of range, [`BlockIo::num_blocks`] shrinks. For counterfeit sticks,
    /// whose blocks beyond the real capacity must not be touched.
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`] `InvalidInput` if `size_bytes` is misaligned or too large.
    pub fn limit(&mut self, size_bytes: u64) -> Result<(), IoError> {
        let bs = u64::from(self.block_size);
        if size_bytes % bs != 0 || size_bytes / bs > self.num_blocks {
            return Err(invalid(
                IoOp::Open,
                0,
                size_bytes,
                format!(
                    "cannot limit a device of {} bytes to {size_bytes} bytes ({bs}-byte blocks)",
                    self.num_blocks * bs
                ),
            ));
        }
        self.num_blocks = size_bytes / bs;
        Ok(())
    }

    /// What was found about the device when it was opened.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Discards (TRIMs) `len` bytes at byte `offset`: `BLKDISCARD` on Linux,
    /// `DKIOCUNMAP` on macOS. Both must be multiples of the logical block
    /// size. Discarded blocks may read back as anything (often zeros).
    ///
    /// Returns `Ok(false)` if the device or platform cannot discard (nothing
    /// was done), `Ok(true)` if the range was discarded.
    ///
    /// # Errors
    ///
    /// [`IoOp::Zero`] errors at `offset`: misaligned or out-of-range request,
    /// or the device failed.
    pub fn discard(&mut self, offset: u64, len: u64) -> Result<bool, IoError> {
        let bs = u64::from(self.block_size);
        if offset % bs != 0 || len % bs != 0 {
            return Err(invalid(
                IoOp::Zero,
                offset,
                len,
                format!("discard range is not aligned to the logical block size {bs}"),
            ));
        }
        let r = block_range(
            IoOp::Zero,
            self.block_size,
            self.num_blocks,
            offset / bs,
            len / bs,
        )?;
        if r.len == 0 {
            return Ok(true);
        }
        self.raw
            .discard(r.offset, r.len)
            .map_err(|e| IoError::new(IoOp::Zero, r.offset, r.len, e))
    }

    /// Makes the next reads come from the device, not from the operating
    /// system's cache of it (a read-back check after writing): on Linux
    /// `fsync` and `posix_fadvise(POSIX_FADV_DONTNEED)` (the block device's
    /// page cache dropped; a handle from [`Device::open_uncached`] has
    /// none); macOS reads the raw node, which it does not cache, and
    /// Windows opens every device unbuffered: nothing to do there.
    ///
    /// # Errors
    ///
    /// [`IoOp::Flush`] with the operating system's error.
    pub fn forget_cached(&mut self) -> Result<(), IoError> {
        self.raw
            .forget_cached()
            .map_err(|e| IoError::new(IoOp::Flush, 0, self.info.size_bytes, e))
    }

    /// Asks the kernel to re-read the partition table: `BLKRRPART` on Linux,
    /// `IOCTL_DISK_UPDATE_PROPERTIES` on Windows. macOS has no such call (it
    /// re-probes a disk when its last writer closes it) and returns an
    /// `Unsupported` error.
    ///
    /// # Errors
    ///
    /// [`IoOp::Open`] at offset 0 with the reason, e.g. `EBUSY` (a partition
    /// is in use) or `EINVAL` (a loop device without partition scanning).
    pub fn reread_partitions(&mut self) -> Result<(), IoError> {
        self.raw
            .reread_partitions()
            .map_err(|e| IoError::new(IoOp::Open, 0, self.info.size_bytes, e))
    }
}

impl BlockIo for Device {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn num_blocks(&self) -> u64 {
        self.num_blocks
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        let r = buffer_range(IoOp::Read, self.block_size, self.num_blocks, lba, dst.len())?;
        self.raw
            .read_at(r.offset, dst)
            .map_err(|(done, e)| IoError::new(IoOp::Read, r.offset + done, r.len - done, e))
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let r = buffer_range(
            IoOp::Write,
            self.block_size,
            self.num_blocks,
            lba,
            src.len(),
        )?;
        self.raw
            .write_at(r.offset, src)
            .map_err(|(done, e)| IoError::new(IoOp::Write, r.offset + done, r.len - done, e))
    }

    /// `BLKZEROOUT` on Linux; writes zeros elsewhere, or when the kernel
    /// refuses.
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        let r = block_range(IoOp::Zero, self.block_size, self.num_blocks, lba, count)?;
        if r.len == 0 {
            return Ok(());
        }
        if self.zero_fast {
            match self.raw.zero_range(r.offset, r.len) {
                Ok(true) => return Ok(()),
                Ok(false) => self.zero_fast = false,
                Err(e) => return Err(IoError::new(IoOp::Zero, r.offset, r.len, e)),
            }
        }
        write_zeroes_by_writing(self, lba, count)
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.raw
            .flush()
            .map_err(|e| IoError::new(IoOp::Flush, 0, self.info.size_bytes, e))
    }
}

/// Result of a positioned transfer: on failure, the bytes done before the
/// error and the error.
pub(crate) type XferResult = Result<(), (u64, io::Error)>;

/// Repeats a positioned transfer until `len` bytes are done: `step(done)`
/// moves bytes from byte `done` of the request on and returns how many (none
/// is an error of kind `on_zero`). Interrupted calls are retried; a failure
/// carries the bytes done before it.
#[cfg(any(target_os = "linux", target_os = "macos", windows))]
pub(crate) fn transfer_all(
    len: usize,
    on_zero: io::ErrorKind,
    mut step: impl FnMut(usize) -> io::Result<usize>,
) -> XferResult {
    let mut done = 0usize;
    while done < len {
        match step(done) {
            Ok(0) => return Err((done as u64, on_zero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done as u64, e)),
        }
    }
    Ok(())
}
