//! Writing a [`Populated`] tree: directory entries and file data, in
//! cluster order, through the format's writer ([`Content`]).
//!
//! Everything goes out in allocation order through one write-combining
//! buffer ([`BUF`]), so the target sees large sequential writes whatever
//! the file sizes. File data is read in [`READ_CHUNK`] pieces (never a
//! whole file in memory). On a fresh target (a new sparse image), runs of
//! at least [`HOLE`] zero bytes in a source file, and unused cluster tails
//! of that size, are not written: they stay holes.
//!
//! Host files are reopened as the walk found them: through the walk's
//! directories, relative to their open descriptors, never following a link
//! (`tree::cursor`). A source that is no longer the file the walk recorded
//! (another identity: swapped for a symbolic link or another file, or a
//! directory on its way swapped or moved) or whose size differs from the
//! one planned (it changed or disappeared since the walk) fails the write
//! with [`mkfs_alloc_layout::WriteError::Content`] before any boot sector
//! is written, so no valid volume is left behind and nothing from outside
//! the tree is read.

use crate::names::upcase;
use crate::names::AliasSet;
use crate::plan::Populated;
use crate::source::{check_at_end, read_full, Opened};
use crate::time::{DosTime, EXFAT_UTC};
use crate::tree::cursor::Cursor;
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::{
    write_volume_with, Content, ContentSink, FsKind, Prior, WriteError, WriteReport,
};
use mkfs_alloc_ondisk::exfat::set_checksum;
use mkfs_alloc_ondisk::fat::{
    attr, short_name_checksum, DirEntry, LfnEntry, LAST_LONG_ENTRY, LFN_UNITS_PER_ENTRY,
};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Size of the write-combining buffer.
pub const BUF: usize = 8 << 20;
/// Size of one read from a source file.
pub const READ_CHUNK: usize = 1 << 20;
/// Zero runs of at least this many bytes (aligned) are left as holes on a
/// fresh target.
pub const HOLE: u64 = 64 << 10;

/// A source file that could not be copied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The file cannot be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file, or a directory on its way, is no longer the one the walk
    /// found (a symbolic link or another file took its place, or it was
    /// moved): it is not read.
    #[error("{path} was replaced during the copy ({why}); nothing was read from it and the volume was left without a boot sector")]
    Replaced {
        /// The file or directory.
        path: String,
        /// What was found instead.
        why: &'static str,
    },
    /// The file's size is not the one measured before the format.
    #[error("{path} changed during the copy: {expected} bytes were planned, {found} found; the volume was left without a boot sector")]
    Changed {
        /// The file.
        path: String,
        /// Planned size.
        expected: u64,
        /// What was found (at least this much, if it grew).
        found: u64,
    },
    /// The file's modification time is not the one the walk recorded, or
    /// moved while it was copied (written to in place, its size kept):
    /// `fstat` of the descriptor read or cloned from, when opened and after.
    #[error("{path} was modified during the copy (its modification time changed); the volume was left without a boot sector")]
    Modified {
        /// The file.
        path: String,
    },
}

pub(crate) fn content_err(e: SourceError) -> WriteError {
    WriteError::Content(Box::new(e))
}

/// The write-combining output.
pub(crate) struct Out<'a> {
    sink: &'a mut dyn ContentSink,
    buf: Vec<u8>,
    /// Volume offset of `buf[0]`.
    start: u64,
    pub(crate) bs: u64,
    pub(crate) fresh: bool,
}

