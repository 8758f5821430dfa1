//! Linux block devices: ioctls on the device node, sysfs, udev's database
//! and `/proc/self/mountinfo`.
//!
//! Sources: `include/uapi/linux/fs.h` (BLK* ioctl numbers),
//! Documentation/ABI/stable/sysfs-block (`queue/*`, `removable`, `ro`,
//! partition `start`/`size` in 512-byte units), proc(5) (mountinfo, swaps).

#![allow(unsafe_code)]

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::ioctl::{self, opcode, Opcode};

use super::mountinfo::{self, Mount};
use super::{clean, DeviceError, DeviceInfo, PartitionInfo, XferResult};

/// `BLKROGET`: `_IO(0x12, 94)`, writes an `int`.
const BLKROGET: Opcode = opcode::none(0x12, 94);
/// `BLKRRPART`: `_IO(0x12, 95)`, no argument.
const BLKRRPART: Opcode = opcode::none(0x12, 95);
/// `BLKGETSIZE64`: `_IOR(0x12, 114, size_t)`, writes a `u64`.
const BLKGETSIZE64: Opcode = opcode::read::<libc::size_t>(0x12, 114);
/// `BLKDISCARD`: `_IO(0x12, 119)`, reads `u64[2]` (start, length in bytes).
const BLKDISCARD: Opcode = opcode::none(0x12, 119);
/// `BLKIOOPT`: `_IO(0x12, 121)`, writes an `unsigned int`.
const BLKIOOPT: Opcode = opcode::none(0x12, 121);
/// `BLKZEROOUT`: `_IO(0x12, 127)`, reads `u64[2]` (start, length in bytes).
const BLKZEROOUT: Opcode = opcode::none(0x12, 127);

type DevNum = (u32, u32);

/// Who uses an image file: loop devices, mounts, FUSE drivers.
mod image;
/// What sysfs, udev and the probe say about a device: `gather`.
mod info;
use crate::bounce::Bounce;
use crate::unix::{read_exact_at, write_all_at};
pub(super) use image::{image_mounts, loop_backing_file, loop_devices_backed_by};
use info::gather;

fn dev_num(rdev: u64) -> DevNum {
    (rustix::fs::major(rdev), rustix::fs::minor(rdev))
}

pub(super) fn is_block_device(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// Canonical path and device number of the block device at `path`.
fn block_node(path: &Path) -> Result<(PathBuf, DevNum), DeviceError> {
    let meta = fs::metadata(path).map_err(|e| DeviceError::io(path, "stat", e))?;
    if !meta.file_type().is_block_device() {
        return Err(DeviceError::NotABlockDevice {
            path: path.to_path_buf(),
        });
    }
    let canonical = fs::canonicalize(path).map_err(|e| DeviceError::io(path, "canonicalize", e))?;
    Ok((canonical, dev_num(meta.rdev())))
}

pub(super) fn inspect(path: &Path) -> Result<DeviceInfo, DeviceError> {
    let (canonical, dev) = block_node(path)?;
    // Read-only, non-blocking (no medium must not hang): used for ioctls
    // and probing. Without permission, sysfs alone is used.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&canonical)
        .ok();
    let env = Env::load()?;
    gather(&env, &canonical, dev, file.as_ref())
}

/// systemd's "locking block device access": an exclusive, non-blocking BSD
/// lock on the whole disk (for a partition, its disk), held as long as the
/// returned handle (or `file` itself, for a whole disk) is open. A lock held
/// by this process's caller (an ancestor, such as systemd-repart running
/// mkfs under its lock) is the device held for us: the run goes on under it.
fn lock_whole_disk(
    canonical: &Path,
    dev: DevNum,
    file: &File,
) -> Result<Option<File>, DeviceError> {
    let disk_dir = sys_dir(dev)
        .filter(|d| d.join("partition").exists())
        .and_then(|d| d.parent().map(Path::to_path_buf));
    let (holder, node) = match disk_dir {
        Some(dir) => {
            let node = Path::new("/dev").join(dev_name(&dir).unwrap_or_default());
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&node)
                .map_err(|e| DeviceError::io(&node, "open the whole disk to lock it", e))?;
            (Some(f), node)
        }
        None => (None, canonical.to_path_buf()),
    };
    let target = holder.as_ref().unwrap_or(file);
    match rustix::fs::flock(target, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(holder),
        Err(e) if e == Errno::WOULDBLOCK => {
            let meta = target
                .metadata()
                .map_err(|e| DeviceError::io(&node, "fstat", e))?;
            crate::check_lock_holder(&node, &meta).map(|()| holder)
        }
        Err(e) => Err(DeviceError::io(&node, "flock", e.into())),
    }
}

pub(super) fn list() -> Result<Vec<DeviceInfo>, DeviceError> {
    let class = Path::new("/sys/class/block");
    let entries = fs::read_dir(class).map_err(|e| DeviceError::io(class, "read_dir", e))?;
    let env = Env::load()?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        if !listable(&name, &dir) {
            continue;
        }
        let node = Path::new("/dev").join(dev_name(&dir).unwrap_or(name));
        let Ok((canonical, dev)) = block_node(&node) else {
            continue;
        };
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&canonical)
            .ok();
        if let Ok(info) = gather(&env, &canonical, dev, file.as_ref()) {
            out.push(info);
        }
    }
    Ok(out)
}

