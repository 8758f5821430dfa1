//! Raw block devices: inspection, listing, safety checks and exclusive I/O.
//!
//! ```text
//!  inspect(path) ──► DeviceInfo ──► refusal(&info) ──► None ──► Device::open(path)
//!  list()        ──► [DeviceInfo]                            (exclusive, BlockIo)
//! ```
//!
//! * [`inspect`] and [`list`] never open a device for writing.
//! * [`refusal`] says why a device must not be formatted (mounted, holds the
//!   running system, in use, read-only, no medium).
//! * [`Device`] is an exclusively opened device that implements
//!   [`BlockIo`](mkfs_alloc_blockio::BlockIo)
//!   with the logical block size as its block size.
//!
//! Platforms: Linux (`/dev/sdX`, `/dev/mmcblkN`, `/dev/loopN`, ...), macOS
//! (`/dev/diskN`, `/dev/rdiskN`) and Windows (`\\.\PhysicalDriveN`, or a drive
//! letter `\\.\X:` / `X:` standing for the disk that holds it). Other
//! platforms get [`DeviceError::Unsupported`].
//!
//! Architecture invariant: the platform modules are the only places of the
//! workspace with `unsafe` code; every `unsafe` block has a `// SAFETY:`
//! comment.
//!
//! ```no_run
//! use mkfs_alloc_device::{inspect, list, refusal};
//!
//! // What could be formatted, removable media first (reads sysfs, opens nothing).
//! for d in list()? {
//!     println!("{} {} bytes, removable: {}", d.path.display(), d.size_bytes, d.removable);
//! }
//! // Why a device must not be formatted, if it must not.
//! let info = inspect(std::path::Path::new("/dev/sdb"))?;
//! if let Some(why) = refusal(&info) {
//!     eprintln!("refused: {}", why.reason);
//! }
//! # Ok::<(), mkfs_alloc_device::DeviceError>(())
//! ```

#![warn(clippy::missing_errors_doc)]
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as sys;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod unsupported;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
use unsupported as sys;

#[cfg(any(target_os = "linux", windows))]
mod bounce;
mod device;
mod lock_holder;
#[cfg(target_os = "linux")]
mod mountinfo;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod unix;

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
pub(crate) use device::transfer_all;
pub use device::Device;
pub(crate) use device::XferResult;
pub use lock_holder::{check_lock_holder, LockHolder};
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod probe;
mod removed;
mod size;
pub mod target;

pub use removed::device_removed;
pub use size::{size_of, SizeError};

/// What is known about a block device, gathered without writing to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    /// Path of the device (canonical: symbolic links such as
    /// `/dev/disk/by-id/...` are resolved; on Windows `\\.\PhysicalDriveN`).
    pub path: PathBuf,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical block (sector) size in bytes: the unit of addressing and the
    /// [`BlockIo::block_size`](mkfs_alloc_blockio::BlockIo::block_size) of a [`Device`].
    pub logical_block_size: u32,
    /// Physical block size in bytes (writes smaller than this are
    /// read-modify-write inside the device).
    pub physical_block_size: u32,
    /// Optimal I/O size in bytes reported by the device, 0 if unknown.
    pub optimal_io_size: u32,
    /// Discard (TRIM/UNMAP) granularity in bytes, 0 if the device cannot
    /// discard.
    pub discard_granularity: u64,
    /// Removable medium or hot-pluggable device (USB, SD/MMC, FireWire).
    pub removable: bool,
    /// Whether the device is read-only (write-protect switch, read-only
    /// loop device, ...).
    pub read_only: bool,
    /// Vendor string, if the device reports one.
    pub vendor: Option<String>,
    /// Model string, if the device reports one.
    pub model: Option<String>,
    /// Serial number, if the device reports one.
    pub serial: Option<String>,
    /// True for a whole disk, false for a partition. A Linux loop device
    /// attached with an offset or size limit is a whole disk of its own.
    pub is_whole_disk: bool,
    /// Partitions of the disk (empty for a partition), ordered by number.
    pub partitions: Vec<PartitionInfo>,
    /// Where the device itself is mounted (not its partitions).
    pub mountpoints: Vec<PathBuf>,
    /// Whether the device (or a partition of it, or a device built on it)
    /// holds the running system's root file system.
    pub holds_system_root: bool,
    /// Other users of the device or its partitions that keep it busy:
    /// device-mapper / RAID holders (`/dev/dm-0`), active swap (`swap`).
    pub in_use_by: Vec<String>,
    /// File system type found on the device itself (`exfat`, `vfat`,
    /// `ext4`, ...), if known.
    pub fs_type: Option<String>,
    /// File system label found on the device itself, if known.
    pub label: Option<String>,
}

