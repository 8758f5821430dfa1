//! Opening a source file for the copy, and the checks that it is still
//! the file the walk recorded: before (identity, kind, size and
//! modification time as the walk saw them), while reading (it must end
//! where planned) and after (`fstat` of the same descriptor: size and
//! modification time as when it was opened, which is what tells a change
//! when its bytes were cloned rather than read).

use crate::plan::Populated;
use crate::tree::cursor::Cursor;
use crate::tree::{sys, Src, Tree};
use crate::write::{content_err, SourceError};
use mkfs_alloc_layout::WriteError;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// A source opened for the copy.
pub(crate) enum Opened {
    /// A host file, with what `fstat` said when it was opened.
    Host {
        /// The descriptor read (or cloned) from.
        file: File,
        /// Its facts at opening.
        facts: sys::Facts,
    },
    /// A reader given in memory.
    Memory(Box<dyn Read + Send + Sync>),
}

impl Opened {
    /// The reader of the bytes from `offset` on (a host file is positioned
    /// there; a memory reader is read from its start, `offset` 0).
    pub(crate) fn reader_at(&mut self, offset: u64) -> std::io::Result<&mut dyn Read> {
        match self {
            Opened::Host { file, .. } => {
                file.seek(SeekFrom::Start(offset))?;
                Ok(file)
            }
            Opened::Memory(r) => Ok(r.as_mut()),
        }
    }

    /// After the copy: a host file must still have the size and the
    /// modification time it had when opened (`fstat` of the same
    /// descriptor).
    pub(crate) fn check_unchanged(&self, path: &dyn Fn() -> String) -> Result<(), WriteError> {
        let Opened::Host { file, facts } = self else {
            return Ok(());
        };
        let now = sys::file_facts(file).map_err(|source| {
            content_err(SourceError::Io {
                path: path(),
                source,
            })
        })?;
        if now.size != facts.size {
            return Err(content_err(SourceError::Changed {
                path: path(),
                expected: facts.size,
                found: now.size,
            }));
        }
        if now.mtime != facts.mtime {
            return Err(content_err(SourceError::Modified { path: path() }));
        }
        Ok(())
    }
}

impl Populated {
    /// [`open_source`] of this plan's tree.
    pub(crate) fn open_source(
        &mut self,
        k: u32,
        cursor: &mut Cursor,
    ) -> Result<Opened, WriteError> {
        open_source(&mut self.tree, k, cursor)
    }
}

/// The reader of node `k`'s bytes: its reader given in memory (taken:
/// it is read once), or its host file, opened as the walk found it
/// (same identity, not through a link, the planned length).
pub(crate) fn open_source(
    tree: &mut Tree,
    k: u32,
    cursor: &mut Cursor,
) -> Result<Opened, WriteError> {
    let n = tree.nodes[k as usize];
    let io_err = |path: String, source| content_err(SourceError::Io { path, source });
    let replaced = |path: String, why| content_err(SourceError::Replaced { path, why });
    let (file, facts) = match n.src() {
        Src::Memory(i) => {
            return tree.readers[i as usize]
                .take()
                .map(Opened::Memory)
                .ok_or_else(|| {
                    io_err(
                        tree.display_path(k),
                        std::io::Error::other("the reader was already consumed"),
                    )
                })
        }
        Src::HostDir(hd) => {
            let (dir, _) = cursor.enter(tree, hd).map_err(|e| {
                let path = tree.host_path_of_dir(e.hd);
                match e.io {
                    Some(source) => io_err(path, source),
                    None => replaced(path, "now a link or another directory"),
                }
            })?;
            sys::open_file(dir, std::ffi::OsStr::new(tree.name(k))).map_err(|e| {
                if sys::is_link_error(&e) {
                    replaced(tree.display_path(k), "now a symbolic link")
                } else {
                    io_err(tree.display_path(k), e)
                }
            })?
        }
        Src::HostPath(_) | Src::None => {
            let p = tree.source_path(k).unwrap_or_default();
            let f = std::fs::File::open(&p).map_err(|e| io_err(tree.display_path(k), e))?;
            let facts = sys::file_facts(&f).map_err(|e| io_err(tree.display_path(k), e))?;
            (f, facts)
        }
    };
    if facts.kind != sys::Kind::File {
        return Err(replaced(tree.display_path(k), "now not a regular file"));
    }
    if facts.id.unwrap_or_default() != tree.file_ids[k as usize] {
        return Err(replaced(tree.display_path(k), "now another file"));
    }
    if facts.size != n.size {
        return Err(content_err(SourceError::Changed {
            path: tree.display_path(k),
            expected: n.size,
            found: facts.size,
        }));
    }
    if !n.has_mtime(facts.mtime) {
        // Same size, written to since the walk: its directory entry
        // would carry the old time for the new bytes.
        return Err(content_err(SourceError::Modified {
            path: tree.display_path(k),
        }));
    }
    Ok(Opened::Host { file, facts })
}

/// Fills all of `buf` from `reader`, `done` bytes of the file's `size`
/// having been read before: a short read means the file shrank.
pub(crate) fn read_full(
    reader: &mut dyn Read,
    buf: &mut [u8],
    path: &dyn Fn() -> String,
    size: u64,
    done: u64,
) -> Result<(), WriteError> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(content_err(SourceError::Changed {
                    path: path(),
                    expected: size,
                    found: done + got as u64,
                }))
            }
            Ok(r) => got += r,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(content_err(SourceError::Io {
                    path: path(),
                    source,
                }))
            }
        }
    }
    Ok(())
}

/// The file must end where planned: one more byte means it grew.
pub(crate) fn check_at_end(
    reader: &mut dyn Read,
    path: &dyn Fn() -> String,
    size: u64,
) -> Result<(), WriteError> {
    let mut probe = [0u8; 1];
    loop {
        match reader.read(&mut probe) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(content_err(SourceError::Changed {
                    path: path(),
                    expected: size,
                    found: size + 1,
                }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(content_err(SourceError::Io {
                    path: path(),
                    source,
                }))
            }
        }
    }
}
