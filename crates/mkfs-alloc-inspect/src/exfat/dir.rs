//! exFAT directory entries: entry sets (File, Stream Extension, File Name)
//! and the root directory's critical entries, parsed incrementally.
//!
//! Sources: exFAT specification §6.2-6.4 (entry sets, checksum), §7.1-7.7.

use super::*;
use mkfs_alloc_ondisk::exfat::{
    secondary_flags, BitmapEntry, FileEntry, FileNameEntry, StreamExtensionEntry, UpcaseEntry,
};

/// Bytes of one directory entry (every entry type has the size of a file
/// entry).
const ENTRY: usize = core::mem::size_of::<FileEntry>();

/// A file or directory of an exFAT directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExfatFile {
    /// FileAttributes.
    pub attributes: u16,
    /// The name (UTF-16 decoded, lossy).
    pub name: String,
    /// FirstCluster.
    pub first_cluster: u32,
    /// DataLength.
    pub data_length: u64,
    /// ValidDataLength.
    pub valid_data_length: u64,
    /// NoFatChain: the clusters are contiguous and the FAT is not used.
    pub no_fat_chain: bool,
}

impl ExfatFile {
    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.attributes & ATTR_DIRECTORY != 0
    }
}

/// What a directory parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExfatItem {
    /// End of directory (type 0x00).
    End,
    /// Allocation bitmap entry.
    Bitmap {
        /// BitmapFlags.
        flags: u8,
        /// FirstCluster.
        first_cluster: u32,
        /// DataLength.
        data_length: u64,
    },
    /// Up-case table entry.
    Upcase {
        /// TableChecksum.
        checksum: u32,
        /// FirstCluster.
        first_cluster: u32,
        /// DataLength.
        data_length: u64,
    },
    /// Volume label.
    Label(String),
    /// A file or directory (a complete, checksummed entry set).
    File(ExfatFile),
    /// A damaged entry or entry set (skipped).
    Bad(String),
}

/// Streaming parser of exFAT directory entries: feed it the directory's
/// bytes in any pieces of whole 32-byte entries. Memory: one entry set
/// (at most 19 entries).
#[derive(Debug, Default)]
pub struct ExfatDirParser {
    set: Vec<u8>,
    remaining: usize,
    skip: usize,
    entries: u64,
    ended: bool,
}

impl ExfatDirParser {
    /// A parser at the start of a directory.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, e: &[u8], out: &mut Vec<ExfatItem>) {
        let t = e[0];
        let in_use_secondary = t & 0xC0 == 0xC0;
        if self.remaining > 0 {
            if in_use_secondary {
                self.entries += 1;
                self.set.extend_from_slice(e);
                self.remaining -= 1;
                if self.remaining == 0 {
                    out.push(self.finish_set());
                }
                return;
            }
            out.push(ExfatItem::Bad(format!(
                "entry set cut short: entry {} has type {t:#04x}, expected a secondary entry",
                self.entries
            )));
            self.set.clear();
            self.remaining = 0;
        }
        if self.skip > 0 {
            if in_use_secondary {
                self.entries += 1;
                self.skip -= 1;
                return;
            }
            self.skip = 0;
        }
        if t == 0 {
            self.ended = true;
            out.push(ExfatItem::End);
            return;
        }
        self.entries += 1;
        if t & 0x80 == 0 {
            return; // unused or deleted
        }
        match t {
            TYPE_BITMAP => {
                if let Ok((b, _)) = BitmapEntry::read_from_prefix(e) {
                    out.push(ExfatItem::Bitmap {
                        flags: b.bitmap_flags,
                        first_cluster: b.first_cluster.get(),
                        data_length: b.data_length.get(),
                    });
                }
            }
            TYPE_UPCASE => {
                if let Ok((u, _)) = UpcaseEntry::read_from_prefix(e) {
                    out.push(ExfatItem::Upcase {
                        checksum: u.table_checksum.get(),
                        first_cluster: u.first_cluster.get(),
                        data_length: u.data_length.get(),
                    });
                }
            }
            TYPE_LABEL => match LabelEntry::read_from_prefix(e) {
                Ok((l, _)) if l.character_count <= 11 => out.push(ExfatItem::Label(l.label())),
                _ => out.push(ExfatItem::Bad(format!(
                    "volume label entry with {} characters (max 11)",
                    e[1]
                ))),
            },
            TYPE_FILE => {
                let n = usize::from(e[1]);
                if !(2..=18).contains(&n) {
                    out.push(ExfatItem::Bad(format!(
                        "file entry with {n} secondary entries (valid: 2..=18)"
                    )));
                    self.skip = n;
                } else {
                    self.set.clear();
                    self.set.extend_from_slice(e);
                    self.remaining = n;
                }
            }
            0xA0..=0xBF => self.skip = usize::from(e[1]), // benign primary
            _ if t & 0x40 != 0 => out.push(ExfatItem::Bad(format!(
                "secondary entry (type {t:#04x}) outside an entry set"
            ))),
            _ => out.push(ExfatItem::Bad(format!(
                "unknown critical primary entry type {t:#04x}"
            ))),
        }
    }

    fn finish_set(&mut self) -> ExfatItem {
        let set = std::mem::take(&mut self.set);
        let (Ok((file, _)), Some(Ok((stream, _)))) = (
            FileEntry::read_from_prefix(&set),
            set.get(ENTRY..).map(StreamExtensionEntry::read_from_prefix),
        ) else {
            return ExfatItem::Bad(format!("entry set of {} bytes", set.len()));
        };
        let stored = file.set_checksum.get();
        let computed = set_checksum(&set);
        if stored != computed {
            return ExfatItem::Bad(format!(
                "entry set checksum mismatch: stored {stored:#06x}, computed {computed:#06x}"
            ));
        }
        if stream.entry_type != TYPE_STREAM {
            return ExfatItem::Bad(format!(
                "file entry followed by type {:#04x}, expected a stream extension (0xc0)",
                stream.entry_type
            ));
        }
        let name_len = usize::from(stream.name_length);
        let mut units = Vec::with_capacity(name_len);
        for ne in set.get(2 * ENTRY..).unwrap_or_default().chunks_exact(ENTRY) {
            let Ok((name, _)) = FileNameEntry::read_from_prefix(ne) else {
                continue;
            };
            if name.entry_type != TYPE_NAME {
                continue;
            }
            for u in &name.file_name {
                if units.len() < name_len {
                    units.push(u.get());
                }
            }
        }
        if units.len() < name_len || name_len == 0 {
            return ExfatItem::Bad(format!(
                "file name of {} characters, NameLength says {name_len}",
                units.len()
            ));
        }
        ExfatItem::File(ExfatFile {
            attributes: file.file_attributes.get(),
            name: String::from_utf16_lossy(&units),
            first_cluster: stream.first_cluster.get(),
            data_length: stream.data_length.get(),
            valid_data_length: stream.valid_data_length.get(),
            no_fat_chain: stream.general_secondary_flags & secondary_flags::NO_FAT_CHAIN != 0,
        })
    }
}

/// Parses a whole directory held in memory (for tests and fuzzing).
pub fn parse_directory(bytes: &[u8]) -> Vec<ExfatItem> {
    let mut p = ExfatDirParser::new();
    let mut out = Vec::new();
    p.feed(bytes, &mut out);
    out
}

impl_dir_parser!(ExfatDirParser, ExfatItem);
