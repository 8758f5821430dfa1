//! `mkfs-alloc recluster` on FAT volumes as a black box: a FAT16 volume
//! whose new cluster count needs FAT32 is refused (exit 2, the target
//! byte-identical, `convert` named); and (tool tier) a FAT32 volume made by
//! mkfs.fat and filled by mtools (long names, subdirectories), reclustered
//! to a smaller size, is clean for fsck.fat, has the new cluster size for
//! minfo and fsck.fat, and reads back byte for byte through mcopy; fsck.fat
//! on every state a cut leaves finds every file's chain intact.

use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry, mtools};
use mkfs_alloc_tests::recluster::{fat_tool_tree as tree, mkfs_fat_filled};
use mkfs_alloc_tests::{mkfs_alloc, require_tool, run, TempDir};
use std::path::Path;

/// Every file of [`tree`], read back by one recursive mcopy, equals what
/// went in.
fn assert_tree_through_mcopy(tmp: &TempDir, img: &Path) {
    let out = tmp.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("mkdir");
    let to = out.to_str().expect("utf-8");
    mtools("mcopy", img, &["-s", "-n", "::/", to]).assert_success();
    for (path, data) in tree() {
        let got = std::fs::read(out.join(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(got == data, "{path} differs");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn mkfs_fat_filled_by_mtools_reclusters_to_2k() {
    let tmp = TempDir::new("recluster-fat32");
    // 300 MiB at 4 KiB: 76,643 clusters; 151,716 at 2 KiB (FAT32 both).
    let img = mkfs_fat_filled(&tmp, 300 << 20, &["-F", "32", "-s", "8", "-S", "512"]);
    fsck_fat_clean(&img);
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "2K", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["plan"]["new"]["cluster_size"], 2048);
    assert_eq!(v["plan"]["fat"]["kind"], "fat32");
    let reserved = v["plan"]["fat"]["reserved_sectors_new"]
        .as_u64()
        .expect("rsvd");
    assert!(reserved > 32 && reserved <= 65_535, "{v:#}");
    // mcopy writes from cluster 3 on: those under the new FATs move.
    assert!(
        v["plan"]["clusters_moved"].as_u64().expect("moved") > 0,
        "{v:#}"
    );
    let out = mkfs_alloc(&["recluster", "--cluster", "2K", "--yes", "-q", p]);
    out.assert_success();
    fsck_fat_clean(&img);
    assert_eq!(fsck_fat_geometry(&img), (2048, 512));
    let info = mtools("minfo", &img, &[]);
    info.assert_success();
    assert!(info.stdout.contains("cluster size: 4 sectors"), "{info}");
    assert!(
        info.stdout
            .contains(&format!("reserved (boot) sectors: {reserved}")),
        "{info}"
    );
    assert_tree_through_mcopy(&tmp, &img);
    let again = mkfs_alloc(&["recluster", "--cluster", "2K", "--yes", p]);
    again.assert_success();
    assert!(again.stderr.contains("nothing to do"), "{again}");
}

#[test]
fn a_fat16_volume_whose_new_count_needs_fat32_is_refused_unchanged() {
    let tmp = TempDir::new("recluster-fat16-width");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    let args = [
        "--fs",
        "fat16",
        "--cluster",
        "2K",
        "--size",
        "64M",
        "--yes",
        "-q",
        p,
    ];
    mkfs_alloc(&args).assert_success();
    let before = std::fs::read(&img).expect("read");
    // 32,700 clusters at 2 KiB; about 131,000 at 512 bytes: FAT32's range.
    let out = mkfs_alloc(&["recluster", "--cluster", "512", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("convert"), "{out}");
    assert!(out.stderr.contains("FAT32"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
}

/// A line of fsck.fat's list of bytes where the boot sector and its
/// backup differ (`  13:02/01, 14:20/a0`).
fn byte_differences(line: &str) -> bool {
    line.split(',').all(|d| {
        let d = d.trim();
        d.split_once(':').is_some_and(|(off, v)| {
            off.parse::<u32>().is_ok()
                && v.split_once('/').is_some_and(|(a, b)| {
                    u8::from_str_radix(a, 16).is_ok() && u8::from_str_radix(b, 16).is_ok()
                })
        })
    })
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn fsck_fat_finds_every_file_intact_in_every_cut_state() {
    use mkfs_alloc_blockio::{BlockIo, ImageFile, PowerCutIo};
    use mkfs_alloc_testsupport::{fsck_findings, FsckKind};
    let tmp = TempDir::new("recluster-fat32-cuts");
    // 72 MiB at 1 KiB: 73,000 clusters; 146,000 at 512 bytes.
    let img = mkfs_fat_filled(&tmp, 72 << 20, &["-F", "32", "-s", "2", "-S", "512"]);
    let pristine = std::fs::read(&img).expect("read");
    let ops = {
        let mut count = PowerCutIo::counting(ImageFile::open(&img, 512).expect("open"));
        mkfs_alloc::recluster::recluster(&mut count, 512).expect("uncut");
        let n = count.ops_seen();
        drop(count.into_all_written().expect("write"));
        n
    };
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    let mut states = 0;
    for k in 0..ops {
        for seed in 0..2 {
            std::fs::write(&img, &pristine).expect("reset");
            let mut cut = PowerCutIo::new(ImageFile::open(&img, 512).expect("open"), k, seed);
            assert!(mkfs_alloc::recluster::recluster(&mut cut, 512).is_err());
            let mut dev = cut.into_surviving().expect("cut");
            dev.flush().expect("flush");
            drop(dev);
            let out = run(require_tool("fsck.fat"), &[Path::new("-n"), &img]);
            let found = fsck_findings(FsckKind::Fat, out.success(), &out.stdout, &out.stderr);
            states += 1;
            for f in &found {
                *kinds.entry(f.clone()).or_default() += 1;
            }
            // What a cut may leave: the clean bit clear ("dirty bit"),
            // FATs that differ in it (one FAT's first sector written), the
            // backup boot sector ahead of the main one, FSInfo's hints.
            // Never a chain or a directory fsck.fat would change.
            for f in &found {
                let l = f.to_lowercase();
                assert!(
                    [
                        "did not exit 0",
                        "dirty bit",
                        "fats differ but appear to be intact",
                        "using first fat",
                        "differences between boot sector and its backup",
                        "mostly harmless",
                        "not automatically fixing this",
                        "free cluster summary uninitialized",
                        "leaving filesystem unchanged",
                    ]
                    .iter()
                    .any(|w| l.contains(w))
                        || byte_differences(&l),
                    "cut at {k}, seed {seed}: {found:?}\n{out}"
                );
            }
            assert_tree_through_mcopy(&tmp, &img);
        }
    }
    eprintln!(
        "fsck.fat on {states} cut states of {ops} ops: every file intact; findings {kinds:?}"
    );
}
