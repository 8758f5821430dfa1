//! The model's pass over a volume: every chain marked in the cluster bits
//! (a bit already set is a cross-link), every directory read once, one
//! entry at a time, each entry set handed to the visitor with its position.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::exfat::upcase::checksum32;
use mkfs_alloc_ondisk::exfat::UpcaseTable;

use super::entries::{Dots, Entries, ExfatEntries, FatEntries, Found};
use super::{ClusterBits, DirRead, EntrySet, Finding, Geometry, ModelOptions, Visit, VolumeModel};
use crate::chain::{Chain, ChainReader, Fat, Geo, Source, Step};
use crate::error::InspectError;
use crate::exfat::MAX_DIR_BYTES;
use crate::io::Reader;
use crate::walk::{display_path, join, DirPath, Disk};
use crate::Limits;

/// The state of one model pass.
pub(super) struct Model<'a, 'r, D: BlockIo + ?Sized> {
    pub(super) r: &'a mut Reader<'r, D>,
    pub(super) fat: Fat,
    pub(super) geo: Geo,
    pub(super) geometry: Geometry,
    pub(super) used: ClusterBits,
    pub(super) allocated: u64,
    pub(super) free: u64,
    limits: Limits,
    findings: Vec<Finding>,
    dropped: u64,
    files: u64,
    file_bytes: u64,
    dirs: u64,
    stopped: bool,
    system: (Option<Extent>, Option<Extent>),
}

/// What marking a chain found.
struct Marked {
    /// Clusters newly marked (up to a cross-link or a break).
    clusters: u64,
    /// Contiguous runs among them.
    fragments: u64,
}

/// A first cluster and a length in bytes.
type Extent = (u32, u64);

/// Where the up-case table is, and its TableChecksum.
type Upcase = (Extent, u32);

/// A directory waiting to be read.
struct Pending {
    path: DirPath,
    src: Source,
    limit: u64,
    depth: u32,
    /// What its FAT `..` entry must say: the parent's first cluster, 0 when
    /// the parent is the root.
    parent: u32,
    /// The bytes its clusters take (`None`: the fixed FAT12/16 root).
    allocated: Option<u64>,
}

impl Pending {
    /// For a FAT subdirectory: the first clusters its `.` and `..` entries
    /// must name.
    fn dots(&self) -> Option<Dots> {
        let (Source::Chain(own) | Source::Contiguous(own)) = self.src else {
            return None;
        };
        (self.depth > 0).then_some(Dots {
            own,
            parent: self.parent,
        })
    }
}

impl<'a, 'r, D: BlockIo + ?Sized> Model<'a, 'r, D> {
    pub(super) fn new(
        r: &'a mut Reader<'r, D>,
        geometry: Geometry,
        geo: Geo,
        fat_abs: u64,
        opts: &ModelOptions,
    ) -> Self {
        let fat = Fat::new(
            geometry.kind,
            fat_abs,
            geometry.fat_bytes,
            geo.max_cluster(),
        );
        Model {
            r,
            fat,
            used: ClusterBits::new(geo.cluster_count),
            geo,
            geometry,
            allocated: 0,
            free: 0,
            limits: opts.limits.clone(),
            findings: Vec::new(),
            dropped: 0,
            files: 0,
            file_bytes: 0,
            dirs: 0,
            stopped: false,
            system: (None, None),
        }
    }

    /// Records a finding (the first [`Limits::max_warnings`] are kept).
    pub(super) fn find(&mut self, f: Finding) {
        if self.findings.len() < self.limits.max_warnings {
            self.findings.push(f);
        } else {
            self.dropped += 1;
        }
    }

    pub(super) fn finish(self) -> VolumeModel {
        VolumeModel {
            geometry: self.geometry,
            used: self.used,
            allocated_clusters: self.allocated,
            free_clusters: self.free,
            files: self.files,
            file_bytes: self.file_bytes,
            dirs: self.dirs,
            findings: self.findings,
            findings_dropped: self.dropped,
            bitmap: self.system.0,
            upcase: self.system.1,
        }
    }

