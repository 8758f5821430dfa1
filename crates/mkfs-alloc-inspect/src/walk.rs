//! What the inspections of both file systems (FAT, exFAT) share: the
//! geometry they report, the directory walk (a stack of pending directories,
//! read once each within the budgets), the statistics, the limits, the
//! warnings, and the per-file chain check. Each file system supplies its
//! parser ([`DirParser`]) and what its entries mean ([`DirFormat`]).

use std::collections::HashSet;
use std::rc::Rc;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::waste::waste_bytes;
use mkfs_alloc_layout::{FsKind, Medium};

use crate::chain::{file_fragments, ChainReader, Fat, Geo, Source};
use crate::error::{ChainProblem, InspectError};
use crate::io::Reader;
use crate::report::{alignment_of, AtClusterSize, FileEntry, FileStats, Volume};
use crate::{InspectOptions, Limits};

mod walker;
pub(crate) use walker::Walker;

/// Where a FAT or exFAT volume keeps its FAT (the one read) and its data.
pub(crate) struct FatRegions {
    /// Bytes of the file system.
    pub(crate) fs_bytes: u64,
    /// Bytes per sector.
    pub(crate) sector_size: u32,
    /// Absolute byte offset of the FAT reported.
    pub(crate) fat_offset: u64,
    /// Bytes of one FAT.
    pub(crate) fat_bytes: u64,
    /// Number of FATs.
    pub(crate) fat_count: u32,
}

/// Records the geometry of a FAT or exFAT volume in `vol`.
pub(crate) fn set_geometry(vol: &mut Volume, g: &FatRegions, geo: &Geo) {
    vol.fs_bytes = Some(g.fs_bytes);
    vol.sector_size = Some(g.sector_size);
    vol.cluster_size = Some(geo.cluster_size);
    vol.cluster_count = Some(u64::from(geo.cluster_count));
    vol.fat_offset = Some(g.fat_offset);
    vol.fat_bytes = Some(g.fat_bytes);
    vol.fat_count = Some(g.fat_count);
    vol.data_offset = Some(geo.data_offset);
    vol.alignment.fat = Some(alignment_of(g.fat_offset));
    vol.alignment.data = Some(alignment_of(geo.data_offset));
}

/// An error when a file system of `fs_bytes` does not fit in `vol`.
pub(crate) fn check_fits(
    vol: &Volume,
    what: &'static str,
    fs_bytes: u64,
) -> Result<(), InspectError> {
    if fs_bytes > vol.size {
        return Err(InspectError::Truncated {
            what,
            offset: vol.start,
            end: vol.start.saturating_add(fs_bytes),
            size: vol.start + vol.size,
        });
    }
    Ok(())
}

/// The cluster sizes the planner accepts for `fs` on a volume of `fs_bytes`
/// with `sector_size`-byte sectors at byte `start` of the medium.
pub(crate) fn planner_cluster_sizes(
    fs: FsKind,
    fs_bytes: u64,
    sector_size: u32,
    start: u64,
) -> Vec<u64> {
    let medium = Medium::partition(fs_bytes, sector_size, start);
    mkfs_alloc_layout::valid_cluster_sizes(
        fs,
        &medium,
        mkfs_alloc_layout::plan::default_align(fs_bytes, sector_size),
    )
    .to_vec()
}

/// A streaming directory parser, fed whole 32-byte entries in any pieces.
pub(crate) trait DirParser {
    /// What it finds.
    type Item;
    /// Parses whole entries of `bytes`; nothing after the end.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Self::Item>);
    /// True after the end-of-directory entry.
    fn ended(&self) -> bool;
    /// Entries seen before the end.
    fn entries(&self) -> u64;
}

/// How the bytes a directory takes are counted once it has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allocation {
    /// The clusters of its whole chain.
    Chain,
    /// Its declared size, rounded up to whole clusters.
    Declared,
    /// Not counted (the fixed FAT12/16 root directory).
    Uncounted,
}

/// A directory waiting to be read.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) src: Source,
    /// The most bytes it may hold: its recorded size, or the format's limit.
    pub(crate) declared: u64,
    pub(crate) allocation: Allocation,
    pub(crate) path: DirPath,
    pub(crate) depth: u32,
}

/// A directory's path as its name and its parent's path, shared: a
/// directory waiting to be read costs its own name, whatever its depth
/// (a full path string each would cost the depth squared down a deep
/// tree).
#[derive(Clone, Default)]
pub(crate) struct DirPath(Option<Rc<(DirPath, String)>>);

