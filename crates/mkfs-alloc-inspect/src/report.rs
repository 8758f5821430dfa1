//! The report: plain data, serialisable. JSON field names are part of the
//! interface: add fields, never rename them.

use serde::Serialize;

/// Everything found on a medium.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Size of the medium in bytes (whole blocks).
    pub medium_bytes: u64,
    /// Block size the medium was read with.
    pub block_size: u32,
    /// The partition table (kind `none` for a whole-medium volume).
    pub partition_table: PartitionTable,
    /// One entry per partition, or one for the whole medium.
    pub volumes: Vec<Volume>,
}

impl Report {
    /// The per-volume errors, as `(volume index, message)`.
    pub fn errors(&self) -> impl Iterator<Item = (usize, &str)> {
        self.volumes
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.error.as_deref().map(|e| (i, e)))
    }
}

pub use mkfs_alloc_ondisk::TableKind;

/// A partition table.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionTable {
    /// Kind of table.
    pub kind: TableKind,
    /// Logical sector size the table's LBAs are counted in.
    pub sector_size: Option<u32>,
    /// MBR disk signature (8 hex digits) or GPT disk GUID.
    pub disk_id: Option<String>,
    /// Partitions, in table order (empty slots left out).
    pub partitions: Vec<Partition>,
    /// Problems found in the table.
    pub warnings: Vec<String>,
}

