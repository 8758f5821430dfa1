//! The advice: rows from the planner, waste, fits, notes and the
//! recommendation rule.

use mkfs_alloc_advise::{
    advise, advise_with, recommend_for_data, recommend_for_format, AdviseError, FsNote,
    FsSelection, Policy, RecommendationRule, RowNote, ScanResult,
};
use mkfs_alloc_layout::units::{GIB, KIB, MIB};
use mkfs_alloc_layout::{
    plan, valid_cluster_sizes, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium,
};

fn files(sizes: Vec<u64>) -> ScanResult {
    let apparent_bytes = sizes.iter().sum();
    ScanResult {
        file_sizes: sizes,
        apparent_bytes,
        ..ScanResult::default()
    }
}

#[test]
fn rows_are_the_planners_numbers() {
    let a = advise(128 * GIB, 512, FsSelection::Both, None, 1.0).expect("advice");
    assert_eq!(a.per_fs.len(), 2);
    for f in &a.per_fs {
        let medium = Medium::whole(128 * GIB, 512).expect("medium");
        let valid = valid_cluster_sizes(f.fs, &medium, MIB);
        let sizes: Vec<u64> = f.rows.iter().map(|r| r.cluster_size).collect();
        assert_eq!(sizes, valid.to_vec(), "{}", f.fs);
        for r in &f.rows {
            let l = plan(
                &FormatOptions::new()
                    .fs(FsChoice::Fixed(f.fs))
                    .cluster(ClusterChoice::Bytes(r.cluster_size))
                    .label("LABEL"),
                &medium,
            )
            .expect("plan");
            assert_eq!(r.cluster_count, l.cluster_count().get());
            assert_eq!(r.overhead_bytes, l.overhead_bytes());
            assert_eq!(r.usable_bytes, l.usable_bytes());
            assert_eq!(r.overhead.total(), r.overhead_bytes);
            assert!(r.data_bytes_on_disk.is_none() && r.fits.is_none());
        }
    }
}

#[test]
fn without_data_the_auto_rule_and_the_peers() {
    let a = advise(128 * GIB, 512, FsSelection::Exfat, None, 1.0).expect("advice");
    let e = &a.per_fs[0];
    let r = e.recommendation.as_ref().expect("recommendation");
    assert_eq!(r.cluster_size, 32 * KIB);
    assert_eq!(r.rule, RecommendationRule::AutoNoData);
    assert_eq!(e.windows_default, Some(128 * KIB));
    assert_eq!(e.sd_recommended, Some(128 * KIB));
    assert_eq!(e.mkfs_default, 128 * KIB);
    let row = |c: u64| e.rows.iter().find(|r| r.cluster_size == c).expect("row");
    assert!(row(128 * KIB).notes.contains(&RowNote::WindowsDefault));
    assert!(row(128 * KIB).notes.contains(&RowNote::MkfsDefault));
    assert!(row(32 * KIB).notes.contains(&RowNote::Recommended));
    assert!(row(32 * KIB).notes.contains(&RowNote::AutoDefault));
    assert!(row(2 * MIB).notes.contains(&RowNote::AboveExfatCompat));
    assert!(row(4 * KIB).notes.contains(&RowNote::ExfatManyClusters));

    let a = advise(64 * GIB, 512, FsSelection::Fat32, None, 1.0).expect("advice");
    let f = &a.per_fs[0];
    assert!(f.notes.contains(&FsNote::Fat32Above32Gb));
    assert_eq!(f.windows_default, None);
    let r64 = f
        .rows
        .iter()
        .find(|r| r.cluster_size == 64 * KIB)
        .expect("64K");
    assert!(r64.notes.contains(&RowNote::AboveFat32Compat));
}

#[test]
fn the_field_evidence_case_recommends_small_clusters() {
    // Many files of a few hundred KiB, as on the measured 128 GB stick (README):
    // 512 KiB clusters waste a lot, 32 KiB little.
    let mut sizes = Vec::new();
    let mut x: u64 = 12345;
    for _ in 0..46_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        sizes.push(100 * KIB + (x >> 33) % (2 * MIB));
    }
    let data = files(sizes);
    let a = advise(128 * GIB, 512, FsSelection::Exfat, Some(&data), 1.0).expect("advice");
    let e = &a.per_fs[0];
    let waste = |c: u64| {
        e.rows
            .iter()
            .find(|r| r.cluster_size == c)
            .and_then(|r| r.waste_percent)
            .expect("waste")
    };
    assert!(waste(512 * KIB) > 10.0, "{}", waste(512 * KIB));
    assert!(waste(32 * KIB) < 2.0, "{}", waste(32 * KIB));
    // Waste never shrinks as clusters grow.
    let w: Vec<f64> = e.rows.iter().filter_map(|r| r.waste_percent).collect();
    assert!(w.windows(2).all(|p| p[0] <= p[1]), "{w:?}");
    let r = e.recommendation.as_ref().expect("recommendation");
    assert_eq!(r.rule, RecommendationRule::WithinMaxWaste);
    assert!(waste(r.cluster_size) <= 1.0);
    assert!(waste(r.cluster_size * 2) > 1.0);
    assert!(r.cluster_size >= 4 * KIB && r.cluster_size <= 32 * KIB);
    // A looser limit allows larger clusters.
    let a = advise(128 * GIB, 512, FsSelection::Exfat, Some(&data), 20.0).expect("advice");
    let loose = a.per_fs[0]
        .recommendation
        .as_ref()
        .expect("rec")
        .cluster_size;
    assert!(loose > r.cluster_size);
}

