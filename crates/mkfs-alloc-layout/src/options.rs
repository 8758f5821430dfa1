//! What the caller asks for ([`FormatOptions`]) and what it formats ([`Medium`]).

use crate::error::PlanError;
use crate::geometry::{SectorSize, Sectors};
pub use crate::label::LabelText;
pub use mkfs_alloc_ondisk::FsKind;

/// Which file system to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FsChoice {
    /// exFAT above 32 GiB; up to 32 GiB FAT32, or FAT16/FAT12 when the volume
    /// is too small for FAT32 (as [`FsChoice::Fat`]).
    #[default]
    Auto,
    /// The FAT width the volume allows: FAT32 if FAT32 fits at some cluster
    /// size, else FAT16 or FAT12 — with an explicit cluster size, the width
    /// its cluster count gives.
    Fat,
    /// Exactly this file system.
    Fixed(FsKind),
}

impl From<FsKind> for FsChoice {
    /// Exactly this file system ([`FsChoice::Fixed`]).
    fn from(fs: FsKind) -> Self {
        FsChoice::Fixed(fs)
    }
}

/// Which cluster (allocation unit) size to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClusterChoice {
    /// The field-evidence rule of [`crate::rules::auto_cluster`].
    #[default]
    Auto,
    /// Exactly this many bytes per cluster (validated by the planner).
    Bytes(u64),
    /// This many bytes per cluster, chosen by the caller for the files it
    /// means to store (`--data`, `--rootdir`): validated like
    /// [`ClusterChoice::Bytes`], reported as
    /// [`ClusterRule::FromData`](crate::rules::ClusterRule::FromData).
    FromData(u64),
}

impl ClusterChoice {
    /// The size asked for and the rule that reports it; `None` for
    /// [`ClusterChoice::Auto`].
    pub fn explicit(self) -> Option<(u64, crate::rules::ClusterRule)> {
        match self {
            ClusterChoice::Auto => None,
            ClusterChoice::Bytes(c) => Some((c, crate::rules::ClusterRule::Explicit)),
            ClusterChoice::FromData(c) => Some((c, crate::rules::ClusterRule::FromData)),
        }
    }
}

/// The volume to format: where it lies on its medium and its sector size.
///
/// The fields are private: [`Medium::whole`] and [`Medium::partition`]
/// check them (the sector-size rule, a partition offset of whole sectors),
/// so a `Medium` is always one the planner can measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Medium {
    volume_bytes: u64,
    sector_size: SectorSize,
    partition_offset: u64,
}

impl Medium {
    /// A whole-medium volume (no partition table).
    ///
    /// # Errors
    ///
    /// As [`Medium::partition`].
    pub fn whole(volume_bytes: u64, sector_size: u32) -> Result<Self, PlanError> {
        Medium::partition(volume_bytes, sector_size, 0)
    }

    /// A volume of `volume_bytes` (rounded down to whole sectors) at byte
    /// `partition_offset` of its medium, in sectors of `sector_size` bytes.
    ///
    /// # Errors
    ///
    /// [`PlanError::SectorSize`] for a sector size other than 512, 1024,
    /// 2048 or 4096 ([`check_sector_size`](crate::check_sector_size));
    /// [`PlanError::PartitionOffset`] for an offset that is not a whole
    /// number of sectors.
    pub fn partition(
        volume_bytes: u64,
        sector_size: u32,
        partition_offset: u64,
    ) -> Result<Self, PlanError> {
        crate::plan::check_sector_size(sector_size)?;
        let sector = SectorSize::checked(sector_size);
        if partition_offset % sector.bytes() != 0 {
            return Err(PlanError::PartitionOffset {
                offset: partition_offset,
                sector: sector_size,
            });
        }
        let first = sector.sectors_in(partition_offset);
        Ok(Medium::at_sector(volume_bytes, sector, first))
    }

    /// A volume of `volume_bytes` (rounded down to whole sectors) from
    /// sector `first` of its medium, for a sector size already held to the
    /// rule: a whole number of sectors by construction.
    pub(crate) fn at_sector(volume_bytes: u64, sector: SectorSize, first: Sectors) -> Self {
        Medium {
            volume_bytes: sector.bytes_of(sector.sectors_in(volume_bytes)),
            sector_size: sector,
            partition_offset: sector.bytes_of(first),
        }
    }

    /// Length of the volume in bytes, whole sectors.
    pub fn volume_bytes(&self) -> u64 {
        self.volume_bytes
    }

    /// Logical sector size of the file system: 512, 1024, 2048 or 4096.
    pub fn sector_size(&self) -> SectorSize {
        self.sector_size
    }

    /// Byte offset of the volume from the start of the medium (the partition
    /// start; 0 for a whole-medium volume), whole sectors. Alignment is
    /// measured from the start of the medium, so this offset is included.
    pub fn partition_offset(&self) -> u64 {
        self.partition_offset
    }
}

