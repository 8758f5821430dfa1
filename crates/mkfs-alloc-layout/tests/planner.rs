//! Planner sweep and property tests: every plan either fails with a reason
//! or satisfies every invariant of its file system.

use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::units::{KIB, MIB, TIB};
use mkfs_alloc_layout::{
    plan, ClusterChoice, FormatOptions, FsChoice, FsType, Layout, Medium, PlanError,
};
use proptest::prelude::*;

const SECTORS: [u32; 4] = [512, 1024, 2048, 4096];

fn opts(fs: FsType, cluster: u64, align: Option<u64>) -> FormatOptions {
    FormatOptions {
        fs: FsChoice::Fixed(fs),
        cluster: ClusterChoice::Bytes(cluster),
        serial: Some(1),
        align,
        ..FormatOptions::default()
    }
}

/// Checks every invariant of a layout; returns a description of the first
/// violation.
fn check(l: &Layout, m: &Medium) -> Result<(), String> {
    let bps = u64::from(l.sector_size);
    let po = m.partition_offset;
    // Regions tile the volume, in order, and stay inside it.
    let mut at = 0;
    for r in &l.regions {
        if r.offset != at {
            return Err(format!("region {r:?} does not start at {at}"));
        }
        at += r.len;
    }
    if at != l.volume_bytes || l.volume_bytes > m.volume_bytes {
        return Err(format!(
            "regions end at {at}, volume {} medium {}",
            l.volume_bytes, m.volume_bytes
        ));
    }
    if (po + l.fat_offset) % l.align != 0 || (po + l.data_offset) % l.align != 0 {
        return Err(format!(
            "FAT {} / data {} not aligned to {}",
            l.fat_offset, l.data_offset, l.align
        ));
    }
    if l.used_clusters >= l.cluster_count {
        return Err("no free cluster".into());
    }
    match &l.geometry {
        Geometry::Exfat(g) => {
            let cc = u64::from(g.cluster_count);
            if g.fat_offset < 24 {
                return Err("FatOffset < 24".into());
            }
            if u64::from(g.heap_offset) < u64::from(g.fat_offset) + u64::from(g.fat_length) {
                return Err("heap overlaps FAT".into());
            }
            if u64::from(g.fat_length) * bps < (cc + 2) * 4 {
                return Err("FAT too small".into());
            }
            if cc > 0xFFFF_FFF5 || l.cluster_size > 32 * MIB || l.cluster_size < bps {
                return Err("cluster count or size out of range".into());
            }
            if u64::from(g.heap_offset) * bps + cc * l.cluster_size > l.volume_bytes {
                return Err("heap past the end".into());
            }
            if g.bitmap_bytes != cc.div_ceil(8) {
                return Err("bitmap length".into());
            }
            if l.volume_bytes < MIB {
                return Err("volume under 1 MiB".into());
            }
        }
        Geometry::Fat32(g) => {
            let cc = u64::from(g.cluster_count);
            if !(65_525..=0x0FFF_FFF5).contains(&cc) {
                return Err(format!("cluster count {cc}"));
            }
            if u64::from(g.fat_sz) * bps / 4 < cc + 2 {
                return Err("FAT too small".into());
            }
            if g.rsvd < 32 || g.sec_per_clus == 0 || u64::from(g.sec_per_clus) > 128 {
                return Err("reserved or sectors per cluster out of range".into());
            }
            if (g.data_sector() + cc * u64::from(g.sec_per_clus)) * bps > l.volume_bytes {
                return Err("data past the end".into());
            }
            if l.volume_bytes / bps > u64::from(u32::MAX) {
                return Err("TotSec32 overflow".into());
            }
        }
    }
    Ok(())
}

/// An error must explain itself, and its list of valid sizes must be right.
fn check_error(e: &PlanError, fs: FsType, m: &Medium) -> Result<(), String> {
    let msg = e.to_string();
    if msg.len() < 20 {
        return Err(format!("terse error {msg:?}"));
    }
    let valid = match e {
        PlanError::TooFewClusters { valid, .. } | PlanError::TooManyClusters { valid, .. } => valid,
        _ => return Ok(()),
    };
    for &c in valid {
        let l = plan(&opts(fs, c, None), m).map_err(|e| format!("listed-valid {c} fails: {e}"))?;
        check(&l, m)?;
    }
    Ok(())
}

