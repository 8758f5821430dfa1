//! Systems without descriptor-relative opening: `--rootdir` sources are
//! refused (never read by a path that could lead outside the tree).

use super::{Facts, HostId, Kind};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::Path;

/// An open directory (never made here).
#[derive(Debug)]
pub(crate) struct DirFd(());

fn unsupported<T>() -> io::Result<T> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "reading host directories safely is not supported on this system",
    ))
}

pub(crate) fn open_root(_path: &Path) -> io::Result<(DirFd, Facts)> {
    unsupported()
}

pub(crate) fn open_dir(_dir: &DirFd, _name: &OsStr) -> io::Result<(DirFd, Facts)> {
    unsupported()
}

pub(crate) fn open_file(_dir: &DirFd, _name: &OsStr) -> io::Result<(File, Facts)> {
    unsupported()
}

pub(crate) fn stat_at(_dir: &DirFd, _name: &OsStr) -> io::Result<Facts> {
    unsupported()
}

pub(crate) fn file_facts(_file: &File) -> io::Result<Facts> {
    unsupported()
}

pub(crate) fn path_id(_path: &Path) -> io::Result<HostId> {
    unsupported()
}

pub(crate) fn list(
    _dir: &DirFd,
) -> io::Result<std::iter::Empty<io::Result<(OsString, Option<Kind>)>>> {
    unsupported()
}

pub(crate) fn is_link_error(_e: &io::Error) -> bool {
    false
}
