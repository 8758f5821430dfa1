//! What the volume model finds wrong: one typed [`Finding`] per problem,
//! worded as `fsck.exfat` (exfatprogs) and `fsck.fat` (dosfstools) word the
//! same problem where they report it, and whether it makes an in-place
//! change of the volume unsafe ([`Finding::refuses_change`]).

use std::fmt;

use crate::error::ChainProblem;

/// Which "not cleanly unmounted" mark a volume carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirtyMark {
    /// exFAT: VolumeFlags bit 1 (VolumeDirty).
    VolumeDirty,
    /// FAT16/FAT32: the clean-shutdown bit of FAT entry 1 is clear.
    FatCleanBit,
    /// FAT12/16/32: bit 0 of the boot sector's reserved byte (BS_Reserved1),
    /// the "dirty bit" of Windows and `fsck.fat`.
    BootSectorBit,
}

/// One problem of a volume.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Finding {
    /// The volume is marked as not cleanly unmounted.
    Dirty {
        /// Which mark.
        mark: DirtyMark,
    },
    /// The main exFAT boot region is damaged; the backup was read.
    MainBootRegion {
        /// Why the main one was not used.
        why: String,
    },
    /// A file or directory names a first cluster that does not fit its size.
    FirstCluster {
        /// Its path.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The first cluster it names.
        first: u32,
    },
    /// A chain is broken: a loop, a free or bad cluster, a value out of range.
    BrokenChain {
        /// Whose chain.
        path: String,
        /// What is wrong with it.
        problem: ChainProblem,
    },
    /// A cluster is reached twice: by two chains, or twice by one.
    CrossLinked {
        /// The chain that reached it the second time.
        path: String,
        /// The cluster.
        cluster: u32,
    },
    /// A chain has more clusters than the size needs.
    ChainTooLong {
        /// Whose chain.
        path: String,
        /// The size in bytes.
        size: u64,
        /// Bytes the clusters of the chain hold.
        chain_bytes: u64,
    },
    /// A chain has fewer clusters than the size needs.
    ChainTooShort {
        /// Whose chain.
        path: String,
        /// The size in bytes.
        size: u64,
        /// Bytes the clusters of the chain hold.
        chain_bytes: u64,
    },
    /// An exFAT entry set whose SetChecksum is wrong.
    SetChecksum {
        /// The directory holding it.
        dir: String,
        /// Absolute byte offset of its file entry.
        offset: u64,
        /// SetChecksum as stored.
        stored: u16,
        /// As computed over the set.
        computed: u16,
    },
    /// An exFAT entry set whose NameHash does not match its name.
    NameHash {
        /// The file's path.
        path: String,
        /// NameHash as stored.
        stored: u16,
        /// As computed through the volume's up-case table.
        computed: u16,
    },
    /// A damaged directory entry (skipped).
    DamagedEntry {
        /// The directory holding it.
        dir: String,
        /// Absolute byte offset of the entry.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// FAT long-name entries that do not belong to the short entry after
    /// them (wrong checksum or order).
    LongName {
        /// The directory holding them.
        dir: String,
        /// Absolute byte offset of the entry where the mismatch showed.
        offset: u64,
    },
    /// A FAT subdirectory's `.` or `..` names the wrong first cluster.
    DotEntry {
        /// The directory.
        dir: String,
        /// `.` or `..`.
        name: String,
        /// The first cluster it names.
        first: u32,
        /// The one it must name (`..` of a child of the root: 0).
        expected: u32,
    },
    /// A directory that cannot be read.
    UnreadableDirectory {
        /// Its path.
        path: String,
        /// Why.
        why: String,
    },
    /// Clusters marked in use (FAT entry or exFAT bitmap bit) that no chain
    /// reaches.
    LostClusters {
        /// How many.
        count: u64,
        /// The first of them.
        first: u32,
    },
    /// exFAT: clusters in use by a chain whose bitmap bit is clear.
    BitmapClear {
        /// How many.
        count: u64,
        /// The first of them.
        first: u32,
    },
    /// A FAT copy differs from the first FAT.
    FatCopiesDiffer {
        /// The copy (1: the second FAT).
        copy: u32,
        /// Bytes that differ.
        bytes: u64,
        /// Offset in the FAT of the first difference.
        first_offset: u64,
    },
    /// Clusters marked bad in the FAT (not damage: a change must avoid them).
    BadClusters {
        /// How many.
        count: u64,
        /// The first of them.
        first: u32,
    },
    /// The up-case table cannot be read; names were hashed with the
    /// specification's recommended table.
    UpcaseTable {
        /// Why.
        why: String,
    },
    /// The model is not complete: a limit stopped the reading.
    Incomplete {
        /// Which limit.
        why: String,
    },
}

impl Finding {
    /// True when an in-place change (re-cluster, resize, convert) must not
    /// start on a volume with this finding: every finding but
    /// [`Finding::BadClusters`], which a change avoids instead.
    pub fn refuses_change(&self) -> bool {
        !matches!(self, Finding::BadClusters { .. })
    }

