//! Reading existing volumes (the `inspect` feature): the inspector's report
//! ([`inspect()`](fn@inspect), what `mkfs-alloc info` prints) and the whole-volume model
//! ([`read_volume`]: geometry, a bit per cluster, every chain and entry set
//! with its position, and typed [`Finding`]s), which changes of a volume in
//! place check before their first write ([`VolumeModel::refused`]).
//!
//! A formatted image read back, then damaged (VolumeDirty set):
//!
//! ```
//! use mkfs_alloc::blockio::{BlockIo, MemDisk};
//! use mkfs_alloc::inspect::{read_volume, Finding, ModelOptions};
//! use mkfs_alloc::layout::FsKind;
//! use mkfs_alloc::MediumOptions;
//!
//! let mut disk = MemDisk::new(512, 64 * 2048)?; // 64 MiB
//! let mut plan = MediumOptions::new().fs(FsKind::Exfat).cluster_size(4096).plan_for(&disk)?;
//! plan.format(&mut disk)?;
//!
//! let size = disk.num_blocks() * 512;
//! let mut paths = Vec::new();
//! let model = read_volume(&mut disk, 0, size, &ModelOptions::default(), &mut |set| {
//!     paths.push(set.path.clone())
//! })?;
//! assert_eq!(model.geometry.cluster_size, 4096);
//! assert!(model.findings.is_empty() && !model.refused());
//! assert!(paths.is_empty()); // a fresh volume holds no files
//! // 1 bit per cluster: the model's only per-cluster memory.
//! assert_eq!(model.used.memory_bytes() as u64, u64::from(model.geometry.cluster_count).div_ceil(64) * 8);
//!
//! // Byte 106 of the boot sector holds VolumeFlags; bit 1 is VolumeDirty.
//! let mut s0 = vec![0u8; 512];
//! disk.read_blocks(0, &mut s0)?;
//! s0[106] |= 0x02;
//! disk.write_blocks(0, &s0)?;
//! let model = read_volume(&mut disk, 0, size, &ModelOptions::default(), &mut |_| {})?;
//! assert!(matches!(model.refusal(), Some(Finding::Dirty { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use mkfs_alloc_inspect::model::{
    ClusterBits, DirtyMark, EntryPos, EntrySet, Geometry, RootDir,
};
pub use mkfs_alloc_inspect::{
    inspect, read_volume, read_volumes, ChainProblem, Finding, InspectError, InspectOptions,
    Limits, ModelOptions, ReadOnlyFile, Report, Volume, VolumeModel,
};

#[cfg(feature = "serde")]
mod json;
mod text;

#[cfg(feature = "serde")]
pub use json::{InfoReport, VolumeReport};

use crate::recluster::Unfinished;
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::sd::{sd_layout, SdLayout, SD_SECTOR};
use mkfs_alloc_ondisk::{FsKind, TableKind};

/// The SD Association layout of a card of the report's size, if the medium
/// holds exactly it: an MBR with one partition where the layout puts it,
/// and a volume of its file system, cluster size, FAT and data region
/// offsets (a card as the SD layout formats it, or as it left the factory).
///
/// ```
/// use mkfs_alloc::blockio::MemDisk;
/// use mkfs_alloc::inspect::{inspect, sd_layout_of, InspectOptions};
/// use mkfs_alloc::MediumOptions;
///
/// for sd in [true, false] {
///     let mut card = MemDisk::new(512, 64 * 2048)?; // 64 MiB
///     let mut plan = MediumOptions::new().sd(sd).whole_disk(true).plan_for(&card)?;
///     plan.format(&mut card)?;
///     let report = inspect(&mut card, &InspectOptions::default())?;
///     assert_eq!(sd_layout_of(&report).is_some(), sd);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sd_layout_of(r: &Report) -> Option<SdLayout> {
    let t = &r.partition_table;
    let ([p], [v]) = (t.partitions.as_slice(), r.volumes.as_slice()) else {
        return None;
    };
    if t.kind != TableKind::Mbr || r.block_size != 512 || v.sector_size != Some(512) {
        return None;
    }
    let fs = v.ours()?;
    let total = r.medium_bytes / SD_SECTOR;
    let sd = sd_layout(total, false).ok()?;
    let sd = if fs == FsKind::Fat32 && sd.fs == FsKind::Exfat {
        sd_layout(total, true).ok()?
    } else {
        sd
    };
    let at = |sector: u64| Some((sd.part_start + sector) * SD_SECTOR);
    let matches = sd.fs == fs
        && p.start == sd.part_start * SD_SECTOR
        && p.size == sd.part_sectors * SD_SECTOR
        && v.cluster_size == Some(sd.sec_per_clus * SD_SECTOR)
        && v.cluster_count == Some(sd.cluster_count)
        && v.fat_offset == at(sd.fat_offset)
        && v.data_offset == at(sd.data_offset);
    matches.then_some(sd)
}

/// What `mkfs-alloc info` reports of a medium ([`medium_info`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct MediumInfo {
    /// The inspector's report.
    pub report: Report,
    /// One per [`Report::volumes`]: what the volume model found (nothing
    /// for a volume that is not FAT or exFAT, or that the model could not
    /// read: the report has its error).
    pub findings: Vec<VolumeFindings>,
    /// The SD Association layout, if the medium holds exactly it
    /// ([`sd_layout_of`]).
    pub sd: Option<SdLayout>,
    /// The in-place jobs left unfinished on its volumes.
    pub unfinished: Unfinished,
}

/// What the volume model found in one volume.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct VolumeFindings {
    /// The findings kept.
    pub findings: Vec<Finding>,
    /// How many more the model found but did not keep.
    pub dropped: u64,
}

/// Inspects `dev` read-only with one walk of each volume's tree (the
/// report's statistics with [`InspectOptions::files`], and the model's
/// findings), then looks for the SD layout and unfinished in-place jobs.
///
/// # Errors
///
/// The inspector's ([`inspect()`](fn@inspect)).
pub fn medium_info<D: BlockIo + ?Sized>(
    dev: &mut D,
    opts: &InspectOptions,
) -> Result<MediumInfo, InspectError> {
    let inspection = mkfs_alloc_inspect::inspect_with_models(dev, opts)?;
    let findings = inspection
        .models
        .into_iter()
        .map(|model| VolumeFindings {
            dropped: model.as_ref().map_or(0, |m| m.findings_dropped),
            findings: model.map(|m| m.findings).unwrap_or_default(),
        })
        .collect();
    let report = inspection.report;
    Ok(MediumInfo {
        sd: sd_layout_of(&report),
        unfinished: Unfinished::in_report(dev, &report),
        findings,
        report,
    })
}
