//! FAT access shared by FAT12/16/32 and exFAT: entry lookup through a small
//! window cache, chain walking with loop detection, and streaming reads of
//! cluster chains (directories, the allocation bitmap).
//!
//! Bounds: the cache is one window of [`WINDOW`] bytes; a chain walk keeps
//! O(1) state (Brent's cycle detection) and stops after a caller-given number
//! of clusters; a [`ChainReader`] hands out pieces of at most [`PIECE`] bytes.

use std::collections::HashSet;

use mkfs_alloc_blockio::BlockIo;

use crate::error::{ChainProblem, InspectError};
use crate::io::Reader;

/// Bytes of FAT kept in memory.
pub(crate) const WINDOW: u64 = 16 * 1024;
/// Largest piece of directory or bitmap data handed out at once.
pub(crate) const PIECE: u64 = 64 * 1024;

use mkfs_alloc_ondisk::fat::table as fat_table;
use mkfs_alloc_ondisk::FsKind;

/// Where the clusters are: the data region of a volume.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geo {
    /// Absolute byte offset of cluster 2.
    pub(crate) data_offset: u64,
    /// Cluster size in bytes (a power of two).
    pub(crate) cluster_size: u64,
    /// Number of clusters; valid cluster numbers are 2..=cluster_count + 1.
    pub(crate) cluster_count: u32,
}

impl Geo {
    /// Largest valid cluster number.
    pub(crate) fn max_cluster(&self) -> u32 {
        self.cluster_count.saturating_add(1)
    }

    /// True for a valid cluster number.
    pub(crate) fn valid(&self, n: u32) -> bool {
        (2..=self.max_cluster()).contains(&n)
    }

    /// Absolute byte offset of cluster `n` (valid).
    pub(crate) fn cluster_offset(&self, n: u32) -> u64 {
        self.data_offset + u64::from(n.saturating_sub(2)) * self.cluster_size
    }
}

/// What a FAT entry says about the next cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Cluster(u32),
    End,
    Free,
    Bad,
    Invalid(u32),
}

/// One FAT, read through a window cache.
pub(crate) struct Fat {
    bits: FsKind,
    /// Absolute byte offset of the FAT.
    offset: u64,
    /// Bytes of the FAT.
    len: u64,
    max_cluster: u32,
    base: u64,
    cache: Vec<u8>,
}

impl Fat {
    pub(crate) fn new(bits: FsKind, offset: u64, len: u64, max_cluster: u32) -> Self {
        Fat {
            bits,
            offset,
            len,
            max_cluster,
            base: 0,
            cache: Vec::new(),
        }
    }

    /// The raw entry of cluster `n` (FAT32: the low 28 bits).
    pub(crate) fn entry<D: BlockIo + ?Sized>(
        &mut self,
        r: &mut Reader<'_, D>,
        n: u32,
    ) -> Result<u32, InspectError> {
        let n64 = u64::from(n);
        let (pos, width) = (
            fat_table::entry_offset(self.bits, n64),
            fat_table::entry_span(self.bits),
        );
        if pos + width > self.len {
            return Err(InspectError::corrupt(
                "FAT",
                self.offset,
                format!(
                    "entry of cluster {n} lies beyond the FAT's {} bytes",
                    self.len
                ),
            ));
        }
        if self.cache.is_empty()
            || pos < self.base
            || pos + width > self.base + self.cache.len() as u64
        {
            let base = pos / WINDOW * WINDOW;
            let len = (WINDOW + 4).min(self.len - base);
            self.cache.resize(usize::try_from(len).unwrap_or(0), 0);
            r.read_at("FAT", self.offset + base, &mut self.cache)?;
            self.base = base;
        }
        let i = usize::try_from(pos - self.base).unwrap_or(0);
        let entry = self
            .cache
            .get(i..)
            .and_then(|c| fat_table::read_entry(self.bits, c, n64));
        entry.ok_or_else(|| {
            InspectError::corrupt("FAT", self.offset + pos, "entry outside the cached window")
        })
    }

    /// Interprets a raw entry value.
    pub(crate) fn decode(&self, v: u32) -> Next {
        let (bad, end) = fat_table::bad_and_end(self.bits);
        if v == 0 {
            Next::Free
        } else if v == bad {
            Next::Bad
        } else if v >= end {
            Next::End
        } else if (2..=self.max_cluster).contains(&v) {
            Next::Cluster(v)
        } else {
            Next::Invalid(v)
        }
    }

    /// The next cluster after `n`.
    pub(crate) fn next<D: BlockIo + ?Sized>(
        &mut self,
        r: &mut Reader<'_, D>,
        n: u32,
    ) -> Result<Next, InspectError> {
        let v = self.entry(r, n)?;
        Ok(self.decode(v))
    }

    /// Largest valid cluster number.
    pub(crate) fn max_cluster(&self) -> u32 {
        self.max_cluster
    }
}

