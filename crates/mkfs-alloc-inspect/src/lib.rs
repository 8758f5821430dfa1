//! Read-only inspection of a medium: partition table, file systems, and for
//! FAT12/16/32 and exFAT the geometry, alignment, used and free space, label,
//! serial and (optionally) what the files take at every cluster size.
//!
//! ```text
//!  any BlockIo ─► Reader (byte ranges, bounds-checked)
//!                   │
//!                   ├─ partition: MBR / protective MBR + GPT (CRC-checked)
//!                   │     └─ one Volume per partition, or the whole medium
//!                   ├─ probe: exFAT, FAT, NTFS, ext2/3/4, ISO 9660, … by signature
//!                   ├─ exfat: boot region (+ backup), root system entries, bitmap count
//!                   ├─ fat:   BPB, FSInfo, root label, FAT free count
//!                   │     └─ chain: FAT window cache, Brent loop detection,
//!                   │               streaming cluster reader
//!                   └─ model: the one walk of the tree (every chain marked
//!                             once) ─► findings; with `files`, the
//!                             statistics (stats) from the same walk
//! ```
//!
//! The input is untrusted. Architecture invariants:
//! - nothing is ever written (the [`ReadOnlyFile`] backend cannot write);
//! - no panics on any input: every offset is checked before it is read;
//! - memory is bounded: reads go in pieces of at most 1 MiB, the FAT through
//!   a 16 KiB window, directories one entry set at a time, one bit per
//!   cluster for the walk; what else grows with the volume (pending
//!   directories, listed files, warnings, findings) is capped by [`Limits`];
//! - work is bounded: FAT chains are walked with cycle detection, every
//!   cluster is marked at most once (a second visit is a cycle or a
//!   cross-link), and the walk stops at [`Limits`].
//!
//! Damage found in a volume does not fail [`inspect`]: the volume gets an
//! [`Volume::error`] (after the fields read before it) or
//! [`Volume::warnings`].
//!
//! ```
//! use mkfs_alloc_blockio::MemDisk;
//! use mkfs_alloc_inspect::{inspect, FsKind, InspectOptions, TableKind};
//! use mkfs_alloc_layout::{plan, write_volume, ClusterChoice, FormatOptions, Medium};
//!
//! let opts = FormatOptions::new()
//!     .fs(FsKind::Exfat)
//!     .cluster(ClusterChoice::Bytes(4096))
//!     .label("STICK")
//!     .serial(0x1234_ABCD);
//! let mut disk = MemDisk::new(512, 16 * 2048)?; // 16 MiB
//! let layout = plan(&opts, &Medium::whole(16 << 20, 512)?)?;
//! write_volume(&layout, &mut disk, &mut |_, _| {})?;
//!
//! let report = inspect(&mut disk, &InspectOptions { files: true, ..Default::default() })?;
//! assert_eq!(report.partition_table.kind, TableKind::None);
//! let v = &report.volumes[0];
//! assert_eq!(v.ours(), Some(FsKind::Exfat));
//! assert_eq!(v.cluster_size, Some(4096));
//! assert_eq!(v.label.as_deref(), Some("STICK"));
//! assert_eq!(v.serial.as_deref(), Some("1234ABCD"));
//! assert_eq!(v.files.as_ref().map(|f| f.count), Some(0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(clippy::missing_errors_doc)]
#![forbid(unsafe_code)]

mod chain;
pub mod error;
pub mod exfat;
pub mod fat;
mod io;
pub mod model;
pub mod partition;
mod probe;
mod report;
mod stats;
mod walk;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::probe::table;

pub use error::{ChainProblem, InspectError, ParseError};
pub use io::ReadOnlyFile;
pub use model::{
    read_volume, read_volume_visiting, read_volumes, DirRead, Finding, ModelOptions, Visit,
    VolumeModel,
};
pub use partition::read_partition_table;
pub use report::{
    alignment_of, Alignment, AnyFs, AtClusterSize, FileEntry, FileStats, FsKind, Partition,
    PartitionTable, Report, TableKind, Volume, ALIGN_BOUNDARY,
};

use io::Reader;

