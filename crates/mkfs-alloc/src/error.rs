//! [`FormatError`]: everything planning and formatting a medium can report.

use mkfs_alloc_blockio::IoError;
use mkfs_alloc_layout::{PlanError, WriteError};
use mkfs_alloc_partition::PartitionError;

/// What went wrong. `Plan` and `Partition` errors (except I/O) come before
/// anything is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file-system options are invalid for this medium.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The partition table options are invalid, or writing it failed.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// Writing the file system failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Another I/O failure.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The tree cannot be written into the planned volume (names the file
    /// system cannot store, a tree that does not fit). Nothing is written.
    #[cfg(feature = "populate")]
    #[error(transparent)]
    Populate(#[from] mkfs_alloc_populate::PopulateError),
    /// No medium size holds the tree ([`MediumOptions::size_for`](crate::MediumOptions::size_for)).
    #[cfg(feature = "populate")]
    #[error("no medium size holds this tree")]
    NoSizeHolds,
    /// The target written to is not the one planned for or probed.
    #[error("the target ({bytes} bytes in {block}-byte blocks) is not the one planned for or probed ({planned_bytes} bytes in {planned_block}-byte blocks)")]
    NotPlannedTarget {
        /// Bytes of the medium planned for.
        planned_bytes: u64,
        /// Block size planned for.
        planned_block: u32,
        /// Bytes of the target.
        bytes: u64,
        /// Block size of the target.
        block: u32,
    },
}

impl FormatError {
    /// True when the error is about the input (nothing was written).
    pub fn is_invalid_input(&self) -> bool {
        match self {
            FormatError::Plan(_) => true,
            FormatError::Partition(PartitionError::Io(_)) => false,
            FormatError::Partition(_) => true,
            FormatError::Write(WriteError::Io(_) | WriteError::Content(_)) | FormatError::Io(_) => {
                false
            }
            #[cfg(feature = "populate")]
            FormatError::Populate(_) | FormatError::NoSizeHolds => true,
            FormatError::Write(_) | FormatError::NotPlannedTarget { .. } => true,
        }
    }
}
