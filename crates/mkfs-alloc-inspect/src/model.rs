//! The whole-volume model: what a change of an existing volume in place
//! (re-cluster, resize, convert) must know before its first write, read in
//! one pass over an exFAT or FAT12/16/32 volume.
//!
//! ```text
//!  boot region ─► Geometry (sectors, clusters, FATs, heap, root)
//!  root ─► every directory, one entry set at a time ─► EntrySet (path,
//!          │  size, first cluster, chain, position on the medium) ─► visitor
//!          └► every chain walked once: a bit per cluster (ClusterBits);
//!             a bit already set is a cross-link
//!  then the FAT (streamed), the exFAT bitmap (streamed) and the other FAT
//!  copies against those bits ─► lost clusters, bitmap bits clear for used
//!  clusters, bad clusters, FAT copies that differ
//!  ─► VolumeModel { geometry, used bits, counts, findings }
//! ```
//!
//! Memory: one bit per cluster ([`ClusterBits`], the only per-cluster
//! state: 64 MiB for 2 TiB at 4 KiB clusters, 2^29 clusters), the FAT
//! through the inspector's 16 KiB window, one entry set of one directory at
//! a time, the directories waiting to be read (bounded by
//! [`Limits::max_pending_dirs`]) and at most [`Limits::max_warnings`]
//! findings. Entry sets go to a visitor and are not kept.
//!
//! Sources: exFAT specification §6.3 (entry sets, SetChecksum), §7.1 (the
//! allocation bitmap), §7.6.4 (NameHash); fatgen103 §4 (the FAT, entry 1's
//! clean-shutdown bit), §7 (long names and their checksum).

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::fat::{Fat16BootSector, Fat32BootSector};
use zerocopy::FromBytes;

use crate::chain::Source;
use crate::error::InspectError;
use crate::io::Reader;
use crate::report::{FsKind, Volume};
use crate::{exfat, fat, probe, Limits, TableKind};

mod alloc;
mod entries;
mod finding;
mod walk;

pub use alloc::ClusterBits;
pub use finding::{DirtyMark, Finding};

/// Where a volume's structures are, from its boot region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// FAT12, FAT16, FAT32 or exFAT.
    pub kind: FsKind,
    /// Absolute byte offset of the volume on the medium.
    pub start: u64,
    /// Bytes of the file system.
    pub fs_bytes: u64,
    /// Bytes per sector.
    pub sector_size: u32,
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// Clusters; valid cluster numbers are 2..=cluster_count + 1.
    pub cluster_count: u32,
    /// Absolute byte offset of the first FAT.
    pub fat_offset: u64,
    /// Bytes of one FAT.
    pub fat_bytes: u64,
    /// Number of FATs.
    pub fat_count: u32,
    /// The FAT the volume uses (0: the first).
    pub active_fat: u32,
    /// Absolute byte offset of cluster 2.
    pub data_offset: u64,
    /// Where the root directory is.
    pub root: RootDir,
}

/// Where the root directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootDir {
    /// FAT12/16: a fixed area after the FATs.
    Fixed {
        /// Absolute byte offset.
        offset: u64,
        /// Entries it holds.
        entries: u32,
    },
    /// FAT32 and exFAT: a cluster chain from this cluster.
    Cluster(u32),
}

/// Where an entry set is on the medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPos {
    /// The cluster holding its first entry (`None` in the fixed FAT12/16
    /// root directory).
    pub cluster: Option<u32>,
    /// Absolute byte offset of its first entry.
    pub offset: u64,
    /// Entries of 32 bytes in the set (exFAT: the file entry and its
    /// secondaries; FAT: the long-name entries and the short entry). An
    /// exFAT set never crosses a cluster boundary in what our formatter
    /// writes, but may on other volumes: the entries after `offset` are then
    /// in the directory's next cluster.
    pub entries: u32,
}

/// A file or directory: one entry set and what its chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySet {
    /// `/dir/name`.
    pub path: String,
    /// True for a directory.
    pub is_dir: bool,
    /// The size in bytes (FAT directories: the bytes of their chain).
    pub size: u64,
    /// The first cluster (0: none).
    pub first_cluster: u32,
    /// exFAT NoFatChain: contiguous clusters, the FAT unused.
    pub contiguous: bool,
    /// Clusters of its chain as walked (contiguous: the ones the size needs).
    pub clusters: u64,
    /// Contiguous runs of its chain.
    pub fragments: u64,
    /// Its entries on the medium.
    pub at: EntryPos,
}

/// A directory read to its end (or its last cluster) without a broken
/// chain: what the statistics of [`crate::FileStats`] count of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirRead {
    /// True for the root directory.
    pub root: bool,
    /// Its 32-byte entries before the end-of-directory entry.
    pub entries: u64,
    /// The bytes its clusters take (exFAT: what its DataLength needs; FAT:
    /// its chain); `None` for the fixed FAT12/16 root directory.
    pub allocated: Option<u64>,
}