    /// FAT12/16/32: the tree from `root`, then the FAT and its copies.
    pub(super) fn run_fat(
        &mut self,
        root: Source,
        declared: u64,
        visit: &mut dyn Visit,
    ) -> Result<(), InspectError> {
        let fat32 = self.geometry.kind == crate::FsKind::Fat32;
        let (limit, allocated) = match root {
            Source::Fixed(_) => (declared, None),
            Source::Chain(first) | Source::Contiguous(first) => {
                let m = self.mark(&|| "/".into(), first, false, None)?;
                let bytes = m.clusters.saturating_mul(self.geo.cluster_size);
                (bytes.min(declared), Some(bytes))
            }
        };
        let root = Pending {
            path: DirPath::default(),
            src: root,
            limit,
            depth: 0,
            parent: 0,
            allocated,
        };
        let root_cluster = match self.geometry.root {
            super::RootDir::Cluster(c) => c,
            super::RootDir::Fixed { .. } => 0,
        };
        self.walk(
            root,
            &mut |d: &Pending| FatEntries::new(fat32, d.dots(), root_cluster),
            visit,
        )?;
        self.fat_pass()?;
        if self.geometry.fat_count > 1 {
            self.compare_fat_copies()?;
        }
        Ok(())
    }

    /// exFAT: the root's system entries (bitmap, up-case table), the tree,
    /// then the bitmap against the chains.
    pub(super) fn run_exfat(
        &mut self,
        root: Source,
        active: u64,
        visit: &mut dyn Visit,
    ) -> Result<(), InspectError> {
        let (bitmap, upcase) = self.root_system_entries(root, active)?;
        self.system = (bitmap, upcase.map(|(extent, _)| extent));
        if let Some((first, len)) = bitmap {
            self.mark(&|| "allocation bitmap".into(), first, false, Some(len))?;
        }
        let table = match upcase {
            Some(((first, len), checksum)) => self.read_upcase(first, len, checksum)?,
            None => {
                self.find(Finding::UpcaseTable {
                    why: "the root directory has no up-case table entry".into(),
                });
                UpcaseTable::recommended()
            }
        };
        let Source::Chain(first) = root else {
            return Ok(());
        };
        let m = self.mark(&|| "/".into(), first, false, None)?;
        let bytes = m.clusters.saturating_mul(self.geo.cluster_size);
        let root = Pending {
            path: DirPath::default(),
            src: root,
            limit: bytes.min(MAX_DIR_BYTES),
            depth: 0,
            parent: 0,
            allocated: Some(bytes),
        };
        self.walk(root, &mut |_: &Pending| ExfatEntries::new(&table), visit)?;
        match bitmap {
            Some((first, len)) => self.bitmap_pass(first, len),
            None => {
                self.find(Finding::DamagedEntry {
                    dir: "/".into(),
                    offset: self.geo.cluster_offset(first),
                    what: "no allocation bitmap entry".into(),
                });
                Ok(())
            }
        }
    }

    /// The active allocation bitmap and the up-case table (first cluster,
    /// length; the table's TableChecksum) from the root directory.
    fn root_system_entries(
        &mut self,
        root: Source,
        active: u64,
    ) -> Result<(Option<Extent>, Option<Upcase>), InspectError> {
        let mut d = Disk {
            r: self.r,
            fat: &mut self.fat,
            geo: &self.geo,
        };
        let e = crate::exfat::root_entries(&mut d, root, active)?;
        Ok((e.bitmap, e.upcase))
    }