/// A point in time, as seconds and nanoseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub secs: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
}

impl Timestamp {
    /// The serial this time gives: its seconds and nanoseconds mixed, in
    /// the spirit of DOS, which mixed date and time (the CLI's serial when
    /// `--serial` is not given).
    pub fn serial(self) -> u32 {
        crate::plan::serial_from_time(self)
    }
}

#[cfg(feature = "std")]
impl Timestamp {
    /// The system clock now (the epoch if the clock is before it).
    pub fn now() -> Timestamp {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp {
            secs: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: d.subsec_nanos(),
        }
    }
}

/// 64 fresh random bits: the workspace's one source of fresh randomness
/// (`mkfs_alloc_ondisk::rng::fresh_seed`: the standard library's
/// per-process random hash keys, a counter, the clock and the process id,
/// mixed). Unpinned GUIDs take 128 bits each from it. Not for cryptography;
/// enough that two volumes formatted anywhere, at any time, differ.
#[cfg(feature = "std")]
pub fn random_u64() -> u64 {
    mkfs_alloc_ondisk::rng::fresh_seed()
}

/// A fresh random volume serial ([`random_u64`]).
#[cfg(feature = "std")]
pub fn random_serial() -> u32 {
    let x = random_u64();
    (x ^ (x >> 32)) as u32
}

/// Everything that decides the bytes a format writes, besides the medium.
///
/// Build it with [`FormatOptions::new`] and the builder methods; the fields
/// are private, so every value goes through its setter, and read back
/// through an accessor ([`FormatOptions::fs_choice`], ...). Setters never
/// panic: what can be checked alone is checked by its setter
/// ([`FormatOptions::root_entries`], [`FormatOptions::fats`]), the rest,
/// which depends on the medium, by [`plan`](crate::plan()), which returns
/// the value, the limit and the valid range.
///
/// ```
/// use mkfs_alloc_layout::{ClusterChoice, FormatOptions, FsKind};
/// let opts = FormatOptions::new()
///     .fs(FsKind::Exfat)
///     .cluster(ClusterChoice::Bytes(32 << 10))
///     .label("STICK");
/// assert_eq!(opts.label_text().map(|l| &**l), Some("STICK"));
/// assert!(FormatOptions::new().root_entries(0).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FormatOptions {
    /// File system to create.
    pub(crate) fs: FsChoice,
    /// Cluster size.
    pub(crate) cluster: ClusterChoice,
    /// Volume label (`None`: no label), kept without an allocator (see
    /// [`LabelText`]; it reads as a `str`).
    pub(crate) label: Option<LabelText>,
    /// Volume serial number. `None`: a fresh random one ([`random_serial`]),
    /// so that two volumes never share an identity. The other identifiers
    /// (the exFAT volume GUID, the facade's MBR signature and GPT GUIDs)
    /// are fresh random values too, unless [`FormatOptions::pinned`] pins
    /// them: then they derive from the serial and the timestamp, and the
    /// output is byte-identical run after run.
    pub(crate) serial: Option<u32>,
    /// Alignment in bytes of the FAT and the cluster heap (exFAT) or of the data
    /// region (FAT32), measured from the start of the medium. `None`: 1 MiB,
    /// less for volumes under 16 MiB.
    pub(crate) align: Option<u64>,
    /// Creation time recorded in the file system (FAT label entry). `None`:
    /// the current time ([`Timestamp::now`]).
    pub(crate) timestamp: Option<Timestamp>,
    /// Write an exFAT volume GUID directory entry (a fresh random GUID, or
    /// derived from the serial and the timestamp when pinned).
    pub(crate) volume_guid: bool,
    /// The exFAT volume GUID to write, in the entry's byte order (exFAT
    /// specification §7.5): an entry is written with exactly these bytes,
    /// whatever [`volume_guid`](Self::volume_guid) says. Set it with
    /// [`FormatOptions::given_volume_guid`], which refuses the null GUID.
    /// FAT volumes have no such entry.
    pub(crate) volume_guid_bytes: Option<[u8; 16]>,
    /// FAT12/16 root directory entries (`None`: 512). Rounded up to fill
    /// whole sectors; refused for FAT32 and exFAT.
    pub(crate) root_entries: Option<u32>,
    /// Number of FATs on FAT12/16/32 (`None`: 2): 1 or 2 (FatFs's `n_fat`,
    /// mkfs.fat's `-f`). exFAT has one; 2 is refused there.
    pub(crate) fats: Option<u8>,
    /// An EFI System Partition: FAT of the width the size allows (exFAT is
    /// refused: UEFI firmware reads FAT only), a warning below Microsoft's
    /// minimum. The partition table marks it (GPT type ESP, MBR 0xEF).
    pub(crate) esp: bool,
    /// The SD Association's layout ([`FormatOptions::sd`]).
    pub(crate) sd: bool,
    /// FAT labels stored with the case given (`cidata` stays `cidata`), as
    /// dosfstools' mkfs.fat stores them; `false`: upper-cased, as Windows does.
    pub(crate) keep_label_case: bool,
    /// The FAT boot sector's BIOS fields (media descriptor, CHS geometry,
    /// drive number). `None`: a fixed disk's (0xF8, 255 heads, 63 sectors
    /// per track, drive 0x80), or the SD layout's geometry.
    pub(crate) bios: Option<BiosParams>,
    /// Set by [`FormatOptions::pinned`]: every identifier derives from the
    /// serial and the timestamp.
    pinned: bool,
}

