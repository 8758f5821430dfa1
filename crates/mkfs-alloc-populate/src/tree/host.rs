//! Reading host directories into the tree, and the host paths of its nodes.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use mkfs_alloc_layout::Timestamp;

use super::*;

/// A host directory the tree read from, to rebuild source paths.
#[derive(Debug, Clone, Copy)]
pub(super) struct HostDir {
    /// Parent host directory, or `u32::MAX` when `name_off` indexes `paths`.
    pub(super) parent: u32,
    pub(super) name_off: u32,
    pub(super) name_len: u16,
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

pub(super) fn mtime_of(m: &fs::Metadata) -> Timestamp {
    m.modified().map(timestamp).unwrap_or_default()
}

pub(super) fn skip_kind(ft: &fs::FileType) -> SkipKind {
    if ft.is_symlink() {
        return SkipKind::Symlink;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_block_device() || ft.is_char_device() {
            return SkipKind::Device;
        }
        if ft.is_fifo() {
            return SkipKind::Fifo;
        }
        if ft.is_socket() {
            return SkipKind::Socket;
        }
    }
    SkipKind::Other
}

impl Tree {
    /// Adds the contents of the host directory `src` under `dest` (`/` for
    /// the root), like systemd-repart's `CopyFiles=/src:/dest`. Directories
    /// already in the tree are merged; entries that cannot be added are
    /// listed ([`Tree::skipped`], [`Tree::unreadable`], [`Tree::bad_names`]).
    pub fn add_dir(&mut self, src: impl AsRef<Path>, dest: &str) -> Result<(), TreeError> {
        self.add_dir_with_progress(src, dest, &mut |_| {})
    }

    /// [`Tree::add_dir`], calling `progress` with the number of entries read
    /// so far (every 1,024 entries and at the end).
    pub fn add_dir_with_progress(
        &mut self,
        src: impl AsRef<Path>,
        dest: &str,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), TreeError> {
        let src = src.as_ref();
        let m = fs::metadata(src).map_err(|source| TreeError::Source {
            path: src.to_path_buf(),
            source,
        })?;
        if !m.is_dir() {
            return Err(TreeError::NotA {
                path: src.to_path_buf(),
                expected: "directory",
            });
        }
        let top = self.dest_dir(dest, mtime_of(&m))?;
        if top == 0 && self.children[0].is_empty() {
            self.nodes[0].set_mtime(mtime_of(&m));
        }
        let idx = u32::try_from(self.paths.len()).map_err(|_| TreeError::TooLarge)?;
        self.paths.push(src.to_path_buf());
        let hd = self.push_host_dir(u32::MAX, idx, 0)?;
        if self.nodes[top as usize].src() == Src::None {
            self.nodes[top as usize].set_src(Src::HostDir(hd));
        }
        // Depth-first, with an explicit stack: (host dir, tree dir, path).
        let mut stack = vec![(hd, top, src.to_path_buf())];
        let mut seen = 0u64;
        while let Some((hd, dir, path)) = stack.pop() {
            let before = seen >> 10;
            seen += self.read_host_dir(hd, dir, &path, &mut stack)?;
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
    ) -> Result<u32, TreeError> {
        let id = u32::try_from(self.host_dirs.len()).map_err(|_| TreeError::TooLarge)?;
        self.host_dirs.push(HostDir {
            parent,
            name_off,
            name_len,
        });
        Ok(id)
    }

    fn read_host_dir(
        &mut self,
        hd: u32,
        dir: u32,
        path: &Path,
        stack: &mut Vec<(u32, u32, PathBuf)>,
    ) -> Result<u64, TreeError> {
        let rd = match fs::read_dir(path) {
            Ok(rd) => rd,
            Err(e) => {
                self.unreadable.push(Unreadable {
                    path: path.to_path_buf(),
                    error: e.to_string(),
                });
                return Ok(0);
            }
        };
        let mut count = 0u64;
        for ent in rd {
            count += 1;
            let ent = match ent {
                Ok(e) => e,
                Err(e) => {
                    self.unreadable.push(Unreadable {
                        path: path.to_path_buf(),
                        error: e.to_string(),
                    });
                    break;
                }
            };
            let os_name = ent.file_name();
            let ft = match ent.file_type() {
                Ok(ft) => ft,
                Err(e) => {
                    self.unreadable.push(Unreadable {
                        path: ent.path(),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            if !ft.is_dir() && !ft.is_file() {
                self.skipped.push(Skipped {
                    path: ent.path(),
                    kind: skip_kind(&ft),
                });
                continue;
            }
            let Some(name) = os_name.to_str() else {
                self.bad_names.push(ent.path());
                continue;
            };
            let meta = match ent.metadata() {
                Ok(m) => m,
                Err(e) => {
                    self.unreadable.push(Unreadable {
                        path: ent.path(),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            if ft.is_dir() {
                let node = match self.dir_index.get(&(dir, name.into())) {
                    Some(&d) => d,
                    None => self.push_node(dir, name, true, Src::None, 0, mtime_of(&meta))?,
                };
                let n = &self.nodes[node as usize];
                let (off, len) = (n.name_off, n.name_len);
                let sub = self.push_host_dir(hd, off, len)?;
                if self.nodes[node as usize].src() == Src::None {
                    self.nodes[node as usize].set_src(Src::HostDir(sub));
                }
                stack.push((sub, node, ent.path()));
            } else {
                // Readable now? (Reported before anything is written.)
                if let Err(e) = fs::File::open(ent.path()) {
                    self.unreadable.push(Unreadable {
                        path: ent.path(),
                        error: e.to_string(),
                    });
                    continue;
                }
                self.push_node(
                    dir,
                    name,
                    false,
                    Src::HostDir(hd),
                    meta.len(),
                    mtime_of(&meta),
                )?;
            }
        }
        Ok(count)
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