    /// Marks the up-case table's chain and reads it (at most 256 KiB: the
    /// uncompressed table is 128 KiB), checking its TableChecksum.
    fn read_upcase(
        &mut self,
        first: u32,
        len: u64,
        stored: u32,
    ) -> Result<UpcaseTable, InspectError> {
        self.mark(&|| "up-case table".into(), first, false, Some(len))?;
        let limit = len.min(256 << 10);
        let mut reader = ChainReader::new(Source::Chain(first), limit);
        let mut bytes = Vec::new();
        let what = || "up-case table".to_string();
        loop {
            match reader.next_piece(self.r, &mut self.fat, &self.geo, None, &what) {
                Ok(Some(p)) => bytes.extend_from_slice(p),
                Ok(None) => break,
                Err(InspectError::Chain { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        let computed = checksum32(&bytes);
        if bytes.len() as u64 == len && computed != stored {
            self.find(Finding::UpcaseTable {
                why: format!("TableChecksum is {stored:#010x}, the table's is {computed:#010x}"),
            });
        }
        Ok(UpcaseTable::from_compressed(&bytes).unwrap_or_else(|| {
            self.find(Finding::UpcaseTable {
                why: format!("{len} bytes at cluster {first} are not a valid table"),
            });
            UpcaseTable::recommended()
        }))
    }

    /// Marks the clusters of a chain (or of `size` contiguous bytes) in the
    /// bits; reports a cluster reached before, a broken chain, and a chain
    /// longer or shorter than `size` needs (`None`: any length).
    fn mark(
        &mut self,
        path: &dyn Fn() -> String,
        first: u32,
        contiguous: bool,
        size: Option<u64>,
    ) -> Result<Marked, InspectError> {
        let none = Marked {
            clusters: 0,
            fragments: 0,
        };
        let need = size.map(|s| s.div_ceil(self.geo.cluster_size));
        if first == 0 && need.unwrap_or(0) == 0 {
            return Ok(none);
        }
        let fits = !contiguous
            || need.is_some_and(|n| u64::from(first) + n <= u64::from(self.geo.max_cluster()) + 1);
        if !self.geo.valid(first) || !fits {
            self.find(Finding::FirstCluster {
                path: path(),
                size: size.unwrap_or(0),
                first,
            });
            return Ok(none);
        }
        if contiguous {
            return Ok(self.mark_run(path, first, need.unwrap_or(0)));
        }
        let mut m = Marked {
            clusters: 0,
            fragments: 1,
        };
        if self.used.set(first) {
            self.find(Finding::CrossLinked {
                path: path(),
                cluster: first,
            });
            return Ok(none);
        }
        m.clusters = 1;
        let mut chain = Chain::new(first, u64::from(self.geo.cluster_count));
        let mut prev = first;
        loop {
            match chain.advance(&mut self.fat, self.r)? {
                Step::Next(n) => {
                    if self.used.set(n) {
                        self.find(Finding::CrossLinked {
                            path: path(),
                            cluster: n,
                        });
                        return Ok(m);
                    }
                    m.clusters += 1;
                    m.fragments += u64::from(n != prev.wrapping_add(1));
                    prev = n;
                }
                Step::End => break,
                Step::Broken(problem) => {
                    self.find(Finding::BrokenChain {
                        path: path(),
                        problem,
                    });
                    return Ok(m);
                }
            }
        }
        self.check_length(path, size, m.clusters);
        Ok(m)
    }

    /// [`Model::mark`] for `clusters` contiguous clusters from `first`.
    fn mark_run(&mut self, path: &dyn Fn() -> String, first: u32, clusters: u64) -> Marked {
        let mut marked = 0;
        for i in 0..clusters {
            let c = first.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
            if self.used.set(c) {
                self.find(Finding::CrossLinked {
                    path: path(),
                    cluster: c,
                });
                break;
            }
            marked += 1;
        }
        Marked {
            clusters: marked,
            fragments: u64::from(marked > 0),
        }
    }

    fn check_length(&mut self, path: &dyn Fn() -> String, size: Option<u64>, clusters: u64) {
        let Some(size) = size else { return };
        let need = size.div_ceil(self.geo.cluster_size);
        let chain_bytes = clusters.saturating_mul(self.geo.cluster_size);
        if clusters > need {
            self.find(Finding::ChainTooLong {
                path: path(),
                size,
                chain_bytes,
            });
        } else if clusters < need {
            self.find(Finding::ChainTooShort {
                path: path(),
                size,
                chain_bytes,
            });
        }
    }

    /// Reads the tree from `root`, depth first.
    fn walk<E: Entries>(
        &mut self,
        root: Pending,
        entries: &mut dyn FnMut(&Pending) -> E,
        visit: &mut dyn Visit,
    ) -> Result<(), InspectError> {
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            let path = dir.path.text();
            let mut e = entries(&dir);
            match self.read_dir(&dir, &path, &mut e, &mut stack, visit) {
                Err(InspectError::Chain { problem, .. }) => {
                    self.find(Finding::BrokenChain {
                        path: display_path(&path).to_string(),
                        problem,
                    });
                }
                Ok(()) => visit.dir(&DirRead {
                    root: dir.depth == 0,
                    entries: e.seen(),
                    allocated: dir.allocated,
                }),
                other => other?,
            }
            if self.stopped {
                break;
            }
        }
        Ok(())
    }

    /// Reads one directory, one entry at a time; queues its subdirectories.
    fn read_dir<E: Entries>(
        &mut self,
        dir: &Pending,
        path: &str,
        e: &mut E,
        stack: &mut Vec<Pending>,
        visit: &mut dyn Visit,
    ) -> Result<(), InspectError> {
        let mut reader = ChainReader::new(dir.src, dir.limit);
        let what = || format!("directory {}", display_path(path));
        let mut found = Vec::new();
        let shown = display_path(path).to_string();
        let mut buf = Vec::new();
        while let Some(piece) = reader.next_piece(self.r, &mut self.fat, &self.geo, None, &what)? {
            buf.clear();
            buf.extend_from_slice(piece);
            let (cluster, base) = reader.piece_at();
            for (i, chunk) in buf.chunks_exact(32).enumerate() {
                let at = (cluster, base + 32 * i as u64);
                for f in e.entry(chunk, at, &shown, &mut found) {
                    self.find(f);
                }
                if e.ended() {
                    break;
                }
            }
            for f in found.drain(..) {
                self.found(dir, path, f, stack, visit)?;
            }
            if e.ended() || self.stopped {
                break;
            }
        }
        Ok(())
    }

    /// One file or directory of `dir`: its chain marked, handed to `visit`,
    /// a directory queued.
    fn found(
        &mut self,
        dir: &Pending,
        path: &str,
        f: Found,
        stack: &mut Vec<Pending>,
        visit: &mut dyn Visit,
    ) -> Result<(), InspectError> {
        if self.files + self.dirs >= self.limits.max_entries {
            self.stop(format!(
                "more than {} files and directories",
                self.limits.max_entries
            ));
            return Ok(());
        }
        let child = join(path, &f.name);
        if f.is_dir && f.first == 0 {
            // Every directory but the fixed root has a cluster (a `..`
            // entry's 0, the root, is not a directory of its own).
            self.find(Finding::FirstCluster {
                path: child.clone(),
                size: f.size.unwrap_or(0),
                first: 0,
            });
        }
        let m = self.mark(&|| child.clone(), f.first, f.contiguous, f.size)?;
        let set = EntrySet {
            size: f
                .size
                .unwrap_or(m.clusters.saturating_mul(self.geo.cluster_size)),
            path: child,
            is_dir: f.is_dir,
            first_cluster: f.first,
            contiguous: f.contiguous,
            clusters: m.clusters,
            fragments: m.fragments,
            at: f.at,
        };
        visit.entry(&set);
        if !f.is_dir {
            self.files += 1;
            self.file_bytes = self.file_bytes.saturating_add(set.size);
            return Ok(());
        }
        self.dirs += 1;
        if m.clusters == 0 {
            return Ok(());
        }
        if dir.depth >= self.limits.max_depth {
            self.stop(format!(
                "{}: deeper than {} levels",
                set.path, self.limits.max_depth
            ));
        } else if stack.len() as u64 >= self.limits.max_pending_dirs {
            self.stop(format!(
                "more than {} directories waiting",
                self.limits.max_pending_dirs
            ));
        } else {
            let max = if self.geometry.kind == crate::FsKind::Exfat {
                MAX_DIR_BYTES
            } else {
                crate::fat::MAX_DIR_BYTES
            };
            let bytes = m.clusters.saturating_mul(self.geo.cluster_size);
            // An exFAT directory takes what its DataLength needs (at most
            // what its chain holds); a FAT one its chain.
            let allocated = match f.size {
                Some(s) => s
                    .div_ceil(self.geo.cluster_size)
                    .saturating_mul(self.geo.cluster_size)
                    .min(bytes),
                None => bytes,
            };
            stack.push(Pending {
                allocated: Some(allocated),
                path: dir.path.child(&f.name),
                src: if f.contiguous {
                    Source::Contiguous(f.first)
                } else {
                    Source::Chain(f.first)
                },
                limit: bytes.min(f.size.unwrap_or(u64::MAX)).min(max),
                depth: dir.depth + 1,
                parent: dir.dots().map_or(0, |d| d.own),
            });
        }
        Ok(())
    }

    fn stop(&mut self, why: String) {
        if !self.stopped {
            self.stopped = true;
            self.find(Finding::Incomplete { why });
        }
    }
}