/// One step of a chain walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Next(u32),
    End,
    Broken(ChainProblem),
}

/// A walk along a FAT chain with Brent's cycle detection: O(1) memory, and a
/// loop is found within (tail + 2 × loop length) steps.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    cur: u32,
    tortoise: u32,
    power: u64,
    lam: u64,
    steps: u64,
    limit: u64,
}

impl Chain {
    /// A walk from `first` (already checked to be a valid cluster) that
    /// reports [`ChainProblem::TooLong`] after `limit` further clusters.
    pub(crate) fn new(first: u32, limit: u64) -> Self {
        Chain {
            cur: first,
            tortoise: first,
            power: 1,
            lam: 0,
            steps: 0,
            limit,
        }
    }

    /// Moves to the next cluster.
    pub(crate) fn advance<D: BlockIo + ?Sized>(
        &mut self,
        fat: &mut Fat,
        r: &mut Reader<'_, D>,
    ) -> Result<Step, InspectError> {
        let cur = self.cur;
        let next = match fat.next(r, cur)? {
            Next::Cluster(n) => n,
            Next::End => return Ok(Step::End),
            Next::Free => return Ok(Step::Broken(ChainProblem::Free { cluster: cur })),
            Next::Bad => return Ok(Step::Broken(ChainProblem::Bad { cluster: cur })),
            Next::Invalid(value) => {
                return Ok(Step::Broken(ChainProblem::OutOfRange {
                    cluster: cur,
                    value,
                    max: fat.max_cluster(),
                }))
            }
        };
        if next == self.tortoise {
            return Ok(Step::Broken(ChainProblem::Loop { cluster: next }));
        }
        self.steps += 1;
        if self.steps > self.limit {
            return Ok(Step::Broken(ChainProblem::TooLong { limit: self.limit }));
        }
        self.lam += 1;
        if self.lam == self.power {
            self.tortoise = next;
            self.power = self.power.saturating_mul(2);
            self.lam = 0;
        }
        self.cur = next;
        Ok(Step::Next(next))
    }
}

/// Where a directory (or the bitmap) lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A FAT chain from this cluster.
    Chain(u32),
    /// Contiguous clusters from this one (exFAT NoFatChain).
    Contiguous(u32),
    /// A fixed region (FAT12/16 root directory): absolute offset.
    Fixed(u64),
}

/// Streams the bytes of a cluster chain (or contiguous run, or fixed
/// region) in pieces of at most [`PIECE`] bytes, up to a byte limit.
pub(crate) struct ChainReader {
    src: Source,
    limit: u64,
    done: u64,
    cur: Option<u32>,
    chain: Option<Chain>,
    in_cluster: u64,
    clusters: u64,
    ended: bool,
    buf: Vec<u8>,
    /// Where the last piece handed out starts on the medium.
    at: u64,
}

impl ChainReader {
    /// Reads at most `limit` bytes of `src`.
    pub(crate) fn new(src: Source, limit: u64) -> Self {
        ChainReader {
            src,
            limit,
            done: 0,
            cur: None,
            chain: None,
            in_cluster: 0,
            clusters: 0,
            ended: false,
            buf: Vec::new(),
            at: 0,
        }
    }

    /// Where the last piece handed out lies: the cluster it is in (`None`
    /// in a fixed region) and its absolute byte offset. A piece never
    /// spans two clusters.
    pub(crate) fn piece_at(&self) -> (Option<u32>, u64) {
        let cluster = match self.src {
            Source::Fixed(_) => None,
            _ => self.cur,
        };
        (cluster, self.at)
    }

