//! Checking a [`Tree`] against a planned volume and allocating its clusters.
//!
//! Everything is decided here, before the first write: every name the
//! volume cannot store and every file too large for it (all of them, not
//! the first), the space it needs (the `advise` footprint model: the same
//! code), and one cluster run per file and directory:
//!
//! ```text
//!  root directory (the format's cluster(s), then its growth)
//!  for each directory in depth-first pre-order of the sorted tree:
//!      the directory's clusters (the root's are above)
//!      the data of its files, in sorted order, each file contiguous
//! ```
//!
//! On exFAT every file and subdirectory is contiguous and marked NoFatChain
//! (its FAT entries stay 0); the root keeps a FAT chain. On FAT32 each run
//! gets its chain.

use crate::names::{lone_surrogate, upcased_units, MAX_NAME_UNITS};
use crate::time::TimePolicy;
use crate::tree::{Tree, Unreadable};
use mkfs_alloc_advise::model::{
    dir_clusters, footprint_for, root_overflow, RootDir, FAT32_MAX_DIR_ENTRIES,
};
use mkfs_alloc_advise::{DirRecord, Footprint, ScanResult};
use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::units::format_size;
use mkfs_alloc_layout::{FsKind, Layout};
use mkfs_alloc_ondisk::name::{str_fault, NameFault};
#[cfg(feature = "serde")]
use serde::Serialize;
use std::ffi::OsStr;

/// Largest exFAT directory: 256 MiB (spec §6.2.1).
pub const EXFAT_MAX_DIR_BYTES: u64 = 256 << 20;

/// Why a name or file cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case", tag = "reason"))]
pub enum Problem {
    /// The name holds a character the file system cannot store (a control
    /// character or one of `" * / : < > ? \ |`).
    Character {
        /// The character.
        ch: char,
    },
    /// The name holds a Unicode noncharacter (U+FDD0..U+FDEF, U+xFFFE,
    /// U+xFFFF), which readers show differently.
    Noncharacter {
        /// The character.
        ch: char,
    },
    /// The host name holds a UTF-16 surrogate without its partner (not
    /// Unicode).
    UnpairedSurrogate {
        /// The surrogate code unit.
        unit: u16,
    },
    /// A FAT long name ends in a dot or a space (Windows strips them).
    TrailingDotOrSpace,
    /// More than 255 UTF-16 code units.
    TooLong {
        /// UTF-16 code units.
        units: usize,
    },
    /// Two names of one directory are equal after up-casing.
    SameAfterUpcase {
        /// The other name.
        other: String,
    },
    /// Two sources were given the same destination path.
    Duplicate,
    /// A file larger than FAT's 4 GiB - 1 (FAT12, FAT16 and FAT32 alike).
    TooLarge {
        /// Its size.
        size: u64,
        /// The FAT width of the volume.
        fs: FsKind,
    },
    /// A directory with more entries than the file system allows.
    DirectoryTooLarge {
        /// 32-byte entries it would need.
        entries: u64,
    },
    /// The host name is not valid Unicode.
    NotUnicode,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Character { ch } => write!(f, "contains {ch:?}, which FAT and exFAT cannot store (\" * / : < > ? \\ | and control characters)"),
            Problem::Noncharacter { ch } => write!(f, "contains U+{:04X}, a Unicode noncharacter, which readers show differently (0xFFFF is also the padding of FAT long names)", u32::from(*ch)),
            Problem::UnpairedSurrogate { unit } => write!(f, "contains the unpaired surrogate 0x{unit:04X}, which is not Unicode, so readers cannot agree on the name"),
            Problem::TrailingDotOrSpace => f.write_str("ends in a dot or a space, which FAT long names cannot store"),
            Problem::TooLong { units } => write!(f, "is {units} UTF-16 units long; the limit is 255"),
            Problem::SameAfterUpcase { other } => write!(f, "equals {other:?} once up-cased; one directory cannot hold both"),
            Problem::Duplicate => f.write_str("is given twice"),
            Problem::TooLarge { size, fs } => write!(f, "is {} ({size} bytes); {fs} stores at most 4 GiB - 1 (4294967295 bytes): use exFAT", format_size(*size)),
            Problem::DirectoryTooLarge { entries } => write!(f, "needs {entries} directory entries, more than the file system allows"),
            Problem::NotUnicode => f.write_str("is not valid Unicode, so it cannot be stored as UTF-16"),
        }
    }
}

