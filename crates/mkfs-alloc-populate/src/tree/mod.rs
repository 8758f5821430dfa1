//! The source tree: what goes into the new volume, built from host
//! directories (`add_dir`), single host files, or memory (`add_file`).
//!
//! Memory: about 56 bytes per entry (the node, its host identity) plus its
//! name (kept once, in one string arena), 4 bytes per entry in its
//! directory's child list, and 40 bytes per host directory; source paths
//! are not stored per file but rebuilt from the directories they were read
//! from. A million files take well under 100 MiB. Open descriptors: at
//! most 64 directories plus one file, whatever the depth (`cursor.rs`).
//!
//! Rules of the walk of a host directory:
//! - every directory is opened relative to its parent's open descriptor and
//!   every file relative to its directory's, never through a symbolic link
//!   (`sys/`: `openat` with `O_NOFOLLOW`; on Windows handles that do not
//!   follow reparse points); the identity (device and inode) of each is
//!   recorded, and the copy reads a file only if it is still that file,
//!   reached the same way: nothing outside the tree is ever read, and a
//!   tree nested deeper than `PATH_MAX` is read like any other;
//! - regular files and directories are added; symbolic links, devices,
//!   FIFOs and sockets are skipped and listed ([`Tree::skipped`]);
//! - a file with several hard links becomes one file per link (FAT and
//!   exFAT have no hard links);
//! - a file or directory that cannot be read is listed in
//!   [`Tree::unreadable`] (the format refuses to start while there is one);
//! - a name that is not valid Unicode is listed in [`Tree::bad_names`] (it
//!   cannot be stored as UTF-16);
//! - the order in which the host lists entries does not matter: every
//!   directory is sorted before the volume is planned.

use mkfs_alloc_layout::Timestamp;
#[cfg(feature = "serde")]
use serde::Serialize;
use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub(crate) mod cursor;
mod host;
mod node;
pub(crate) mod sys;

pub use host::timestamp;
use host::HostDir;
pub(crate) use node::{Node, Src};
use node::{NAME_CHUNK, NAME_CHUNK_BITS};
pub use sys::HostId;

/// Why a tree could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// A source given to [`Tree::add_dir`] or [`Tree::add_host_file`] cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Source {
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A source given to [`Tree::add_dir`] is not a directory (or, to
    /// [`Tree::add_host_file`], not a regular file).
    #[error("{} is not a {expected}", path.display())]
    NotA {
        /// The path.
        path: PathBuf,
        /// "directory" or "regular file".
        expected: &'static str,
    },
    /// A destination path is empty, has an empty, `.` or `..` component, or
    /// passes through a file.
    #[error("invalid destination path {path:?}: {why}")]
    Dest {
        /// The destination path.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// More entries or name bytes than the tree's 32-bit indices hold.
    #[error("too many entries (more than 4 billion, or 4 GiB of names)")]
    TooLarge,
}

/// Why an entry of a host directory was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum SkipKind {
    /// A symbolic link (not followed).
    Symlink,
    /// A block or character device.
    Device,
    /// A FIFO (named pipe).
    Fifo,
    /// A socket.
    Socket,
    /// Anything else that is neither a regular file nor a directory.
    Other,
}

impl SkipKind {
    /// Lower-case noun.
    pub fn name(self) -> &'static str {
        match self {
            SkipKind::Symlink => "symlink",
            SkipKind::Device => "device",
            SkipKind::Fifo => "FIFO",
            SkipKind::Socket => "socket",
            SkipKind::Other => "other",
        }
    }
}

/// An entry of a host directory that was skipped.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Skipped {
    /// Its host path.
    pub path: PathBuf,
    /// What it is.
    pub kind: SkipKind,
}

/// An entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Unreadable {
    /// Its host path.
    pub path: PathBuf,
    /// The operating system's error message.
    pub error: String,
}

