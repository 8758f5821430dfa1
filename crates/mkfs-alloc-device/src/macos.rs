//! macOS disks: `/dev/diskN` (buffered) and `/dev/rdiskN` (raw), `DKIOC*`
//! ioctls and `getmntinfo`.
//!
//! Sources: xnu `bsd/sys/disk.h` (`DKIOCGETBLOCKSIZE` `_IOR('d', 24,
//! uint32_t)`, `DKIOCGETBLOCKCOUNT` `_IOR('d', 25, uint64_t)`,
//! `DKIOCISWRITABLE` `_IOR('d', 29, uint32_t)`, `DKIOCUNMAP` `_IOW('d', 31,
//! dk_unmap_t)`, `DKIOCGETLOCATION` `_IOR('d', 33, uint64_t)`,
//! `DKIOCGETFEATURES` `_IOR('d', 76, uint32_t)`, `DKIOCGETPHYSICALBLOCKSIZE`
//! `_IOR('d', 77, uint32_t)`); getmntinfo(3).
//!
//! The boot disk is the whole disk of the device mounted at `/`. With APFS
//! that is the synthesized container disk (`disk3`); its physical store
//! (`disk0`) is not recognised here, but it is never removable and its
//! container's volumes are mounted, which [`super::refusal`] reports.
//! Unmounting (`diskutil unmountDisk`) is the caller's job.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::ioctl::{self, opcode, Opcode};

use super::probe::{probe, ProbeRead};
use super::{DeviceError, DeviceInfo, PartitionInfo, XferResult};
use crate::unix::{read_exact_at, write_all_at};

const DKIOCGETBLOCKSIZE: Opcode = opcode::read::<u32>(b'd', 24);
const DKIOCGETBLOCKCOUNT: Opcode = opcode::read::<u64>(b'd', 25);
const DKIOCISWRITABLE: Opcode = opcode::read::<u32>(b'd', 29);
const DKIOCUNMAP: Opcode = opcode::write::<DkUnmap>(b'd', 31);
const DKIOCGETLOCATION: Opcode = opcode::read::<u64>(b'd', 33);
const DKIOCGETFEATURES: Opcode = opcode::read::<u32>(b'd', 76);
const DKIOCGETPHYSICALBLOCKSIZE: Opcode = opcode::read::<u32>(b'd', 77);

const DK_FEATURE_UNMAP: u32 = 0x10;
const DK_LOCATION_EXTERNAL: u64 = 0x1;

/// `dk_extent_t`.
#[repr(C)]
struct DkExtent {
    offset: u64,
    length: u64,
}

/// `dk_unmap_t` (64-bit layout: pointer, count, options).
#[repr(C)]
struct DkUnmap {
    extents: *mut DkExtent,
    extents_count: u32,
    options: u32,
}

/// A parsed `/dev/[r]diskN[sM]` name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DiskName {
    /// `diskN`.
    whole: String,
    /// `M` of `sM`, for a partition (slice).
    slice: Option<String>,
}

impl DiskName {
    fn parse(path: &Path) -> Option<DiskName> {
        let name = path.file_name()?.to_str()?;
        let name = name.strip_prefix('r').unwrap_or(name);
        let rest = name.strip_prefix("disk")?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        let (n, tail) = rest.split_at(digits);
        let slice = match tail {
            "" => None,
            t => Some(t.strip_prefix('s')?.to_string()),
        };
        Some(DiskName {
            whole: format!("disk{n}"),
            slice,
        })
    }

    fn block_path(&self) -> PathBuf {
        match &self.slice {
            None => PathBuf::from(format!("/dev/{}", self.whole)),
            Some(s) => PathBuf::from(format!("/dev/{}s{s}", self.whole)),
        }
    }

    fn raw_path(&self) -> PathBuf {
        match &self.slice {
            None => PathBuf::from(format!("/dev/r{}", self.whole)),
            Some(s) => PathBuf::from(format!("/dev/r{}s{s}", self.whole)),
        }
    }
}

