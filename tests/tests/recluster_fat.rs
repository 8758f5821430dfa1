//! `mkfs-alloc recluster` on FAT volumes as a black box: a FAT16 volume
//! whose new cluster count needs FAT32, and a FAT32 one whose larger size
//! would make it FAT16, are refused (exit 2, the target byte-identical,
//! `convert` named); and (tool tier) a FAT32 volume made by mkfs.fat and
//! filled by mtools (long names, subdirectories; for a larger size with
//! files deleted and one more written into the holes), reclustered to a
//! smaller or a larger size, is clean for fsck.fat, has the new cluster
//! size for minfo and fsck.fat, and reads back byte for byte through
//! mcopy (and 7z, to a larger size); the same on 4096-byte sectors
//! (`mkfs.fat -S 4096`, both ways); fsck.fat on every state a cut leaves
//! finds every file's chain intact.

use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry, mtools};
use mkfs_alloc_tests::fat_cuts::{assert_files_through_mcopy, fsck_fat_every_cut_state, FatCuts};
use mkfs_alloc_tests::recluster::{fat_tool_tree as tree, mkfs_fat_filled};
use mkfs_alloc_tests::{mkfs_alloc, require_tool, run, test_data, TempDir};
use std::path::Path;

/// Every file of [`tree`], read back by one recursive mcopy, equals what
/// went in.
fn assert_tree_through_mcopy(tmp: &TempDir, img: &Path) {
    assert_files_through_mcopy(tmp, img, &tree());
}

