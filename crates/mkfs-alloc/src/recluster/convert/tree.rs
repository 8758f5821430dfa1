//! The FAT32 directory tree, read and rewritten as exFAT entry sets.
//!
//! Each FAT directory is read twice, one at a time: once while planning
//! (the bytes its exFAT copy takes, the names checked) and once while
//! running (its copy built with the new first clusters of its
//! subdirectories). Both readings parse the same bytes, so they agree.
//!
//! Sources: fatgen103 §6 (the short entry, its dates and times, DIR_Attr),
//! §7 (long names); exFAT specification §7.4 (File entry: attributes
//! Table 28 with the same bits as DIR_Attr, timestamps §7.4.8 in the DOS
//! date/time layout, 10 ms increments §7.4.9, UTC offsets §7.4.10: FAT's
//! times are local time, so OffsetValid stays 0), §7.6 (Stream Extension,
//! NameHash), §7.7 (File Name), §7.3 (Volume Label), §6.3.3 (SetChecksum),
//! §8.1 (the characters a name may not hold).

use std::collections::{HashMap, HashSet};

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::fat::{FatDirParser, FatItem};
use mkfs_alloc_inspect::model::Geometry;
use mkfs_alloc_ondisk::exfat::{
    file_attributes, name_hash_with, secondary_flags, set_checksum, FileEntry, FileNameEntry,
    LabelEntry, StreamExtensionEntry, UpcaseTable, ENTRY_SIZE, NAME_UNITS_PER_ENTRY, TYPE_FILE,
    TYPE_FILE_NAME, TYPE_LABEL, TYPE_STREAM_EXTENSION,
};
use mkfs_alloc_ondisk::fat::DirEntry;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::super::{disk, ReclusterError};

/// FAT32 entry bits (the high four are reserved).
const MASK: u32 = 0x0FFF_FFFF;

/// The attribute bits FAT and exFAT share (read-only, hidden, system,
/// directory, archive).
const ATTRS: u16 = 0x37;

/// A directory of the tree.
#[derive(Debug, Clone)]
pub(super) struct Dir {
    /// `/a/b`, `/` for the root.
    pub(super) path: String,
    /// Its FAT32 chain.
    pub(super) old: Vec<u32>,
    /// The clusters of its exFAT copy (given by the plan).
    pub(super) new: Vec<u32>,
    /// Bytes of its exFAT entries.
    pub(super) bytes: u64,
}

/// The tree: its directories, root first, parents before children.
#[derive(Debug, Clone)]
pub(super) struct Tree {
    /// Every directory.
    pub(super) dirs: Vec<Dir>,
    /// The root's volume label entry, UTF-16.
    pub(super) label: Option<Vec<u16>>,
    /// Files (not directories).
    pub(super) files: u64,
}

/// A file or directory of a FAT directory: its name and short entry.
struct Item {
    name: Vec<u16>,
    short: DirEntry,
}

/// The FAT32 chain from `first`, at most the volume's clusters long.
pub(super) fn chain<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    fat: &mut disk::FatReader,
    first: u32,
) -> Result<Vec<u32>, ReclusterError> {
    let mut out = Vec::new();
    let mut c = first;
    let most = usize::try_from(g.cluster_count).unwrap_or(usize::MAX);
    while (2..=g.cluster_count + 1).contains(&c) && out.len() <= most {
        out.push(c);
        c = fat.get(dev, c)? & MASK;
    }
    Ok(out)
}

/// The items and the label of the FAT directory over `clusters`.
fn read_dir<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    clusters: &[u32],
) -> Result<(Vec<Item>, Option<String>), ReclusterError> {
    let mut parser = FatDirParser::new(true);
    let (mut items, mut label, mut out) = (Vec::new(), None, Vec::new());
    let mut buf = vec![0u8; usize::try_from(g.cluster_size).unwrap_or(0)];
    for &c in clusters {
        disk::read_at(dev, cluster_offset(g, c), &mut buf)?;
        for e in buf.chunks_exact(ENTRY_SIZE) {
            out.clear();
            parser.feed(e, &mut out);
            match out.pop() {
                Some(FatItem::Entry(f)) if !f.is_dot() => {
                    if let Ok(short) = DirEntry::read_from_bytes(e) {
                        items.push(Item {
                            name: f.name.encode_utf16().collect(),
                            short,
                        });
                    }
                }
                Some(FatItem::Label(l)) => label = label.or(Some(l)),
                _ => {}
            }
        }
        if parser.ended() {
            break;
        }
    }
    Ok((items, label))
}