pub(super) fn is_block_device(path: &Path) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    let ft = meta.file_type();
    ft.is_block_device() || (ft.is_char_device() && DiskName::parse(path).is_some())
}

fn name_of(path: &Path) -> Result<DiskName, DeviceError> {
    let canonical = fs::canonicalize(path).map_err(|e| DeviceError::io(path, "canonicalize", e))?;
    if !is_block_device(&canonical) {
        return Err(DeviceError::NotABlockDevice {
            path: path.to_path_buf(),
        });
    }
    DiskName::parse(&canonical).ok_or_else(|| DeviceError::NotABlockDevice {
        path: path.to_path_buf(),
    })
}

pub(super) fn inspect(path: &Path) -> Result<DeviceInfo, DeviceError> {
    let name = name_of(path)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(name.block_path())
        .map_err(|e| DeviceError::io(&name.block_path(), "open read-only", e))?;
    gather(&name, &file, &mounts()?)
}

pub(super) fn list() -> Result<Vec<DeviceInfo>, DeviceError> {
    let dev = Path::new("/dev");
    let rd = fs::read_dir(dev).map_err(|e| DeviceError::io(dev, "read_dir", e))?;
    let mounts = mounts()?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let path = e.path();
        let Some(name) = DiskName::parse(&path) else {
            continue;
        };
        let is_raw = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('r'));
        if name.slice.is_some() || is_raw {
            continue;
        }
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        else {
            continue;
        };
        if let Ok(info) = gather(&name, &file, &mounts) {
            if info.size_bytes > 0 {
                out.push(info);
            }
        }
    }
    Ok(out)
}

/// One mounted file system.
struct Mnt {
    from: String,
    on: PathBuf,
    fs_type: String,
}

/// The mount table, from `getmntinfo(MNT_NOWAIT)`.
fn mounts() -> Result<Vec<Mnt>, DeviceError> {
    let mut buf: *mut libc::statfs = std::ptr::null_mut();
    // SAFETY: getmntinfo stores in `buf` a pointer to an array of `n`
    // statfs structures that it owns (valid until the next call from this
    // thread); MNT_NOWAIT does not block on unresponsive file systems.
    let n = unsafe { libc::getmntinfo(&mut buf, libc::MNT_NOWAIT) };
    if n <= 0 || buf.is_null() {
        return Err(DeviceError::io(
            Path::new("getmntinfo"),
            "list mounts",
            io::Error::last_os_error(),
        ));
    }
    let count = usize::try_from(n).unwrap_or(0);
    // SAFETY: `buf` points to `count` initialised statfs structures (see
    // above); they are copied out before any other getmntinfo call.
    let all = unsafe { std::slice::from_raw_parts(buf, count) };
    Ok(all
        .iter()
        .map(|s| Mnt {
            from: c_chars(&s.f_mntfromname),
            on: PathBuf::from(c_chars(&s.f_mntonname)),
            fs_type: c_chars(&s.f_fstypename),
        })
        .collect())
}

/// A NUL-terminated `c_char` array as a string.
fn c_chars(a: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c.to_ne_bytes()[0])
        .collect();
    CStr::from_bytes_until_nul(&[bytes.as_slice(), &[0]].concat())
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Mount points whose source is `name` (block or raw node).
fn mountpoints_of(mounts: &[Mnt], name: &DiskName) -> Vec<PathBuf> {
    let block = name.block_path();
    let raw = name.raw_path();
    mounts
        .iter()
        .filter(|m| Path::new(&m.from) == block || Path::new(&m.from) == raw)
        .map(|m| m.on.clone())
        .collect()
}

struct FileReader<'a>(&'a File);

impl ProbeRead for FileReader<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
}

fn get_u32<const OP: Opcode>(f: &File) -> io::Result<u32> {
    // SAFETY: every opcode this is used with is an `_IOR(.., uint32_t)`
    // getter: the kernel writes one u32 through the pointer.
    let v = unsafe { ioctl::ioctl(f, ioctl::Getter::<OP, u32>::new()) }?;
    Ok(v)
}

