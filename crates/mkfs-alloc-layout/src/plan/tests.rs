//! Unit tests of the planner.

use super::*;
use crate::geometry::Clusters;
use crate::options::{ClusterChoice, FsChoice, FsKind, Medium};
use crate::rules::{ClusterRule, FsRule};
use crate::units::{GIB, KIB, MIB};
#[allow(unused_imports)]
use std::{
    borrow::ToOwned,
    boxed::Box,
    format,
    string::{String, ToString},
    vec,
    vec::Vec,
};

fn opts(fs: FsKind, cluster: u64) -> FormatOptions {
    FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_5678)
}

#[test]
fn the_documented_fat32_error() {
    let e = plan(
        &opts(FsKind::Fat32, 32 * KIB),
        &Medium::whole(GIB, 512).expect("medium"),
    )
    .expect_err("invalid");
    let msg = e.to_string();
    assert!(
        msg.starts_with("1 GiB is too small for FAT32 at 32 KiB clusters ("),
        "{msg}"
    );
    // With the FAT and data region aligned to 1 MiB, 16 KiB clusters give too few.
    assert!(msg.ends_with("valid: 512 B..8 KiB, or use exFAT"), "{msg}");
}

#[test]
fn auto_picks_fat16_or_fat12_when_fat32_cannot_fit() {
    // The width follows the cluster count at 4 KiB clusters; in the gap
    // around 4,085 clusters the next smaller size is taken.
    for (size, fs, cluster) in [
        (16 * MIB, FsKind::Fat12, 4 * KIB),
        (18_320 * KIB, FsKind::Fat12, 4 * KIB), // 4,068 clusters: FAT12's last
        (18_336 * KIB, FsKind::Fat16, 2 * KIB), // 4,072 at 4 KiB: in the gap
        (18_464 * KIB, FsKind::Fat16, 4 * KIB), // 4,104: FAT16's first
        (32 * MIB, FsKind::Fat16, 4 * KIB),
        (2 * MIB, FsKind::Fat12, 4 * KIB),
    ] {
        for choice in [FsChoice::Auto, FsChoice::Fat] {
            let o = FormatOptions::new().fs(choice);
            let l = plan(&o, &Medium::whole(size, 512).expect("medium")).expect("valid");
            assert_eq!((l.fs, l.cluster_size.bytes()), (fs, cluster), "{size}");
            assert_eq!(l.fs_rule, FsRule::AutoSmallFat);
        }
    }
    // At 4096-byte sectors FAT32 needs 256.6 MiB: 200 MiB is FAT16.
    let l = plan(
        &FormatOptions::default(),
        &Medium::whole(200 * MIB, 4096).expect("medium"),
    )
    .expect("valid");
    assert_eq!(l.fs, FsKind::Fat16);
}

#[test]
fn esp_is_fat_of_the_width_the_size_allows_and_warns_when_small() {
    let esp = |fs, size, bps| {
        let o = FormatOptions::new().fs(fs).esp(true);
        plan(&o, &Medium::whole(size, bps).expect("medium"))
    };
    let l = esp(FsChoice::Auto, 64 * MIB, 512).expect("valid");
    assert_eq!(l.fs, FsKind::Fat32);
    assert!(
        l.warnings().any(|w| w.to_string().contains("100 MB")),
        "{:?}",
        l.warnings().collect::<Vec<_>>()
    );
    let l = esp(FsChoice::Auto, 8 * MIB, 512).expect("valid");
    assert_eq!(l.fs, FsKind::Fat12);
    let l = esp(FsChoice::Auto, 200 * MIB, 4096).expect("valid");
    assert_eq!(l.fs, FsKind::Fat16);
    assert!(
        l.warnings().any(|w| w.to_string().contains("260 MB")),
        "{:?}",
        l.warnings().collect::<Vec<_>>()
    );
    let l = esp(FsChoice::Auto, 512 * MIB, 512).expect("valid");
    assert!(
        !l.warnings().any(|w| w.to_string().contains("EFI")),
        "{:?}",
        l.warnings().collect::<Vec<_>>()
    );
    assert_eq!(
        esp(FsChoice::Fixed(FsKind::Exfat), GIB, 512),
        Err(PlanError::EspNotFat)
    );
    // Beyond 32 GiB --fs auto would give exFAT; an ESP stays FAT32.
    assert_eq!(
        esp(FsChoice::Auto, 64 * GIB, 512).map(|l| l.fs),
        Ok(FsKind::Fat32)
    );
}

