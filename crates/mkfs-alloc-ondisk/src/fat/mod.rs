//! FAT12, FAT16 and FAT32: the BIOS Parameter Block with its extended forms,
//! FSInfo, short and long-name directory entries and the 8.3 name checksum.
//!
//! Sources: Microsoft, "Microsoft Extensible Firmware Initiative FAT32 File
//! System Specification, FAT: General Overview of On-Disk Format" v1.03,
//! 6 December 2000 (fatgen103); for the SD layout's use of FAT12/16/32, the
//! SD Association's Physical Layer Simplified Specification Part 2, File
//! System Specification (<https://www.sdcard.org/downloads/pls/>).

mod boot;
mod dir;
pub mod table;

pub use boot::*;
pub use dir::*;
