//! The SD layout's arithmetic against published cards and the specification's tables.

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

/// The factory-formatted 64 GB card of exfatprogs PR #149 (dump.exfat):
/// 512-byte sectors, 128 KiB clusters, volume 125,040,640 sectors from
/// sector 32,768, 488,312 clusters.
#[test]
fn matches_the_factory_formatted_64_gb_card() {
    let total = 32_768 + 125_040_640;
    let l = sd_layout(total, false).expect("SDXC");
    assert_eq!(l.fs, FsKind::Exfat);
    assert_eq!(l.sec_per_clus * SD_SECTOR, 128 * 1024);
    assert_eq!(l.part_start, 32_768);
    assert_eq!(l.part_sectors, 125_040_640);
    assert_eq!(
        (l.fat_offset, l.fat_sectors, l.data_offset),
        (16_384, 16_384, 32_768)
    );
    assert_eq!(l.cluster_count, 488_312);
    assert_eq!(l.erase_block_bytes, 8 << 20);
    assert_eq!(l.mbr_type, 0x07);
    assert_eq!((l.heads, l.sectors_per_track), (255, 63));
}

/// Every invariant of the SD layout for one card.
fn check(total: u64, force: bool) {
    let l = sd_layout(total, force).unwrap_or_else(|e| panic!("{total}: {e}"));
    let what = format!("{total} sectors, force {force}: {l:?}");
    let bu = l.class.bu;
    // The data region / cluster heap starts on a BU multiple of the card.
    assert_eq!((l.part_start + l.data_offset) % bu, 0, "{what}");
    assert!(
        l.part_start + l.data_offset + l.cluster_count * l.sec_per_clus <= total,
        "{what}"
    );
    assert_eq!(l.part_start + l.part_sectors, total, "{what}");
    match l.fs {
        FsKind::Fat12 | FsKind::Fat16 => {
            let bits = if l.fs == FsKind::Fat12 { 12 } else { 16 };
            assert_eq!((l.rsvd, l.root_sectors), (1, 32), "{what}");
            assert_eq!(l.data_offset, 1 + 2 * l.fat_sectors + 32, "{what}");
            assert!(
                l.fat_sectors * 512 * 8 / bits >= l.cluster_count + 2,
                "{what}"
            );

            // The width the cluster count gives is the class's.
            assert_eq!(FsKind::fat_width(l.cluster_count), l.fs, "{what}");
        }
        FsKind::Fat32 => {
            assert_eq!(l.part_start, bu, "{what}");
            assert!((9..=u64::from(u16::MAX)).contains(&l.rsvd), "{what}");
            assert!(l.fat_sectors * 512 / 4 >= l.cluster_count + 2, "{what}");
            assert_eq!(FsKind::fat_width(l.cluster_count), FsKind::Fat32, "{what}");
            assert!(l.sec_per_clus <= 128, "{what}");
        }
        FsKind::Exfat => {
            assert_eq!(
                (l.part_start, l.fat_offset, l.fat_sectors),
                (bu, bu / 2, bu / 2)
            );
            assert!(l.fat_sectors * 512 / 4 >= l.cluster_count + 2, "{what}");
        }
    }
}

/// At every capacity class boundary (the last card of a class and the
/// first of the next) and a few odd sizes in between.
#[test]
fn every_class_boundary() {
    for c in CLASSES {
        for total in [c.max_sectors - 1, c.max_sectors, c.max_sectors * 3 / 4 + 17] {
            check(total, false);
            if c.fs == FsKind::Exfat {
                check(total, true);
            }
        }
        if c.max_sectors < MAX_SECTORS {
            check(c.max_sectors + 1, false);
        }
    }
    // A card with no room for one cluster after its file-system area.
    assert_eq!(sd_layout(64, false), Err(SdError::TooSmall { sectors: 64 }));
    assert!(sd_layout(128, false).is_ok_and(|l| l.cluster_count >= 1));
    assert_eq!(
        sd_layout(MAX_SECTORS + 1, false),
        Err(SdError::TooLarge {
            sectors: MAX_SECTORS + 1
        })
    );
}

