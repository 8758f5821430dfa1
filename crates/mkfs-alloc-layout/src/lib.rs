//! On-disk layout of exFAT and FAT32 volumes: the structures, a pure planner
//! and a streaming writer.
//!
//! ```text
//!  FormatOptions ─┐
//!                 ├─► plan() ──► Layout ──► write_volume(layout, &mut impl BlockIo)
//!  Medium ────────┘   (all validation)      (no validation; streams in 1 MiB chunks)
//! ```
//!
//! The modules follow the data: [`geometry`] (where each region lies, pure
//! arithmetic), [`plan`](mod@plan) (options and medium in, a validated [`Layout`]
//! out), [`writer`] (the metadata's bytes and the one write sequence, driven
//! through `BlockIo` or, in firmware, [`embedded`]).
//!
//! Architecture invariants:
//! - no I/O and no OS calls here: bytes go out only through
//!   [`mkfs_alloc_blockio::BlockIo`];
//! - every rejection happens in [`plan()`], before the first write;
//! - memory is bounded by [`writer::CHUNK`] whatever the volume size;
//! - on-disk structures are `zerocopy` structs whose fields are the spec
//!   tables, with their sizes asserted at compile time.
//!
//! ```
//! use mkfs_alloc_layout::{plan, write_volume, FormatOptions, FsKind, ClusterChoice, Medium};
//! use mkfs_alloc_blockio::MemDisk;
//!
//! let opts = FormatOptions::new()
//!     .fs(FsKind::Exfat)
//!     .cluster(ClusterChoice::Bytes(32 * 1024))
//!     .label("STICK");
//! let mut disk = MemDisk::new(512, 64 * 2048)?; // 64 MiB
//! let layout = plan(&opts, &Medium::whole(64 << 20, 512)?)?;
//! write_volume(&layout, &mut disk, &mut |_, _| {})?;
//! assert_eq!(&disk.as_bytes()[3..11], b"EXFAT   ");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![no_std]
#![warn(clippy::missing_errors_doc)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

pub mod error;
pub mod geometry;
pub mod label;
pub mod options;
pub mod plan;
pub mod rules;
pub mod units;
pub mod waste;
pub mod writer;

pub use geometry::{exfat, fat, sd};
pub use geometry::{ClusterIndex, ClusterSize, Clusters, SectorSize, Sectors};
pub use writer::embedded;

pub use error::PlanError;
#[cfg(feature = "std")]
pub use options::{random_serial, random_u64};
pub use options::{BiosParams, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium, Timestamp};
pub use plan::{check_sector_size, plan, valid_cluster_sizes, Layout, Region, RegionKind};
#[cfg(feature = "std")]
pub use writer::{
    check_block_size, write_volume, write_volume_to, write_volume_with, Content, ContentSink,
    Prior, WriteError, WriteReport,
};
