//! Windows: handles opened without following reparse points, with every
//! directory of the path held open (without `FILE_SHARE_DELETE`) by the
//! caller's cursor so that none can be renamed or replaced meanwhile.
//!
//! Sources: Microsoft Learn, "CreateFileW" (`FILE_FLAG_BACKUP_SEMANTICS`
//! opens a directory, `FILE_FLAG_OPEN_REPARSE_POINT` opens a reparse point
//! itself), "BY_HANDLE_FILE_INFORMATION" (volume serial number and file
//! index identify a file), "File Attribute Constants".

use super::{Facts, HostId, Kind};
use crate::tree::{timestamp, SkipKind};
use mkfs_alloc_layout::Timestamp;
use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const FILE_SHARE_READ: u32 = 0x1;
const FILE_SHARE_WRITE: u32 = 0x2;
const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
const FILE_ATTRIBUTE_DIRECTORY: u64 = 0x10;
const FILE_ATTRIBUTE_REPARSE_POINT: u64 = 0x400;
/// 100-ns intervals from 1601-01-01 to 1970-01-01.
const FILETIME_UNIX_EPOCH: u64 = 116_444_736_000_000_000;

/// An open directory (held without `FILE_SHARE_DELETE`) and its path.
#[derive(Debug)]
pub(crate) struct DirFd {
    _handle: File,
    path: PathBuf,
}

fn kind_of(attrs: u64) -> Kind {
    if attrs & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        Kind::Skip(SkipKind::Symlink)
    } else if attrs & FILE_ATTRIBUTE_DIRECTORY != 0 {
        Kind::Dir
    } else {
        Kind::File
    }
}

/// The facts of an open handle.
fn handle_facts(f: &File) -> io::Result<Facts> {
    let info = winapi_util::file::information(f)?;
    let mtime = info.last_write_time().map_or_else(Timestamp::default, |t| {
        let since = t.saturating_sub(FILETIME_UNIX_EPOCH);
        Timestamp {
            secs: i64::try_from(since / 10_000_000).unwrap_or(i64::MAX),
            nanos: (since % 10_000_000) as u32 * 100,
        }
    });
    Ok(Facts {
        kind: kind_of(info.file_attributes()),
        id: Some(HostId {
            dev: info.volume_serial_number(),
            ino: info.file_index(),
        }),
        size: info.file_size(),
        mtime,
    })
}

/// Opens `path` for reading; `follow` = false opens a reparse point itself.
fn open(path: &Path, dir: bool, follow: bool) -> io::Result<(File, Facts)> {
    let mut flags = 0;
    if dir {
        flags |= FILE_FLAG_BACKUP_SEMANTICS;
    }
    if !follow {
        flags |= FILE_FLAG_OPEN_REPARSE_POINT;
    }
    let f = OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(flags)
        .open(path)?;
    let facts = handle_facts(&f)?;
    Ok((f, facts))
}

pub(crate) fn open_root(path: &Path) -> io::Result<(DirFd, Facts)> {
    let (f, facts) = open(path, true, true)?;
    Ok((
        DirFd {
            _handle: f,
            path: path.to_path_buf(),
        },
        facts,
    ))
}

pub(crate) fn open_dir(dir: &DirFd, name: &OsStr) -> io::Result<(DirFd, Facts)> {
    let path = dir.path.join(name);
    let (f, facts) = open(&path, true, false)?;
    Ok((DirFd { _handle: f, path }, facts))
}

pub(crate) fn open_file(dir: &DirFd, name: &OsStr) -> io::Result<(File, Facts)> {
    open(&dir.path.join(name), false, false)
}

pub(crate) fn stat_at(dir: &DirFd, name: &OsStr) -> io::Result<Facts> {
    let m = std::fs::symlink_metadata(dir.path.join(name))?;
    let ft = m.file_type();
    let kind = if ft.is_symlink() {
        Kind::Skip(SkipKind::Symlink)
    } else if u64::from(m.file_attributes()) & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        // Another kind of reparse point (a placeholder, a mount point):
        // never opened as itself, so not copied.
        Kind::Skip(SkipKind::Other)
    } else {
        kind_of(u64::from(m.file_attributes()))
    };
    Ok(Facts {
        kind,
        id: None,
        size: m.len(),
        mtime: m.modified().map(timestamp).unwrap_or_default(),
    })
}

pub(crate) fn file_facts(file: &File) -> io::Result<Facts> {
    handle_facts(file)
}

pub(crate) fn path_id(path: &Path) -> io::Result<HostId> {
    let is_dir = std::fs::metadata(path)?.is_dir();
    let (_, facts) = open(path, is_dir, true)?;
    facts.id.ok_or_else(|| io::Error::other("no file identity"))
}

/// The names in `dir` (what each is comes from [`stat_at`]).
pub(crate) fn list(
    dir: &DirFd,
) -> io::Result<impl Iterator<Item = io::Result<(OsString, Option<Kind>)>>> {
    Ok(std::fs::read_dir(&dir.path)?.map(|e| e.map(|e| (e.file_name(), None))))
}

/// Links are opened as themselves and refused by their kind, not by an
/// error.
pub(crate) fn is_link_error(_e: &io::Error) -> bool {
    false
}
