//! The walk of [`super`]: one pass over the old volume's directories that
//! places every file's data at the new size (kept in order, or copied to
//! free groups), copies the directories and builds the new FAT and bitmap;
//! it writes, or only reads and counts (the plan).

use std::collections::HashMap;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::ClusterBits;
use mkfs_alloc_ondisk::exfat::{secondary_flags, set_checksum, FileEntry};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::FromBytes;

use super::super::disk::{
    file_stream, for_each_entry, read_at, write_at, DirEntry, FatReader, FatWriter,
};
use super::super::groups::{old_clusters, Figures, Groups, Heaps};
use super::super::plan::{DirCopy, Plan};
use super::super::ReclusterError;

/// End of a FAT chain.
const EOC: u32 = 0xFFFF_FFFF;

/// What the walk gives: the new bitmap's and the directory copies' first
/// clusters (the root first), the new clusters in use, the figures.
pub(super) struct Outcome {
    pub(super) bitmap: u32,
    pub(super) dirs: Vec<u32>,
    pub(super) set: u64,
    /// New clusters taken from the free groups.
    pub(super) taken: u64,
    /// Of those, the ones no free group was left for.
    pub(super) short: u64,
    pub(super) free_groups: u64,
    pub(super) fig: Figures,
}

/// One walk over the old volume, writing or only counting.
pub(super) struct Pass<'a> {
    p: &'a Plan,
    write: bool,
    /// The new clusters taken (the new bitmap).
    g: Groups<'a>,
    fig: Figures,
    fat: Option<FatWriter>,
    old_fat: FatReader,
    /// Each directory's first old cluster and its copy's new clusters.
    dir_new: HashMap<u32, Vec<u32>>,
}

impl<'a> Pass<'a> {
    pub(super) fn new(p: &'a Plan, used: &'a ClusterBits, write: bool) -> Self {
        let k = u32::try_from(p.new.cluster_size / p.old.cluster_size).unwrap_or(1);
        Pass {
            p,
            write,
            g: Groups::new(used, k, p.new.cluster_count),
            fig: Figures::default(),
            fat: None,
            old_fat: FatReader::new(p.volume_start + p.old.fat_offset, p.old.fat_bytes),
            dir_new: HashMap::new(),
        }
    }

    fn old_at(&self, c: u32) -> u64 {
        let o = &self.p.old;
        self.p.volume_start + o.heap_offset + u64::from(c - 2) * o.cluster_size
    }

    fn new_at(&self, n: u32) -> u64 {
        let g = &self.p.new;
        self.p.volume_start + g.heap_offset + u64::from(n - 2) * g.cluster_size
    }

    fn take_n(&mut self, bytes: u64) -> Vec<u32> {
        self.g.take_n(bytes, self.p.new.cluster_size)
    }