impl DirPath {
    /// The path of the subdirectory `name`.
    pub(crate) fn child(&self, name: &str) -> DirPath {
        DirPath(Some(Rc::new((self.clone(), name.to_string()))))
    }

    /// `/a/b`; the root is empty (see [`display_path`]).
    pub(crate) fn text(&self) -> String {
        let mut names = Vec::new();
        let mut at = self;
        while let Some(node) = &at.0 {
            names.push(node.1.as_str());
            at = &node.0;
        }
        let mut s = String::new();
        for n in names.iter().rev() {
            s.push('/');
            s.push_str(n);
        }
        s
    }
}

impl std::fmt::Debug for DirPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.text())
    }
}

impl Drop for DirPath {
    /// Frees a chain of parents no one else holds one by one (the default
    /// drop recurses once per level).
    fn drop(&mut self) {
        let mut next = self.0.take();
        while let Some(node) = next {
            match Rc::try_unwrap(node) {
                Ok((mut parent, _)) => next = parent.0.take(),
                Err(_) => break,
            }
        }
    }
}

impl Pending {
    /// The root directory.
    pub(crate) fn root(src: Source, declared: u64, allocation: Allocation) -> Self {
        Pending {
            src,
            declared,
            allocation,
            path: DirPath::default(),
            depth: 0,
        }
    }
}

/// The public `ended`, `entries` and `feed` of a directory parser type with
/// the fields `ended` and `entries` and a method `push(&mut self, entry,
/// out)` that parses one 32-byte entry; and its [`DirParser`] impl.
macro_rules! impl_dir_parser {
    ($parser:ty, $item:ty) => {
        impl $parser {
            /// True after the end-of-directory entry.
            pub fn ended(&self) -> bool {
                self.ended
            }

            /// Entries seen before the end-of-directory entry.
            pub fn entries(&self) -> u64 {
                self.entries
            }

            /// Parses whole entries of `bytes` (a trailing partial entry is
            /// ignored); nothing after the end-of-directory entry.
            pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<$item>) {
                for e in bytes.chunks_exact(32) {
                    if self.ended {
                        return;
                    }
                    self.push(e, out);
                }
            }
        }

        impl $crate::walk::DirParser for $parser {
            type Item = $item;
            fn feed(&mut self, bytes: &[u8], out: &mut Vec<$item>) {
                <$parser>::feed(self, bytes, out);
            }
            fn ended(&self) -> bool {
                self.ended
            }
            fn entries(&self) -> u64 {
                self.entries
            }
        }
    };
}
pub(crate) use impl_dir_parser;

/// What a [`DirFormat`] makes of one directory item.
pub(crate) enum Found {
    /// Nothing for the walk (labels, system entries, `.` and `..`).
    Nothing,
    /// A file: its name, size, first cluster and whether its clusters are
    /// contiguous (no FAT chain).
    File {
        name: String,
        size: u64,
        first: u32,
        contiguous: bool,
    },
    /// A subdirectory named `name`: where it is, its most bytes
    /// ([`Pending::declared`]) and how its bytes count, or why it cannot be
    /// read (a damage, "PATH: WHY; not read").
    Dir {
        name: String,
        at: Result<(Source, u64, Allocation), String>,
    },
}

/// One file system's side of [`walk`].
pub(crate) trait DirFormat {
    /// Its directory parser.
    type Parser: DirParser;
    /// A parser at the start of a directory.
    fn parser(&self) -> Self::Parser;
    /// What one item of `dir` is (damaged items are recorded in `w`).
    fn item(
        &self,
        geo: &Geo,
        w: &mut Walker<'_>,
        dir: &Pending,
        item: <Self::Parser as DirParser>::Item,
    ) -> Found;
    /// Called once `dir` has been read without chain damage.
    fn read(&self, _w: &mut Walker<'_>, _dir: &Pending, _parser: &Self::Parser) {}
}

/// What every read of a volume's directories and chains goes through: the
/// reader of the medium, the FAT (with its cache) and the geometry.
pub(crate) struct Disk<'a, 'r, D: BlockIo + ?Sized> {
    /// The medium.
    pub(crate) r: &'a mut Reader<'r, D>,
    /// The active FAT.
    pub(crate) fat: &'a mut Fat,
    /// Where the clusters are.
    pub(crate) geo: &'a Geo,
}

/// Records a file of `dir` in `w`, or queues a subdirectory on `stack`
/// (after [`Walker::may_descend`]).
fn handle<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    w: &mut Walker<'_>,
    dir: &Pending,
    path: &str,
    found: Found,
    stack: &mut Vec<Pending>,
) -> Result<(), InspectError> {
    match found {
        Found::Nothing => {}
        Found::File {
            name,
            size,
            first,
            contiguous,
        } => {
            w.add_file(d, &|| join(path, &name), size, first, contiguous)?;
        }
        Found::Dir { name, at } => {
            let child = join(path, &name);
            if !w.may_descend(&child, dir.depth + 1, stack.len()) {
                return Ok(());
            }
            match at.and_then(|(src, declared, allocation)| {
                check_dir_extent(d.geo, src, declared, allocation)?;
                Ok((src, declared, allocation))
            }) {
                Ok((src, declared, allocation)) => stack.push(Pending {
                    src,
                    declared,
                    allocation,
                    path: dir.path.child(&name),
                    depth: dir.depth + 1,
                }),
                Err(why) => w.unread_dir(&child, &why),
            }
        }
    }
    Ok(())
}