/// [`tree`] interleaved: every other file of `many/` deleted by mdel, then
/// FSInfo's next-free hint (fatgen103 §5: offset 492 of sector 1) set to
/// the first cluster (sectors of `sector` bytes), so that mcopy writes one
/// more file into the holes (fragmented). Returns the files on the volume.
fn interleave_with_mtools(tmp: &TempDir, img: &Path, sector: u64) -> Vec<(String, Vec<u8>)> {
    use std::io::{Seek, SeekFrom, Write};
    let mut files = tree();
    let odd = |p: &str| {
        p.strip_prefix("many/file number ")
            .and_then(|n| n.strip_suffix(".txt"))
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 1)
    };
    for (path, _) in files.iter().filter(|(p, _)| odd(p)) {
        mtools("mdel", img, &[&format!("::/{path}")]).assert_success();
    }
    files.retain(|(p, _)| !odd(p));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(img)
        .expect("open");
    f.seek(SeekFrom::Start(sector + 492)).expect("seek");
    f.write_all(&2u32.to_le_bytes()).expect("write");
    drop(f);
    let data = test_data(300_000, 7);
    let host = tmp.join("filler");
    std::fs::write(&host, &data).expect("write");
    let to = "::/photos/filler.bin";
    mtools("mcopy", img, &[host.to_str().expect("utf-8"), to]).assert_success();
    files.push(("photos/filler.bin".into(), data));
    files
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn mkfs_fat_filled_by_mtools_reclusters_to_a_larger_size() {
    // 2,200 MiB at 4 KiB: 562,094 clusters, 70,261 at 32 KiB; 300 MiB at
    // 512 bytes: 613,000, 76,700 at 4 KiB; 80 MiB at 512 bytes: 161,286,
    // 80,638 at 1 KiB, the volume shortened (FAT32 all).
    for (size, spc, to, bytes) in [
        (2200u64 << 20, "8", "32K", 32_768u64),
        (300 << 20, "1", "4K", 4096),
        (80 << 20, "1", "1K", 1024),
    ] {
        let tmp = TempDir::new("recluster-fat32-larger");
        let img = mkfs_fat_filled(&tmp, size, &["-F", "32", "-s", spc, "-S", "512"]);
        let files = interleave_with_mtools(&tmp, &img, 512);
        fsck_fat_clean(&img);
        let p = img.to_str().expect("utf-8");
        let out = mkfs_alloc(&["recluster", "--cluster", to, "--dry-run", "--json", p]);
        out.assert_success();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
        assert_eq!(v["plan"]["new"]["cluster_size"], bytes);
        assert_eq!(v["plan"]["fat"]["kind"], "fat32");
        // The data region stays; the holes mcopy filled make files move.
        assert_eq!(
            v["plan"]["new"]["heap_offset"],
            v["plan"]["old"]["heap_offset"]
        );
        assert!(
            v["plan"]["larger"]["files_moved"].as_u64() > Some(0),
            "{v:#}"
        );
        // mkfs.fat sizes its FATs tightly: the two new ones at twice the
        // size index a few clusters less than the volume holds.
        let shortened = v["plan"]["larger"]["shortened_bytes"].as_u64();
        assert_eq!(shortened > Some(0), bytes == 1024, "{v:#}");
        let reserved = v["plan"]["fat"]["reserved_sectors_new"]
            .as_u64()
            .expect("rsvd");
        let out = mkfs_alloc(&["recluster", "--cluster", to, "--yes", "-q", p]);
        out.assert_success();
        fsck_fat_clean(&img);
        assert_eq!(fsck_fat_geometry(&img), (bytes, 512));
        let info = mtools("minfo", &img, &[]);
        info.assert_success();
        let sectors = format!("cluster size: {} sectors", bytes / 512);
        assert!(info.stdout.contains(&sectors), "{info}");
        let rsvd = format!("reserved (boot) sectors: {reserved}");
        assert!(info.stdout.contains(&rsvd), "{info}");
        assert_files_through_mcopy(&tmp, &img, &files);
        // 7-Zip's FAT handler extracts every file too.
        let seven = require_tool("7z");
        for (path, data) in &files {
            let x = run(&seven, &["x", "-so", p, path.as_str()]);
            x.assert_success();
            assert!(x.stdout_bytes == *data, "7z: {path} differs");
        }
        let again = mkfs_alloc(&["recluster", "--cluster", to, "--yes", p]);
        again.assert_success();
        assert!(again.stderr.contains("nothing to do"), "{again}");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn mkfs_fat_on_4096_byte_sectors_filled_by_mtools_reclusters_both_ways() {
    // 520 MiB at 8 KiB: 66,478 clusters; 132,446 at 4 KiB (FAT32 both).
    // mtools reads and writes 4096-byte sectors as the BPB says: no
    // MTOOLS_SKIP_CHECK, no mtoolsrc.
    for (spc, from, to, bytes) in [("2", 8192, "4K", 4096u64), ("1", 4096, "8K", 8192)] {
        let tmp = TempDir::new("recluster-fat32-4kn");
        let img = mkfs_fat_filled(&tmp, 520 << 20, &["-F", "32", "-s", spc, "-S", "4096"]);
        let files = interleave_with_mtools(&tmp, &img, 4096);
        fsck_fat_clean(&img);
        assert_eq!(fsck_fat_geometry(&img), (from, 4096));
        let p = img.to_str().expect("utf-8");
        let out = mkfs_alloc(&["recluster", "--cluster", to, "--dry-run", "--json", p]);
        out.assert_success();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
        assert_eq!(v["plan"]["new"]["cluster_size"], bytes);
        assert_eq!(v["plan"]["fat"]["kind"], "fat32");
        assert!(v["plan"]["clusters_moved"].as_u64() > Some(0), "{v:#}");
        let reserved = v["plan"]["fat"]["reserved_sectors_new"]
            .as_u64()
            .expect("rsvd");
        mkfs_alloc(&["recluster", "--cluster", to, "--yes", "-q", p]).assert_success();
        fsck_fat_clean(&img);
        assert_eq!(fsck_fat_geometry(&img), (bytes, 4096));
        let info = mtools("minfo", &img, &[]);
        info.assert_success();
        for want in [
            "sector size: 4096 bytes".to_string(),
            format!("cluster size: {} sectors", bytes / 4096),
            format!("reserved (boot) sectors: {reserved}"),
        ] {
            assert!(info.stdout.contains(&want), "{want}: {info}");
        }
        assert_files_through_mcopy(&tmp, &img, &files);
        let again = mkfs_alloc(&["recluster", "--cluster", to, "--yes", p]);
        again.assert_success();
        assert!(again.stderr.contains("nothing to do"), "{again}");
    }
}

#[test]
fn a_fat32_volume_whose_larger_count_is_fat16_is_refused_unchanged() {
    let tmp = TempDir::new("recluster-fat32-larger-width");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    let args = [
        "--fs",
        "fat32",
        "--cluster",
        "512",
        "--size",
        "80M",
        "--yes",
        "-q",
        p,
    ];
    mkfs_alloc(&args).assert_success();
    let before = std::fs::read(&img).expect("read");
    // 160,000 clusters at 512 bytes; about 40,000 at 2 KiB: FAT16's range.
    let out = mkfs_alloc(&["recluster", "--cluster", "2K", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("convert"), "{out}");
    assert!(out.stderr.contains("FAT16"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
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

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn fsck_fat_finds_every_file_intact_in_every_cut_state() {
    let tmp = TempDir::new("recluster-fat32-cuts");
    // 72 MiB at 1 KiB: 73,000 clusters; 146,000 at 512 bytes.
    let img = mkfs_fat_filled(&tmp, 72 << 20, &["-F", "32", "-s", "2", "-S", "512"]);
    fsck_every_cut_state(&tmp, &img, 512, 2, &tree());
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn fsck_fat_finds_every_file_intact_in_every_cut_state_of_a_larger_size() {
    let tmp = TempDir::new("recluster-fat32-larger-cuts");
    // 80 MiB at 512 bytes: 161,286 clusters; 80,638 at 1 KiB, the volume
    // shortened (mkfs.fat's FATs are tight: the new ones index fewer).
    let img = mkfs_fat_filled(&tmp, 80 << 20, &["-F", "32", "-s", "1", "-S", "512"]);
    let files = interleave_with_mtools(&tmp, &img, 512);
    fsck_every_cut_state(&tmp, &img, 1024, 1, &files);
}

/// fsck.fat -n and mcopy on every state a re-cluster of `img` to `to`
/// cut at each write leaves (`seeds` each): only the marks of an
/// unfinished job, every one of `files` intact.
fn fsck_every_cut_state(
    tmp: &TempDir,
    img: &Path,
    to: u64,
    seeds: u64,
    files: &[(String, Vec<u8>)],
) {
    let sweep = FatCuts {
        to,
        sector: 512,
        seeds,
        max_points: usize::MAX,
        rerun: false,
        lost_clusters: false,
    };
    let c = fsck_fat_every_cut_state(tmp, img, sweep, files);
    assert_eq!(c.intact_before, c.states);
}
