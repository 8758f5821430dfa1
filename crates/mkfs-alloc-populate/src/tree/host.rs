//! Reading host directories into the tree, and the host paths of its nodes.
//!
//! The walk reaches every directory through the [`Cursor`] (descriptors
//! relative to descriptors, no link followed) and records the identity of
//! every directory and file it adds; the copy reaches them the same way
//! and refuses any that is no longer the one recorded.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use mkfs_alloc_layout::Timestamp;

use super::cursor::{Cursor, EnterError};
use super::sys::{self, HostId, Kind};
use super::*;

/// A host directory the tree read from, to rebuild source paths and to
/// reach it again.
#[derive(Debug, Clone, Copy)]
pub(super) struct HostDir {
    /// Parent host directory, or `u32::MAX` when `name_off` indexes `paths`.
    pub(super) parent: u32,
    pub(super) name_off: u32,
    pub(super) name_len: u16,
    /// Its identity, once known (always after the walk entered it).
    pub(super) id: Option<HostId>,
}

/// The UTC timestamp of a `SystemTime` (before 1970: negative seconds).
pub fn timestamp(t: SystemTime) -> Timestamp {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => Timestamp {
            secs: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: d.subsec_nanos(),
        },
        Err(e) => {
            let d = e.duration();
            let mut secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            let mut nanos = d.subsec_nanos();
            if nanos > 0 {
                secs -= 1;
                nanos = 1_000_000_000 - nanos;
            }
            Timestamp { secs, nanos }
        }
    }
}

/// The words for an entry that is no longer what the walk saw.
pub(crate) const REPLACED: &str =
    "it changed while being read (a symbolic link or another file or directory took its place)";

impl Tree {
    /// Adds the contents of the host directory `src` under `dest` (`/` for
    /// the root), like systemd-repart's `CopyFiles=/src:/dest`. Directories
    /// already in the tree are merged; entries that cannot be added are
    /// listed ([`Tree::skipped`], [`Tree::unreadable`], [`Tree::bad_names`]).
    ///
    /// Symbolic links inside `src` are never followed (`src` itself may be
    /// one); the copy later reads exactly the files and directories seen
    /// here, or fails.
    ///
    /// # Errors
    ///
    /// [`TreeError::Source`] when `src` cannot be opened or read,
    /// [`TreeError::NotA`] when it is no directory, [`TreeError::Dest`] for an
    /// invalid `dest`, [`TreeError::TooLarge`] beyond 4 billion entries.
    pub fn add_dir(&mut self, src: impl AsRef<Path>, dest: &str) -> Result<(), TreeError> {
        self.add_dir_with_progress(src, dest, &mut |_| {})
    }

    /// [`Tree::add_dir`], calling `progress` with the number of entries read
    /// so far (every 1,024 entries and at the end).
    ///
    /// # Errors
    ///
    /// As [`Tree::add_dir`].
    pub fn add_dir_with_progress(
        &mut self,
        src: impl AsRef<Path>,
        dest: &str,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), TreeError> {
        let src = src.as_ref();
        let source = |source| TreeError::Source {
            path: src.to_path_buf(),
            source,
        };
        let m = fs::metadata(src).map_err(source)?;
        if !m.is_dir() {
            return Err(TreeError::NotA {
                path: src.to_path_buf(),
                expected: "directory",
            });
        }
        let (_, facts) = sys::open_root(src).map_err(source)?;
        let top = self.dest_dir(dest, facts.mtime)?;
        if top == 0 && self.children[0].is_empty() {
            self.nodes[0].set_mtime(facts.mtime);
        }
        let idx = u32::try_from(self.paths.len()).map_err(|_| TreeError::TooLarge)?;
        self.paths.push(src.to_path_buf());
        let hd = self.push_host_dir(u32::MAX, idx, 0, facts.id)?;
        if self.nodes[top as usize].src() == Src::None {
            self.nodes[top as usize].set_src(Src::HostDir(hd));
        }
        // Depth-first, with an explicit stack: (host dir, tree dir).
        let mut stack = vec![(hd, top)];
        let mut cursor = Cursor::new();
        let mut seen = 0u64;
        while let Some((hd, dir)) = stack.pop() {
            let before = seen >> 10;
            seen += self.read_host_dir(&mut cursor, hd, dir, &mut stack)?;
            if seen >> 10 != before {
                progress(seen);
            }
        }
        progress(seen);
        self.skipped.sort();
        self.unreadable.sort();
        self.bad_names.sort();
        Ok(())
    }

