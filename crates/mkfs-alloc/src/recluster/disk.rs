//! Byte-addressed reads and writes over a [`BlockIo`], and the two FAT
//! windows of the job: the old FAT read entry by entry and the new FAT
//! written entry by entry, each through one 64 KiB window (the FATs are
//! streamed, never held whole).

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_ondisk::exfat::{
    file_attributes, BitmapEntry, FileEntry, StreamExtensionEntry, UpcaseEntry, TYPE_BITMAP,
    TYPE_FILE, TYPE_STREAM_EXTENSION, TYPE_UPCASE,
};
use zerocopy::little_endian::U32;
use zerocopy::FromBytes;

use mkfs_alloc_inspect::model::{RootDir, VolumeModel};

/// Bytes of a directory entry.
const ENTRY: usize = 32;

/// An entry of a directory being rewritten: what both rewrites change.
pub(super) enum DirEntry<'a> {
    /// The allocation bitmap's entry.
    Bitmap(&'a mut BitmapEntry),
    /// The up-case table's entry.
    Upcase(&'a mut UpcaseEntry),
    /// A file entry set, the file entry and its secondaries.
    Set(&'a mut [u8]),
}

/// Walks a directory's entries up to its end marker, handing the bitmap,
/// up-case and file set entries to `f` (other entries are kept as they
/// are); a file set that runs past the directory's end is `past_end()`.
pub(super) fn for_each_entry<E>(
    buf: &mut [u8],
    past_end: impl FnOnce() -> E,
    mut f: impl FnMut(DirEntry<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut i = 0;
    while i + ENTRY <= buf.len() {
        match buf[i] {
            0 => break,
            TYPE_BITMAP => {
                if let Ok((e, _)) = BitmapEntry::mut_from_prefix(&mut buf[i..]) {
                    f(DirEntry::Bitmap(e))?;
                }
                i += ENTRY;
            }
            TYPE_UPCASE => {
                if let Ok((e, _)) = UpcaseEntry::mut_from_prefix(&mut buf[i..]) {
                    f(DirEntry::Upcase(e))?;
                }
                i += ENTRY;
            }
            TYPE_FILE => {
                let len = (usize::from(buf[i + 1]) + 1) * ENTRY;
                let Some(set) = buf.get_mut(i..i + len) else {
                    return Err(past_end());
                };
                f(DirEntry::Set(set))?;
                i += len;
            }
            _ => i += ENTRY,
        }
    }
    Ok(())
}

/// Bytes of a FAT window.
const WINDOW: u64 = 64 << 10;

/// Reads `buf.len()` bytes at absolute byte `offset` (any alignment).
pub(super) fn read_at<D: BlockIo + ?Sized>(
    dev: &mut D,
    offset: u64,
    buf: &mut [u8],
) -> Result<(), IoError> {
    let bs = u64::from(dev.block_size());
    let first = offset / bs;
    let end = (offset + buf.len() as u64).div_ceil(bs);
    let skip = usize::try_from(offset - first * bs).unwrap_or(0);
    if skip == 0 && buf.len() as u64 % bs == 0 {
        return dev.read_blocks(first, buf);
    }
    let mut tmp = vec![0u8; usize::try_from((end - first) * bs).unwrap_or(0)];
    dev.read_blocks(first, &mut tmp)?;
    buf.copy_from_slice(&tmp[skip..skip + buf.len()]);
    Ok(())
}

/// Writes `data` at absolute byte `offset`; both are whole blocks (every
/// write of the job is sector-aligned, and sectors are whole blocks).
pub(super) fn write_at<D: BlockIo + ?Sized>(
    dev: &mut D,
    offset: u64,
    data: &[u8],
) -> Result<(), IoError> {
    let bs = u64::from(dev.block_size());
    debug_assert!(offset % bs == 0 && data.len() as u64 % bs == 0);
    dev.write_blocks(offset / bs, data)
}

/// The old FAT, read through a window.
pub(super) struct FatReader {
    base: u64,
    bytes: u64,
    at: Option<u64>,
    buf: Vec<u8>,
}

impl FatReader {
    /// The FAT of `bytes` bytes at absolute byte `base`.
    pub(super) fn new(base: u64, bytes: u64) -> Self {
        FatReader {
            base,
            bytes,
            at: None,
            buf: Vec::new(),
        }
    }

    /// Entry `n`.
    pub(super) fn get<D: BlockIo + ?Sized>(&mut self, dev: &mut D, n: u32) -> Result<u32, IoError> {
        let pos = u64::from(n) * 4;
        let win = pos / WINDOW * WINDOW;
        if self.at != Some(win) {
            let len = WINDOW.min(self.bytes.saturating_sub(win));
            self.buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
            read_at(dev, self.base + win, &mut self.buf)?;
            self.at = Some(win);
        }
        let i = usize::try_from((pos - win) / 4).unwrap_or(usize::MAX);
        Ok(<[U32]>::ref_from_bytes(&self.buf)
            .ok()
            .and_then(|e| e.get(i))
            .map_or(0xFFFF_FFFF, |e| e.get()))
    }
}

/// The new FAT, written through a window: zeroed first, then entries set
/// one by one; a window is read back before it is changed and written when
/// another one is needed.
pub(super) struct FatWriter {
    base: u64,
    bytes: u64,
    at: Option<u64>,
    buf: Vec<u8>,
    dirty: bool,
}

impl FatWriter {
    /// Zeroes the FAT of `bytes` bytes at absolute byte `base` and sets
    /// entries 0 and 1 (exFAT specification §4.1).
    pub(super) fn create<D: BlockIo + ?Sized>(
        dev: &mut D,
        base: u64,
        bytes: u64,
    ) -> Result<Self, IoError> {
        let bs = u64::from(dev.block_size());
        dev.write_zeroes(base / bs, bytes / bs)?;
        let mut w = FatWriter {
            base,
            bytes,
            at: None,
            buf: Vec::new(),
            dirty: false,
        };
        w.set(dev, 0, 0xFFFF_FFF8)?;
        w.set(dev, 1, 0xFFFF_FFFF)?;
        Ok(w)
    }

    /// The FAT of `bytes` bytes at absolute byte `base`, as it is (entries
    /// set one by one over what the medium holds).
    pub(super) fn open(base: u64, bytes: u64) -> Self {
        FatWriter {
            base,
            bytes,
            at: None,
            buf: Vec::new(),
            dirty: false,
        }
    }

    /// Sets entry `n` to `value`.
    pub(super) fn set<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        n: u32,
        value: u32,
    ) -> Result<(), IoError> {
        let pos = u64::from(n) * 4;
        let win = pos / WINDOW * WINDOW;
        if self.at != Some(win) {
            self.write_back(dev)?;
            let len = WINDOW.min(self.bytes.saturating_sub(win));
            self.buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
            read_at(dev, self.base + win, &mut self.buf)?;
            self.at = Some(win);
        }
        let i = usize::try_from((pos - win) / 4).unwrap_or(usize::MAX);
        if let Some(slot) = <[U32]>::mut_from_bytes(&mut self.buf)
            .ok()
            .and_then(|e| e.get_mut(i))
        {
            *slot = U32::new(value);
            self.dirty = true;
        }
        Ok(())
    }

    /// A chain over `clusters`, in order, ending with end-of-chain.
    pub(super) fn chain<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        clusters: impl Iterator<Item = u32>,
    ) -> Result<(), IoError> {
        let mut prev: Option<u32> = None;
        for n in clusters {
            if let Some(p) = prev {
                self.set(dev, p, n)?;
            }
            prev = Some(n);
        }
        if let Some(p) = prev {
            self.set(dev, p, 0xFFFF_FFFF)?;
        }
        Ok(())
    }

    /// Writes the window held, if changed.
    pub(super) fn write_back<D: BlockIo + ?Sized>(&mut self, dev: &mut D) -> Result<(), IoError> {
        if let (Some(win), true) = (self.at, self.dirty) {
            write_at(dev, self.base + win, &self.buf)?;
            self.dirty = false;
        }
        Ok(())
    }
}

/// A [`BlockIo`] that counts the bytes written through it and reports
/// them, with the expected total, after each write.
pub(super) struct Counting<'a, D: ?Sized> {
    pub(super) inner: &'a mut D,
    pub(super) done: u64,
    pub(super) total: u64,
    pub(super) progress: &'a mut dyn FnMut(u64, u64),
}

