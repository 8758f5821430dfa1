//! What an existing volume holds, read through the one reader of existing
//! volumes ([`crate::inspect::read_volume`], the reading `info --files` and
//! the re-cluster make): the files and bytes on each volume of a medium
//! ([`holdings`], what `probe` says before it overwrites), and the advice
//! for the files on the medium's one volume ([`advise_volume`], what
//! `advise --target` recommends, the size `recluster --cluster auto`
//! takes).
//!
//! ```
//! use mkfs_alloc::blockio::MemDisk;
//! use mkfs_alloc::existing::{advise_volume, holdings, Policy};
//! use mkfs_alloc::MediumOptions;
//!
//! let mut disk = MemDisk::new(512, 64 * 2048)?; // 64 MiB
//! MediumOptions::new().cluster_size(32 << 10).plan_for(&disk)?.format(&mut disk)?;
//! let held = holdings(&mut disk)?;
//! assert_eq!(held.len(), 1);
//! assert_eq!(held[0].as_ref().map(|h| h.files).ok(), Some(0));
//! // No files: nothing to advise from the volume (advise its size as before).
//! assert!(advise_volume(&mut disk, None, None, &Policy::default())?.is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::ffi::OsStr;

use mkfs_alloc_advise::{advise_with, Advice, AdviseError, DirRecord, FsAdvice, ScanResult};
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, VolumeModel};
use mkfs_alloc_inspect::{read_volumes, FsKind, InspectError, ModelOptions};

use crate::recluster::{read_one_with, ReclusterError};

pub use mkfs_alloc_advise::{FsSelection, Policy};

/// The files of one reading, as a scan of the same tree on the host would
/// count them: each file's size, and per directory its names' entries.
#[derive(Default)]
pub(crate) struct Tally {
    data: ScanResult,
    /// Each directory's names, by its path (`""` the root).
    dirs: HashMap<String, DirRecord>,
}

impl Tally {
    /// Counts one entry set.
    pub(crate) fn add(&mut self, s: &EntrySet) {
        let (parent, name) = s.path.rsplit_once('/').unwrap_or(("", &s.path));
        self.dirs
            .entry(parent.to_string())
            .or_default()
            .add(OsStr::new(name));
        if s.is_dir {
            self.dirs.entry(s.path.clone()).or_default();
        } else {
            self.data.file_sizes.push(s.size);
            self.data.apparent_bytes += s.size;
        }
    }

    /// The scan's result: the root's record apart, every other directory's.
    pub(crate) fn finish(mut self) -> ScanResult {
        self.data.root = self.dirs.remove("").unwrap_or_default();
        self.data.dirs = self.dirs.into_values().collect();
        self.data
    }
}

/// The advice's file system for a volume of `kind`.
pub(crate) fn selection_of(kind: FsKind) -> FsSelection {
    match kind {
        FsKind::Exfat => FsSelection::Exfat,
        FsKind::Fat32 => FsSelection::Fat32,
        FsKind::Fat16 => FsSelection::Fat16,
        FsKind::Fat12 => FsSelection::Fat12,
    }
}

/// The advice for `data` on a volume of `model`'s size (its file system's
/// size, not the medium's) and sector size (`sector_size` when given), for
/// `fs` (`None`: the volume's own file system). What `recluster --cluster
/// auto` asks with the default policy and `None`s (pure).
///
/// # Errors
///
/// As [`advise_with`].
pub(crate) fn advise_for(
    model: &VolumeModel,
    data: &ScanResult,
    fs: Option<FsSelection>,
    sector_size: Option<u32>,
    policy: &Policy,
) -> Result<Advice, AdviseError> {
    let g = &model.geometry;
    advise_with(
        g.fs_bytes,
        sector_size.unwrap_or(g.sector_size),
        fs.unwrap_or(selection_of(g.kind)),
        Some(data),
        policy,
    )
}

/// One FAT or exFAT volume of a medium, as read: what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Holding {
    /// Its file system.
    pub fs: FsKind,
    /// Absolute byte offset of the volume on the medium.
    pub start: u64,
    /// Bytes of the file system.
    pub volume_bytes: u64,
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// Files on it.
    pub files: u64,
    /// Directories on it (the root not counted).
    pub directories: u64,
    /// The files' sizes added up.
    pub file_bytes: u64,
}

/// What every FAT and exFAT volume of `dev` holds (the whole medium, or
/// each partition of its MBR or GPT; other file systems left out), read
/// through [`crate::inspect::read_volumes`]. A volume that cannot be read
/// is its error. Reads only.
///
/// # Errors
///
/// [`InspectError::Io`] when the partition table cannot be read.
pub fn holdings<D: BlockIo + ?Sized>(
    dev: &mut D,
) -> Result<Vec<Result<Holding, InspectError>>, InspectError> {
    let vols = read_volumes(dev, &ModelOptions::default(), &mut |_| {})?;
    Ok(vols
        .into_iter()
        .map(|v| {
            v.map(|m| Holding {
                fs: m.geometry.kind,
                start: m.geometry.start,
                volume_bytes: m.geometry.fs_bytes,
                cluster_size: m.geometry.cluster_size,
                files: m.files,
                directories: m.dirs,
                file_bytes: m.file_bytes,
            })
        })
        .collect())
}

