//! `mkfs-alloc recluster` on FAT16 and FAT12 volumes made by mkfs.fat and
//! filled by mtools (tool tier): long names, nested directories,
//! timestamps (`mcopy -m`), attributes (`mattrib`), the label and the
//! serial survive; fsck.fat finds the result clean, minfo shows the new
//! cluster size, every file reads back byte for byte through mcopy, and a
//! second run is nothing to do. A FAT12 volume whose new count would make
//! it FAT16 is refused (exit 2, `convert` named, the image unchanged byte
//! for byte). On every state a cut of either job leaves, fsck.fat finds only
//! the marks of an unfinished job, every file reads back intact through
//! mcopy, and the same command run again finishes it clean.

use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry, mtools};
use mkfs_alloc_tests::fat_cuts::{fsck_fat_every_cut_state, FatCuts};
use mkfs_alloc_tests::{mkfs_alloc, require_tool, run, test_data, TempDir};
use std::path::{Path, PathBuf};

/// The tree mtools writes: long names, nested directories, sizes from
/// empty to many clusters.
fn tree() -> Vec<(String, Vec<u8>)> {
    let mut v = vec![
        ("readme.txt".to_string(), test_data(100, 1)),
        ("empty".to_string(), Vec::new()),
        (
            "A long photo name 0001.jpeg".to_string(),
            test_data(70_003, 2),
        ),
        ("photos/b.jpg".to_string(), test_data(9_000, 3)),
        (
            "photos/Holiday in the mountains.raw".to_string(),
            test_data(400_000, 4),
        ),
        ("docs/deep/er/note.md".to_string(), test_data(4097, 5)),
    ];
    for i in 0..30usize {
        v.push((
            format!("many/file number {i:02}.txt"),
            test_data(700 * i + 1, 6),
        ));
    }
    v
}

/// `mkfs.fat ARGS` (label `SMALLFAT`, serial 1234ABCD) on a sparse image
/// of `size`, filled with [`tree`] by mmd and `mcopy -m`; two files get
/// attributes.
fn filled(tmp: &TempDir, size: u64, args: &[&str]) -> PathBuf {
    let img = tmp.join("v.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(size))
        .expect("image");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-n", "SMALLFAT", "-i", "1234ABCD"]);
    all.push(img.to_str().expect("utf-8"));
    run(require_tool("mkfs.fat"), &all).assert_success();
    let host = tmp.subdir("in");
    let mut made = std::collections::BTreeSet::new();
    for (i, (path, data)) in tree().iter().enumerate() {
        let parts: Vec<&str> = path.split('/').collect();
        let mut dir = String::new();
        for part in &parts[..parts.len() - 1] {
            dir = format!("{dir}/{part}");
            if made.insert(dir.clone()) {
                mtools("mmd", &img, &[&format!("::{dir}")]).assert_success();
            }
        }
        let file = host.join(format!("f{i}"));
        std::fs::write(&file, data).expect("write");
        let f = std::fs::File::options()
            .write(true)
            .open(&file)
            .expect("open");
        let t =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000 + 3600 * i as u64);
        f.set_modified(t).expect("mtime");
        let to = format!("::/{path}");
        mtools("mcopy", &img, &["-m", file.to_str().expect("utf-8"), &to]).assert_success();
    }
    mtools("mattrib", &img, &["+r", "::/readme.txt"]).assert_success();
    mtools("mattrib", &img, &["+h", "+s", "::/photos/b.jpg"]).assert_success();
    img
}

/// What mtools says of the tree: every directory's listing (names long
/// and short, sizes, dates and times), the attributes, label and serial.
fn listing(img: &Path) -> String {
    let dir = mtools("mdir", img, &["-s", "-a", "::/"]);
    dir.assert_success();
    let attrs = mtools("mattrib", img, &["-/", "::/"]);
    attrs.assert_success();
    let label = mtools("mlabel", img, &["-s", "::"]);
    label.assert_success();
    // mdir's last line counts the free bytes: they change.
    let dir: Vec<&str> = dir
        .stdout
        .lines()
        .filter(|l| !l.contains("bytes free"))
        .collect();
    format!("{}\n{}\n{}", dir.join("\n"), attrs.stdout, label.stdout)
}

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

