//! exFAT: boot region (boot sector, OEM parameters, checksum), directory
//! entries, entry-set checksum, name hash and the up-case table.
//!
//! Sources: Microsoft, exFAT File System Specification (2019); the project
//! reference notes, `on-disk-format.md` part A.

mod boot;
mod dir;
pub mod upcase;

pub use boot::*;
pub use dir::*;
pub use upcase::UpcaseTable;
