//! mkfs-alloc as a library: partition and format any [`BlockIo`] target as
//! exFAT or FAT with an explicit cluster size — for imaging tools and test
//! suites. An image file, formatted exFAT with fresh identifiers:
//!
//! ```
//! # let path = std::env::temp_dir().join(format!("mkfs-alloc-doc-{}.img", std::process::id()));
//! use mkfs_alloc::{blockio::ImageFile, format, layout::{FsChoice, FsKind}, MediumOptions};
//! let mut image = ImageFile::create(&path, 256 << 20, 512)?; // a sparse 256 MiB image
//! let mut opts = MediumOptions::default();
//! opts.format.fs = FsChoice::Fixed(FsKind::Exfat);
//! let (plan, _report) = format(&opts, &mut image, &mut |_done, _total| {})?;
//! # assert_eq!(plan.layout().fs(), FsKind::Exfat);
//! # drop(image); std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ```text
//!  MediumOptions + medium size ─► plan_medium() ─► MediumPlan { table, layout }
//!                                   (validates      │
//!                                    everything)    ▼
//!                                  format_medium(&plan, &mut impl BlockIo)
//!                                    1. wipe stale signatures (old tables, old boot sectors wherever found)
//!                                    2. write the file system inside the partition (boot sector last)
//!                                    3. write the partition table, flush
//! ```
//!
//! Every check happens in [`plan_medium`] (also the target's block size
//! against the sector size) and again in [`write_medium`] before its first
//! write, so rejected input leaves the target byte-identical. A plan's
//! fields are private, and [`write_medium`] wipes what [`find_signatures`]
//! found on that same target (a [`Found`] comes only from probing).
//!
//! Identifiers: unless the caller pins them, each format gets a fresh random
//! serial, from which the exFAT volume GUID, the MBR disk signature and the
//! GPT GUIDs derive, and the current time. [`FormatOptions::pinned`] (serial
//! and timestamp) makes two formats byte-identical:
//!
//! ```
//! use mkfs_alloc::{format, MediumOptions};
//! use mkfs_alloc::blockio::MemDisk;
//! use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsKind, Timestamp};
//! use mkfs_alloc::partition::{TableChoice, TableKind};
//!
//! let mut disk = MemDisk::new(512, 256 * 2048)?; // 256 MiB
//! let opts = MediumOptions {
//!     format: FormatOptions {
//!         fs: FsChoice::Fixed(FsKind::Exfat),
//!         cluster: ClusterChoice::Bytes(32 * 1024),
//!         ..FormatOptions::default()
//!     }
//!     .pinned(0x1234_ABCD, Timestamp { secs: 1_700_000_000, nanos: 0 }),
//!     table: TableChoice::Fixed(TableKind::Mbr),
//!     ..MediumOptions::default()
//! };
//! let (plan, _report) = format(&opts, &mut disk, &mut |_, _| {})?;
//! assert_eq!(plan.table().partition_start(), 1 << 20);
//! assert_eq!(&disk.as_bytes()[(1 << 20) + 3..(1 << 20) + 11], b"EXFAT   ");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// Block targets: the trait and the portable backends (raw devices are in
/// the `mkfs-alloc-device` crate).
pub mod blockio {
    pub use mkfs_alloc_blockio::{
        injected_fault, BlockIo, Counting, Fault, FaultyIo, ImageFile, InjectedFault, IoError,
        IoOp, IoStats, LogEntry, MemDisk, Slice,
    };
}

/// File-system options, the validated [`Layout`] and the
/// writer's report.
pub mod layout {
    pub use mkfs_alloc_layout::label::EncodedLabel;
    pub use mkfs_alloc_layout::plan::Geometry;
    pub use mkfs_alloc_layout::rules::{ClusterRule, FsRule};
    pub use mkfs_alloc_layout::{
        random_serial, ClusterChoice, Content, ContentSink, FormatOptions, FsChoice, FsKind,
        Layout, PlanError, Region, RegionKind, Timestamp, WriteError, WriteReport,
    };
}

/// Partition-table options and plans.
pub mod partition {
    pub use mkfs_alloc_partition::{
        FsKind, GptPlan, Guid, MbrPlan, PartitionError, Signature, SignatureKind, TableChoice,
        TableKind, TablePlan, TableSpec,
    };
}