/// Bounds on the work and memory of an inspection of untrusted input.
///
/// The defaults are far above what a real volume needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Files and directories counted before the walk stops.
    pub max_entries: u64,
    /// Directories queued but not yet read.
    pub max_pending_dirs: u64,
    /// Directory nesting depth (default 16,384: deeper than any path an
    /// operating system opens, each level taking at least two UTF-16 units
    /// of Windows' 32,767 and two bytes of Linux's 4,096; the walk keeps no
    /// recursion and a waiting directory costs its own name only).
    pub max_depth: u32,
    /// Bytes read from one directory (exFAT allows 256 MiB, FAT 2 MiB).
    /// Not consulted: the walk reads a directory at most as far as its
    /// chain and the format's limit go, every cluster once.
    pub max_dir_bytes: u64,
    /// Bytes read from all directories together. Not consulted: every
    /// cluster is read at most once, so the volume bounds the total.
    pub max_dir_bytes_total: u64,
    /// Files listed in [`FileStats::entries`].
    pub max_listed_files: usize,
    /// Warnings kept per volume.
    pub max_warnings: usize,
    /// Clusters walked along file FAT chains (fragment counting); `None`:
    /// twice the cluster count plus 2^20. Not consulted: every cluster is
    /// marked at most once, so the chains walked are at most the volume.
    pub max_chain_steps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 100_000_000,
            max_pending_dirs: 1 << 20,
            max_depth: 16_384,
            max_dir_bytes: exfat::MAX_DIR_BYTES,
            max_dir_bytes_total: 8 << 30,
            max_listed_files: 1 << 20,
            max_warnings: 100,
            max_chain_steps: None,
        }
    }
}

/// What to inspect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InspectOptions {
    /// Walk the directory trees of FAT/exFAT volumes ([`Volume::files`]).
    pub files: bool,
    /// Also list every file ([`FileStats::entries`]; needs `files`).
    pub list_files: bool,
    /// Bounds.
    pub limits: Limits,
}

/// Inspects a medium: its partition table and every volume on it.
///
/// # Errors
///
/// Only when the first sector cannot be read ([`InspectError::Io`]); damage
/// and I/O errors inside a volume are reported in its [`Volume::error`].
pub fn inspect<D: BlockIo + ?Sized>(
    dev: &mut D,
    opts: &InspectOptions,
) -> Result<Report, InspectError> {
    inspect_all(dev, opts, false).map(|i| i.report)
}

/// A [`Report`] and the [`VolumeModel`] of each of its volumes, from one
/// walk of each volume's tree.
#[derive(Debug)]
pub struct Inspection {
    /// What [`inspect`] reports.
    pub report: Report,
    /// One per [`Report::volumes`]: the model of a FAT or exFAT volume,
    /// `None` for another file system or a volume the model cannot read
    /// (the report has its error).
    pub models: Vec<Option<VolumeModel>>,
}

/// [`inspect`], and every FAT and exFAT volume read whole into a
/// [`VolumeModel`] in the same pass that fills [`Volume::files`] (one walk
/// of each tree, with or without [`InspectOptions::files`]).
///
/// # Errors
///
/// As [`inspect`].
pub fn inspect_with_models<D: BlockIo + ?Sized>(
    dev: &mut D,
    opts: &InspectOptions,
) -> Result<Inspection, InspectError> {
    inspect_all(dev, opts, true)
}

/// [`inspect`]; the volumes' models too when `models` (the tree is walked
/// only for them or for [`InspectOptions::files`]).
fn inspect_all<D: BlockIo + ?Sized>(
    dev: &mut D,
    opts: &InspectOptions,
    models: bool,
) -> Result<Inspection, InspectError> {
    let block_size = dev.block_size();
    let mut r = Reader::new(dev);
    let medium = r.size();
    let table = partition::read_table(&mut r)?;
    let mut volumes = Vec::new();
    let mut found = Vec::new();
    let mut push = |(v, m)| {
        volumes.push(v);
        found.push(m);
    };
    if table.kind == TableKind::None {
        if medium > 0 {
            push(inspect_volume(
                &mut r,
                Volume::new(None, 0, medium),
                opts,
                models,
            ));
        }
    } else {
        for p in &table.partitions {
            let mbr_type = p.type_id.strip_prefix("0x");
            let mbr_type = mbr_type.and_then(|t| u8::from_str_radix(t, 16).ok());
            if mbr_type.is_some_and(|t| !table::type_holds_volume(t)) {
                continue;
            }
            let mut v = Volume::new(Some(p.index), p.start, p.size);
            if p.start >= medium {
                v.error = Some(format!(
                    "partition {} starts at byte {}, beyond the end of the medium ({medium} bytes)",
                    p.index, p.start
                ));
                push((v, None));
                continue;
            }
            if p.start.saturating_add(p.size) > medium {
                v.size = medium - p.start;
                v.warnings.push(format!(
                    "partition {} ends at byte {}, beyond the end of the medium ({medium} bytes)",
                    p.index,
                    p.start.saturating_add(p.size)
                ));
            }
            push(inspect_volume(&mut r, v, opts, models));
        }
    }
    Ok(Inspection {
        report: Report {
            medium_bytes: medium,
            block_size,
            partition_table: table,
            volumes,
        },
        models: found,
    })
}

