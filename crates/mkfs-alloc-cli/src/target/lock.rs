//! An image file whose lock (`flock`) another process holds: let through
//! when that process is this one's caller (systemd's convention of running
//! mkfs under the caller's lock), refused naming the holder otherwise.

use anyhow::{anyhow, Context};
use mkfs_alloc::blockio::ImageFile;
use mkfs_alloc_device::{self as device, DeviceError};
use std::io::ErrorKind;
use std::path::Path;

/// "in use by another process" for a lock held elsewhere, naming the
/// holder when it is known.
fn locked(e: DeviceError) -> anyhow::Error {
    match e {
        DeviceError::Locked { path, holder } => anyhow!(
            "{} is in use by another process ({}); nothing was written",
            path.display(),
            holder.map_or_else(
                || "it holds a lock on the file".to_string(),
                |h| format!("{h}, which holds a lock on the file")
            )
        ),
        other => anyhow!(other),
    }
}

/// After the image's lock was refused (held): `Ok` when the holder is this
/// process or its caller (an ancestor that locked the file and runs us
/// under its lock), else the refusal naming the holder.
pub(super) fn lock_is_callers(img: &ImageFile) -> Result<(), anyhow::Error> {
    let meta = img
        .metadata()
        .with_context(|| format!("cannot examine {}", img.path().display()))?;
    device::check_lock_holder(img.path(), &meta).map_err(locked)
}

/// Whether another process (not this one's caller) holds a lock on the
/// image (read-only look): the refusal the real run would meet.
pub(super) fn lock_held_elsewhere(path: &Path, block_size: u32) -> Result<(), anyhow::Error> {
    let Ok(img) = ImageFile::open_read_only(path, block_size) else {
        return Ok(());
    };
    match img.try_lock_shared() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => lock_is_callers(&img),
        _ => Ok(()),
    }
}