/// Absolute byte offset of cluster `c`.
pub(super) fn cluster_offset(g: &Geometry, c: u32) -> u64 {
    g.data_offset + u64::from(c.saturating_sub(2)) * g.cluster_size
}

/// Bytes of the exFAT entry set of a name of `units` UTF-16 code units.
fn set_bytes(units: usize) -> u64 {
    ((2 + units.div_ceil(NAME_UNITS_PER_ENTRY)) * ENTRY_SIZE) as u64
}

/// Why a name cannot be an exFAT name (exFAT specification §7.7.3: 1..=255
/// code units, none of 0000h-001Fh `" * / : < > ? \ |`), or one the
/// directory holds already once up-cased.
fn check_name(
    name: &[u16],
    path: &str,
    seen: &mut HashSet<Vec<u16>>,
    t: &UpcaseTable,
) -> Result<(), ReclusterError> {
    const BAD: [u16; 9] = [0x22, 0x2A, 0x2F, 0x3A, 0x3C, 0x3E, 0x3F, 0x5C, 0x7C];
    if name.is_empty() || name.len() > 255 || name.iter().any(|&u| u < 0x20 || BAD.contains(&u)) {
        return Err(ReclusterError::unsupported(format!(
            "{path}: the name is not a valid exFAT name"
        )));
    }
    if !seen.insert(name.iter().map(|&u| t.upcase(u)).collect()) {
        return Err(ReclusterError::unsupported(format!(
            "{path}: another name in its directory is the same once up-cased (exFAT compares names that way)"
        )));
    }
    Ok(())
}

/// Reads the tree from the root directory's first cluster `root`,
/// checking every name; the new clusters are left for the plan to give.
pub(super) fn read_tree<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    root: u32,
    table: &UpcaseTable,
) -> Result<Tree, ReclusterError> {
    let mut fat = disk::FatReader::new(g.fat_offset, g.fat_bytes);
    let old = chain(dev, g, &mut fat, root)?;
    let mut tree = Tree {
        dirs: vec![Dir {
            path: "/".into(),
            old,
            new: Vec::new(),
            bytes: 0,
        }],
        label: None,
        files: 0,
    };
    let mut i = 0;
    while i < tree.dirs.len() {
        let (items, label) = read_dir(dev, g, &tree.dirs[i].old)?;
        // The root's allocation bitmap and up-case table entries, and its label.
        let mut bytes = if i == 0 { 2 * ENTRY_SIZE as u64 } else { 0 };
        if i == 0 {
            tree.label = label
                .map(|l| l.trim_end().encode_utf16().take(11).collect::<Vec<u16>>())
                .filter(|l| !l.is_empty());
            bytes += tree.label.as_ref().map_or(0, |_| ENTRY_SIZE as u64);
        }
        let mut seen = HashSet::new();
        let parent = tree.dirs[i].path.trim_end_matches('/').to_string();
        for it in items {
            let path = format!("{parent}/{}", String::from_utf16_lossy(&it.name));
            check_name(&it.name, &path, &mut seen, table)?;
            bytes += set_bytes(it.name.len());
            if it.short.attr & 0x10 != 0 {
                let old = chain(dev, g, &mut fat, it.short.first_cluster())?;
                tree.dirs.push(Dir {
                    path,
                    old,
                    new: Vec::new(),
                    bytes: 0,
                });
            } else {
                tree.files += 1;
            }
        }
        tree.dirs[i].bytes = bytes;
        i += 1;
    }
    Ok(tree)
}

