//! Why a target cannot be formatted, found before anything is written.

use crate::{DeviceError, ImageMount, LockHolder};
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// A target refused while inspecting or opening it: nothing has been
/// written yet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The path is a symbolic link to nothing.
    #[error("{} is a dangling symbolic link (to {}); give the image's own path", path.display(), link.display())]
    DanglingLink {
        /// The path given.
        path: PathBuf,
        /// Where the link points.
        link: PathBuf,
    },
    /// The path's metadata cannot be read.
    #[error("cannot inspect {}", path.display())]
    Inspect {
        /// The path given.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// An image that does not exist, and no size to create it with.
    #[error("{} does not exist, and no size to create it with was given", path.display())]
    Missing {
        /// The path given.
        path: PathBuf,
    },
    /// A new image's directory does not exist.
    #[error("cannot create {}: directory {} does not exist", path.display(), dir.display())]
    NoDirectory {
        /// The image.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
    },
    /// A new image cannot be created (a read-only file system, missing
    /// permission).
    #[error("cannot create {}: {reason}", path.display())]
    CannotCreate {
        /// The image.
        path: PathBuf,
        /// The system's words for it ([`os_text`](super::os_text)).
        reason: String,
    },
    /// The target cannot be opened for writing.
    #[error("cannot open {} for writing: {reason}", path.display())]
    NotWritable {
        /// The target.
        path: PathBuf,
        /// The system's words for it ([`os_text`](super::os_text)).
        reason: String,
    },
    /// The path is a directory.
    #[error("{} is a directory; expected an image file or a block device", path.display())]
    Directory {
        /// The path given.
        path: PathBuf,
    },
    /// The path is a FIFO, a socket or a character device.
    #[error("{} is neither a regular file nor a block device", path.display())]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// An existing image is not a whole number of sectors.
    #[error("{} is {len} bytes, not a multiple of the {sector_size}-byte sector size", path.display())]
    LengthNotMultiple {
        /// The image.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
        /// The sector size.
        sector_size: u32,
    },
    /// The size asked for is not a whole number of sectors.
    #[error("a size of {size} bytes for {} is not a multiple of the {sector_size}-byte sector size", path.display())]
    SizeNotMultiple {
        /// The target.
        path: PathBuf,
        /// The size asked for, in bytes.
        size: u64,
        /// The sector size (the device's logical block size).
        sector_size: u64,
    },
    /// The size asked for is smaller than the existing image.
    #[error("a size of {size} bytes is smaller than the existing image ({current} bytes); images are grown, never shrunk")]
    Shrink {
        /// The size asked for, in bytes.
        size: u64,
        /// The image's length, in bytes.
        current: u64,
    },
    /// The size asked for is larger than the device.
    #[error("a size of {size} bytes is larger than {} ({device_size} bytes); a device keeps its size", path.display())]
    SizeBeyondDevice {
        /// The device.
        path: PathBuf,
        /// The size asked for, in bytes.
        size: u64,
        /// The device's size, in bytes.
        device_size: u64,
    },
    /// The sector size asked for is below the device's logical block size.
    #[error("a sector size of {sector_size} is smaller than the logical sector size of {} ({logical}); valid: {logical}..4096", path.display())]
    SectorBelowDevice {
        /// The device.
        path: PathBuf,
        /// The sector size asked for.
        sector_size: u32,
        /// The device's logical block size.
        logical: u32,
    },
    /// The image backs a mounted loop device.
    #[error("refusing to format {}: it is the backing file of {}, which is mounted on {}; \
             unmount it (umount {}) and detach the loop device (losetup -d {}) first",
            path.display(), loop_device.display(), mountpoint.display(), mountpoint.display(), loop_device.display())]
    LoopMounted {
        /// The image.
        path: PathBuf,
        /// The loop device.
        loop_device: PathBuf,
        /// Where it is mounted (the first mount point).
        mountpoint: PathBuf,
    },
    /// The image backs a loop device held by device-mapper, RAID or swap.
    #[error("refusing to format {}: it is the backing file of {}, which is in use by {}", path.display(), loop_device.display(), users.join(", "))]
    LoopInUse {
        /// The image.
        path: PathBuf,
        /// The loop device.
        loop_device: PathBuf,
        /// What holds it.
        users: Vec<String>,
    },
    /// A file system is mounted from the image itself (a FUSE driver).
    #[error("refusing to format {}: {}", path.display(), mounted_how(mount))]
    ImageMounted {
        /// The image.
        path: PathBuf,
        /// The mount.
        mount: ImageMount,
    },
    /// The device is open exclusively elsewhere (another formatter, a
    /// mount, device-mapper).
    #[error("{} is in use by another process (it is open exclusively, or mounted); nothing was written", path.display())]
    DeviceBusy {
        /// The device.
        path: PathBuf,
    },
    /// Another process holds a lock on the device.
    #[error("{} is in use by another process (it holds a lock on the device); nothing was written", path.display())]
    DeviceLocked {
        /// The device.
        path: PathBuf,
    },
    /// The device must not be formatted ([`refusal`](crate::refusal)).
    #[error("refusing to format {}: {reason}", path.display())]
    Refused {
        /// The device.
        path: PathBuf,
        /// The refusal's sentence.
        reason: String,
    },
    /// Another process (not this one's caller) holds the image's lock.
    #[error("{} is in use by another process ({}); nothing was written", path.display(), holder.as_ref().map_or_else(
        || "it holds a lock on the file".to_string(),
        |h| format!("{h}, which holds a lock on the file")
    ))]
    Locked {
        /// The image.
        path: PathBuf,
        /// The process holding the lock, where it is known.
        holder: Option<LockHolder>,
    },
    /// The opened image's metadata cannot be read.
    #[error("cannot examine {}", path.display())]
    Examine {
        /// The image.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// An opened image did not take its size (a file of `/proc` or `/sys`).
    #[error("{} is not an image file: opened as {want} bytes, it holds {len} (a file of a pseudo file system such as /proc or /sys?); nothing was written", path.display())]
    NotAnImage {
        /// The path given.
        path: PathBuf,
        /// The size it was opened with, in bytes.
        want: u64,
        /// Its length, in bytes.
        len: u64,
    },
    /// The image cannot be locked.
    #[error("cannot lock {}", path.display())]
    Lock {
        /// The image.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// `diskutil unmountDisk` could not be run (macOS).
    #[error("running diskutil unmountDisk")]
    UnmountSpawn {
        /// The system's error.
        source: io::Error,
    },
    /// `diskutil unmountDisk` failed (macOS).
    #[error("diskutil unmountDisk {} failed ({status}); nothing was written", path.display())]
    UnmountFailed {
        /// The device.
        path: PathBuf,
        /// Its exit status.
        status: ExitStatus,
    },
    /// Inspecting or opening the device failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// What mounted the image, and how to unmount it.
fn mounted_how(m: &ImageMount) -> String {
    let on = m
        .mountpoints
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>();
    let by = match &m.driver {
        Some((pid, program)) => format!("the FUSE driver {program} (pid {pid})"),
        None => m.fs_type.clone().unwrap_or_else(|| "a FUSE driver".into()),
    };
    match on.first() {
        Some(first) => format!(
            "its file system is mounted on {} by {by}; unmount it first (fusermount -u {first})",
            on.join(", ")
        ),
        None => format!("{by} holds it open as a file system; unmount that first"),
    }
}

/// A fact about a target worth telling, that does not stop the format.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetNote {
    /// The image is attached to a loop device that is not mounted.
    LoopAttached {
        /// The image.
        path: PathBuf,
        /// The loop device.
        loop_device: PathBuf,
    },
}

impl std::fmt::Display for TargetNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetNote::LoopAttached { path, loop_device } => {
                let dev = loop_device.display();
                write!(
                    f,
                    "{} is attached to {dev} (not mounted); what the kernel caches of it may be stale: losetup -d {dev}",
                    path.display()
                )
            }
        }
    }
}
