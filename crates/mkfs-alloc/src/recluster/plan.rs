//! The re-cluster planner: pure arithmetic from a [`VolumeModel`] (and the
//! entry sets its reading saw) and a new cluster size to a [`Plan`], or a
//! [`Refusal`] with its reason. No I/O.
//!
//! A larger size is planned by `coarse.rs` (which reads the files' chains).
//! The case planned here: exFAT, the new cluster size dividing the old one
//! (`r = old / new` new clusters per old one). The cluster heap keeps its
//! offset, so every byte of file data stays where it is: old cluster `c` is
//! new clusters `(c - 2) * r + 2 ..` (in-place.md's congruence with a zero
//! shift). What changes is metadata, all of it written into space the old
//! volume does not use:
//!
//! ```text
//!  old: | boot | .. | old FAT | free gap ............. | heap (data stays) |
//!  new: | boot | .. | (gap)   | new FAT | .. | intent | heap               |
//!                                               ^ the last sector before the heap
//! ```
//!
//! - the new FAT goes into the free gap between the old FAT and the heap
//!   (the old FAT's sectors become an unused gap);
//! - when that gap is too small, the heap's start moves forward by whole old
//!   clusters (`P` of them, [`Plan::evacuate`]), so the new heap offset stays
//!   congruent to the old one modulo both cluster sizes and old cluster `c`
//!   (`c >= P + 2`) is new clusters `(c - 2 - P) * r + 2 ..`; the new FAT
//!   covers the gap and the old clusters `2 .. P + 2`, which the evacuation
//!   ([`super::evac`]) empties first, and the intent record moves to sector
//!   24 (after the backup boot region, before the FAT);
//! - the new allocation bitmap and a copy of every directory (their entries
//!   name new cluster numbers) go into clusters the old volume has free; a
//!   copy holds the directory's entries up to its last one in use, rounded
//!   up to the new cluster size, and its DataLength and ValidDataLength in
//!   its parent's copy say so (a directory's are equal and whole clusters:
//!   exFAT specification §7.6.4 and §7.6.5); the root's chain likewise;
//! - the old bitmap and the old directory clusters are free afterwards.

use mkfs_alloc_inspect::model::{EntrySet, Finding, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::refusal::refuse_findings;
pub use super::refusal::Refusal;

/// The largest exFAT cluster count (exFAT specification §3.1.9).
pub(super) const MAX_CLUSTERS: u64 = 0xFFFF_FFF5;
/// The largest exFAT cluster (32 MiB, specification §3.1.16).
const MAX_CLUSTER: u64 = 32 << 20;

/// Where a volume's structures are, in bytes from the volume's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExfatGeometry {
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// Clusters of the heap.
    pub cluster_count: u32,
    /// The FAT's offset.
    pub fat_offset: u64,
    /// The FAT's length.
    pub fat_bytes: u64,
    /// The cluster heap's offset.
    pub heap_offset: u64,
    /// The root directory's first cluster.
    pub root_cluster: u32,
}

impl ExfatGeometry {
    /// The geometry the reader found, offsets made relative to the volume
    /// (`root_cluster`: the root directory's first cluster).
    pub(super) fn of(g: &mkfs_alloc_inspect::model::Geometry, root_cluster: u32) -> Self {
        ExfatGeometry {
            cluster_size: g.cluster_size,
            cluster_count: g.cluster_count,
            fat_offset: g.fat_offset - g.start,
            fat_bytes: g.fat_bytes,
            heap_offset: g.data_offset - g.start,
            root_cluster,
        }
    }
}

/// A directory and where its copy goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirCopy {
    /// Its path (`/` for the root).
    pub path: String,
    /// Its first old cluster.
    pub old_first: u32,
    /// True when the old directory is contiguous without a FAT chain.
    pub old_contiguous: bool,
    /// The bytes of its copy: its entries up to the last one in use,
    /// rounded up to the new cluster size (at least one new cluster; a
    /// larger size: its old bytes, kept).
    pub bytes: u64,
    /// The first new cluster of its copy (a contiguous run with a FAT chain).
    pub new_first: u32,
}