/// The files and directories to write, with their sources.
///
/// ```no_run
/// use mkfs_alloc_populate::Tree;
/// use std::time::SystemTime;
///
/// let mut tree = Tree::from_dir("site/")?;                 // like --rootdir site/
/// tree.add_dir("firmware/", "/boot/fw")?;                  // like CopyFiles=/firmware:/boot/fw
/// let cfg = b"timeout 3\n";
/// tree.add_file("/loader/loader.conf", &cfg[..], cfg.len() as u64, SystemTime::UNIX_EPOCH)?;
/// println!("{} files, {} bytes", tree.file_count(), tree.file_bytes());
/// # Ok::<(), mkfs_alloc_populate::TreeError>(())
/// ```
pub struct Tree {
    /// Names, in chunks of [`NAME_CHUNK`] bytes (no reallocation copies,
    /// at most one chunk of slack).
    names: Vec<String>,
    pub(crate) nodes: Vec<Node>,
    /// The identity of each node's host file (the default for the rest).
    pub(crate) file_ids: Vec<HostId>,
    /// Child node indices of each directory (sorted by [`Tree::sort`]).
    pub(crate) children: Vec<Vec<u32>>,
    /// (directory node, name) → child directory node, for merging mappings.
    dir_index: HashMap<(u32, Box<str>), u32>,
    host_dirs: Vec<HostDir>,
    paths: Vec<PathBuf>,
    pub(crate) readers: Vec<Option<Box<dyn Read + Send + Sync>>>,
    skipped: Vec<Skipped>,
    unreadable: Vec<Unreadable>,
    bad_names: Vec<PathBuf>,
    file_count: u64,
    file_bytes: u64,
    sorted: bool,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("files", &self.file_count)
            .field("directories", &self.dir_count())
            .field("bytes", &self.file_bytes)
            .field("skipped", &self.skipped.len())
            .field("unreadable", &self.unreadable.len())
            .finish()
    }
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

impl Tree {
    /// The files whose data is written, in the order the writer writes
    /// them (directories in preorder, each one's files by name; empty
    /// files have none).
    pub(crate) fn file_order(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for d in self.dirs_preorder() {
            for &k in self.kids(d) {
                let n = &self.nodes[k as usize];
                if !n.is_dir() && n.size > 0 {
                    out.push(k);
                }
            }
        }
        out
    }

    /// The same tree without the readers of files given in memory (each
    /// is read once: a copy reads them through a batch's feed).
    pub(crate) fn clone_without_readers(&self) -> Tree {
        Tree {
            names: self.names.clone(),
            nodes: self.nodes.clone(),
            file_ids: self.file_ids.clone(),
            children: self.children.clone(),
            dir_index: self.dir_index.clone(),
            host_dirs: self.host_dirs.clone(),
            paths: self.paths.clone(),
            readers: self.readers.iter().map(|_| None).collect(),
            skipped: self.skipped.clone(),
            unreadable: self.unreadable.clone(),
            bad_names: self.bad_names.clone(),
            file_count: self.file_count,
            file_bytes: self.file_bytes,
            sorted: self.sorted,
        }
    }
}

impl Tree {
    /// An empty tree (only the root directory).
    pub fn new() -> Tree {
        Tree {
            names: Vec::new(),
            nodes: vec![Node::new(0, 0, 0, true, Src::None, 0, Timestamp::default())],
            file_ids: vec![HostId::default()],
            children: vec![Vec::new()],
            dir_index: HashMap::new(),
            host_dirs: Vec::new(),
            paths: Vec::new(),
            readers: Vec::new(),
            skipped: Vec::new(),
            unreadable: Vec::new(),
            bad_names: Vec::new(),
            file_count: 0,
            file_bytes: 0,
            sorted: true,
        }
    }

    /// A tree holding the contents of the host directory `src` at its root
    /// (what `--rootdir src` writes).
    ///
    /// # Errors
    ///
    /// As [`Tree::add_dir`].
    pub fn from_dir(src: impl AsRef<Path>) -> Result<Tree, TreeError> {
        let mut t = Tree::new();
        t.add_dir(src, "/")?;
        Ok(t)
    }

    /// Regular files in the tree.
    pub fn file_count(&self) -> u64 {
        self.file_count
    }

    /// Directories in the tree, the root not included.
    pub fn dir_count(&self) -> u64 {
        self.children.len() as u64 - 1
    }

