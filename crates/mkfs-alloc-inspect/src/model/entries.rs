//! Directory entries for the model, one 32-byte entry at a time: the
//! inspector's parsers do the decoding; these wrappers add where each entry
//! set starts and how many entries it has, and the checks the parsers do
//! not type (exFAT SetChecksum and NameHash, FAT long-name checksums).

use mkfs_alloc_ondisk::exfat::{
    name_hash_with, set_checksum, FileEntry, FileNameEntry, StreamExtensionEntry, UpcaseTable,
};
use mkfs_alloc_ondisk::fat::{DirEntry, LfnEntry, DIR_ENTRY_FREE, LAST_LONG_ENTRY};
use zerocopy::FromBytes;

use super::{EntryPos, Finding};
use crate::exfat::{ExfatDirParser, ExfatItem, TYPE_FILE};
use crate::fat::{FatDirParser, FatItem};

/// Bytes of a directory entry.
const ENTRY: usize = 32;

/// A file or directory an entry set names.
pub(super) struct Found {
    pub(super) name: String,
    pub(super) is_dir: bool,
    /// Its size (`None`: a FAT directory, sized by its chain).
    pub(super) size: Option<u64>,
    pub(super) first: u32,
    pub(super) contiguous: bool,
    pub(super) at: EntryPos,
}

impl Found {
    /// Its position, for entry sets that start where `at` says.
    pub(super) fn pos(at: (Option<u32>, u64), entries: u32) -> EntryPos {
        EntryPos {
            cluster: at.0,
            offset: at.1,
            entries,
        }
    }
}

/// One file system's directory entries.
pub(super) trait Entries {
    /// Takes the entry at `at` (cluster, absolute offset) of the directory
    /// shown as `dir`; pushes what it completes to `out` and returns the
    /// findings.
    fn entry(
        &mut self,
        e: &[u8],
        at: (Option<u32>, u64),
        dir: &str,
        out: &mut Vec<Found>,
    ) -> Vec<Finding>;
    /// True after the end-of-directory entry.
    fn ended(&self) -> bool;
    /// Entries seen before the end-of-directory entry.
    fn seen(&self) -> u64;
}

/// The first clusters a FAT subdirectory's `.` and `..` entries must name
/// (fatgen103 §6.7: `..` names 0 when the parent is the root).
#[derive(Debug, Clone, Copy)]
pub(super) struct Dots {
    pub(super) own: u32,
    pub(super) parent: u32,
}

/// FAT12/16/32 entries.
pub(super) struct FatEntries {
    parser: FatDirParser,
    dots: Option<Dots>,
    /// FAT32's root cluster, which some writers put in `..` instead of 0.
    root_cluster: u32,
    /// The first long-name entry of the run before the next short entry,
    /// and the run's length.
    run: Option<((Option<u32>, u64), u32)>,
    items: Vec<FatItem>,
}

impl FatEntries {
    pub(super) fn new(fat32: bool, dots: Option<Dots>, root_cluster: u32) -> Self {
        FatEntries {
            parser: FatDirParser::new(fat32),
            dots,
            root_cluster,
            run: None,
            items: Vec::new(),
        }
    }
}

impl Entries for FatEntries {
    fn entry(
        &mut self,
        e: &[u8],
        at: (Option<u32>, u64),
        dir: &str,
        out: &mut Vec<Found>,
    ) -> Vec<Finding> {
        let Ok(d) = DirEntry::ref_from_bytes(e) else {
            return Vec::new();
        };
        let orphans = self.parser.orphans;
        let long = d.is_long_name() && d.name[0] != DIR_ENTRY_FREE;
        if long {
            let last = LfnEntry::ref_from_bytes(e).is_ok_and(|l| l.ord & LAST_LONG_ENTRY != 0);
            self.run = match self.run {
                Some((start, n)) if !last => Some((start, n + 1)),
                _ if last => Some((at, 1)),
                other => other,
            };
        } else if d.name[0] == DIR_ENTRY_FREE {
            self.run = None;
        }
        self.items.clear();
        self.parser.feed(e, &mut self.items);
        let mut findings = Vec::new();
        if self.parser.orphans > orphans {
            findings.push(Finding::LongName {
                dir: dir.to_string(),
                offset: at.1,
            });
        }
        for item in self.items.drain(..) {
            let FatItem::Entry(entry) = item else {
                self.run = None;
                continue;
            };
            let run = self.run.take();
            if entry.is_dot() {
                findings.extend(check_dot(self.dots, self.root_cluster, &entry, dir));
                continue;
            }
            let pos = match run {
                Some((start, n)) if self.parser.orphans == orphans => Found::pos(start, n + 1),
                _ => Found::pos(at, 1),
            };
            out.push(Found {
                is_dir: entry.is_dir(),
                size: (!entry.is_dir()).then_some(u64::from(entry.size)),
                first: entry.first_cluster,
                contiguous: false,
                name: entry.name,
                at: pos,
            });
        }
        findings
    }

