//! Which allocation unit should I pick for *my* files?
//!
//! ```text
//!  PATH... ──► scan() ──► ScanResult ─┐   (file sizes, per-directory name facts)
//!                                     ├─► advise() ──► Advice
//!  volume size, sector size ──────────┘   │  per file system, per valid cluster size:
//!                                         │  cluster count, overhead (from the planner),
//!                                         │  data on disk, waste, fits, notes;
//!                                         └  a recommendation and its reason
//! ```
//!
//! Architecture invariants:
//! - every volume number (cluster count, overhead, usable bytes) comes from
//!   [`mkfs_alloc_layout::plan()`]; this crate never re-derives a layout formula;
//! - the footprint model ([`model`]) is pure and documents its assumptions;
//!   `tests/reality.rs` checks it against exfat-fuse and mtools;
//! - the scan reads metadata only (never file contents), never fails on an
//!   unreadable entry below its arguments, and keeps about 8 bytes per file.
//!
//! ```
//! use mkfs_alloc_advise::{advise, FsSelection, ScanResult};
//!
//! // 1,000 files of 10,000 bytes each, in the root.
//! let mut data = ScanResult::default();
//! data.file_sizes = vec![10_000; 1000];
//! data.apparent_bytes = 10_000_000;
//! let advice = advise(8 << 30, 512, FsSelection::Exfat, Some(&data), 1.0)?;
//! let exfat = &advice.per_fs[0];
//! let row = exfat.rows.iter().find(|r| r.cluster_size == 4096).expect("valid");
//! assert_eq!(row.file_bytes_on_disk, Some(1000 * 12_288));
//! // No size keeps the waste of 10,000-byte files within 1%: 4 KiB wastes least.
//! assert_eq!(exfat.recommendation.as_ref().map(|r| r.cluster_size), Some(4096));
//! # Ok::<(), mkfs_alloc_advise::AdviseError>(())
//! ```

#![warn(clippy::missing_errors_doc)]
#![forbid(unsafe_code)]

pub mod advise;
pub mod defaults;
pub mod model;
pub mod names;
mod recommend;
mod rows;
pub mod scan;
pub mod testtree;
pub mod text;

pub use advise::{
    advise, advise_with, compat_max_cluster, recommend_for_data, recommend_for_format, Advice,
    AdviseError, FsAdvice, FsNote, FsSelection, Overhead, Policy, Recommendation,
    RecommendationRule, Row, RowNote, DEFAULT_MAX_WASTE_PERCENT,
};
pub use model::{footprint, footprint_for, Footprint, RootDir};
#[cfg(feature = "scan")]
pub use scan::{scan, ScanError, ScanOptions, ScanProgress};
pub use scan::{DataSummary, DirRecord, ScanResult, SizeBucket, Unreadable};
