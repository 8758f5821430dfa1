//! Windows disks: `\\.\PhysicalDriveN`, drive letters mapped to their disk,
//! `DeviceIoControl` and the volume manager's enumeration.
//!
//! Sources: Microsoft Learn, "IOCTL_DISK_GET_DRIVE_GEOMETRY_EX",
//! "IOCTL_STORAGE_QUERY_PROPERTY" (StorageDeviceProperty,
//! StorageAccessAlignmentProperty), "IOCTL_STORAGE_GET_DEVICE_NUMBER",
//! "IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS", "IOCTL_DISK_GET_DRIVE_LAYOUT_EX",
//! "FSCTL_LOCK_VOLUME", "FSCTL_DISMOUNT_VOLUME", "File Buffering"
//! (`FILE_FLAG_NO_BUFFERING`: sector-aligned offsets, lengths and buffers).
//!
//! Output structures are parsed from byte buffers at the offsets of the
//! `windows-sys` definitions (`offset_of!`), so no structure is read
//! through a cast pointer.

#![allow(unsafe_code)]

use std::ffi::{c_void, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::mem::{offset_of, size_of};
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{
    ERROR_INSUFFICIENT_BUFFER, ERROR_MORE_DATA, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    BusTypeMmc, BusTypeSd, BusTypeUsb, FindFirstVolumeW, FindNextVolumeW, FindVolumeClose,
    GetVolumeInformationW, GetVolumePathNamesForVolumeNameW, FILE_FLAG_NO_BUFFERING,
    FILE_FLAG_WRITE_THROUGH, FILE_SHARE_READ, FILE_SHARE_WRITE,
    IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS,
};
use windows_sys::Win32::System::Ioctl::{
    PropertyStandardQuery, StorageAccessAlignmentProperty, StorageDeviceProperty, DISK_EXTENT,
    DISK_GEOMETRY, DISK_GEOMETRY_EX, DRIVE_LAYOUT_INFORMATION_EX, FSCTL_DISMOUNT_VOLUME,
    FSCTL_LOCK_VOLUME, IOCTL_DISK_GET_DRIVE_GEOMETRY_EX, IOCTL_DISK_GET_DRIVE_LAYOUT_EX,
    IOCTL_DISK_IS_WRITABLE, IOCTL_DISK_UPDATE_PROPERTIES, IOCTL_STORAGE_GET_DEVICE_NUMBER,
    IOCTL_STORAGE_QUERY_PROPERTY, PARTITION_INFORMATION_EX, STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR,
    STORAGE_DEVICE_DESCRIPTOR, STORAGE_DEVICE_NUMBER, STORAGE_PROPERTY_QUERY, VOLUME_DISK_EXTENTS,
};
use windows_sys::Win32::System::IO::DeviceIoControl;

use super::{clean, transfer_all, DeviceError, DeviceInfo, PartitionInfo, XferResult};

/// Mounted volumes and the system's disks.
mod volumes;
use volumes::{system_disks, volumes, Volume};

use crate::bounce::Bounce;

/// Calls `DeviceIoControl` with `input` and an output buffer of `out_len`
/// bytes; returns the bytes written. Grows the buffer on
/// `ERROR_INSUFFICIENT_BUFFER`/`ERROR_MORE_DATA` up to 1 MiB.
fn ioctl(h: HANDLE, code: u32, input: &[u8], out_len: usize) -> io::Result<Vec<u8>> {
    let mut len = out_len;
    loop {
        let mut out = vec![0u8; len];
        let mut returned = 0u32;
        let in_len = u32::try_from(input.len()).unwrap_or(u32::MAX);
        let o_len = u32::try_from(out.len()).unwrap_or(u32::MAX);
        let in_ptr = if input.is_empty() {
            std::ptr::null()
        } else {
            input.as_ptr().cast::<c_void>()
        };
        let out_ptr = if out.is_empty() {
            std::ptr::null_mut()
        } else {
            out.as_mut_ptr().cast::<c_void>()
        };
        // SAFETY: `h` is an open handle; the input and output pointers are
        // valid for the lengths given (or null with length 0); `returned`
        // outlives the synchronous call (no OVERLAPPED).
        let ok = unsafe {
            DeviceIoControl(
                h,
                code,
                in_ptr,
                in_len,
                out_ptr,
                o_len,
                &mut returned,
                std::ptr::null_mut(),
            )
        };
        if ok != 0 {
            out.truncate(usize::try_from(returned).unwrap_or(0).min(len));
            return Ok(out);
        }
        let e = io::Error::last_os_error();
        let more = matches!(
            e.raw_os_error().and_then(|c| u32::try_from(c).ok()),
            Some(ERROR_INSUFFICIENT_BUFFER | ERROR_MORE_DATA)
        );
        if more && len < (1 << 20) {
            len *= 4;
            continue;
        }
        return Err(e);
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
    })
}