use mkfs_alloc_blockio::{BlockIo, IoError, Slice};
use mkfs_alloc_layout::{
    check_block_size, random_serial, Content, FormatOptions, FsKind, Layout, Medium, PlanError,
    Timestamp, WriteError, WriteReport,
};
use mkfs_alloc_partition::{
    choose_table, plan_mbr_at, plan_table, probe_signatures, wipe_for_table, write_table,
    MbrPlacement, PartitionError, Signature, TableChoice, TableKind, TableOptions, TablePlan,
    MIN_GPT_ALIGN,
};

/// What to do with a whole medium.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediumOptions {
    /// The file system options (the alignment applies to the partition too).
    pub format: FormatOptions,
    /// Partition table: `auto` gives none unless `whole_disk`.
    pub table: TableChoice,
    /// The target is a whole disk (not an image file or an existing partition).
    pub whole_disk: bool,
    /// The file system's logical sector size; at least the medium's block size.
    pub sector_size: u32,
}

impl Default for MediumOptions {
    fn default() -> Self {
        MediumOptions {
            format: FormatOptions::default(),
            table: TableChoice::Auto,
            whole_disk: false,
            sector_size: 512,
        }
    }
}

/// A validated plan for a whole medium. Only [`plan_medium`] makes one (the
/// fields are private: a plan cannot be changed after validation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediumPlan {
    table: TablePlan,
    table_reason: &'static str,
    layout: Layout,
    medium_bytes: u64,
    block_size: u32,
}

impl MediumPlan {
    /// The partition table (kind `None`: the volume spans the medium).
    pub fn table(&self) -> &TablePlan {
        &self.table
    }

    /// Why this table kind.
    pub fn table_reason(&self) -> &'static str {
        self.table_reason
    }

    /// The file system inside the partition.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Bytes of the medium planned for.
    pub fn medium_bytes(&self) -> u64 {
        self.medium_bytes
    }

    /// Logical block size of the medium planned for.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Refuses a target other than the one planned for (block size, size),
    /// before anything is written to it.
    fn check_target<D: BlockIo>(&self, dev: &D) -> Result<(), FormatError> {
        check_block_size(dev.block_size(), self.layout.sector_size())?;
        let bytes = dev.num_blocks().saturating_mul(u64::from(dev.block_size()));
        if dev.block_size() != self.block_size || bytes < self.medium_bytes {
            return Err(FormatError::NotPlannedTarget {
                planned_bytes: self.medium_bytes,
                planned_block: self.block_size,
                bytes,
                block: dev.block_size(),
            });
        }
        Ok(())
    }
}

/// What was on a target before the format: the signatures
/// [`find_signatures`] found (only it makes one, so the wipe cannot be
/// skipped by passing an empty list), with the shape of the target probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    signatures: Vec<Signature>,
    block_size: u32,
    num_blocks: u64,
}

impl Found {
    /// The signatures, in the order `wipefs -n` would list them.
    pub fn signatures(&self) -> &[Signature] {
        &self.signatures
    }
}

/// What went wrong. `Plan` and `Partition` errors (except I/O) come before
/// anything is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file-system options are invalid for this medium.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The partition table options are invalid, or writing it failed.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// Writing the file system failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Another I/O failure.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The target written to is not the one planned for or probed.
    #[error("the target ({bytes} bytes in {block}-byte blocks) is not the one planned for or probed ({planned_bytes} bytes in {planned_block}-byte blocks)")]
    NotPlannedTarget {
        /// Bytes of the medium planned for.
        planned_bytes: u64,
        /// Block size planned for.
        planned_block: u32,
        /// Bytes of the target.
        bytes: u64,
        /// Block size of the target.
        block: u32,
    },
}

impl FormatError {
    /// True when the error is about the input (nothing was written).
    pub fn is_invalid_input(&self) -> bool {
        match self {
            FormatError::Plan(_) => true,
            FormatError::Partition(PartitionError::Io(_)) => false,
            FormatError::Partition(_) => true,
            FormatError::Write(WriteError::Io(_) | WriteError::Content(_)) | FormatError::Io(_) => {
                false
            }
            FormatError::Write(_) | FormatError::NotPlannedTarget { .. } => true,
        }
    }
}