#[test]
fn large_files_get_the_compatibility_ceiling() {
    let data = files(vec![64 * MIB; 100]);
    let a = advise(64 * GIB, 512, FsSelection::Both, Some(&data), 1.0).expect("advice");
    let rec = |i: usize| a.per_fs[i].recommendation.clone().expect("rec");
    assert_eq!(rec(0).cluster_size, MIB, "exFAT: {}", rec(0).reason);
    assert_eq!(rec(1).cluster_size, 32 * KIB, "FAT32: {}", rec(1).reason);
    assert_eq!(rec(0).rule, RecommendationRule::WithinMaxWaste);
}

#[test]
fn small_files_get_4k_not_less() {
    let data = files(vec![10_000; 1000]);
    let a = advise(8 * GIB, 512, FsSelection::Both, Some(&data), 1.0).expect("advice");
    for f in &a.per_fs {
        let r = f.recommendation.as_ref().expect("rec");
        assert_eq!(r.cluster_size, 4 * KIB, "{}: {}", f.fs, r.reason);
        assert_eq!(r.rule, RecommendationRule::LeastWaste);
        let row = f
            .rows
            .iter()
            .find(|r| r.cluster_size == 4 * KIB)
            .expect("4K");
        assert_eq!(row.file_bytes_on_disk, Some(1000 * 12 * KIB));
        assert_eq!(row.fits, Some(true));
    }
}

#[test]
fn small_fat32_volumes_go_below_4k() {
    // 100 MiB: FAT32 is valid only with clusters under 4 KiB.
    let data = files(vec![MIB; 10]);
    let a = advise(100 * MIB, 512, FsSelection::Fat32, Some(&data), 1.0).expect("advice");
    let f = &a.per_fs[0];
    let largest = f.rows.last().expect("rows").cluster_size;
    assert!(largest < 4 * KIB);
    let r = f.recommendation.as_ref().expect("rec");
    assert_eq!(r.cluster_size, largest);
    assert!(r.reason.contains("not valid"), "{}", r.reason);
}

#[test]
fn data_that_does_not_fit() {
    let data = files(vec![100 * MIB]);
    let a = advise(16 * MIB, 512, FsSelection::Both, Some(&data), 1.0).expect("advice");
    let e = &a.per_fs[0];
    assert!(e.rows.iter().all(|r| r.fits == Some(false)));
    // Nothing fits: no recommendation, and a note that says so.
    assert!(e.recommendation.is_none());
    let note = e
        .notes
        .iter()
        .find(|n| matches!(n, FsNote::DoesNotFit { .. }))
        .expect("a does-not-fit note");
    let text = note.describe(FsKind::Exfat);
    assert!(text.contains("does not fit"), "{text}");
    // FAT32 cannot be laid out on 16 MiB at all.
    let f = &a.per_fs[1];
    assert!(f.rows.is_empty());
    assert!(f.recommendation.is_none());
    assert!(f.notes.contains(&FsNote::NoValidCluster));
}

#[test]
fn fitting_only_below_the_preferred_sizes() {
    // 2,000 files of 2,049 bytes on 8 MiB of exFAT: 8 MB at 4 KiB clusters
    // (no fit), 6 MB at 1 KiB (fits).
    let data = files(vec![2049; 2000]);
    let a = advise(8 * MIB, 512, FsSelection::Exfat, Some(&data), 1.0).expect("advice");
    let e = &a.per_fs[0];
    let r = e.recommendation.as_ref().expect("rec");
    assert_eq!(r.rule, RecommendationRule::OnlyFitting, "{}", r.reason);
    assert_eq!(r.cluster_size, KIB);
    let fits: Vec<(u64, Option<bool>)> = e.rows.iter().map(|r| (r.cluster_size, r.fits)).collect();
    assert_eq!(
        fits[..3],
        [(512, Some(true)), (KIB, Some(true)), (2 * KIB, Some(false))]
    );
}