/// A partition of a [`DeviceInfo`] disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionInfo {
    /// Path of the partition node (it may not exist, e.g. for a loop device
    /// without partition scanning).
    pub path: PathBuf,
    /// Offset of the partition from the start of the disk, in bytes.
    pub start_bytes: u64,
    /// Size of the partition in bytes.
    pub size_bytes: u64,
    /// Where the partition is mounted.
    pub mountpoints: Vec<PathBuf>,
    /// File system type found in the partition, if known.
    pub fs_type: Option<String>,
    /// File system label found in the partition, if known.
    pub label: Option<String>,
}

impl DeviceInfo {
    /// Every mount point of the device and of its partitions, device first.
    pub fn all_mountpoints(&self) -> impl Iterator<Item = &Path> {
        self.mountpoints
            .iter()
            .chain(self.partitions.iter().flat_map(|p| p.mountpoints.iter()))
            .map(PathBuf::as_path)
    }
}

/// Why a device must not be formatted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum RefusalKind {
    /// The device holds the running system's root file system.
    SystemDisk,
    /// The device or one of its partitions is mounted.
    Mounted,
    /// The device is used by another device (device-mapper, RAID) or as swap.
    InUse,
    /// The device is read-only.
    ReadOnly,
    /// The device has no medium (size 0).
    NoMedium,
}

/// Why formatting a device must be refused, from [`refusal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The kind of refusal, for programs.
    pub kind: RefusalKind,
    /// A sentence for humans, naming the device (and the mount point).
    pub reason: String,
    /// The mount point that blocks formatting, for [`RefusalKind::Mounted`].
    pub mountpoint: Option<PathBuf>,
    /// Whether a user may override the refusal (for example with
    /// `--force`). None of the current refusals is overridable: unmounting
    /// or releasing the device is the way out.
    pub overridable: bool,
}

/// Errors of device inspection and opening.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The path exists but is not a block device.
    #[error("{path}: not a block device")]
    NotABlockDevice {
        /// The path given.
        path: PathBuf,
    },
    /// Exclusive opening failed because something else holds the device
    /// (a kernel mount, device-mapper, RAID, another program).
    #[error("{path}: device is busy (mounted, or in use by another program or device)")]
    Busy {
        /// The device.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Another process holds an advisory lock on the (whole) disk or the
    /// image file, as systemd's "locking block device access" convention
    /// asks of every program that writes partition tables or file systems,
    /// and it is neither this process nor one of its ancestors (a caller
    /// that locked the device and runs us under its lock is let through:
    /// [`check_lock_holder`]).
    #[error("{path}: in use by another process ({})", lock_holder::clause(holder.as_ref()))]
    Locked {
        /// The whole-disk device or the file whose lock is held.
        path: PathBuf,
        /// The process holding the lock, when `/proc/locks` names one that
        /// this process can see (Linux).
        holder: Option<LockHolder>,
    },
    /// A system call or system file failed.
    #[error("{path}: {what}")]
    Io {
        /// The device (or system file) concerned.
        path: PathBuf,
        /// What was attempted (`open`, `BLKGETSIZE64`, `read /proc/self/mountinfo`).
        what: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The device reported values this crate cannot work with.
    #[error("{path}: {detail}")]
    Invalid {
        /// The device.
        path: PathBuf,
        /// What is wrong, with the values.
        detail: String,
    },
    /// Raw devices are not supported on this platform.
    #[error("raw block devices are not supported on this platform ({what})")]
    Unsupported {
        /// What was attempted.
        what: String,
    },
}

impl DeviceError {
    pub(crate) fn io(path: &Path, what: impl Into<String>, source: io::Error) -> Self {
        DeviceError::Io {
            path: path.to_path_buf(),
            what: what.into(),
            source,
        }
    }
}

/// Read-only inspection of the block device at `path`: never opens it for
/// writing.
///
/// # Errors
///
/// [`DeviceError::NotABlockDevice`] if `path` is not a block device (a
/// regular file, a directory); [`DeviceError::Io`] if it cannot be examined.
pub fn inspect(path: &Path) -> Result<DeviceInfo, DeviceError> {
    let mut info = sys::inspect(path)?;
    finish(&mut info)?;
    Ok(info)
}

/// A loop device attached to an image file (Linux), with what keeps it busy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopAttachment {
    /// The loop device, e.g. `/dev/loop3`.
    pub device: PathBuf,
    /// Where it (or a partition of it) is mounted.
    pub mountpoints: Vec<PathBuf>,
    /// Device-mapper / RAID holders and swap built on it.
    pub in_use_by: Vec<String>,
}

/// The loop devices whose backing file is `file`
/// (`/sys/block/loop*/loop/backing_file`, compared by device and inode, so
/// that a hard link or another name of the image is found too), with their
/// mounts and holders. Empty where there are no loop devices (other
/// platforms) or `file` does not exist.
pub fn loop_devices_backed_by(file: &Path) -> Vec<LoopAttachment> {
    #[cfg(target_os = "linux")]
    {
        sys::loop_devices_backed_by(file)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Vec::new()
    }
}

