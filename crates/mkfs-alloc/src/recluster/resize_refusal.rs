//! Why a resize is refused: the reasons, each named with the figures a
//! user needs to choose another size.

use std::fmt;

/// Why a resize is refused (nothing was written).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResizeRefusal {
    /// The size asked is beyond the medium's end.
    PastMedium {
        /// Bytes of volume asked.
        asked: u64,
        /// Bytes from the volume's start to the medium's end.
        room: u64,
    },
    /// A smaller size: shrinking this file system is not supported yet.
    Shrink {
        /// Bytes of the volume now.
        now: u64,
        /// Bytes asked.
        asked: u64,
    },
    /// A smaller size than the data needs: the clusters in use past the
    /// new end do not fit the free space below it.
    BelowData {
        /// Bytes asked.
        asked: u64,
        /// The smallest size the volume shrinks to.
        least: u64,
        /// Free bytes below the new end.
        free: u64,
    },
    /// A cluster past the new end is marked bad (it cannot move).
    BadPastEnd {
        /// The bad cluster.
        cluster: u32,
        /// The smallest size that keeps it.
        least: u64,
    },
    /// FAT32: the new size leaves fewer clusters than FAT32 has at least
    /// (65,525; fewer would make it read as FAT16).
    FatTooFew {
        /// Bytes asked.
        asked: u64,
        /// Clusters the size asked leaves.
        clusters: u64,
        /// The smallest size the volume shrinks to.
        least: u64,
    },
    /// FAT32: a directory's first cluster lies past the new end (moving a
    /// directory's start is not supported).
    DirectoryPastEnd {
        /// The directory's first cluster.
        cluster: u32,
        /// The smallest size the volume shrinks to.
        least: u64,
    },
    /// The FAT's new entries do not fit before the cluster heap.
    FatFull {
        /// Bytes the FAT (and the intent record) need.
        need: u64,
        /// Bytes from the FAT's start to the heap.
        room: u64,
        /// The largest volume, in bytes, whose FAT fits.
        most: u64,
    },
    /// The partition the volume is in cannot be grown (its table, or no
    /// room after it).
    Table {
        /// Why.
        why: String,
    },
}

impl fmt::Display for ResizeRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResizeRefusal::PastMedium { asked, room } => write!(
                f,
                "{asked} bytes is beyond the end of the medium: {room} bytes from the volume's start to its end (extend the image, or use max)"
            ),
            ResizeRefusal::Shrink { now, asked } => write!(
                f,
                "shrinking this file system is not supported yet (the volume has {now} bytes, asked {asked})"
            ),
            ResizeRefusal::BelowData { asked, least, free } => write!(
                f,
                "{asked} bytes is below what the data needs: the clusters in use past the new end (and on exFAT the new bitmap and the directories' copies) do not fit the {free} free bytes below it; the smallest size this volume shrinks to is {least} bytes"
            ),
            ResizeRefusal::FatTooFew { asked, clusters, least } => write!(
                f,
                "{asked} bytes leaves {clusters} clusters, fewer than FAT32's least of 65525 (it would read as FAT16): the volume shrinks to no less than {least} bytes"
            ),
            ResizeRefusal::DirectoryPastEnd { cluster, least } => write!(
                f,
                "a directory starts at cluster {cluster}, past the new end (moving a directory's first cluster is not supported yet): the volume shrinks to no less than {least} bytes"
            ),
            ResizeRefusal::BadPastEnd { cluster, least } => write!(
                f,
                "cluster {cluster} lies past the new end and is marked bad (it cannot move): the volume shrinks to no less than {least} bytes"
            ),
            ResizeRefusal::Table { why } => write!(f, "{why}"),
            ResizeRefusal::FatFull { need, room, most } => write!(
                f,
                "the FAT would need {need} bytes but has room for {room} (up to the cluster heap or data region); growing further would move the heap's start (renumbering every cluster), which is not supported yet: the volume can grow to at most {most} bytes"
            ),
        }
    }
}