/// A NUL-terminated ASCII string at `at`, for descriptor string offsets.
fn cstr_at(b: &[u8], at: usize) -> Option<String> {
    if at == 0 {
        return None;
    }
    let s = b.get(at..)?;
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    clean(&String::from_utf8_lossy(&s[..end]))
}

fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().chain(std::iter::once(0)).collect()
}

fn from_wide(buf: &[u16]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    OsString::from_wide(&buf[..end])
        .to_string_lossy()
        .into_owned()
}

/// Opens a device path for queries only (no read or write access).
fn open_query(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .open(path)
}

fn h(f: &File) -> HANDLE {
    f.as_raw_handle()
}

fn disk_path(n: u32) -> PathBuf {
    PathBuf::from(format!(r"\\.\PhysicalDrive{n}"))
}

/// The disk number named by `path`: `\\.\PhysicalDriveN`, or a drive
/// letter (`\\.\X:`, `X:`, `X:\`) mapped through
/// `IOCTL_STORAGE_GET_DEVICE_NUMBER`.
fn disk_number(path: &Path) -> Result<u32, DeviceError> {
    let s = path.to_string_lossy();
    let not_dev = || DeviceError::NotABlockDevice {
        path: path.to_path_buf(),
    };
    let body = s.strip_prefix(r"\\.\").or_else(|| s.strip_prefix(r"\\?\"));
    if let Some(rest) = body {
        if rest.len() > 13 && rest[..13].eq_ignore_ascii_case("PhysicalDrive") {
            return rest[13..].parse().map_err(|_| not_dev());
        }
    }
    let letter = body.unwrap_or(&s).trim_end_matches('\\');
    let b = letter.as_bytes();
    if b.len() != 2 || !b[0].is_ascii_alphabetic() || b[1] != b':' {
        return Err(not_dev());
    }
    let vol = PathBuf::from(format!(r"\\.\{letter}"));
    let f = open_query(&vol).map_err(|e| DeviceError::io(&vol, "open", e))?;
    let out = ioctl(
        h(&f),
        IOCTL_STORAGE_GET_DEVICE_NUMBER,
        &[],
        size_of::<STORAGE_DEVICE_NUMBER>(),
    )
    .map_err(|e| DeviceError::io(&vol, "IOCTL_STORAGE_GET_DEVICE_NUMBER", e))?;
    Ok(u32_at(
        &out,
        offset_of!(STORAGE_DEVICE_NUMBER, DeviceNumber),
    ))
}

pub(super) fn is_block_device(path: &Path) -> bool {
    match disk_number(path) {
        Ok(n) => open_query(&disk_path(n)).is_ok(),
        Err(_) => false,
    }
}

pub(super) fn inspect(path: &Path) -> Result<DeviceInfo, DeviceError> {
    let n = disk_number(path)?;
    let p = disk_path(n);
    let f = open_query(&p).map_err(|e| DeviceError::io(&p, "open", e))?;
    gather(n, &f, &volumes())
}

pub(super) fn list() -> Result<Vec<DeviceInfo>, DeviceError> {
    let vols = volumes();
    let mut out = Vec::new();
    let mut misses = 0;
    for n in 0..256u32 {
        let Ok(f) = open_query(&disk_path(n)) else {
            misses += 1;
            if misses > 16 {
                break;
            }
            continue;
        };
        misses = 0;
        if let Ok(info) = gather(n, &f, &vols) {
            if info.size_bytes > 0 {
                out.push(info);
            }
        }
    }
    Ok(out)
}

/// `STORAGE_PROPERTY_QUERY { PropertyId, PropertyStandardQuery }` as bytes.
fn property_query(id: i32) -> Vec<u8> {
    let mut q = vec![0u8; size_of::<STORAGE_PROPERTY_QUERY>()];
    let at = offset_of!(STORAGE_PROPERTY_QUERY, PropertyId);
    q[at..at + 4].copy_from_slice(&id.to_le_bytes());
    let at = offset_of!(STORAGE_PROPERTY_QUERY, QueryType);
    q[at..at + 4].copy_from_slice(&PropertyStandardQuery.to_le_bytes());
    q
}

fn gather(n: u32, f: &File, vols: &[Volume]) -> Result<DeviceInfo, DeviceError> {
    let path = disk_path(n);
    let geo = ioctl(h(f), IOCTL_DISK_GET_DRIVE_GEOMETRY_EX, &[], 256)
        .map_err(|e| DeviceError::io(&path, "IOCTL_DISK_GET_DRIVE_GEOMETRY_EX", e))?;
    let size_bytes = u64_at(&geo, offset_of!(DISK_GEOMETRY_EX, DiskSize));
    let bytes_per_sector = u32_at(
        &geo,
        offset_of!(DISK_GEOMETRY_EX, Geometry) + offset_of!(DISK_GEOMETRY, BytesPerSector),
    );
    let (logical_block_size, physical_block_size) = sector_sizes(f, bytes_per_sector);
    let (removable, vendor, model, serial) = descriptor(f);
    // IOCTL_DISK_IS_WRITABLE fails with ERROR_WRITE_PROTECT on protected
    // media; other failures say nothing.
    let read_only = matches!(
        ioctl(h(f), IOCTL_DISK_IS_WRITABLE, &[], 0),
        Err(e) if e.raw_os_error() == Some(19)
    );
    let mine: Vec<&Volume> = vols
        .iter()
        .filter(|v| v.extents.iter().any(|(d, _)| *d == n))
        .collect();
    let partitions = partitions(n, f, &mine);
    // Volumes on the disk that match no partition (a "superfloppy" with a
    // file system at offset 0) are mounts of the disk itself.
    let whole: Vec<&&Volume> = mine
        .iter()
        .filter(|v| {
            !v.extents
                .iter()
                .any(|&(d, s)| d == n && partitions.iter().any(|p| p.start_bytes == s))
        })
        .collect();
    let mountpoints = whole.iter().flat_map(|v| v.paths.clone()).collect();
    let fs_type = whole.first().and_then(|v| v.fs_type.clone());
    let label = whole.first().and_then(|v| v.label.clone());

    Ok(DeviceInfo {
        path,
        size_bytes,
        logical_block_size,
        physical_block_size,
        optimal_io_size: 0,
        discard_granularity: 0,
        removable,
        read_only,
        vendor,
        model,
        serial,
        is_whole_disk: true,
        partitions,
        mountpoints,
        holds_system_root: system_disks().contains(&n),
        in_use_by: Vec::new(),
        fs_type,
        label,
    })
}

/// Logical and physical sector sizes: the access-alignment descriptor's
/// where it answers, else the geometry's `BytesPerSector` for both.
fn sector_sizes(f: &File, bytes_per_sector: u32) -> (u32, u32) {
    let (mut logical, mut physical) = (bytes_per_sector, bytes_per_sector);
    if let Ok(a) = ioctl(
        h(f),
        IOCTL_STORAGE_QUERY_PROPERTY,
        &property_query(StorageAccessAlignmentProperty),
        size_of::<STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR>(),
    ) {
        let l = u32_at(
            &a,
            offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerLogicalSector),
        );
        let p = u32_at(
            &a,
            offset_of!(STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, BytesPerPhysicalSector),
        );
        if l != 0 {
            logical = l;
        }
        if p != 0 {
            physical = p;
        }
    }
    (logical, physical)
}