impl Out<'_> {
    fn pos(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// Writes the block-aligned prefix of the buffer.
    fn flush_aligned(&mut self) -> Result<(), WriteError> {
        let n = (self.buf.len() as u64 / self.bs * self.bs) as usize;
        if n > 0 {
            self.sink.write_at(self.start, &self.buf[..n])?;
            self.buf.drain(..n);
            self.start += n as u64;
        }
        Ok(())
    }

    /// Moves the output to `offset` (block-aligned; the buffer must end on a
    /// block boundary).
    fn seek(&mut self, offset: u64) -> Result<(), WriteError> {
        if offset != self.pos() {
            self.flush_aligned()?;
            debug_assert!(self.buf.is_empty());
            self.buf.clear();
            self.start = offset;
        }
        Ok(())
    }

    fn append(&mut self, data: &[u8]) -> Result<(), WriteError> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= BUF {
            self.flush_aligned()?;
        }
        Ok(())
    }

    /// Records `len` bytes at `offset` that were put into the target
    /// directly (cloned or copied by the host), and moves past them.
    pub(crate) fn placed(&mut self, offset: u64, len: u64) -> Result<(), WriteError> {
        self.sink.placed(offset, len);
        self.seek(offset + len)
    }

    /// Skips `len` bytes (a block-aligned zero run) at the current position.
    fn skip(&mut self, len: u64) -> Result<(), WriteError> {
        self.flush_aligned()?;
        let at = self.pos();
        self.sink.zero_at(at, len)?;
        self.start = at + len;
        Ok(())
    }

    /// Zero-fills up to `end` (block-aligned).
    fn zero_to(&mut self, end: u64) -> Result<(), WriteError> {
        let pos = self.pos();
        let aligned = pos.div_ceil(self.bs) * self.bs;
        let pad = (aligned.min(end) - pos) as usize;
        self.buf.resize(self.buf.len() + pad, 0);
        let rest = end - self.pos();
        if rest >= HOLE {
            self.skip(rest)
        } else {
            self.buf.resize(self.buf.len() + rest as usize, 0);
            if self.buf.len() >= BUF {
                self.flush_aligned()?;
            }
            Ok(())
        }
    }

    fn finish(&mut self) -> Result<(), WriteError> {
        self.flush_aligned()?;
        debug_assert!(self.buf.is_empty());
        Ok(())
    }
}

impl Populated {
    fn cluster_offset(&self, c: u32) -> u64 {
        self.data_offset + u64::from(c - 2) * self.cluster
    }

    fn exfat_entries(&self, k: u32, out: &mut Vec<u8>) {
        use mkfs_alloc_ondisk::exfat::{
            file_attributes, name_hash, secondary_flags, FileEntry, FileNameEntry,
            StreamExtensionEntry, NAME_UNITS_PER_ENTRY, TYPE_FILE, TYPE_FILE_NAME,
            TYPE_STREAM_EXTENSION,
        };
        let n = &self.tree.nodes[k as usize];
        let name: Vec<u16> = self.tree.name(k).encode_utf16().collect();
        let up: Vec<u16> = name.iter().map(|&u| upcase(u)).collect();
        let name_entries = name.len().div_ceil(NAME_UNITS_PER_ENTRY).max(1);
        let t = DosTime::from_utc(self.time.apply(n.mtime()));
        let first = out.len();
        let mut f = FileEntry::new_zeroed();
        f.entry_type = TYPE_FILE;
        f.secondary_count = (1 + name_entries) as u8;
        f.file_attributes = if n.is_dir() {
            file_attributes::DIRECTORY
        } else {
            file_attributes::ARCHIVE
        }
        .into();
        f.create_timestamp = t.exfat().into();
        f.last_modified_timestamp = t.exfat().into();
        f.last_accessed_timestamp = t.exfat().into();
        f.create_10ms_increment = t.centis;
        f.last_modified_10ms_increment = t.centis;
        f.create_utc_offset = EXFAT_UTC;
        f.last_modified_utc_offset = EXFAT_UTC;
        f.last_accessed_utc_offset = EXFAT_UTC;
        out.extend_from_slice(f.as_bytes());
        let contiguous = secondary_flags::ALLOCATION_POSSIBLE | secondary_flags::NO_FAT_CHAIN;
        let (len, flags) = if n.is_dir() {
            (u64::from(n.dir_clusters()) * self.cluster, contiguous)
        } else if n.size == 0 {
            (0, secondary_flags::ALLOCATION_POSSIBLE)
        } else {
            (n.size, contiguous)
        };
        let mut e = StreamExtensionEntry::new_zeroed();
        e.entry_type = TYPE_STREAM_EXTENSION;
        e.general_secondary_flags = flags;
        e.name_length = name.len() as u8;
        e.name_hash = name_hash(&up).into();
        e.valid_data_length = len.into();
        e.first_cluster = (if len == 0 { 0 } else { n.first_cluster }).into();
        e.data_length = len.into();
        out.extend_from_slice(e.as_bytes());
        for part in name.chunks(NAME_UNITS_PER_ENTRY) {
            let mut e = FileNameEntry::new_zeroed();
            e.entry_type = TYPE_FILE_NAME;
            for (dst, &u) in e.file_name.iter_mut().zip(part) {
                *dst = u.into();
            }
            out.extend_from_slice(e.as_bytes());
        }
        let sum = set_checksum(&out[first..]);
        if let Ok((file, _)) = FileEntry::mut_from_prefix(&mut out[first..]) {
            file.set_checksum = sum.into();
        }
    }

