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

/// The first of `earlier` that names the same medium as `ids` (the same
/// file under another name, one device under two names, a loop device and
/// its backing file, a disk and one of its partitions): lists from
/// [`medium_ids`].
pub fn same_medium(ids: &[MediumId], earlier: &[Vec<MediumId>]) -> Option<usize> {
    earlier
        .iter()
        .position(|e| e.iter().any(|x| ids.contains(x)))
}

/// For each of `media` (lists from [`medium_ids`]), the earlier one of
/// them it names again, if any: the targets of one run given twice.
pub fn repeated(media: &[Vec<MediumId>]) -> Vec<Option<usize>> {
    (0..media.len())
        .map(|b| same_medium(&media[b], &media[..b]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_medium_named_twice_is_found_at_its_first_name() {
        let dir = std::env::temp_dir().join(format!("mkfs-alloc-ids-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let a = dir.join("a.img");
        std::fs::write(&a, b"x").expect("temp dir");
        let names = [a.clone(), dir.join("b.img"), dir.join(".").join("a.img")];
        let ids: Vec<Vec<MediumId>> = names.iter().map(|p| medium_ids(p, None)).collect();
        assert_eq!(repeated(&ids), [None, None, Some(0)]);
        assert_eq!(same_medium(&ids[1], &ids), Some(1));
        assert_eq!(
            same_medium(&medium_ids(&dir.join("c.img"), None), &ids),
            None
        );
        std::fs::remove_dir_all(&dir).expect("temp dir");
    }
}
