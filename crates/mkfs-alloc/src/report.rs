//! A planned medium as a report of its figures (the `serde` feature): what
//! a front end serializes for a machine reader (the CLI's `--json`), with
//! the layout's numbers, the rules that chose them, the regions and the
//! table. Words for people (region names, why in sentences) are the
//! front end's to add.

use crate::batch::Outcome;
use crate::units::utc_text;
use crate::verify::VerifyReport;
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
            cluster_size: l.cluster_size().bytes(),
            cluster_rule: l.cluster_rule(),
            windows_default_cluster: l.windows_default_cluster(),
            sector_size: l.sector_size().get(),
            volume_bytes: l.volume_bytes(),
            partition_offset: l.partition_offset(),
            align: l.align(),
            cluster_count: l.cluster_count().get(),
            used_clusters: l.used_clusters().get(),
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

/// A batch target's plan, as a batch report gives it beside the target's
/// own fields ([`crate::batch`]).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TargetPlanReport {
    /// The file system's id.
    pub fs: &'static str,
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// The partition table's id (`none`, `mbr`, `gpt`).
    pub table: &'static str,
    /// Where the volume starts on the medium.
    pub partition_start: u64,
    /// Bytes of the volume.
    pub volume_bytes: u64,
    /// The volume serial, eight hexadecimal digits.
    pub serial: String,
    /// The label as the file system stores it.
    pub label: Option<String>,
    /// The exFAT volume GUID ([`guid_text`]).
    pub volume_guid: Option<String>,
    /// The MBR's disk signature, eight hexadecimal digits.
    pub mbr_disk_signature: Option<String>,
    /// The GPT's disk GUID.
    pub gpt_disk_guid: Option<String>,
    /// The GPT partition's GUID.
    pub gpt_partition_guid: Option<String>,
}

impl TargetPlanReport {
    /// The identities and shape of `plan`.
    pub fn of(plan: &MediumPlan) -> Self {
        let (l, t) = (plan.layout(), plan.table());
        TargetPlanReport {
            fs: l.fs().id(),
            cluster_size: l.cluster_size().bytes(),
            table: t.kind().id(),
            partition_start: t.partition_start(),
            volume_bytes: l.volume_bytes(),
            serial: format!("{:08X}", l.serial()),
            label: stored_label(l),
            volume_guid: l.volume_guid().as_ref().map(guid_text),
            mbr_disk_signature: t.mbr().map(|m| format!("{:08X}", m.disk_signature())),
            gpt_disk_guid: t.gpt().map(|g| g.disk_guid().to_string()),
            gpt_partition_guid: t.gpt().map(|g| g.partition_guid().to_string()),
        }
    }
}

/// What a batch target's run did ([`Outcome`]), times as RFC 3339 UTC text
/// ([`crate::units::utc_text`]).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct OutcomeReport {
    /// Bytes the format wrote.
    pub bytes_written: u64,
    /// Seconds the format took.
    pub write_seconds: f64,
    /// Bytes written per second.
    pub write_bytes_per_sec: f64,
    /// When the target's run started.
    pub started: String,
    /// When it finished.
    pub finished: String,
    /// The read-back, if asked for and reached.
    pub verify: Option<VerifyFigures>,
}

/// The read-back's figures ([`VerifyReport`]).
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct VerifyFigures {
    /// Bytes read from the target.
    pub bytes_read: u64,
    /// Bytes compared.
    pub bytes_verified: u64,
    /// Pieces that differ from what was written.
    pub mismatches: u64,
    /// Byte offset of the first piece that differs.
    pub first_mismatch: Option<u64>,
    /// Bytes that could not be checked.
    pub unverifiable_bytes: u64,
    /// Seconds spent reading and comparing.
    pub seconds: f64,
    /// Bytes read per second.
    pub bytes_per_sec: f64,
}

impl OutcomeReport {
    /// The figures of `o`.
    pub fn of(o: &Outcome) -> Self {
        OutcomeReport {
            bytes_written: o.bytes_written,
            write_seconds: o.write_time.as_secs_f64(),
            write_bytes_per_sec: o.write_bytes_per_sec(),
            started: utc_text(o.started),
            finished: utc_text(o.finished),
            verify: o.verify.as_ref().map(VerifyFigures::of),
        }
    }
}