/// The backing file of the loop device `device`, or of the loop device a
/// partition `device` belongs to (Linux); `None` for other devices and on
/// other platforms.
pub fn loop_backing_file(device: &Path) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        sys::loop_backing_file(device)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = device;
        None
    }
}

/// A file system mounted from an image file directly, without a loop device
/// (a FUSE driver reading the file: `fusefat -o rw+ IMG DIR`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageMount {
    /// Where it is mounted, where that can be told (a driver found by its
    /// open file is matched to its mounts by its name).
    pub mountpoints: Vec<PathBuf>,
    /// The mount's file system type (`fuse.fusefat`), if known.
    pub fs_type: Option<String>,
    /// The driver process (id, program name), when it was found by holding
    /// the file open.
    pub driver: Option<(u32, String)>,
}

/// File systems mounted from the image file `file` itself (Linux): mounts
/// whose source is the file, and FUSE drivers (processes holding
/// `/dev/fuse`) that hold it open, both compared by device and inode. Empty
/// on other platforms, or when `file` does not exist. Loop devices are
/// [`loop_devices_backed_by`]'s.
pub fn image_mounts(file: &Path) -> Vec<ImageMount> {
    #[cfg(target_os = "linux")]
    {
        sys::image_mounts(file)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Vec::new()
    }
}

/// Whether `path` names a block device (false for regular files and for
/// paths that do not exist).
pub fn is_block_device(path: &Path) -> bool {
    sys::is_block_device(path)
}

/// The block size a medium at `path` is read in: a device's logical block
/// size (a 4Kn disk's MBR counts 4096-byte sectors), 512 bytes for an
/// image or a device that cannot be inspected.
pub fn read_block_size(path: &Path) -> u32 {
    if !is_block_device(path) {
        return 512;
    }
    inspect(path).map_or(512, |d| d.logical_block_size)
}

/// All block devices one could format, removable devices first, then by
/// path.
///
/// Left out: partitions (they are in [`DeviceInfo::partitions`]), devices
/// without a medium, RAM disks, zram, detached loop devices, device-mapper
/// and MD RAID devices, optical drives, eMMC boot areas. Attached loop
/// devices are listed.
///
/// # Errors
///
/// [`DeviceError::Io`] if the system's device list cannot be read; devices
/// that vanish or cannot be examined while listing are skipped.
pub fn list() -> Result<Vec<DeviceInfo>, DeviceError> {
    let mut all = sys::list()?;
    // A device with an unusable geometry is left out, not an error.
    all.retain_mut(|info| finish(info).is_ok());
    all.sort_by(|a, b| {
        b.removable
            .cmp(&a.removable)
            .then_with(|| natural_key(&a.path).cmp(&natural_key(&b.path)))
    });
    Ok(all)
}

/// Sorting key that orders `disk2` before `disk10`.
fn natural_key(p: &Path) -> (String, u64, String) {
    let s = p.to_string_lossy();
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = s.split_at(s.len() - digits);
    let n = tail.parse().unwrap_or(0);
    (head.to_string(), n, s.to_string())
}

/// Checks common to all platforms after inspection.
fn finish(info: &mut DeviceInfo) -> Result<(), DeviceError> {
    let bs = info.logical_block_size;
    if !bs.is_power_of_two() || bs < 512 {
        return Err(DeviceError::Invalid {
            path: info.path.clone(),
            detail: format!("logical block size {bs} is not a power of two of at least 512"),
        });
    }
    if info.physical_block_size < bs || !info.physical_block_size.is_power_of_two() {
        info.physical_block_size = bs;
    }
    info.mountpoints.dedup();
    for p in &mut info.partitions {
        p.mountpoints.dedup();
    }
    Ok(())
}