    fn ended(&self) -> bool {
        self.parser.ended()
    }

    fn seen(&self) -> u64 {
        self.parser.entries()
    }
}

/// A `.` that does not name its own directory, a `..` that does not name
/// the parent (`root_cluster` is accepted for 0).
fn check_dot(
    dots: Option<Dots>,
    root_cluster: u32,
    e: &crate::fat::FatEntry,
    dir: &str,
) -> Option<Finding> {
    let d = dots?;
    let expected = if e.name == "." { d.own } else { d.parent };
    let root_alias = e.name == ".." && d.parent == 0 && e.first_cluster == root_cluster;
    (e.first_cluster != expected && !root_alias).then(|| Finding::DotEntry {
        dir: dir.to_string(),
        name: e.name.clone(),
        first: e.first_cluster,
        expected,
    })
}

/// exFAT entries.
pub(super) struct ExfatEntries<'t> {
    parser: ExfatDirParser,
    table: &'t UpcaseTable,
    /// The raw entries of the set being read, where it starts, and its
    /// entry count.
    set: Vec<u8>,
    start: (Option<u32>, u64),
    want: usize,
    items: Vec<ExfatItem>,
}

impl<'t> ExfatEntries<'t> {
    pub(super) fn new(table: &'t UpcaseTable) -> Self {
        ExfatEntries {
            parser: ExfatDirParser::new(),
            table,
            set: Vec::new(),
            start: (None, 0),
            want: 0,
            items: Vec::new(),
        }
    }

    /// NameHash of the set as stored and as computed from its name.
    fn name_hashes(&self) -> Option<(u16, u16)> {
        let (stream, _) = StreamExtensionEntry::read_from_prefix(self.set.get(ENTRY..)?).ok()?;
        let len = usize::from(stream.name_length);
        let mut units = Vec::with_capacity(len);
        for ne in self.set.get(2 * ENTRY..)?.chunks_exact(ENTRY) {
            let (name, _) = FileNameEntry::read_from_prefix(ne).ok()?;
            units.extend(name.file_name.iter().map(|u| u.get()));
        }
        units.truncate(len);
        Some((stream.name_hash.get(), name_hash_with(&units, self.table)))
    }
}

impl Entries for ExfatEntries<'_> {
    fn entry(
        &mut self,
        e: &[u8],
        at: (Option<u32>, u64),
        dir: &str,
        out: &mut Vec<Found>,
    ) -> Vec<Finding> {
        let Ok((head, _)) = FileEntry::read_from_prefix(e) else {
            return Vec::new();
        };
        if head.entry_type == TYPE_FILE {
            self.set.clear();
            self.start = at;
            self.want = (usize::from(head.secondary_count) + 1) * ENTRY;
        }
        if self.set.len() < self.want {
            self.set.extend_from_slice(e);
        }
        self.items.clear();
        self.parser.feed(e, &mut self.items);
        let mut findings = Vec::new();
        let items = std::mem::take(&mut self.items);
        for item in &items {
            match item {
                ExfatItem::File(f) => {
                    let path = crate::walk::join(if dir == "/" { "" } else { dir }, &f.name);
                    if let Some((stored, computed)) = self.name_hashes() {
                        if stored != computed {
                            findings.push(Finding::NameHash {
                                path,
                                stored,
                                computed,
                            });
                        }
                    }
                    let entries = u32::try_from(self.want / ENTRY).unwrap_or(0);
                    out.push(Found {
                        name: f.name.clone(),
                        is_dir: f.is_dir(),
                        size: Some(f.data_length),
                        first: f.first_cluster,
                        contiguous: f.no_fat_chain,
                        at: Found::pos(self.start, entries),
                    });
                }
                ExfatItem::Bad(what) => findings.push(self.bad(what, at, dir)),
                _ => {}
            }
        }
        self.items = items;
        findings
    }

    fn ended(&self) -> bool {
        self.parser.ended()
    }

    fn seen(&self) -> u64 {
        self.parser.entries()
    }
}

impl ExfatEntries<'_> {
    /// A damaged set: a wrong SetChecksum when the set is whole and its
    /// checksum is what fails, else what the parser says.
    fn bad(&self, what: &str, at: (Option<u32>, u64), dir: &str) -> Finding {
        let whole = self.want > 0 && self.set.len() == self.want;
        let stored = FileEntry::read_from_prefix(&self.set)
            .map(|(f, _)| f.set_checksum.get())
            .ok();
        let computed = set_checksum(&self.set);
        match stored {
            Some(stored) if whole && stored != computed => Finding::SetChecksum {
                dir: dir.to_string(),
                offset: self.start.1,
                stored,
                computed,
            },
            _ => Finding::DamagedEntry {
                dir: dir.to_string(),
                offset: at.1,
                what: what.to_string(),
            },
        }
    }
}
