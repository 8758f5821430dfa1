//! Partition tables (MBR, GPT) for mkfs-alloc, behind a small API of our own.
//!
//! One partition spanning the medium, or no table at all:
//!
//! ```text
//!  MBR   LBA 0            align (1 MiB)                              end
//!        ┌────┬───────────┬──────────────────────────────────────────┐
//!        │MBR │  (zero)   │ partition: type 0x0C FAT32 / 0x07 exFAT  │
//!        └────┴───────────┴──────────────────────────────────────────┘
//!
//!  GPT   LBA 0  1   2..    first usable   align          last usable      end-1
//!        ┌────┬───┬───────┬──────┬────────────────────────────┬───────┬───┐
//!        │PMBR│hdr│entries│(zero)│ partition: Basic Data GUID │entries│hdr│
//!        └────┴───┴───────┴──────┴────────────────────────────┴───────┴───┘
//!             128 entries x 128 bytes = 32 LBAs of 512 or 4 LBAs of 4096
//!
//!  None  the file system starts at byte 0 ("superfloppy").
//! ```
//!
//! The flow is plan, then write: [`choose_table`] picks the kind,
//! [`plan_table`] computes a [`TablePlan`] (pure arithmetic, serializable),
//! [`wipe_for_table`] zeroes stale signatures, [`write_table`] writes the table.
//! [`probe_signatures`] lists what is on a medium, like `wipefs -n`.
//!
//! Identifiers (MBR disk signature, GPT disk and partition GUIDs) come from
//! [`TableOptions::ids`]: a seed through SplitMix64 (reproducible output),
//! or values the caller gives, such as fresh random ones.
//!
//! Architecture invariant: the MBR is written through the `Mbr` struct of
//! `mkfs-alloc-ondisk` (`Mbr::one_partition`, the same bytes the firmware
//! path of the layout crate writes; [`probe_signatures`] and
//! `mkfs-alloc-inspect` read tables through those structs too); the `gpt`
//! crate (GPT) is a private detail, no type of it is part of this API. How
//! it is used, and why:
//!
//! - `gpt` writes through a private `Read + Write + Seek` adapter over
//!   [`BlockIo`](mkfs_alloc_blockio::BlockIo) that reads, modifies and writes
//!   back partial blocks (the crate writes single 128-byte entries). It knows
//!   512- and 4096-byte logical blocks only. Its `add_partition` draws random
//!   GUIDs, so the entry is built from the plan and set with
//!   `update_partitions`. Its protective MBR is serialized to 512 bytes and
//!   written by us as a whole LBA 0 (its own writer leaves bytes 512.. of a
//!   4096-byte LBA 0 untouched).
//! - The MBR's LBA 0 is built in memory from the plan (CHS addresses as
//!   fdisk writes them, `mbr::chs_address`; the 2^32-sector limit checked
//!   here) and written whole.
//!
//! ```
//! use mkfs_alloc_blockio::MemDisk;
//! use mkfs_alloc_partition::{
//!     plan_table, probe_signatures, write_table, FsKind, SignatureKind, TableKind, TableOptions,
//! };
//!
//! // One exFAT partition at 1 MiB of a 64 MiB disk, in an MBR.
//! let opts = TableOptions::new(TableKind::Mbr, FsKind::Exfat);
//! let plan = plan_table(&opts, 64 << 20, 512)?;
//! assert_eq!(plan.partition_start(), 1 << 20);
//! let mut disk = MemDisk::new(512, (64 << 20) / 512)?;
//! write_table(&plan, &mut disk)?;
//! let found = probe_signatures(&mut disk)?;
//! assert!(found.iter().any(|s| s.kind == SignatureKind::Mbr));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(clippy::missing_errors_doc)]
#![forbid(unsafe_code)]

mod error;
mod grow;
mod guid;
mod plan;
mod probe;
mod stream;
mod wipe;
mod write;

pub use error::PartitionError;
pub use grow::PartitionGrow;
pub use guid::Guid;
pub use plan::{
    choose_table, mbr_partition_type, plan_mbr_at, plan_table, FsKind, GptPlan, MbrPlacement,
    MbrPlan, TableChoice, TableFootprint, TableIds, TableKind, TableOptions, TablePlan, TableSpec,
    AUTO_GPT_THRESHOLD, CHS_LIMIT_SECTORS, DEFAULT_ALIGN, GPT_ENTRIES, GPT_ENTRY_SIZE,
    GPT_NAME_MAX, MAX_ALIGN, MBR_TYPE_ESP, MBR_TYPE_EXFAT, MBR_TYPE_FAT32_LBA, MIN_GPT_ALIGN,
    MIN_PARTITION_BYTES,
};
pub use probe::{probe_signatures, Signature, SignatureKind};
pub use wipe::{
    volume_start_wiped, wipe_backup_gpt_beyond, wipe_for_table, wipe_ranges, SIGNATURE_WIPE,
    WIPE_VOLUME_START,
};
pub use write::write_table;
