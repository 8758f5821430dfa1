//! `mkfs-alloc resize` of an exFAT volume under power cuts, the black box
//! (`mkfs_alloc_tests::device_cuts`: `powercut.py`'s FUSE device under
//! `losetup --direct-io=on`, the CLI on the loop device): a volume made by
//! mkfs.exfat and filled through exfat-fuse, grown into its image grown
//! first (`--size` the new medium size), and shrunk with data lying past
//! the new end (which must move; the device keeps its size). Each cut
//! state is judged by fsck.exfat -n (only the dirty flag an unfinished job
//! sets) and exfat-fuse (every file as written) before the same command
//! finishes it: fsck.exfat clean, the new volume length, every file
//! identical.
//!
//! Tool tier: root, FUSE, fusepy, losetup, mkfs.exfat, exfat-fuse,
//! fsck.exfat, dump.exfat.

use mkfs_alloc_tests::checks::{field_after, fsck_exfat_clean};
use mkfs_alloc_tests::device_cuts::{
    assert_counts, exfat_files_intact, sweep_on_a_device, DeviceCutCounts, DeviceJob, Files,
};
use mkfs_alloc_tests::recluster::write_tree;
use mkfs_alloc_tests::tools::require_fuse;
use mkfs_alloc_tests::{
    mkfs_alloc, require_root, require_tool, run, test_data, FuseMount, LoopDevice, TempDir, MIB,
};
use std::path::{Path, PathBuf};

/// The volume length dump.exfat reads, in bytes.
fn volume_length(img: &Path) -> u64 {
    let dump = run(require_tool("dump.exfat"), &[img]);
    dump.assert_success();
    field_after(&dump, "Volume Length(sectors):") * 512
}

/// Files of `n` photo-sized files of about `len` bytes under two levels
/// of `top`, named with spaces (seeded by `seed`).
fn files(top: &str, n: usize, len: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let path = format!("{top}/d{}/sub {}/IMG {i:03}.JPG", i % 3, i % 2);
            // Odd seeds: test_data makes seeds 2n and 2n + 1 the same.
            (
                path,
                test_data(len + i * 997, seed * 1000 + 2 * i as u64 + 1),
            )
        })
        .collect()
}

/// mkfs.exfat -c `cluster` on `size` bytes in `tmp`, filled through
/// exfat-fuse on a plain loop device by `fill` (given the mount point).
fn mkfs_exfat(tmp: &TempDir, size: u64, cluster: &str, fill: &dyn Fn(&Path)) -> PathBuf {
    let img = tmp.join("v.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(size))
        .expect("image");
    let p = img.to_str().expect("utf-8");
    run(
        require_tool("mkfs.exfat"),
        &["-c", cluster, "-L", "CUTS", p],
    )
    .assert_success();
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("fill");
    let m = FuseMount::exfat(lo.path(), &mnt);
    fill(&mnt);
    m.unmount();
    drop(lo);
    fsck_exfat_clean(&img);
    img
}

/// The sweep of `resize --size NEW` on `img` holding `files`.
fn power_cuts(tmp: &TempDir, img: &Path, name: &str, new: u64, files: &Files) -> DeviceCutCounts {
    let old = volume_length(img);
    let mnt = tmp.subdir("mnt");
    let size = new.to_string();
    let args = ["resize", "--size", &size, "--yes", "-q"];
    let intact = |p: &Path| exfat_files_intact(p, &mnt, files);
    let layout = |p: &Path| match volume_length(p) {
        l if l == old => "old length".to_string(),
        l if l == new => "new length".to_string(),
        l => format!("{l} bytes"),
    };
    let finished = |p: &Path| {
        fsck_exfat_clean(p);
        assert_eq!(volume_length(p), new);
    };
    let job = DeviceJob {
        name,
        args: &args,
        files,
        control: &files[1].0,
        intact: &intact,
        layout: &layout,
        finished: &finished,
        spread: 16,
    };
    let c = sweep_on_a_device(tmp, img, &job);
    assert_counts(&c, 15);
    assert_eq!(
        c.layouts.keys().cloned().collect::<Vec<_>>(),
        ["new length", "old length"],
        "{c:?}"
    );
    c
}

fn require_tools() {
    require_root();
    require_fuse();
    for tool in [
        "losetup",
        "mkfs.exfat",
        "mount.exfat-fuse",
        "fsck.exfat",
        "dump.exfat",
    ] {
        require_tool(tool);
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.exfat, exfat-fuse)"]
fn cli_resize_growing_a_mkfs_exfat_volume_survives_power_cuts_on_a_device() {
    require_tools();
    let tmp = TempDir::new("resize-grow-powercut");
    let mut tree = files("photos", 24, 100_000, 1);
    tree.push(("empty".into(), Vec::new()));
    tree.push((
        "a name with spaces and ünïcode.txt".into(),
        test_data(5000, 3),
    ));
    let img = mkfs_exfat(&tmp, 32 * MIB, "32K", &|mnt| write_tree(mnt, &tree));
    // The image grown first, then the volume to its end.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .and_then(|f| f.set_len(96 * MIB))
        .expect("grow the image");
    let c = power_cuts(
        &tmp,
        &img,
        "resize 32 MiB -> 96 MiB of a mkfs.exfat volume",
        96 * MIB,
        &tree,
    );
    // The grow has fewer operations than the spread: every one is a cut
    // point.
    assert_eq!(c.points as u64, c.uncut.ops + 1, "{c:?}");
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, fusepy, mkfs.exfat, exfat-fuse)"]
fn cli_resize_shrinking_a_mkfs_exfat_volume_survives_power_cuts_on_a_device() {
    require_tools();
    let tmp = TempDir::new("resize-shrink-powercut");
    // Fill, delete every other file, fill again: data over the whole
    // volume, with holes below the new end to move it into.
    let first = files("first", 36, 120_000, 1);
    let second = files("second", 8, 45_000, 2);
    let mut kept: Vec<(String, Vec<u8>)> = first.iter().skip(1).step_by(2).cloned().collect();
    kept.extend(second.iter().cloned());
    let img = mkfs_exfat(&tmp, 8 * MIB, "16K", &|mnt| {
        write_tree(mnt, &first);
        for (path, _) in first.iter().step_by(2) {
            std::fs::remove_file(mnt.join(path)).expect("rm");
        }
        write_tree(mnt, &second);
    });
    // To the smallest size a refusal names, rounded up to whole MiB.
    let p = img.to_str().expect("utf-8");
    let out = mkfs_alloc(&["resize", "--size", "1M", "--yes", p]);
    out.assert_code(2);
    let least = out
        .stderr
        .split("shrinks to is ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no size in {out}"));
    let new = least.div_ceil(MIB) * MIB;
    assert!(new < 8 * MIB, "{out}");
    // Data lies past the new end: the plan moves clusters.
    let size = new.to_string();
    let plan = mkfs_alloc(&["resize", "--size", &size, "--dry-run", "--json", p]);
    plan.assert_success();
    let v: serde_json::Value = serde_json::from_str(&plan.stdout).expect("json");
    assert!(
        v["grow"]["moved_clusters"].as_u64().unwrap_or(0) > 0,
        "{v:#}"
    );
    let name = format!(
        "resize 8 MiB -> {} MiB of a mkfs.exfat volume with data past the new end",
        new / MIB
    );
    power_cuts(&tmp, &img, &name, new, &kept);
}