#[test]
fn the_fat_width_follows_an_explicit_cluster_size() {
    for (cluster, fs) in [(512, FsKind::Fat32), (32 * KIB, FsKind::Fat16)] {
        let o = FormatOptions::new()
            .fs(FsChoice::Fat)
            .cluster(ClusterChoice::Bytes(cluster));
        let l = plan(&o, &Medium::whole(GIB, 512).expect("medium")).expect("valid");
        assert_eq!(l.fs, fs);
    }
    // 16 MiB at 4 KiB: about 3,580 clusters, FAT12 only.
    let e = plan(
        &opts(FsKind::Fat16, 4 * KIB),
        &Medium::whole(16 * MIB, 512).expect("medium"),
    )
    .expect_err("too few for FAT16");
    assert!(e.to_string().contains("valid: 512 B..2 KiB"), "{e}");
}

#[test]
fn auto_reduces_fat32_cluster_on_small_volumes() {
    let l = plan(
        &opts(FsKind::Fat32, 0),
        &Medium::whole(100 * MIB, 512).expect("medium"),
    );
    assert!(l.is_err());
    let o = FormatOptions::new().fs(FsChoice::Fixed(FsKind::Fat32));
    let l = plan(&o, &Medium::whole(100 * MIB, 512).expect("medium")).expect("valid");
    assert_eq!(l.cluster_rule, ClusterRule::FieldEvidenceReduced);
    assert_eq!(l.cluster_size.bytes(), KIB);
}

#[test]
fn regions_tile_the_volume() {
    for fs in [FsKind::Exfat, FsKind::Fat32] {
        let l = plan(
            &opts(fs, 4 * KIB),
            &Medium::whole(2 * GIB, 512).expect("medium"),
        )
        .expect("valid");
        let mut at = 0;
        for r in &l.regions() {
            assert_eq!(r.offset, at, "{r:?}");
            at += r.len;
        }
        assert_eq!(at, l.volume_bytes);
    }
}

#[test]
fn default_alignment() {
    assert_eq!(default_align(8 * GIB, 512), MIB);
    assert_eq!(default_align(16 * MIB, 512), MIB);
    assert_eq!(default_align(4 * MIB, 512), 256 * KIB);
    assert_eq!(default_align(1 << 20, 4096), 64 * KIB);
    assert_eq!(default_align(4096, 4096), 4096);
}

