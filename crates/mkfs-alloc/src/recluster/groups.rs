//! The new clusters of a re-cluster to a larger size, `k` old clusters
//! each (a group), shared by the exFAT (`coarse/walk.rs`) and the FAT
//! (`fat/coarse.rs`) walks: which are taken (a bit per new cluster), which
//! are wholly free in the old volume (where copies can go, first fit from
//! the heap's start), and whether a run of old clusters can keep its place.
//! New cluster 2 starts at old cluster 2 (the heap keeps its offset) or,
//! for a FAT12/16 whose new data region starts later, at a later one
//! ([`Groups::based`]).

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_inspect::model::ClusterBits;

use super::disk::{read_at, write_at, FatReader, FatWriter};
use super::plan::Plan;
use super::ReclusterError;

/// A walk's counts.
#[derive(Default)]
pub(super) struct Figures {
    pub(in super::super) files: u64,
    pub(in super::super) file_bytes: u64,
    pub(in super::super) kept: u64,
    pub(in super::super) files_moved: u64,
    /// Old clusters copied.
    pub(in super::super) moved: u64,
    /// Bytes the files take at the old and the new size.
    pub(in super::super) allocated: (u64, u64),
    pub(in super::super) bytes_read: u64,
    pub(in super::super) bytes_written: u64,
}

impl Figures {
    /// A larger size's figures ([`super::Coarse`]): `group` old clusters
    /// of `old_c` bytes per new one of `new_c`, `free_groups` new clusters
    /// wholly free, `shortened` bytes cut from the volume's end.
    pub(super) fn coarse(
        &self,
        (group, old_c, new_c): (u32, u64, u64),
        heap_aligned: bool,
        free_groups: u64,
        shortened: u64,
    ) -> super::Coarse {
        let a = self.allocated;
        super::Coarse {
            group,
            heap_aligned,
            files_kept: self.kept,
            files_moved: self.files_moved,
            bytes_moved: self.moved * old_c,
            slack: (
                a.0 - self.file_bytes.min(a.0),
                a.1 - self.file_bytes.min(a.1),
            ),
            free_groups: free_groups * new_c,
            shortened,
        }
    }
}

/// The new clusters `2..=last` over the old volume's `used` clusters.
pub(super) struct Groups<'a> {
    used: &'a ClusterBits,
    /// Old clusters per new cluster.
    pub(super) k: u32,
    last: u32,
    /// The old cluster new cluster 2 starts at.
    base: u32,
    /// A bit per new cluster: taken (the new bitmap in exFAT).
    pub(super) bits: Vec<u8>,
    /// New clusters taken.
    pub(super) set: u64,
    cursor: u32,
    /// New clusters taken from the free groups.
    pub(super) taken: u64,
    /// Of those, the ones no free group was left for.
    pub(super) short: u64,
}

impl<'a> Groups<'a> {
    /// `count` new clusters of `k` old clusters each.
    pub(super) fn new(used: &'a ClusterBits, k: u32, count: u32) -> Self {
        let bytes = usize::try_from(u64::from(count).div_ceil(8)).unwrap_or(0);
        Groups {
            used,
            k,
            last: count + 1,
            base: 2,
            bits: vec![0; bytes],
            set: 0,
            cursor: 2,
            taken: 0,
            short: 0,
        }
    }

    /// The same groups with new cluster 2 starting at old cluster `base`
    /// (the old clusters before it are not in the new data region).
    pub(super) fn based(mut self, base: u32) -> Self {
        self.base = base.max(2);
        self
    }

    /// Whether new cluster `n` is taken.
    pub(super) fn get(&self, n: u32) -> bool {
        let i = (n - 2) as usize;
        self.bits
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    /// Takes new cluster `n`.
    pub(super) fn mark(&mut self, n: u32) {
        let i = (n - 2) as usize;
        if let Some(b) = self.bits.get_mut(i / 8) {
            if *b & (1 << (i % 8)) == 0 {
                *b |= 1 << (i % 8);
                self.set += 1;
            }
        }
    }

    /// Whether every old cluster new cluster `n` covers is free in the old
    /// volume (those past its last cluster are).
    pub(super) fn group_free(&self, n: u32) -> bool {
        let first = (n - 2) * self.k + self.base;
        (first..first + self.k).all(|c| !self.used.get(c))
    }

    /// New clusters wholly free in the old volume.
    pub(super) fn free_groups(&self) -> u64 {
        (2..=self.last).filter(|&n| self.group_free(n)).count() as u64
    }

    /// The next new cluster wholly free in the old volume and not taken;
    /// none left: counted short (cluster 2 stands in, never written).
    pub(super) fn take(&mut self) -> u32 {
        self.taken += 1;
        while self.cursor <= self.last {
            let n = self.cursor;
            self.cursor += 1;
            if self.group_free(n) && !self.get(n) {
                self.mark(n);
                return n;
            }
        }
        self.short += 1;
        2
    }

    /// [`Groups::take`] for `bytes` at `cluster`-byte new clusters (one at
    /// least).
    pub(super) fn take_n(&mut self, bytes: u64, cluster: u64) -> Vec<u32> {
        let n = bytes.div_ceil(cluster).max(1);
        (0..n).map(|_| self.take()).collect()
    }

    /// The new cluster old cluster `c` (at or past the base) is part of.
    pub(super) fn group(&self, c: u32) -> u32 {
        (c - self.base) / self.k + 2
    }

    /// Whether the data in old clusters `old` (in file order) can keep its
    /// place: every `k`-th cluster starts a group not taken and inside the
    /// new heap, the others follow it. Kept: its groups are taken and
    /// returned.
    pub(super) fn keep(&mut self, old: &[u32]) -> Option<Vec<u32>> {
        let k = self.k as usize;
        let in_order = old.iter().enumerate().all(|(i, &c)| {
            if i % k == 0 {
                c >= self.base
                    && (c - self.base) % self.k == 0
                    && self.group(c) <= self.last
                    && !self.get(self.group(c))
            } else {
                c == old[i - 1] + 1
            }
        });
        if !in_order || old.is_empty() {
            return None;
        }
        let groups: Vec<u32> = old.iter().step_by(k).map(|&c| self.group(c)).collect();
        for &n in &groups {
            self.mark(n);
        }
        Some(groups)
    }
}

/// A FAT read entry by entry (FAT32's window or a FAT12/16 table).
pub(super) trait ReadEntry {
    /// Entry `n`.
    fn entry<D: BlockIo + ?Sized>(&mut self, dev: &mut D, n: u32) -> Result<u32, IoError>;
}

/// A FAT written entry by entry.
pub(super) trait WriteEntry {
    /// Sets entry `n` to `value` (the width's bits of it).
    fn set_entry<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        n: u32,
        value: u32,
    ) -> Result<(), IoError>;
    /// Writes what is held back.
    fn write_held<D: BlockIo + ?Sized>(&mut self, dev: &mut D) -> Result<(), IoError>;
}

