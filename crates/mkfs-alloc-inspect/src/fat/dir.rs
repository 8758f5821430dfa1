//! FAT directory entries: short (8.3) entries with their long names (LFN),
//! parsed incrementally from directory bytes.
//!
//! Sources: fatgen103 §6 (directory entry), §7 (long names and their
//! checksum); NT case bits as Windows and mtools write them.

use super::*;
use mkfs_alloc_ondisk::fat::nt_case;
use mkfs_alloc_ondisk::fat::{
    DirEntry, LfnEntry, DIR_ENTRY_END, DIR_ENTRY_FREE, DIR_ENTRY_KANJI_E5, LAST_LONG_ENTRY,
    LFN_UNITS_PER_ENTRY,
};

/// An entry of a FAT directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatEntry {
    /// The long name when a valid one precedes the entry, else the 8.3 name.
    pub name: String,
    /// Attributes.
    pub attr: u8,
    /// First cluster (FAT32: with the high word).
    pub first_cluster: u32,
    /// File size.
    pub size: u32,
}

impl FatEntry {
    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.attr & ATTR_DIRECTORY != 0
    }

    /// True for `.` and `..`.
    pub fn is_dot(&self) -> bool {
        self.name == "." || self.name == ".."
    }
}

/// What a FAT directory parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FatItem {
    /// End of directory (first byte 0x00).
    End,
    /// A volume label entry.
    Label(String),
    /// A file or directory.
    Entry(FatEntry),
}

/// Streaming parser of FAT directory entries with long names (VFAT). Feed
/// whole 32-byte entries in any pieces. Memory: one long name (20 × 13 units).
#[derive(Debug)]
pub struct FatDirParser {
    fat32: bool,
    lfn: Vec<u16>,
    next_seq: u8,
    sum: u8,
    lfn_ok: bool,
    entries: u64,
    ended: bool,
    /// Long-name sequences that did not match their short entry.
    pub orphans: u64,
}

impl FatDirParser {
    /// A parser at the start of a directory; `fat32` enables the high word
    /// of the first cluster.
    pub fn new(fat32: bool) -> Self {
        FatDirParser {
            fat32,
            lfn: Vec::new(),
            next_seq: 0,
            sum: 0,
            lfn_ok: false,
            entries: 0,
            ended: false,
            orphans: 0,
        }
    }

    fn reset_lfn(&mut self) {
        if self.lfn_ok {
            self.orphans += 1;
        }
        self.lfn_ok = false;
        self.next_seq = 0;
    }

    fn push(&mut self, e: &[u8], out: &mut Vec<FatItem>) {
        // `feed` passes whole 32-byte entries.
        let Ok(entry) = DirEntry::ref_from_bytes(e) else {
            return;
        };
        match entry.name[0] {
            DIR_ENTRY_END => {
                self.ended = true;
                out.push(FatItem::End);
                return;
            }
            DIR_ENTRY_FREE => {
                self.entries += 1;
                self.reset_lfn();
                return;
            }
            _ => self.entries += 1,
        }
        if entry.is_long_name() {
            if let Ok(lfn) = LfnEntry::ref_from_bytes(e) {
                self.push_long(lfn);
            }
        } else if entry.attr & ATTR_VOLUME_ID != 0 && entry.attr & ATTR_DIRECTORY == 0 {
            self.reset_lfn();
            if let Some(l) = ascii_label(&entry.name) {
                out.push(FatItem::Label(l));
            }
        } else {
            let name = self.take_long_name(&entry.name).unwrap_or_else(|| {
                self.reset_lfn();
                short_name(&entry.name, entry.nt_res)
            });
            let hi = if self.fat32 {
                u32::from(entry.fst_clus_hi.get()) << 16
            } else {
                0
            };
            out.push(FatItem::Entry(FatEntry {
                name,
                attr: entry.attr,
                first_cluster: hi | u32::from(entry.fst_clus_lo.get()),
                size: entry.file_size.get(),
            }));
        }
    }

    /// One part of a long name: the last part (first on disk) starts a
    /// name, the others must follow in order with the same checksum.
    fn push_long(&mut self, e: &LfnEntry) {
        let seq = e.ord & 0x1F;
        if e.ord & LAST_LONG_ENTRY != 0 {
            self.reset_lfn();
            if seq == 0 || seq > 20 {
                return;
            }
            self.lfn.clear();
            self.lfn
                .resize(usize::from(seq) * LFN_UNITS_PER_ENTRY, 0xFFFF);
            self.sum = e.chksum;
            self.lfn_ok = true;
            self.next_seq = seq;
        } else if !self.lfn_ok || seq != self.next_seq || e.chksum != self.sum || seq == 0 {
            self.reset_lfn();
            return;
        }
        let at = (usize::from(seq) - 1) * LFN_UNITS_PER_ENTRY;
        for (i, u) in e.units().into_iter().enumerate() {
            if let Some(slot) = self.lfn.get_mut(at + i) {
                *slot = u;
            }
        }
        self.next_seq = seq - 1;
    }

    /// The complete long name gathered for the short entry named `short`,
    /// if its checksum matches.
    fn take_long_name(&mut self, short: &[u8; 11]) -> Option<String> {
        if !(self.lfn_ok && self.next_seq == 0 && lfn_checksum(short) == self.sum) {
            return None;
        }
        self.lfn_ok = false;
        let end = self
            .lfn
            .iter()
            .position(|&u| u == 0 || u == 0xFFFF)
            .unwrap_or(self.lfn.len());
        Some(String::from_utf16_lossy(&self.lfn[..end]))
    }
}

/// Checksum of an 8.3 name that long-name entries carry (fatgen103 §7):
/// `mkfs_alloc_ondisk::fat::short_name_checksum` over the first 11 bytes
/// (zero-padded when shorter).
pub fn lfn_checksum(short: &[u8]) -> u8 {
    let mut name = [0u8; 11];
    for (dst, &src) in name.iter_mut().zip(short) {
        *dst = src;
    }
    mkfs_alloc_ondisk::fat::short_name_checksum(&name)
}

/// `NAME.EXT` from an 8.3 entry, lower-cased as Windows NT flags say.
fn short_name(s: &[u8; 11], nt_res: u8) -> String {
    let conv = |bytes: &[u8], lower: bool| -> String {
        bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let b = if i == 0 && b == DIR_ENTRY_KANJI_E5 {
                    DIR_ENTRY_FREE
                } else {
                    b
                };
                let c = char::from(b);
                if lower {
                    c.to_ascii_lowercase()
                } else {
                    c
                }
            })
            .collect::<String>()
            .trim_end_matches(' ')
            .to_string()
    };
    let (base, ext) = mkfs_alloc_ondisk::fat::split_short_name(s);
    let base = conv(base, nt_res & nt_case::LOWER_BASE != 0);
    let ext = conv(ext, nt_res & nt_case::LOWER_EXT != 0);
    if ext.is_empty() {
        base
    } else {
        format!("{base}.{ext}")
    }
}

/// Parses a whole directory held in memory (for tests and fuzzing).
pub fn parse_directory(bytes: &[u8], fat32: bool) -> Vec<FatItem> {
    let mut p = FatDirParser::new(fat32);
    let mut out = Vec::new();
    p.feed(bytes, &mut out);
    out
}

impl_dir_parser!(FatDirParser, FatItem);