/// The seed of the partition identifiers, derived from the volume serial so
/// that `--serial` pins them too.
fn table_seed(serial: u32) -> u64 {
    u64::from(serial) ^ 0x7061_7274_6974_696f
}

/// Plans table and file system for a medium of `medium_bytes` bytes with
/// `block_size`-byte logical blocks. Validates everything; writes nothing.
pub fn plan_medium(
    opts: &MediumOptions,
    medium_bytes: u64,
    block_size: u32,
) -> Result<MediumPlan, FormatError> {
    check_block_size(block_size, opts.sector_size)?;
    if opts.format.sd {
        return plan_sd_medium(opts, medium_bytes, block_size);
    }
    let (kind, table_reason) = choose_table(opts.table, medium_bytes, opts.whole_disk);
    // Pin what the caller left open, so that the table and the file system
    // derive their identifiers from the same serial.
    let mut format = opts.format.clone();
    let serial = *format.serial.get_or_insert_with(random_serial);
    format.timestamp.get_or_insert_with(Timestamp::now);
    let align = match (kind, format.align) {
        (TableKind::Gpt, a) => a.unwrap_or(MIN_GPT_ALIGN).max(MIN_GPT_ALIGN),
        (_, Some(a)) => a,
        (_, None) => mkfs_alloc_partition::DEFAULT_ALIGN,
    };
    let mut topts = TableOptions::new(kind, FsKind::Exfat);
    topts.align = if kind == TableKind::None {
        u64::from(block_size)
    } else {
        align
    };
    topts.name = format.label.clone().unwrap_or_default();
    topts.seed = table_seed(serial);
    topts.esp = format.esp;
    let table = plan_table(&topts, medium_bytes, block_size)?;
    let medium = Medium {
        volume_bytes: table.partition_len(),
        sector_size: opts.sector_size,
        partition_offset: table.partition_start(),
    };
    let layout = mkfs_alloc_layout::plan(&format, &medium)?;
    // The MBR type byte depends on the file system the layout chose; the
    // extent does not, so planning again gives the same partition.
    topts.fs_type = layout.fs();
    let table = plan_table(&topts, medium_bytes, block_size)?;
    Ok(MediumPlan {
        table,
        table_reason,
        layout,
        medium_bytes,
        block_size,
    })
}

/// [`plan_medium`] for the SD Association layout
/// ([`FormatOptions::sd`](mkfs_alloc_layout::FormatOptions::sd)): an MBR
/// whose one partition starts where the card's capacity class says, with
/// the class's type byte and CHS geometry, and the volume planned inside it.
fn plan_sd_medium(
    opts: &MediumOptions,
    medium_bytes: u64,
    block_size: u32,
) -> Result<MediumPlan, FormatError> {
    use mkfs_alloc_layout::sd::{card_layout, SdConflict, SdError, SD_SECTOR};
    let conflict = |option| Err(PlanError::from(SdError::Conflict { option }).into());
    let table_reason = match opts.table {
        TableChoice::Auto | TableChoice::Fixed(TableKind::Mbr) => {
            "the SD layout: an MBR with one partition, as the SD specification lays out cards"
        }
        TableChoice::Fixed(TableKind::None) => return conflict(SdConflict::TableNone),
        TableChoice::Fixed(TableKind::Gpt) => return conflict(SdConflict::TableGpt),
    };
    if u64::from(block_size) != SD_SECTOR || u64::from(opts.sector_size) != SD_SECTOR {
        return Err(PlanError::from(SdError::SectorSize(block_size.max(opts.sector_size))).into());
    }
    let mut format = opts.format.clone();
    let serial = *format.serial.get_or_insert_with(random_serial);
    format.timestamp.get_or_insert_with(Timestamp::now);
    let (sd, _) = card_layout(&format, medium_bytes / SD_SECTOR).map_err(PlanError::from)?;
    let mut topts = TableOptions::new(TableKind::Mbr, FsKind::Exfat);
    topts.seed = table_seed(serial);
    // The alignment the start has (FAT12/16 cards: what the layout gives).
    topts.align = Layout::alignment_of(sd.part_start * SD_SECTOR);
    let placement = MbrPlacement {
        start_lba: sd.part_start,
        partition_type: sd.mbr_type,
        heads: sd.heads,
        sectors_per_track: sd.sectors_per_track,
    };
    let table = plan_mbr_at(&topts, placement, medium_bytes, block_size)?;
    let medium = Medium {
        volume_bytes: table.partition_len(),
        sector_size: opts.sector_size,
        partition_offset: table.partition_start(),
    };
    let layout = mkfs_alloc_layout::plan(&format, &medium)?;
    Ok(MediumPlan {
        table,
        table_reason,
        layout,
        medium_bytes,
        block_size,
    })
}

