//! Geometry arithmetic: where each region of a volume lies, for a file
//! system, a volume size, a sector size, a cluster size and an alignment.
//! Pure functions of numbers; the planner (`plan`) chooses the inputs and
//! validates the whole, the writer (`writer`) turns the result into bytes.
//!
//! - `count`: the units of a volume (`Sectors`, `SectorSize`, `Clusters`,
//!   `ClusterSize`), at the public API and in the arithmetic;
//! - `exfat`: FAT, cluster heap and system clusters (exfatprogs' formulas);
//! - `fat`: reserved sectors, FATs, fixed root directory and data region of
//!   FAT12/16/32, the FAT size, the cluster counts we accept per width;
//! - `sd`: the SD Association's layout of a card (partition start, file
//!   system and cluster size by capacity class).

pub mod count;
pub mod exfat;
pub mod fat;
pub mod sd;

pub use count::{ClusterIndex, ClusterSize, Clusters, SectorSize, Sectors};
pub use exfat::ExfatGeometry;
pub use fat::FatGeometry;

/// File-system-specific geometry of a [`Layout`](crate::Layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Geometry {
    /// exFAT geometry.
    Exfat(ExfatGeometry),
    /// FAT12, FAT16 or FAT32 geometry.
    Fat(FatGeometry),
}
