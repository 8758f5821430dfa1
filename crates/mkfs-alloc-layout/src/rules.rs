//! Default choices: which file system and cluster size `auto` picks, and what
//! Windows would have picked (for comparison in the output).
//!
//! The `auto` rules follow field evidence published by users (a 128 GB
//! stick measured at 32 KiB and 512 KiB clusters,
//! <https://win-tab.net/opinion/allocation_size_1809052/>; old 2 GB and
//! 16 GB sticks at 1 KiB..4 MiB,
//! <https://freesoft.tvbok.com/tips/hddssd_tips/exfat-usb.html>), not the
//! Windows defaults (<https://support.microsoft.com/en-us/help/140365>): Windows picks
//! 128 KiB..2 MiB exFAT clusters on large sticks and wastes 30% of them on
//! ordinary files.

use crate::options::FsKind;
use crate::units::{GIB, KIB, MIB};
#[cfg(feature = "serde")]
use serde::Serialize;

/// Largest volume `--fs auto` formats as FAT32.
pub const AUTO_FAT32_MAX: u64 = 32 * GIB;

/// Why the planner chose the file system it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum FsRule {
    /// The caller named it.
    Explicit,
    /// `auto`: FAT32 up to 32 GiB.
    #[cfg_attr(feature = "serde", serde(rename = "auto_fat32_up_to_32gib"))]
    AutoFat32UpTo32GiB,
    /// `auto`: exFAT above 32 GiB.
    #[cfg_attr(feature = "serde", serde(rename = "auto_exfat_above_32gib"))]
    AutoExfatAbove32GiB,
    /// `auto`: the volume is too small for FAT32 at any cluster size, and for
    /// FAT12/16 too (practically never: FAT12 fits from a few KiB).
    #[cfg_attr(feature = "serde", serde(rename = "auto_exfat_too_small_for_fat32"))]
    AutoExfatTooSmallForFat32,
    /// `auto` or `--fs fat`: the volume is too small for FAT32 at any cluster
    /// size; FAT16 or FAT12, as the cluster count gives.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "auto_fat16_or_fat12_too_small_for_fat32")
    )]
    AutoSmallFat,
    /// `auto` (up to 32 GiB) or `--fs fat` with an explicit cluster size:
    /// the FAT width its cluster count gives.
    FatWidthFromClusterCount,
    /// `--fs fat`: FAT32, which fits this volume at some cluster size.
    FatFat32Fits,
    /// `--esp`: FAT32, which fits this volume at some cluster size (the
    /// FAT width the size allows).
    EspFat32Fits,
    /// The SD Association layout: the card's capacity class decides.
    SdCapacityClass,
    /// The SD Association layout with FAT32 asked for on an SDXC card
    /// (64 KiB clusters, as sdFormatLinux's option).
    SdFat32OnSdxc,
}

impl FsRule {
    /// A sentence for the summary.
    pub fn describe(self) -> &'static str {
        match self {
            FsRule::Explicit => "chosen by the caller",
            FsRule::AutoFat32UpTo32GiB => "auto: FAT32 for volumes up to 32 GiB",
            FsRule::AutoExfatAbove32GiB => "auto: exFAT for volumes above 32 GiB",
            FsRule::AutoExfatTooSmallForFat32 => {
                "auto: exFAT, the volume is too small for any FAT at any cluster size"
            }
            FsRule::AutoSmallFat => {
                "the volume is too small for FAT32 at any cluster size; the FAT width follows the cluster count (firmware and every OS read FAT12/16, unlike exFAT)"
            }
            FsRule::FatWidthFromClusterCount => {
                "the FAT width follows the cluster count of the chosen cluster size"
            }
            FsRule::FatFat32Fits => "the FAT width the size allows: FAT32 fits this volume",
            FsRule::EspFat32Fits => {
                "an EFI System Partition: the FAT width the size allows, and FAT32 fits this volume"
            }
            FsRule::SdCapacityClass => "the SD layout: the file system of the card's capacity class",
            FsRule::SdFat32OnSdxc => {
                "the SD layout with FAT32 asked for on an SDXC card: FAT32 instead of exFAT"
            }
        }
    }
}

/// Why the planner chose the cluster size it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ClusterRule {
    /// The caller named it.
    Explicit,
    /// The field-evidence table picked it.
    FieldEvidence,
    /// The field-evidence pick was not valid for this volume; this is the
    /// largest valid size below it.
    FieldEvidenceReduced,
    /// The field-evidence pick was not valid for this volume and no smaller
    /// size is; this is the smallest valid size above it.
    FieldEvidenceRaised,
    /// Chosen for the files the user means to store (`--data`): the largest
    /// size whose waste stays within the limit.
    FromData,
    /// The SD Association layout's cluster size for the capacity class.
    SdCapacityClass,
}