/// [`ReadEntry`] (and, with `write`, [`WriteEntry`]) for a type whose
/// own `get`, `set` and `write_back` do it.
macro_rules! entries_by_own_methods {
    ($t:ty) => {
        impl $crate::recluster::groups::ReadEntry for $t {
            fn entry<D: BlockIo + ?Sized>(&mut self, dev: &mut D, n: u32) -> Result<u32, IoError> {
                self.get(dev, n)
            }
        }
    };
    ($t:ty, write) => {
        impl $crate::recluster::groups::WriteEntry for $t {
            fn set_entry<D: BlockIo + ?Sized>(
                &mut self,
                dev: &mut D,
                n: u32,
                value: u32,
            ) -> Result<(), IoError> {
                self.set(dev, n, value)
            }
            fn write_held<D: BlockIo + ?Sized>(&mut self, dev: &mut D) -> Result<(), IoError> {
                self.write_back(dev)
            }
        }
    };
}
pub(super) use entries_by_own_methods;

entries_by_own_methods!(FatReader);
entries_by_own_methods!(FatWriter, write);

/// The `n` old clusters of data from old cluster `first`, following the
/// FAT (or each other, `contiguous`); refused where they leave the heap
/// (`2..=last`).
pub(super) fn old_clusters<D: BlockIo + ?Sized, R: ReadEntry>(
    dev: &mut D,
    fat: &mut R,
    (first, contiguous): (u32, bool),
    n: u64,
    last: u32,
    mask: u32,
) -> Result<Vec<u32>, ReclusterError> {
    let mut old = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut c = first;
    for i in 0..n {
        if !(2..=last).contains(&c) {
            return Err(ReclusterError::unsupported(format!(
                "a chain that leaves the heap at cluster {c}"
            )));
        }
        old.push(c);
        if i + 1 < n {
            c = if contiguous {
                c + 1
            } else {
                fat.entry(dev, c)? & mask
            };
        }
    }
    Ok(old)
}

/// Where a plan's old and new clusters are on the medium.
#[derive(Clone, Copy)]
pub(super) struct Heaps {
    start: u64,
    old: (u64, u64),
    new: (u64, u64),
}

impl Heaps {
    /// The heaps of `p`.
    pub(super) fn of(p: &Plan) -> Self {
        Heaps {
            start: p.volume_start,
            old: (p.old.heap_offset, p.old.cluster_size),
            new: (p.new.heap_offset, p.new.cluster_size),
        }
    }

    /// Absolute byte offset of old cluster `c`.
    pub(super) fn old_at(&self, c: u32) -> u64 {
        self.start + self.old.0 + u64::from(c - 2) * self.old.1
    }

    /// Absolute byte offset of new cluster `n`.
    pub(super) fn new_at(&self, n: u32) -> u64 {
        self.start + self.new.0 + u64::from(n - 2) * self.new.1
    }

    /// Copies the data of old clusters `old`, `k` at a time, into the new
    /// clusters `new` (reading and writing only if `write`); returns the
    /// bytes copied.
    pub(super) fn copy<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        (old, new): (&[u32], &[u32]),
        k: u32,
        write: bool,
    ) -> Result<u64, ReclusterError> {
        let cs = usize::try_from(self.old.1).unwrap_or(0);
        let k = k as usize;
        let mut buf = vec![0u8; if write { k * cs } else { 0 }];
        let mut bytes = 0;
        for (piece, &n) in old.chunks(k.max(1)).zip(new) {
            bytes += piece.len() as u64 * self.old.1;
            if !write {
                continue;
            }
            for (i, &c) in piece.iter().enumerate() {
                read_at(dev, self.old_at(c), &mut buf[i * cs..(i + 1) * cs])?;
            }
            write_at(dev, self.new_at(n), &buf[..piece.len() * cs])?;
        }
        Ok(bytes)
    }
}