/// One volume: its boot region and allocation counts, then (for its files'
/// statistics or its model) one walk of its tree by the model.
fn inspect_volume<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    mut v: Volume,
    opts: &InspectOptions,
    want_model: bool,
) -> (Volume, Option<VolumeModel>) {
    // The model streams the FAT anyway: a FAT volume's free count waits
    // for it.
    let defer = want_model || opts.files;
    let (sizes, mut free_count) = match fill_volume(r, &mut v, defer) {
        Ok(Some((sizes, free))) => (Some(sizes), free),
        Ok(None) => (None, None),
        Err(e) => {
            v.error = Some(e.to_string());
            (None, None)
        }
    };
    v.misaligned = misaligned(&v);
    let mut stats = sizes
        .filter(|_| opts.files)
        .zip(v.cluster_size.zip(v.cluster_count))
        .map(|(sizes, geo)| {
            stats::Stats::new(geo, sizes, opts.list_files, opts.limits.max_listed_files)
        });
    if v.ours().is_none() || !(want_model || stats.is_some()) {
        count_free_now(r, &mut v, free_count);
        return (v, None);
    }
    let model_opts = ModelOptions {
        limits: opts.limits.clone(),
    };
    let visit: &mut dyn Visit = match stats.as_mut() {
        Some(s) => s,
        None => &mut stats::Nothing,
    };
    match model::read_in(r, v.start, v.size, &model_opts, visit) {
        Ok(m) => {
            if free_count.take().is_some() {
                fat::set_free(&mut v, m.free_clusters);
            }
            if let Some(s) = stats {
                s.finish(&m, &mut v);
            }
            (v, Some(m))
        }
        Err(e) => {
            count_free_now(r, &mut v, free_count);
            if stats.is_some() {
                v.error.get_or_insert(e.to_string());
            }
            (v, None)
        }
    }
}

/// Counts a FAT volume's free clusters that waited for a model that did
/// not come.
fn count_free_now<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    v: &mut Volume,
    free: Option<fat::FreeCount>,
) {
    if let Some(f) = free {
        match f.count(r) {
            Ok(n) => fat::set_free(v, n),
            Err(e) => {
                v.error.get_or_insert(e.to_string());
            }
        }
    }
}

/// What [`fill_volume`] leaves for the walk: the cluster sizes to compare
/// the files at, and a FAT's free count when it waits for the model.
type Header = (Vec<u64>, Option<fat::FreeCount>);

/// The volume's file system and what its boot region and allocation say;
/// for FAT and exFAT the cluster sizes to compare its files at.
fn fill_volume<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    v: &mut Volume,
    defer_free: bool,
) -> Result<Option<Header>, InspectError> {
    let Some(p) = probe::probe(r, v.start, v.size)? else {
        return Ok(None);
    };
    v.fs = Some(p.kind);
    match p.kind.ours() {
        Some(FsKind::Exfat) => exfat::inspect(r, v).map(|s| Some((s, None))),
        Some(FsKind::Fat12 | FsKind::Fat16 | FsKind::Fat32) => {
            fat::inspect(r, v, defer_free).map(Some)
        }
        None => {
            v.label = p.label;
            v.serial = p.serial;
            Ok(None)
        }
    }
}

/// Names of the regions not on a 1 MiB boundary.
fn misaligned(v: &Volume) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, offset: Option<u64>| {
        if let Some(o) = offset {
            if o % ALIGN_BOUNDARY != 0 {
                out.push(name.to_string());
            }
        }
    };
    check("partition", Some(v.start));
    if v.ours().is_some() {
        check("fat", v.fat_offset);
        check("data", v.data_offset);
    }
    out
}
