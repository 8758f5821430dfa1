//! A planned medium as a report of its figures (the `serde` feature): what
//! a front end serializes for a machine reader (the CLI's `--json`), with
//! the layout's numbers, the rules that chose them, the regions and the
//! table. Words for people (region names, why in sentences) are the
//! front end's to add.

use crate::MediumPlan;
use mkfs_alloc_layout::label::EncodedLabel;
use mkfs_alloc_layout::rules::{ClusterRule, FsRule};
use mkfs_alloc_layout::sd::{SdLayout, SD_SECTOR};
use mkfs_alloc_layout::{Layout, RegionKind};
use mkfs_alloc_partition::{Guid, TablePlan};
use serde::Serialize;

/// The figures of a [`MediumPlan`] (each field as [`Layout`]'s accessor of
/// the same name, unless said otherwise).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PlanReport<'a> {
    /// The file system's id (`exfat`, `fat32`, ...).
    pub fs: &'static str,
    /// Why this file system.
    pub fs_rule: FsRule,
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// Why this cluster size.
    pub cluster_rule: ClusterRule,
    /// What Windows would choose for this volume.
    pub windows_default_cluster: Option<u64>,
    /// Bytes per sector.
    pub sector_size: u32,
    /// Bytes of the volume.
    pub volume_bytes: u64,
    /// Where the volume starts on the medium.
    pub partition_offset: u64,
    /// The alignment the FAT and the data region were placed with.
    pub align: u64,
    /// Clusters of the volume.
    pub cluster_count: u32,
    /// Clusters the format itself uses.
    pub used_clusters: u32,
    /// Bytes for files.
    pub usable_bytes: u64,
    /// Bytes of metadata.
    pub overhead_bytes: u64,
    /// The FAT's offset in the volume.
    pub fat_offset: u64,
    /// Bytes of one FAT.
    pub fat_bytes: u64,
    /// Number of FATs.
    pub fat_count: u32,
    /// The data region's offset in the volume.
    pub data_offset: u64,
    /// The FAT's offset on the medium.
    pub fat_offset_on_medium: u64,
    /// The data region's offset on the medium.
    pub data_offset_on_medium: u64,
    /// The largest power of two the FAT's offset on the medium is a
    /// multiple of ([`Layout::alignment_of`]).
    pub fat_alignment: u64,
    /// The same for the data region.
    pub data_alignment: u64,
    /// The volume serial, eight hexadecimal digits.
    pub serial: String,
    /// The label as the file system stores it ([`stored_label`]).
    pub label: Option<String>,
    /// The exFAT volume GUID, as a GUID structure's text (its first three
    /// groups stored little-endian, as GPT's).
    pub volume_guid: Option<String>,
    /// The planner's warnings, in words.
    pub warnings: Vec<String>,
    /// The regions of the volume, in order.
    pub regions: Vec<RegionReport>,
    /// `sd` for the SD Association's layout, else `standard`.
    pub layout: &'static str,
    /// The SD layout's figures, if it is one.
    pub sd: Option<SdReport>,
    /// The partition table.
    pub table: &'a TablePlan,
}

/// One region of the volume ([`mkfs_alloc_layout::Region`]).
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct RegionReport {
    /// What it holds.
    pub kind: RegionKind,
    /// Index among regions of the same kind (FAT 0 and 1).
    pub index: u32,
    /// Byte offset from the start of the volume.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Whether the format writes (or zeroes) it.
    pub written: bool,
}

/// The SD layout's figures ([`SdLayout`]; sectors of [`SD_SECTOR`] bytes).
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct SdReport {
    /// The capacity class (`SDSC`, `SDHC`, `SDXC`).
    pub class: &'static str,
    /// Sectors of the card.
    pub card_sectors: u64,
    /// Bytes of the boundary unit.
    pub boundary_unit_bytes: u64,
    /// The partition's first sector.
    pub partition_start_sector: u64,
    /// Sectors of the partition.
    pub partition_sectors: u64,
    /// The MBR partition type.
    pub mbr_type: u8,
    /// The MBR geometry's heads.
    pub heads: u8,
    /// The MBR geometry's sectors per track.
    pub sectors_per_track: u8,
    /// Reserved sectors.
    pub reserved_sectors: u64,
    /// The FAT's offset in the partition, in sectors.
    pub fat_offset_sectors: u64,
    /// Sectors of one FAT.
    pub fat_sectors: u64,
    /// The data region's offset in the partition, in sectors.
    pub data_offset_sectors: u64,
    /// The erase block the card reports.
    pub erase_block_bytes: u64,
}

impl SdReport {
    /// The figures of `sd`.
    pub fn of(sd: &SdLayout) -> Self {
        SdReport {
            class: sd.class.name(),
            card_sectors: sd.total_sectors,
            boundary_unit_bytes: sd.class.bu * SD_SECTOR,
            partition_start_sector: sd.part_start,
            partition_sectors: sd.part_sectors,
            mbr_type: sd.mbr_type,
            heads: sd.heads,
            sectors_per_track: sd.sectors_per_track,
            reserved_sectors: sd.rsvd,
            fat_offset_sectors: sd.fat_offset,
            fat_sectors: sd.fat_sectors,
            data_offset_sectors: sd.data_offset,
            erase_block_bytes: sd.erase_block_bytes,
        }
    }
}