/// What a pass of [`read_volume_visiting`] hands out as it reads.
pub trait Visit {
    /// Every file and directory, in directory order, depth first.
    fn entry(&mut self, set: &EntrySet);
    /// Every directory once it has been read.
    fn dir(&mut self, _dir: &DirRead) {}
}

/// A closure of entry sets as a [`Visit`].
struct Entries<'a>(&'a mut dyn FnMut(&EntrySet));

impl Visit for Entries<'_> {
    fn entry(&mut self, set: &EntrySet) {
        (self.0)(set);
    }
}

/// A volume read whole: geometry, allocation, counts and findings.
#[derive(Debug, Clone)]
pub struct VolumeModel {
    /// Where things are.
    pub geometry: Geometry,
    /// The clusters reached by a chain (files, directories, and on exFAT the
    /// bitmap and up-case table).
    pub used: ClusterBits,
    /// Clusters the FAT (FAT12/16/32) or the bitmap (exFAT) marks in use.
    pub allocated_clusters: u64,
    /// FAT12/16/32: the FAT's free entries (neither in use nor bad);
    /// exFAT: the clusters the bitmap leaves clear.
    pub free_clusters: u64,
    /// Files.
    pub files: u64,
    /// The files' sizes added up (their DataLength or FileSize).
    pub file_bytes: u64,
    /// Directories (the root not counted).
    pub dirs: u64,
    /// What is wrong, in the order found (at most [`Limits::max_warnings`]).
    pub findings: Vec<Finding>,
    /// Findings beyond the cap, not kept.
    pub findings_dropped: u64,
    /// exFAT: the active allocation bitmap (first cluster, bytes), from its
    /// root entry.
    pub bitmap: Option<(u32, u64)>,
    /// exFAT: the up-case table (first cluster, bytes), from its root entry.
    pub upcase: Option<(u32, u64)>,
}

impl VolumeModel {
    /// The first finding that makes an in-place change unsafe, or `None`
    /// when the volume may be changed. The one predicate the in-place
    /// engine asks before its first write. Dropped findings count: a volume
    /// with more findings than were kept is refused.
    pub fn refusal(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.refuses_change())
    }

    /// True when an in-place change must not start ([`VolumeModel::refusal`]).
    pub fn refused(&self) -> bool {
        self.refusal().is_some() || self.findings_dropped > 0
    }
}

/// What [`read_volume`] reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelOptions {
    /// Bounds (entries, depth, pending directories, directory bytes, the
    /// number of findings kept).
    pub limits: Limits,
}

/// Reads the volume that starts at byte `start` of `dev` and holds `size`
/// bytes into a [`VolumeModel`], handing every entry set to `visit` (in
/// directory order, depth first) as it is read.
///
/// Damage is not an error: it is a [`Finding`]. The error cases are a
/// volume that is not FAT or exFAT, a boot region that cannot be used, and
/// I/O errors.
///
/// # Errors
///
/// [`InspectError::Corrupt`] for no FAT/exFAT boot region (or an unusable
/// one), [`InspectError::Truncated`] when the volume does not fit the
/// medium, [`InspectError::Io`] when the medium cannot be read.
pub fn read_volume<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    size: u64,
    opts: &ModelOptions,
    visit: &mut dyn FnMut(&EntrySet),
) -> Result<VolumeModel, InspectError> {
    read_volume_visiting(dev, start, size, opts, &mut Entries(visit))
}

/// [`read_volume`] with a [`Visit`]: entry sets, and every directory once
/// it has been read.
///
/// # Errors
///
/// As [`read_volume`].
pub fn read_volume_visiting<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    size: u64,
    opts: &ModelOptions,
    visit: &mut dyn Visit,
) -> Result<VolumeModel, InspectError> {
    read_in(&mut Reader::new(dev), start, size, opts, visit)
}

/// [`read_volume_visiting`] through a reader.
pub(crate) fn read_in<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    start: u64,
    size: u64,
    opts: &ModelOptions,
    visit: &mut dyn Visit,
) -> Result<VolumeModel, InspectError> {
    let kind = probe::probe(r, start, size)?.and_then(|p| p.kind.ours());
    match kind {
        Some(FsKind::Exfat) => read_exfat(r, start, size, opts, visit),
        Some(FsKind::Fat12 | FsKind::Fat16 | FsKind::Fat32) => {
            read_fat(r, start, size, opts, visit)
        }
        None => Err(InspectError::corrupt(
            "volume",
            start,
            "no FAT12/16/32 or exFAT file system",
        )),
    }
}

