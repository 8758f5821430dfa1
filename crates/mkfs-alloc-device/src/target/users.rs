//! Who else uses a target. An image file: a loop device backed by it (mounted, or
//! held by device-mapper or swap), or a FUSE driver that mounted it
//! directly (`fusefat -o rw+ IMG DIR`). All found by device and inode, so
//! another name or a hard link of the image is found too. A device: an
//! exclusive open or a lock by another process (a dry run's look).

use super::{Refusals, TargetError, TargetNote};
use std::path::Path;

/// Loop devices backed by the image: mounted (or held) ones are refused,
/// attached ones noted.
pub(super) fn check_loop_devices(
    path: &Path,
    refusals: &mut Refusals,
    notes: &mut Vec<TargetNote>,
) -> Result<(), TargetError> {
    for l in crate::loop_devices_backed_by(path) {
        if let Some(m) = l.mountpoints.first() {
            refusals.refuse(TargetError::LoopMounted {
                path: path.to_path_buf(),
                loop_device: l.device.clone(),
                mountpoint: m.clone(),
            })?;
        } else if !l.in_use_by.is_empty() {
            refusals.refuse(TargetError::LoopInUse {
                path: path.to_path_buf(),
                loop_device: l.device.clone(),
                users: l.in_use_by.clone(),
            })?;
        } else {
            notes.push(TargetNote::LoopAttached {
                path: path.to_path_buf(),
                loop_device: l.device.clone(),
            });
        }
    }
    Ok(())
}

/// File systems mounted from the image itself (a FUSE driver reading the
/// file, no loop device): refused like a mounted loop device.
pub(super) fn check_image_mounts(path: &Path, refusals: &mut Refusals) -> Result<(), TargetError> {
    for mount in crate::image_mounts(path) {
        refusals.refuse(TargetError::ImageMounted {
            path: path.to_path_buf(),
            mount,
        })?;
    }
    Ok(())
}

/// Whether another process holds the device (read-only look, for a dry
/// run): an exclusive open of it (`O_EXCL`: another formatter, a mount,
/// device-mapper) or a lock on it (`flock`, systemd's convention).
#[cfg(target_os = "linux")]
pub(super) fn device_held_elsewhere(path: &Path) -> Option<TargetError> {
    use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::EXCL | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let path_buf = || path.to_path_buf();
    match open(path, flags, Mode::empty()) {
        Err(e) if e == rustix::io::Errno::BUSY => {
            Some(TargetError::DeviceBusy { path: path_buf() })
        }
        Err(_) => None,
        Ok(fd) => (flock(&fd, FlockOperation::NonBlockingLockShared)
            == Err(rustix::io::Errno::WOULDBLOCK))
        .then(|| TargetError::DeviceLocked { path: path_buf() }),
    }
}

/// Elsewhere the real run's exclusive open finds out.
#[cfg(not(target_os = "linux"))]
pub(super) fn device_held_elsewhere(_path: &Path) -> Option<TargetError> {
    None
}