    fn push_host_dir(
        &mut self,
        parent: u32,
        name_off: u32,
        name_len: u16,
        id: Option<HostId>,
    ) -> Result<u32, TreeError> {
        let id_ = u32::try_from(self.host_dirs.len()).map_err(|_| TreeError::TooLarge)?;
        self.host_dirs.push(HostDir {
            parent,
            name_off,
            name_len,
            id,
        });
        Ok(id_)
    }

    fn unreadable_at(&mut self, path: PathBuf, error: String) {
        self.unreadable.push(Unreadable { path, error });
    }

    /// Why the walk could not enter a directory, as an unreadable entry.
    pub(crate) fn enter_error_text(e: &EnterError) -> String {
        match &e.io {
            Some(io) => io.to_string(),
            None => REPLACED.to_string(),
        }
    }

    fn read_host_dir(
        &mut self,
        cursor: &mut Cursor,
        hd: u32,
        dir: u32,
        stack: &mut Vec<(u32, u32)>,
    ) -> Result<u64, TreeError> {
        let fd = match cursor.enter(self, hd) {
            Ok((fd, id)) => {
                if self.host_dirs[hd as usize].id.is_none() {
                    self.host_dirs[hd as usize].id = id;
                }
                fd
            }
            Err(e) => {
                let path = self.host_dir_path(e.hd);
                self.unreadable_at(path, Self::enter_error_text(&e));
                return Ok(0);
            }
        };
        let entries = match sys::list(fd) {
            Ok(it) => it,
            Err(e) => {
                self.unreadable_at(self.host_dir_path(hd), e.to_string());
                return Ok(0);
            }
        };
        let mut count = 0u64;
        for entry in entries {
            count += 1;
            let (os_name, hint) = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.unreadable_at(self.host_dir_path(hd), e.to_string());
                    break;
                }
            };
            let path = || self.host_dir_path(hd).join(&os_name);
            // A file or a link the listing names needs no stat: the file is
            // opened (and its descriptor's facts taken) below.
            let (kind, stat) = match hint {
                Some(k @ (Kind::File | Kind::Skip(_))) => (k, None),
                _ => match sys::stat_at(fd, &os_name) {
                    Ok(f) => (f.kind, Some(f)),
                    Err(e) => {
                        self.unreadable_at(path(), e.to_string());
                        continue;
                    }
                },
            };
            if let Kind::Skip(kind) = kind {
                let path = path();
                self.skipped.push(Skipped { path, kind });
                continue;
            }
            let Some(name) = os_name.to_str() else {
                let path = path();
                self.bad_names.push(path);
                continue;
            };
            if let (Kind::Dir, Some(facts)) = (kind, stat) {
                let node = match self.dir_index.get(&(dir, name.into())) {
                    Some(&d) => d,
                    None => self.push_node(dir, name, true, Src::None, 0, facts.mtime)?,
                };
                let n = &self.nodes[node as usize];
                let (off, len) = (n.name_off, n.name_len);
                let sub = self.push_host_dir(hd, off, len, facts.id)?;
                if self.nodes[node as usize].src() == Src::None {
                    self.nodes[node as usize].set_src(Src::HostDir(sub));
                }
                stack.push((sub, node));
                continue;
            }
            // Readable now, and still what the stat saw? (Reported before
            // anything is written.) The opened file's facts are recorded.
            let opened = match sys::open_file(fd, &os_name) {
                Ok((_, f))
                    if f.kind == Kind::File
                        && stat.is_none_or(|s| s.id.is_none() || f.id == s.id) =>
                {
                    f
                }
                Ok(_) => {
                    self.unreadable_at(path(), REPLACED.to_string());
                    continue;
                }
                Err(e) if sys::is_link_error(&e) => {
                    self.unreadable_at(path(), REPLACED.to_string());
                    continue;
                }
                Err(e) => {
                    self.unreadable_at(path(), e.to_string());
                    continue;
                }
            };
            self.push_host_file(dir, name, Src::HostDir(hd), &opened)?;
        }
        Ok(count)
    }

    /// Adds a host file with the facts of its open descriptor (size, mtime,
    /// identity).
    pub(super) fn push_host_file(
        &mut self,
        dir: u32,
        name: &str,
        src: Src,
        facts: &sys::Facts,
    ) -> Result<(), TreeError> {
        let node = self.push_node(dir, name, false, src, facts.size, facts.mtime)?;
        self.file_ids[node as usize] = facts.id.unwrap_or_default();
        Ok(())
    }

    /// The host path of a host directory, for messages.
    pub(crate) fn host_path_of_dir(&self, hd: u32) -> String {
        self.host_dir_path(hd).display().to_string()
    }

    fn host_dir_path(&self, hd: u32) -> PathBuf {
        let mut parts = Vec::new();
        let mut at = hd;
        loop {
            let h = self.host_dirs[at as usize];
            if h.parent == u32::MAX {
                let mut p = self.paths[h.name_off as usize].clone();
                for part in parts.iter().rev() {
                    p.push(part);
                }
                return p;
            }
            parts.push(self.arena(h.name_off, h.name_len));
            at = h.parent;
        }
    }

    /// The host directories from `hd`'s root down to `hd`.
    pub(super) fn host_dir_chain(&self, hd: u32) -> Vec<u32> {
        let mut chain = vec![hd];
        let mut at = hd;
        while self.host_dirs[at as usize].parent != u32::MAX {
            at = self.host_dirs[at as usize].parent;
            chain.push(at);
        }
        chain.reverse();
        chain
    }

    /// The path a root host directory was given as.
    pub(super) fn host_root_path(&self, hd: u32) -> &Path {
        &self.paths[self.host_dirs[hd as usize].name_off as usize]
    }

    /// The name of a host directory that is not a root.
    pub(super) fn host_dir_name(&self, hd: u32) -> &str {
        let h = self.host_dirs[hd as usize];
        self.arena(h.name_off, h.name_len)
    }

    /// The recorded identity of a host directory.
    pub(super) fn host_dir_id(&self, hd: u32) -> Option<HostId> {
        self.host_dirs[hd as usize].id
    }

    /// A host directory or file of the tree whose identity is one of `ids`
    /// (a few; one pass over the tree), the earliest in `ids` that is found,
    /// with the host path it was read at: how a caller finds out that a
    /// path is inside the tree (give the identities of the path and of its
    /// parent directories, the path first), whatever names lead there.
    pub fn find_host(&self, ids: &[HostId]) -> Option<(HostId, PathBuf)> {
        let rank = |id: &HostId| ids.iter().position(|i| i == id);
        // (rank, host directory or file node)
        let mut best: Option<(usize, Result<u32, u32>)> = None;
        let mut consider = |r: Option<usize>, at| {
            if let Some(r) = r.filter(|&r| best.is_none_or(|(b, _)| r < b)) {
                best = Some((r, at));
            }
        };
        for (hd, h) in self.host_dirs.iter().enumerate() {
            consider(h.id.as_ref().and_then(rank), Ok(hd as u32));
        }
        for (k, (n, id)) in self.nodes.iter().zip(&self.file_ids).enumerate() {
            if !n.is_dir() && matches!(n.src(), Src::HostDir(_) | Src::HostPath(_)) {
                consider(rank(id), Err(k as u32));
            }
        }
        let (r, at) = best?;
        let path = match at {
            Ok(hd) => self.host_dir_path(hd),
            Err(k) => self.source_path(k).unwrap_or_default(),
        };
        Some((ids[r], path))
    }

    /// Where the tree holds `path`, or a directory `path` is in (an
    /// existing file or one to be created there, whatever names or links
    /// lead to it): the host path it was read at. An image written inside
    /// the tree would be read by its own copy.
    pub fn find_path(&self, path: &Path) -> Option<PathBuf> {
        let mut ids: Vec<HostId> = HostId::of_path(path).into_iter().collect();
        // The directories that hold it, at their real location.
        let dir = match fs::canonicalize(path) {
            Ok(real) => real.parent().map(Path::to_path_buf),
            Err(_) => path.file_name().and_then(|_| {
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
                fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()
            }),
        };
        if let Some(d) = &dir {
            ids.extend(d.ancestors().filter_map(|a| HostId::of_path(a).ok()));
        }
        self.find_host(&ids).map(|(_, at)| at)
    }

    /// The host path a node's bytes come from, if any.
    pub(crate) fn source_path(&self, node: u32) -> Option<PathBuf> {
        let n = &self.nodes[node as usize];
        match n.src() {
            Src::HostDir(hd) if n.is_dir() => Some(self.host_dir_path(hd)),
            Src::HostDir(hd) => Some(self.host_dir_path(hd).join(self.name(node))),
            Src::HostPath(i) => Some(self.paths[i as usize].clone()),
            Src::Memory(_) | Src::None => None,
        }
    }
}