/// Walks the directory tree from `root`, depth first, every directory
/// within [`Limits::max_dir_bytes`] and the walk's read budget.
pub(crate) fn walk<D: BlockIo + ?Sized, F: DirFormat>(
    d: &mut Disk<'_, '_, D>,
    format: &F,
    root: Pending,
    w: &mut Walker<'_>,
) -> Result<(), InspectError> {
    let geo = d.geo;
    let mut stack = vec![root];
    let mut items = Vec::new();
    while let Some(dir) = stack.pop() {
        if w.stopped() {
            break;
        }
        let declared = dir.declared;
        let path = dir.path.text();
        let limit = declared.min(w.limits.max_dir_bytes).min(w.dir_budget);
        if limit == 0 && declared > 0 {
            w.incomplete(format!(
                "{}: not read: the directory read budget is exhausted",
                display_path(&path)
            ));
            continue;
        }
        let mut reader = ChainReader::new(dir.src, limit);
        let mut parser = format.parser();
        let what = || format!("directory {}", display_path(&path));
        let mut result = Ok(());
        loop {
            let piece = match reader.next_piece(d.r, d.fat, geo, Some(&mut w.dir_clusters), &what) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            items.clear();
            parser.feed(piece, &mut items);
            for item in items.drain(..) {
                let found = format.item(geo, w, &dir, item);
                handle(d, w, &dir, &path, found, &mut stack)?;
            }
            if parser.ended() || w.stopped() {
                break;
            }
        }
        w.dir_budget = w.dir_budget.saturating_sub(reader.bytes_read());
        if let Err(e) = result {
            if let InspectError::Chain { .. } = e {
                w.broken_dir(&path, &e);
                continue;
            }
            return Err(e);
        }
        if !parser.ended() && reader.bytes_read() >= limit && limit < declared {
            w.incomplete(format!(
                "{}: only the first {limit} bytes were read (limit)",
                display_path(&path)
            ));
        }
        format.read(w, &dir, &parser);
        let clusters = match (dir.allocation, dir.src) {
            (Allocation::Chain, _) => chain_clusters(d, w, &mut reader, &path, None)?,
            (Allocation::Declared, Source::Chain(_)) => {
                let expected = declared.div_ceil(geo.cluster_size);
                chain_clusters(d, w, &mut reader, &path, Some(expected))?
            }
            (Allocation::Declared, _) => declared.div_ceil(geo.cluster_size),
            (Allocation::Uncounted, _) => continue,
        };
        let allocated = clusters.saturating_mul(geo.cluster_size);
        w.add_dir(parser.entries() * 32, allocated, dir.depth == 0);
    }
    Ok(())
}

/// The clusters of a directory's FAT chain (the ones `reader` entered and
/// the rest), checked against the `expected` count its recorded length
/// needs; damage is recorded in `w`, and then the clusters counted are
/// those entered.
fn chain_clusters<D: BlockIo + ?Sized>(
    d: &mut Disk<'_, '_, D>,
    w: &mut Walker<'_>,
    reader: &mut ChainReader,
    path: &str,
    expected: Option<u64>,
) -> Result<u64, InspectError> {
    let problem = match (reader.count_rest(d.r, d.fat)?, expected) {
        (Err(p), _) => p,
        (Ok(n), Some(e)) if n < e => ChainProblem::Short {
            clusters: n,
            expected: e,
        },
        (Ok(n), Some(e)) if n > e => ChainProblem::TooLong { limit: e },
        (Ok(n), _) => return Ok(n),
    };
    w.damaged(format!("{}: {problem}", display_path(path)));
    Ok(reader.clusters())
}

