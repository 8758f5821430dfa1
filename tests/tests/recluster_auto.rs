//! `mkfs-alloc recluster --cluster auto` and bad clusters, as a black box.
//! auto: the dry run (text and JSON) says the size and the reason; a larger
//! size than the volume's is planned and run; a refusal names the size and
//! the advice's reason, its own size is nothing to do, each leaving the
//! target unchanged;
//! (tool tier) on a volume made by `mkfs.exfat -c 128K` and filled through
//! exfat-fuse it takes the size `advise --fs exfat` gives the same files on
//! the host, and the result is clean for fsck.exfat, has that size for
//! dump.exfat and reads back byte for byte through exfat-fuse. Bad
//! clusters marked in the FAT of such a volume are carried over to 4 KiB
//! (still bad, the files intact), and fsck.exfat finds every state a cut
//! re-cluster of a volume with bad clusters leaves consistent.

use mkfs_alloc_tests::checks::{dump_exfat_cluster_size, fsck_exfat_clean};
use mkfs_alloc_tests::recluster::{
    assert_files_through_fuse, fsck_every_cut_state, mkfs_exfat_filled, our_image_with, write_tree,
};
use mkfs_alloc_tests::tools::{require_fuse, require_root};
use mkfs_alloc_tests::{mkfs_alloc, TempDir};
use std::path::Path;

#[test]
fn auto_refused_on_a_dirty_volume_and_nothing_to_do_at_its_size_leave_the_target_unchanged() {
    let tmp = TempDir::new("recluster-auto-refusals");
    // The tree's files of 3 bytes to 900 KB: the advice recommends 4 KiB.
    let img = our_image_with(&tmp, &["--cluster", "512"]);
    let p = img.to_str().expect("utf-8");
    // VolumeDirty (VolumeFlags bit 1, boot sector byte 106) and no job of
    // ours on the volume: refused as damaged, naming auto's size.
    let mut bytes = std::fs::read(&img).expect("read");
    bytes[106] |= 2;
    std::fs::write(&img, &bytes).expect("write");
    let out = mkfs_alloc(&["recluster", "--cluster", "auto", "--yes", p]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("the recommended cluster size is 4096 bytes ("),
        "{out}"
    );
    assert!(std::fs::read(&img).expect("read") == bytes);
    std::fs::remove_file(&img).expect("rm");
    let img = our_image_with(&tmp, &["--cluster", "4K"]);
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["recluster", "--cluster", "auto", "--yes", p]);
    out.assert_success();
    assert!(out.stderr.contains("nothing to do"), "{out}");
    assert!(out.stderr.contains("the size auto chose"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
}

#[test]
fn auto_goes_to_a_larger_size_the_files_call_for() {
    let tmp = TempDir::new("recluster-auto-larger");
    let img = our_image_with(&tmp, &["--cluster", "512"]);
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "auto", "--yes", p]);
    out.assert_success();
    // Run again: at the size auto chose now, so nothing to do.
    let again = mkfs_alloc(&["recluster", "--cluster", "auto", "--dry-run", "--json", p]);
    again.assert_success();
    let v: serde_json::Value = serde_json::from_str(&again.stdout).expect("json");
    assert_eq!(v["auto"]["current_cluster_size"], 4096, "{v:#}");
    assert_eq!(v["auto"]["cluster_size"], 4096, "{v:#}");
}

#[test]
fn auto_in_a_dry_run_says_the_size_and_why_and_writes_nothing() {
    let tmp = TempDir::new("recluster-auto-dry");
    let img = our_image_with(&tmp, &["--cluster", "128K"]);
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["recluster", "--cluster", "auto", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["auto"]["cluster_size"], 4096, "{v:#}");
    assert_eq!(v["auto"]["current_cluster_size"], 128 << 10);
    assert_eq!(v["auto"]["rule"], "least_waste");
    assert_eq!(v["plan"]["new"]["cluster_size"], 4096);
    let reason = v["auto"]["reason"].as_str().expect("reason");
    let text = mkfs_alloc(&["recluster", "--cluster", "AUTO", "--dry-run", p]);
    text.assert_success();
    assert!(
        text.stdout
            .contains(&format!("auto chose 4 KiB (now 128 KiB): {reason}")),
        "{text}"
    );
    assert!(std::fs::read(&img).expect("read") == before);
}

