//! The validated plan ([`Layout`]) and its regions.

use super::choices::{Asked, Warning};
use super::MAX_ALIGN;
use crate::geometry::sd::SdLayout;
use crate::geometry::{ClusterIndex, ClusterSize, Clusters, Geometry, SectorSize};
use crate::label::{EncodedLabel, LabelText};
use crate::options::{FsKind, Timestamp};
use crate::rules::{ClusterRule, FsRule};
#[cfg(feature = "serde")]
use serde::Serialize;

/// What a region of the volume holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RegionKind {
    /// exFAT main boot region (12 sectors) or FAT reserved sectors.
    BootRegion,
    /// exFAT backup boot region (12 sectors).
    BackupBootRegion,
    /// Zero padding before the FAT (alignment).
    Padding,
    /// A FAT; the number is its index (0 or 1).
    Fat,
    /// Zero padding before the cluster heap (exFAT, alignment).
    HeapPadding,
    /// exFAT allocation bitmap clusters.
    Bitmap,
    /// exFAT up-case table clusters.
    Upcase,
    /// The root directory clusters (FAT12/16: the fixed root directory
    /// region between the FATs and the data region).
    RootDirectory,
    /// Free clusters; a quick format does not touch them.
    FreeClusters,
    /// Sectors after the last whole cluster, unused.
    Tail,
}

impl RegionKind {
    /// The region's name in a plan's table (`index`: a FAT's, from 0), on
    /// a volume of `fs`.
    #[cfg(feature = "alloc")]
    pub fn name(self, index: u32, fs: FsKind) -> alloc::string::String {
        match self {
            RegionKind::BootRegion => match fs {
                FsKind::Exfat => "main boot region".into(),
                FsKind::Fat32 => "reserved sectors (boot, FSInfo, backups)".into(),
                _ => "reserved sectors (boot sector)".into(),
            },
            RegionKind::BackupBootRegion => "backup boot region".into(),
            RegionKind::Padding | RegionKind::HeapPadding => "alignment padding".into(),
            RegionKind::Fat => alloc::format!("FAT #{}", index + 1),
            RegionKind::Bitmap => "allocation bitmap".into(),
            RegionKind::Upcase => "up-case table".into(),
            RegionKind::RootDirectory => "root directory".into(),
            RegionKind::FreeClusters => "free clusters".into(),
            RegionKind::Tail => "unused tail".into(),
        }
    }
}

/// One contiguous region of the volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Region {
    /// What it holds.
    pub kind: RegionKind,
    /// Index among regions of the same kind (FAT 0 and 1).
    pub index: u32,
    /// Byte offset from the start of the volume.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// True if the format writes (or zeroes) this region.
    pub written: bool,
}

/// The regions of a volume, in order (at most [`Regions::MAX`]); reads as
/// a `[Region]`. No allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    list: [Region; Regions::MAX],
    len: usize,
}

impl Regions {
    /// The most regions a volume has (exFAT: boot, backup, padding, FAT,
    /// heap padding, bitmap, up-case, root, free, tail).
    pub const MAX: usize = 12;

    pub(crate) fn new() -> Self {
        Regions {
            list: [Region {
                kind: RegionKind::Tail,
                index: 0,
                offset: 0,
                len: 0,
                written: false,
            }; Regions::MAX],
            len: 0,
        }
    }

    pub(crate) fn push(&mut self, region: Region) {
        self.list[self.len] = region;
        self.len += 1;
    }
}

impl core::ops::Deref for Regions {
    type Target = [Region];
    fn deref(&self) -> &[Region] {
        &self.list[..self.len]
    }
}

impl IntoIterator for Regions {
    type Item = Region;
    type IntoIter = core::iter::Take<core::array::IntoIter<Region, { Regions::MAX }>>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.into_iter().take(self.len)
    }
}

