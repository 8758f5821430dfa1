//! An image file whose lock (`flock`) another process holds: let through
//! when that process is this one's caller (systemd's convention of running
//! mkfs under the caller's lock), refused naming the holder otherwise.

use super::TargetError;
use crate::DeviceError;
use mkfs_alloc_blockio::ImageFile;
use std::io::ErrorKind;
use std::path::Path;

/// After the image's lock was refused (held): `Ok` when the holder is this
/// process or its caller (an ancestor that locked the file and runs us
/// under its lock), else the refusal naming the holder.
pub(super) fn lock_is_callers(img: &ImageFile) -> Result<(), TargetError> {
    let meta = img.metadata().map_err(|source| TargetError::Examine {
        path: img.path().to_path_buf(),
        source,
    })?;
    crate::check_lock_holder(img.path(), &meta).map_err(|e| match e {
        DeviceError::Locked { path, holder } => TargetError::Locked { path, holder },
        other => TargetError::Device(other),
    })
}

/// Whether another process (not this one's caller) holds a lock on the
/// image (read-only look): the refusal the real run would meet.
pub(super) fn lock_held_elsewhere(path: &Path, block_size: u32) -> Result<(), TargetError> {
    let Ok(img) = ImageFile::open_read_only(path, block_size) else {
        return Ok(());
    };
    match img.try_lock_shared() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => lock_is_callers(&img),
        _ => Ok(()),
    }
}
