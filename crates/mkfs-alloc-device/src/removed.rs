//! Whether a block device went away under a write (unplugged, its card
//! pulled): the operating system says there is no device, or its node is
//! gone.

use std::error::Error;
use std::path::Path;

/// Whether the failure `e` of an access to the block device at `path`
/// means the device was removed: an `io::Error` in its chain of sources is
/// `ENODEV`, `ENXIO` or (Linux) `ENOMEDIUM` (errno(3); the kernel's answer
/// once a USB device is unplugged or a card is pulled), or the node at
/// `path` no longer exists. Any other failure of a device still there is
/// not.
pub fn device_removed(e: &(dyn Error + 'static), path: &Path) -> bool {
    let mut source = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if gone(io) {
                return true;
            }
        }
        source = s.source();
    }
    !path.exists()
}

/// `ENODEV`, `ENXIO`, `ENOMEDIUM`.
#[cfg(unix)]
fn gone(io: &std::io::Error) -> bool {
    use rustix::io::Errno;
    #[cfg(target_os = "linux")]
    let no_medium = Errno::NOMEDIUM;
    // ENOMEDIUM is Linux's; elsewhere ENODEV again.
    #[cfg(not(target_os = "linux"))]
    let no_medium = Errno::NODEV;
    [Errno::NODEV, Errno::NXIO, no_medium]
        .iter()
        .any(|e| io.raw_os_error() == Some(e.raw_os_error()))
}

/// No error code names a removed device here: only its node tells.
#[cfg(not(unix))]
fn gone(_: &std::io::Error) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::{IoError, IoOp};

    fn io(errno: Option<i32>) -> IoError {
        let source = errno.map_or_else(
            || std::io::Error::other("checksum"),
            std::io::Error::from_raw_os_error,
        );
        IoError::new(IoOp::Write, 0, 512, source)
    }

    /// A device that says it is gone, or whose node is gone, was removed;
    /// another error on a device still there is a failure.
    #[test]
    #[cfg(target_os = "linux")]
    fn removed_devices_are_told_apart() {
        let here = Path::new("/");
        let gone = Path::new("/dev/no-such-device-of-mkfs-alloc");
        assert!(device_removed(&io(Some(19)), here)); // ENODEV
        assert!(device_removed(&io(Some(6)), here)); // ENXIO
        assert!(device_removed(&io(Some(123)), here)); // ENOMEDIUM
        assert!(!device_removed(&io(Some(5)), here)); // EIO, still there
        assert!(device_removed(&io(Some(5)), gone));
        assert!(!device_removed(&io(None), here));
        // The error itself, not only a source of it.
        assert!(device_removed(&std::io::Error::from_raw_os_error(19), here));
    }
}
