//! mkfs-alloc as a library: partition and format any [`BlockIo`](blockio::BlockIo) target as
//! exFAT or FAT with an explicit cluster size, with or without content —
//! for imaging tools and test suites. A 1 GiB exFAT image holding a file
//! (the `populate` feature; `Tree::from_dir` takes a folder):
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("mkfs-alloc-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # std::env::set_current_dir(&dir)?;
//! use mkfs_alloc::populate::{TimePolicy, Tree};
//! use mkfs_alloc::{blockio::ImageFile, layout::FsKind, MediumOptions};
//!
//! let mut tree = Tree::new();
//! tree.add_file("/hello.txt", &b"hello\n"[..], 6, std::time::SystemTime::UNIX_EPOCH)?;
//! let mut image = ImageFile::create("stick.img", 1 << 30, 512)?; // 1 GiB, sparse
//! let opts = MediumOptions::new().fs(FsKind::Exfat).cluster_size(32 << 10).label("STICK");
//! let mut plan = opts.plan_for(&image)?.populate(tree, TimePolicy::default())?;
//! plan.format(&mut image)?;
//! # assert_eq!(plan.content().map(|c| c.new_clusters()), Some(1)); // the file
//! # drop(image);
//! # let mut boot = [0u8; 11];
//! # std::io::Read::read_exact(&mut std::fs::File::open("stick.img")?, &mut boot)?;
//! # assert_eq!(&boot[3..], b"EXFAT   ");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A folder into the smallest image that holds it, as `mkfs-alloc
//! --rootdir DIR --size auto --cluster auto OUT.img` makes it (the same size,
//! file system and cluster size: `examples/image_from_dir.rs`, which the
//! tests run beside the CLI). The folder is read once; the cluster size it
//! should get (`MediumPlan::fit_cluster`) and the smallest medium that
//! holds it (`MediumOptions::size_for`) are chosen from its scan, reading
//! nothing:
//!
//! ```no_run
#![doc = include_str!("../examples/image_from_dir.rs")]
//! ```
//!
//! One way in: [`MediumOptions`] (built with methods) plans once
//! ([`MediumOptions::plan`]: the table, the file system inside it, every
//! check) into one [`MediumPlan`], which may first take a tree
//! (`MediumPlan::populate`, the `populate` feature: the tree is planned
//! into that plan's volume, so it is only ever written into the volume it
//! was planned for), and one way to write it: [`MediumPlan::format`], or
//! [`MediumPlan::format_with`] given a probe made already or a progress
//! callback ([`Writing`]).
//!
//! ```text
//!  MediumOptions + medium size ─► plan() ─► MediumPlan { table, layout, tree? } ─► format(&mut impl BlockIo)
//!                                  (validates everything)  └ populate(tree) ┘
//!    format: 1. wipe stale signatures (old tables, old boot sectors wherever found)
//!            2. write the file system inside the partition (the tree too; boot sector last)
//!            3. write the partition table, flush
//! ```
//!
//! Every check happens in planning (also the target's block size against
//! the sector size) and again before the first write, so rejected input
//! leaves the target byte-identical. A plan's fields are private, and the
//! wipe covers what [`Found::probe`] found on that same target (a [`Found`]
//! comes only from probing).
//!
//! Identifiers: unless the caller pins them, each format gets a fresh random
//! serial, fresh random GUIDs (the exFAT volume GUID, the GPT disk and
//! partition GUIDs: 128 random bits each) and MBR disk signature, and the
//! current time. [`MediumOptions::pinned`] (serial and timestamp) derives
//! them all from the serial and makes two formats byte-identical:
//!
//! ```
//! use mkfs_alloc::blockio::MemDisk;
//! use mkfs_alloc::layout::{FsKind, Timestamp};
//! use mkfs_alloc::partition::TableKind;
//! use mkfs_alloc::MediumOptions;
//!
//! let mut disk = MemDisk::new(512, 256 * 2048)?; // 256 MiB
//! let opts = MediumOptions::new()
//!     .fs(FsKind::Exfat)
//!     .cluster_size(32 * 1024)
//!     .table(TableKind::Mbr)
//!     .pinned(0x1234_ABCD, Timestamp { secs: 1_700_000_000, nanos: 0 });
//! let mut plan = opts.plan_for(&disk)?;
//! plan.format(&mut disk)?;
//! assert_eq!(plan.table().partition_start(), 1 << 20);
//! assert_eq!(&disk.as_bytes()[(1 << 20) + 3..(1 << 20) + 11], b"EXFAT   ");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: `populate` (off by default) brings the `populate` module and
//! `MediumPlan::populate` (the `mkfs-alloc-populate` crate, without the
//! parallel scan's rayon); `testing` re-exports the block-I/O test doubles
//! (`FaultyIo`, `Counting`) for embedders' own crash tests; `serde`
//! serializes the plans and brings the `report` module (a plan's figures for
//! a machine reader). The `inspect` module (reading existing volumes: the
//! report `info` prints and the whole-volume model) and the in-place jobs
//! (`recluster`) need no feature.

#![warn(clippy::missing_errors_doc)]

pub mod batch;
pub mod compat;
mod counts;
#[cfg(feature = "device")]
pub mod device;
mod error;
pub mod existing;
mod extents;
#[cfg(feature = "populate")]
mod fit;
pub mod inspect;
mod options;
mod plan;
#[cfg(feature = "populate")]
mod populated;
pub mod recluster;
#[cfg(feature = "serde")]
pub mod report;
pub mod units;
pub mod verify;
mod write;

pub use counts::{AlignBlame, CountedError, Counts};
pub use error::FormatError;
pub use extents::ExtentMap;
#[cfg(feature = "populate")]
pub use fit::DEFAULT_SLACK_PERCENT;
pub use options::MediumOptions;
pub use plan::{MediumPlan, Placement};
pub use write::{wipe_backup_gpt_beyond, Found, Writing};

/// Block targets: the trait and the portable backends (raw devices are in
/// the `mkfs-alloc-device` crate).
pub mod blockio {
    /// Zeroing a whole target (a full format).
    pub use mkfs_alloc_blockio::zero_all;
    /// Test doubles: fault injection and write-order logs (the `testing`
    /// feature).
    #[cfg(feature = "testing")]
    pub use mkfs_alloc_blockio::{
        injected_fault, Counting, Fault, FaultyIo, InjectedFault, IoStats, LogEntry,
    };
    pub use mkfs_alloc_blockio::{
        BlockIo, CloneRefusal, CopyCounts, CopyMode, FileCopier, ImageFile, IoError, IoOp, MemDisk,
        Slice, WriteWatch,
    };
}

/// File-system options, the validated [`Layout`](mkfs_alloc_layout::Layout)
/// and the writer's report.
pub mod layout {
    /// The valid cluster sizes of a plan error, and their text.
    pub use mkfs_alloc_layout::error;
    pub use mkfs_alloc_layout::label::{EncodedLabel, LabelText};
    pub use mkfs_alloc_layout::plan::Geometry;
    /// The cluster size `--cluster auto` ([`ClusterChoice::Auto`]) gives a
    /// volume of this file system and size in bytes.
    pub use mkfs_alloc_layout::rules::auto_cluster;
    pub use mkfs_alloc_layout::rules::{ClusterRule, FsRule};
    /// The SD Association's layout of a card of this many 512-byte sectors
    /// ([`SD_SECTOR`]), FAT32 forced or not: what [`Layout::sd`] holds for
    /// a card formatted with [`FormatOptions::sd`].
    pub use mkfs_alloc_layout::sd::sd_layout;
    /// The SD layout's sector: every figure of [`SdLayout`] counts these.
    pub use mkfs_alloc_layout::sd::SD_SECTOR;
    pub use mkfs_alloc_layout::sd::{SdConflict, SdError, SdLayout};
    /// Sizes in bytes as messages print them (parsing is [`crate::units`]).
    pub use mkfs_alloc_layout::units;
    /// Waste (the clusters files take beyond their bytes) in percent of
    /// the files' bytes, and its definition in words: the one definition
    /// that the advice, `--data` and `info --files` report.
    pub use mkfs_alloc_layout::waste::{waste_percent, WASTE_DEFINITION};
    pub use mkfs_alloc_layout::{
        check_sector_size, random_serial, BiosParams, ClusterChoice, FormatOptions, FsChoice,
        FsKind, Layout, Medium, PlanError, Region, RegionKind, Timestamp, WriteError, WriteReport,
    };
    /// The units a [`Layout`] and a [`Medium`] return (also in [`units`]).
    pub use mkfs_alloc_layout::{ClusterSize, Clusters, SectorSize, Sectors};
    /// The FAT12/16 fixed root directory's limit (the cluster counts that
    /// decide the FAT width are [`FsKind::min_clusters`] and
    /// [`FsKind::max_clusters`]).
    pub mod fat {
        pub use mkfs_alloc_layout::fat::MAX_ROOT_ENTRIES;
    }
    /// The civil date of a day count since 1970-01-01 (the on-disk time
    /// stamps' arithmetic).
    pub use mkfs_alloc_ondisk::time::civil_from_days;
}

/// Partition-table options and plans.
pub mod partition {
    pub use mkfs_alloc_partition::{
        probe_signatures, FsKind, GptPlan, Guid, MbrPlan, PartitionError, PartitionGrow, Signature,
        SignatureKind, TableChoice, TableKind, TablePlan, TableSpec,
    };
}

/// Files and directories written into the new volume as part of the format
/// (the `populate` feature): build a [`Tree`](populate::Tree), then
/// [`MediumPlan::populate`].
#[cfg(feature = "populate")]
pub mod populate {
    pub use mkfs_alloc_advise::{AdviseError, Recommendation, ScanResult};
    pub use mkfs_alloc_populate::{
        scan_result, HostId, NameProblem, PopulateError, Populated, Problem, SkipKind, Skipped,
        TimePolicy, Tree, TreeError, Unreadable,
    };
}
