//! Where a journal may be kept: a regular file that is not the probed
//! target. The probe would overwrite the blocks it saves there, or read a
//! device as a journal. (A journal on a mounted file system of the target
//! is refused with the target: a mounted device is never probed.)

use std::fs::Metadata;
use std::path::{Path, PathBuf};

/// Why a path cannot hold a journal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalPathError {
    /// The journal is the probed target itself (by any name, a symbolic
    /// link too).
    #[error("this is the probed target {}", target.display())]
    IsTarget {
        /// The probed target.
        target: PathBuf,
    },
    /// A device node.
    #[error("this is a device, not a file")]
    IsDevice,
    /// Not a regular file (a directory, a FIFO, a socket).
    #[error("this is not a regular file")]
    NotAFile,
}

/// The journal of a probe of `target` when none is named:
/// `mkfs-alloc-probe-NAME.journal` in the current directory (`NAME`: the
/// target's file name, `device` without one).
pub fn default_journal_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "device".into());
    PathBuf::from(format!("mkfs-alloc-probe-{name}.journal"))
}

/// Checks, before anything is written, that `journal` (if it exists) is a
/// regular file and not the probed `target`.
///
/// # Errors
///
/// [`JournalPathError`]: the journal is the target, a device or not a
/// regular file.
pub fn check_journal_path(journal: &Path, target: &Path) -> Result<(), JournalPathError> {
    let target_meta = std::fs::metadata(target).ok();
    if let Ok(m) = std::fs::metadata(journal) {
        if target_meta.as_ref().is_some_and(|d| same_file(&m, d)) {
            return Err(JournalPathError::IsTarget {
                target: target.to_path_buf(),
            });
        }
        if is_device(&m) {
            return Err(JournalPathError::IsDevice);
        }
        if !m.is_file() {
            return Err(JournalPathError::NotAFile);
        }
    }
    Ok(())
}

/// Two names of one file (or two nodes of one device).
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let node = |m: &Metadata| (m.dev(), m.ino());
        let dev_node = |m: &Metadata| is_device(m).then(|| m.rdev());
        node(a) == node(b) || (dev_node(a).is_some() && dev_node(a) == dev_node(b))
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// A block or character device node.
fn is_device(m: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        t.is_block_device() || t.is_char_device()
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkfs_alloc_testsupport::TempDir;

    #[test]
    fn the_default_journal_is_named_after_the_target() {
        assert_eq!(
            default_journal_path(Path::new("/dev/sdb")),
            PathBuf::from("mkfs-alloc-probe-sdb.journal")
        );
        assert_eq!(
            default_journal_path(Path::new("/")),
            PathBuf::from("mkfs-alloc-probe-device.journal")
        );
    }

    #[test]
    fn a_journal_is_a_regular_file_other_than_the_target() {
        let dir = TempDir::new("journal-path");
        let img = dir.join("stick.img");
        std::fs::write(&img, vec![0u8; 4096]).expect("image");
        let j = dir.join("probe.journal");
        assert_eq!(check_journal_path(&j, &img), Ok(()), "a new file");
        std::fs::write(&j, b"x").expect("journal");
        assert_eq!(check_journal_path(&j, &img), Ok(()), "an existing file");
        assert_eq!(
            check_journal_path(&img, &img),
            Err(JournalPathError::IsTarget {
                target: img.clone()
            })
        );
        assert_eq!(
            check_journal_path(dir.path(), &img),
            Err(JournalPathError::NotAFile)
        );
        #[cfg(unix)]
        {
            let link = dir.join("link");
            std::os::unix::fs::symlink(&img, &link).expect("symlink");
            assert!(matches!(
                check_journal_path(&link, &img),
                Err(JournalPathError::IsTarget { .. })
            ));
            assert_eq!(
                check_journal_path(Path::new("/dev/null"), &img),
                Err(JournalPathError::IsDevice)
            );
        }
    }
}