/// What a re-cluster does, before its first write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Absolute byte offset of the volume on the medium.
    pub volume_start: u64,
    /// Bytes per sector.
    pub sector_size: u32,
    /// Bytes of the volume.
    pub volume_bytes: u64,
    /// The volume now.
    pub old: ExfatGeometry,
    /// The volume after the switch.
    pub new: ExfatGeometry,
    /// The old FAT's bytes, unused after the switch (offset, length).
    pub gap: (u64, u64),
    /// Offset of the intent record (the heap's offset less one sector).
    pub intent_offset: u64,
    /// New clusters per old cluster (0 for a larger size: [`Plan::coarse`]).
    pub ratio: u32,
    /// Old clusters whose data moves (those the evacuation copies, or a
    /// larger size's copies).
    pub clusters_moved: u64,
    /// New clusters the heap's start moved forward by (0: it stays).
    pub heap_shift: u32,
    /// The evacuation of the heap's first old clusters the new FAT covers,
    /// run first (`None`: nothing there is in use). With one, the cluster
    /// numbers of [`Plan::bitmap`], [`Plan::dirs`] and the new root are
    /// this plan's estimate: the re-cluster is planned again from the
    /// intermediate volume once the evacuation's switch is done.
    pub evacuate: Option<Evacuation>,
    /// The new allocation bitmap (first new cluster, bytes).
    pub bitmap: (u32, u64),
    /// The up-case table (first old cluster, bytes): its data stays.
    pub upcase: (u32, u64),
    /// Every directory, the root first, parents before their children.
    pub dirs: Vec<DirCopy>,
    /// Files on the volume.
    pub files: u64,
    /// Bytes of the files.
    pub file_bytes: u64,
    /// Bytes the job reads (boot region, old FAT, directories).
    pub bytes_read: u64,
    /// Bytes the job writes (new FAT, bitmap, directory copies, boot
    /// regions, the intent record and its clearing, the dirty flags).
    pub bytes_written: u64,
    /// Free bytes before and after.
    pub free_before: u64,
    /// Free bytes after the switch.
    pub free_after: u64,
    /// Bytes the files' data takes at the old and the new cluster size.
    pub files_allocated: (u64, u64),
    /// The old clusters the FAT marks bad, in order: each becomes its
    /// [`Plan::ratio`] new clusters, marked bad (none through
    /// [`plan_from`], which refuses a volume with bad clusters).
    pub bad_clusters: Vec<u32>,
    /// FAT32: the reserved sectors and FATs (`None` for exFAT, whose
    /// [`Plan::bitmap`] and [`Plan::upcase`] a FAT volume leaves zero).
    pub fat: Option<super::fat::FatLayout>,
    /// A larger cluster size: what keeps its place, what is copied.
    pub coarse: Option<super::coarse::Coarse>,
}

impl Plan {
    /// The plan of a volume of `volume_bytes` at absolute byte `start`
    /// (sectors of `sector_size` bytes) going from `old` to `new` before
    /// anything is counted: no gap, no intent record, no evacuation, no
    /// directories, every figure zero. The planners fill in what their job
    /// has.
    pub(crate) fn bare(
        start: u64,
        sector_size: u32,
        volume_bytes: u64,
        old: ExfatGeometry,
        new: ExfatGeometry,
    ) -> Plan {
        Plan {
            volume_start: start,
            sector_size,
            volume_bytes,
            old,
            new,
            gap: (0, 0),
            intent_offset: 0,
            ratio: 0,
            clusters_moved: 0,
            heap_shift: 0,
            evacuate: None,
            bitmap: (0, 0),
            upcase: (0, 0),
            dirs: Vec::new(),
            files: 0,
            file_bytes: 0,
            bytes_read: 0,
            bytes_written: 0,
            free_before: 0,
            free_after: 0,
            files_allocated: (0, 0),
            bad_clusters: Vec::new(),
            fat: None,
            coarse: None,
        }
    }

    /// Free space gained (negative: lost), in bytes.
    pub fn space_gained(&self) -> i128 {
        i128::from(self.free_after) - i128::from(self.free_before)
    }

    /// A time estimate in seconds on a medium that reads `read_rate` and
    /// writes `write_rate` bytes a second, with `flush_secs` for each of
    /// the job's seven flushes.
    pub fn estimate_seconds(&self, read_rate: f64, write_rate: f64, flush_secs: f64) -> f64 {
        // Byte counts of metadata are far below 2^52: exact in f64.
        let (r, w) = (self.bytes_read as f64, self.bytes_written as f64);
        r / read_rate.max(1.0) + w / write_rate.max(1.0) + 7.0 * flush_secs
    }