impl VerifyFigures {
    /// The figures of `v`.
    pub fn of(v: &VerifyReport) -> Self {
        VerifyFigures {
            bytes_read: v.bytes_read,
            bytes_verified: v.bytes_verified,
            mismatches: v.mismatches,
            first_mismatch: v.first_mismatch,
            unverifiable_bytes: v.unverifiable_bytes,
            seconds: v.elapsed.as_secs_f64(),
            bytes_per_sec: v.bytes_per_sec(),
        }
    }
}

/// A tree written into the volume ([`crate::populate::Populated`]; the
/// `populate` feature).
#[cfg(feature = "populate")]
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TreeReport<'a> {
    /// Files copied.
    pub files: u64,
    /// Directories copied, the root not counted.
    pub directories: u64,
    /// Bytes of the files.
    pub bytes: u64,
    /// Clusters the tree takes.
    pub clusters: u64,
    /// Bytes the tree takes on the volume.
    pub bytes_on_disk: u64,
    /// Host entries not copied (links, devices, FIFOs, sockets).
    pub skipped: &'a [mkfs_alloc_populate::Skipped],
    /// How many of each kind.
    pub skipped_counts: std::collections::BTreeMap<mkfs_alloc_populate::SkipKind, u64>,
    /// How the file data reached the image.
    pub copy: CopyReport,
}

/// How a tree's file data reached the image: bytes cloned (shared with
/// the source files), copied by the kernel, and written (read and
/// written; the rest).
#[cfg(feature = "populate")]
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct CopyReport {
    /// Bytes shared with the source files.
    pub cloned: u64,
    /// Bytes the kernel copied.
    pub copied_in_kernel: u64,
    /// Bytes read and written.
    pub written: u64,
}

#[cfg(feature = "populate")]
impl<'a> TreeReport<'a> {
    /// The figures of `p`.
    pub fn of(p: &'a mkfs_alloc_populate::Populated) -> Self {
        let t = p.tree();
        let c = p.copy_counts().unwrap_or_default();
        TreeReport {
            files: t.file_count(),
            directories: t.dir_count(),
            bytes: t.file_bytes(),
            clusters: p.new_clusters(),
            bytes_on_disk: p.footprint().bytes_on_disk(),
            skipped: t.skipped(),
            skipped_counts: t.skipped_counts(),
            copy: CopyReport {
                cloned: c.cloned,
                copied_in_kernel: c.copied_in_kernel,
                written: t.file_bytes().saturating_sub(c.cloned + c.copied_in_kernel),
            },
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
            ("fat32", l.cluster_size().bytes(), l.cluster_count().get())
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

    #[test]
    fn a_batch_target_reports_its_identities() {
        let p = plan(FsKind::Exfat, "K001");
        let r = TargetPlanReport::of(&p);
        assert_eq!(
            (r.fs, r.table, r.partition_start),
            ("exfat", "mbr", 1 << 20)
        );
        let sig = p.table().mbr().expect("an MBR").disk_signature();
        assert_eq!(r.mbr_disk_signature, Some(format!("{sig:08X}")));
        assert_eq!((r.gpt_disk_guid, r.gpt_partition_guid), (None, None));
        assert_eq!(r.serial, "1234ABCD");
        let v = VerifyReport {
            bytes_verified: 4096,
            bytes_read: 8192,
            elapsed: std::time::Duration::from_millis(500),
            ..VerifyReport::default()
        };
        let f = VerifyFigures::of(&v);
        assert_eq!(
            (f.bytes_read, f.bytes_verified, f.mismatches),
            (8192, 4096, 0)
        );
        assert_eq!((f.seconds, f.bytes_per_sec), (0.5, 16384.0));
    }

    #[test]
    fn a_tree_report_counts_what_the_plan_holds() {
        let p = plan(FsKind::Fat32, "T")
            .populate(mkfs_alloc_populate::Tree::new(), Default::default())
            .expect("an empty tree");
        let r = TreeReport::of(p.content().expect("the tree"));
        assert_eq!((r.files, r.directories, r.bytes), (0, 0, 0));
        assert!(r.skipped.is_empty() && r.skipped_counts.is_empty());
        assert_eq!(
            (r.copy.cloned, r.copy.copied_in_kernel, r.copy.written),
            (0, 0, 0)
        );
    }
}