/// One offending path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct NameProblem {
    /// The host path (or, for files from memory, the path in the volume).
    pub path: String,
    /// What is wrong.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub problem: Problem,
}

/// Why a tree cannot be written into a volume. Nothing has been written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PopulateError {
    /// Names or files the file system cannot store (every one of them).
    #[error("{} cannot be stored on {fs}:{}", plural(problems.len(), "path", "paths"), list(problems.iter().map(|p| format!("{}: {}", p.path, p.problem))))]
    Names {
        /// The file system.
        fs: FsKind,
        /// Every offending path.
        problems: Vec<NameProblem>,
    },
    /// Source entries that cannot be read (every one of them).
    #[error("{} cannot be read:{}", plural(entries.len(), "source entry", "source entries"), list(entries.iter().map(|u| format!("{}: {}", u.path.display(), u.error))))]
    Unreadable {
        /// The entries.
        entries: Vec<Unreadable>,
    },
    /// The tree does not fit.
    #[error("the files need {} ({need_clusters} clusters of {}) but the volume has {} free ({free_clusters} clusters): {} short", format_size(need_clusters * cluster), format_size(*cluster), format_size(free_clusters * cluster), format_size((need_clusters - free_clusters) * cluster))]
    DoesNotFit {
        /// Cluster size in bytes.
        cluster: u64,
        /// Clusters the tree needs.
        need_clusters: u64,
        /// Free clusters after the format.
        free_clusters: u64,
    },
    /// The fixed root directory of FAT12/16 holds fewer entries than the
    /// tree's top level needs.
    #[error("the root directory of {fs} holds {capacity} entries (the label included) and the tree's top level needs {needed}; put the files in a subdirectory, or use FAT32 or exFAT")]
    RootDirFull {
        /// The file system (FAT12 or FAT16).
        fs: FsKind,
        /// Entries the fixed root directory holds.
        capacity: u64,
        /// Entries the top level needs (the label included).
        needed: u64,
    },
    /// The cluster allocation differs from the footprint model (a bug: the
    /// two must agree cluster for cluster).
    #[error("internal error: the allocation ({allocated} clusters) differs from the footprint model ({predicted})")]
    ModelMismatch {
        /// Clusters the allocation used.
        allocated: u64,
        /// Clusters the model predicted.
        predicted: u64,
    },
}

/// "1 path", "2 paths": the plural given, never a made-up one ("entrys").
fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.map(|s| format!("\n  {s}")).collect()
}

/// FNV-1a over the up-cased UTF-16 units of a name.
fn upcased_hash(name: &str) -> u64 {
    name.encode_utf16()
        .map(crate::names::upcase)
        .fold(0xcbf2_9ce4_8422_2325u64, |h, u| {
            (h ^ u64::from(u)).wrapping_mul(0x100_0000_01b3)
        })
}