/// Why the clusters an entry of `size` bytes from `first` claims cannot be
/// where it says, before any of them is read.
pub(crate) enum BadExtent {
    /// More clusters than the volume has: the length itself is impossible,
    /// and is not counted.
    TooLong(String),
    /// A first cluster out of range, or contiguous clusters past the last.
    Misplaced(String),
}

impl BadExtent {
    /// The reason, for messages.
    pub(crate) fn why(&self) -> &str {
        match self {
            BadExtent::TooLong(w) | BadExtent::Misplaced(w) => w,
        }
    }
}

/// The clusters `size` bytes take from `first` (contiguous or along the
/// FAT), or why the volume cannot hold them there. The one rule for the
/// lengths of files and directories. `size` is not 0.
pub(crate) fn check_extent(
    geo: &Geo,
    size: u64,
    first: u32,
    contiguous: bool,
) -> Result<u64, BadExtent> {
    let clusters = size.div_ceil(geo.cluster_size);
    let max = geo.max_cluster();
    if clusters > u64::from(geo.cluster_count) {
        return Err(BadExtent::TooLong(format!(
            "{size} bytes need {clusters} clusters but the volume has {}",
            geo.cluster_count
        )));
    }
    if !geo.valid(first) {
        return Err(BadExtent::Misplaced(format!(
            "{size} bytes but first cluster {first} is not valid (2..={max})"
        )));
    }
    let last = u64::from(first) + clusters - 1;
    if contiguous && last > u64::from(max) {
        return Err(BadExtent::Misplaced(format!(
            "contiguous clusters {first}..={last} run past the last cluster {max}"
        )));
    }
    Ok(clusters)
}

/// [`check_extent`] for a directory whose recorded length is its size
/// ([`Allocation::Declared`]); others are bounded by their chain.
fn check_dir_extent(
    geo: &Geo,
    src: Source,
    declared: u64,
    allocation: Allocation,
) -> Result<(), String> {
    let (first, contiguous) = match src {
        Source::Chain(f) => (f, false),
        Source::Contiguous(f) => (f, true),
        Source::Fixed(_) => return Ok(()),
    };
    if allocation != Allocation::Declared || declared == 0 {
        return Ok(());
    }
    check_extent(geo, declared, first, contiguous)
        .map(drop)
        .map_err(|e| e.why().to_string())
}

/// Reads the directory at `src` (at most `limit` bytes, outside the walk's
/// budgets: the root, for its label and system entries) and hands its items
/// to `each` until the end-of-directory entry, or until `each` returns true
/// (the rest of that piece is still handed out).
pub(crate) fn scan_dir<D: BlockIo + ?Sized, P: DirParser>(
    d: &mut Disk<'_, '_, D>,
    src: Source,
    limit: u64,
    parser: &mut P,
    mut each: impl FnMut(P::Item) -> bool,
) -> Result<(), InspectError> {
    let mut reader = ChainReader::new(src, limit);
    let mut items = Vec::new();
    while let Some(piece) =
        reader.next_piece(d.r, d.fat, d.geo, None, &|| "root directory".to_string())?
    {
        items.clear();
        parser.feed(piece, &mut items);
        let mut stop = false;
        for item in items.drain(..) {
            stop |= each(item);
        }
        if parser.ended() || stop {
            break;
        }
    }
    Ok(())
}

/// `path` for messages: the root is `/`.
pub(crate) fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

/// Joins a directory path and a name.
pub(crate) fn join(dir: &str, name: &str) -> String {
    let mut s = String::with_capacity(dir.len() + 1 + name.len());
    s.push_str(dir);
    s.push('/');
    s.push_str(name);
    s
}

/// `v` rounded up to a multiple of `to` (a power of two), saturating.
pub(crate) fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to).saturating_mul(to)
}

/// Every power of two from `min` to `max`.
pub(crate) fn powers(min: u64, max: u64) -> Vec<u64> {
    std::iter::successors(Some(min.max(1)), |&c| c.checked_mul(2))
        .take_while(|&c| c <= max)
        .collect()
}

/// Turns a broken chain into an error naming its owner.
pub(crate) fn chain_error(what: &str, problem: ChainProblem) -> InspectError {
    InspectError::Chain {
        what: what.to_string(),
        problem,
    }
}