fn get_u64<const OP: Opcode>(f: &File) -> io::Result<u64> {
    // SAFETY: every opcode this is used with is an `_IOR(.., uint64_t)`
    // getter: the kernel writes one u64 through the pointer.
    let v = unsafe { ioctl::ioctl(f, ioctl::Getter::<OP, u64>::new()) }?;
    Ok(v)
}

fn gather(name: &DiskName, file: &File, mounts: &[Mnt]) -> Result<DeviceInfo, DeviceError> {
    let path = name.block_path();
    let err = |what: &str, e: io::Error| DeviceError::io(&path, what, e);
    let logical_block_size =
        get_u32::<DKIOCGETBLOCKSIZE>(file).map_err(|e| err("DKIOCGETBLOCKSIZE", e))?;
    let blocks = get_u64::<DKIOCGETBLOCKCOUNT>(file).map_err(|e| err("DKIOCGETBLOCKCOUNT", e))?;
    let size_bytes = blocks.saturating_mul(u64::from(logical_block_size));
    let physical_block_size =
        get_u32::<DKIOCGETPHYSICALBLOCKSIZE>(file).unwrap_or(logical_block_size);
    let features = get_u32::<DKIOCGETFEATURES>(file).unwrap_or(0);
    let discard_granularity = if features & DK_FEATURE_UNMAP != 0 {
        u64::from(physical_block_size)
    } else {
        0
    };
    let read_only = get_u32::<DKIOCISWRITABLE>(file).is_ok_and(|w| w == 0);
    let removable = get_u64::<DKIOCGETLOCATION>(file).is_ok_and(|l| l & DK_LOCATION_EXTERNAL != 0);

    let (fs_type, label) = probe(&mut FileReader(file), 0, size_bytes);
    let mut partitions = Vec::new();
    if name.slice.is_none() {
        partitions = slices(name, mounts);
    }

    let root_whole = mounts
        .iter()
        .find(|m| m.on == Path::new("/"))
        .and_then(|m| DiskName::parse(Path::new(&m.from)))
        .map(|n| n.whole);
    let holds_system_root = root_whole.as_deref() == Some(name.whole.as_str());

    Ok(DeviceInfo {
        path,
        size_bytes,
        logical_block_size,
        physical_block_size,
        optimal_io_size: 0,
        discard_granularity,
        removable,
        read_only,
        vendor: None,
        model: None,
        serial: None,
        is_whole_disk: name.slice.is_none(),
        partitions,
        mountpoints: mountpoints_of(mounts, name),
        holds_system_root,
        in_use_by: Vec::new(),
        fs_type,
        label,
    })
}

/// The `diskNsM` slices of a whole disk, with sizes from their own nodes.
/// The start offset is not available from public ioctls; it is read from
/// the disk's partition table by the partition crate if needed and left 0
/// here.
fn slices(name: &DiskName, mounts: &[Mnt]) -> Vec<PartitionInfo> {
    let Ok(rd) = fs::read_dir("/dev") else {
        return Vec::new();
    };
    let mut out: Vec<(u64, PartitionInfo)> = rd
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let n = DiskName::parse(&p)?;
            let slice = n.slice.clone()?;
            let raw = p.file_name()?.to_str()?.starts_with('r');
            if n.whole != name.whole || raw {
                return None;
            }
            let number: u64 = slice.parse().ok()?;
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&p)
                .ok();
            let size_bytes = f.as_ref().map_or(0, |f| {
                let bs = get_u32::<DKIOCGETBLOCKSIZE>(f).unwrap_or(0);
                let n = get_u64::<DKIOCGETBLOCKCOUNT>(f).unwrap_or(0);
                n.saturating_mul(u64::from(bs))
            });
            let (fs_type, label) = match &f {
                Some(f) => probe(&mut FileReader(f), 0, size_bytes),
                None => (None, None),
            };
            let mountpoints = mountpoints_of(mounts, &n);
            let fs_type = fs_type.or_else(|| {
                mounts
                    .iter()
                    .find(|m| Path::new(&m.from) == p)
                    .map(|m| m.fs_type.clone())
            });
            Some((
                number,
                PartitionInfo {
                    path: p,
                    start_bytes: 0,
                    size_bytes,
                    mountpoints,
                    fs_type,
                    label,
                },
            ))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out.into_iter().map(|(_, p)| p).collect()
}