/// The whole job on `img` to `cluster` bytes, checked by the tools.
fn recluster_checked(tmp: &TempDir, img: &Path, cluster: u64, kind: &str) {
    fsck_fat_clean(img);
    let before = listing(img);
    for want in [
        "Holiday in the mountains.raw",
        "SMALLFAT",
        "1234-ABCD",
        "  R  ",
        "SH",
    ] {
        assert!(before.contains(want), "{want}: {before}");
    }
    let serial = mtools("minfo", img, &[]).stdout;
    let serial = serial
        .lines()
        .find(|l| l.contains("serial number"))
        .map(str::to_owned);
    let p = img.to_str().expect("utf-8");
    let c = cluster.to_string();
    let out = mkfs_alloc(&["recluster", "--cluster", &c, "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["plan"]["new"]["cluster_size"], cluster);
    assert_eq!(v["plan"]["fat"]["kind"], kind, "{v:#}");
    let reserved = v["plan"]["fat"]["reserved_sectors_new"]
        .as_u64()
        .expect("rsvd");
    eprintln!(
        "{kind} to {cluster}: reserved sectors {reserved}, clusters moved {}, bytes written {}",
        v["plan"]["clusters_moved"], v["plan"]["bytes_written"]
    );
    let out = mkfs_alloc(&["recluster", "--cluster", &c, "--yes", "-q", p]);
    out.assert_success();
    fsck_fat_clean(img);
    assert_eq!(fsck_fat_geometry(img), (cluster, 512));
    let info = mtools("minfo", img, &[]);
    info.assert_success();
    let spc = format!("cluster size: {} sectors", cluster / 512);
    assert!(info.stdout.contains(&spc), "{info}");
    assert!(
        info.stdout
            .contains(&format!("reserved (boot) sectors: {reserved}")),
        "{info}"
    );
    let after_serial = info
        .stdout
        .lines()
        .find(|l| l.contains("serial number"))
        .map(str::to_owned);
    assert_eq!(serial, after_serial);
    assert_eq!(listing(img), before);
    assert_tree_through_mcopy(tmp, img);
    let again = mkfs_alloc(&["recluster", "--cluster", &c, "--yes", p]);
    again.assert_success();
    assert!(again.stderr.contains("nothing to do"), "{again}");
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn a_mkfs_fat_fat16_filled_by_mtools_reclusters_to_512() {
    let tmp = TempDir::new("recluster-fat16");
    // 32 MiB at 2 KiB: 16,300 clusters; 65,000 at 512 bytes (FAT16 both).
    let img = filled(&tmp, 32 << 20, &["-F", "16", "-s", "4", "-S", "512"]);
    recluster_checked(&tmp, &img, 512, "fat16");
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn a_mkfs_fat_fat12_with_one_reserved_sector_reclusters_to_1k() {
    let tmp = TempDir::new("recluster-fat12");
    // 3 MiB at 2 KiB: 1,500 clusters; 3,050 at 1 KiB (FAT12 both); no
    // alignment: one reserved sector.
    let img = filled(&tmp, 3 << 20, &["-F", "12", "-s", "4", "-S", "512", "-a"]);
    let info = mtools("minfo", &img, &[]);
    assert!(
        info.stdout.contains("reserved (boot) sectors: 1\n"),
        "{info}"
    );
    recluster_checked(&tmp, &img, 1024, "fat12");
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools)"]
fn a_fat12_whose_new_count_is_fat16_is_refused_unchanged() {
    let tmp = TempDir::new("recluster-fat12-width");
    let img = filled(&tmp, 3 << 20, &["-F", "12", "-s", "4", "-S", "512"]);
    let before = std::fs::read(&img).expect("read");
    // About 6,100 clusters at 512 bytes: FAT16's range.
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "512", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("convert"), "{out}");
    assert!(out.stderr.contains("FAT16"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
}

/// fsck.fat and mcopy on the states a cut of the re-cluster of `img` to
/// `to` at each of its operations leaves (two seeds each), each then
/// finished by the same command.
fn every_cut_state(tmp: &TempDir, img: &Path, to: u64) {
    let files = tree();
    let sweep = FatCuts {
        to,
        sector: 512,
        seeds: 2,
        max_points: usize::MAX,
        rerun: true,
        lost_clusters: false,
    };
    let c = fsck_fat_every_cut_state(tmp, img, sweep, &files);
    assert!(c.ops > 20 && c.states > 40, "{c:?}");
    assert_eq!((c.intact_before, c.finished_by_rerun), (c.states, c.states));
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn fsck_fat_finds_every_file_intact_in_every_cut_state_of_a_fat16_job() {
    let tmp = TempDir::new("recluster-fat16-cuts");
    // 16 MiB at 2 KiB: 8,150 clusters; 32,600 at 512 bytes (FAT16 both).
    let img = filled(&tmp, 16 << 20, &["-F", "16", "-s", "4", "-S", "512"]);
    every_cut_state(&tmp, &img, 512);
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn fsck_fat_finds_every_file_intact_in_every_cut_state_of_a_fat12_job() {
    let tmp = TempDir::new("recluster-fat12-cuts");
    // 3 MiB at 2 KiB, one reserved sector: 1,500 clusters; 3,050 at 1 KiB.
    let img = filled(&tmp, 3 << 20, &["-F", "12", "-s", "4", "-S", "512", "-a"]);
    every_cut_state(&tmp, &img, 1024);
}
