//! exFAT: boot region (boot sector, OEM parameters, checksum), directory
//! entries, entry-set checksum, name hash and the up-case table.
//!
//! Sources: Microsoft, exFAT File System Specification (2019),
//! <https://learn.microsoft.com/en-us/windows/win32/fileio/exfat-specification>.

mod boot;
mod dir;
pub mod upcase;

pub use boot::*;
pub use dir::*;
#[cfg(feature = "alloc")]
pub use upcase::UpcaseTable;
