//! Allocation: one bit per cluster, and the passes after the walk that
//! compare it with what the volume marks in use (the FAT and the exFAT
//! bitmap streamed in pieces) and the FAT copies with each other.

use mkfs_alloc_blockio::BlockIo;

use super::walk::Model;
use super::Finding;
use crate::chain::{ChainReader, Next, Source};
use crate::error::InspectError;
use crate::io::MAX_READ;
use mkfs_alloc_ondisk::fat::table as fat_table;

/// One bit per cluster of a volume (cluster 2 is bit 0): 1/8 byte per
/// cluster, 64 MiB for the 2^29 clusters of 2 TiB at 4 KiB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterBits {
    words: Vec<u64>,
    count: u32,
}

impl ClusterBits {
    /// All clear, for clusters 2..=count + 1.
    pub fn new(count: u32) -> Self {
        let words = usize::try_from(u64::from(count).div_ceil(64)).unwrap_or(0);
        ClusterBits {
            words: vec![0; words],
            count,
        }
    }

    fn index(&self, cluster: u32) -> Option<(usize, u64)> {
        let i = cluster.checked_sub(2)?;
        if i >= self.count {
            return None;
        }
        Some((usize::try_from(i / 64).ok()?, 1u64 << (i % 64)))
    }

    /// Whether `cluster` is set (false outside the volume).
    pub fn get(&self, cluster: u32) -> bool {
        self.index(cluster)
            .and_then(|(w, bit)| self.words.get(w).map(|x| x & bit != 0))
            .unwrap_or(false)
    }

    /// Sets `cluster`; returns whether it was set before (true outside the
    /// volume, so that a cluster out of range is never taken as new).
    pub fn set(&mut self, cluster: u32) -> bool {
        let Some((w, bit)) = self.index(cluster) else {
            return true;
        };
        match self.words.get_mut(w) {
            Some(x) => {
                let was = *x & bit != 0;
                *x |= bit;
                was
            }
            None => true,
        }
    }