    /// [`Plan::estimate_seconds`] on a slow USB stick: 20 MB/s reads,
    /// 5 MB/s writes (small scattered writes), 50 ms a flush.
    pub fn estimate_stick_seconds(&self) -> f64 {
        self.estimate_seconds(20e6, 5e6, 0.05)
    }

    /// The first new cluster of old cluster `c` (`c` past the heap's
    /// first [`Plan::heap_shift`] new clusters' worth).
    pub fn translate(&self, c: u32) -> u32 {
        c.saturating_sub(2)
            .saturating_mul(self.ratio)
            .saturating_sub(self.heap_shift)
            .saturating_add(2)
    }
}

/// The first phase of a re-cluster whose new FAT covers the heap's first
/// old clusters: those in use are copied to free clusters at the old
/// cluster size, and the volume switched to that intermediate volume.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evacuation {
    /// Old clusters `2 .. 2 + clusters` the new FAT covers.
    pub clusters: u32,
    /// Of those, the ones in use.
    pub in_use: u64,
    /// Old clusters whose data is copied (file chains up to their last
    /// cluster in the prefix, the up-case table when it is there).
    pub moved: u64,
    /// Bytes the evacuation reads.
    pub bytes_read: u64,
    /// Bytes the evacuation writes (data, directory copies, bitmap, FAT
    /// entries' sectors, boot regions, intent record).
    pub bytes_written: u64,
    /// Bytes of old clusters it allocates (copies, bitmap, directories).
    pub allocated: u64,
}

/// Whether a finding is the dirty mark an unfinished re-cluster of ours
/// leaves (then the caller passes `allow_dirty`).
pub(super) fn is_volume_dirty(f: &Finding) -> bool {
    matches!(
        f,
        Finding::Dirty {
            mark: mkfs_alloc_inspect::model::DirtyMark::VolumeDirty
        }
    )
}

