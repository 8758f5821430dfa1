//! What identifies a medium or a file, so that a target named twice (under
//! another name, a hard link, a symbolic link, a loop device over an image,
//! a disk and its partition) is found to be one.

use crate::DeviceInfo;
use std::path::{Path, PathBuf};

/// What identifies a medium or a file: a device number, a file's device and
/// inode, or its canonical path (for a file still to be created, the
/// canonical directory and its name).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MediumId {
    /// A block device's number.
    #[cfg(unix)]
    Device(u64),
    /// A file's device and inode.
    #[cfg(unix)]
    File(u64, u64),
    /// A canonical path.
    Path(PathBuf),
}

/// The canonical path of `path`; for a path that does not exist yet, its
/// canonical directory joined with its name.
pub fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(path) {
        return Some(c);
    }
    let name = path.file_name()?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::canonicalize(parent).ok().map(|p| p.join(name))
}

/// Everything that names the medium at `path`: its canonical path, its
/// device number or inode, a loop device's backing file, and a disk's
/// partitions (`device`: the inspected device, when it is one). Two paths
/// name the same medium when their lists share an entry.
pub fn medium_ids(path: &Path, device: Option<&DeviceInfo>) -> Vec<MediumId> {
    let mut ids = Vec::new();
    ids.extend(canonical(path).map(MediumId::Path));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let of = |p: &Path| -> Option<MediumId> {
            let m = std::fs::metadata(p).ok()?;
            Some(if crate::is_block_device(p) {
                MediumId::Device(m.rdev())
            } else {
                MediumId::File(m.dev(), m.ino())
            })
        };
        ids.extend(of(path));
        if let Some(b) = crate::loop_backing_file(path) {
            ids.extend(of(&b));
            ids.extend(canonical(&b).map(MediumId::Path));
        }
        if let Some(d) = device {
            ids.extend(d.partitions.iter().filter_map(|p| of(&p.path)));
        }
    }
    #[cfg(not(unix))]
    let _ = device;
    ids
}