impl ClusterRule {
    /// A sentence for the summary, given the file system and volume size.
    #[cfg(feature = "alloc")]
    pub fn describe(self, fs: FsKind, volume_bytes: u64) -> alloc::string::String {
        use alloc::{format, string::ToString};
        match self {
            ClusterRule::Explicit => "chosen by the caller".to_string(),
            ClusterRule::FieldEvidence => {
                format!("auto: {}", auto_cluster_reason(fs, volume_bytes))
            }
            ClusterRule::FromData => "chosen for the files to be stored".to_string(),
            ClusterRule::SdCapacityClass => {
                "the SD layout: the cluster size of the card's capacity class".to_string()
            }
            ClusterRule::FieldEvidenceReduced => format!(
                "auto: {}, reduced to the largest size valid for this volume",
                auto_cluster_reason(fs, volume_bytes)
            ),
            ClusterRule::FieldEvidenceRaised => format!(
                "auto: {}, raised to the smallest size valid for this volume",
                auto_cluster_reason(fs, volume_bytes)
            ),
        }
    }
}

/// The file system `--fs auto` picks for a volume (before checking FAT32 fits).
pub fn auto_fs(volume_bytes: u64) -> FsKind {
    if volume_bytes <= AUTO_FAT32_MAX {
        FsKind::Fat32
    } else {
        FsKind::Exfat
    }
}

/// The cluster size `--cluster auto` picks (the field evidence of the module docs):
/// FAT32 4 KiB up to 8 GiB, 8 KiB up to 16 GiB, 16 KiB up to 32 GiB, 32 KiB above;
/// exFAT 4 KiB up to 256 MiB, 32 KiB above; FAT12 and FAT16 4 KiB.
pub fn auto_cluster(fs: FsKind, volume_bytes: u64) -> u64 {
    auto_cluster_rule(fs, volume_bytes).0
}

#[cfg(feature = "alloc")]
fn auto_cluster_reason(fs: FsKind, volume_bytes: u64) -> &'static str {
    auto_cluster_rule(fs, volume_bytes).1
}

/// The one table of the `--cluster auto` thresholds: the size and the
/// sentence that explains it.
fn auto_cluster_rule(fs: FsKind, volume_bytes: u64) -> (u64, &'static str) {
    match fs {
        FsKind::Fat16 | FsKind::Fat12 => (4 * KIB, "FAT12 and FAT16 get 4 KiB clusters"),
        FsKind::Fat32 => match volume_bytes {
            v if v <= 8 * GIB => (4 * KIB, "FAT32 up to 8 GiB gets 4 KiB clusters"),
            v if v <= 16 * GIB => (8 * KIB, "FAT32 up to 16 GiB gets 8 KiB clusters"),
            v if v <= 32 * GIB => (16 * KIB, "FAT32 up to 32 GiB gets 16 KiB clusters"),
            _ => (32 * KIB, "FAT32 above 32 GiB gets 32 KiB clusters"),
        },
        FsKind::Exfat if volume_bytes <= 256 * MIB => {
            (4 * KIB, "exFAT up to 256 MiB gets 4 KiB clusters")
        }
        FsKind::Exfat => (
            32 * KIB,
            "exFAT above 256 MiB gets 32 KiB clusters (field evidence: larger clusters only waste space)",
        ),
    }
}

/// The largest cluster in bytes the format allows at `sector`-byte sectors:
/// 32 MiB for exFAT, 128 sectors for FAT12/16/32.
pub fn max_cluster(fs: FsKind, sector: u32) -> u64 {
    match fs {
        FsKind::Exfat => crate::geometry::exfat::MAX_CLUSTER,
        _ => crate::geometry::fat::MAX_SECTORS_PER_CLUSTER * u64::from(sector),
    }
}

/// The largest cluster size every common system handles: FAT12/16/32 32 KiB
/// (old DOS, some BIOS and camera firmware fail above), exFAT 1 MiB (older
/// macOS does not mount larger). The planner warns above it and `advise`
/// recommends up to it.
pub fn compat_max_cluster(fs: FsKind) -> u64 {
    match fs {
        FsKind::Exfat => MIB,
        FsKind::Fat32 | FsKind::Fat16 | FsKind::Fat12 => 32 * KIB,
    }
}