/// Removable (or on a USB, SD or MMC bus), vendor, model and serial from
/// the storage device descriptor.
fn descriptor(f: &File) -> (bool, Option<String>, Option<String>, Option<String>) {
    let Ok(d) = ioctl(
        h(f),
        IOCTL_STORAGE_QUERY_PROPERTY,
        &property_query(StorageDeviceProperty),
        1024,
    ) else {
        return (false, None, None, None);
    };
    let bus = u32_at(&d, offset_of!(STORAGE_DEVICE_DESCRIPTOR, BusType)) as i32;
    let rm = d
        .get(offset_of!(STORAGE_DEVICE_DESCRIPTOR, RemovableMedia))
        .is_some_and(|&b| b != 0);
    let removable = rm || bus == BusTypeUsb || bus == BusTypeSd || bus == BusTypeMmc;
    let s = |field: usize| cstr_at(&d, u32_at(&d, field) as usize);
    (
        removable,
        s(offset_of!(STORAGE_DEVICE_DESCRIPTOR, VendorIdOffset)),
        s(offset_of!(STORAGE_DEVICE_DESCRIPTOR, ProductIdOffset)),
        s(offset_of!(STORAGE_DEVICE_DESCRIPTOR, SerialNumberOffset)),
    )
}

/// The partitions of disk `n` from its drive layout, with the mounts and
/// file systems of the volumes `mine` on them, sorted by start.
fn partitions(n: u32, f: &File, mine: &[&Volume]) -> Vec<PartitionInfo> {
    let mut partitions = Vec::new();
    if let Ok(l) = ioctl(h(f), IOCTL_DISK_GET_DRIVE_LAYOUT_EX, &[], 4096) {
        let count = u32_at(&l, offset_of!(DRIVE_LAYOUT_INFORMATION_EX, PartitionCount));
        let first = offset_of!(DRIVE_LAYOUT_INFORMATION_EX, PartitionEntry);
        for i in 0..count as usize {
            let e = first + i * size_of::<PARTITION_INFORMATION_EX>();
            let start = u64_at(&l, e + offset_of!(PARTITION_INFORMATION_EX, StartingOffset));
            let len = u64_at(
                &l,
                e + offset_of!(PARTITION_INFORMATION_EX, PartitionLength),
            );
            let number = u32_at(
                &l,
                e + offset_of!(PARTITION_INFORMATION_EX, PartitionNumber),
            );
            if len == 0 {
                continue;
            }
            let vol = mine
                .iter()
                .find(|v| v.extents.iter().any(|&(d, s)| d == n && s == start));
            partitions.push(PartitionInfo {
                path: PathBuf::from(format!(
                    r"\\?\GLOBALROOT\Device\Harddisk{n}\Partition{number}"
                )),
                start_bytes: start,
                size_bytes: len,
                mountpoints: vol.map(|v| v.paths.clone()).unwrap_or_default(),
                fs_type: vol.and_then(|v| v.fs_type.clone()),
                label: vol.and_then(|v| v.label.clone()),
            });
        }
    }
    partitions.sort_by_key(|p| p.start_bytes);
    partitions
}