    fn fat_short(&self, name: [u8; 11], case: u8, k: u32, cluster: u32) -> DirEntry {
        let n = &self.tree.nodes[k as usize];
        let t = DosTime::from_utc(self.time.apply(n.mtime()));
        let mut e = DirEntry::new_zeroed();
        e.name = name;
        e.attr = if n.is_dir() {
            attr::DIRECTORY
        } else {
            attr::ARCHIVE
        };
        e.nt_res = case;
        e.crt_time_tenth = t.centis;
        e.crt_time = t.time.into();
        e.crt_date = t.date.into();
        e.lst_acc_date = t.date.into();
        e.wrt_time = t.time.into();
        e.wrt_date = t.date.into();
        e.set_first_cluster(cluster);
        e.file_size = (if n.is_dir() { 0 } else { n.size as u32 }).into();
        e
    }

    fn fat_entries(&self, k: u32, aliases: &mut AliasSet, out: &mut Vec<u8>) {
        let name = self.tree.name(k);
        let (short, case, lfn) = aliases.alias(name);
        if lfn {
            let units: Vec<u16> = name.encode_utf16().collect();
            let count = units.len().div_ceil(LFN_UNITS_PER_ENTRY);
            let sum = short_name_checksum(&short);
            // Long-name entries, last part first (fatgen103 §7); after the
            // name one 0x0000, then 0xFFFF padding.
            for ord in (1..=count).rev() {
                let mut part = [0xFFFFu16; LFN_UNITS_PER_ENTRY];
                for (i, slot) in part.iter_mut().enumerate() {
                    let at = (ord - 1) * LFN_UNITS_PER_ENTRY + i;
                    match at.cmp(&units.len()) {
                        std::cmp::Ordering::Less => *slot = units[at],
                        std::cmp::Ordering::Equal => *slot = 0,
                        std::cmp::Ordering::Greater => {}
                    }
                }
                let mut e = LfnEntry::new_zeroed();
                e.ord = ord as u8 | if ord == count { LAST_LONG_ENTRY } else { 0 };
                e.attr = attr::LONG_NAME;
                e.chksum = sum;
                e.set_units(&part);
                out.extend_from_slice(e.as_bytes());
            }
        }
        let n = &self.tree.nodes[k as usize];
        let cluster = if n.is_dir() || n.size > 0 {
            n.first_cluster
        } else {
            0
        };
        out.extend_from_slice(self.fat_short(short, case, k, cluster).as_bytes());
    }

    fn write_dir(&self, d: u32, system: &[u8], out: &mut Out<'_>) -> Result<(), WriteError> {
        let n = &self.tree.nodes[d as usize];
        let (start, end) = match self.root_region {
            Some((off, len)) if d == 0 => (off, off + len),
            _ => {
                let start = self.cluster_offset(n.first_cluster);
                (start, start + u64::from(n.dir_clusters()) * self.cluster)
            }
        };
        out.seek(start)?;
        let mut buf = Vec::with_capacity(4096);
        if d == 0 {
            buf.extend_from_slice(system);
        } else if self.fs != FsKind::Exfat {
            let parent = n.parent;
            let up = if parent == 0 {
                0
            } else {
                self.tree.nodes[parent as usize].first_cluster
            };
            let dot = self.fat_short(*b".          ", 0, d, n.first_cluster);
            buf.extend_from_slice(dot.as_bytes());
            let mut dotdot = self.fat_short(*b"..         ", 0, d, up);
            dotdot.attr = 0x10;
            buf.extend_from_slice(dotdot.as_bytes());
        }
        let kids = self.tree.kids(d);
        let mut aliases = if self.fs == FsKind::Exfat {
            AliasSet::default()
        } else {
            AliasSet::new(kids.iter().map(|&k| self.tree.name(k)))
        };
        for &k in kids {
            if self.fs == FsKind::Exfat {
                self.exfat_entries(k, &mut buf);
            } else {
                self.fat_entries(k, &mut aliases, &mut buf);
            }
            if buf.len() >= 64 << 10 {
                out.append(&buf)?;
                buf.clear();
            }
        }
        out.append(&buf)?;
        out.zero_to(end)
    }

