//! mkfs-alloc as a library: partition and format any [`BlockIo`] target in
//! one call — for imaging tools and test suites.
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
//! ```
//! use mkfs_alloc::{format, MediumOptions};
//! use mkfs_alloc::blockio::MemDisk;
//! use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsType};
//! use mkfs_alloc::partition::{TableChoice, TableKind};
//!
//! let mut disk = MemDisk::new(512, 256 * 2048)?; // 256 MiB
//! let opts = MediumOptions {
//!     format: FormatOptions {
//!         fs: FsChoice::Fixed(FsType::Exfat),
//!         cluster: ClusterChoice::Bytes(32 * 1024),
//!         serial: Some(0x1234_ABCD),
//!         ..FormatOptions::default()
//!     },
//!     table: TableChoice::Fixed(TableKind::Mbr),
//!     ..MediumOptions::default()
//! };
//! let (plan, _report) = format(&opts, &mut disk, &mut |_, _| {})?;
//! assert_eq!(plan.table.partition_start, 1 << 20);
//! assert_eq!(&disk.as_bytes()[(1 << 20) + 3..(1 << 20) + 11], b"EXFAT   ");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use mkfs_alloc_blockio as blockio;
pub use mkfs_alloc_layout as layout;
pub use mkfs_alloc_partition as partition;

use mkfs_alloc_blockio::{BlockIo, IoError, Slice};
use mkfs_alloc_layout::{
    Content, FormatOptions, FsType, Layout, Medium, PlanError, WriteError, WriteReport,
};
use mkfs_alloc_partition::{
    choose_table, plan_table, probe_signatures, wipe_for_table, write_table, PartitionError,
    PartitionFs, Signature, TableChoice, TableKind, TableOptions, TablePlan, MIN_GPT_ALIGN,
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

/// A validated plan for a whole medium.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediumPlan {
    /// The partition table (kind `None`: the volume spans the medium).
    pub table: TablePlan,
    /// Why this table kind.
    pub table_reason: &'static str,
    /// The file system inside the partition.
    pub layout: Layout,
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
            FormatError::Write(_) => true,
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
    let (kind, table_reason) = choose_table(opts.table, medium_bytes, opts.whole_disk);
    let mut format = opts.format.clone();
    let serial = format
        .serial
        .unwrap_or_else(|| mkfs_alloc_layout::plan::serial_from_time(format.timestamp));
    format.serial = Some(serial);
    let align = match (kind, format.align) {
        (TableKind::Gpt, a) => a.unwrap_or(MIN_GPT_ALIGN).max(MIN_GPT_ALIGN),
        (_, Some(a)) => a,
        (_, None) => mkfs_alloc_partition::DEFAULT_ALIGN,
    };
    let mut topts = TableOptions::new(kind, PartitionFs::Exfat);
    topts.align = if kind == TableKind::None {
        u64::from(block_size)
    } else {
        align
    };
    topts.name = format.label.clone().unwrap_or_default();
    topts.seed = table_seed(serial);
    topts.esp = format.esp;
    let mut table = plan_table(&topts, medium_bytes, block_size)?;
    let medium = Medium {
        volume_bytes: table.partition_len,
        sector_size: opts.sector_size,
        partition_offset: table.partition_start,
    };
    let layout = mkfs_alloc_layout::plan(&format, &medium)?;
    if table.mbr_type.is_some() && !format.esp {
        let fs = match layout.fs {
            FsType::Exfat => PartitionFs::Exfat,
            FsType::Fat32 => PartitionFs::Fat32,
            FsType::Fat16 => PartitionFs::Fat16,
            FsType::Fat12 => PartitionFs::Fat12,
        };
        let bs = u64::from(block_size);
        table.mbr_type =
            Some(fs.mbr_type_for(table.partition_start / bs, table.partition_len / bs));
    }
    Ok(MediumPlan {
        table,
        table_reason,
        layout,
    })
}

/// What is on `dev` now, the way `wipefs -n` would show it
/// ([`probe_signatures`]); nothing on a target that reads as zero (a fresh
/// sparse image), which is not read at all.
pub fn find_signatures<D: BlockIo>(dev: &mut D) -> Result<Vec<Signature>, FormatError> {
    if dev.reads_as_zero() {
        return Ok(Vec::new());
    }
    Ok(probe_signatures(dev)?)
}

/// Writes a planned medium whose old signatures the caller has already
/// found with [`find_signatures`]: wipes them and the areas
/// [`wipe_for_table`] covers, writes the file system inside the partition,
/// then the partition table, and flushes.
pub fn write_medium<D: BlockIo>(
    plan: &MediumPlan,
    dev: &mut D,
    found: &[Signature],
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
    found: &[Signature],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WriteReport, FormatError> {
    wipe_for_table(&plan.table, found, dev)?;
    // Old file systems gone for good before anything new is written; a
    // target where none was found needs no flush here.
    if !found.is_empty() {
        dev.flush()?;
    }
    let bs = u64::from(dev.block_size());
    let first = plan.table.partition_start / bs;
    let count = plan.layout.volume_bytes / bs;
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
    if plan.table.kind != TableKind::None {
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
