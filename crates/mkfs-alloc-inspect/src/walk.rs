//! What the inspections of both file systems (FAT, exFAT) share: the
//! geometry they report, the directory parsers' trait ([`DirParser`]), the
//! scan of one directory ([`scan_dir`], the root's label and system
//! entries), shared directory paths and the small helpers. The one walk of
//! the whole tree is the model's ([`crate::model`]).

use std::rc::Rc;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::{FsKind, Medium};

use crate::chain::{ChainReader, Fat, Geo, Source};
use crate::error::{ChainProblem, InspectError};
use crate::io::Reader;
use crate::report::{alignment_of, Volume};

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
    // A medium the planner refuses (its sector size, a start off its
    // sectors) takes no cluster size.
    let Ok(medium) = Medium::partition(fs_bytes, sector_size, start) else {
        return Vec::new();
    };
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
        }
    };
}
pub(crate) use impl_dir_parser;

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
