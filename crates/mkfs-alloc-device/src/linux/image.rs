//! Who uses an image file (Linux): loop devices backed by it, mounts whose
//! source is it, and FUSE drivers that hold it open (`fusefat IMG DIR`
//! mounts with the source "fusefat", naming no file). Every comparison is
//! by device and inode of the file, never by name: a hard link, a bind
//! mount or a renamed image is the same file.
//!
//! Sources: Documentation/ABI/testing/sysfs-block-loop (`loop/backing_file`:
//! the path of the open backing file, computed when read); proc(5)
//! (`/proc/self/mountinfo`, `/proc/PID/fd/`, `/proc/PID/comm`);
//! Documentation/filesystems/fuse.rst (a FUSE daemon serves its mounts
//! through an open `/dev/fuse`).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::mountinfo::{self, Mount};
use super::{dev_num, inspect, read_str, sys_dir};
use crate::{ImageMount, LoopAttachment};

/// Device and inode of what `path` names (following links).
fn file_id(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The backing file named by a loop device's sysfs directory, as the
/// kernel prints it (a deleted one has no path any more).
fn backing_path(sys: &Path) -> Option<PathBuf> {
    let backing = read_str(&sys.join("loop/backing_file"))?;
    (!backing.ends_with(" (deleted)")).then(|| PathBuf::from(backing))
}

pub(crate) fn loop_devices_backed_by(file: &Path) -> Vec<LoopAttachment> {
    let Some(id) = file_id(file) else {
        return Vec::new();
    };
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<LoopAttachment> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter_map(|e| {
            let backing = backing_path(&e.path())?;
            if file_id(&backing) != Some(id) {
                return None;
            }
            let device = Path::new("/dev").join(e.file_name());
            let (mountpoints, in_use_by) = match inspect(&device) {
                Ok(info) => (
                    info.all_mountpoints().map(Path::to_path_buf).collect(),
                    info.in_use_by,
                ),
                Err(_) => (Vec::new(), Vec::new()),
            };
            Some(LoopAttachment {
                device,
                mountpoints,
                in_use_by,
            })
        })
        .collect();
    out.sort_by(|a, b| a.device.cmp(&b.device));
    out
}

pub(crate) fn loop_backing_file(device: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let m = fs::metadata(device).ok()?;
    if !m.file_type().is_block_device() {
        return None;
    }
    let mut dir = sys_dir(dev_num(m.rdev()))?;
    if dir.join("partition").exists() {
        dir = dir.parent()?.to_path_buf();
    }
    backing_path(&dir)
}

/// FUSE mounts: `fuse`, `fuseblk` and `fuse.NAME`.
fn is_fuse(m: &Mount) -> bool {
    m.fs_type == "fuse" || m.fs_type == "fuseblk" || m.fs_type.starts_with("fuse.")
}

pub(crate) fn image_mounts(file: &Path) -> Vec<ImageMount> {
    let Some(id) = file_id(file) else {
        return Vec::new();
    };
    let text = mountinfo::read_table(Path::new("/proc/self/mountinfo")).unwrap_or_default();
    let mounts = mountinfo::parse(&text);
    // Mounts whose source is the file. Only FUSE mounts name a regular
    // file as their source (kernel file systems on a file go through a
    // loop device); only absolute paths outside /dev are looked at, so
    // that no network file system is touched.
    let mut out: Vec<ImageMount> = mounts
        .iter()
        .filter(|m| is_fuse(m) && m.source.starts_with('/') && !m.source.starts_with("/dev/"))
        .filter(|m| file_id(Path::new(&m.source)) == Some(id))
        .map(|m| ImageMount {
            mountpoints: vec![m.mountpoint.clone()],
            fs_type: Some(m.fs_type.clone()),
            driver: None,
        })
        .collect();
    let drivers = if fuse_may_serve(&mounts) {
        fuse_drivers_holding(id)
    } else {
        Vec::new()
    };
    for (pid, program) in drivers {
        // Its mounts: those of its type (`fuse.fusefat`) or source (`fusefat`).
        let mine: Vec<&Mount> = mounts
            .iter()
            .filter(|m| {
                is_fuse(m) && (m.fs_type == format!("fuse.{program}") || m.source == program)
            })
            .collect();
        if out
            .iter()
            .any(|o| mine.iter().any(|m| o.mountpoints.contains(&m.mountpoint)))
        {
            continue;
        }
        out.push(ImageMount {
            mountpoints: mine.iter().map(|m| m.mountpoint.clone()).collect(),
            fs_type: mine.first().map(|m| m.fs_type.clone()),
            driver: Some((pid, program)),
        });
    }
    out
}

/// Whether any FUSE file system may be mounted, so that a driver could be
/// serving the image: the connections the FUSE control file system lists
/// when it is mounted (every mount namespace's), else the FUSE mounts of
/// ours. Scanning every process's descriptors costs about a fifth of a
/// small format's CPU time; with no FUSE mount there is nothing to find.
fn fuse_may_serve(mounts: &[Mount]) -> bool {
    if mounts.iter().any(is_fuse) {
        return true;
    }
    let fusectl = mounts.iter().find(|m| m.fs_type == "fusectl");
    match fusectl.map(|m| fs::read_dir(&m.mountpoint)) {
        Some(Ok(mut connections)) => connections.next().is_some(),
        // Unreadable: look, as without the check.
        Some(Err(_)) => true,
        // Not mounted: our namespace's mounts are all we know.
        None => false,
    }
}

/// Processes that hold `/dev/fuse` (FUSE drivers) and the file `id` open:
/// (pid, program name). Only the descriptors of such processes are
/// examined (`stat` through `/proc/PID/fd/N`); others' links are only read.
fn fuse_drivers_holding(id: (u64, u64)) -> Vec<(u32, String)> {
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let fds: Vec<PathBuf> = fds.flatten().map(|e| e.path()).collect();
        let serves_fuse = fds
            .iter()
            .any(|f| fs::read_link(f).is_ok_and(|t| t == Path::new("/dev/fuse")));
        if serves_fuse && fds.iter().any(|f| file_id(f) == Some(id)) {
            let program = read_str(&p.path().join("comm")).unwrap_or_else(|| "?".into());
            out.push((pid, program));
        }
    }
    out
}