/// Why formatting the device described by `info` must be refused, if it
/// must. Checked in this order: holds the running system's root, mounted
/// (the device or any partition; the first mount point is named), used by
/// another device or as swap, read-only, no medium.
pub fn refusal(info: &DeviceInfo) -> Option<Refusal> {
    let name = info.path.display();
    if info.holds_system_root {
        return Some(Refusal {
            kind: RefusalKind::SystemDisk,
            reason: format!("{name} holds the running system's root file system"),
            mountpoint: None,
            overridable: false,
        });
    }
    let mounted = info
        .mountpoints
        .iter()
        .map(|m| (info.path.as_path(), m))
        .chain(
            info.partitions
                .iter()
                .flat_map(|p| p.mountpoints.iter().map(move |m| (p.path.as_path(), m))),
        )
        .next();
    if let Some((dev, mnt)) = mounted {
        let what = if dev == info.path {
            format!("{name} is mounted")
        } else {
            format!("{name} has partition {} mounted", dev.display())
        };
        // On macOS and Windows a stick's volumes are mounted as soon as it
        // is plugged in: the caller may unmount them (`diskutil unmountDisk`;
        // `Device::open` locks and dismounts on Windows) after confirmation.
        // On Linux the user unmounts.
        let overridable = cfg!(any(target_os = "macos", windows));
        return Some(Refusal {
            kind: RefusalKind::Mounted,
            reason: format!("{what} at {}; unmount it first", mnt.display()),
            mountpoint: Some(mnt.clone()),
            overridable,
        });
    }
    if let Some(user) = info.in_use_by.first() {
        return Some(Refusal {
            kind: RefusalKind::InUse,
            reason: format!("{name} is in use by {user}"),
            mountpoint: None,
            overridable: false,
        });
    }
    if info.read_only {
        return Some(Refusal {
            kind: RefusalKind::ReadOnly,
            reason: format!("{name} is read-only (write-protect switch?)"),
            mountpoint: None,
            overridable: false,
        });
    }
    if info.size_bytes == 0 {
        return Some(Refusal {
            kind: RefusalKind::NoMedium,
            reason: format!("{name} has no medium (size 0)"),
            mountpoint: None,
            overridable: false,
        });
    }
    None
}

/// Trims a string read from the system; `None` if empty.
pub(crate) fn clean(s: &str) -> Option<String> {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn info(path: &str) -> DeviceInfo {
        DeviceInfo {
            path: PathBuf::from(path),
            size_bytes: 1 << 30,
            logical_block_size: 512,
            physical_block_size: 4096,
            optimal_io_size: 0,
            discard_granularity: 0,
            removable: true,
            read_only: false,
            vendor: None,
            model: None,
            serial: None,
            is_whole_disk: true,
            partitions: vec![PartitionInfo {
                path: PathBuf::from(format!("{path}1")),
                start_bytes: 1 << 20,
                size_bytes: (1 << 30) - (1 << 20),
                mountpoints: vec![],
                fs_type: Some("exfat".into()),
                label: None,
            }],
            mountpoints: vec![],
            holds_system_root: false,
            in_use_by: vec![],
            fs_type: None,
            label: None,
        }
    }

    #[test]
    fn refusals_in_order() {
        let mut i = info("/dev/sdz");
        assert_eq!(refusal(&i), None);

        i.size_bytes = 0;
        assert_eq!(refusal(&i).unwrap().kind, RefusalKind::NoMedium);
        i.read_only = true;
        assert_eq!(refusal(&i).unwrap().kind, RefusalKind::ReadOnly);
        i.in_use_by.push("/dev/dm-0".into());
        let r = refusal(&i).unwrap();
        assert_eq!(r.kind, RefusalKind::InUse);
        assert!(r.reason.contains("/dev/dm-0"), "{}", r.reason);

        i.partitions[0].mountpoints.push("/media/usb".into());
        let r = refusal(&i).unwrap();
        assert_eq!(r.kind, RefusalKind::Mounted);
        assert_eq!(r.mountpoint.as_deref(), Some(Path::new("/media/usb")));
        assert!(r.reason.contains("/dev/sdz1") && r.reason.contains("/media/usb"));
        assert!(!r.overridable);

        i.mountpoints.push("/mnt/whole".into());
        let r = refusal(&i).unwrap();
        assert_eq!(r.mountpoint.as_deref(), Some(Path::new("/mnt/whole")));
        let all: Vec<_> = i.all_mountpoints().collect();
        assert_eq!(all, [Path::new("/mnt/whole"), Path::new("/media/usb")]);

        i.holds_system_root = true;
        let r = refusal(&i).unwrap();
        assert_eq!(r.kind, RefusalKind::SystemDisk);
        assert!(!r.overridable);
    }

    #[test]
    fn finish_checks_block_sizes() {
        let mut i = info("/dev/sdz");
        i.physical_block_size = 0;
        finish(&mut i).unwrap();
        assert_eq!(i.physical_block_size, 512);
        i.logical_block_size = 520;
        assert!(matches!(finish(&mut i), Err(DeviceError::Invalid { .. })));
    }

    #[test]
    fn natural_order() {
        let mut v = ["/dev/disk10", "/dev/disk2", "/dev/sdb", "/dev/sda"].map(PathBuf::from);
        v.sort_by_key(|p| natural_key(p));
        assert_eq!(
            v.map(|p| p.display().to_string()),
            ["/dev/disk2", "/dev/disk10", "/dev/sda", "/dev/sdb"]
        );
    }

    #[test]
    fn clean_trims() {
        assert_eq!(clean("  SanDisk \n"), Some("SanDisk".into()));
        assert_eq!(clean(" \0"), None);
    }
}
