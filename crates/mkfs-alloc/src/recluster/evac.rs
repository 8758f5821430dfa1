//! The evacuation: the first phase of a re-cluster whose new FAT covers the
//! heap's first old clusters (`2 .. 2 + P`, [`Plan::evacuate`]). It leaves
//! an intermediate volume at the old cluster size, with the old FAT at its
//! place, whose prefix clusters are all free; the re-cluster then runs on
//! it with the heap's start moved past them.
//!
//! ```text
//!  1 intent record (phase 1) at sector 24, flush
//!  2 VolumeDirty on the old boot sector, flush
//!  3 into clusters the old volume has free, past the prefix:
//!    - each file chain that has a cluster in the prefix, from its first
//!      cluster to its last one in the prefix: data copied, a new chain
//!      whose last entry points at the rest of the old chain (a NoFatChain
//!      file gets a chain over its clusters, its flag cleared);
//!    - the up-case table when it has a cluster in the prefix;
//!    - a new bitmap and a copy of every directory, entries rewritten
//!      (first clusters, flags, SetChecksums);
//!    flush
//!  4 backup boot region (another root directory), flush ◄─ the switch
//!    main boot region, flush
//! ```
//!
//! Crash safety, as the re-cluster's own ([`super`]): before the switch
//! the old volume's bytes are unchanged but for VolumeDirty and FAT
//! entries it does not read (those of clusters it has free, and those of
//! NoFatChain files), so it stays valid and authoritative; a cut redoes
//! the phase. The boot regions differ from the old ones in sector 0 (the
//! root directory's first cluster, PercentInUse) and the checksum sector:
//! a torn main region fails its checksum, and the backup is the complete
//! intermediate volume (its bitmap, directories and chains were flushed
//! before it). Once the main region names the intermediate volume, the
//! rerun plans the re-cluster from it: its prefix is free.

use std::collections::{BTreeSet, HashMap};

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{ClusterBits, EntrySet};
use mkfs_alloc_ondisk::exfat::{
    file_attributes, secondary_flags, set_checksum, FileEntry, StreamExtensionEntry,
    TYPE_STREAM_EXTENSION,
};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::FromBytes;

use super::disk::{for_each_entry, read_at, write_at, DirEntry, FatReader, FatWriter};
use super::plan::{Evacuation, Plan, Refusal};
use super::ReclusterError;

/// Bytes of a directory entry.
const ENTRY: usize = 32;
/// End of a FAT chain.
const EOC: u32 = 0xFFFF_FFFF;

/// What an evacuation leaves: the intermediate volume's root directory and
/// PercentInUse, and its figures.
pub(super) struct Outcome {
    pub(super) root: u32,
    pub(super) percent: u8,
    /// The new bitmap's first cluster.
    pub(super) bitmap: u32,
    /// Clusters its bitmap marks in use.
    pub(super) used: u64,
    pub(super) figures: Evacuation,
}

/// One evacuation, run for real or only counted (`write` false: reads
/// only, what planning does to refuse before the first write).
pub(super) struct Evac<'a> {
    pub(super) plan: &'a Plan,
    /// The old volume's used clusters.
    pub(super) used: &'a ClusterBits,
    /// The old bitmap's bytes.
    pub(super) bitmap_bytes: u64,
    /// The directories' entry sets (the root not among them).
    pub(super) dirs: &'a [EntrySet],
    /// Old clusters of the root directory.
    pub(super) root_clusters: u64,
    /// Whether to write.
    pub(super) write: bool,
    /// A shrink to this many clusters: the window is the clusters past
    /// them and the copies go below their end (`None`: the heap's first
    /// clusters, [`Plan::evacuate`], copied past them).
    pub(super) shrink_to: Option<u32>,
}

/// The running state: the intermediate bitmap (which also says which old
/// clusters are taken), the allocation cursor, the figures.
struct Work {
    bits: Vec<u8>,
    set: u64,
    cursor: u32,
    fig: Evacuation,
    fat_sectors: BTreeSet<u64>,
}

