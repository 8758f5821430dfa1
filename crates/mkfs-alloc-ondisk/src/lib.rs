//! On-disk structures of exFAT, FAT12/16/32, MBR and GPT, their checksums,
//! and the one file-system signature prober of mkfs-alloc.
//!
//! Every structure is a `#[repr(C)]` [`zerocopy`] table of `u8` arrays and
//! little-endian integers (alignment 1, size asserted at compile time), named
//! after its specification's fields and carrying a `Sources:` line. Any byte
//! slice of the right length reads as one (`FromBytes::read_from_prefix`) and
//! any value writes as its bytes (`IntoBytes::as_bytes`).
//!
//! The crate does no I/O: readers and writers pass byte buffers. It is
//! `no_std`; what formatting needs also builds without an allocator
//! (`default-features = false`): the `alloc` feature (a default) adds the
//! signature prober, decoded labels and names and the expanded up-case
//! table, `std` the fresh seed.
//!
//! ```
//! use mkfs_alloc_ondisk::exfat::{set_checksum, GuidEntry, TYPE_GUID};
//! use zerocopy::{FromZeros, IntoBytes};
//!
//! let mut e = GuidEntry::new_zeroed();
//! e.entry_type = TYPE_GUID;
//! e.volume_guid = [1; 16];
//! e.set_checksum = set_checksum(e.as_bytes()).into();
//! assert_eq!(e.as_bytes().len(), 32);
//! ```

#![warn(clippy::missing_errors_doc)]
#![no_std]
#![forbid(unsafe_code)]

#[cfg(any(feature = "alloc", test))]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod exfat;
pub mod fat;
pub mod foreign;
pub mod gpt;
pub mod journal;
pub mod kind;
pub mod mbr;
pub mod name;
#[cfg(feature = "alloc")]
pub mod probe;
pub mod rng;
pub mod sparse;
pub mod testblock;
pub mod time;

pub use kind::{FsKind, TableKind};
#[cfg(feature = "alloc")]
pub use probe::{probe, AnyFs, Probe, PROBE_LEN};
pub use zerocopy;

/// The largest alignment any planner accepts, for a partition start (the
/// partition crate) and for a volume's regions (the layout crate): 64 MiB,
/// the SD specification's largest Boundary Unit (SDXC cards up to 2 TiB).
/// One value, so that no alignment passes one planner and fails the other.
pub const MAX_ALIGN: u64 = 64 << 20;

/// Whether `bytes` is a logical sector size these file systems allow: 512,
/// 1024, 2048 or 4096 (the one rule of the workspace: the planner, the
/// partition planner, the readers and the prober use it).
///
/// Sources: fatgen103 `BPB_BytsPerSec`; exFAT specification §3.1.14
/// (`BytesPerSectorShift` 9..=12).
pub const fn valid_sector_size(bytes: u32) -> bool {
    matches!(bytes, 512 | 1024 | 2048 | 4096)
}

/// `55 AA` at byte 510 of a boot sector or MBR, as bytes.
pub const BOOT_SIGNATURE: [u8; 2] = [0x55, 0xAA];

/// The rotate-right-and-add checksum exFAT uses (boot region, up-case table;
/// the 16-bit form for entry sets), over every byte of `bytes`.
///
/// Sources: exFAT specification §3.4 (Figure 1), §7.2.2 (Figure 3).
pub fn checksum32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |sum, &byte| {
        sum.rotate_right(1).wrapping_add(u32::from(byte))
    })
}