/// The exFAT copy of directory `i` of `tree` (`root_entries`: the root's
/// bitmap and up-case entries), padded to its new clusters.
pub(super) fn build_dir<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    tree: &Tree,
    i: usize,
    root_entries: &[u8],
    table: &UpcaseTable,
) -> Result<Vec<u8>, ReclusterError> {
    let d = &tree.dirs[i];
    let (items, _) = read_dir(dev, g, &d.old)?;
    let mut out = Vec::new();
    if i == 0 {
        if let Some(l) = &tree.label {
            let mut e = LabelEntry::new_zeroed();
            e.entry_type = TYPE_LABEL;
            e.character_count = u8::try_from(l.len()).unwrap_or(11);
            for (dst, &u) in e.volume_label.iter_mut().zip(l) {
                *dst = u.into();
            }
            out.extend_from_slice(e.as_bytes());
        }
        out.extend_from_slice(root_entries);
    }
    let firsts: HashMap<u32, &Dir> = tree
        .dirs
        .iter()
        .filter_map(|d| Some((*d.old.first()?, d)))
        .collect();
    for it in &items {
        let (first, len, dir) = if it.short.attr & 0x10 != 0 {
            let sub = firsts.get(&it.short.first_cluster());
            let first = sub.and_then(|s| s.new.first().copied()).unwrap_or(0);
            let len = sub.map_or(0, |s| s.new.len() as u64 * g.cluster_size);
            (first, len, true)
        } else {
            let len = u64::from(it.short.file_size.get());
            let first = if len == 0 {
                0
            } else {
                it.short.first_cluster()
            };
            (first, len, false)
        };
        entry_set(it, first, len, dir, table, &mut out);
    }
    let want = d.new.len() as u64 * g.cluster_size;
    out.resize(usize::try_from(want).unwrap_or(0), 0);
    Ok(out)
}

/// An exFAT timestamp from a DOS date and time (the same bit layout).
fn stamp(date: u16, time: u16) -> u32 {
    (u32::from(date) << 16) | u32::from(time)
}

/// Appends the entry set of `it` (data at `first`, `len` bytes) to `out`.
fn entry_set(it: &Item, first: u32, len: u64, dir: bool, t: &UpcaseTable, out: &mut Vec<u8>) {
    let s = &it.short;
    let at = out.len();
    let mut f = FileEntry::new_zeroed();
    f.entry_type = TYPE_FILE;
    f.secondary_count =
        u8::try_from(1 + it.name.len().div_ceil(NAME_UNITS_PER_ENTRY)).unwrap_or(18);
    let mut attr = u16::from(s.attr) & ATTRS;
    if dir {
        attr |= file_attributes::DIRECTORY;
    }
    f.file_attributes = attr.into();
    let written = stamp(s.wrt_date.get(), s.wrt_time.get());
    // A zero date is "not recorded" (fatgen103 §6.1 makes creation and
    // access optional): the modification time stands in.
    let (created, tenth) = if s.crt_date.get() == 0 {
        (written, 0)
    } else {
        let tenth = if s.crt_time_tenth <= 199 {
            s.crt_time_tenth
        } else {
            0
        };
        (stamp(s.crt_date.get(), s.crt_time.get()), tenth)
    };
    let accessed = match s.lst_acc_date.get() {
        0 => written & 0xFFFF_0000,
        d => stamp(d, 0),
    };
    f.create_timestamp = created.into();
    f.last_modified_timestamp = written.into();
    f.last_accessed_timestamp = accessed.into();
    f.create_10ms_increment = tenth;
    out.extend_from_slice(f.as_bytes());
    let mut e = StreamExtensionEntry::new_zeroed();
    e.entry_type = TYPE_STREAM_EXTENSION;
    // A FAT chain, as every FAT file has (NoFatChain clear).
    e.general_secondary_flags = secondary_flags::ALLOCATION_POSSIBLE;
    e.name_length = u8::try_from(it.name.len()).unwrap_or(255);
    e.name_hash = name_hash_with(&it.name, t).into();
    e.valid_data_length = len.into();
    e.first_cluster = first.into();
    e.data_length = len.into();
    out.extend_from_slice(e.as_bytes());
    for part in it.name.chunks(NAME_UNITS_PER_ENTRY) {
        let mut n = FileNameEntry::new_zeroed();
        n.entry_type = TYPE_FILE_NAME;
        for (dst, &u) in n.file_name.iter_mut().zip(part) {
            *dst = u.into();
        }
        out.extend_from_slice(n.as_bytes());
    }
    let sum = set_checksum(&out[at..]);
    if let Ok((file, _)) = FileEntry::mut_from_prefix(&mut out[at..]) {
        file.set_checksum = sum.into();
    }
}