/// The BIOS fields of a FAT boot sector: what a floppy disk drive's
/// firmware (and DOS) reads to address the medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BiosParams {
    /// BPB_Media, and the low byte of FAT entry 0 (0xF8 fixed disk, 0xF0 or
    /// 0xF9 and others for floppies).
    pub media: u8,
    /// BPB_SecPerTrk.
    pub sectors_per_track: u8,
    /// BPB_NumHeads.
    pub heads: u8,
    /// BS_DrvNum (0x00 floppy, 0x80 hard disk).
    pub drive: u8,
}

impl BiosParams {
    /// A fixed disk's fields: media 0xF8, 255 heads, 63 sectors per track,
    /// drive 0x80.
    pub const FIXED_DISK: BiosParams = BiosParams {
        media: 0xF8,
        sectors_per_track: 63,
        heads: 255,
        drive: 0x80,
    };
}

impl FormatOptions {
    /// The defaults: the file system and the cluster size chosen
    /// automatically, no label, fresh identifiers, the current time.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pins the serial and the timestamp, from which every identifier and
    /// time written derives (the exFAT volume GUID, the facade's MBR disk
    /// signature and GPT GUIDs): two formats with equal options and medium
    /// write identical bytes. Without this, each format gets fresh random
    /// identifiers (128 random bits per GUID) and, unless given, a fresh
    /// serial and the current time.
    #[must_use]
    pub fn pinned(mut self, serial: u32, timestamp: Timestamp) -> Self {
        self.serial = Some(serial);
        self.timestamp = Some(timestamp);
        self.pinned = true;
        self
    }

    /// True after [`FormatOptions::pinned`].
    pub fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// The file system (an [`FsKind`] means exactly that one).
    #[must_use]
    pub fn fs(mut self, fs: impl Into<FsChoice>) -> Self {
        self.fs = fs.into();
        self
    }

    /// The cluster size.
    #[must_use]
    pub fn cluster(mut self, cluster: ClusterChoice) -> Self {
        self.cluster = cluster;
        self
    }

    /// The volume label (checked against the file system by planning).
    #[must_use]
    pub fn label(mut self, label: impl AsRef<str>) -> Self {
        self.label = Some(LabelText::new(label.as_ref()));
        self
    }

    /// The serial number, without pinning the other identifiers.
    #[must_use]
    pub fn serial(mut self, serial: u32) -> Self {
        self.serial = Some(serial);
        self
    }

    /// A fresh random serial at planning (the default), instead of one
    /// given.
    #[must_use]
    pub fn fresh_serial(mut self) -> Self {
        self.serial = None;
        self
    }

    /// The time recorded in the file system, without pinning the identifiers.
    #[must_use]
    pub fn timestamp(mut self, timestamp: Timestamp) -> Self {
        self.timestamp = Some(timestamp);
        self
    }

    /// The alignment of the FAT and the data region, in bytes from the
    /// start of the medium (checked against the sector size by planning).
    #[must_use]
    pub fn align(mut self, bytes: u64) -> Self {
        self.align = Some(bytes);
        self
    }

    /// The default alignment (1 MiB, less for volumes under 16 MiB),
    /// instead of one given.
    #[must_use]
    pub fn default_align(mut self) -> Self {
        self.align = None;
        self
    }

    /// Write an exFAT volume GUID entry.
    #[must_use]
    pub fn volume_guid(mut self, yes: bool) -> Self {
        self.volume_guid = yes;
        self
    }