impl<'a> IntoIterator for &'a Regions {
    type Item = &'a Region;
    type IntoIter = core::slice::Iter<'a, Region>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A validated plan: every byte offset the writer will use, and why each
/// choice was made. Only [`plan`](super::plan()) makes one (the fields are private, so a
/// plan cannot be changed after validation); read it through the accessors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// File system.
    pub(crate) fs: FsKind,
    /// Why this file system.
    pub(crate) fs_rule: FsRule,
    /// Sector size.
    pub(crate) sector_size: SectorSize,
    /// Cluster size.
    pub(crate) cluster_size: ClusterSize,
    /// Why this cluster size.
    pub(crate) cluster_rule: ClusterRule,
    /// Number of clusters in the data region / cluster heap.
    pub(crate) cluster_count: Clusters,
    /// Bytes of the volume (whole sectors).
    pub(crate) volume_bytes: u64,
    /// Byte offset of the volume on its medium.
    pub(crate) partition_offset: u64,
    /// Alignment (bytes, from the medium start) of the FAT and data region.
    pub(crate) align: u64,
    /// Byte offset of the first FAT from the volume start.
    pub(crate) fat_offset: u64,
    /// Bytes of one FAT.
    pub(crate) fat_bytes: u64,
    /// Number of FATs.
    pub(crate) fat_count: u32,
    /// Byte offset of the cluster heap / data region from the volume start.
    pub(crate) data_offset: u64,
    /// Clusters in use after formatting (bitmap, up-case, root).
    pub(crate) used_clusters: Clusters,
    /// Volume serial number.
    pub(crate) serial: u32,
    /// The label as given (validated), if any.
    pub(crate) label: Option<LabelText>,
    /// The label as the file system stores it (encoded once, by the planner).
    pub(crate) label_encoded: Option<EncodedLabel>,
    /// exFAT volume GUID written to the root directory, if any.
    pub(crate) volume_guid: Option<[u8; 16]>,
    /// Time recorded in the file system.
    pub(crate) timestamp: Timestamp,
    /// Compatibility warnings (the layout is valid, but some systems may balk).
    pub(crate) asked: Asked,
    /// File-system geometry.
    pub(crate) geometry: Geometry,
    /// The SD Association layout this plan follows, if any.
    pub(crate) sd: Option<SdLayout>,
    /// The FAT boot sector's BIOS fields, if not a fixed disk's.
    pub(crate) bios: Option<crate::options::BiosParams>,
}

impl Layout {
    /// File system.
    pub fn fs(&self) -> FsKind {
        self.fs
    }

    /// Why this file system.
    pub fn fs_rule(&self) -> FsRule {
        self.fs_rule
    }

    /// Sector size (`.get()` the bytes, as the BPB holds them).
    pub fn sector_size(&self) -> SectorSize {
        self.sector_size
    }

    /// Cluster size (`.bytes()` the bytes).
    pub fn cluster_size(&self) -> ClusterSize {
        self.cluster_size
    }

    /// Why this cluster size.
    pub fn cluster_rule(&self) -> ClusterRule {
        self.cluster_rule
    }

    /// What Windows' format would have picked, if it formats this at all.
    pub fn windows_default_cluster(&self) -> Option<u64> {
        crate::rules::windows_default(self.fs, self.volume_bytes)
    }

    /// Number of clusters in the data region / cluster heap.
    pub fn cluster_count(&self) -> Clusters {
        self.cluster_count
    }

    /// Bytes of the volume (whole sectors).
    pub fn volume_bytes(&self) -> u64 {
        self.volume_bytes
    }

    /// Byte offset of the volume on its medium.
    pub fn partition_offset(&self) -> u64 {
        self.partition_offset
    }

    /// Alignment (bytes, from the medium start) of the FAT and data region.
    pub fn align(&self) -> u64 {
        self.align
    }

    /// Byte offset of the first FAT from the volume start.
    pub fn fat_offset(&self) -> u64 {
        self.fat_offset
    }

    /// Bytes of one FAT.
    pub fn fat_bytes(&self) -> u64 {
        self.fat_bytes
    }