    /// Bytes of all files.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// Host entries that were skipped (symbolic links, devices, FIFOs, sockets), sorted.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// How many entries of each kind were skipped (kinds with none left out).
    pub fn skipped_counts(&self) -> std::collections::BTreeMap<SkipKind, u64> {
        let mut m = std::collections::BTreeMap::new();
        for s in &self.skipped {
            *m.entry(s.kind).or_insert(0) += 1;
        }
        m
    }

    /// Host entries that could not be read, sorted.
    pub fn unreadable(&self) -> &[Unreadable] {
        &self.unreadable
    }

    /// Host names that are not valid Unicode, sorted.
    pub fn bad_names(&self) -> &[PathBuf] {
        &self.bad_names
    }

    pub(crate) fn name(&self, node: u32) -> &str {
        let n = &self.nodes[node as usize];
        self.arena(n.name_off, n.name_len)
    }

    fn arena(&self, off: u32, len: u16) -> &str {
        let chunk = &self.names[(off >> NAME_CHUNK_BITS) as usize];
        let at = (off & ((1 << NAME_CHUNK_BITS) - 1)) as usize;
        &chunk[at..at + usize::from(len)]
    }

    fn push_name(&mut self, name: &str) -> Result<(u32, u16), TreeError> {
        let len = u16::try_from(name.len()).map_err(|_| TreeError::TooLarge)?;
        let full = self
            .names
            .last()
            .is_none_or(|c| c.len() + name.len() > NAME_CHUNK);
        if full {
            if self.names.len() >= 1 << (32 - NAME_CHUNK_BITS) {
                return Err(TreeError::TooLarge);
            }
            self.names.push(String::with_capacity(NAME_CHUNK));
        }
        let idx = self.names.len() - 1;
        let chunk = &mut self.names[idx];
        let off = ((idx as u32) << NAME_CHUNK_BITS) | chunk.len() as u32;
        chunk.push_str(name);
        Ok((off, len))
    }

    fn push_node(
        &mut self,
        parent: u32,
        name: &str,
        is_dir: bool,
        src: Src,
        size: u64,
        mtime: Timestamp,
    ) -> Result<u32, TreeError> {
        let id = u32::try_from(self.nodes.len()).map_err(|_| TreeError::TooLarge)?;
        let (name_off, name_len) = self.push_name(name)?;
        let size = if is_dir {
            self.children.push(Vec::new());
            (self.children.len() - 1) as u64
        } else {
            self.file_count += 1;
            self.file_bytes = self.file_bytes.saturating_add(size);
            size
        };
        self.nodes.push(Node::new(
            parent, name_off, name_len, is_dir, src, size, mtime,
        ));
        self.file_ids.push(HostId::default());
        let dir = self.nodes[parent as usize].children_index();
        self.children[dir].push(id);
        if is_dir {
            self.dir_index.insert((parent, name.into()), id);
        }
        self.sorted = false;
        Ok(id)
    }

    /// The directory node for a destination directory path, created (with
    /// `mtime`) where missing.
    fn dest_dir(&mut self, dest: &str, mtime: Timestamp) -> Result<u32, TreeError> {
        let mut at = 0u32;
        for comp in dest.split('/').filter(|c| !c.is_empty()) {
            if comp == "." || comp == ".." {
                return Err(TreeError::Dest {
                    path: dest.to_string(),
                    why: "`.` and `..` components are not allowed",
                });
            }
            at = match self.dir_index.get(&(at, comp.into())) {
                Some(&d) => d,
                None => self.push_node(at, comp, true, Src::None, 0, mtime)?,
            };
        }
        Ok(at)
    }

    /// Splits a destination file path into its directory and its name.
    fn split_dest(dest: &str) -> Result<(&str, &str), TreeError> {
        let trimmed = dest.trim_end_matches('/');
        let (dir, name) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
        if name.is_empty() || name == "." || name == ".." || trimmed.len() != dest.len() {
            return Err(TreeError::Dest {
                path: dest.to_string(),
                why: "a file path must end in a file name",
            });
        }
        Ok((dir, name))
    }

