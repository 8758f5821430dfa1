//! Batches of block devices (root, tool tier): eight loop devices of
//! slightly different sizes, one a counterfeit (the FUSE fake stick), one
//! dying with EIO part-way, and two images; a read-only device refused.

use super::*;
use mkfs_alloc_tests::check::with_volume;
use mkfs_alloc_tests::checks::fsck_exfat_clean;
use mkfs_alloc_tests::fakestick::{FakeStick, Mode};
use mkfs_alloc_tests::{require_root, sparse_file, FuseMount, LoopDevice, LoopOptions};

/// Every file of `files` reads back from the exFAT volume on `dev`
/// through exfat-fuse.
fn reads_back(dev: &Path, files: &[(String, Vec<u8>)], tmp: &TempDir, tag: &str) {
    let mnt = tmp.subdir(&format!("mnt-{tag}"));
    // exfat-fuse mounts block devices: an image through a loop device.
    let lo = dev.is_file().then(|| LoopDevice::attach(dev));
    let m = FuseMount::exfat(lo.as_ref().map_or(dev, |l| l.path()), &mnt);
    for (name, data) in files {
        let got = std::fs::read(mnt.join(name))
            .unwrap_or_else(|e| panic!("{}: {name}: {e}", dev.display()));
        assert!(got == *data, "{}: {name} differs", dev.display());
    }
    m.unmount();
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn eight_sticks_one_fake_one_dying_and_two_images() {
    require_root();
    let tmp = TempDir::new("batch-sticks");
    let src = tmp.subdir("src");
    let files = source_tree(&src);
    let tree_bytes: u64 = files.iter().map(|(_, d)| d.len() as u64).sum();
    // Six genuine sticks of 96..101 MiB.
    let mut loops = Vec::new();
    for i in 0..6u64 {
        let backing = tmp.join(&format!("stick{i}.raw"));
        sparse_file(&backing, (96 + i) * MIB);
        loops.push(LoopDevice::attach(&backing));
    }
    // A "128 MiB" stick storing 4 MiB (the tree's data wraps onto the
    // table), and a 100 MiB stick whose writes from 40 MiB on fail with EIO.
    let (tf, td) = (TempDir::new("batch-fake"), TempDir::new("batch-dying"));
    let fake = FakeStick::new(&tf, Mode::Wraparound, 128 * MIB, 4 * MIB, 0);
    let dying = FakeStick::new(&td, Mode::Eio, 100 * MIB, 40 * MIB, 0);
    let imgs = images(&tmp, 2, 97);
    let mut all: Vec<PathBuf> = loops.iter().map(|l| l.path().to_path_buf()).collect();
    all.insert(2, fake.path().to_path_buf());
    all.insert(5, dying.path().to_path_buf());
    all.extend(imgs.iter().cloned());
    let src_s = src.to_string_lossy().into_owned();
    let out = batch_random(
        &[
            "--fs",
            "exfat",
            "--rootdir",
            &src_s,
            "--label",
            "KIT{n:02}",
            "--verify",
            "--yes",
            "--json",
        ],
        &all,
    );
    out.assert_code(1);
    let v = doc(&out);
    let t = targets(&v);
    let got = verdicts(&v);
    let mut want = vec!["ok"; 10];
    want[2] = "verify-failed"; // the counterfeit: what wrapped reads back wrong
    want[5] = "failed"; // the dying stick
    assert_eq!(got, want, "{v:#}");
    assert!(
        t[5]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Input/output")),
        "{}",
        t[5]
    );
    // The tree was read once for all ten.
    let notes = v["summary"]["notes"].to_string();
    let read = format!("read {}", mkfs_alloc_layout_units(tree_bytes));
    assert!(
        notes.contains(&read) && notes.contains("in 1 pass"),
        "{notes}"
    );
    // No two alike.
    let serials: std::collections::BTreeSet<&str> =
        t.iter().filter_map(|x| x["serial"].as_str()).collect();
    assert_eq!(serials.len(), 10);
    // Every good one is clean and holds the tree.
    for (i, x) in t.iter().enumerate() {
        if x["verdict"] != "ok" {
            continue;
        }
        assert_eq!(x["verify"]["mismatches"], 0, "{x}");
        assert!(
            x["verify"]["bytes_verified"].as_u64() > Some(tree_bytes),
            "{x}"
        );
        let start = x["partition_start"].as_u64().expect("start");
        let len = x["volume_bytes"].as_u64().expect("length");
        with_volume(&all[i], start, len, |vol| {
            fsck_exfat_clean(vol);
            reads_back(vol, &files, &tmp, &i.to_string());
        });
    }
    drop(loops);
    fake.remove();
    dying.remove();
}

/// The bytes as the table and notes print them.
fn mkfs_alloc_layout_units(bytes: u64) -> String {
    mkfs_alloc_layout::units::format_size(bytes)
}

/// `--probe` finds the counterfeit before anything is formatted on it
/// (verdict "fake"); the genuine sticks are formatted.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn probe_finds_the_fake_and_the_others_go_on() {
    require_root();
    let tmp = TempDir::new("batch-probe");
    let mut loops = Vec::new();
    for i in 0..2u64 {
        let backing = tmp.join(&format!("g{i}.raw"));
        sparse_file(&backing, (64 + i) * MIB);
        loops.push(LoopDevice::attach(&backing));
    }
    let tf = TempDir::new("batch-probe-fake");
    let fake = FakeStick::new(&tf, Mode::Wraparound, 256 * MIB, 32 * MIB, 0);
    let all = vec![
        loops[0].path().to_path_buf(),
        fake.path().to_path_buf(),
        loops[1].path().to_path_buf(),
    ];
    let out = batch(&["--probe", "--yes", "--json", "--jobs", "2"], &all);
    out.assert_code(1);
    let v = doc(&out);
    let got = verdicts(&v);
    assert_eq!(got, ["ok", "fake", "ok"], "{v:#}");
    assert!(targets(&v)[1]["error"]
        .as_str()
        .is_some_and(|e| e.contains("--size")));
    drop(loops);
    fake.remove();
}

/// A read-only device is refused: nothing is written to any target (every
/// backing file byte for byte as it was), unless --skip-refused.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_refused_device_stops_every_target() {
    require_root();
    let tmp = TempDir::new("batch-ro");
    let mut backing = Vec::new();
    let mut loops = Vec::new();
    for i in 0..3u64 {
        let b = tmp.join(&format!("d{i}.raw"));
        fill_file(&b, (48 + i) * MIB, 0xD1);
        let opts = LoopOptions {
            read_only: i == 1,
            ..LoopOptions::default()
        };
        loops.push(LoopDevice::attach_with(&b, opts));
        backing.push(b);
    }
    let devs: Vec<PathBuf> = loops.iter().map(|l| l.path().to_path_buf()).collect();
    let before = hashes(&backing);
    let out = batch(&["--yes"], &devs);
    out.assert_code(2);
    for l in &loops {
        l.flush();
    }
    assert_eq!(hashes(&backing), before, "a refused batch wrote something");
    assert!(
        out.stderr.contains(&devs[1].to_string_lossy().to_string()),
        "{out}"
    );
    let out = batch(&["--yes", "--skip-refused", "--json"], &devs);
    out.assert_code(1);
    let v = doc(&out);
    let got = verdicts(&v);
    assert_eq!(got, ["ok", "refused", "ok"]);
    for l in &loops {
        l.flush();
    }
    assert_eq!(file_hash(&backing[1]), before[1]);
    assert_ne!(file_hash(&backing[0]), before[0]);
}