/// Plans the re-cluster of the volume `model` describes to `cluster`-byte
/// clusters. `dirs` are the directories' entry sets its reading handed out
/// and `file_sizes` the files' sizes (a file costs 8 bytes here), `root_clusters`
/// the old clusters of the root directory's chain, and `dirs_in_use` the bytes
/// each directory has in use by its first cluster (a directory not in it is
/// copied whole). `allow_dirty` accepts
/// VolumeDirty (set by an unfinished run of this job). A volume with bad
/// clusters is refused here: [`super::plan`] lists them, reserves them in
/// the model and carries them over ([`Plan::bad_clusters`]).
///
/// # Errors
///
/// A [`Refusal`] with its reason.
pub fn plan_from(
    model: &VolumeModel,
    dirs_in: &[EntrySet],
    file_sizes: &[u64],
    root_clusters: u64,
    dirs_in_use: &std::collections::HashMap<u32, u64>,
    cluster: u64,
    allow_dirty: bool,
) -> Result<Plan, Refusal> {
    let g = &model.geometry;
    if g.kind != FsKind::Exfat {
        return Err(Refusal::NotExfat { kind: g.kind });
    }
    refuse_findings(model, |f| allow_dirty && is_volume_dirty(f))?;
    let sector = u64::from(g.sector_size);
    if !cluster.is_power_of_two() || cluster < sector || cluster > MAX_CLUSTER {
        return Err(Refusal::InvalidSize {
            cluster,
            sector: g.sector_size,
        });
    }
    let old_c = g.cluster_size;
    if cluster == old_c {
        return Err(Refusal::SameSize { cluster });
    }
    if cluster > old_c || old_c % cluster != 0 {
        return Err(Refusal::LargerNotSupported {
            old: old_c,
            new: cluster,
        });
    }
    if g.fat_count != 1 || g.active_fat != 0 {
        return Err(Refusal::Unsupported {
            what: "a volume with two FATs (TexFAT)".into(),
        });
    }
    let (Some(_), Some(upcase)) = (model.bitmap, model.upcase) else {
        return Err(Refusal::Unsupported {
            what: "a volume without a bitmap or up-case entry".into(),
        });
    };
    let RootDir::Cluster(root_first) = g.root else {
        return Err(Refusal::Unsupported {
            what: "a fixed root directory".into(),
        });
    };
    let ratio = u32::try_from(old_c / cluster).map_err(|_| Refusal::LargerNotSupported {
        old: old_c,
        new: cluster,
    })?;
    let old = ExfatGeometry::of(g, root_first);
    // The heap keeps its offset; every byte after it is heap at the new size.
    let mut new_count = (g.fs_bytes - old.heap_offset) / cluster;
    if new_count > MAX_CLUSTERS {
        return Err(Refusal::TooManyClusters {
            clusters: new_count,
        });
    }
    let fat_of = |count: u64| ((count + 2) * 4).div_ceil(sector) * sector;
    let old_fat_end = old.fat_offset + old.fat_bytes;
    let aligned = old_fat_end.div_ceil(4096) * 4096;
    let mut new_fat_bytes = fat_of(new_count);
    let mut new_fat_offset = if aligned + new_fat_bytes + sector <= old.heap_offset {
        aligned
    } else {
        old_fat_end
    };
    let mut intent_offset = old.heap_offset - sector;
    let gap_free = intent_offset.saturating_sub(old_fat_end);
    let mut shift_old = 0u64;
    if new_fat_offset + new_fat_bytes > intent_offset {
        // The heap's start moves by whole old clusters until the new FAT
        // (from the aligned end of the old one) fits before it; the intent
        // record goes to sector 24, free in every volume of the job.
        new_fat_offset = aligned;
        for _ in 0..4 {
            let over = (new_fat_offset + new_fat_bytes).saturating_sub(old.heap_offset);
            shift_old = over.div_ceil(old_c);
            new_count = (g.fs_bytes - old.heap_offset - shift_old * old_c) / cluster;
            new_fat_bytes = fat_of(new_count);
        }
        let over = (new_fat_offset + new_fat_bytes).saturating_sub(old.heap_offset);
        shift_old = shift_old.max(over.div_ceil(old_c));
        new_count = (g.fs_bytes - old.heap_offset - shift_old * old_c) / cluster;
        intent_offset = 24 * sector;
        if old.fat_offset <= 24 * sector || shift_old * 2 >= u64::from(g.cluster_count) {
            let clusters = shift_old.min(u64::from(g.cluster_count));
            return Err(Refusal::FatDoesNotFit {
                need: new_fat_bytes + sector,
                free: gap_free + sector,
                clusters,
                in_use: prefix_in_use(model, clusters),
            });
        }
    }
    let in_use = prefix_in_use(model, shift_old);
    let heap_shift =
        u32::try_from(shift_old * u64::from(ratio)).map_err(|_| Refusal::TooManyClusters {
            clusters: new_count,
        })?;
    let new_heap = old.heap_offset + shift_old * old_c;
    let new_count = u32::try_from(new_count).map_err(|_| Refusal::TooManyClusters {
        clusters: new_count,
    })?;
    let mut alloc = Allocator::new(model, ratio, new_count, heap_shift);
    let bitmap_bytes = u64::from(new_count).div_ceil(8);
    let per = |bytes: u64| bytes.div_ceil(cluster);
    let too_little = |alloc: &Allocator<'_>, need: u64| Refusal::TooLittleSpace {
        need,
        free: alloc.free_new() * cluster,
    };
    // A copy: the bytes in use rounded up to the new size, one cluster at
    // least, never more than the directory's old bytes.
    let copy = |first: u32, old: u64| {
        dirs_in_use
            .get(&first)
            .map_or(old, |&u| (per(u).max(1) * cluster).min(old))
    };
    let dir_copies = || {
        dirs_in
            .iter()
            .filter(|s| s.is_dir && s.first_cluster != 0)
            .map(|s| (s, copy(s.first_cluster, s.size.div_ceil(old_c) * old_c)))
    };
    let root_bytes = copy(root_first, root_clusters * old_c);
    let need_total =
        per(bitmap_bytes) * cluster + root_bytes + dir_copies().map(|(_, b)| b).sum::<u64>();
    let bitmap_first = alloc
        .run(per(bitmap_bytes))
        .ok_or_else(|| too_little(&alloc, need_total))?;
    let mut dirs = Vec::new();
    let root_new = alloc
        .run(per(root_bytes))
        .ok_or_else(|| too_little(&alloc, need_total))?;
    dirs.push(DirCopy {
        path: "/".into(),
        old_first: root_first,
        old_contiguous: false,
        bytes: root_bytes,
        new_first: root_new,
    });
    let (mut files, mut file_bytes, mut alloc_old, mut alloc_new) = (0u64, 0u64, 0u64, 0u64);
    let mut dir_bytes = root_bytes;
    for (s, bytes) in dir_copies() {
        let first = alloc
            .run(per(bytes))
            .ok_or_else(|| too_little(&alloc, need_total))?;
        dir_bytes += bytes;
        dirs.push(DirCopy {
            path: s.path.clone(),
            old_first: s.first_cluster,
            old_contiguous: s.contiguous,
            bytes,
            new_first: first,
        });
    }
    for &size in file_sizes {
        files += 1;
        file_bytes += size;
        alloc_old += size.div_ceil(old_c) * old_c;
        alloc_new += per(size) * cluster;
    }
    let used_old = model.used.count_set();
    let free_before =
        (u64::from(g.cluster_count) - used_old.min(u64::from(g.cluster_count))) * old_c;
    let used_new = alloc_new / cluster + per(upcase.1) + per(bitmap_bytes) + dir_bytes / cluster;
    let free_after = (u64::from(new_count) - used_new.min(u64::from(new_count))) * cluster;
    let region = 12 * sector;
    Ok(Plan {
        volume_start: g.start,
        sector_size: g.sector_size,
        volume_bytes: g.fs_bytes,
        old,
        new: ExfatGeometry {
            cluster_size: cluster,
            cluster_count: new_count,
            fat_offset: new_fat_offset,
            fat_bytes: new_fat_bytes,
            heap_offset: new_heap,
            root_cluster: root_new,
        },
        gap: (old.fat_offset, old.fat_bytes),
        intent_offset,
        ratio,
        clusters_moved: 0,
        heap_shift,
        evacuate: (in_use > 0).then(|| Evacuation {
            clusters: u32::try_from(shift_old).unwrap_or(u32::MAX),
            in_use,
            ..Evacuation::default()
        }),
        bitmap: (bitmap_first, bitmap_bytes),
        upcase,
        dirs,
        files,
        file_bytes,
        bytes_read: region + old.fat_bytes + dir_bytes,
        bytes_written: new_fat_bytes
            + per(bitmap_bytes) * cluster
            + dir_bytes
            + 2 * region
            + 2 * sector
            + 3 * sector,
        free_before,
        free_after,
        files_allocated: (alloc_old, alloc_new),
        bad_clusters: Vec::new(),
        fat: None,
        coarse: None,
    })
}