/// What is on `dev` now, the way `wipefs -n` would show it
/// ([`probe_signatures`]); nothing on a target that reads as zero (a fresh
/// sparse image), which is not read at all.
pub fn find_signatures<D: BlockIo>(dev: &mut D) -> Result<Found, FormatError> {
    let signatures = if dev.reads_as_zero() {
        Vec::new()
    } else {
        probe_signatures(dev)?
    };
    Ok(Found {
        signatures,
        block_size: dev.block_size(),
        num_blocks: dev.num_blocks(),
    })
}

/// Writes a planned medium whose old signatures the caller has already
/// found with [`find_signatures`]: wipes them and the areas
/// [`wipe_for_table`] covers, writes the file system inside the partition,
/// then the partition table, and flushes.
pub fn write_medium<D: BlockIo>(
    plan: &MediumPlan,
    dev: &mut D,
    found: &Found,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WriteReport, FormatError> {
    write_medium_with(plan, None, dev, found, progress)
}

/// [`write_medium`] that also writes files and directories into the new
/// volume (a [`Content`], such as `mkfs_alloc_populate`'s planned tree)
/// before its boot sector.
pub fn write_medium_with<D: BlockIo>(
    plan: &MediumPlan,
    content: Option<&mut dyn Content>,
    dev: &mut D,
    found: &Found,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WriteReport, FormatError> {
    // Every check again, before the first write.
    plan.check_target(dev)?;
    if (found.block_size, found.num_blocks) != (dev.block_size(), dev.num_blocks()) {
        return Err(FormatError::NotPlannedTarget {
            planned_bytes: found.num_blocks.saturating_mul(u64::from(found.block_size)),
            planned_block: found.block_size,
            bytes: dev.num_blocks().saturating_mul(u64::from(dev.block_size())),
            block: dev.block_size(),
        });
    }
    wipe_for_table(&plan.table, &found.signatures, dev)?;
    // Old file systems gone for good before anything new is written; a
    // target where none was found needs no flush here.
    if !found.signatures.is_empty() {
        dev.flush()?;
    }
    let bs = u64::from(dev.block_size());
    let first = plan.table.partition_start() / bs;
    let count = plan.layout.volume_bytes() / bs;
    let report = {
        let mut part = Slice::new(&mut *dev, first, count)?;
        mkfs_alloc_layout::write_volume_with(
            &plan.layout,
            content,
            &mut part,
            // wipe_for_table zeroed the volume's first MiB.
            mkfs_alloc_layout::Prior::Wiped(mkfs_alloc_partition::WIPE_VOLUME_START),
            progress,
        )?
    };
    if plan.table.kind() != TableKind::None {
        write_table(&plan.table, dev)?;
        dev.flush()?;
    }
    Ok(report)
}

/// [`find_signatures`] and [`write_medium`]: wipes stale signatures
/// (everything [`probe_signatures`] finds, and the areas [`wipe_for_table`]
/// covers), writes the file system inside the partition, then the partition
/// table, and flushes.
pub fn format_medium<D: BlockIo>(
    plan: &MediumPlan,
    dev: &mut D,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WriteReport, FormatError> {
    let found = find_signatures(dev)?;
    write_medium(plan, dev, &found, progress)
}

/// [`plan_medium`] and [`format_medium`] in one call.
pub fn format<D: BlockIo>(
    opts: &MediumOptions,
    dev: &mut D,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(MediumPlan, WriteReport), FormatError> {
    let bytes = dev.num_blocks() * u64::from(dev.block_size());
    let plan = plan_medium(opts, bytes, dev.block_size())?;
    let report = format_medium(&plan, dev, progress)?;
    Ok((plan, report))
}
