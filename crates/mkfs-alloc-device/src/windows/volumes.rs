//! Windows volumes: every mounted volume with its disk extents and mount
//! points, and the disks that hold the system drive.

#![allow(unsafe_code)]

use super::*;

/// A mounted volume and where it lives.
pub(super) struct Volume {
    /// `\\?\Volume{GUID}\`.
    pub(super) name: String,
    /// `(disk number, starting offset)` of each extent.
    pub(super) extents: Vec<(u32, u64)>,
    /// Drive letters and folder mount points (`E:\`).
    pub(super) paths: Vec<PathBuf>,
    /// File system name (`NTFS`, `exFAT`, ...).
    pub(super) fs_type: Option<String>,
    /// Volume label.
    pub(super) label: Option<String>,
}

/// Every volume of the system, with its extents and mount points.
pub(super) fn volumes() -> Vec<Volume> {
    let mut out = Vec::new();
    let mut buf = [0u16; 260];
    // SAFETY: `buf` is writable for its length in UTF-16 units.
    let find = unsafe { FindFirstVolumeW(buf.as_mut_ptr(), buf.len() as u32) };
    if find == INVALID_HANDLE_VALUE {
        return out;
    }
    loop {
        out.push(volume(&from_wide(&buf)));
        // SAFETY: `find` is the live search handle; `buf` as above.
        let more = unsafe { FindNextVolumeW(find, buf.as_mut_ptr(), buf.len() as u32) };
        if more == 0 {
            break;
        }
    }
    // SAFETY: `find` came from FindFirstVolumeW and is closed once.
    unsafe { FindVolumeClose(find) };
    out
}

fn volume(name: &str) -> Volume {
    let device = name.trim_end_matches('\\');
    let extents = open_query(Path::new(device))
        .ok()
        .and_then(|f| ioctl(h(&f), IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, &[], 256).ok())
        .map(|b| {
            let count = u32_at(&b, offset_of!(VOLUME_DISK_EXTENTS, NumberOfDiskExtents));
            let first = offset_of!(VOLUME_DISK_EXTENTS, Extents);
            (0..count as usize)
                .map(|i| {
                    let e = first + i * size_of::<DISK_EXTENT>();
                    (
                        u32_at(&b, e + offset_of!(DISK_EXTENT, DiskNumber)),
                        u64_at(&b, e + offset_of!(DISK_EXTENT, StartingOffset)),
                    )
                })
                .collect()
        })
        .unwrap_or_default();

    let wname = wide(OsStr::new(name));
    let mut paths_buf = vec![0u16; 1024];
    let mut needed = 0u32;
    // SAFETY: `wname` is NUL-terminated; `paths_buf` is writable for its
    // length; `needed` outlives the call.
    let ok = unsafe {
        GetVolumePathNamesForVolumeNameW(
            wname.as_ptr(),
            paths_buf.as_mut_ptr(),
            paths_buf.len() as u32,
            &mut needed,
        )
    };
    let paths = if ok != 0 {
        paths_buf
            .split(|&c| c == 0)
            .take_while(|s| !s.is_empty())
            .map(|s| PathBuf::from(OsString::from_wide(s)))
            .collect()
    } else {
        Vec::new()
    };

    let mut label = [0u16; 261];
    let mut fs = [0u16; 261];
    // SAFETY: `wname` is NUL-terminated; both buffers are writable for the
    // lengths given; the optional out-pointers are null.
    let ok = unsafe {
        GetVolumeInformationW(
            wname.as_ptr(),
            label.as_mut_ptr(),
            label.len() as u32,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            fs.as_mut_ptr(),
            fs.len() as u32,
        )
    };
    let (fs_type, label) = if ok != 0 {
        (
            clean(&from_wide(&fs)).map(|t| t.to_ascii_lowercase()),
            clean(&from_wide(&label)),
        )
    } else {
        (None, None)
    };
    Volume {
        name: name.to_string(),
        extents,
        paths,
        fs_type,
        label,
    }
}

/// Disk numbers holding `%SystemDrive%`.
pub(super) fn system_disks() -> Vec<u32> {
    let drive = std::env::var("SystemDrive").unwrap_or_else(|_| "C:".to_string());
    let vol = PathBuf::from(format!(r"\\.\{}", drive.trim_end_matches('\\')));
    let Ok(f) = open_query(&vol) else {
        return Vec::new();
    };
    let Ok(b) = ioctl(h(&f), IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, &[], 256) else {
        return Vec::new();
    };
    let count = u32_at(&b, offset_of!(VOLUME_DISK_EXTENTS, NumberOfDiskExtents));
    let first = offset_of!(VOLUME_DISK_EXTENTS, Extents);
    (0..count as usize)
        .map(|i| {
            u32_at(
                &b,
                first + i * size_of::<DISK_EXTENT>() + offset_of!(DISK_EXTENT, DiskNumber),
            )
        })
        .collect()
}