    /// A short stable name of the kind, for JSON (`"cross_linked"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::Dirty { .. } => "dirty",
            Finding::MainBootRegion { .. } => "main_boot_region",
            Finding::FirstCluster { .. } => "first_cluster",
            Finding::BrokenChain { .. } => "broken_chain",
            Finding::CrossLinked { .. } => "cross_linked",
            Finding::ChainTooLong { .. } => "chain_too_long",
            Finding::ChainTooShort { .. } => "chain_too_short",
            Finding::SetChecksum { .. } => "set_checksum",
            Finding::NameHash { .. } => "name_hash",
            Finding::DamagedEntry { .. } => "damaged_entry",
            Finding::LongName { .. } => "long_name",
            Finding::DotEntry { .. } => "dot_entry",
            Finding::UnreadableDirectory { .. } => "unreadable_directory",
            Finding::LostClusters { .. } => "lost_clusters",
            Finding::BitmapClear { .. } => "bitmap_clear",
            Finding::FatCopiesDiffer { .. } => "fat_copies_differ",
            Finding::BadClusters { .. } => "bad_clusters",
            Finding::UpcaseTable { .. } => "upcase_table",
            Finding::Incomplete { .. } => "incomplete",
        }
    }
}

impl fmt::Display for Finding {
    /// The words of fsck.exfat ("more clusters are allocated", "the
    /// checksum … of a file is wrong", "the name hash of a file is wrong",
    /// "cluster is already allocated for the other file") and fsck.fat
    /// ("Dirty bit is set", "FATs differ", "File size is … bytes, cluster
    /// chain length is … bytes", "share clusters") where they have one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Dirty { mark } => match mark {
                DirtyMark::VolumeDirty => {
                    f.write_str("VolumeDirty is set: the volume was not cleanly unmounted")
                }
                DirtyMark::FatCleanBit => f.write_str(
                    "the clean-shutdown bit of FAT entry 1 is clear: the volume was not cleanly unmounted",
                ),
                DirtyMark::BootSectorBit => f.write_str(
                    "Dirty bit is set. Fs was not properly unmounted and some data may be corrupt",
                ),
            },
            Finding::MainBootRegion { why } => {
                write!(f, "boot region is corrupted ({why}); the backup boot region was read")
            }
            Finding::FirstCluster { path, size, first } => {
                write!(f, "{path}: size {size}, but the first cluster {first:#x}")
            }
            Finding::BrokenChain { path, problem } => write!(f, "{path}: {problem}"),
            Finding::CrossLinked { path, cluster } => write!(
                f,
                "{path}: cluster {cluster} is already allocated for the other file (files share clusters)"
            ),
            Finding::ChainTooLong { path, size, chain_bytes } => write!(
                f,
                "{path}: more clusters are allocated: file size is {size} bytes, cluster chain length is {chain_bytes} bytes"
            ),
            Finding::ChainTooShort { path, size, chain_bytes } => write!(
                f,
                "{path}: less clusters are allocated: file size is {size} bytes, cluster chain length is {chain_bytes} bytes"
            ),
            Finding::SetChecksum { dir, offset, stored, computed } => write!(
                f,
                "{dir}: the checksum {stored:#x} of a file is wrong, expected: {computed:#x} (entry set at byte {offset})"
            ),
            Finding::NameHash { path, stored, computed } => write!(
                f,
                "{path}: the name hash of a file is wrong (stored {stored:#06x}, computed {computed:#06x})"
            ),
            Finding::DamagedEntry { dir, offset, what } => {
                write!(f, "{dir}: damaged directory entry at byte {offset}: {what}")
            }
            Finding::LongName { dir, offset } => write!(
                f,
                "{dir}: long file name entries do not match their short entry (checksum or order) at byte {offset}"
            ),
            Finding::DotEntry {
                dir,
                name,
                first,
                expected,
            } => write!(
                f,
                "{dir}: '{name}' starts at cluster {first}, but it must point to cluster {expected}"
            ),
            Finding::UnreadableDirectory { path, why } => write!(f, "{path}: {why}; not read"),
            Finding::LostClusters { count, first } => write!(
                f,
                "{count} clusters are marked in use but belong to no file or directory (lost; the first is {first})"
            ),
            Finding::BitmapClear { count, first } => write!(
                f,
                "{count} clusters in use are marked free in the allocation bitmap (the first is {first})"
            ),
            Finding::FatCopiesDiffer { copy, bytes, first_offset } => write!(
                f,
                "FATs differ: FAT #{} differs from FAT #1 in {bytes} bytes (the first at offset {first_offset})",
                copy + 1
            ),
            Finding::BadClusters { count, first } => {
                write!(f, "{count} clusters are marked bad (the first is {first})")
            }
            Finding::UpcaseTable { why } => write!(f, "up-case table: {why}"),
            Finding::Incomplete { why } => write!(f, "the volume was not read to the end: {why}"),
        }
    }
}

/// A finding for a machine reader: `{"kind": "cross_linked", "message":
/// "...", "refuses_change": true}` ([`Finding::kind`], the words of its
/// `Display`, [`Finding::refuses_change`]).
impl serde::Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Finding", 3)?;
        st.serialize_field("kind", self.kind())?;
        st.serialize_field("message", &self.to_string())?;
        st.serialize_field("refuses_change", &self.refuses_change())?;
        st.end()
    }
}
