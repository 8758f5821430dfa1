//! Whether a re-cluster is unfinished on a volume, from its intent record
//! alone (what `info` asks to name the command that finishes it).

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_ondisk::FsKind;

use super::state::Intent;
use super::{disk, fat};

/// The cluster size an unfinished re-cluster of the exFAT volume whose
/// cluster heap starts at absolute byte `heap` (sectors of `sector` bytes)
/// goes to, from its intent record; `None` when there is no such job.
/// What `info` asks to say "a re-cluster is unfinished: run ...".
///
/// # Errors
///
/// The read error.
pub fn unfinished<D: BlockIo + ?Sized>(
    dev: &mut D,
    heap: u64,
    sector: u32,
) -> Result<Option<u64>, IoError> {
    if heap < u64::from(sector) || sector < 512 {
        return Ok(None);
    }
    let mut s = vec![0u8; sector as usize];
    disk::read_at(dev, heap - u64::from(sector), &mut s)?;
    Ok(reclustering(&s).map(|i| u64::from(sector) << i.target_shift()))
}

/// The re-cluster's record in `sector` (a resize's or a conversion's is
/// not one).
fn reclustering(sector: &[u8]) -> Option<Intent> {
    Intent::read(sector).filter(Intent::reclustering)
}

/// [`unfinished`], also finding the record of a job that moves the heap's
/// start (at sector 24 of the volume starting at absolute byte `start`).
///
/// # Errors
///
/// The read error.
pub fn unfinished_at<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    heap: u64,
    sector: u32,
) -> Result<Option<u64>, IoError> {
    if let Some(c) = unfinished(dev, heap, sector)? {
        return Ok(Some(c));
    }
    let at = start + 24 * u64::from(sector);
    if sector < 512 || heap <= at + u64::from(sector) {
        return Ok(None);
    }
    let mut s = vec![0u8; sector as usize];
    disk::read_at(dev, at, &mut s)?;
    Ok(reclustering(&s).map(|i| u64::from(sector) << i.target_shift()))
}

/// [`unfinished`] for a FAT32 volume starting at absolute byte `start`:
/// its job's record is reserved sector 24 (`fat/`), read when the FAT
/// starts after it (`fat` the absolute byte of the first FAT).
///
/// # Errors
///
/// The read error.
pub fn unfinished_fat<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    fat: u64,
    sector: u32,
) -> Result<Option<u64>, IoError> {
    let at = start + fat::INTENT_SECTOR * u64::from(sector);
    if sector < 512 || fat < at + u64::from(sector) {
        return Ok(None);
    }
    let mut s = vec![0u8; sector as usize];
    disk::read_at(dev, at, &mut s)?;
    Ok(reclustering(&s).map(|i| u64::from(sector) << i.target_shift()))
}

/// Whether a resize is unfinished on the exFAT volume starting at absolute
/// byte `start` whose heap starts at absolute byte `heap`: its record is
/// before the heap or at sector 24 (`grow.rs`).
///
/// # Errors
///
/// The read error.
pub fn unfinished_resize<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    heap: u64,
    sector: u32,
) -> Result<bool, IoError> {
    if sector < 512 || heap < start + 25 * u64::from(sector) {
        return Ok(false);
    }
    let mut s = vec![0u8; sector as usize];
    for at in [heap - u64::from(sector), start + 24 * u64::from(sector)] {
        disk::read_at(dev, at, &mut s)?;
        if Intent::read(&s).is_some_and(|i| i.resizing()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The exFAT volumes of an inspector's report (their index) with an
/// unfinished resize on them ([`unfinished_resize`]).
pub fn unfinished_resize_in<D: BlockIo + ?Sized>(
    dev: &mut D,
    report: &mkfs_alloc_inspect::Report,
) -> Vec<usize> {
    report
        .volumes
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            let (Some(sector), Some(heap)) = (v.sector_size, v.data_offset) else {
                return false;
            };
            v.ours() == Some(FsKind::Exfat)
                && unfinished_resize(dev, v.start, heap, sector).unwrap_or(false)
        })
        .map(|(i, _)| i)
        .collect()
}

/// [`unfinished`] for a FAT12/16 volume `g` describes: its job's record
/// is in the old volume's first free cluster or the new volume's last
/// reserved sector (the module docs of `fat/small.rs`).
///
/// # Errors
///
/// The read error.
pub fn unfinished_small_fat<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &mkfs_alloc_inspect::model::Geometry,
) -> Result<Option<u64>, IoError> {
    fat::unfinished_small(dev, g)
}