    /// Adds a file whose `len` bytes come from `reader`, at `dest` (a path
    /// like `/dir/name`, `/` separated; missing directories are created).
    /// The reader must yield exactly `len` bytes, or the format fails; it is
    /// `Sync` so that a plan holding the tree can be shared between threads.
    ///
    /// # Errors
    ///
    /// [`TreeError::Dest`] for an invalid destination (or one whose directory
    /// is a file), [`TreeError::TooLarge`] beyond 4 billion entries.
    pub fn add_file(
        &mut self,
        dest: &str,
        reader: impl Read + Send + Sync + 'static,
        len: u64,
        mtime: SystemTime,
    ) -> Result<(), TreeError> {
        let (dir, name) = Self::split_dest(dest)?;
        let mtime = timestamp(mtime);
        let parent = self.dest_dir(dir, mtime)?;
        let idx = u32::try_from(self.readers.len()).map_err(|_| TreeError::TooLarge)?;
        self.readers.push(Some(Box::new(reader)));
        self.push_node(parent, name, false, Src::Memory(idx), len, mtime)?;
        Ok(())
    }

    /// Adds the host file `src` at `dest` (genimage's `file foo { image = "bar" }`).
    /// `src` is followed if it is a symbolic link; the copy reads the same
    /// file (its identity is recorded) or fails.
    ///
    /// # Errors
    ///
    /// [`TreeError::Source`] when `src` cannot be read, [`TreeError::NotA`]
    /// when it is no regular file, and [`Tree::add_file`]'s.
    pub fn add_host_file(&mut self, src: impl AsRef<Path>, dest: &str) -> Result<(), TreeError> {
        let src = src.as_ref();
        let source = |source| TreeError::Source {
            path: src.to_path_buf(),
            source,
        };
        let m = fs::metadata(src).map_err(source)?;
        if !m.is_file() {
            return Err(TreeError::NotA {
                path: src.to_path_buf(),
                expected: "regular file",
            });
        }
        let facts = fs::File::open(src)
            .and_then(|f| sys::file_facts(&f))
            .map_err(source)?;
        let (dir, name) = Self::split_dest(dest)?;
        let parent = self.dest_dir(dir, facts.mtime)?;
        let idx = u32::try_from(self.paths.len()).map_err(|_| TreeError::TooLarge)?;
        self.paths.push(src.to_path_buf());
        self.push_host_file(parent, name, Src::HostPath(idx), &facts)
    }

    /// Creates the directory `dest` (and its missing parents) with `mtime`.
    ///
    /// # Errors
    ///
    /// As [`Tree::add_file`].
    pub fn add_empty_dir(&mut self, dest: &str, mtime: SystemTime) -> Result<(), TreeError> {
        self.dest_dir(dest, timestamp(mtime))?;
        Ok(())
    }

    /// The path of a node in the volume, `/` separated, starting with `/`.
    pub fn dest_path(&self, node: u32) -> String {
        let mut parts = Vec::new();
        let mut at = node;
        while at != 0 {
            parts.push(self.name(at));
            at = self.nodes[at as usize].parent;
        }
        let mut s = String::new();
        for p in parts.iter().rev() {
            s.push('/');
            s.push_str(p);
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    }

    /// How to name a node in a message: its host path, or its volume path.
    pub(crate) fn display_path(&self, node: u32) -> String {
        match self.source_path(node) {
            Some(p) => p.display().to_string(),
            None => self.dest_path(node),
        }
    }

    /// Sorts every directory by name (byte order of the UTF-8 names, which
    /// is code-point order): the order entries are written and clusters
    /// allocated, whatever order the host listed them in.
    pub fn sort(&mut self) {
        if self.sorted {
            return;
        }
        let mut children = std::mem::take(&mut self.children);
        for list in &mut children {
            list.sort_unstable_by(|&a, &b| self.name(a).cmp(self.name(b)));
        }
        self.children = children;
        self.sorted = true;
    }

    /// The children of directory node `dir`, sorted once [`Tree::sort`] ran.
    pub(crate) fn kids(&self, dir: u32) -> &[u32] {
        &self.children[self.nodes[dir as usize].children_index()]
    }

    /// Every directory node, the root first, in depth-first pre-order of the
    /// sorted tree.
    pub(crate) fn dirs_preorder(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.children.len());
        let mut stack = vec![0u32];
        while let Some(d) = stack.pop() {
            out.push(d);
            for &c in self.kids(d).iter().rev() {
                if self.nodes[c as usize].is_dir() {
                    stack.push(c);
                }
            }
        }
        out
    }
}
