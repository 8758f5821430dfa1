//! Tests of the FAT geometry and sectors.

use super::*;
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

fn at(start: u64, align: u64) -> Placement {
    Placement {
        start,
        align,
        root_entries: DEFAULT_ROOT_ENTRIES,
        num_fats: NUM_FATS,
    }
}

#[test]
fn one_gib_at_32k_is_not_fat32() {
    let e = geometry(FsKind::Fat32, GIB, 512, 32 * KIB, at(0, MIB)).expect_err("too few");
    match e {
        PlanError::TooFewClusters { clusters, .. } => assert_eq!(clusters, 32_704),
        other => panic!("unexpected {other}"),
    }
    // ... but it is a FAT16.
    let g = geometry(FsKind::Fat16, GIB, 512, 32 * KIB, at(0, MIB)).expect("FAT16");
    assert_eq!(FsKind::fat_width(u64::from(g.cluster_count)), FsKind::Fat16);
}

#[test]
fn fat_and_data_region_are_aligned() {
    for start in [0, MIB, 63 * 512] {
        let g = geometry(FsKind::Fat32, 8 * GIB, 512, 4 * KIB, at(start, MIB)).expect("valid");
        assert_eq!((start + g.data_sector() * 512) % MIB, 0);
        assert_eq!((start + u64::from(g.rsvd) * 512) % MIB, 0);
        assert!(u64::from(g.fat_sz) * 512 / 4 >= u64::from(g.cluster_count) + 2);
    }
}

#[test]
fn width_ranges_keep_a_margin_and_do_not_overlap() {
    assert_eq!(cluster_range(FsKind::Fat12), (1, 4_068));
    assert_eq!(cluster_range(FsKind::Fat16), (4_101, 65_508));
    assert_eq!(cluster_range(FsKind::Fat32), (65_541, 0x0FFF_FFF5));
    assert_eq!(cluster_range(FsKind::Exfat), (1, 0xFFFF_FFF5));
    assert_eq!(FsKind::fat_width(4_084), FsKind::Fat12);
    assert_eq!(FsKind::fat_width(4_085), FsKind::Fat16);
    assert_eq!(FsKind::fat_width(65_524), FsKind::Fat16);
    assert_eq!(FsKind::fat_width(65_525), FsKind::Fat32);
}

#[test]
fn min_fat_size_is_exact() {
    // Brute force over small volumes: the smallest FAT that covers its clusters.
    for bits in [12, 16, 32] {
        for bps in [512u64, 4096] {
            for spc in [1u64, 4, 64] {
                for avail in (2..3000).step_by(7) {
                    let sector =
                        SectorSize::new(u32::try_from(bps).expect("small")).expect("not 0");
                    let f = min_fat_sectors(bits, Sectors(avail), Sectors(spc), sector, 2).0;
                    let fits = |f: u64| f * bps * 8 / bits >= avail.saturating_sub(2 * f) / spc + 2;
                    assert!(fits(f), "{bits} {bps} {spc} {avail}: {f} too small");
                    assert!(
                        f == 1 || !fits(f - 1),
                        "{bits} {bps} {spc} {avail}: {f} not minimal"
                    );
                }
            }
        }
    }
}

#[test]
fn small_fat_regions_are_aligned_for_any_root_size() {
    for fs in [FsKind::Fat12, FsKind::Fat16] {
        for (size, cluster) in [(4 * MIB, 2 * KIB), (64 * MIB, 4 * KIB), (2 * MIB, 512)] {
            for start in [0, MIB, 63 * 512, 2048 * 512 + 512] {
                for align in [512, 4 * KIB, 64 * KIB, MIB] {
                    for root in [1, 16, 17, 224, 512, 513, 4096] {
                        let p = Placement {
                            start,
                            align,
                            root_entries: root,
                            num_fats: NUM_FATS,
                        };
                        let Ok(g) = geometry(fs, size, 512, cluster, p) else {
                            continue;
                        };
                        let what = format!("{fs} {size} {cluster} {start} {align} {root}");
                        assert_eq!((start + u64::from(g.rsvd) * 512) % align, 0, "{what}");
                        assert_eq!((start + g.data_sector() * 512) % align, 0, "{what}");
                        assert!(u32::from(g.root_entries) >= root, "{what}");
                        assert_eq!(u64::from(g.root_entries) * 32 % 512, 0, "{what}");
                        let cc = u64::from(g.cluster_count);
                        assert_eq!(FsKind::fat_width(cc), fs, "{what}");
                        assert!(
                            u64::from(g.fat_sz) * 512 * 8 / fs.entry_bits() >= cc + 2,
                            "{what}"
                        );
                        assert!(
                            g.data_sector() + cc * u64::from(g.sec_per_clus)
                                <= u64::from(g.tot_sec)
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_floppy_sized_fat12() {
    // 1.44 MB, 512-byte clusters, 224 root entries, no alignment: the
    // classic floppy numbers (9-sector FATs, 14 root sectors, 2847 clusters).
    let p = Placement {
        start: 0,
        align: 512,
        root_entries: 224,
        num_fats: NUM_FATS,
    };
    let g = geometry(FsKind::Fat12, 2880 * 512, 512, 512, p).expect("valid");
    assert_eq!((g.rsvd, g.fat_sz, g.root_sectors()), (1, 9, 14));
    assert_eq!(g.cluster_count, 2847);
}