/// An exclusively opened macOS disk; I/O goes through the raw node.
#[derive(Debug)]
pub(super) struct RawDevice {
    file: File,
    can_unmap: bool,
}

impl RawDevice {
    /// With `uncached`, `F_NOCACHE` is set on the raw node (which macOS
    /// already does not cache for aligned transfers; the flag makes it hold
    /// for every transfer).
    pub(super) fn open(
        path: &Path,
        uncached: bool,
    ) -> Result<(RawDevice, DeviceInfo), DeviceError> {
        let name = name_of(path)?;
        let raw = name.raw_path();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_EXLOCK | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&raw)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EBUSY) | Some(libc::EWOULDBLOCK) => DeviceError::Busy {
                    path: raw.clone(),
                    source: e,
                },
                _ => DeviceError::io(&raw, "open for writing (O_EXLOCK)", e),
            })?;
        if uncached {
            use std::os::fd::AsRawFd;
            // SAFETY: fcntl(F_NOCACHE, int) on a descriptor `file` owns; no
            // pointer is passed.
            let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_NOCACHE, 1) };
            if r == -1 {
                return Err(DeviceError::io(
                    &raw,
                    "fcntl(F_NOCACHE)",
                    io::Error::last_os_error(),
                ));
            }
        }
        let info = gather(&name, &file, &mounts()?)?;
        let dev = RawDevice {
            file,
            can_unmap: info.discard_granularity > 0,
        };
        Ok((dev, info))
    }

    pub(super) fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> XferResult {
        read_exact_at(&self.file, buf, offset)
    }

    pub(super) fn write_at(&mut self, offset: u64, buf: &[u8]) -> XferResult {
        write_all_at(&self.file, buf, offset)
    }

    /// macOS has no zero-out ioctl: the caller writes zeros.
    pub(super) fn zero_range(&mut self, _offset: u64, _len: u64) -> io::Result<bool> {
        Ok(false)
    }

    /// `DKIOCUNMAP` of one extent.
    pub(super) fn discard(&mut self, offset: u64, len: u64) -> io::Result<bool> {
        if !self.can_unmap {
            return Ok(false);
        }
        let mut extent = DkExtent {
            offset,
            length: len,
        };
        let arg = DkUnmap {
            extents: &mut extent,
            extents_count: 1,
            options: 0,
        };
        // SAFETY: DKIOCUNMAP reads a dk_unmap_t whose `extents` points to
        // `extents_count` dk_extent_t; `extent` outlives the call.
        let r = unsafe { ioctl::ioctl(&self.file, ioctl::Setter::<DKIOCUNMAP, DkUnmap>::new(arg)) };
        match r {
            Ok(()) => Ok(true),
            Err(e) if e == Errno::NOTSUP || e == Errno::NOTTY => {
                self.can_unmap = false;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `F_FULLFSYNC` (what `sync_all` does on macOS).
    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// The raw node is not cached: nothing to drop.
    pub(super) fn forget_cached(&mut self) -> io::Result<()> {
        Ok(())
    }

    pub(super) fn reread_partitions(&mut self) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "macOS re-reads the partition table when the disk is closed",
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_disk_names() {
        let n = DiskName::parse(Path::new("/dev/rdisk4s2")).unwrap();
        assert_eq!(n.whole, "disk4");
        assert_eq!(n.slice.as_deref(), Some("2"));
        assert_eq!(n.block_path(), PathBuf::from("/dev/disk4s2"));
        assert_eq!(n.raw_path(), PathBuf::from("/dev/rdisk4s2"));
        assert!(DiskName::parse(Path::new("/dev/diskX")).is_none());
        assert!(DiskName::parse(Path::new("/dev/sda")).is_none());
    }
}
