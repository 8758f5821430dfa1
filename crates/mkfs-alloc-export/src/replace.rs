//! [`replace_file`]: a flashing file (a bmap, a sparse image) written whole
//! or not at all, so that a flasher never reads half of one.

use crate::ExportError;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Why [`replace_file`] did not replace the file (the temporary file is
/// removed then).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplaceError {
    /// The temporary file could not be created.
    #[error("creating {}", tmp.display())]
    Create {
        /// The temporary file.
        tmp: PathBuf,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// The export failed.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// The temporary file could not be synced to its disk.
    #[error("writing {}", tmp.display())]
    Sync {
        /// The temporary file.
        tmp: PathBuf,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// The temporary file could not be renamed into place.
    #[error("renaming {} to {}", tmp.display(), path.display())]
    Rename {
        /// The temporary file.
        tmp: PathBuf,
        /// The file it was to replace.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: io::Error,
    },
}

/// Writes `path` through a temporary file beside it
/// (`.NAME.mkfs-alloc-PID.tmp`), synced and renamed into place when
/// `write` succeeds (rename(2) replaces a file atomically), removed when
/// anything fails.
///
/// # Errors
///
/// [`ReplaceError`]: creating, writing (the export's error), syncing or
/// renaming.
pub fn replace_file<T>(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<T, ExportError>,
) -> Result<T, ReplaceError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.mkfs-alloc-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = File::create(&tmp).map_err(|source| ReplaceError::Create {
            tmp: tmp.clone(),
            source,
        })?;
        let v = write(&mut f)?;
        f.sync_all().map_err(|source| ReplaceError::Sync {
            tmp: tmp.clone(),
            source,
        })?;
        std::fs::rename(&tmp, path).map_err(|source| ReplaceError::Rename {
            tmp: tmp.clone(),
            path: path.to_path_buf(),
            source,
        })?;
        Ok(v)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkfs_alloc_testsupport::TempDir;
    use std::io::Write;

    #[test]
    fn the_file_is_replaced_whole_or_left_alone() {
        let dir = TempDir::new("replace-file");
        let out = dir.join("image.bmap");
        std::fs::write(&out, b"old").expect("old file");
        let n = replace_file(&out, |f| {
            f.write_all(b"new").expect("write");
            Ok(3)
        })
        .expect("replaced");
        assert_eq!(
            (n, std::fs::read(&out).expect("read")),
            (3, b"new".to_vec())
        );
        let failed = replace_file(&out, |f| {
            f.write_all(b"half").expect("write");
            Err::<(), _>(ExportError::BlockSize {
                block_size: 3,
                why: "not a power of two",
            })
        });
        assert!(matches!(failed, Err(ReplaceError::Export(_))));
        assert_eq!(std::fs::read(&out).expect("read"), b"new", "left alone");
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
        assert_eq!(left.len(), 1, "no temporary file stays");
        let missing = dir.join("no-such-dir/x.bmap");
        let e = replace_file(&missing, |_| Ok(())).expect_err("no directory");
        assert!(e.to_string().starts_with("creating "), "{e}");
    }
}