impl PartitionTable {
    /// No partition table.
    pub fn none() -> Self {
        PartitionTable {
            kind: TableKind::None,
            sector_size: None,
            disk_id: None,
            partitions: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// One partition table entry.
#[derive(Debug, Clone, Serialize)]
pub struct Partition {
    /// 1-based slot number in the table.
    pub index: u32,
    /// Byte offset on the medium.
    pub start: u64,
    /// Length in bytes.
    pub size: u64,
    /// MBR type byte (`0x0c`) or GPT type GUID.
    pub type_id: String,
    /// Well-known name of the type, if any.
    pub type_name: Option<String>,
    /// GPT partition name.
    pub name: Option<String>,
    /// GPT unique partition GUID.
    pub uuid: Option<String>,
    /// MBR active flag (0x80).
    pub bootable: bool,
}

pub use mkfs_alloc_ondisk::{AnyFs, FsKind};

/// Serializes a file-system kind as its stable id (`"exfat"`, `"fat32"`, …),
/// `"unknown"` when nothing was recognised.
fn serialize_fs<S: serde::Serializer>(fs: &Option<AnyFs>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(fs.map_or("unknown", AnyFs::id))
}

/// Absolute alignment (largest power of two dividing the byte offset on the
/// medium, capped at 64 MiB; offset 0 counts as 64 MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Alignment {
    /// Of the partition (volume) start.
    pub partition: u64,
    /// Of the first FAT.
    pub fat: Option<u64>,
    /// Of the data region / cluster heap.
    pub data: Option<u64>,
}

/// A volume: a partition, or the whole medium.
#[derive(Debug, Clone, Serialize)]
pub struct Volume {
    /// Index of the partition (its `index`), `None` for the whole medium.
    pub partition: Option<u32>,
    /// Byte offset on the medium.
    pub start: u64,
    /// Length in bytes available to the volume.
    pub size: u64,
    /// File system found (`None`: nothing recognised; `"unknown"` in JSON).
    #[serde(serialize_with = "serialize_fs")]
    pub fs: Option<AnyFs>,
    /// Bytes the file system says it spans (FAT/exFAT).
    pub fs_bytes: Option<u64>,
    /// Logical sector size of the file system.
    pub sector_size: Option<u32>,
    /// Cluster size in bytes.
    pub cluster_size: Option<u64>,
    /// Number of clusters in the data region / cluster heap.
    pub cluster_count: Option<u64>,
    /// Bytes in allocated clusters (exFAT: allocation bitmap; FAT: non-free FAT entries).
    pub used_bytes: Option<u64>,
    /// Bytes in free clusters.
    pub free_bytes: Option<u64>,
    /// FAT32 FSInfo free count in bytes (a hint; may be stale).
    pub free_bytes_fsinfo: Option<u64>,
    /// Volume label.
    pub label: Option<String>,
    /// Volume serial number (8 hex digits) or UUID.
    pub serial: Option<String>,
    /// Absolute byte offset of the first FAT on the medium.
    pub fat_offset: Option<u64>,
    /// Bytes of one FAT.
    pub fat_bytes: Option<u64>,
    /// Number of FATs.
    pub fat_count: Option<u32>,
    /// Absolute byte offset of the data region / cluster heap on the medium.
    pub data_offset: Option<u64>,
    /// Alignment of the partition, the FAT and the data region.
    pub alignment: Alignment,
    /// Which of `partition`, `fat`, `data` are not on a 1 MiB boundary.
    pub misaligned: Vec<String>,
    /// File statistics (`--files`).
    pub files: Option<FileStats>,
    /// Problems that did not stop the inspection.
    pub warnings: Vec<String>,
    /// The problem that stopped the inspection of this volume (the fields
    /// before it were filled in), or the first damage found in its file
    /// system during the walk (the report is then complete up to the
    /// damaged parts, which `warnings` list).
    pub error: Option<String>,
}

impl Volume {
    /// The file system if it is one of ours (exFAT, FAT12/16/32).
    pub fn ours(&self) -> Option<FsKind> {
        self.fs.and_then(AnyFs::ours)
    }

    /// An empty volume entry.
    pub(crate) fn new(partition: Option<u32>, start: u64, size: u64) -> Self {
        Volume {
            partition,
            start,
            size,
            fs: None,
            fs_bytes: None,
            sector_size: None,
            cluster_size: None,
            cluster_count: None,
            used_bytes: None,
            free_bytes: None,
            free_bytes_fsinfo: None,
            label: None,
            serial: None,
            fat_offset: None,
            fat_bytes: None,
            fat_count: None,
            data_offset: None,
            alignment: Alignment {
                partition: alignment_of(start),
                fat: None,
                data: None,
            },
            misaligned: Vec::new(),
            files: None,
            warnings: Vec::new(),
            error: None,
        }
    }
}

/// Boundary against which `misaligned` is judged: 1 MiB.
pub const ALIGN_BOUNDARY: u64 = 1 << 20;

/// Largest power of two dividing `offset`, capped at 64 MiB (0 gives 64 MiB).
pub fn alignment_of(offset: u64) -> u64 {
    mkfs_alloc_layout::Layout::alignment_of(offset)
}

/// What the files of a volume take (`--files`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FileStats {
    /// Regular files.
    pub count: u64,
    /// Directories, the root excluded.
    pub dirs: u64,
    /// Sum of the file sizes.
    pub total_bytes: u64,
    /// Bytes of the clusters the files take at the current cluster size.
    pub allocated_bytes: u64,
    /// `allocated_bytes` plus `dir_bytes` less the root directory's first
    /// cluster, minus `total_bytes`: the one definition of waste
    /// ([`mkfs_alloc_layout::waste`]) that `advise` uses too.
    pub waste_bytes: u64,
    /// Bytes of the clusters the directories take (root included when it is
    /// in the data region).
    pub dir_bytes: u64,
    /// Files whose clusters are not contiguous.
    pub fragmented: u64,
    /// False when the walk was cut short (damage or a limit); the numbers
    /// then cover what was read.
    pub complete: bool,
    /// The same files at every cluster size valid for this file system and
    /// volume size.
    pub at_cluster_sizes: Vec<AtClusterSize>,
    /// Every file, when asked for (`InspectOptions::list_files`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<FileEntry>>,
}

/// What the files would take at one cluster size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtClusterSize {
    /// Cluster size in bytes.
    pub cluster_size: u64,
    /// Sum over files of their size rounded up to the cluster size.
    pub allocated_bytes: u64,
    /// As [`FileStats::waste_bytes`], at this cluster size.
    pub waste_bytes: u64,
    /// Estimated directory clusters: each directory's used entries rounded up
    /// to the cluster size.
    pub dir_bytes: u64,
}

/// One file found by the walk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// Path from the root, `/`-separated, starting with `/`.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Bytes of the clusters it takes.
    pub allocated_bytes: u64,
    /// Number of contiguous runs of clusters, when its chain was walked.
    pub fragments: Option<u64>,
}
