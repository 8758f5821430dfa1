//! FAT directory entries: short (8.3) entries with their long names (LFN),
//! parsed incrementally from directory bytes.
//!
//! Sources: fatgen103 §6 (directory entry), §7 (long names and their
//! checksum); NT case bits as Windows and mtools write them.

use super::*;

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
        let b0 = e[0];
        if b0 == 0 {
            self.ended = true;
            out.push(FatItem::End);
            return;
        }
        self.entries += 1;
        if b0 == 0xE5 {
            self.reset_lfn();
            return;
        }
        let attr = e[11];
        if attr & 0x3F == ATTR_LONG_NAME {
            let seq = b0 & 0x1F;
            if b0 & 0x40 != 0 {
                self.reset_lfn();
                if seq == 0 || seq > 20 {
                    return;
                }
                self.lfn.clear();
                self.lfn.resize(usize::from(seq) * 13, 0xFFFF);
                self.sum = e[13];
                self.lfn_ok = true;
                self.next_seq = seq;
            } else if !self.lfn_ok || seq != self.next_seq || e[13] != self.sum || seq == 0 {
                self.reset_lfn();
                return;
            }
            let at = (usize::from(seq) - 1) * 13;
            let units = e[1..11]
                .chunks_exact(2)
                .chain(e[14..26].chunks_exact(2))
                .chain(e[28..32].chunks_exact(2));
            for (i, u) in units.enumerate() {
                if let Some(slot) = self.lfn.get_mut(at + i) {
                    *slot = u16::from_le_bytes([u[0], u[1]]);
                }
            }
            self.next_seq = seq - 1;
            return;
        }
        let short = &e[..11];
        if attr & ATTR_VOLUME_ID != 0 && attr & ATTR_DIRECTORY == 0 {
            self.reset_lfn();
            if let Some(l) = ascii_label(short) {
                out.push(FatItem::Label(l));
            }
            return;
        }
        let name = if self.lfn_ok && self.next_seq == 0 && lfn_checksum(short) == self.sum {
            self.lfn_ok = false;
            let end = self
                .lfn
                .iter()
                .position(|&u| u == 0 || u == 0xFFFF)
                .unwrap_or(self.lfn.len());
            String::from_utf16_lossy(&self.lfn[..end])
        } else {
            self.reset_lfn();
            short_name(short, e[12])
        };
        let hi = if self.fat32 {
            u32::from(u16::from_le_bytes([e[20], e[21]])) << 16
        } else {
            0
        };
        out.push(FatItem::Entry(FatEntry {
            name,
            attr,
            first_cluster: hi | u32::from(u16::from_le_bytes([e[26], e[27]])),
            size: u32::from_le_bytes([e[28], e[29], e[30], e[31]]),
        }));
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
fn short_name(s: &[u8], nt_res: u8) -> String {
    let conv = |bytes: &[u8], lower: bool| -> String {
        bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let b = if i == 0 && b == 0x05 { 0xE5 } else { b };
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
    let base = conv(&s[..8], nt_res & 0x08 != 0);
    let ext = conv(&s[8..11], nt_res & 0x10 != 0);
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
