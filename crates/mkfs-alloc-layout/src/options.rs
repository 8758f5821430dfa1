//! What the caller asks for ([`FormatOptions`]) and what it formats ([`Medium`]).

pub use mkfs_alloc_ondisk::FsKind;

/// Which file system to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// Which cluster (allocation unit) size to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Medium {
    /// Length of the volume in bytes (rounded down to whole sectors by the planner).
    pub volume_bytes: u64,
    /// Logical sector size of the file system: 512, 1024, 2048 or 4096.
    pub sector_size: u32,
    /// Byte offset of the volume from the start of the medium (the partition
    /// start; 0 for a whole-medium volume). Alignment is measured from the
    /// start of the medium, so this offset is included.
    pub partition_offset: u64,
}

impl Medium {
    /// A whole-medium volume (no partition table).
    pub fn whole(volume_bytes: u64, sector_size: u32) -> Self {
        Medium {
            volume_bytes,
            sector_size,
            partition_offset: 0,
        }
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

/// A fresh random volume serial, from the workspace's one source of fresh
/// randomness (`mkfs_alloc_ondisk::rng::fresh_seed`). Not for
/// cryptography; enough that two volumes formatted anywhere, at any time,
/// differ.
pub fn random_serial() -> u32 {
    let x = mkfs_alloc_ondisk::rng::fresh_seed();
    (x ^ (x >> 32)) as u32
}

/// Everything that decides the bytes a format writes, besides the medium.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FormatOptions {
    /// File system to create.
    pub fs: FsChoice,
    /// Cluster size.
    pub cluster: ClusterChoice,
    /// Volume label (`None`: no label).
    pub label: Option<String>,
    /// Volume serial number. `None`: a fresh random one ([`random_serial`]),
    /// so that two volumes never share an identity. Every other identifier
    /// (the exFAT volume GUID, the facade's MBR signature and GPT GUIDs) is
    /// derived from the serial, so pinning it and the timestamp
    /// ([`FormatOptions::pinned`]) makes the output byte-identical.
    pub serial: Option<u32>,
    /// Alignment in bytes of the FAT and the cluster heap (exFAT) or of the data
    /// region (FAT32), measured from the start of the medium. `None`: 1 MiB,
    /// less for volumes under 16 MiB.
    pub align: Option<u64>,
    /// Creation time recorded in the file system (FAT label entry). `None`:
    /// the current time ([`Timestamp::now`]).
    pub timestamp: Option<Timestamp>,
    /// Write an exFAT volume GUID directory entry (derived from the serial).
    pub volume_guid: bool,
    /// FAT12/16 root directory entries (`None`: 512). Rounded up to fill
    /// whole sectors; refused for FAT32 and exFAT.
    pub root_entries: Option<u32>,
    /// An EFI System Partition: FAT of the width the size allows (exFAT is
    /// refused: UEFI firmware reads FAT only), a warning below Microsoft's
    /// minimum. The partition table marks it (GPT type ESP, MBR 0xEF).
    pub esp: bool,
    /// The SD Association's layout for a card ([`crate::sd`]): file system,
    /// cluster size, FAT placement, partition start, CHS geometry and the
    /// exFAT Flash Parameters all follow from the card's capacity, which is
    /// the medium's end (`partition_offset + volume_bytes`). The medium must
    /// start the volume where [`crate::sd::sd_layout`] puts the partition.
    /// `fs` may be `Auto`, the class's file system, or FAT32 (or `Fat`) on
    /// an SDXC card; `cluster`, `align`, `root_entries` and `esp` must be
    /// left at their defaults.
    pub sd: bool,
}

impl FormatOptions {
    /// Pins the serial and the timestamp, from which every identifier and
    /// time written derives: two formats with equal options and medium
    /// write identical bytes. Without this, each format gets a fresh serial
    /// (and GUIDs) and the current time.
    pub fn pinned(mut self, serial: u32, timestamp: Timestamp) -> Self {
        self.serial = Some(serial);
        self.timestamp = Some(timestamp);
        self
    }
}