/// Old clusters in use among the heap's first `clusters`.
fn prefix_in_use(model: &VolumeModel, clusters: u64) -> u64 {
    (0..clusters)
        .filter(|&i| model.used.get(u32::try_from(i + 2).unwrap_or(u32::MAX)))
        .count() as u64
}

/// Hands out contiguous runs of new clusters that lie in clusters the old
/// volume does not use (or past its last cluster), first fit from a cursor
/// that only moves forward.
pub(super) struct Allocator<'m> {
    model: &'m VolumeModel,
    ratio: u32,
    new_count: u32,
    /// New clusters the heap's start moved forward by.
    shift: u32,
    /// The next new cluster to look at.
    cursor: u32,
}

impl<'m> Allocator<'m> {
    pub(super) fn new(model: &'m VolumeModel, ratio: u32, new_count: u32, shift: u32) -> Self {
        Allocator {
            model,
            ratio,
            new_count,
            shift,
            cursor: 2,
        }
    }

    /// Whether new cluster `n` may be written before the switch.
    fn free(&self, n: u32) -> bool {
        let old = (n - 2 + self.shift) / self.ratio + 2;
        let old_last = self.model.geometry.cluster_count + 1;
        old > old_last || !self.model.used.get(old)
    }

    /// New clusters still free from the cursor on.
    pub(super) fn free_new(&self) -> u64 {
        (self.cursor..=self.new_count + 1)
            .filter(|&n| self.free(n))
            .count() as u64
    }

    /// A run of `k` free new clusters (k > 0), or `None`.
    pub(super) fn run(&mut self, k: u64) -> Option<u32> {
        let k = u32::try_from(k.max(1)).ok()?;
        let last = self.new_count + 1;
        let mut start = self.cursor;
        let mut n = start;
        while n <= last {
            if !self.free(n) {
                n += 1;
                start = n;
                continue;
            }
            if n - start + 1 == k {
                self.cursor = n + 1;
                return Some(start);
            }
            n += 1;
        }
        None
    }
}