#[test]
fn classes_pick_the_tabled_file_system_and_cluster() {
    let gib = 1u64 << 21; // sectors
    let fs = |total| sd_layout(total, false).map(|l| (l.fs, l.sec_per_clus * 512));
    assert_eq!(fs(8 << 11), Ok((FsKind::Fat12, 8 * 1024)));
    assert_eq!(fs(60 << 11), Ok((FsKind::Fat12, 16 * 1024)));
    // Exactly 64 MiB: 4,092 clusters of 16 KiB, which every driver reads
    // as FAT16; the table's FAT12 would be misread, so FAT16 it is.
    assert_eq!(fs(64 << 11), Ok((FsKind::Fat16, 16 * 1024)));
    assert_eq!(fs(256 << 11), Ok((FsKind::Fat16, 16 * 1024)));
    assert_eq!(fs(gib), Ok((FsKind::Fat16, 16 * 1024)));
    assert_eq!(fs(2 * gib), Ok((FsKind::Fat16, 32 * 1024)));
    assert_eq!(fs(32 * gib), Ok((FsKind::Fat32, 32 * 1024)));
    assert_eq!(fs(128 * gib), Ok((FsKind::Exfat, 128 * 1024)));
    assert_eq!(fs(512 * gib), Ok((FsKind::Exfat, 256 * 1024)));
    assert_eq!(fs(2048 * gib), Ok((FsKind::Exfat, 512 * 1024)));
    // sdFormatLinux's option: FAT32 on SDXC, 64 KiB clusters.
    let l = sd_layout(64 * gib, true).expect("forced");
    assert_eq!(
        (l.fs, l.sec_per_clus * 512, l.part_start),
        (FsKind::Fat32, 64 * 1024, 32_768)
    );
    assert_eq!(l.mbr_type, 0x0C);
}

#[test]
fn mbr_types_and_chs_geometry() {
    let mib = 1u64 << 11;
    let l = sd_layout(2 * mib, false).expect("2 MiB");
    assert_eq!((l.mbr_type, l.heads, l.sectors_per_track), (0x01, 2, 16));
    let l = sd_layout(30 * mib, false).expect("30 MiB");
    assert_eq!((l.heads, l.sectors_per_track), (4, 32));
    let l = sd_layout(100 * mib, false).expect("100 MiB FAT16");
    assert_eq!((l.mbr_type, l.heads), (0x06, 8));
    let l = sd_layout(1000 * mib, false).expect("1000 MiB");
    assert_eq!((l.heads, l.sectors_per_track), (32, 63));
    // FAT32: 0x0B up to the CHS limit, 0x0C above.
    assert_eq!(sd_layout(CHS_LIMIT, false).map(|l| l.mbr_type), Ok(0x0B));
    assert_eq!(
        sd_layout(CHS_LIMIT + 1, false).map(|l| l.mbr_type),
        Ok(0x0C)
    );
    assert_eq!(sd_layout(4000 * mib, false).map(|l| l.heads), Ok(128));
}

#[test]
fn the_summary_names_class_boundary_unit_chs_and_erase_block() {
    let sdsc = sd_layout(256 * 2048, false).expect("SDSC");
    assert_eq!(
        sdsc.summary(),
        "SD Association, SDSC card of 256 MiB: boundary unit 32 KiB, data region on a \
         boundary unit, CHS 16 heads x 32 sectors"
    );
    let sdxc = sd_layout(64 * 1024 * 2048, false).expect("SDXC");
    assert_eq!(
        sdxc.summary(),
        "SD Association, SDXC card of 64 GiB: boundary unit 16 MiB, data region on a \
         boundary unit, CHS 255 heads x 63 sectors, Flash Parameters erase block 8 MiB"
    );
}

#[test]
fn regions_are_named_as_a_plan_lists_them() {
    use crate::RegionKind;
    assert_eq!(
        RegionKind::BootRegion.name(0, FsKind::Exfat),
        "main boot region"
    );
    assert_eq!(
        RegionKind::BootRegion.name(0, FsKind::Fat32),
        "reserved sectors (boot, FSInfo, backups)"
    );
    assert_eq!(
        RegionKind::BootRegion.name(0, FsKind::Fat16),
        "reserved sectors (boot sector)"
    );
    assert_eq!(RegionKind::Fat.name(1, FsKind::Fat16), "FAT #2");
    assert_eq!(
        RegionKind::HeapPadding.name(0, FsKind::Exfat),
        "alignment padding"
    );
}
