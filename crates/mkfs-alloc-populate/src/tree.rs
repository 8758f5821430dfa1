//! The source tree: what goes into the new volume, built from host
//! directories (`add_dir`), single host files, or memory (`add_file`).
//!
//! Memory: about 40 bytes per entry plus its name (kept once, in one
//! string arena), and 4 bytes per entry in its directory's child list;
//! source paths are not stored per file but rebuilt from the directories
//! they were read from. A million files take well under 100 MiB.
//!
//! Rules of the walk of a host directory:
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
use serde::Serialize;
use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Skipped {
    /// Its host path.
    pub path: PathBuf,
    /// What it is.
    pub kind: SkipKind,
}

/// An entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Unreadable {
    /// Its host path.
    pub path: PathBuf,
    /// The operating system's error message.
    pub error: String,
}

/// Where a file's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// A directory created by a destination path (no source).
    None,
    /// A host file or directory: `host_path(hd).join(name)`, or for a
    /// directory read from the host, `host_path(hd)` itself.
    HostDir(u32),
    /// A host file given by path: `paths[i]`.
    HostPath(u32),
    /// A reader given to [`Tree::add_file`]: `readers[i]`.
    Memory(u32),
}

/// log2 of the name arena's chunk size.
const NAME_CHUNK_BITS: u32 = 20;
/// Bytes per chunk of the name arena (1 MiB; 4096 chunks at most).
const NAME_CHUNK: usize = 1 << NAME_CHUNK_BITS;

/// One file or directory of the tree: 32 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub(crate) parent: u32,
    pub(crate) name_off: u32,
    /// Set by the planner: first cluster (0 for empty files).
    pub(crate) first_cluster: u32,
    /// Seconds since 1980-01-01 (the mtime clamped to what FAT and exFAT store).
    mtime_secs: u32,
    src_idx: u32,
    /// Files: length in bytes. Directories: index into `Tree::children` (low
    /// 32 bits) and, once planned, clusters (high 32 bits).
    pub(crate) size: u64,
    pub(crate) name_len: u16,
    /// Bit 0: directory; bits 1-2: source kind.
    flags: u8,
    /// Hundredths of a second of the mtime.
    centis: u8,
}

const _: () = assert!(std::mem::size_of::<Node>() == 32);

impl Node {
    fn new(
        parent: u32,
        name_off: u32,
        name_len: u16,
        is_dir: bool,
        src: Src,
        size: u64,
        mtime: Timestamp,
    ) -> Node {
        let secs = mtime
            .secs
            .clamp(crate::time::MIN_SECS, crate::time::MAX_SECS)
            - crate::time::MIN_SECS;
        let centis = if mtime.secs < crate::time::MIN_SECS || mtime.secs > crate::time::MAX_SECS {
            0
        } else {
            (mtime.nanos.min(999_999_999) / 10_000_000) as u8
        };
        let mut n = Node {
            parent,
            name_off,
            first_cluster: 0,
            mtime_secs: secs as u32,
            src_idx: 0,
            size,
            name_len,
            flags: u8::from(is_dir),
            centis,
        };
        n.set_src(src);
        n
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.flags & 1 != 0
    }

    pub(crate) fn src(&self) -> Src {
        match (self.flags >> 1) & 3 {
            1 => Src::HostDir(self.src_idx),
            2 => Src::HostPath(self.src_idx),
            3 => Src::Memory(self.src_idx),
            _ => Src::None,
        }
    }

    pub(crate) fn set_src(&mut self, src: Src) {
        let (kind, idx) = match src {
            Src::None => (0, 0),
            Src::HostDir(i) => (1, i),
            Src::HostPath(i) => (2, i),
            Src::Memory(i) => (3, i),
        };
        self.flags = (self.flags & 1) | (kind << 1);
        self.src_idx = idx;
    }

    /// The stored mtime (already within FAT's and exFAT's range).
    pub(crate) fn mtime(&self) -> Timestamp {
        Timestamp {
            secs: i64::from(self.mtime_secs) + crate::time::MIN_SECS,
            nanos: u32::from(self.centis) * 10_000_000,
        }
    }

    pub(crate) fn set_mtime(&mut self, t: Timestamp) {
        let n = Node::new(0, 0, 0, false, Src::None, 0, t);
        self.mtime_secs = n.mtime_secs;
        self.centis = n.centis;
    }

    fn children_index(&self) -> usize {
        (self.size & 0xFFFF_FFFF) as usize
    }

    /// Clusters of a planned directory.
    pub(crate) fn dir_clusters(&self) -> u32 {
        (self.size >> 32) as u32
    }

    pub(crate) fn set_dir_clusters(&mut self, n: u32) {
        self.size = (self.size & 0xFFFF_FFFF) | (u64::from(n) << 32);
    }
}

/// A host directory the tree read from, to rebuild source paths.
#[derive(Debug, Clone, Copy)]
struct HostDir {
    /// Parent host directory, or `u32::MAX` when `name_off` indexes `paths`.
    parent: u32,
    name_off: u32,
    name_len: u16,
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
    /// Child node indices of each directory (sorted by [`Tree::sort`]).
    pub(crate) children: Vec<Vec<u32>>,
    /// (directory node, name) → child directory node, for merging mappings.
    dir_index: HashMap<(u32, Box<str>), u32>,
    host_dirs: Vec<HostDir>,
    paths: Vec<PathBuf>,
    pub(crate) readers: Vec<Option<Box<dyn Read + Send>>>,
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

fn mtime_of(m: &fs::Metadata) -> Timestamp {
    m.modified().map(timestamp).unwrap_or_default()
}

fn skip_kind(ft: &fs::FileType) -> SkipKind {
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
    /// An empty tree (only the root directory).
    pub fn new() -> Tree {
        Tree {
            names: Vec::new(),
            nodes: vec![Node::new(0, 0, 0, true, Src::None, 0, Timestamp::default())],
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
    /// The reader must yield exactly `len` bytes, or the format fails.
    pub fn add_file(
        &mut self,
        dest: &str,
        reader: impl Read + Send + 'static,
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
    pub fn add_host_file(&mut self, src: impl AsRef<Path>, dest: &str) -> Result<(), TreeError> {
        let src = src.as_ref();
        let m = fs::metadata(src).map_err(|source| TreeError::Source {
            path: src.to_path_buf(),
            source,
        })?;
        if !m.is_file() {
            return Err(TreeError::NotA {
                path: src.to_path_buf(),
                expected: "regular file",
            });
        }
        if let Err(e) = fs::File::open(src) {
            return Err(TreeError::Source {
                path: src.to_path_buf(),
                source: e,
            });
        }
        let (dir, name) = Self::split_dest(dest)?;
        let mtime = mtime_of(&m);
        let parent = self.dest_dir(dir, mtime)?;
        let idx = u32::try_from(self.paths.len()).map_err(|_| TreeError::TooLarge)?;
        self.paths.push(src.to_path_buf());
        self.push_node(parent, name, false, Src::HostPath(idx), m.len(), mtime)?;
        Ok(())
    }

    /// Creates the directory `dest` (and its missing parents) with `mtime`.
    pub fn add_empty_dir(&mut self, dest: &str, mtime: SystemTime) -> Result<(), TreeError> {
        self.dest_dir(dest, timestamp(mtime))?;
        Ok(())
    }

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