impl<D: BlockIo + ?Sized> Counting<'_, D> {
    fn wrote(&mut self, bytes: u64) {
        self.done += bytes;
        // The second phase is planned only once the first is done: the
        // total is an estimate, and the count never runs past it.
        (self.progress)(self.done.min(self.total), self.total);
    }
}

impl<D: BlockIo + ?Sized> BlockIo for Counting<'_, D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.inner.read_blocks(lba, dst)
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.inner.write_blocks(lba, src)?;
        self.wrote(src.len() as u64);
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        self.inner.write_zeroes(lba, count)?;
        self.wrote(count * u64::from(self.inner.block_size()));
        Ok(())
    }

    fn reads_as_zero(&self) -> bool {
        self.inner.reads_as_zero()
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.inner.flush()
    }
}

/// Of a file entry set `set` (of the file or directory at `path`): whether
/// it is a directory, and its stream extension, to rewrite in place in the
/// copy; `None` when the first entry is not a file entry.
///
/// # Errors
///
/// [`super::ReclusterError::unsupported`] for a file entry without its
/// stream extension second.
pub(super) fn file_stream<'s>(
    set: &'s mut [u8],
    path: &str,
) -> Result<Option<(bool, &'s mut StreamExtensionEntry)>, super::ReclusterError> {
    let (file, rest) = set.split_at_mut(ENTRY.min(set.len()));
    let Ok((file, _)) = FileEntry::ref_from_prefix(file) else {
        return Ok(None);
    };
    let is_dir = file.file_attributes.get() & file_attributes::DIRECTORY != 0;
    match StreamExtensionEntry::mut_from_prefix(rest) {
        Ok((st, _)) if st.entry_type == TYPE_STREAM_EXTENSION => Ok(Some((is_dir, st))),
        _ => Err(super::ReclusterError::unsupported(format!(
            "{path}: a file entry without its stream extension"
        ))),
    }
}

/// Old clusters of the root directory's chain.
pub(super) fn root_chain_len<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
) -> Result<u64, IoError> {
    let g = &model.geometry;
    let RootDir::Cluster(mut c) = g.root else {
        return Ok(0);
    };
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    let mut n = 0u64;
    while (2..=g.cluster_count + 1).contains(&c) && n <= u64::from(g.cluster_count) {
        n += 1;
        c = fat.get(dev, c)?;
    }
    Ok(n)
}