/// [`read_volume`] for every FAT and exFAT volume of `dev`: the whole
/// medium, or each partition of its MBR or GPT. Volumes of other file
/// systems are left out; a volume that cannot be read is its error.
///
/// # Errors
///
/// [`InspectError::Io`] when the partition table cannot be read.
pub fn read_volumes<D: BlockIo + ?Sized>(
    dev: &mut D,
    opts: &ModelOptions,
    visit: &mut dyn FnMut(&EntrySet),
) -> Result<Vec<Result<VolumeModel, InspectError>>, InspectError> {
    let (table, medium) = {
        let mut r = Reader::new(dev);
        (crate::partition::read_table(&mut r)?, r.size())
    };
    let spans: Vec<(u64, u64)> = if table.kind == TableKind::None {
        vec![(0, medium)]
    } else {
        table
            .partitions
            .iter()
            .filter(|p| p.start < medium)
            .map(|p| (p.start, p.size.min(medium - p.start)))
            .collect()
    };
    let mut out = Vec::new();
    for (start, size) in spans {
        let is_ours = {
            let mut r = Reader::new(dev);
            probe::probe(&mut r, start, size)?.is_some_and(|p| p.kind.ours().is_some())
        };
        if is_ours {
            out.push(read_volume(dev, start, size, opts, visit));
        }
    }
    Ok(out)
}

fn read_exfat<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    start: u64,
    size: u64,
    opts: &ModelOptions,
    visit: &mut dyn Visit,
) -> Result<VolumeModel, InspectError> {
    let mut notes = Vec::new();
    let b = exfat::read_boot(r, start, &mut notes)?;
    let (geo, regions, active) = exfat::regions_of(&b, start);
    let geometry = Geometry {
        kind: FsKind::Exfat,
        start,
        fs_bytes: regions.fs_bytes,
        sector_size: regions.sector_size,
        cluster_size: geo.cluster_size,
        cluster_count: geo.cluster_count,
        fat_offset: regions.fat_offset - active * regions.fat_bytes,
        fat_bytes: regions.fat_bytes,
        fat_count: regions.fat_count,
        active_fat: u32::try_from(active).unwrap_or(0),
        data_offset: geo.data_offset,
        root: RootDir::Cluster(b.root_cluster),
    };
    check_fits(start, size, regions.fs_bytes)?;
    let mut m = walk::Model::new(r, geometry, geo, regions.fat_offset, opts);
    if let Some(why) = notes
        .iter()
        .find(|n| n.starts_with("main boot region damaged"))
    {
        m.find(Finding::MainBootRegion { why: why.clone() });
    }
    if b.volume_flags & 0x2 != 0 {
        m.find(Finding::Dirty {
            mark: DirtyMark::VolumeDirty,
        });
    }
    m.run_exfat(Source::Chain(b.root_cluster), active, visit)?;
    Ok(m.finish())
}

fn read_fat<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    start: u64,
    size: u64,
    opts: &ModelOptions,
    visit: &mut dyn Visit,
) -> Result<VolumeModel, InspectError> {
    let s0 = r.read_vec("FAT boot sector", start, 512)?;
    let b = fat::parse_boot_sector(&s0)
        .map_err(|e| InspectError::corrupt("FAT boot sector", start, e.to_string()))?;
    let (geo, regions) = fat::regions_of(&b, start);
    let mut scratch = Volume::new(None, start, size);
    let active = fat::active_fat(&mut scratch, &b);
    let root = fat::root_dir(&b, &regions);
    let root_at = match root.src {
        Source::Fixed(offset) => RootDir::Fixed {
            offset,
            entries: b.root_entries,
        },
        Source::Chain(c) | Source::Contiguous(c) => RootDir::Cluster(c),
    };
    let geometry = Geometry {
        kind: b.kind,
        start,
        fs_bytes: regions.fs_bytes,
        sector_size: regions.sector_size,
        cluster_size: geo.cluster_size,
        cluster_count: geo.cluster_count,
        fat_offset: regions.fat_offset,
        fat_bytes: regions.fat_bytes,
        fat_count: regions.fat_count,
        active_fat: active,
        data_offset: geo.data_offset,
        root: root_at,
    };
    check_fits(start, size, regions.fs_bytes)?;
    let fat_abs = regions.fat_offset + u64::from(active) * regions.fat_bytes;
    let mut m = walk::Model::new(r, geometry, geo, fat_abs, opts);
    if boot_dirty_bit(&s0, b.kind) {
        m.find(Finding::Dirty {
            mark: DirtyMark::BootSectorBit,
        });
    }
    m.run_fat(root.src, root.declared, visit)?;
    Ok(m.finish())
}

/// Bit 0 of BS_Reserved1, which Windows sets while a FAT volume is mounted
/// and `fsck.fat` reports as "Dirty bit is set".
fn boot_dirty_bit(s0: &[u8], kind: FsKind) -> bool {
    let reserved1 = if kind == FsKind::Fat32 {
        Fat32BootSector::ref_from_prefix(s0)
            .map(|(b, _)| b.ebpb.reserved1)
            .ok()
    } else {
        Fat16BootSector::ref_from_prefix(s0)
            .map(|(b, _)| b.ebpb.reserved1)
            .ok()
    };
    reserved1.is_some_and(|r| r & 0x01 != 0)
}

fn check_fits(start: u64, size: u64, fs_bytes: u64) -> Result<(), InspectError> {
    if fs_bytes > size {
        return Err(InspectError::Truncated {
            what: "volume",
            offset: start,
            end: start.saturating_add(fs_bytes),
            size: start.saturating_add(size),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
