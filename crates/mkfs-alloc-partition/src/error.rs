//! [`PartitionError`]: everything planning, writing, probing or wiping can report.

use mkfs_alloc_blockio::IoError;

use crate::TableKind;

/// An error of this crate. Messages name the value that was rejected and the
/// range that would have been accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionError {
    /// The partition alignment is not a power of two or out of range.
    #[error(
        "partition alignment of {align} bytes is invalid for {kind}: it must be a power of two \
         from {min} to {max} bytes"
    )]
    InvalidAlignment {
        /// The rejected alignment in bytes.
        align: u64,
        /// Table kind the plan was for.
        kind: TableKind,
        /// Smallest accepted alignment in bytes.
        min: u64,
        /// Largest accepted alignment in bytes.
        max: u64,
    },

    /// The logical block (sector) size is not supported for this table kind.
    #[error("a block size of {block_size} bytes is not supported for {kind}: it must be {valid}")]
    UnsupportedBlockSize {
        /// The rejected block size in bytes.
        block_size: u32,
        /// Table kind the plan was for.
        kind: TableKind,
        /// The accepted block sizes, in words.
        valid: &'static str,
    },

    /// The medium cannot hold the table and a partition of the minimum size.
    #[error(
        "a medium of {medium_bytes} bytes is too small for {kind} with {align}-byte alignment: \
         at least {min_bytes} bytes are needed (a partition of at least {min_partition} bytes)"
    )]
    MediumTooSmall {
        /// Size of the medium in bytes.
        medium_bytes: u64,
        /// Table kind the plan was for.
        kind: TableKind,
        /// The alignment the plan was made with.
        align: u64,
        /// Smallest medium size that would work, in bytes.
        min_bytes: u64,
        /// Smallest partition this crate plans, in bytes.
        min_partition: u64,
    },

    /// An MBR cannot address the whole medium (32-bit sector numbers).
    #[error(
        "a medium of {medium_bytes} bytes is too large for an MBR with {block_size}-byte \
         sectors: MBR addresses at most 2^32 sectors ({max_bytes} bytes); use a GPT table instead"
    )]
    MbrTooLarge {
        /// Size of the medium in bytes.
        medium_bytes: u64,
        /// Logical block size in bytes.
        block_size: u32,
        /// Largest medium an MBR can describe with this block size, in bytes.
        max_bytes: u64,
    },

    /// The GPT partition name (the volume label) does not fit the entry.
    #[error(
        "GPT partition name {name:?} is {units} UTF-16 code units long: it must be at most \
         {max} (and contain no NUL)"
    )]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Its length in UTF-16 code units.
        units: usize,
        /// The largest accepted length.
        max: usize,
    },

    /// The device is not the one the plan was made for.
    #[error(
        "the device has {dev_blocks} blocks of {dev_block_size} bytes, but the plan was made \
         for {plan_blocks} blocks of {plan_block_size} bytes"
    )]
    DeviceMismatch {
        /// Block size of the plan.
        plan_block_size: u32,
        /// Number of blocks of the plan's medium.
        plan_blocks: u64,
        /// Block size of the device.
        dev_block_size: u32,
        /// Number of blocks of the device.
        dev_blocks: u64,
    },

    /// A plan value that does not fit its on-disk field. Plans from
    /// [`plan_table`](crate::plan_table) always fit; the writer checks
    /// instead of truncating.
    #[error("the {kind} plan is invalid: {reason}")]
    InvalidPlan {
        /// Table kind of the plan.
        kind: TableKind,
        /// What is wrong.
        reason: String,
    },

    /// A partition that [`PartitionGrow`](crate::PartitionGrow) does not
    /// grow, and why.
    #[error("partition {number} cannot be grown: {reason}")]
    CannotGrow {
        /// The partition's number (1-based).
        number: u32,
        /// Why.
        reason: String,
    },

    /// Block I/O failed.
    #[error(transparent)]
    Io(#[from] IoError),

    /// The MBR or GPT library refused or failed to write the table.
    #[error("writing the {kind} table failed")]
    Table {
        /// Table kind being written.
        kind: TableKind,
        /// The library's error (its type is not part of this API).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },

    /// The GPT library laid the table out differently from the plan.
    #[error(
        "the GPT library laid out usable LBAs {got_first}..={got_last}, but the plan expects \
         {want_first}..={want_last}"
    )]
    LayoutMismatch {
        /// First usable LBA of the plan.
        want_first: u64,
        /// Last usable LBA of the plan.
        want_last: u64,
        /// First usable LBA written by the library.
        got_first: u64,
        /// Last usable LBA written by the library.
        got_last: u64,
    },
}

impl PartitionError {
    /// Wraps an error of a table library.
    pub(crate) fn table<E>(kind: TableKind, source: E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        PartitionError::Table {
            kind,
            source: Box::new(source),
        }
    }
}
