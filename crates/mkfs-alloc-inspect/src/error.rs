//! Errors of the inspection.

use mkfs_alloc_blockio::IoError;

/// Why a medium, a partition table or a volume could not be inspected.
///
/// Inside [`crate::inspect`], per-volume failures do not abort the whole
/// inspection: they end up as text in [`crate::Volume::error`], next to what
/// could be read before the failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The medium could not be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A structure needs bytes beyond the end of the medium.
    #[error("{what} needs bytes {offset}..{end} but the medium holds only {size} bytes (truncated image?)")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// First byte needed.
        offset: u64,
        /// One past the last byte needed.
        end: u64,
        /// Size of the medium.
        size: u64,
    },
    /// An on-disk structure is invalid.
    #[error("corrupt {structure} at byte {offset}: {detail}")]
    Corrupt {
        /// The structure (e.g. "exFAT boot sector").
        structure: &'static str,
        /// Absolute byte offset of the structure on the medium.
        offset: u64,
        /// What is wrong, with expected and actual values.
        detail: String,
    },
    /// A FAT chain is broken (loop, free or bad cluster, out-of-range value).
    #[error("{what}: {problem}")]
    Chain {
        /// Whose chain (e.g. "root directory").
        what: String,
        /// What is wrong with it.
        problem: ChainProblem,
    },
}

/// What is wrong with a FAT chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainProblem {
    /// The chain comes back to a cluster it already went through.
    #[error("FAT chain loop: it comes back to cluster {cluster}")]
    Loop {
        /// A cluster on the loop.
        cluster: u32,
    },
    /// The chain runs into a free cluster.
    #[error("FAT chain runs into free cluster {cluster}")]
    Free {
        /// The free cluster's predecessor.
        cluster: u32,
    },
    /// The chain runs into a cluster marked bad.
    #[error("FAT chain runs into a bad-cluster mark after cluster {cluster}")]
    Bad {
        /// The cluster whose entry holds the mark.
        cluster: u32,
    },
    /// An entry holds a value that is not a valid cluster number.
    #[error(
        "FAT entry of cluster {cluster} holds {value:#x}, not a cluster number (valid: 2..={max})"
    )]
    OutOfRange {
        /// The cluster whose entry holds the value.
        cluster: u32,
        /// The value.
        value: u32,
        /// Largest valid cluster number.
        max: u32,
    },
    /// The chain is longer than anything valid here.
    #[error("FAT chain longer than {limit} clusters")]
    TooLong {
        /// The limit in clusters.
        limit: u64,
    },
    /// The chain ends before the size needs.
    #[error("FAT chain ends after {clusters} clusters but the size needs {expected}")]
    Short {
        /// Clusters in the chain.
        clusters: u64,
        /// Clusters the size needs.
        expected: u64,
    },
    /// A cluster was already read as part of another directory.
    #[error("cluster {cluster} already belongs to another directory (cross-linked or a directory cycle)")]
    CrossLinked {
        /// The cluster.
        cluster: u32,
    },
}

impl InspectError {
    /// A [`InspectError::Corrupt`] error.
    pub(crate) fn corrupt(structure: &'static str, offset: u64, detail: impl Into<String>) -> Self {
        InspectError::Corrupt {
            structure,
            offset,
            detail: detail.into(),
        }
    }
}

/// Why [`crate::exfat::parse_boot_region`], [`crate::fat::parse_boot_sector`]
/// or [`crate::partition::parse_gpt_header`] rejected a structure: which
/// field, at which byte of the structure, what it must be and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The input is shorter than the structure.
    #[error("{structure} needs {expected} bytes, got {actual}")]
    TooShort {
        /// The structure.
        structure: &'static str,
        /// Bytes needed.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// A field holds a value the structure does not allow.
    #[error("{field} {actual}, expected {expected}")]
    Field {
        /// The field, named as in its specification.
        field: &'static str,
        /// Byte offset of the field in the structure.
        position: usize,
        /// What it must be.
        expected: String,
        /// What it holds.
        actual: String,
    },
    /// A stored checksum does not match the bytes it covers.
    #[error("{what} mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The checksum ("boot checksum", "header CRC32").
        what: &'static str,
        /// Byte offset of the stored checksum in the structure.
        position: usize,
        /// The stored value.
        stored: u32,
        /// The value computed from the bytes.
        computed: u32,
    },
}

impl ParseError {
    /// A [`ParseError::Field`].
    pub(crate) fn field(
        field: &'static str,
        position: usize,
        expected: impl Into<String>,
        actual: impl ToString,
    ) -> Self {
        ParseError::Field {
            field,
            position,
            expected: expected.into(),
            actual: actual.to_string(),
        }
    }
}