    fn copy_file(
        &mut self,
        k: u32,
        out: &mut Out<'_>,
        chunk: &mut [u8],
        cursor: &mut Cursor,
    ) -> Result<(), WriteError> {
        let n = self.tree.nodes[k as usize];
        if n.size == 0 {
            return Ok(());
        }
        let start = self.cluster_offset(n.first_cluster);
        let end = start + n.size.div_ceil(self.cluster) * self.cluster;
        out.seek(start)?;
        // A batch: the bytes come from its one reading of the tree.
        if let Some(feed) = self.feed.as_mut() {
            let tree = &self.tree;
            let path = || tree.display_path(k);
            let mut file = feed.file(k);
            pump(&mut file, n.size, 0, chunk, out, &path)?;
            check_at_end(&mut file, &path, n.size)?;
            return out.zero_to(end);
        }
        let mut opened = self.open_source(k, cursor)?;
        // The whole host blocks of a host file may go in directly (cloned).
        let done = match &opened {
            Opened::Host { file, .. } => self.copy_head(k, file, start, n.size, out)?,
            Opened::Memory(_) => 0,
        };
        let tree = &self.tree;
        let path = || tree.display_path(k);
        let io_err = |source| {
            content_err(SourceError::Io {
                path: path(),
                source,
            })
        };
        let reader = opened.reader_at(done).map_err(io_err)?;
        pump(reader, n.size, done, chunk, out, &path)?;
        check_at_end(reader, &path, n.size)?;
        opened.check_unchanged(&path)?;
        out.zero_to(end)
    }
}

/// Copies `size - done` bytes of a file from `reader` to `out` in `chunk`
/// pieces; on a fresh target, whole zero runs of [`HOLE`] bytes stay holes.
fn pump(
    reader: &mut dyn std::io::Read,
    size: u64,
    mut done: u64,
    chunk: &mut [u8],
    out: &mut Out<'_>,
    path: &dyn Fn() -> String,
) -> Result<(), WriteError> {
    while done < size {
        let want = (size - done).min(chunk.len() as u64) as usize;
        let buf = &mut chunk[..want];
        read_full(reader, buf, path, size, done)?;
        for piece in buf.chunks(HOLE as usize) {
            if out.fresh && piece.len() as u64 == HOLE && piece.iter().all(|&b| b == 0) {
                out.skip(HOLE)?;
            } else {
                out.append(piece)?;
            }
        }
        done += want as u64;
    }
    Ok(())
}

/// A [`Populated`] tree as the writer's [`Content`]: private, so that a
/// tree is written only by [`Populated::write_to`], with the layout it was
/// planned for.
struct Writing<'a>(&'a mut Populated);

impl Populated {
    /// Formats `dev` with the volume this tree was planned for and the tree
    /// in it ([`write_volume_with`]): the tree cannot be written into another
    /// layout. `dev`'s block 0 is the volume's first byte.
    ///
    /// # Errors
    ///
    /// As [`write_volume_with`]; [`WriteError::Content`] when a source file
    /// cannot be read or changes during the copy (the volume then has no
    /// main boot sector).
    pub fn write_to<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        prior: Prior,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<WriteReport, WriteError> {
        let layout = self.layout.clone();
        write_volume_with(&layout, Some(&mut Writing(self)), dev, prior, progress)
    }
}

impl Content for Writing<'_> {
    fn clusters(&self) -> u64 {
        self.0.footprint.new_clusters()
    }

    fn fat_entry(&self, index: u64) -> u32 {
        if index >= u64::from(self.0.end) || index < u64::from(self.0.root_first) {
            return 0;
        }
        let i = index as u32;
        if self.0.fs == FsKind::Exfat {
            let root_end = self.0.root_first + self.0.root_clusters;
            return if i + 1 == root_end {
                0xFFFF_FFFF
            } else if i < root_end {
                i + 1
            } else {
                0
            };
        }
        if self.0.run_ends.binary_search(&i).is_ok() {
            0x0FFF_FFFF
        } else {
            i + 1
        }
    }

    fn write(&mut self, system: &[u8], sink: &mut dyn ContentSink) -> Result<(), WriteError> {
        let bs = sink.block_size();
        let fresh = sink.fresh();
        let mut out = Out {
            sink,
            buf: Vec::with_capacity(BUF + READ_CHUNK),
            start: 0,
            bs,
            fresh,
        };
        let mut chunk = vec![0u8; READ_CHUNK];
        let mut cursor = Cursor::new();
        let dirs = self.0.tree.dirs_preorder();
        // The root's growth follows its first cluster directly.
        for d in dirs {
            self.0.write_dir(d, system, &mut out)?;
            let kids: Vec<u32> = self.0.tree.kids(d).to_vec();
            for k in kids {
                if !self.0.tree.nodes[k as usize].is_dir() {
                    self.0.copy_file(k, &mut out, &mut chunk, &mut cursor)?;
                }
            }
        }
        out.finish()
    }
}