/// Every name and size in `tree` that `fs` cannot store, and every entry
/// that cannot be read. Sorts the tree.
///
/// # Errors
///
/// [`PopulateError::Unreadable`] listing every entry that cannot be read,
/// or [`PopulateError::Names`] listing every name or size `fs` cannot
/// store.
pub fn check(tree: &mut Tree, fs: FsKind) -> Result<(), PopulateError> {
    tree.sort();
    if !tree.unreadable().is_empty() {
        return Err(PopulateError::Unreadable {
            entries: tree.unreadable().to_vec(),
        });
    }
    let mut problems: Vec<NameProblem> = tree
        .bad_names()
        .iter()
        .map(|p| NameProblem {
            path: p.display().to_string(),
            problem: match p.file_name().and_then(lone_surrogate) {
                Some(unit) => Problem::UnpairedSurrogate { unit },
                None => Problem::NotUnicode,
            },
        })
        .collect();
    let fat = fs != FsKind::Exfat;
    // Per directory: a 64-bit hash of each up-cased name (16 bytes per
    // entry, whatever the name length); equal hashes are compared in full.
    let mut keys: Vec<(u64, u32)> = Vec::new();
    for dir in tree.dirs_preorder() {
        let kids = tree.kids(dir);
        keys.clear();
        let mut prev: Option<&str> = None;
        for &k in kids {
            let name = tree.name(k);
            let mut bad = |problem| {
                problems.push(NameProblem {
                    path: tree.display_path(k),
                    problem,
                })
            };
            if prev == Some(name) {
                bad(Problem::Duplicate);
            }
            prev = Some(name);
            match str_fault(name) {
                Some(NameFault::Forbidden(ch)) => bad(Problem::Character { ch }),
                Some(NameFault::Noncharacter(ch)) => bad(Problem::Noncharacter { ch }),
                Some(NameFault::UnpairedSurrogate(unit)) => {
                    bad(Problem::UnpairedSurrogate { unit })
                }
                None => {}
            }
            if fat && (name.ends_with('.') || name.ends_with(' ')) {
                bad(Problem::TrailingDotOrSpace);
            }
            let units = name.encode_utf16().count();
            if units > MAX_NAME_UNITS {
                bad(Problem::TooLong { units });
            }
            let n = &tree.nodes[k as usize];
            if fat && !n.is_dir() && n.size > u64::from(u32::MAX) {
                bad(Problem::TooLarge { size: n.size, fs });
            }
            keys.push((upcased_hash(name), k));
        }
        keys.sort_unstable();
        for (i, w) in keys.windows(2).enumerate() {
            if w[0].0 != w[1].0 {
                continue;
            }
            // Compare with every earlier name of the same hash.
            let b = w[1].1;
            let ub = upcased_units(tree.name(b));
            for &(h, a) in keys[..=i].iter().rev() {
                if h != w[1].0 {
                    break;
                }
                if upcased_units(tree.name(a)) == ub && tree.name(a) != tree.name(b) {
                    problems.push(NameProblem {
                        path: tree.display_path(b),
                        problem: Problem::SameAfterUpcase {
                            other: tree.name(a).to_string(),
                        },
                    });
                    break;
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.sort_by(|a, b| a.path.cmp(&b.path));
        Err(PopulateError::Names { fs, problems })
    }
}

/// The tree as the `advise` model sees it: every file's size (hard links
/// are separate files here), and the names of every directory.
pub fn scan_result(tree: &Tree) -> ScanResult {
    let mut r = ScanResult::default();
    r.file_sizes.reserve_exact(tree.file_count() as usize);
    r.dirs.reserve_exact(tree.dir_count() as usize);
    for dir in tree.dirs_preorder() {
        let mut rec = DirRecord::default();
        for &k in tree.kids(dir) {
            rec.add(OsStr::new(tree.name(k)));
            let n = &tree.nodes[k as usize];
            if !n.is_dir() {
                r.file_sizes.push(n.size);
                r.apparent_bytes = r.apparent_bytes.saturating_add(n.size);
            }
        }
        if dir == 0 {
            r.root = rec;
        } else {
            r.dirs.push(rec);
        }
    }
    r
}

/// The footprint of `tree` on the volume `layout` describes (the `advise`
/// model).
pub fn tree_footprint(tree: &Tree, layout: &Layout) -> Footprint {
    footprint_for(layout, &scan_result(tree))
}

/// A tree checked against a volume, with every cluster allocated: ready to
/// be written by [`mkfs_alloc_layout::write_volume_with`] (it implements
/// [`mkfs_alloc_layout::Content`]).
pub struct Populated {
    /// The layout the tree was planned for, the one it is written with.
    pub(crate) layout: Layout,
    pub(crate) tree: Tree,
    pub(crate) fs: FsKind,
    pub(crate) cluster: u64,
    pub(crate) data_offset: u64,
    /// First cluster of the root directory.
    pub(crate) root_first: u32,
    /// Clusters of the root directory after the copy (0: FAT12/16).
    pub(crate) root_clusters: u32,
    /// FAT12/16: byte offset and length of the fixed root directory.
    pub(crate) root_region: Option<(u64, u64)>,
    /// First cluster after everything allocated.
    pub(crate) end: u32,
    /// Last cluster of every run with a FAT chain (FAT32: all; exFAT: the root), sorted.
    pub(crate) run_ends: Vec<u32>,
    pub(crate) time: TimePolicy,
    pub(crate) footprint: Footprint,
    /// File data into an image file directly ([`Populated::copy_through`]).
    pub(crate) direct: Option<crate::direct::Direct>,
    /// File data from a batch's one reading ([`Populated::read_from`]).
    pub(crate) feed: Option<crate::feed::FeedReader>,
}

impl std::fmt::Debug for Populated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Populated")
            .field("tree", &self.tree)
            .field("fs", &self.fs)
            .field("cluster", &self.cluster)
            .field("root_clusters", &self.root_clusters)
            .field("end", &self.end)
            .finish()
    }
}

impl Populated {
    /// The `advise` footprint the allocation follows.
    pub fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    /// Clusters allocated beyond the format's own.
    pub fn new_clusters(&self) -> u64 {
        self.footprint.new_clusters()
    }

    /// The tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The layout the tree was planned for ([`Populated::write_to`] writes
    /// it).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// Where the root directory starts: its first cluster, and FAT12/16's
/// fixed root region (byte offset and length).
pub(crate) fn root_place(layout: &Layout) -> (u32, Option<(u64, u64)>) {
    match &layout.geometry() {
        Geometry::Exfat(g) => (g.root_cluster().get(), None),
        Geometry::Fat(g) if layout.fs().is_small_fat() => {
            let bps = u64::from(g.bps);
            (2, Some((g.root_sector() * bps, g.root_sectors() * bps)))
        }
        Geometry::Fat(_) => (2, None),
    }
}

/// Checks `tree` against `layout` ([`check`], the space it needs) and
/// allocates its clusters. Nothing is written.
///
/// # Errors
///
/// As [`check`], and [`PopulateError::RootDirFull`] (FAT12/16's fixed
/// root), [`PopulateError::DoesNotFit`] (the shortfall), a directory over
/// the file system's limit, or [`PopulateError::ModelMismatch`] (a bug).
pub fn plan_tree(
    mut tree: Tree,
    layout: &Layout,
    time: TimePolicy,
) -> Result<Populated, PopulateError> {
    let parts = plan_parts(&mut tree, layout)?;
    Ok(parts.into_populated(tree, layout, time))
}

/// [`plan_tree`] in place: `tree` checked and its clusters allocated for
/// `layout`; on an error `tree` is still whole (a batch plans it again for
/// another volume).
pub(crate) fn plan_parts(
    tree: &mut Tree,
    layout: &Layout,
) -> Result<crate::batch::Parts, PopulateError> {
    check(tree, layout.fs())?;
    let fs = layout.fs();
    let cluster = layout.cluster_size().bytes();
    let scan = scan_result(tree);
    let root = RootDir::of(layout);
    let fp = footprint_for(layout, &scan);
    // FAT12/16: the fixed root directory holds a fixed number of entries.
    if let Some((needed, capacity)) = root_overflow(layout, &scan) {
        return Err(PopulateError::RootDirFull {
            fs,
            capacity,
            needed,
        });
    }
    let dirs = tree.dirs_preorder();
    check_dir_sizes(tree, &dirs, &scan, fs, root.system_entries)?;
    let free = u64::from(layout.cluster_count().get() - layout.used_clusters().get());
    if fp.new_clusters() > free {
        return Err(PopulateError::DoesNotFit {
            cluster,
            need_clusters: fp.new_clusters(),
            free_clusters: free,
        });
    }
    let (root_first, root_region) = root_place(layout);
    let root_clusters = fp.root_clusters as u32;
    let (end, run_ends) = allocate(tree, &dirs, &scan, fs, cluster, root_first, root_clusters);
    let used = end - u64::from(root_first);
    let format_root = root.clusters_at_format;
    // The allocation is the model's footprint, cluster for cluster.
    debug_assert_eq!(used - format_root, fp.new_clusters());
    if used - format_root != fp.new_clusters() {
        return Err(PopulateError::ModelMismatch {
            allocated: used - format_root,
            predicted: fp.new_clusters(),
        });
    }
    Ok(crate::batch::Parts {
        root_first,
        root_clusters,
        root_region,
        end: end as u32,
        run_ends,
        footprint: fp,
    })
}

/// Every directory within its file system's limit (exFAT 256 MiB of
/// entries, FAT 65,536 entries), the root's system entries counted.
fn check_dir_sizes(
    tree: &Tree,
    dirs: &[u32],
    scan: &ScanResult,
    fs: FsKind,
    root_system_entries: u32,
) -> Result<(), PopulateError> {
    let mut problems = Vec::new();
    for (i, &d) in dirs.iter().enumerate() {
        let rec = if d == 0 {
            &scan.root
        } else {
            &scan.dirs[i - 1]
        };
        let entries = mkfs_alloc_advise::model::dir_entries(fs, rec, d != 0)
            + if d == 0 {
                u64::from(root_system_entries)
            } else {
                0
            };
        let too_big = match fs {
            FsKind::Exfat => entries * 32 > EXFAT_MAX_DIR_BYTES,
            _ => entries > FAT32_MAX_DIR_ENTRIES,
        };
        if too_big {
            problems.push(NameProblem {
                path: tree.display_path(d),
                problem: Problem::DirectoryTooLarge { entries },
            });
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PopulateError::Names { fs, problems })
    }
}

/// Allocates contiguously: the root's clusters from `root_first`, then per
/// directory (pre-order) its clusters and its files' data. Sets each
/// node's first cluster (and a directory's cluster count); returns the
/// cluster after the last one used and the last cluster of every chain
/// (FAT only; exFAT files are contiguous without chains).
fn allocate(
    tree: &mut Tree,
    dirs: &[u32],
    scan: &ScanResult,
    fs: FsKind,
    cluster: u64,
    root_first: u32,
    root_clusters: u32,
) -> (u64, Vec<u32>) {
    let mut run_ends = Vec::new();
    let mut at = u64::from(root_first) + u64::from(root_clusters);
    if root_clusters > 0 {
        run_ends.push((at - 1) as u32);
    }
    let chains = fs != FsKind::Exfat;
    for (i, &d) in dirs.iter().enumerate() {
        if d != 0 {
            let rec = &scan.dirs[i - 1];
            let n = dir_clusters(
                mkfs_alloc_advise::model::dir_entries(fs, rec, true),
                cluster,
            );
            let node = &mut tree.nodes[d as usize];
            node.first_cluster = at as u32;
            node.set_dir_clusters(n as u32);
            at += n;
            if chains {
                run_ends.push((at - 1) as u32);
            }
        } else {
            let node = &mut tree.nodes[0];
            node.first_cluster = root_first;
            node.set_dir_clusters(root_clusters);
        }
        let kids: Vec<u32> = tree.kids(d).to_vec();
        for k in kids {
            let node = &mut tree.nodes[k as usize];
            if node.is_dir() || node.size == 0 {
                continue;
            }
            let n = node.size.div_ceil(cluster);
            node.first_cluster = at as u32;
            at += n;
            if chains {
                run_ends.push((at - 1) as u32);
            }
        }
    }
    (at, run_ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two unreadable sources are "2 source entries" (the plural is spelt out).
    #[test]
    fn unreadable_sources_are_entries() {
        let one = |p: &str| Unreadable {
            path: p.into(),
            error: "Permission denied".into(),
        };
        let e = PopulateError::Unreadable {
            entries: vec![one("a"), one("b")],
        };
        assert!(
            e.to_string()
                .starts_with("2 source entries cannot be read:"),
            "{e}"
        );
        let e = PopulateError::Unreadable {
            entries: vec![one("a")],
        };
        assert!(
            e.to_string().starts_with("1 source entry cannot be read:"),
            "{e}"
        );
    }
}