/// What the advice says of the volume and its files, beside the table
/// ([`VolumeAdvice::advice`]).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct OnVolume {
    /// The volume's file system.
    pub fs: FsKind,
    /// Absolute byte offset of the volume on the medium.
    pub start: u64,
    /// Bytes of the file system (the advice's volume size).
    pub volume_bytes: u64,
    /// The volume's sector size.
    pub sector_size: u32,
    /// The volume's cluster size now.
    pub cluster_size: u64,
    /// Files counted on it.
    pub files: u64,
    /// Directories counted on it (the root not counted).
    pub directories: u64,
    /// The files' sizes added up.
    pub file_bytes: u64,
    /// The waste at the current cluster size, by the advice's count (`None`
    /// when the advice has no row of that size for the volume's file system).
    pub waste_bytes: Option<u64>,
    /// `waste_bytes` in percent of `file_bytes`.
    pub waste_percent: Option<f64>,
    /// The recommended cluster size for the volume's file system.
    pub recommended_cluster_size: Option<u64>,
    /// The waste at the recommended size.
    pub recommended_waste_bytes: Option<u64>,
    /// `recommended_waste_bytes` in percent of `file_bytes`.
    pub recommended_waste_percent: Option<f64>,
    /// The `--cluster` value of the re-cluster that goes to the
    /// recommendation, e.g. `4K` (`None` when the volume has that size or
    /// there is none).
    pub recluster_cluster: Option<String>,
    /// Why a re-cluster would be refused as the volume is (damage the
    /// reader found), in words.
    pub refusal: Option<String>,
}

/// The advice for the files on the medium's one volume.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VolumeAdvice {
    /// The advice, as `advise --size BYTES --fs FS PATH` gives it for the
    /// same files on the host.
    pub advice: Advice,
    /// The files, as a scan of the same tree counts them (its `elapsed`:
    /// the reading's time).
    pub data: ScanResult,
    /// The volume, its current size's waste and the re-cluster to run.
    pub on_volume: OnVolume,
}

/// Reads the one FAT/exFAT volume of `dev` (whole medium or one partition)
/// and advises on the files on it as [`advise_with`] does for a scan of
/// the same tree: on a volume of its file system's size and sector size
/// (`sector_size` when given), for `fs` (`None`: its own file system).
/// With `None`s and the default policy the recommendation for its own
/// file system is the size [`crate::recluster::plan_auto`] chooses.
/// `Ok(None)` when the medium holds no single FAT/exFAT volume that can be
/// read, or its volume holds no files. Reads only.
///
/// # Errors
///
/// [`ReclusterError::Io`] when the medium cannot be read,
/// [`ReclusterError::NoRecommendation`] with the advice's error for
/// invalid inputs (a sector size, the policy).
pub fn advise_volume<D: BlockIo + ?Sized>(
    dev: &mut D,
    fs: Option<FsSelection>,
    sector_size: Option<u32>,
    policy: &Policy,
) -> Result<Option<VolumeAdvice>, ReclusterError> {
    let started = std::time::Instant::now();
    let mut tally = Tally::default();
    let (model, _, _) = match read_one_with(dev, &mut |s| tally.add(s)) {
        Ok(read) => read,
        Err(
            ReclusterError::NoVolume(_) | ReclusterError::Inspect(InspectError::Corrupt { .. }),
        ) => return Ok(None),
        Err(e) => return Err(e),
    };
    if model.files == 0 {
        return Ok(None);
    }
    let mut data = tally.finish();
    data.elapsed = started.elapsed();
    let advice = advise_for(&model, &data, fs, sector_size, policy)
        .map_err(|e| ReclusterError::NoRecommendation { why: e.to_string() })?;
    let on_volume = on_volume(
        &model,
        advice.per_fs.iter().find(|f| f.fs == model.geometry.kind),
    );
    Ok(Some(VolumeAdvice {
        advice,
        data,
        on_volume,
    }))
}

/// The volume's line of the advice: `own` is the advice for its own file
/// system, if it was asked for.
fn on_volume(model: &VolumeModel, own: Option<&FsAdvice>) -> OnVolume {
    let g = &model.geometry;
    let row = |size: u64| own.and_then(|f| f.rows.iter().find(|r| r.cluster_size == size));
    let now = row(g.cluster_size);
    let rec = own
        .and_then(|f| f.recommendation.as_ref())
        .map(|r| r.cluster_size);
    let at_rec = rec.and_then(row);
    OnVolume {
        fs: g.kind,
        start: g.start,
        volume_bytes: g.fs_bytes,
        sector_size: g.sector_size,
        cluster_size: g.cluster_size,
        files: model.files,
        directories: model.dirs,
        file_bytes: model.file_bytes,
        waste_bytes: now.and_then(|r| r.waste_bytes),
        waste_percent: now.and_then(|r| r.waste_percent),
        recommended_cluster_size: rec,
        recommended_waste_bytes: at_rec.and_then(|r| r.waste_bytes),
        recommended_waste_percent: at_rec.and_then(|r| r.waste_percent),
        recluster_cluster: rec.filter(|&c| c != g.cluster_size).map(size_arg),
        refusal: model
            .refusal()
            .map(ToString::to_string)
            .or_else(|| (model.findings_dropped > 0).then(|| "too many findings".into())),
    }
}

/// A cluster size as `--cluster` takes it: `4K`, `1M`, or bytes.
fn size_arg(c: u64) -> String {
    const K: u64 = 1 << 10;
    if c >= K << 10 && c % (K << 10) == 0 {
        format!("{}M", c >> 20)
    } else if c >= K && c % K == 0 {
        format!("{}K", c >> 10)
    } else {
        c.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::size_arg;

    #[test]
    fn cluster_sizes_as_the_option_takes_them() {
        assert_eq!(size_arg(512), "512");
        assert_eq!(size_arg(4096), "4K");
        assert_eq!(size_arg(128 << 10), "128K");
        assert_eq!(size_arg(1 << 20), "1M");
        assert_eq!(size_arg(32 << 20), "32M");
        assert_eq!(size_arg(1536), "1536");
    }
}
