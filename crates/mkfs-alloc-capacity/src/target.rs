//! What a probe runs on: a block device, checked and opened uncached (and
//! reopened between the write and read phases, [`Reopening`]), or an image
//! file through the page cache, for testing.

use std::path::{Path, PathBuf};

use mkfs_alloc_blockio::{ImageFile, IoError, IoOp};
use mkfs_alloc_device::{self as device, Device, DeviceError, DeviceInfo};

use crate::{DeviceIdentity, ProbeTarget, Reopening};

/// Why a path cannot be probed; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// Inspecting or opening the device failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The device must not be probed (mounted, the system disk, ...).
    #[error("refusing to probe {}: {reason}", path.display())]
    Refused {
        /// The device.
        path: PathBuf,
        /// Why ([`device::refusal`]).
        reason: String,
    },
    /// The path cannot be inspected.
    #[error("cannot inspect {}", path.display())]
    Inspect {
        /// The path.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// Neither a block device nor a regular file.
    #[error("{} is neither a block device nor an image file", path.display())]
    Kind {
        /// The path.
        path: PathBuf,
    },
    /// Opening the image file failed.
    #[error("opening {}", path.display())]
    Open {
        /// The image.
        path: PathBuf,
        /// The failure.
        #[source]
        source: IoError,
    },
}

impl TargetError {
    /// True for an I/O failure, false for a target refused as it is.
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            TargetError::Device(DeviceError::Io { .. }) | TargetError::Open { .. }
        )
    }
}

/// A probe target, opened.
pub enum Opened {
    /// A device, uncached.
    Device(Reopening<Device>),
    /// An image file.
    Image(ImageFile),
}

impl Opened {
    /// Inspects `path` and refuses what must not be probed (mounted, system
    /// disk, ...); the device's information for a block device, `None` for
    /// an image file.
    ///
    /// # Errors
    ///
    /// [`TargetError`] for a refused device or a path that is neither a
    /// device nor a regular file.
    pub fn check(path: &Path) -> Result<Option<DeviceInfo>, TargetError> {
        if device::is_block_device(path) {
            let info = device::inspect(path)?;
            if let Some(r) = device::refusal(&info) {
                return Err(TargetError::Refused {
                    path: path.to_path_buf(),
                    reason: r.reason,
                });
            }
            return Ok(Some(info));
        }
        let meta = std::fs::metadata(path).map_err(|source| TargetError::Inspect {
            path: path.to_path_buf(),
            source,
        })?;
        if !meta.is_file() {
            return Err(TargetError::Kind {
                path: path.to_path_buf(),
            });
        }
        Ok(None)
    }

    /// Opens `path`: uncached and reopened between the phases for a device
    /// (`is_device`), through the page cache for an image.
    ///
    /// # Errors
    ///
    /// [`TargetError::Device`] or [`TargetError::Open`].
    pub fn open(path: &Path, is_device: bool) -> Result<Opened, TargetError> {
        if is_device {
            let dev = Device::open_uncached(path)?;
            let path = path.to_path_buf();
            let reopen = move || {
                Device::open_uncached(&path).map_err(|e| {
                    IoError::new(IoOp::Open, 0, 0, std::io::Error::other(e.to_string()))
                })
            };
            return Ok(Opened::Device(Reopening::new(dev, Box::new(reopen))));
        }
        ImageFile::open(path, 512)
            .map(Opened::Image)
            .map_err(|source| TargetError::Open {
                path: path.to_path_buf(),
                source,
            })
    }

    /// The target to probe.
    pub fn target(&mut self) -> &mut dyn ProbeTarget {
        match self {
            Opened::Device(d) => d,
            Opened::Image(i) => i,
        }
    }
}

/// What identifies the target: the device's serial and model where the
/// operating system reports them, and the path (an image's canonical path).
pub fn identity(path: &Path, info: Option<&DeviceInfo>) -> DeviceIdentity {
    DeviceIdentity {
        serial: info.and_then(|i| i.serial.clone()),
        model: info.and_then(|i| i.model.clone()),
        path: Some(
            info.map_or_else(
                || std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
                |i| i.path.clone(),
            )
            .display()
            .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_file_is_checked_opened_and_identified() {
        let dir = std::env::temp_dir().join(format!("capacity-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let img = dir.join("stick.img");
        std::fs::write(&img, vec![0u8; 1 << 16]).expect("image");
        assert!(Opened::check(&img).expect("an image file").is_none());
        let mut opened = Opened::open(&img, false).expect("opens");
        assert_eq!(opened.target().num_blocks(), (1 << 16) / 512);
        let id = identity(&img, None);
        let real = std::fs::canonicalize(&img).expect("canonical");
        assert_eq!(
            id.path.as_deref(),
            Some(real.display().to_string().as_str())
        );
        assert!(id.serial.is_none() && id.model.is_none());
        // A directory is refused as what it is, not as an I/O failure.
        let e = Opened::check(&dir).expect_err("a directory");
        assert!(matches!(e, TargetError::Kind { .. }) && !e.is_io());
        let e = Opened::check(&dir.join("missing")).expect_err("missing");
        assert!(matches!(e, TargetError::Inspect { .. }) && !e.is_io());
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