    /// Number of FATs.
    pub fn fat_count(&self) -> u32 {
        self.fat_count
    }

    /// Byte offset of the cluster heap / data region from the volume start.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Clusters in use after formatting (bitmap, up-case, root).
    pub fn used_clusters(&self) -> Clusters {
        self.used_clusters
    }

    /// Volume serial number.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// exFAT volume GUID written to the root directory, if any.
    pub fn volume_guid(&self) -> Option<[u8; 16]> {
        self.volume_guid
    }

    /// Time recorded in the file system.
    pub fn timestamp(&self) -> Timestamp {
        self.timestamp
    }

    /// The label as given (validated), if any.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The label as the file system stores it (encoded once, by the planner).
    pub fn label_encoded(&self) -> Option<&EncodedLabel> {
        self.label_encoded.as_ref()
    }

    /// Compatibility warnings (the layout is valid, but some systems may
    /// balk); each one's `Display` is its sentence.
    pub fn warnings(&self) -> impl Iterator<Item = Warning> {
        super::choices::warnings(self, self.asked).into_iter()
    }

    /// File-system geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// All regions, in order, covering the volume exactly.
    pub fn regions(&self) -> Regions {
        super::build::regions(self)
    }

    /// Bytes available for files: free clusters × cluster size.
    pub fn usable_bytes(&self) -> u64 {
        let free = Clusters(self.cluster_count.0 - self.used_clusters.0);
        self.cluster_size.bytes_of(free)
    }

    /// Bytes not available for files: everything but the free clusters.
    pub fn overhead_bytes(&self) -> u64 {
        self.volume_bytes - self.usable_bytes()
    }

    /// Absolute byte offset of the FAT on the medium.
    pub fn fat_offset_on_medium(&self) -> u64 {
        self.partition_offset + self.fat_offset
    }

    /// Absolute byte offset of the data region / cluster heap on the medium.
    pub fn data_offset_on_medium(&self) -> u64 {
        self.partition_offset + self.data_offset
    }

    /// The SD Association layout this plan follows (`--layout sd`), with the
    /// card's capacity class, boundary unit and CHS geometry.
    pub fn sd(&self) -> Option<&SdLayout> {
        self.sd.as_ref()
    }

    /// CHS geometry written to the FAT boot sector (and the MBR entry):
    /// `(heads, sectors per track)`; 255/63 unless the SD layout or
    /// [`FormatOptions::bios`](crate::FormatOptions::bios) gives one.
    pub fn chs_geometry(&self) -> (u8, u8) {
        match (&self.bios, &self.sd) {
            (Some(b), _) => (b.heads, b.sectors_per_track),
            (None, Some(s)) => (s.heads, s.sectors_per_track),
            (None, None) => (255, 63),
        }
    }

    /// The FAT media descriptor (BPB_Media and FAT entry 0): 0xF8 unless
    /// [`FormatOptions::bios`](crate::FormatOptions::bios) gives another.
    pub fn media(&self) -> u8 {
        self.bios.map_or(crate::writer::fat::MEDIA, |b| b.media)
    }

    /// The FAT boot sector's BIOS drive number: 0x80 unless
    /// [`FormatOptions::bios`](crate::FormatOptions::bios) gives another.
    pub fn drive_number(&self) -> u8 {
        self.bios.map_or(0x80, |b| b.drive)
    }

    /// Largest power of two (up to 64 MiB) that divides an absolute offset.
    pub fn alignment_of(offset: u64) -> u64 {
        if offset == 0 {
            MAX_ALIGN
        } else {
            (1u64 << offset.trailing_zeros()).min(MAX_ALIGN)
        }
    }

    /// Byte offset of cluster `c` from the volume start.
    pub fn cluster_offset(&self, c: ClusterIndex) -> u64 {
        self.data_offset + self.cluster_size.bytes_of(c.in_heap())
    }
}
