//! FAT12, FAT16 and FAT32: the BIOS Parameter Block with its extended forms,
//! FSInfo, short and long-name directory entries and the 8.3 name checksum.
//!
//! Sources: Microsoft, "FAT: General Overview of On-Disk Format" v1.03
//! (fatgen103); the project reference notes, `on-disk-format.md` part B and
//! `sd-and-small-fat.md`.

mod boot;
mod dir;

pub use boot::*;
pub use dir::*;