/// The advice's exFAT recommendation (size, reason) for the files of
/// `tree` and the two interleaved files, written on the host, on a volume
/// of `size`: `mkfs-alloc advise --size SIZE --fs exfat --json PATH...`.
fn advised(
    tmp: &TempDir,
    size: &str,
    tree: &[(String, Vec<u8>)],
    a: &[u8],
    b: &[u8],
) -> (u64, String) {
    let host = tmp.subdir("host");
    write_tree(&host, tree);
    std::fs::write(host.join("interleaved-a.bin"), a).expect("write");
    std::fs::write(host.join("interleaved-b.bin"), b).expect("write");
    let mut args = vec!["advise".to_string(), "--size".into(), size.into()];
    args.extend(["--fs", "exfat", "--json"].map(String::from));
    let mut top: Vec<String> = std::fs::read_dir(&host)
        .expect("list")
        .map(|e| e.expect("entry").path().display().to_string())
        .collect();
    top.sort();
    args.extend(top);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = mkfs_alloc(&args);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let r = &v["per_fs"][0]["recommendation"];
    (
        r["cluster_size"].as_u64().expect("size"),
        r["reason"].as_str().expect("reason").to_string(),
    )
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn auto_on_a_mkfs_exfat_128k_volume_takes_the_advice_for_its_files() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("recluster-auto");
    let args = ["-c", "128K", "-L", "STICK"];
    let (img, tree, a, b) = mkfs_exfat_filled(&tmp, "256M", &args, (31, 32), 256 << 10);
    let p = img.to_str().expect("utf-8");
    fsck_exfat_clean(&img);
    let (want, reason) = advised(&tmp, "256M", &tree, &a, &b);
    let dry = mkfs_alloc(&["recluster", "--cluster", "auto", "--dry-run", p]);
    dry.assert_success();
    assert!(dry.stdout.contains(&reason), "{dry}");
    let out = mkfs_alloc(&["recluster", "--cluster", "auto", "--yes", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    eprintln!("auto: {:#}", v["auto"]);
    assert_eq!(v["auto"]["cluster_size"], want, "{v:#}");
    assert_eq!(v["auto"]["reason"], reason.as_str());
    assert!(want < 128 << 10, "{v:#}");
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), want);
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
}

/// Marks the first `n` free clusters of the exFAT volume of `img` and one
/// in the middle of its free space bad in the FAT (FFFFFFF7h, exFAT
/// specification §4.1.3), their bitmap bits as they were; returns them.
fn mark_bad(img: &Path, n: usize) -> Vec<u32> {
    use mkfs_alloc::blockio::ImageFile;
    use mkfs_alloc::inspect::{read_volume, ModelOptions};
    let len = std::fs::metadata(img).expect("stat").len();
    let m = {
        let mut dev = ImageFile::open(img, 512).expect("open");
        read_volume(&mut dev, 0, len, &ModelOptions::default(), &mut |_| {}).expect("model")
    };
    let g = &m.geometry;
    let free: Vec<u32> = (2..=g.cluster_count + 1)
        .filter(|&c| !m.used.get(c))
        .collect();
    let mut bad: Vec<u32> = free[..n].to_vec();
    bad.push(free[free.len() / 2]);
    let mut bytes = std::fs::read(img).expect("read");
    for &c in &bad {
        let at = usize::try_from(g.fat_offset + 4 * u64::from(c)).expect("offset");
        bytes[at..at + 4].copy_from_slice(&0xFFFF_FFF7u32.to_le_bytes());
    }
    std::fs::write(img, &bytes).expect("write");
    bad
}

/// The bad clusters the model of `img`'s volume finds.
fn bad_count(img: &Path) -> u64 {
    use mkfs_alloc::blockio::ImageFile;
    use mkfs_alloc::inspect::{read_volume, Finding, ModelOptions};
    let len = std::fs::metadata(img).expect("stat").len();
    let mut dev = ImageFile::open(img, 512).expect("open");
    let m = read_volume(&mut dev, 0, len, &ModelOptions::default(), &mut |_| {}).expect("model");
    m.findings
        .iter()
        .map(|f| match f {
            Finding::BadClusters { count, .. } => *count,
            _ => 0,
        })
        .sum()
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn bad_clusters_of_a_mkfs_exfat_volume_are_carried_over_to_4k() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("recluster-bad");
    let args = ["-c", "128K", "-L", "STICK"];
    let (img, tree, a, b) = mkfs_exfat_filled(&tmp, "256M", &args, (41, 42), 256 << 10);
    let p = img.to_str().expect("utf-8");
    let bad = mark_bad(&img, 3);
    fsck_exfat_clean(&img);
    let dry = mkfs_alloc(&["recluster", "--cluster", "4K", "--dry-run", p]);
    dry.assert_success();
    assert!(dry.stdout.contains("bad clusters   4 -> 128"), "{dry}");
    mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", "-q", p]).assert_success();
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 4096);
    assert_eq!(bad_count(&img), bad.len() as u64 * 32);
    assert_files_through_fuse(&tmp, &img, &tree, &a, &b);
}

#[test]
#[ignore = "tool tier: cargo xtask test (fsck.exfat)"]
fn fsck_exfat_finds_every_cut_state_with_bad_clusters_consistent() {
    let tmp = TempDir::new("recluster-fsck-bad-cuts");
    let img = our_image_with(&tmp, &["--cluster", "128K"]);
    let bad = mark_bad(&img, 2);
    fsck_exfat_clean(&img);
    let uncut = tmp.join("uncut.img");
    std::fs::copy(&img, &uncut).expect("copy");
    let u = uncut.to_str().expect("utf-8");
    mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", "-q", u]).assert_success();
    fsck_exfat_clean(&uncut);
    // 128 KiB to 4 KiB: each bad old cluster is 32 new ones.
    assert_eq!(bad_count(&uncut), bad.len() as u64 * 32);
    fsck_every_cut_state(&img, 4096);
}