#[test]
fn fat32_file_limit() {
    let data = files(vec![5 * GIB, GIB, 4 * GIB - 1]);
    let a = advise(64 * GIB, 512, FsSelection::Both, Some(&data), 1.0).expect("advice");
    assert_eq!(a.per_fs[0].files_over_4gib, None);
    let f = &a.per_fs[1];
    assert_eq!(f.files_over_4gib, Some(1));
    assert!(f.notes.contains(&FsNote::FilesOver4Gib { count: 1 }));
    // FAT32 cannot store the data at any cluster size: nothing recommended.
    assert!(f.recommendation.is_none());
    assert!(FsNote::FilesOver4Gib { count: 1 }
        .describe(FsKind::Fat32)
        .contains("use exFAT"));
    // The formatter's `--data` is refused with the reason.
    let medium = Medium::whole(64 * GIB, 512).expect("medium");
    let e = recommend_for_data(FsKind::Fat32, &medium, &data, 1.0);
    assert!(e.is_none());
    let fixed = FormatOptions::new().fs(FsChoice::Fixed(FsKind::Fat32));
    let e = recommend_for_format(&fixed, &medium, &data, 1.0).expect_err("refused");
    assert!(
        matches!(e, AdviseError::FilesTooLarge { count: 1, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("4 GiB - 1"), "{e}");
}

/// 100 GiB of files onto 16 GiB of FAT32 fits at no size. Before: 64 KiB
/// was recommended (beyond FAT32's compatibility limit of 32 KiB) with rule
/// "does not fit", and `--data` formatted with it.
#[test]
fn never_beyond_the_compatibility_limit_and_say_when_nothing_fits() {
    let data = files(vec![4 * GIB - 1; 25]);
    let a = advise(16 * GIB, 512, FsSelection::Fat32, Some(&data), 1.0).expect("advice");
    let f = &a.per_fs[0];
    assert!(f.recommendation.is_none(), "{:?}", f.recommendation);
    assert!(f
        .rows
        .iter()
        .all(|r| !r.notes.contains(&RowNote::Recommended)));
    let note = f
        .notes
        .iter()
        .find_map(|n| match n {
            FsNote::DoesNotFit { cluster_size, .. } => Some(*cluster_size),
            _ => None,
        })
        .expect("does-not-fit note");
    assert!(note <= 32 * KIB, "closest size {note} within the limit");
    let medium = Medium::whole(16 * GIB, 512).expect("medium");
    let fixed = FormatOptions::new().fs(FsChoice::Fixed(FsKind::Fat32));
    let e = recommend_for_format(&fixed, &medium, &data, 1.0).expect_err("refused");
    assert!(matches!(e, AdviseError::DoesNotFit { .. }), "{e}");
    assert!(e.to_string().contains("does not fit"), "{e}");

    // Data that fits only beyond the limit: recommended only when asked.
    // 16 GiB FAT32: usable grows with the cluster size (smaller FAT).
    let row = |c: u64| f.rows.iter().find(|r| r.cluster_size == c).expect("row");
    let usable_32k = row(32 * KIB).usable_bytes;
    let usable_64k = row(64 * KIB).usable_bytes;
    assert!(usable_64k > usable_32k);
    // 1 GiB files plus one filler, all in 64 KiB multiples, one cluster short
    // of filling the 64 KiB layout.
    let total = (usable_64k / (64 * KIB) - 1) * 64 * KIB;
    assert!(total > usable_32k);
    let mut sizes = vec![GIB; (total / GIB) as usize];
    sizes.push(total % GIB);
    let between = files(sizes);
    let a = advise(16 * GIB, 512, FsSelection::Fat32, Some(&between), 1.0).expect("advice");
    let f = &a.per_fs[0];
    assert!(f.recommendation.is_none());
    assert!(f.notes.iter().any(|n| matches!(
        n,
        FsNote::DoesNotFit {
            fits_beyond_compat: Some(c),
            ..
        } if *c == 64 * KIB
    )));
    let asked = Policy {
        beyond_compat: true,
        ..Policy::default()
    };
    let a = advise_with(16 * GIB, 512, FsSelection::Fat32, Some(&between), &asked).expect("advice");
    let r = a.per_fs[0].recommendation.as_ref().expect("rec when asked");
    assert_eq!(r.cluster_size, 64 * KIB);
}

#[test]
fn empty_data_falls_back_to_auto() {
    let data = files(vec![0; 10]);
    let a = advise(8 * GIB, 512, FsSelection::Exfat, Some(&data), 1.0).expect("advice");
    let r = a.per_fs[0].recommendation.as_ref().expect("rec");
    assert_eq!(r.rule, RecommendationRule::AutoEmptyData);
    assert_eq!(r.cluster_size, 32 * KIB);
    assert_eq!(a.per_fs[0].rows[0].waste_percent, None);
}

#[test]
fn bad_inputs() {
    assert!(matches!(
        advise(GIB, 300, FsSelection::Both, None, 1.0),
        Err(AdviseError::Plan(_))
    ));
    assert!(matches!(
        advise(GIB, 512, FsSelection::Both, None, -1.0),
        Err(AdviseError::MaxWaste(_))
    ));
    assert!(matches!(
        advise(GIB, 512, FsSelection::Both, None, f64::NAN),
        Err(AdviseError::MaxWaste(_))
    ));
}

#[test]
fn the_formatter_gets_the_same_answer() {
    let data = files(vec![3 * MIB + 17; 500]);
    let medium = Medium::whole(16 * GIB, 512).expect("medium");
    for fs in [FsKind::Exfat, FsKind::Fat32] {
        let sel = match fs {
            FsKind::Exfat => FsSelection::Exfat,
            _ => FsSelection::Fat32,
        };
        let a = advise(16 * GIB, 512, sel, Some(&data), 1.0).expect("advice");
        let want = a.per_fs[0].recommendation.clone().expect("rec");
        let (c, reason) = recommend_for_data(fs, &medium, &data, 1.0).expect("rec");
        assert_eq!(c, want.cluster_size);
        assert!(!reason.is_empty());
    }
    // FsChoice::Auto resolves like the planner: FAT32 up to 32 GiB.
    let r = recommend_for_format(&FormatOptions::default(), &medium, &data, 1.0).expect("rec");
    let (c, _) = recommend_for_data(FsKind::Fat32, &medium, &data, 1.0).expect("rec");
    assert_eq!(r.cluster_size, c);
}

#[test]
fn fat16_and_fat12_are_listed_where_they_fit() {
    // 1 GiB: FAT16 fits (16 KiB..64 KiB), FAT12 does not.
    let a = advise(GIB, 512, FsSelection::Both, None, 1.0).expect("advice");
    let listed: Vec<FsKind> = a.per_fs.iter().map(|f| f.fs).collect();
    assert_eq!(listed, [FsKind::Exfat, FsKind::Fat32, FsKind::Fat16]);
    let fat16 = &a.per_fs[2];
    let sizes: Vec<u64> = fat16.rows.iter().map(|r| r.cluster_size).collect();
    assert_eq!(sizes, [16 * KIB, 32 * KIB, 64 * KIB]);
    assert_eq!(fat16.windows_default, Some(16 * KIB));
    // 16 MiB: FAT32 has no valid size; FAT16 and FAT12 both fit.
    let a = advise(16 * MIB, 512, FsSelection::Both, None, 1.0).expect("advice");
    let listed: Vec<FsKind> = a.per_fs.iter().map(|f| f.fs).collect();
    assert_eq!(
        listed,
        [FsKind::Exfat, FsKind::Fat32, FsKind::Fat16, FsKind::Fat12]
    );
    assert!(a.per_fs[1].rows.is_empty());
    assert!(a.per_fs.iter().skip(2).all(|f| !f.rows.is_empty()));
}

#[test]
fn a_full_fixed_root_directory_is_flagged() {
    // 600 files at the top level need more than 512 root entries (LFNs too).
    let mut d = files(vec![100; 600]);
    for i in 0..600 {
        d.root
            .add(std::ffi::OsStr::new(&format!("a long file name {i}.txt")));
    }
    let a = advise(64 * MIB, 512, FsSelection::Fat16, Some(&d), 1.0).expect("advice");
    let f = &a.per_fs[0];
    assert!(
        f.notes
            .iter()
            .any(|n| matches!(n, FsNote::RootDirFull { capacity: 512, .. })),
        "{:?}",
        f.notes
    );
    assert!(f.rows.iter().all(|r| r.fits == Some(false)));
}

#[test]
fn json_names_are_snake_case() {
    let data = files(vec![1, 2, 3]);
    let a = advise(GIB, 512, FsSelection::Both, Some(&data), 1.0).expect("advice");
    let v = serde_json::to_value(&a).expect("json");
    let f = &v["per_fs"][1];
    assert_eq!(f["fs"], "fat32");
    assert!(f["rows"][0]["cluster_size"].is_u64());
    assert!(f["rows"][0]["overhead"]["fat"].is_u64());
    assert!(f["recommendation"]["rule"].is_string());
    assert!(v["data"]["histogram"].is_array());
    let notes = serde_json::to_string(&v["per_fs"][0]["rows"]).expect("json");
    assert!(notes.contains("\"mkfs_default\""), "{notes}");
    let note = serde_json::to_value(FsNote::FilesOver4Gib { count: 2 }).expect("json");
    assert_eq!(note["kind"], "files_over_4gib");
    assert_eq!(note["count"], 2);
}