impl<'a> PlanReport<'a> {
    /// The figures of `plan`.
    pub fn of(plan: &'a MediumPlan) -> Self {
        let l = plan.layout();
        let regions = l
            .regions()
            .iter()
            .map(|r| RegionReport {
                kind: r.kind,
                index: r.index,
                offset: r.offset,
                len: r.len,
                written: r.written,
            })
            .collect();
        PlanReport {
            fs: l.fs().id(),
            fs_rule: l.fs_rule(),
            cluster_size: l.cluster_size(),
            cluster_rule: l.cluster_rule(),
            windows_default_cluster: l.windows_default_cluster(),
            sector_size: l.sector_size(),
            volume_bytes: l.volume_bytes(),
            partition_offset: l.partition_offset(),
            align: l.align(),
            cluster_count: l.cluster_count(),
            used_clusters: l.used_clusters(),
            usable_bytes: l.usable_bytes(),
            overhead_bytes: l.overhead_bytes(),
            fat_offset: l.fat_offset(),
            fat_bytes: l.fat_bytes(),
            fat_count: l.fat_count(),
            data_offset: l.data_offset(),
            fat_offset_on_medium: l.fat_offset_on_medium(),
            data_offset_on_medium: l.data_offset_on_medium(),
            fat_alignment: Layout::alignment_of(l.fat_offset_on_medium()),
            data_alignment: Layout::alignment_of(l.data_offset_on_medium()),
            serial: format!("{:08X}", l.serial()),
            label: stored_label(l),
            volume_guid: l.volume_guid().as_ref().map(guid_text),
            warnings: l.warnings().map(|w| w.to_string()).collect(),
            regions,
            layout: if l.sd().is_some() { "sd" } else { "standard" },
            sd: l.sd().map(SdReport::of),
            table: plan.table(),
        }
    }
}

/// The label as the file system stores it (FAT upper-cases it; the
/// padding left out).
pub fn stored_label(layout: &Layout) -> Option<String> {
    match layout.label_encoded()? {
        EncodedLabel::Exfat(units) => Some(String::from_utf16_lossy(units)),
        EncodedLabel::Fat32(bytes) => Some(
            String::from_utf8_lossy(bytes)
                .trim_end_matches(' ')
                .to_string(),
        ),
    }
}

/// An exFAT volume GUID entry's bytes as a GUID structure's text (its
/// first three groups stored little-endian, as GPT's, and as Windows shows
/// them).
pub fn guid_text(entry: &[u8; 16]) -> String {
    Guid::from_mixed_endian(*entry).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MediumOptions;
    use mkfs_alloc_layout::{FormatOptions, FsChoice, FsKind, Timestamp};
    use mkfs_alloc_partition::TableKind;

    fn plan(fs: FsKind, label: &str) -> MediumPlan {
        let format = FormatOptions::new()
            .fs(FsChoice::Fixed(fs))
            .label(label)
            .volume_guid(true)
            .pinned(
                0x1234_ABCD,
                Timestamp {
                    secs: 1_700_000_000,
                    nanos: 0,
                },
            );
        let opts = MediumOptions::new().format(format).table(TableKind::Mbr);
        opts.plan(64 << 20, 512).expect("plan")
    }

    #[test]
    fn the_report_holds_the_layouts_figures() {
        let p = plan(FsKind::Fat32, "stick");
        let (r, l) = (PlanReport::of(&p), p.layout());
        assert_eq!(
            (r.fs, r.cluster_size, r.cluster_count),
            ("fat32", l.cluster_size(), l.cluster_count())
        );
        assert_eq!(
            (r.partition_offset, r.fat_offset_on_medium),
            (1 << 20, l.fat_offset_on_medium())
        );
        assert_eq!(
            r.data_alignment,
            Layout::alignment_of(l.data_offset_on_medium())
        );
        assert_eq!((r.serial.as_str(), r.layout), ("1234ABCD", "standard"));
        assert_eq!(
            r.label.as_deref(),
            Some("STICK"),
            "FAT stores it upper-cased"
        );
        assert_eq!(r.volume_guid, None, "FAT has none");
        assert_eq!(r.regions.len(), l.regions().len());
        assert!(r.sd.is_none());
        assert_eq!(r.table.kind(), TableKind::Mbr);
    }

    #[test]
    fn an_exfat_report_keeps_the_labels_case_and_shows_its_guid() {
        let p = plan(FsKind::Exfat, "Stick");
        let r = PlanReport::of(&p);
        assert_eq!(r.label.as_deref(), Some("Stick"));
        let entry = p.layout().volume_guid().expect("a GUID");
        assert_eq!(r.volume_guid, Some(guid_text(&entry)));
        assert_eq!(
            guid_text(&[
                0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD,
                0xEE, 0xFF
            ]),
            "00112233-4455-6677-8899-AABBCCDDEEFF"
        );
    }
}