    /// Bytes handed out so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.done
    }

    /// Clusters entered so far.
    pub(crate) fn clusters(&self) -> u64 {
        self.clusters
    }

    fn enter(
        &mut self,
        n: u32,
        visited: &mut Option<&mut HashSet<u32>>,
    ) -> Result<(), ChainProblem> {
        if let Some(v) = visited.as_deref_mut() {
            if !v.insert(n) {
                return Err(ChainProblem::CrossLinked { cluster: n });
            }
        }
        self.cur = Some(n);
        self.in_cluster = 0;
        self.clusters += 1;
        Ok(())
    }

    /// The next piece, `None` at the end. Chain damage is an
    /// [`InspectError::Chain`] naming `what`. Clusters entered are added to
    /// `visited` when given; entering one already there is an error
    /// ([`ChainProblem::CrossLinked`]).
    pub(crate) fn next_piece<D: BlockIo + ?Sized>(
        &mut self,
        r: &mut Reader<'_, D>,
        fat: &mut Fat,
        geo: &Geo,
        mut visited: Option<&mut HashSet<u32>>,
        what: &dyn Fn() -> String,
    ) -> Result<Option<&[u8]>, InspectError> {
        if self.done >= self.limit || self.ended {
            return Ok(None);
        }
        let broken = |problem: ChainProblem| InspectError::Chain {
            what: what(),
            problem,
        };
        let (offset, room) = match self.src {
            Source::Fixed(base) => (base + self.done, u64::MAX),
            Source::Chain(first) | Source::Contiguous(first) => {
                match self.cur {
                    None => {
                        if !geo.valid(first) {
                            return Err(broken(ChainProblem::OutOfRange {
                                cluster: 0,
                                value: first,
                                max: geo.max_cluster(),
                            }));
                        }
                        self.chain = Some(Chain::new(first, u64::from(geo.cluster_count)));
                        self.enter(first, &mut visited).map_err(broken)?;
                    }
                    Some(cur) if self.in_cluster >= geo.cluster_size => {
                        let next = match (self.src, self.chain.as_mut()) {
                            (Source::Chain(_), Some(chain)) => match chain.advance(fat, r)? {
                                Step::Next(n) => n,
                                Step::End => {
                                    self.ended = true;
                                    return Ok(None);
                                }
                                Step::Broken(p) => return Err(broken(p)),
                            },
                            _ => {
                                let n = cur.saturating_add(1);
                                if !geo.valid(n) {
                                    return Err(broken(ChainProblem::OutOfRange {
                                        cluster: cur,
                                        value: n,
                                        max: geo.max_cluster(),
                                    }));
                                }
                                n
                            }
                        };
                        self.enter(next, &mut visited).map_err(broken)?;
                    }
                    Some(_) => {}
                }
                let cur = self.cur.unwrap_or(2);
                (
                    geo.cluster_offset(cur) + self.in_cluster,
                    geo.cluster_size - self.in_cluster,
                )
            }
        };
        let n = PIECE.min(room).min(self.limit - self.done);
        let n_usize = usize::try_from(n).unwrap_or(0);
        self.buf.resize(n_usize, 0);
        r.read_at("directory or bitmap data", offset, &mut self.buf)?;
        self.at = offset;
        self.done += n;
        self.in_cluster += n;
        Ok(Some(&self.buf))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::MemDisk;

    fn fat_disk(entries: &[u32]) -> MemDisk {
        let mut d = vec![0u8; 4096];
        for (i, e) in entries.iter().enumerate() {
            d[i * 4..i * 4 + 4].copy_from_slice(&e.to_le_bytes());
        }
        MemDisk::from_vec(512, d).unwrap()
    }

    #[test]
    fn brent_finds_loops_of_any_shape() {
        // 2 -> 3 -> 4 -> 5 -> 3 (loop of 3 after a tail of 1); 6 -> 6.
        let mut d = fat_disk(&[0, 0, 3, 4, 5, 3, 6, 0xFFFF_FFFF]);
        let mut r = Reader::new(&mut d);
        let mut fat = Fat::new(FsKind::Exfat, 0, 4096, 1000);
        let mut c = Chain::new(2, 1000);
        let mut steps = 0;
        let problem = loop {
            match c.advance(&mut fat, &mut r).unwrap() {
                Step::Next(_) => steps += 1,
                Step::End => panic!("no end"),
                Step::Broken(p) => break p,
            }
        };
        assert!(matches!(problem, ChainProblem::Loop { .. }), "{problem:?}");
        assert!(steps < 20);
        let mut c = Chain::new(6, 1000);
        assert!(matches!(
            c.advance(&mut fat, &mut r).unwrap(),
            Step::Broken(ChainProblem::Loop { cluster: 6 })
        ));
        let mut c = Chain::new(7, 1000);
        assert_eq!(c.advance(&mut fat, &mut r).unwrap(), Step::End);
    }

    #[test]
    fn fat12_entries() {
        // Entries 0..4 = FF8, FFF, 003, FFF packed in 12 bits.
        let mut d = vec![0u8; 512];
        d[..6].copy_from_slice(&[0xF8, 0xFF, 0xFF, 0x03, 0xF0, 0xFF]);
        let mut d = MemDisk::from_vec(512, d).unwrap();
        let mut r = Reader::new(&mut d);
        let mut fat = Fat::new(FsKind::Fat12, 0, 512, 100);
        assert_eq!(fat.entry(&mut r, 0).unwrap(), 0xFF8);
        assert_eq!(fat.entry(&mut r, 1).unwrap(), 0xFFF);
        assert_eq!(fat.entry(&mut r, 2).unwrap(), 0x003);
        assert_eq!(fat.entry(&mut r, 3).unwrap(), 0xFFF);
        assert_eq!(fat.next(&mut r, 2).unwrap(), Next::Cluster(3));
        assert_eq!(fat.next(&mut r, 3).unwrap(), Next::End);
        assert!(fat.entry(&mut r, 400).is_err(), "beyond the FAT");
    }
}
