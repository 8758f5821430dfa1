//! Write a folder into a new exFAT or FAT volume as part of the format,
//! without mounting: `mkfs-alloc --rootdir DIR`.
//!
//! ```text
//!  Tree::from_dir / add_dir(src, dest) / add_file(path, reader, len, mtime)
//!     │  (walk: regular files and directories; the rest skipped and listed)
//!     ▼
//!  plan_tree(tree, &layout, time) ──► Populated      every name checked (all offenders listed),
//!     │                                              the footprint (advise's model) checked
//!     │                                              against the free space, every cluster allocated
//!     ▼
//!  populated.write_to(&mut dev, prior, progress)   the volume it was planned for, and the tree:
//!        FAT, bitmap, up-case table, then directories and file data in
//!        cluster order, then the boot sectors (sector 0 last)
//! ```
//!
//! Determinism: entries are sorted by name, clusters allocated in that
//! order, each file contiguous; timestamps are the source mtimes in UTC,
//! clamped to `SOURCE_DATE_EPOCH` ([`TimePolicy`]) and to the range FAT and
//! exFAT store. The same content gives the same bytes whatever the order in
//! which it was created or listed, and whatever the host's time zone.
//!
//! ```
//! use mkfs_alloc_blockio::MemDisk;
//! use mkfs_alloc_layout::{plan, Prior, ClusterChoice, FormatOptions, FsKind, Medium};
//! use mkfs_alloc_populate::{plan_tree, TimePolicy, Tree};
//! use std::time::{Duration, SystemTime};
//!
//! let mut tree = Tree::new();
//! let hello = b"hello, world\n";
//! let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! tree.add_file("/docs/hello.txt", &hello[..], hello.len() as u64, mtime)?;
//! let opts = FormatOptions::new()
//!     .fs(FsKind::Exfat)
//!     .cluster(ClusterChoice::Bytes(4096))
//!     .serial(0x1234_5678);
//! let layout = plan(&opts, &Medium::whole(16 << 20, 512)?)?;
//! let mut populated = plan_tree(tree, &layout, TimePolicy::default())?;
//! assert_eq!(populated.new_clusters(), 2); // the directory and the file
//! let mut disk = MemDisk::new(512, (16 << 20) / 512)?;
//! populated.write_to(&mut disk, Prior::Unknown, &mut |_, _| {})?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

//!
//! A tree is written only into the volume it was planned for: a
//! [`Populated`] owns that layout ([`Populated::write_to`]) and is not a
//! `Content` the writer would take with another one:
//!
//! ```compile_fail
//! use mkfs_alloc_blockio::MemDisk;
//! use mkfs_alloc_layout::{plan, write_volume_with, FormatOptions, Medium, Prior};
//! use mkfs_alloc_populate::{plan_tree, TimePolicy, Tree};
//!
//! let layout = plan(&FormatOptions::new(), &Medium::whole(16 << 20, 512)?)?;
//! let other = plan(&FormatOptions::new(), &Medium::whole(32 << 20, 512)?)?;
//! let mut populated = plan_tree(Tree::new(), &layout, TimePolicy::default())?;
//! let mut disk = MemDisk::new(512, (32 << 20) / 512)?;
//! write_volume_with(&other, Some(&mut populated), &mut disk, Prior::Unknown, &mut |_, _| {})?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(clippy::missing_errors_doc)]
#![forbid(unsafe_code)]

pub mod batch;
mod direct;
pub mod feed;
pub mod names;
pub mod plan;
mod source;
pub mod time;
pub mod tree;
pub mod write;

pub use plan::{
    check, plan_tree, scan_result, tree_footprint, NameProblem, PopulateError, Populated, Problem,
};
pub use time::TimePolicy;
pub use tree::{HostId, SkipKind, Skipped, Tree, TreeError, Unreadable};
pub use write::SourceError;