/// The exFAT and FAT volumes of an inspector's report (their index, the
/// new cluster size) with an unfinished re-cluster on them
/// ([`unfinished_at`], [`unfinished_fat`]); a volume that cannot be read is
/// left out.
pub fn unfinished_in<D: BlockIo + ?Sized>(
    dev: &mut D,
    report: &mkfs_alloc_inspect::Report,
) -> Vec<(usize, u64)> {
    report
        .volumes
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let sector = v.sector_size?;
            let found = match v.ours()? {
                FsKind::Exfat => unfinished_at(dev, v.start, v.data_offset?, sector),
                FsKind::Fat32 => unfinished_fat(dev, v.start, v.fat_offset?, sector),
                kind @ (FsKind::Fat12 | FsKind::Fat16) => {
                    let g = mkfs_alloc_inspect::model::Geometry {
                        kind,
                        start: v.start,
                        fs_bytes: v.fs_bytes?,
                        sector_size: sector,
                        cluster_size: v.cluster_size?,
                        cluster_count: u32::try_from(v.cluster_count?).ok()?,
                        fat_offset: v.fat_offset?,
                        fat_bytes: v.fat_bytes?,
                        fat_count: v.fat_count?,
                        active_fat: 0,
                        data_offset: v.data_offset?,
                        root: mkfs_alloc_inspect::model::RootDir::Cluster(0),
                    };
                    unfinished_small_fat(dev, &g)
                }
            };
            found.ok().flatten().map(|c| (i, c))
        })
        .collect()
}

/// The in-place jobs left unfinished on the volumes of an inspector's
/// report, each kind in the volumes' order (volumes numbered from 1, as
/// `info` names them): what a rerun of the same command finishes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Unfinished {
    /// Re-clusters ([`unfinished_in`]).
    #[cfg_attr(feature = "serde", serde(rename = "recluster_unfinished"))]
    pub recluster: Vec<UnfinishedRecluster>,
    /// Resizes ([`unfinished_resize_in`]): the volumes' numbers.
    #[cfg_attr(feature = "serde", serde(rename = "resize_unfinished"))]
    pub resize: Vec<usize>,
    /// Conversions ([`super::convert::unfinished_in`]): the volumes' numbers.
    #[cfg_attr(feature = "serde", serde(rename = "convert_unfinished"))]
    pub convert: Vec<usize>,
}

/// An unfinished re-cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct UnfinishedRecluster {
    /// The volume's number, from 1.
    pub volume: usize,
    /// The cluster size the job goes to.
    pub cluster_size: u64,
}

impl Unfinished {
    /// The unfinished jobs on the volumes of `report` (read from `dev`,
    /// the medium it describes; a volume that cannot be read is left out).
    pub fn in_report<D: BlockIo + ?Sized>(
        dev: &mut D,
        report: &mkfs_alloc_inspect::Report,
    ) -> Self {
        let number = |i: usize| i + 1;
        Unfinished {
            recluster: unfinished_in(dev, report)
                .into_iter()
                .map(|(i, cluster_size)| UnfinishedRecluster {
                    volume: number(i),
                    cluster_size,
                })
                .collect(),
            resize: unfinished_resize_in(dev, report)
                .into_iter()
                .map(number)
                .collect(),
            convert: super::convert::unfinished_in(dev, report)
                .into_iter()
                .map(number)
                .collect(),
        }
    }
}