/// Whether the sysfs entry `name` is a device worth listing.
fn listable(name: &str, dir: &Path) -> bool {
    if dir.join("partition").exists() {
        return false;
    }
    const SKIP: [&str; 6] = ["ram", "zram", "dm-", "md", "sr", "fd"];
    if SKIP.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    if name.starts_with("mmcblk") && (name.contains("boot") || name.ends_with("rpmb")) {
        return false;
    }
    if name.starts_with("loop") && !dir.join("loop/backing_file").exists() {
        return false;
    }
    read_u64(&dir.join("size")).unwrap_or(0) > 0
}

/// Systemwide facts shared by the inspection of several devices.
struct Env {
    mounts: Vec<Mount>,
    /// For each mount, the device number of its source when the source is a
    /// block device node (catches FUSE mounts, whose own number is `0:N`,
    /// and btrfs).
    mount_src: Vec<Option<DevNum>>,
    /// Every device the root file system is built on, up to whole disks.
    root_chain: HashSet<DevNum>,
    /// Devices that are active swap.
    swaps: Vec<DevNum>,
}

impl Env {
    fn load() -> Result<Env, DeviceError> {
        let mi = Path::new("/proc/self/mountinfo");
        let text = mountinfo::read_table(mi).map_err(|e| DeviceError::io(mi, "read", e))?;
        let mounts = mountinfo::parse(&text);
        let mount_src: Vec<Option<DevNum>> = mounts.iter().map(|m| source_dev(&m.source)).collect();
        let mut root_chain = HashSet::new();
        for (m, src) in mounts.iter().zip(&mount_src) {
            if m.mountpoint != Path::new("/") {
                continue;
            }
            if m.major != 0 {
                add_chain((m.major, m.minor), &mut root_chain);
            }
            if let Some(d) = src {
                add_chain(*d, &mut root_chain);
            }
        }
        let swaps = fs::read_to_string("/proc/swaps")
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(source_dev)
            .collect();
        Ok(Env {
            mounts,
            mount_src,
            root_chain,
            swaps,
        })
    }

    /// Mount points of the device `dev` whose node is `path`.
    fn mountpoints(&self, dev: DevNum, path: &Path) -> Vec<PathBuf> {
        self.mounts
            .iter()
            .zip(&self.mount_src)
            .filter(|(m, src)| {
                (m.major, m.minor) == dev || **src == Some(dev) || Path::new(&m.source) == path
            })
            .map(|(m, _)| m.mountpoint.clone())
            .collect()
    }
}

/// Device number of a mount or swap source naming a block device node.
/// Only paths under `/dev` are examined, so that no network file system is
/// touched.
fn source_dev(source: &str) -> Option<DevNum> {
    if !source.starts_with("/dev/") {
        return None;
    }
    let meta = fs::metadata(source).ok()?;
    meta.file_type()
        .is_block_device()
        .then(|| dev_num(meta.rdev()))
}

/// Adds `dev`, the disk it is a partition of, the devices it is built on
/// (`slaves/`) and, for a loop device, the device of its backing file, all
/// recursively.
fn add_chain(dev: DevNum, set: &mut HashSet<DevNum>) {
    if !set.insert(dev) {
        return;
    }
    let Some(dir) = sys_dir(dev) else {
        return;
    };
    if dir.join("partition").exists() {
        if let Some(d) = dir.parent().and_then(|p| read_dev(&p.join("dev"))) {
            add_chain(d, set);
        }
    }
    if let Ok(slaves) = fs::read_dir(dir.join("slaves")) {
        for s in slaves.flatten() {
            if let Some(d) = read_dev(&s.path().join("dev")) {
                add_chain(d, set);
            }
        }
    }
    if let Some(backing) = read_str(&dir.join("loop/backing_file")) {
        if let Ok(meta) = fs::metadata(backing) {
            add_chain(dev_num(meta.dev()), set);
        }
    }
}

