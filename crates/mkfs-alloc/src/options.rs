//! [`MediumOptions`]: what to do with a whole medium, built with methods.

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::{check_sector_size, ClusterChoice, FormatOptions, FsChoice, Timestamp};
use mkfs_alloc_partition::TableChoice;

use crate::{FormatError, MediumPlan};

/// What to do with a whole medium: the file system's options, the
/// partition table and the sector size.
///
/// Build it with [`MediumOptions::new`] and the builder methods; the fields
/// are private (read them back with [`MediumOptions::format_options`], ...).
/// Setters never panic: the sector size and the root directory size are
/// checked by their setters, everything that
/// depends on the medium by planning ([`MediumOptions::plan`]), which
/// returns the value, the limit and the valid range.
///
/// ```
/// use mkfs_alloc::{layout::FsKind, partition::TableKind, MediumOptions};
/// let opts = MediumOptions::new()
///     .fs(FsKind::Exfat)
///     .cluster_size(32 << 10)
///     .label("STICK")
///     .table(TableKind::Mbr);
/// let plan = opts.plan(8 << 30, 512)?;
/// assert_eq!(plan.layout().cluster_size().bytes(), 32 << 10);
/// assert!(MediumOptions::new().sector_size(1000).is_err());
/// # Ok::<(), mkfs_alloc::FormatError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MediumOptions {
    /// The file system options (the alignment applies to the partition too).
    pub(crate) format: FormatOptions,
    /// Partition table: `auto` gives none unless `whole_disk`.
    pub(crate) table: TableChoice,
    /// The target is a whole disk (not an image file or an existing partition).
    pub(crate) whole_disk: bool,
    /// The file system's logical sector size; at least the medium's block size.
    pub(crate) sector_size: u32,
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

impl MediumOptions {
    /// The defaults: no table on an image (MBR or GPT on a whole disk),
    /// 512-byte sectors, the file system and the cluster size chosen
    /// automatically, fresh identifiers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The file-system options.
    pub fn format_options(&self) -> &FormatOptions {
        &self.format
    }

    /// The partition table asked for.
    pub fn table_choice(&self) -> TableChoice {
        self.table
    }

    /// True after [`MediumOptions::whole_disk`]`(true)`.
    pub fn is_whole_disk(&self) -> bool {
        self.whole_disk
    }

    /// The file system's logical sector size in bytes (512 unless set).
    pub fn sector_bytes(&self) -> u32 {
        self.sector_size
    }

    /// These file-system options.
    #[must_use]
    pub fn format(mut self, format: FormatOptions) -> Self {
        self.format = format;
        self
    }

    /// The file system (an `FsKind` means exactly that one).
    #[must_use]
    pub fn fs(mut self, fs: impl Into<FsChoice>) -> Self {
        self.format = self.format.fs(fs);
        self
    }

    /// The cluster size.
    #[must_use]
    pub fn cluster(mut self, cluster: ClusterChoice) -> Self {
        self.format = self.format.cluster(cluster);
        self
    }

    /// Exactly this many bytes per cluster (checked by planning).
    #[must_use]
    pub fn cluster_size(self, bytes: u64) -> Self {
        self.cluster(ClusterChoice::Bytes(bytes))
    }

    /// The volume label (also the GPT partition's name).
    #[must_use]
    pub fn label(mut self, label: impl AsRef<str>) -> Self {
        self.format = self.format.label(label);
        self
    }

    /// Pins the serial and the time, from which every identifier written
    /// derives: equal options on equal media give identical bytes
    /// ([`FormatOptions::pinned`]).
    #[must_use]
    pub fn pinned(mut self, serial: u32, timestamp: Timestamp) -> Self {
        self.format = self.format.pinned(serial, timestamp);
        self
    }

    /// The partition start and the FAT and data region alignment, in bytes.
    #[must_use]
    pub fn align(mut self, bytes: u64) -> Self {
        self.format = self.format.align(bytes);
        self
    }

    /// The partition table (a `TableKind` means exactly that one).
    #[must_use]
    pub fn table(mut self, table: impl Into<TableChoice>) -> Self {
        self.table = table.into();
        self
    }

    /// The target is a whole disk (`auto` then writes a table).
    #[must_use]
    pub fn whole_disk(mut self, yes: bool) -> Self {
        self.whole_disk = yes;
        self
    }

    /// An EFI System Partition ([`FormatOptions::esp`]).
    #[must_use]
    pub fn esp(mut self, yes: bool) -> Self {
        self.format = self.format.esp(yes);
        self
    }

    /// The SD Association's layout for a card ([`FormatOptions::sd`]).
    #[must_use]
    pub fn sd(mut self, yes: bool) -> Self {
        self.format = self.format.sd(yes);
        self
    }

    /// The file system's logical sector size.
    ///
    /// # Errors
    ///
    /// [`PlanError::SectorSize`](mkfs_alloc_layout::PlanError::SectorSize)
    /// for a size other than 512, 1024, 2048 or 4096.
    pub fn sector_size(mut self, bytes: u32) -> Result<Self, FormatError> {
        check_sector_size(bytes)?;
        self.sector_size = bytes;
        Ok(self)
    }

    /// The FAT12/16 fixed root directory's entries.
    ///
    /// # Errors
    ///
    /// [`PlanError::RootEntries`](mkfs_alloc_layout::PlanError::RootEntries)
    /// outside 1..=32,768.
    pub fn root_entries(mut self, entries: u32) -> Result<Self, FormatError> {
        self.format = self.format.root_entries(entries)?;
        Ok(self)
    }

    /// Plans the table and the file system for a medium of `medium_bytes`
    /// bytes in `block_size`-byte blocks: every check, no write.
    ///
    /// # Errors
    ///
    /// [`FormatError::Plan`] or [`FormatError::Partition`] naming the value,
    /// the limit and the valid range; [`FormatError::Write`] when the block
    /// size does not divide the sector size.
    pub fn plan(&self, medium_bytes: u64, block_size: u32) -> Result<MediumPlan, FormatError> {
        crate::plan::plan(self, medium_bytes, block_size)
    }

    /// [`MediumOptions::plan`] for `dev`'s size and block size.
    ///
    /// # Errors
    ///
    /// As [`MediumOptions::plan`].
    pub fn plan_for<D: BlockIo + ?Sized>(&self, dev: &D) -> Result<MediumPlan, FormatError> {
        let bytes = dev.num_blocks().saturating_mul(u64::from(dev.block_size()));
        self.plan(bytes, dev.block_size())
    }
}