impl Evac<'_> {
    fn abs(&self, rel: u64) -> u64 {
        self.plan.volume_start + rel
    }

    fn at(&self, c: u32) -> u64 {
        let o = &self.plan.old;
        self.abs(o.heap_offset + u64::from(c - 2) * o.cluster_size)
    }

    fn limit(&self) -> u32 {
        2 + self.plan.evacuate.as_ref().map_or(0, |e| e.clusters)
    }

    fn put<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        w: &mut Work,
        at: u64,
        data: &[u8],
    ) -> Result<(), ReclusterError> {
        w.fig.bytes_written += data.len() as u64;
        if self.write {
            write_at(dev, at, data)?;
        }
        Ok(())
    }

    fn fat_set<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        w: &mut Work,
        fat: &mut FatWriter,
        n: u32,
        v: u32,
    ) -> Result<(), ReclusterError> {
        w.fat_sectors
            .insert(u64::from(n) * 4 / u64::from(self.plan.sector_size));
        if self.write {
            fat.set(dev, n, v)?;
        }
        Ok(())
    }

    fn mark(w: &mut Work, c: u32) {
        let i = (c - 2) as usize;
        if let Some(b) = w.bits.get_mut(i / 8) {
            if *b & (1 << (i % 8)) == 0 {
                *b |= 1 << (i % 8);
                w.set += 1;
            }
        }
    }

    fn taken(w: &Work, c: u32) -> bool {
        let i = (c - 2) as usize;
        w.bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    /// Whether cluster `c` lies in the window whose data moves.
    fn moving(&self, c: u32) -> bool {
        match self.shrink_to {
            Some(n) => c > n + 1,
            None => c < self.limit(),
        }
    }

    /// The clusters copies may go to (first, last).
    fn target(&self) -> (u32, u32) {
        match self.shrink_to {
            Some(n) => (2, n + 1),
            None => (self.limit(), self.plan.old.cluster_count + 1),
        }
    }

    fn free(&self, w: &Work, c: u32) -> bool {
        !self.moving(c) && !self.used.get(c) && !Self::taken(w, c)
    }

    /// `k` contiguous old clusters free in the old volume outside the
    /// window, first fit from the cursor; marked taken.
    fn run(&self, w: &mut Work, k: u64) -> Result<u32, ReclusterError> {
        let (first, last) = self.target();
        let k = u32::try_from(k.max(1)).unwrap_or(u32::MAX);
        let (mut start, mut n) = (w.cursor, w.cursor);
        while n <= last {
            if !self.free(w, n) {
                n += 1;
                start = n;
                continue;
            }
            if n - start + 1 == k {
                for c in start..=n {
                    Self::mark(w, c);
                }
                w.cursor = n + 1;
                w.fig.allocated += u64::from(k) * self.plan.old.cluster_size;
                return Ok(start);
            }
            n += 1;
        }
        let free = (first..=last).filter(|&c| !self.used.get(c)).count() as u64;
        Err(ReclusterError::Refused(Refusal::TooLittleSpace {
            need: w.fig.allocated + u64::from(k) * self.plan.old.cluster_size,
            free: free * self.plan.old.cluster_size,
        }))
    }

    /// `n` old clusters of a chain from `first` (contiguous or through the
    /// old FAT).
    fn walk<D: BlockIo + ?Sized>(
        dev: &mut D,
        fat: &mut FatReader,
        first: u32,
        contiguous: bool,
        n: u64,
    ) -> Result<Vec<u32>, ReclusterError> {
        let mut v = Vec::new();
        let mut c = first;
        for i in 0..n {
            v.push(c);
            if i + 1 < n {
                c = if contiguous { c + 1 } else { fat.get(dev, c)? };
            }
        }
        Ok(v)
    }

    /// Copies old clusters `from` to `to`, one by one.
    fn copy<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        w: &mut Work,
        from: &[u32],
        to: &[u32],
    ) -> Result<(), ReclusterError> {
        let cs = usize::try_from(self.plan.old.cluster_size).unwrap_or(0);
        let mut buf = vec![0u8; cs];
        for (&f, &t) in from.iter().zip(to) {
            w.fig.bytes_read += cs as u64;
            if self.write {
                read_at(dev, self.at(f), &mut buf)?;
            }
            self.put(dev, w, self.at(t), &buf)?;
            w.fig.moved += 1;
        }
        Ok(())
    }

    /// A chain over `clusters` in the FAT, its last entry `tail`.
    fn chain<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        w: &mut Work,
        fat: &mut FatWriter,
        clusters: &[u32],
        tail: u32,
    ) -> Result<(), ReclusterError> {
        for (i, &c) in clusters.iter().enumerate() {
            let next = clusters.get(i + 1).copied().unwrap_or(tail);
            self.fat_set(dev, w, fat, c, next)?;
        }
        Ok(())
    }

    /// Runs (or counts) the evacuation's step 3; the intent record, the
    /// dirty mark and the switch are the caller's.
    pub(super) fn execute<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
    ) -> Result<Outcome, ReclusterError> {
        let p = self.plan;
        let co = p.old.cluster_size;
        let count = self.shrink_to.unwrap_or(p.old.cluster_count);
        let mut w = Work {
            bits: vec![0; usize::try_from(u64::from(count).div_ceil(8)).unwrap_or(0)],
            set: 0,
            cursor: self.target().0,
            fig: p.evacuate.clone().unwrap_or_default(),
            fat_sectors: BTreeSet::new(),
        };
        w.fig.moved = 0;
        // Bad clusters stay bad in the intermediate FAT (kept) and are set
        // in its bitmap, so no copy goes there (bad.rs).
        for &c in &p.bad_clusters {
            Self::mark(&mut w, c);
        }
        let mut old_fat = FatReader::new(self.abs(p.old.fat_offset), p.old.fat_bytes);
        let mut fat = FatWriter::open(self.abs(p.old.fat_offset), p.old.fat_bytes);
        let bm_k = self.bitmap_bytes.div_ceil(co).max(1);
        let bitmap = self.run(&mut w, bm_k)?;
        let (up_first, up_bytes) = p.upcase;
        let up_k = up_bytes.div_ceil(co).max(1);
        let up_chain = Self::walk(dev, &mut old_fat, up_first, false, up_k)?;
        let upcase = if up_chain.iter().any(|&c| self.moving(c)) {
            let to = self.run(&mut w, up_k)?;
            let run: Vec<u32> = (to..to + u32::try_from(up_k).unwrap_or(0)).collect();
            self.copy(dev, &mut w, &up_chain, &run)?;
            self.chain(dev, &mut w, &mut fat, &run, EOC)?;
            to
        } else {
            up_chain.iter().for_each(|&c| Self::mark(&mut w, c));
            up_first
        };
        // Every directory gets a copy: (old first, contiguous, bytes, new first).
        let mut list = vec![(p.old.root_cluster, false, self.root_clusters * co, 0u32)];
        for s in self
            .dirs
            .iter()
            .filter(|s| s.is_dir && s.first_cluster != 0)
        {
            list.push((s.first_cluster, s.contiguous, s.size.div_ceil(co) * co, 0));
        }
        for d in &mut list {
            d.3 = self.run(&mut w, d.2 / co)?;
        }
        let map: HashMap<u32, u32> = list.iter().map(|d| (d.0, d.3)).collect();
        for &(first, contiguous, bytes, to) in &list {
            let k = bytes / co;
            let from = Self::walk(dev, &mut old_fat, first, contiguous, k)?;
            let mut buf = vec![0u8; usize::try_from(bytes).unwrap_or(0)];
            let cs = usize::try_from(co).unwrap_or(0);
            for (i, &c) in from.iter().enumerate() {
                w.fig.bytes_read += co;
                read_at(dev, self.at(c), &mut buf[i * cs..(i + 1) * cs])?;
            }
            let ctx = Ctx {
                bitmap,
                upcase,
                map: &map,
            };
            self.rewrite(dev, &mut w, &mut old_fat, &mut fat, &mut buf, &ctx)?;
            self.put(dev, &mut w, self.at(to), &buf)?;
            let run: Vec<u32> = (to..to + u32::try_from(k).unwrap_or(0)).collect();
            self.chain(dev, &mut w, &mut fat, &run, EOC)?;
        }
        let run: Vec<u32> = (bitmap..bitmap + u32::try_from(bm_k).unwrap_or(0)).collect();
        self.chain(dev, &mut w, &mut fat, &run, EOC)?;
        let mut bytes = w.bits.clone();
        bytes.resize(usize::try_from(bm_k * co).unwrap_or(0), 0);
        self.put(dev, &mut w, self.at(bitmap), &bytes)?;
        if self.write {
            fat.write_back(dev)?;
        }
        w.fig.bytes_written += w.fat_sectors.len() as u64 * u64::from(p.sector_size);
        w.fig.bytes_read += p.old.fat_bytes;
        let percent = u8::try_from(w.set * 100 / u64::from(count.max(1))).unwrap_or(100);
        Ok(Outcome {
            root: map.get(&p.old.root_cluster).copied().unwrap_or(0),
            percent,
            bitmap,
            used: w.set,
            figures: w.fig,
        })
    }

    /// Rewrites one directory's entries for the intermediate volume.
    fn rewrite<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        w: &mut Work,
        old_fat: &mut FatReader,
        fat: &mut FatWriter,
        buf: &mut [u8],
        ctx: &Ctx<'_>,
    ) -> Result<(), ReclusterError> {
        let past_end = || {
            ReclusterError::unsupported("an entry set that runs past its directory's end".into())
        };
        for_each_entry(buf, past_end, |e| match e {
            DirEntry::Bitmap(e) => {
                e.first_cluster = U32::new(ctx.bitmap);
                e.data_length = U64::new(self.bitmap_bytes);
                Ok(())
            }
            DirEntry::Upcase(e) => {
                e.first_cluster = U32::new(ctx.upcase);
                Ok(())
            }
            DirEntry::Set(set) => self.rewrite_set(dev, w, old_fat, fat, set, ctx),
        })
    }

    /// One file entry set: a directory points at its copy, a file's chain
    /// is relocated when it has a cluster in the prefix.
    fn rewrite_set<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        w: &mut Work,
        old_fat: &mut FatReader,
        fat: &mut FatWriter,
        set: &mut [u8],
        ctx: &Ctx<'_>,
    ) -> Result<(), ReclusterError> {
        let (file, rest) = set.split_at_mut(ENTRY);
        let Ok((file, _)) = FileEntry::ref_from_prefix(file) else {
            return Ok(());
        };
        let is_dir = file.file_attributes.get() & file_attributes::DIRECTORY != 0;
        let stream = match StreamExtensionEntry::mut_from_prefix(rest) {
            Ok((st, _)) if st.entry_type == TYPE_STREAM_EXTENSION => st,
            _ => {
                return Err(ReclusterError::unsupported(
                    "a file entry without its stream extension".into(),
                ))
            }
        };
        let first = stream.first_cluster.get();
        if first == 0 {
            return Ok(());
        }
        let flags = stream.general_secondary_flags;
        let contiguous = flags & secondary_flags::NO_FAT_CHAIN != 0;
        if is_dir {
            let to = ctx.map.get(&first).copied().ok_or_else(|| {
                ReclusterError::unsupported("a directory not seen when planning".into())
            })?;
            stream.first_cluster = U32::new(to);
            stream.general_secondary_flags = flags & !secondary_flags::NO_FAT_CHAIN;
        } else {
            let need = stream
                .data_length
                .get()
                .div_ceil(self.plan.old.cluster_size);
            let chain = Self::walk(dev, old_fat, first, contiguous, need)?;
            match chain.iter().rposition(|&c| self.moving(c)) {
                None => chain.iter().for_each(|&c| Self::mark(w, c)),
                Some(j) => {
                    let mut to = Vec::with_capacity(j + 1);
                    for _ in 0..=j {
                        to.push(self.run(w, 1)?);
                    }
                    self.copy(dev, w, &chain[..=j], &to)?;
                    let rest = &chain[j + 1..];
                    self.chain(dev, w, fat, &to, rest.first().copied().unwrap_or(EOC))?;
                    if contiguous {
                        self.chain(dev, w, fat, rest, EOC)?;
                    }
                    rest.iter().for_each(|&c| Self::mark(w, c));
                    stream.first_cluster = U32::new(to[0]);
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
}

/// Where the rewritten entries point.
struct Ctx<'m> {
    bitmap: u32,
    upcase: u32,
    map: &'m HashMap<u32, u32>,
}