#[test]
fn the_sd_layout_checks_where_the_medium_puts_the_volume() {
    let sd = FormatOptions::new().sd(true);
    // The 64 GB card of exfatprogs PR #149: partition at sector 32,768.
    let card =
        |offset: u64, len: u64| Medium::partition(len * 512, 512, offset * 512).expect("medium");
    let l = plan(&sd, &card(32_768, 125_040_640)).expect("the card's layout");
    assert_eq!(
        (l.fs, l.cluster_size.bytes(), l.cluster_count.0),
        (FsKind::Exfat, 128 * KIB, 488_312)
    );
    assert_eq!(l.chs_geometry(), (255, 63));
    assert!(
        l.warnings().next().is_none(),
        "{:?}",
        l.warnings().collect::<Vec<_>>()
    );
    // The same card with the volume elsewhere is refused.
    let e = plan(&sd, &card(2048, 125_071_360)).expect_err("misplaced");
    assert!(
        matches!(
            e,
            PlanError::Sd(crate::geometry::sd::SdError::Placement { start: 32_768, .. })
        ),
        "{e}"
    );
    // Options the layout decides are refused by name.
    let o = sd.clone().cluster(ClusterChoice::Bytes(32 * KIB));
    let e = plan(&o, &card(32_768, 125_040_640)).expect_err("an explicit cluster size");
    assert!(
        matches!(
            e,
            PlanError::Sd(crate::geometry::sd::SdError::Conflict {
                option: crate::geometry::sd::SdConflict::Cluster
            })
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("leave the cluster size at its default"),
        "{e}"
    );
}

#[test]
fn label_case_and_bios_fields_only_where_asked() {
    let m = Medium::whole(1440 * KIB, 512).expect("medium");
    let mut o = opts(FsKind::Fat12, 512).label("cidata");
    let boot = |l: &Layout| {
        let mut b = vec![0u8; 512];
        let Geometry::Fat(g) = l.geometry() else {
            panic!("FAT")
        };
        crate::writer::fat::boot_sector(l, g, &mut b);
        (b[21], b[24], b[26], b[36], b[43..49].to_vec())
    };
    // The defaults: upper-cased label, a fixed disk's fields.
    let l = plan(&o, &m).expect("FAT12");
    assert_eq!(boot(&l), (0xF8, 63, 255, 0x80, b"CIDATA".to_vec()));
    assert_eq!(
        crate::writer::fat::fat_entry(FsKind::Fat12, l.media(), 0),
        0xFF8
    );
    o.keep_label_case = true;
    o.bios = Some(crate::BiosParams {
        media: 0xF0,
        sectors_per_track: 18,
        heads: 2,
        drive: 0,
    });
    let l = plan(&o, &m).expect("FAT12");
    assert_eq!(boot(&l), (0xF0, 18, 2, 0x00, b"cidata".to_vec()));
    assert_eq!(l.chs_geometry(), (2, 18));
    assert_eq!(
        crate::writer::fat::fat_entry(FsKind::Fat12, l.media(), 0),
        0xFF0
    );
}

#[test]
fn a_medium_holds_the_sector_size_rule_and_whole_sectors() {
    for bps in [0, 256, 3, 513, 8192] {
        assert_eq!(
            Medium::whole(MIB, bps),
            Err(PlanError::SectorSize(u64::from(bps))),
            "{bps}"
        );
    }
    assert_eq!(
        Medium::partition(MIB, 4096, 512),
        Err(PlanError::PartitionOffset {
            offset: 512,
            sector: 4096
        })
    );
    // The volume is rounded down to whole sectors; the offset is kept.
    let m = Medium::partition(MIB + 4095, 4096, 8192).expect("valid");
    assert_eq!(
        (
            m.volume_bytes(),
            m.sector_size().get(),
            m.partition_offset()
        ),
        (MIB, 4096, 8192)
    );
    // What the planner measures is what the medium says.
    let l = plan(&FormatOptions::new(), &m).expect("plans");
    assert_eq!(l.sector_size(), m.sector_size());
    assert_eq!(l.volume_bytes(), m.volume_bytes());
    assert_eq!(l.partition_offset(), m.partition_offset());
}

#[test]
fn the_layout_units_agree_with_its_bytes() {
    let l = plan(
        &opts(FsKind::Exfat, 32 * KIB),
        &Medium::whole(GIB, 512).expect("medium"),
    )
    .expect("plans");
    let (c, n, used) = (l.cluster_size(), l.cluster_count(), l.used_clusters());
    assert_eq!(c.bytes(), 32 * KIB);
    assert_eq!(c.shift(), 15);
    assert_eq!(l.usable_bytes(), c.bytes_of(Clusters(n.get() - used.get())));
    let first = crate::ClusterIndex::FIRST;
    assert_eq!(l.cluster_offset(first), l.data_offset());
    let next = first.after(Clusters(1)).expect("cluster 3");
    assert_eq!(l.cluster_offset(next), l.data_offset() + c.bytes());
    assert_eq!(crate::ClusterIndex::new(1), None);
    assert_eq!(first.after(Clusters(u32::MAX)), None);
    let heap_end = l.data_offset() + c.bytes_of(n);
    assert!(heap_end <= l.volume_bytes(), "{heap_end}");
}
