//! (tool tier) `mkfs-alloc recluster` on a FAT32 volume filled from its
//! start past the reach of its reserved sectors: `mkfs.fat -F 32 -s 64`
//! makes 3 GiB, mtools writes the tool tree and 200 MiB of files from the
//! start; to 4 KiB the clusters where the new FATs go are moved first. The
//! result is clean for fsck.fat, 4 KiB for minfo and fsck.fat, and every
//! file reads back byte for byte through mcopy. And on every state a cut
//! leaves of a smaller such evacuation (72 MiB by `mkfs.fat -s 2`, filled
//! from its start by mcopy, to 512 bytes) fsck.fat finds only the marks of
//! an unfinished job and lost clusters, every file reads back intact
//! through mcopy, and the same command run again finishes the job clean
//! (also after `fsck.fat -a` freed the lost clusters).

use mkfs_alloc_tests::checks::{fsck_fat_clean, fsck_fat_geometry, mtools};
use mkfs_alloc_tests::fat_cuts::{fsck_fat_every_cut_state, FatCuts};
use mkfs_alloc_tests::recluster::{fat_tool_tree, mkfs_fat_filled};
use mkfs_alloc_tests::{mkfs_alloc, test_data, TempDir};

/// 200 MiB in ten files, each its own bytes.
fn fill() -> Vec<(String, Vec<u8>)> {
    (0..10u32)
        .map(|i| {
            let data = (0..20u32 << 20)
                .map(|j| (j.wrapping_mul(2_654_435_761).wrapping_add(i) >> 11) as u8)
                .collect();
            (format!("fill/part {i:02}.bin"), data)
        })
        .collect()
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn a_fat32_volume_filled_from_its_start_reclusters_to_4k() {
    let tmp = TempDir::new("recluster-fat32-filled");
    let img = mkfs_fat_filled(&tmp, 3 << 30, &["-F", "32", "-s", "64", "-S", "512"]);
    let host = tmp.subdir("fill");
    mtools("mmd", &img, &["::/fill"]).assert_success();
    let more = fill();
    for (i, (path, data)) in more.iter().enumerate() {
        let file = host.join(format!("p{i}"));
        std::fs::write(&file, data).expect("write");
        let to = format!("::/{path}");
        mtools("mcopy", &img, &[file.to_str().expect("utf-8"), &to]).assert_success();
    }
    fsck_fat_clean(&img);
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["recluster", "--cluster", "4K", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let reserved = v["plan"]["fat"]["reserved_sectors_new"]
        .as_u64()
        .expect("rsvd");
    assert!(reserved <= 65_535, "{v:#}");
    eprintln!(
        "{}",
        mkfs_alloc(&["recluster", "--cluster", "4K", "--dry-run", p]).stdout
    );
    let out = mkfs_alloc(&["recluster", "--cluster", "4K", "--yes", "-q", p]);
    out.assert_success();
    fsck_fat_clean(&img);
    assert_eq!(fsck_fat_geometry(&img), (4096, 512));
    let info = mtools("minfo", &img, &[]);
    info.assert_success();
    assert!(info.stdout.contains("cluster size: 8 sectors"), "{info}");
    let out = tmp.join("out");
    std::fs::create_dir_all(&out).expect("mkdir");
    let to = out.to_str().expect("utf-8");
    mtools("mcopy", &img, &["-s", "-n", "::/", to]).assert_success();
    for (path, data) in fat_tool_tree().into_iter().chain(more) {
        let got = std::fs::read(out.join(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(got == data, "{path} differs");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat)"]
fn fsck_fat_finds_every_file_intact_in_every_cut_state_of_an_evacuation() {
    let tmp = TempDir::new("recluster-fat32-evac-cuts");
    // 72 MiB at 1 KiB: 73,000 clusters, 142,000 at 512 bytes; the tool
    // tree and 40 files of 100 KiB from the start: freeing the window
    // after the old FATs moves fewer clusters than covering them all.
    let img = mkfs_fat_filled(&tmp, 72 << 20, &["-F", "32", "-s", "2", "-S", "512"]);
    let host = tmp.subdir("fill");
    mtools("mmd", &img, &["::/fill"]).assert_success();
    let mut files = fat_tool_tree();
    for i in 0..40u64 {
        let data = test_data(100 << 10 | i as usize, 1000 + i);
        let file = host.join(format!("p{i}"));
        std::fs::write(&file, &data).expect("write");
        let path = format!("fill/a file of the fill {i:02}.bin");
        let to = format!("::/{path}");
        mtools("mcopy", &img, &[file.to_str().expect("utf-8"), &to]).assert_success();
        files.push((path, data));
    }
    fsck_fat_clean(&img);
    let p = img.to_str().expect("utf-8");
    let plan = mkfs_alloc(&["recluster", "--cluster", "512", "--dry-run", p]);
    plan.assert_success();
    assert!(plan.stdout.contains("evacuation     first"), "{plan}");
    let sweep = FatCuts {
        to: 512,
        sector: 512,
        seeds: 1,
        max_points: 10,
        rerun: true,
        lost_clusters: true,
    };
    let c = fsck_fat_every_cut_state(&tmp, &img, sweep, &files);
    assert!(c.ops > 100 && c.states >= 30, "{c:?}");
    assert_eq!((c.intact_before, c.finished_by_rerun), (c.states, c.states));
    // Some states hold lost clusters; fsck.fat -a frees them and the same
    // command still finishes the job.
    assert!(c.repaired_then_finished > 0, "{c:?}");
}