    fn put<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        at: u64,
        data: &[u8],
    ) -> Result<(), ReclusterError> {
        self.fig.bytes_written += data.len() as u64;
        if self.write && self.g.short == 0 {
            write_at(dev, at, data)?;
        }
        Ok(())
    }

    fn chain<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        clusters: &[u32],
    ) -> Result<(), ReclusterError> {
        if let Some(fat) = self.fat.as_mut() {
            for (i, &n) in clusters.iter().enumerate() {
                fat.set(dev, n, clusters.get(i + 1).copied().unwrap_or(EOC))?;
            }
        }
        Ok(())
    }

    pub(super) fn execute<D: BlockIo + ?Sized>(
        mut self,
        dev: &mut D,
    ) -> Result<Outcome, ReclusterError> {
        let p = self.p;
        let free_groups = self.g.free_groups();
        if self.write {
            let base = p.volume_start + p.new.fat_offset;
            self.fat = Some(FatWriter::create(dev, base, p.new.fat_bytes)?);
        }
        let bitmap = self.take_n(p.bitmap.1);
        self.chain(dev, &bitmap)?;
        let mut firsts = Vec::new();
        for d in &p.dirs {
            let new = self.take_n(d.bytes);
            self.chain(dev, &new)?;
            firsts.push(new[0]);
            self.dir_new.insert(d.old_first, new);
        }
        let upcase = self.place(dev, p.upcase.0, false, p.upcase.1, false)?.0;
        for d in &p.dirs {
            self.copy_dir(dev, d, bitmap[0], upcase)?;
        }
        if let Some(mut fat) = self.fat.take() {
            fat.write_back(dev)?;
        }
        let cn = usize::try_from(p.new.cluster_size).unwrap_or(0);
        let mut bytes = std::mem::take(&mut self.g.bits);
        bytes.resize(bitmap.len() * cn, 0);
        for (i, &n) in bitmap.iter().enumerate() {
            let at = self.new_at(n);
            self.put(dev, at, &bytes[i * cn..(i + 1) * cn])?;
        }
        Ok(Outcome {
            bitmap: bitmap[0],
            dirs: firsts,
            set: self.g.set,
            taken: self.g.taken,
            short: self.g.short,
            free_groups,
            fig: self.fig,
        })
    }

    /// Reads a directory, rewrites its entries (placing every file's data)
    /// and writes its copy, its length rounded up to whole new clusters.
    fn copy_dir<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        d: &DirCopy,
        bitmap: u32,
        upcase: u32,
    ) -> Result<(), ReclusterError> {
        let co = self.p.old.cluster_size;
        let cs = usize::try_from(co).unwrap_or(0);
        let new = self
            .dir_new
            .get(&d.old_first)
            .filter(|n| n.len() as u64 * self.p.new.cluster_size >= d.bytes)
            .cloned()
            .ok_or_else(|| {
                ReclusterError::unsupported(format!("{}: two directories at one cluster", d.path))
            })?;
        let cn = usize::try_from(self.p.new.cluster_size).unwrap_or(0);
        let mut buf = vec![0u8; new.len() * cn];
        let mut c = d.old_first;
        for i in 0..usize::try_from(d.bytes / co).unwrap_or(0) {
            read_at(dev, self.old_at(c), &mut buf[i * cs..(i + 1) * cs])?;
            c = if d.old_contiguous {
                c + 1
            } else {
                self.old_fat.get(dev, c)?
            };
        }
        self.fig.bytes_read += d.bytes;
        let path = d.path.clone();
        let past_end = || {
            ReclusterError::unsupported(format!(
                "{path}: an entry set that runs past the directory's end"
            ))
        };
        let p = self.p;
        for_each_entry(&mut buf, past_end, |e| match e {
            DirEntry::Bitmap(e) => {
                e.first_cluster = U32::new(bitmap);
                e.data_length = U64::new(p.bitmap.1);
                Ok(())
            }
            DirEntry::Upcase(e) => {
                e.first_cluster = U32::new(upcase);
                Ok(())
            }
            DirEntry::Set(set) => self.rewrite_set(dev, set, &d.path),
        })?;
        for (i, &n) in new.iter().enumerate() {
            let at = self.new_at(n);
            self.put(dev, at, &buf[i * cn..(i + 1) * cn])?;
        }
        Ok(())
    }

    /// One file entry set: a directory pointed at its copy, a file's data
    /// placed ([`Pass::place`]), the SetChecksum recomputed.
    fn rewrite_set<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        set: &mut [u8],
        path: &str,
    ) -> Result<(), ReclusterError> {
        let Some((is_dir, stream)) = file_stream(set, path)? else {
            return Ok(());
        };
        let first = stream.first_cluster.get();
        let flags = stream.general_secondary_flags;
        let length = stream.data_length.get();
        if is_dir && first != 0 {
            let new = self.dir_new.get(&first).ok_or_else(|| {
                ReclusterError::unsupported(format!("{path}: a directory not seen when planning"))
            })?;
            let bytes = new.len() as u64 * self.p.new.cluster_size;
            stream.first_cluster = U32::new(new[0]);
            stream.general_secondary_flags = flags & !secondary_flags::NO_FAT_CHAIN;
            stream.data_length = U64::new(bytes);
            stream.valid_data_length = U64::new(bytes);
        } else if !is_dir {
            let (co, cn) = (self.p.old.cluster_size, self.p.new.cluster_size);
            self.fig.files += 1;
            self.fig.file_bytes += length;
            self.fig.allocated.0 += length.div_ceil(co) * co;
            self.fig.allocated.1 += length.div_ceil(cn) * cn;
            if length == 0 {
                // No data, no allocation (exFAT specification §6.4.4: 0).
                stream.first_cluster = U32::new(0);
            } else if first != 0 {
                let contiguous = flags & secondary_flags::NO_FAT_CHAIN != 0;
                let (new_first, chained) = self.place(dev, first, contiguous, length, true)?;
                stream.first_cluster = U32::new(new_first);
                if chained {
                    stream.general_secondary_flags = flags & !secondary_flags::NO_FAT_CHAIN;
                }
            }
        }
        let sum = set_checksum(set);
        if let Ok((file, _)) = FileEntry::mut_from_prefix(set) {
            file.set_checksum = U16::new(sum);
        }
        Ok(())
    }

    /// The `length` bytes of data from old cluster `first` (chained or
    /// contiguous) at the new size: kept in place when in order in whole
    /// groups no other data starts, else copied to free groups. Returns the
    /// first new cluster and whether a FAT chain describes it.
    fn place<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        first: u32,
        contiguous: bool,
        length: u64,
        file: bool,
    ) -> Result<(u32, bool), ReclusterError> {
        let co = self.p.old.cluster_size;
        let n_old = length.div_ceil(co);
        if n_old == 0 {
            return Ok((0, false));
        }
        let old_last = self.p.old.cluster_count + 1;
        let old = old_clusters(
            dev,
            &mut self.old_fat,
            (first, contiguous),
            n_old,
            old_last,
            u32::MAX,
        )?;
        if let Some(groups) = self.g.keep(&old) {
            if file {
                self.fig.kept += 1;
            }
            if contiguous {
                return Ok((groups[0], false));
            }
            self.chain(dev, &groups)?;
            return Ok((groups[0], true));
        }
        let new = self.take_n(length);
        let write = self.write && self.g.short == 0;
        let bytes = Heaps::of(self.p).copy(dev, (&old, &new), self.g.k, write)?;
        self.fig.bytes_read += bytes;
        self.fig.bytes_written += bytes;
        self.chain(dev, &new)?;
        self.fig.moved += n_old;
        if file {
            self.fig.files_moved += 1;
        }
        Ok((new[0], true))
    }
}
