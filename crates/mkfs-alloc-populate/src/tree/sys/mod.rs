//! Host files and directories opened relative to an open directory, never
//! through a symbolic link (or, on Windows, a reparse point) inside the
//! tree: what the walk saw is what the copy reads, or the copy fails.
//!
//! ```text
//!  open_root(path)            the directory given (its own path is followed)
//!  open_dir(&dir, name)       a subdirectory: not followed if it is a link
//!  open_file(&dir, name)      a regular file: not followed if it is a link
//!  stat_at(&dir, name)        what an entry is, without following it
//!  list(&dir)                 the names in a directory
//! ```
//!
//! Unix (Linux, macOS): `openat` with `O_NOFOLLOW` (and `O_DIRECTORY` for
//! directories), `fstatat(AT_SYMLINK_NOFOLLOW)`, `fstat` of the opened
//! descriptor (POSIX.1-2008). Windows: handles opened with
//! `FILE_FLAG_OPEN_REPARSE_POINT` (a link is opened as itself and refused),
//! `GetFileInformationByHandle` for the identity (volume serial number and
//! file index), and every directory of the path held open without
//! `FILE_SHARE_DELETE`, so that none of them can be renamed or replaced
//! while a path through it is opened.

use super::SkipKind;
use mkfs_alloc_layout::Timestamp;
#[cfg(feature = "serde")]
use serde::Serialize;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;
#[cfg(not(any(unix, windows)))]
mod other;
#[cfg(not(any(unix, windows)))]
use other as imp;

pub(crate) use imp::{
    file_facts, is_link_error, list, open_dir, open_file, open_root, path_id, stat_at, DirFd,
};

/// The identity of a host file or directory: device and inode number on
/// Unix, volume serial number and file index on Windows. Two paths with the
/// same identity are the same file (hard links, bind mounts, symbolic
/// links).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct HostId {
    /// Device (Unix `st_dev`) or volume serial number (Windows).
    pub dev: u64,
    /// Inode (Unix `st_ino`) or file index (Windows).
    pub ino: u64,
}

impl HostId {
    /// The identity of what `path` names, following symbolic links.
    ///
    /// # Errors
    ///
    /// The operating system's error when `path` cannot be examined.
    pub fn of_path(path: &std::path::Path) -> std::io::Result<HostId> {
        path_id(path)
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    /// Anything the walk skips (and lists).
    Skip(SkipKind),
}

/// What a stat of an entry says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub(crate) kind: Kind,
    /// `None` where a directory listing does not give it (Windows).
    pub(crate) id: Option<HostId>,
    pub(crate) size: u64,
    pub(crate) mtime: Timestamp,
}
