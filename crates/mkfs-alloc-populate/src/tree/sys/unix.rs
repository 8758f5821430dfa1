//! Unix (Linux, macOS): descriptors relative to descriptors.

use super::{Facts, HostId, Kind};
use crate::tree::SkipKind;
use mkfs_alloc_layout::Timestamp;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An open directory.
#[derive(Debug)]
pub(crate) struct DirFd(OwnedFd);

/// The identity in a `stat` (field types differ between systems).
#[allow(clippy::unnecessary_cast)]
fn id(st: &Stat) -> HostId {
    HostId {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    }
}

fn kind_of(t: FileType) -> Kind {
    match t {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Skip(SkipKind::Symlink),
        FileType::BlockDevice | FileType::CharacterDevice => Kind::Skip(SkipKind::Device),
        FileType::Fifo => Kind::Skip(SkipKind::Fifo),
        FileType::Socket => Kind::Skip(SkipKind::Socket),
        _ => Kind::Skip(SkipKind::Other),
    }
}

/// The facts of a `stat`.
#[allow(clippy::unnecessary_cast)]
fn facts(st: &Stat) -> Facts {
    Facts {
        kind: kind_of(FileType::from_raw_mode(st.st_mode as _)),
        id: Some(id(st)),
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime: Timestamp {
            secs: st.st_mtime as i64,
            nanos: (st.st_mtime_nsec as u32).min(999_999_999),
        },
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);

pub(crate) fn open_root(path: &Path) -> io::Result<(DirFd, Facts)> {
    let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty())?;
    let f = facts(&rustix::fs::fstat(&fd)?);
    Ok((DirFd(fd), f))
}

pub(crate) fn open_dir(dir: &DirFd, name: &OsStr) -> io::Result<(DirFd, Facts)> {
    let fd = rustix::fs::openat(&dir.0, name, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty())?;
    let f = facts(&rustix::fs::fstat(&fd)?);
    Ok((DirFd(fd), f))
}

/// Opens for reading without following a link; `O_NONBLOCK` so that a FIFO
/// put in a file's place cannot block the run (it is then refused by its
/// kind).
pub(crate) fn open_file(dir: &DirFd, name: &OsStr) -> io::Result<(File, Facts)> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let fd = rustix::fs::openat(&dir.0, name, flags, Mode::empty())?;
    let f = facts(&rustix::fs::fstat(&fd)?);
    Ok((File::from(fd), f))
}

pub(crate) fn stat_at(dir: &DirFd, name: &OsStr) -> io::Result<Facts> {
    Ok(facts(&rustix::fs::statat(
        &dir.0,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
    )?))
}

pub(crate) fn file_facts(file: &File) -> io::Result<Facts> {
    Ok(facts(&rustix::fs::fstat(file.as_fd())?))
}

pub(crate) fn path_id(path: &Path) -> io::Result<HostId> {
    Ok(id(&rustix::fs::stat(path)?))
}

/// The names in `dir` (without `.` and `..`), each with what the directory
/// says it is (`d_type`), where it says: a regular file or a link needs no
/// `stat` of its own.
pub(crate) fn list(
    dir: &DirFd,
) -> io::Result<impl Iterator<Item = io::Result<(OsString, Option<Kind>)>>> {
    let d = Dir::read_from(&dir.0)?;
    Ok(d.filter_map(|e| match e {
        Ok(e) => {
            let n = e.file_name().to_bytes();
            let kind = match e.file_type() {
                FileType::Unknown => None,
                t => Some(kind_of(t)),
            };
            (n != b"." && n != b"..").then(|| Ok((OsStr::from_bytes(n).to_os_string(), kind)))
        }
        Err(e) => Some(Err(e.into())),
    }))
}

/// Whether opening failed because the entry is a symbolic link (with
/// `O_NOFOLLOW`: `ELOOP`; FreeBSD says `EMLINK`) or not a directory.
pub(crate) fn is_link_error(e: &io::Error) -> bool {
    let raw = e.raw_os_error();
    [Errno::LOOP, Errno::MLINK, Errno::NOTDIR]
        .iter()
        .any(|x| raw == Some(x.raw_os_error()))
}