    /// Writes an exFAT volume GUID entry holding `bytes` (the entry's byte
    /// order) instead of a random or derived GUID.
    ///
    /// ```
    /// use mkfs_alloc_layout::{plan, FormatOptions, FsKind, Medium};
    /// let g = [0x42; 16];
    /// let opts = FormatOptions::new().fs(FsKind::Exfat).given_volume_guid(g)?;
    /// assert_eq!(plan(&opts, &Medium::whole(64 << 20, 512)?)?.volume_guid(), Some(g));
    /// let fat = FormatOptions::new().fs(FsKind::Fat32).given_volume_guid(g)?;
    /// assert_eq!(plan(&fat, &Medium::whole(64 << 20, 512)?)?.volume_guid(), None);
    /// assert!(FormatOptions::new().given_volume_guid([0; 16]).is_err());
    /// # Ok::<(), mkfs_alloc_layout::PlanError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`PlanError::NullVolumeGuid`] for
    /// sixteen zero bytes, which the exFAT specification (§7.5.5) does not
    /// allow.
    pub fn given_volume_guid(mut self, bytes: [u8; 16]) -> Result<Self, crate::PlanError> {
        if bytes == [0; 16] {
            return Err(crate::PlanError::NullVolumeGuid);
        }
        self.volume_guid_bytes = Some(bytes);
        Ok(self)
    }

    /// The FAT12/16 fixed root directory's entries.
    ///
    /// # Errors
    ///
    /// [`PlanError::RootEntries`] outside
    /// 1..=32,768.
    pub fn root_entries(mut self, entries: u32) -> Result<Self, crate::PlanError> {
        self.root_entries = Some(crate::plan::check_root_entries(entries)?);
        Ok(self)
    }

    /// The number of FATs on FAT12/16/32.
    ///
    /// # Errors
    ///
    /// [`PlanError::FatCount`] outside 1..=2.
    pub fn fats(mut self, fats: u8) -> Result<Self, crate::PlanError> {
        self.fats = Some(crate::plan::check_fats(fats)?);
        Ok(self)
    }

    /// An EFI System Partition.
    #[must_use]
    pub fn esp(mut self, yes: bool) -> Self {
        self.esp = yes;
        self
    }

    /// The SD Association's layout for a card ([`crate::geometry::sd`]): file
    /// system, cluster size, FAT placement, partition start, CHS geometry
    /// and the exFAT Flash Parameters all follow from the card's capacity,
    /// which is the medium's end (`partition_offset + volume_bytes`). The
    /// medium must start the volume where [`crate::geometry::sd::sd_layout`]
    /// puts the partition. The file system may be `Auto`, the class's file
    /// system, or FAT32 (or `Fat`) on an SDXC card; the cluster size, the
    /// alignment, the root entries and the ESP switch must be left at their
    /// defaults.
    #[must_use]
    pub fn sd(mut self, yes: bool) -> Self {
        self.sd = yes;
        self
    }

    /// No volume label (the default).
    #[must_use]
    pub fn no_label(mut self) -> Self {
        self.label = None;
        self
    }

    /// FAT labels stored with the case given (`cidata` stays `cidata`), as
    /// dosfstools' mkfs.fat stores them; `false` (the default): upper-cased,
    /// as Windows does.
    #[must_use]
    pub fn keep_label_case(mut self, yes: bool) -> Self {
        self.keep_label_case = yes;
        self
    }

    /// The FAT boot sector's BIOS fields (media descriptor, CHS geometry,
    /// drive number) instead of a fixed disk's or the SD layout's.
    #[must_use]
    pub fn bios(mut self, bios: BiosParams) -> Self {
        self.bios = Some(bios);
        self
    }
}

/// Reading the options back: what was asked for (`None`: the default).
impl FormatOptions {
    /// The file system asked for.
    pub fn fs_choice(&self) -> FsChoice {
        self.fs
    }

    /// The cluster size asked for.
    pub fn cluster_choice(&self) -> ClusterChoice {
        self.cluster
    }

    /// The volume label (`None`: no label).
    pub fn label_text(&self) -> Option<&LabelText> {
        self.label.as_ref()
    }

    /// The serial given (`None`: a fresh random one at planning).
    pub fn given_serial(&self) -> Option<u32> {
        self.serial
    }

    /// The alignment given, in bytes from the start of the medium (`None`:
    /// 1 MiB, less for volumes under 16 MiB).
    pub fn given_align(&self) -> Option<u64> {
        self.align
    }

    /// The time given (`None`: the current time at planning).
    pub fn given_timestamp(&self) -> Option<Timestamp> {
        self.timestamp
    }

    /// The FAT12/16 root directory entries given (`None`: 512), within the
    /// setter's range.
    pub fn given_root_entries(&self) -> Option<u32> {
        self.root_entries
    }

    /// The number of FATs given (`None`: 2), 1 or 2.
    pub fn given_fats(&self) -> Option<u8> {
        self.fats
    }

    /// The BIOS fields set with [`FormatOptions::bios`], if any.
    pub fn given_bios(&self) -> Option<BiosParams> {
        self.bios
    }

    /// True after [`FormatOptions::esp`]`(true)`.
    pub fn is_esp(&self) -> bool {
        self.esp
    }

    /// True after [`FormatOptions::sd`]`(true)`.
    pub fn is_sd(&self) -> bool {
        self.sd
    }
}
