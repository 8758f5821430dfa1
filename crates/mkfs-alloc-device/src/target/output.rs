//! A file a run writes besides its targets (a block map, a sparse image, a
//! log): a regular file, or a new one in a writable directory, never
//! written through a symbolic link.
//!
//! An output that is a symbolic link is refused rather than written through:
//! a replaced file would replace the link, an appended one would land where
//! the link points, and neither is what its name says.

use super::{os_text, writable};
use std::path::{Path, PathBuf};

/// How an output file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputWrite {
    /// Through a temporary file beside it, renamed over it: its directory
    /// must be writable.
    Replace,
    /// Appended to (created when missing).
    Append,
}

/// Why a path cannot be an output file; the messages follow the path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Its metadata cannot be read.
    #[error("cannot inspect it: {reason}")]
    Inspect {
        /// The system's words for it.
        reason: String,
    },
    /// A symbolic link.
    #[error("is a symbolic link (to {}); give the file's own path", to.display())]
    Symlink {
        /// Where it points.
        to: PathBuf,
    },
    /// A directory.
    #[error("is a directory; give a file name")]
    Directory,
    /// A device node, a FIFO or a socket.
    #[error("is {kind}, not a regular file; give a file name")]
    Special {
        /// What it is ("a block device", "a FIFO", ...).
        kind: &'static str,
    },
    /// Its directory does not exist.
    #[error("directory {} does not exist", dir.display())]
    NoDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// Its directory cannot be written in.
    #[error("cannot write in directory {}: {reason}", dir.display())]
    DirectoryNotWritable {
        /// The directory.
        dir: PathBuf,
        /// The system's words for it.
        reason: String,
    },
    /// It cannot be written.
    #[error("cannot write it: {reason}")]
    NotWritable {
        /// The system's words for it.
        reason: String,
    },
}

/// Checks one output on its own: its kind, its directory, its permissions.
/// Nothing is opened.
///
/// # Errors
///
/// [`OutputError`]: why `path` cannot be written as `write` says.
pub fn check_output(path: &Path, write: OutputWrite) -> Result<(), OutputError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(OutputError::Inspect {
                reason: os_text(&e),
            })
        }
    };
    if let Some(m) = &meta {
        if m.file_type().is_symlink() {
            let to = std::fs::read_link(path).unwrap_or_default();
            return Err(OutputError::Symlink { to });
        }
        if m.is_dir() {
            return Err(OutputError::Directory);
        }
        if !m.is_file() {
            return Err(OutputError::Special { kind: kind_text(m) });
        }
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(OutputError::NoDirectory {
            dir: parent.to_path_buf(),
        });
    }
    if meta.is_none() || write == OutputWrite::Replace {
        if let Err(e) = writable(parent) {
            return Err(OutputError::DirectoryNotWritable {
                dir: parent.to_path_buf(),
                reason: os_text(&e),
            });
        }
    }
    if meta.is_some() {
        if let Err(e) = writable(path) {
            return Err(OutputError::NotWritable {
                reason: os_text(&e),
            });
        }
    }
    Ok(())
}

/// What kind of non-regular file `m` is.
fn kind_text(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = m;
    "a special file"
}
