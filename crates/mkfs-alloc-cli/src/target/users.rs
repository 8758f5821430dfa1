//! Who else uses a target. An image file: a loop device backed by it (mounted, or
//! held by device-mapper or swap), or a FUSE driver that mounted it
//! directly (`fusefat -o rw+ IMG DIR`). All found by device and inode, so
//! another name or a hard link of the image is found too. A device: an
//! exclusive open or a lock by another process (a dry run's look).

use super::Refusals;
use crate::Failure;
use anyhow::anyhow;
use mkfs_alloc_device as device;
use std::path::Path;

/// Loop devices backed by the image: mounted (or held) ones are refused,
/// attached ones noted.
pub(super) fn check_loop_devices(
    path: &Path,
    refusals: &mut Refusals,
    notes: &mut Vec<String>,
) -> Result<(), Failure> {
    for l in device::loop_devices_backed_by(path) {
        let dev = l.device.display();
        if let Some(m) = l.mountpoints.first() {
            refusals.refuse(anyhow!(
                "refusing to format {}: it is the backing file of {dev}, which is mounted on {}; \
                 unmount it (umount {}) and detach the loop device (losetup -d {dev}) first",
                path.display(),
                m.display(),
                m.display()
            ))?;
        } else if !l.in_use_by.is_empty() {
            refusals.refuse(anyhow!(
                "refusing to format {}: it is the backing file of {dev}, which is in use by {}",
                path.display(),
                l.in_use_by.join(", ")
            ))?;
        } else {
            notes.push(format!(
                "{} is attached to {dev} (not mounted); what the kernel caches of it may be stale: losetup -d {dev}",
                path.display()
            ));
        }
    }
    Ok(())
}

/// File systems mounted from the image itself (a FUSE driver reading the
/// file, no loop device): refused like a mounted loop device.
pub(super) fn check_image_mounts(path: &Path, refusals: &mut Refusals) -> Result<(), Failure> {
    for m in device::image_mounts(path) {
        let on = m
            .mountpoints
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>();
        let by = match &m.driver {
            Some((pid, program)) => format!("the FUSE driver {program} (pid {pid})"),
            None => m.fs_type.clone().unwrap_or_else(|| "a FUSE driver".into()),
        };
        let how = match on.first() {
            Some(first) => format!(
                "its file system is mounted on {} by {by}; unmount it first (fusermount -u {first})",
                on.join(", ")
            ),
            None => format!("{by} holds it open as a file system; unmount that first"),
        };
        refusals.refuse(anyhow!("refusing to format {}: {how}", path.display()))?;
    }
    Ok(())
}

/// Whether another process holds the device (read-only look, for a dry
/// run): an exclusive open of it (`O_EXCL`: another formatter, a mount,
/// device-mapper) or a lock on it (`flock`, systemd's convention).
#[cfg(target_os = "linux")]
pub(super) fn device_held_elsewhere(path: &Path) -> Option<anyhow::Error> {
    use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::EXCL | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match open(path, flags, Mode::empty()) {
        Err(e) if e == rustix::io::Errno::BUSY => Some(anyhow!(
            "{} is in use by another process (it is open exclusively, or mounted); nothing was written",
            path.display()
        )),
        Err(_) => None,
        Ok(fd) => (flock(&fd, FlockOperation::NonBlockingLockShared)
            == Err(rustix::io::Errno::WOULDBLOCK))
        .then(|| {
            anyhow!(
                "{} is in use by another process (it holds a lock on the device); nothing was written",
                path.display()
            )
        }),
    }
}

/// Elsewhere the real run's exclusive open finds out.
#[cfg(not(target_os = "linux"))]
pub(super) fn device_held_elsewhere(_path: &Path) -> Option<anyhow::Error> {
    None
}