/// `/sys/dev/block/MAJ:MIN`, resolved to its `/sys/devices/...` directory.
fn sys_dir(dev: DevNum) -> Option<PathBuf> {
    fs::canonicalize(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()
}

fn read_str(p: &Path) -> Option<String> {
    clean(&fs::read_to_string(p).ok()?)
}

fn read_u64(p: &Path) -> Option<u64> {
    read_str(p)?.parse().ok()
}

fn read_dev(p: &Path) -> Option<DevNum> {
    let s = read_str(p)?;
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `DEVNAME` from a sysfs `uevent` file (`sda`, `mapper/x` style names).
fn dev_name(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join("uevent")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(str::to_string)
}

fn ioctl_size(f: &File) -> io::Result<u64> {
    // SAFETY: BLKGETSIZE64 writes one u64 (the size in bytes) through the
    // pointer, which `Getter` provides for a `u64`.
    let n = unsafe { ioctl::ioctl(f, ioctl::Getter::<BLKGETSIZE64, u64>::new()) }?;
    Ok(n)
}

fn ioctl_io_opt(f: &File) -> io::Result<u32> {
    // SAFETY: BLKIOOPT writes one `unsigned int` through the pointer.
    let n = unsafe { ioctl::ioctl(f, ioctl::Getter::<BLKIOOPT, libc::c_uint>::new()) }?;
    Ok(n)
}

fn ioctl_ro(f: &File) -> io::Result<bool> {
    // SAFETY: BLKROGET writes one `int` through the pointer.
    let n = unsafe { ioctl::ioctl(f, ioctl::Getter::<BLKROGET, libc::c_int>::new()) }?;
    Ok(n != 0)
}

/// True for errors by which an ioctl says "not supported here".
fn unsupported(e: Errno) -> bool {
    e == Errno::OPNOTSUPP || e == Errno::NOTTY || e == Errno::NOSYS
}

/// An exclusively opened Linux block device.
#[derive(Debug)]
pub(super) struct RawDevice {
    file: File,
    can_discard: bool,
    /// The whole disk's handle holding the lock, when the device is a
    /// partition (a whole disk is locked through `file`).
    _disk_lock: Option<File>,
    /// Set when opened with `O_DIRECT`: transfers go through it.
    bounce: Option<Bounce>,
}

impl RawDevice {
    /// With `uncached`, the node is opened with `O_DIRECT` (no page cache)
    /// and transfers go through an aligned bounce buffer.
    pub(super) fn open(
        path: &Path,
        uncached: bool,
    ) -> Result<(RawDevice, DeviceInfo), DeviceError> {
        let (canonical, dev) = block_node(path)?;
        let direct = if uncached { libc::O_DIRECT } else { 0 };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_EXCL | libc::O_CLOEXEC | direct)
            .open(&canonical)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::EBUSY) {
                    DeviceError::Busy {
                        path: canonical.clone(),
                        source: e,
                    }
                } else {
                    DeviceError::io(&canonical, "open for writing (O_EXCL)", e)
                }
            })?;
        let disk_lock = lock_whole_disk(&canonical, dev, &file)?;
        let env = Env::load()?;
        let info = gather(&env, &canonical, dev, Some(&file))?;
        let raw = RawDevice {
            file,
            can_discard: info.discard_granularity > 0,
            _disk_lock: disk_lock,
            bounce: uncached.then(Bounce::new),
        };
        Ok((raw, info))
    }

    pub(super) fn read_at(&mut self, offset: u64, dst: &mut [u8]) -> XferResult {
        let file = &self.file;
        match self.bounce.as_mut() {
            None => read_exact_at(file, dst, offset),
            Some(bounce) => bounce.read(offset, dst, |buf, at| read_exact_at(file, buf, at)),
        }
    }

    pub(super) fn write_at(&mut self, offset: u64, src: &[u8]) -> XferResult {
        let file = &self.file;
        match self.bounce.as_mut() {
            None => write_all_at(file, src, offset),
            Some(bounce) => bounce.write(offset, src, |buf, at| write_all_at(file, buf, at)),
        }
    }

    /// `BLKZEROOUT`; `Ok(false)` if the kernel does not know it.
    pub(super) fn zero_range(&mut self, offset: u64, len: u64) -> io::Result<bool> {
        // SAFETY: BLKZEROOUT reads a `u64[2]` {start, len} through the
        // pointer; `Setter` passes a pointer to its `[u64; 2]`.
        let r = unsafe {
            ioctl::ioctl(
                &self.file,
                ioctl::Setter::<BLKZEROOUT, [u64; 2]>::new([offset, len]),
            )
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if unsupported(e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// `BLKDISCARD`; `Ok(false)` if the device cannot discard.
    pub(super) fn discard(&mut self, offset: u64, len: u64) -> io::Result<bool> {
        if !self.can_discard {
            return Ok(false);
        }
        // SAFETY: BLKDISCARD reads a `u64[2]` {start, len} through the
        // pointer; `Setter` passes a pointer to its `[u64; 2]`.
        let r = unsafe {
            ioctl::ioctl(
                &self.file,
                ioctl::Setter::<BLKDISCARD, [u64; 2]>::new([offset, len]),
            )
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if unsupported(e) => {
                self.can_discard = false;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `fsync`: writes back the page cache and flushes the device's cache.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// `fsync`, then `POSIX_FADV_DONTNEED`: the page cache of the device
    /// dropped, so that reads come from the device.
    pub(super) fn forget_cached(&mut self) -> io::Result<()> {
        self.file.sync_all()?;
        rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::DontNeed)?;
        Ok(())
    }

    pub(super) fn reread_partitions(&mut self) -> io::Result<()> {
        // SAFETY: BLKRRPART takes no argument.
        unsafe { ioctl::ioctl(&self.file, ioctl::NoArg::<BLKRRPART>::new()) }?;
        Ok(())
    }
}