/// An opened disk, with its volumes locked and dismounted.
#[derive(Debug)]
pub(super) struct RawDevice {
    file: File,
    /// Locked volume handles; the locks end when they close.
    _locked: Vec<File>,
    bounce: Bounce,
}

impl RawDevice {
    /// Every open is unbuffered (`FILE_FLAG_NO_BUFFERING`), so `_uncached`
    /// changes nothing.
    pub(super) fn open(
        path: &Path,
        _uncached: bool,
    ) -> Result<(RawDevice, DeviceInfo), DeviceError> {
        let n = disk_number(path)?;
        let vols = volumes();
        let mut locked = Vec::new();
        for v in vols
            .iter()
            .filter(|v| v.extents.iter().any(|(d, _)| *d == n))
        {
            let dev = PathBuf::from(v.name.trim_end_matches('\\'));
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
                .open(&dev)
                .map_err(|e| DeviceError::io(&dev, "open volume", e))?;
            let shown = v.paths.first().cloned().unwrap_or_else(|| dev.clone());
            ioctl(h(&f), FSCTL_LOCK_VOLUME, &[], 0).map_err(|e| DeviceError::Busy {
                path: shown.clone(),
                source: e,
            })?;
            ioctl(h(&f), FSCTL_DISMOUNT_VOLUME, &[], 0)
                .map_err(|e| DeviceError::io(&shown, "FSCTL_DISMOUNT_VOLUME", e))?;
            locked.push(f);
        }
        let p = disk_path(n);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            .custom_flags(FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH)
            .open(&p)
            .map_err(|e| DeviceError::io(&p, "open for writing", e))?;
        let info = gather(n, &file, &vols)?;
        let dev = RawDevice {
            file,
            _locked: locked,
            bounce: Bounce::new(),
        };
        Ok((dev, info))
    }

    pub(super) fn read_at(&mut self, offset: u64, dst: &mut [u8]) -> XferResult {
        let file = &self.file;
        self.bounce.read(offset, dst, |buf, at| {
            transfer_all(buf.len(), io::ErrorKind::UnexpectedEof, |got| {
                file.seek_read(&mut buf[got..], at + got as u64)
            })
        })
    }

    pub(super) fn write_at(&mut self, offset: u64, src: &[u8]) -> XferResult {
        let file = &self.file;
        self.bounce.write(offset, src, |buf, at| {
            transfer_all(buf.len(), io::ErrorKind::WriteZero, |put| {
                file.seek_write(&buf[put..], at + put as u64)
            })
        })
    }

    /// No zero-out call is used on Windows: the caller writes zeros.
    pub(super) fn zero_range(&mut self, _offset: u64, _len: u64) -> io::Result<bool> {
        Ok(false)
    }

    /// Not implemented on Windows (TRIM would be
    /// `IOCTL_STORAGE_MANAGE_DATA_SET_ATTRIBUTES`).
    pub(super) fn discard(&mut self, _offset: u64, _len: u64) -> io::Result<bool> {
        Ok(false)
    }

    /// `FlushFileBuffers`.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// `IOCTL_DISK_UPDATE_PROPERTIES`: the disk's partition table is
    /// re-read.
    /// Every open is unbuffered: nothing to drop.
    pub(super) fn forget_cached(&mut self) -> io::Result<()> {
        Ok(())
    }

    pub(super) fn reread_partitions(&mut self) -> io::Result<()> {
        ioctl(h(&self.file), IOCTL_DISK_UPDATE_PROPERTIES, &[], 0).map(|_| ())
    }
}