fn sweep_sizes() -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = MIB;
    while s <= 16 * TIB {
        v.push(s);
        v.push(s + s / 2 + 3 * 512);
        s *= 2;
    }
    v
}

#[test]
fn sweep_every_size_cluster_and_sector() {
    let mut ok = 0;
    let mut rejected = 0;
    for fs in [FsType::Exfat, FsType::Fat32] {
        for &bps in &SECTORS {
            let max = match fs {
                FsType::Exfat => 32 * MIB,
                FsType::Fat32 => 128 * u64::from(bps),
            };
            for &size in &sweep_sizes() {
                let m = Medium::whole(size, bps);
                let mut c = u64::from(bps);
                while c <= max {
                    match plan(&opts(fs, c, None), &m) {
                        Ok(l) => {
                            check(&l, &m).unwrap_or_else(|e| panic!("{fs} {size} {c} {bps}: {e}"));
                            ok += 1;
                        }
                        Err(e) => {
                            check_error(&e, fs, &m)
                                .unwrap_or_else(|err| panic!("{fs} {size} {c} {bps}: {err}"));
                            rejected += 1;
                        }
                    }
                    c *= 2;
                }
            }
        }
    }
    // The sweep must exercise both outcomes substantially.
    assert!(ok > 2000 && rejected > 500, "ok {ok} rejected {rejected}");
}

#[test]
fn documented_fat32_size_limits_hold() {
    // Reference B.2 (512-byte sectors): 8 KiB clusters reach 2 TiB (TotSec32),
    // 512 B clusters stop at about 130 GiB (cluster count).
    let m = Medium::whole(2 * TIB - 512, 512);
    assert!(plan(&opts(FsType::Fat32, 8 * KIB, None), &m).is_ok());
    let e = plan(&opts(FsType::Fat32, 512, None), &m).expect_err("too many clusters");
    assert!(matches!(e, PlanError::TooManyClusters { .. }), "{e}");
    // 4 TiB at 512-byte sectors overflows TotSec32; at 4096 it is fine.
    let e = plan(
        &opts(FsType::Fat32, 32 * KIB, None),
        &Medium::whole(4 * TIB, 512),
    )
    .expect_err("too large");
    assert!(
        e.to_string().contains("use exFAT, or 4096-byte sectors"),
        "{e}"
    );
    assert!(plan(
        &opts(FsType::Fat32, 32 * KIB, None),
        &Medium::whole(4 * TIB, 4096)
    )
    .is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_media_plan_or_explain(
        exfat in any::<bool>(),
        size in (1u64 << 20)..(1u64 << 44),
        bps_i in 0usize..4,
        cluster_shift in 9u32..26,
        offset_sectors in 0u64..(1 << 22),
        align_shift in prop::option::of(9u32..27),
    ) {
        let fs = if exfat { FsType::Exfat } else { FsType::Fat32 };
        let bps = SECTORS[bps_i];
        let m = Medium { volume_bytes: size, sector_size: bps, partition_offset: offset_sectors * u64::from(bps) };
        match plan(&opts(fs, 1u64 << cluster_shift, align_shift.map(|s| 1u64 << s)), &m) {
            Ok(l) => prop_assert_eq!(check(&l, &m), Ok(())),
            Err(e) => prop_assert!(e.to_string().len() > 20, "{}", e),
        }
    }

    #[test]
    fn auto_always_plans_something_from_2_mib(size in (2u64 << 20)..(1u64 << 45), bps_i in 0usize..4) {
        let m = Medium::whole(size, SECTORS[bps_i]);
        let l = plan(&FormatOptions::default(), &m);
        prop_assert!(l.is_ok(), "{:?}", l.err().map(|e| e.to_string()));
        if let Ok(l) = l {
            prop_assert_eq!(check(&l, &m), Ok(()));
        }
    }
}