/// The cluster size Windows' format would pick by default (KB140365), or
/// `None` where Windows refuses (FAT32 up to 32 MB and above 32 GB, exFAT
/// under 7 MB, FAT16 under 7 MB or from 4 GB, FAT12 on disks). FAT32: 512 B
/// up to 64 MB, 1 KiB up to 128 MB, 2 KiB up to 256 MB (Microsoft's MB being
/// MiB), 4 KiB below 8 GB, 8 KiB below 16 GB, 16 KiB up to 32 GB.
pub fn windows_default(fs: FsKind, volume_bytes: u64) -> Option<u64> {
    const GB: u64 = 1_000_000_000;
    const MB: u64 = 1_000_000;
    match fs {
        FsKind::Fat12 => None,
        FsKind::Fat16 => match volume_bytes {
            v if v < 7 * MIB => None,
            v if v <= 16 * MIB => Some(2 * KIB),
            v if v <= 32 * MIB => Some(512),
            v if v <= 64 * MIB => Some(KIB),
            v if v <= 128 * MIB => Some(2 * KIB),
            v if v <= 256 * MIB => Some(4 * KIB),
            v if v <= 512 * MIB => Some(8 * KIB),
            v if v <= GIB => Some(16 * KIB),
            v if v <= 2 * GIB => Some(32 * KIB),
            v if v < 4 * GIB => Some(64 * KIB),
            _ => None,
        },
        FsKind::Fat32 => match volume_bytes {
            v if v <= 32 * MIB => None,
            v if v <= 64 * MIB => Some(512),
            v if v <= 128 * MIB => Some(KIB),
            v if v <= 256 * MIB => Some(2 * KIB),
            v if v < 8 * GB => Some(4 * KIB),
            v if v < 16 * GB => Some(8 * KIB),
            v if v <= 32 * GB => Some(16 * KIB),
            _ => None,
        },
        FsKind::Exfat => match volume_bytes {
            v if v < 7 * MB => None,
            v if v <= 256 * MB => Some(4 * KIB),
            v if v <= 32 * GB => Some(32 * KIB),
            _ => Some(128 * KIB),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use std::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };

    #[test]
    fn auto_rules_follow_the_field_evidence() {
        assert_eq!(auto_cluster(FsKind::Fat32, 8 * GIB), 4 * KIB);
        assert_eq!(auto_cluster(FsKind::Fat32, 8 * GIB + 1), 8 * KIB);
        assert_eq!(auto_cluster(FsKind::Fat32, 16 * GIB), 8 * KIB);
        assert_eq!(auto_cluster(FsKind::Fat32, 32 * GIB), 16 * KIB);
        assert_eq!(auto_cluster(FsKind::Fat32, 64 * GIB), 32 * KIB);
        assert_eq!(auto_cluster(FsKind::Exfat, 256 * MIB), 4 * KIB);
        assert_eq!(auto_cluster(FsKind::Exfat, 128 * GIB), 32 * KIB);
        assert_eq!(auto_fs(32 * GIB), FsKind::Fat32);
        assert_eq!(auto_fs(32 * GIB + 512), FsKind::Exfat);
        assert_eq!(windows_default(FsKind::Exfat, 128 * GIB), Some(128 * KIB));
        assert_eq!(windows_default(FsKind::Fat32, 64 * GIB), None);
        assert_eq!(windows_default(FsKind::Fat16, 20 * MIB), Some(512));
        assert_eq!(windows_default(FsKind::Fat16, GIB), Some(16 * KIB));
        assert_eq!(auto_cluster(FsKind::Fat12, MIB), 4 * KIB);
    }

    #[test]
    fn windows_fat32_defaults_follow_kb140365_below_256_mib() {
        assert_eq!(windows_default(FsKind::Fat32, 32 * MIB), None);
        assert_eq!(windows_default(FsKind::Fat32, 40 * MIB), Some(512));
        assert_eq!(windows_default(FsKind::Fat32, 64 * MIB), Some(512));
        assert_eq!(windows_default(FsKind::Fat32, 100 * MIB), Some(KIB));
        assert_eq!(windows_default(FsKind::Fat32, 128 * MIB), Some(KIB));
        assert_eq!(windows_default(FsKind::Fat32, 200 * MIB), Some(2 * KIB));
        assert_eq!(windows_default(FsKind::Fat32, 256 * MIB), Some(2 * KIB));
        assert_eq!(windows_default(FsKind::Fat32, 257 * MIB), Some(4 * KIB));
        assert_eq!(windows_default(FsKind::Fat32, 4 * GIB), Some(4 * KIB));
    }
}