    /// Clusters set.
    pub fn count_set(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Clusters covered.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// True when the volume has no clusters.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of memory the bits take.
    pub fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// A count of clusters and the first of them.
#[derive(Default)]
struct Tally {
    count: u64,
    first: u32,
}

impl Tally {
    fn add(&mut self, cluster: u32) {
        if self.count == 0 {
            self.first = cluster;
        }
        self.count += 1;
    }
}

impl<D: BlockIo + ?Sized> Model<'_, '_, D> {
    /// Hands every FAT entry of clusters 2..=max to `each`, decoded, the
    /// FAT read in pieces of at most 1 MiB (FAT12, at most 6 KiB: entry by
    /// entry through the window).
    fn stream_fat(&mut self, each: &mut dyn FnMut(u32, Next)) -> Result<(), InspectError> {
        let kind = self.geometry.kind;
        let max = self.geo.max_cluster();
        if kind == crate::FsKind::Fat12 {
            for n in 2..=max {
                each(n, self.fat.next(self.r, n)?);
            }
            return Ok(());
        }
        let width = fat_table::entry_span(kind);
        let per_piece = MAX_READ as u64 / width;
        let base = self.geometry.fat_offset
            + u64::from(self.geometry.active_fat) * self.geometry.fat_bytes;
        let mut buf = Vec::new();
        let mut n = 2u64;
        while n <= u64::from(max) {
            let count = per_piece.min(u64::from(max) + 1 - n);
            buf.resize(usize::try_from(count * width).unwrap_or(0), 0);
            self.r.read_at("FAT", base + n * width, &mut buf)?;
            for (i, e) in buf
                .chunks_exact(usize::try_from(width).unwrap_or(4))
                .enumerate()
            {
                let v = fat_table::read_entry(kind, e, 0).unwrap_or(0);
                let cluster = u32::try_from(n + i as u64).unwrap_or(u32::MAX);
                each(cluster, self.fat.decode(v));
            }
            n += count;
        }
        Ok(())
    }

    /// FAT12/16/32 after the walk: entries in use that no chain reached
    /// (lost), entries marked bad, and the clean-shutdown bit of entry 1.
    pub(super) fn fat_pass(&mut self) -> Result<(), InspectError> {
        let (mut lost, mut bad) = (Tally::default(), Tally::default());
        let (mut allocated, mut free) = (0u64, 0u64);
        let used = std::mem::replace(&mut self.used, ClusterBits::new(0));
        self.stream_fat(&mut |n, next| match next {
            Next::Free => free += 1,
            Next::Bad => bad.add(n),
            _ => {
                allocated += 1;
                if !used.get(n) {
                    lost.add(n);
                }
            }
        })?;
        self.used = used;
        self.allocated = allocated;
        self.free = free;
        self.tallies(lost, bad, None);
        let clean_bit = match self.geometry.kind {
            crate::FsKind::Fat16 => Some(0x8000),
            crate::FsKind::Fat32 => Some(0x0800_0000),
            _ => None,
        };
        if let Some(bit) = clean_bit {
            if self.fat.entry(self.r, 1)? & bit == 0 {
                self.find(Finding::Dirty {
                    mark: super::DirtyMark::FatCleanBit,
                });
            }
        }
        Ok(())
    }

    /// exFAT after the walk: the bitmap against the chains (set but not
    /// reached: lost; reached but clear: a bitmap bit missing), and the
    /// FAT's bad-cluster marks.
    pub(super) fn bitmap_pass(&mut self, first: u32, len: u64) -> Result<(), InspectError> {
        let cc = u64::from(self.geo.cluster_count);
        let need = cc.div_ceil(8);
        if len < need {
            self.find(Finding::DamagedEntry {
                dir: "/".into(),
                offset: self.geo.cluster_offset(first),
                what: format!("allocation bitmap of {len} bytes, {need} needed for {cc} clusters"),
            });
            return Ok(());
        }
        let mut bad = Tally::default();
        self.stream_fat(&mut |n, next| {
            if next == Next::Bad {
                bad.add(n);
            }
        })?;
        let (mut lost, mut clear) = (Tally::default(), Tally::default());
        let mut allocated = 0u64;
        let mut reader = ChainReader::new(Source::Chain(first), need);
        let mut cluster = 2u32;
        let what = || "allocation bitmap".to_string();
        while let Some(piece) = reader.next_piece(self.r, &mut self.fat, &self.geo, None, &what)? {
            for &byte in piece {
                for bit in 0..8 {
                    if u64::from(cluster) > cc + 1 {
                        break;
                    }
                    let marked = byte >> bit & 1 != 0;
                    allocated += u64::from(marked);
                    if marked != self.used.get(cluster)
                        // A bad cluster is neither lost nor in use; its FAT
                        // entry is read only for a mismatch (rare).
                        && (bad.count == 0 || self.fat.next(self.r, cluster)? != Next::Bad)
                    {
                        if marked {
                            lost.add(cluster);
                        } else {
                            clear.add(cluster);
                        }
                    }
                    cluster += 1;
                }
            }
        }
        self.allocated = allocated;
        self.free = cc - allocated.min(cc);
        self.tallies(lost, bad, Some(clear));
        Ok(())
    }

    fn tallies(&mut self, lost: Tally, bad: Tally, clear: Option<Tally>) {
        if lost.count > 0 {
            self.find(Finding::LostClusters {
                count: lost.count,
                first: lost.first,
            });
        }
        if let Some(c) = clear.filter(|c| c.count > 0) {
            self.find(Finding::BitmapClear {
                count: c.count,
                first: c.first,
            });
        }
        if bad.count > 0 {
            self.find(Finding::BadClusters {
                count: bad.count,
                first: bad.first,
            });
        }
    }

    /// FAT12/16/32 with several FATs: each copy against the first, streamed
    /// in pieces of at most 1 MiB each.
    pub(super) fn compare_fat_copies(&mut self) -> Result<(), InspectError> {
        let g = &self.geometry;
        let (base, len, copies) = (g.fat_offset, g.fat_bytes, g.fat_count);
        let piece = MAX_READ.min(usize::try_from(len).unwrap_or(MAX_READ));
        let (mut a, mut b) = (vec![0u8; piece], vec![0u8; piece]);
        for copy in 1..copies {
            let other = base + u64::from(copy) * len;
            let (mut pos, mut differ, mut first) = (0u64, 0u64, None);
            while pos < len {
                let n = usize::try_from((len - pos).min(piece as u64)).unwrap_or(piece);
                self.r.read_at("FAT", base + pos, &mut a[..n])?;
                self.r.read_at("FAT copy", other + pos, &mut b[..n])?;
                for (i, (x, y)) in a[..n].iter().zip(&b[..n]).enumerate() {
                    if x != y {
                        differ += 1;
                        first.get_or_insert(pos + i as u64);
                    }
                }
                pos += n as u64;
            }
            if let Some(first_offset) = first {
                self.find(Finding::FatCopiesDiffer {
                    copy,
                    bytes: differ,
                    first_offset,
                });
            }
        }
        Ok(())
    }
}
