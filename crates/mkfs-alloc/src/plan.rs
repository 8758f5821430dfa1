//! Planning a medium once: the partition table, then the file system inside
//! the partition, then the table's type byte for that file system.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::{
    check_block_size, random_serial, random_u64, FormatOptions, FsKind, Layout, Medium, PlanError,
    Timestamp,
};
use mkfs_alloc_partition::{
    choose_table, plan_mbr_at, plan_table, MbrPlacement, TableChoice, TableFootprint, TableIds,
    TableKind, TableOptions, TablePlan, MIN_GPT_ALIGN,
};

use crate::write::Content;
use crate::{FormatError, MediumOptions};

/// A validated plan for a whole medium, with or without a tree to write
/// into its volume (`MediumPlan::populate`, the `populate` feature). Only
/// planning makes one ([`MediumOptions::plan`]); its fields are private, so
/// a plan cannot be changed after validation.
#[derive(Debug)]
pub struct MediumPlan {
    pub(crate) table: TablePlan,
    pub(crate) table_reason: &'static str,
    pub(crate) layout: Layout,
    /// The options the layout was planned with (serial and time filled
    /// in), for planning it again with another cluster size.
    #[cfg(feature = "populate")]
    pub(crate) format: FormatOptions,
    pub(crate) medium_bytes: u64,
    pub(crate) block_size: u32,
    /// The tree planned into the volume, if any.
    pub(crate) content: Option<Content>,
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
    pub(crate) fn check_target<D: BlockIo + ?Sized>(&self, dev: &D) -> Result<(), FormatError> {
        check_block_size(dev.block_size(), self.layout.sector_size().get())?;
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

impl MediumOptions {
    /// Where the volume lies on media of any size for these options, the
    /// partition table's share of the medium worked out once: a search for
    /// the smallest medium that holds some data (the CLI's `--size auto`)
    /// plans only the file system at each step, then the medium once.
    ///
    /// # Errors
    ///
    /// As [`MediumOptions::plan`] for what does not depend on the medium's
    /// size (the block size, the alignment, a GPT partition name).
    pub fn placement(&self, block_size: u32) -> Result<Placement, FormatError> {
        check_block_size(block_size, self.sector_size)?;
        let format = resolve(&self.format);
        let kinds: &[TableKind] = match (self.table, self.whole_disk) {
            (TableChoice::Fixed(kind), _) => &[kind][..],
            (_, false) => &[TableKind::None],
            (_, true) => &[TableKind::Mbr, TableKind::Gpt],
        };
        let mut footprints = Vec::new();
        for &kind in kinds {
            let topts = table_options(kind, &format, block_size);
            footprints.push((kind, TableFootprint::of(&topts, block_size)?));
        }
        Ok(Placement {
            opts: MediumOptions {
                format,
                ..self.clone()
            },
            block: block_size,
            footprints,
        })
    }
}

/// Where the volume lies on media of any size ([`MediumOptions::placement`]).
#[derive(Debug, Clone)]
pub struct Placement {
    /// The options, serial and time filled in.
    opts: MediumOptions,
    block: u32,
    /// The footprint of each table kind a size may get ([`choose_table`]
    /// chooses by the size only for a whole disk).
    footprints: Vec<(TableKind, TableFootprint)>,
}

impl Placement {
    /// The volume a medium of `medium_bytes` bytes gets: the partition
    /// [`MediumOptions::plan`] would plan, without planning the table.
    ///
    /// # Errors
    ///
    /// The table's errors for this size ([`FormatError::Partition`]: too
    /// small for a partition, an MBR beyond 2^32 blocks), and the SD
    /// layout's ([`FormatError::Plan`]).
    pub fn volume(&self, medium_bytes: u64) -> Result<Medium, FormatError> {
        let o = &self.opts;
        if o.format.is_sd() {
            let (start, len) = sd_partition(&o.format, medium_bytes)?;
            return Ok(Medium::partition(len, o.sector_size, start)?);
        }
        let (kind, _) = choose_table(o.table, medium_bytes, o.whole_disk);
        let fp = match self.footprints.iter().find(|(k, _)| *k == kind) {
            Some((_, fp)) => *fp,
            // Not among the kinds worked out (no choice gives another).
            None => TableFootprint::of(&table_options(kind, &o.format, self.block), self.block)?,
        };
        let len = fp.partition_len(medium_bytes)?;
        Ok(Medium::partition(len, o.sector_size, fp.partition_start())?)
    }
}

/// The options with what the caller left open filled in: a fresh serial
/// and the current time, so that the table and the file system of one
/// format agree. Pinned options stay pinned.
fn resolve(format: &FormatOptions) -> FormatOptions {
    let mut format = format.clone();
    if format.given_serial().is_none() {
        format = format.serial(random_serial());
    }
    if format.given_timestamp().is_none() {
        format = format.timestamp(Timestamp::now());
    }
    format
}

/// Where a table's identifiers come from: pinned options derive them from
/// the serial (so that `--serial` pins them too); otherwise fresh random
/// values, 128 bits per GUID.
fn table_ids(format: &FormatOptions) -> TableIds {
    match (format.is_pinned(), format.given_serial()) {
        (true, Some(serial)) => TableIds::Seeded(mkfs_alloc_layout::plan::table_seed(serial)),
        _ => TableIds::random(&mut random_u64),
    }
}

/// The table options of `kind` for `format`; the file system is a
/// placeholder until the layout is planned ([`TablePlan::holding`]).
fn table_options(kind: TableKind, format: &FormatOptions, block_size: u32) -> TableOptions {
    let mut topts = TableOptions::new(kind, FsKind::Exfat);
    topts.align = match (kind, format.given_align()) {
        (TableKind::None, _) => u64::from(block_size),
        (TableKind::Gpt, a) => a.unwrap_or(MIN_GPT_ALIGN).max(MIN_GPT_ALIGN),
        (_, Some(a)) => a,
        (_, None) => mkfs_alloc_partition::DEFAULT_ALIGN,
    };
    topts.name = format.label_text().map_or("", |l| l).to_string();
    topts.ids = table_ids(format);
    topts.esp = format.is_esp();
    topts
}

/// Plans a medium: the table once, the file system inside it, the MBR
/// type byte.
pub(crate) fn plan(
    opts: &MediumOptions,
    medium_bytes: u64,
    block_size: u32,
) -> Result<MediumPlan, FormatError> {
    check_block_size(block_size, opts.sector_size)?;
    if opts.format.is_sd() {
        return plan_sd(opts, medium_bytes, block_size);
    }
    let (kind, table_reason) = choose_table(opts.table, medium_bytes, opts.whole_disk);
    let format = resolve(&opts.format);
    let topts = table_options(kind, &format, block_size);
    let table = plan_table(&topts, medium_bytes, block_size)?;
    let medium = Medium::partition(
        table.partition_len(),
        opts.sector_size,
        table.partition_start(),
    )?;
    let layout = mkfs_alloc_layout::plan(&format, &medium)?;
    Ok(MediumPlan {
        table: table.holding(layout.fs()),
        table_reason,
        layout,
        #[cfg(feature = "populate")]
        format,
        medium_bytes,
        block_size,
        content: None,
    })
}

/// Where the SD layout puts the partition of a card of `medium_bytes`:
/// its start and length in bytes.
fn sd_partition(format: &FormatOptions, medium_bytes: u64) -> Result<(u64, u64), FormatError> {
    use mkfs_alloc_layout::sd::{card_layout, SD_SECTOR};
    let (sd, _) = card_layout(format, medium_bytes / SD_SECTOR).map_err(PlanError::from)?;
    let start = sd.part_start * SD_SECTOR;
    Ok((
        start,
        (medium_bytes / SD_SECTOR - sd.part_start) * SD_SECTOR,
    ))
}

/// [`plan`] for the SD Association layout
/// ([`FormatOptions::sd`](mkfs_alloc_layout::FormatOptions::sd)): an MBR
/// whose one partition starts where the card's capacity class says, with
/// the class's type byte and CHS geometry, and the volume planned inside it.
fn plan_sd(
    opts: &MediumOptions,
    medium_bytes: u64,
    block_size: u32,
) -> Result<MediumPlan, FormatError> {
    use mkfs_alloc_layout::sd::{card_layout, SdConflict, SdError, SD_SECTOR};
    let conflict = |option| Err(PlanError::from(SdError::Conflict { option }).into());
    let table_reason = match opts.table {
        TableChoice::Fixed(TableKind::None) => return conflict(SdConflict::TableNone),
        TableChoice::Fixed(TableKind::Gpt) => return conflict(SdConflict::TableGpt),
        _ => "the SD layout: an MBR with one partition, as the SD specification lays out cards",
    };
    if u64::from(block_size) != SD_SECTOR || u64::from(opts.sector_size) != SD_SECTOR {
        return Err(PlanError::from(SdError::SectorSize(block_size.max(opts.sector_size))).into());
    }
    let format = resolve(&opts.format);
    let (sd, _) = card_layout(&format, medium_bytes / SD_SECTOR).map_err(PlanError::from)?;
    let mut topts = TableOptions::new(TableKind::Mbr, FsKind::Exfat);
    topts.ids = table_ids(&format);
    // The alignment the start has (FAT12/16 cards: what the layout gives).
    topts.align = Layout::alignment_of(sd.part_start * SD_SECTOR);
    let placement = MbrPlacement {
        start_lba: sd.part_start,
        partition_type: sd.mbr_type,
        heads: sd.heads,
        sectors_per_track: sd.sectors_per_track,
    };
    let table = plan_mbr_at(&topts, placement, medium_bytes, block_size)?;
    let medium = Medium::partition(
        table.partition_len(),
        opts.sector_size,
        table.partition_start(),
    )?;
    let layout = mkfs_alloc_layout::plan(&format, &medium)?;
    Ok(MediumPlan {
        table,
        table_reason,
        layout,
        #[cfg(feature = "populate")]
        format,
        medium_bytes,
        block_size,
        content: None,
    })
}
