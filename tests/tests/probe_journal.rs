//! `mkfs-alloc probe --keep-data` journals after a crash, through the CLI,
//! and `probe --full` on image files.
//!
//! A crash without root: the probe runs under a file-size limit (`ulimit
//! -f`, SIGXFSZ ignored) below the image's size, so its writes beyond the
//! limit fail with EFBIG, its own restore fails the same way, and it exits
//! 1 leaving the image with test blocks and the journal behind, exactly
//! where a pulled stick would (the same every run: `--seed`). Then:
//! one flipped byte in a record, a journal cut short, another image of the
//! same or another size, a journal in the way of the next probe.
//!
//! The journal's records start at byte 1536 and are 24 + 4096 bytes long
//! (format version 2, `crates/mkfs-alloc-capacity/src/journal.rs`).

use mkfs_alloc_tests::blk::fill_random;
use mkfs_alloc_tests::{
    file_hash, json_str, json_u64, mkfs_alloc, mkfs_alloc_bin, require_root, require_tool, run,
    CmdOutput, TempDir, TmpfsMount, MIB,
};
use serde_json::Value;
use std::path::Path;

const UNIT: u64 = 4096;
const RECORDS_AT: u64 = 1536;
const RECORD_LEN: u64 = 24 + UNIT;
const IMAGE: u64 = 64 * MIB;

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A 64 MiB image of random data, and a `--keep-data` probe of it that
/// crashed (journal `j` left behind). Returns the original bytes and the
/// crashed probe's output.
#[track_caller]
fn crashed_with(img: &Path, j: &Path) -> (Vec<u8>, CmdOutput) {
    fill_random(img, IMAGE, 77);
    let orig = std::fs::read(img).unwrap_or_else(|e| panic!("{e}"));
    let sh = require_tool("sh");
    let limit = (48 * MIB / 512).to_string();
    let bin = s(&mkfs_alloc_bin());
    let out = run(
        &sh,
        &[
            "-c",
            "trap '' XFSZ; ulimit -f \"$1\"; shift; exec \"$@\"",
            "sh",
            &limit,
            &bin,
            "probe",
            "--yes",
            "--no-speed",
            "--seed",
            "5",
            "--keep-data",
            "--journal",
            &s(j),
            &s(img),
        ],
    );
    out.assert_code(1);
    assert!(j.exists(), "no journal left behind:\n{out}");
    let now = std::fs::read(img).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        changed_units(&orig, &now).len() > 20,
        "the crash left too few test blocks"
    );
    (orig, out)
}

#[track_caller]
fn crashed(img: &Path, j: &Path) -> Vec<u8> {
    crashed_with(img, j).0
}

fn changed_units(orig: &[u8], now: &[u8]) -> Vec<u64> {
    (0..orig.len() as u64 / UNIT)
        .filter(|&u| {
            let r = (u * UNIT) as usize..((u + 1) * UNIT) as usize;
            orig[r.clone()] != now[r]
        })
        .collect()
}

fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap_or_else(|e| panic!("{e}"));
    b[at as usize] ^= 0x10;
    std::fs::write(path, b).unwrap_or_else(|e| panic!("{e}"));
}

#[track_caller]
fn restore(j: &Path, target: &Path) -> (CmdOutput, Option<Value>) {
    let out = mkfs_alloc(&["probe", "--yes", "--json", "--restore", &s(j), &s(target)]);
    let v = serde_json::from_str(&out.stdout).ok();
    (out, v)
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn one_damaged_record_costs_that_record_only_and_the_journal_is_kept() {
    let dir = TempDir::new("pj-flip");
    let (img, j) = (dir.join("img"), dir.join("j"));
    let orig = crashed(&img, &j);
    flip(&j, RECORDS_AT + 10 * RECORD_LEN + 24 + 100);
    let (out, v) = restore(&j, &img);
    out.assert_code(1);
    assert!(j.exists(), "the journal was removed:\n{out}");
    assert!(out.stderr.contains("1 of "), "{out}");
    let v = v.unwrap_or_else(|| panic!("no JSON document:\n{out}"));
    assert_eq!(json_u64(&v, "records_lost"), 1, "{v}");
    assert_eq!(v["journal_kept"], Value::Bool(true));
    let ranges = v["lost_ranges"].as_array().cloned().unwrap_or_default();
    assert_eq!(ranges.len(), 1, "{v}");
    let off = ranges[0][0].as_u64().unwrap_or(u64::MAX);
    assert_eq!(ranges[0][1].as_u64(), Some(UNIT));
    assert!(
        out.stderr.contains(&format!("bytes {off}..{}", off + UNIT)),
        "{out}"
    );
    let now = std::fs::read(&img).unwrap_or_else(|e| panic!("{e}"));
    let left = changed_units(&orig, &now);
    assert!(
        left.iter().all(|&u| u == off / UNIT),
        "blocks outside the lost range were not restored: {left:?}"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_journal_cut_short_restores_what_it_holds_and_is_kept() {
    let dir = TempDir::new("pj-short");
    let (img, j) = (dir.join("img"), dir.join("j"));
    let orig = crashed(&img, &j);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&j)
        .unwrap_or_else(|e| panic!("{e}"));
    f.set_len(RECORDS_AT + 40 * RECORD_LEN + 7)
        .unwrap_or_else(|e| panic!("{e}"));
    drop(f);
    let (out, v) = restore(&j, &img);
    out.assert_code(1);
    assert!(j.exists(), "the journal was removed:\n{out}");
    assert!(out.stderr.contains("position is unknown"), "{out}");
    let v = v.unwrap_or_else(|| panic!("no JSON document:\n{out}"));
    assert_eq!(json_u64(&v, "records_restored"), 40, "{v}");
    // What is left differs only where a test block still is.
    let now = std::fs::read(&img).unwrap_or_else(|e| panic!("{e}"));
    for u in changed_units(&orig, &now) {
        let at = (u * UNIT) as usize;
        assert_eq!(&now[at..at + 8], b"MKFSPRB1", "unit {u} holds neither");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_journal_is_refused_on_another_device_and_restored_on_its_own() {
    let dir = TempDir::new("pj-other");
    let (img, j) = (dir.join("img"), dir.join("j"));
    let orig = crashed(&img, &j);
    // Another image of the same size: refused, untouched.
    let other = dir.join("other");
    fill_random(&other, IMAGE, 78);
    let before = file_hash(&other);
    let (out, _) = restore(&j, &other);
    out.assert_code(2);
    assert!(out.stderr.contains("nothing was written"), "{out}");
    assert_eq!(file_hash(&other), before, "a refused restore wrote");
    // Another size: refused before the first write (exit 2), untouched.
    let small = dir.join("small");
    fill_random(&small, IMAGE / 2, 79);
    let before = file_hash(&small);
    let (out, _) = restore(&j, &small);
    out.assert_code(2);
    assert!(out.stderr.contains("bytes"), "{out}");
    assert_eq!(file_hash(&small), before);
    // Its own image: every block back, journal removed.
    let (out, v) = restore(&j, &img);
    out.assert_success();
    assert!(!j.exists());
    let v = v.unwrap_or_else(|| panic!("{out}"));
    assert_eq!(v["journal_kept"], Value::Bool(false));
    assert!(std::fs::read(&img).unwrap_or_default() == orig);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_journal_in_the_way_says_how_to_clear_it() {
    let dir = TempDir::new("pj-way");
    let (img, j) = (dir.join("img"), dir.join("j"));
    let (_, out) = crashed_with(&img, &j);
    assert!(
        out.stderr
            .contains(&format!("--restore {} {}", s(&j), s(&img))),
        "the crashed probe does not say how to restore:\n{out}"
    );
    let probe = |journal: &Path| {
        mkfs_alloc(&[
            "probe",
            "--yes",
            "--keep-data",
            "--journal",
            &s(journal),
            &s(&img),
        ])
    };
    let out = probe(&j);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains(&format!("--restore {} {}", s(&j), s(&img))),
        "{out}"
    );
    // An empty journal (a probe stopped before saving): remove it.
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap_or_else(|e| panic!("{e}"));
    let out = probe(&empty);
    out.assert_code(2);
    assert!(out.stderr.contains(&format!("rm {}", s(&empty))), "{out}");
    // --restore of it removes it, writing nothing.
    let before = file_hash(&img);
    let out = mkfs_alloc(&["probe", "--yes", "--restore", &s(&empty), &s(&img)]);
    out.assert_success();
    assert!(!empty.exists());
    assert_eq!(file_hash(&img), before);
}

/// The journal's disk fills up mid-probe: the probe stops, writes back
/// what it overwrote, removes the journal and says so; the next probe is
/// not blocked.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_full_journal_disk_leaves_the_device_and_the_next_probe_alone() {
    require_root();
    let dir = TempDir::new("pj-enospc");
    let img = dir.join("img");
    fill_random(&img, IMAGE, 80);
    let before = file_hash(&img);
    let mnt = dir.subdir("small");
    let _tmpfs = TmpfsMount::mount(&mnt, "size=256k");
    let j = mnt.join("j");
    let out = mkfs_alloc(&[
        "probe",
        "--yes",
        "--no-speed",
        "--keep-data",
        "--journal",
        &s(&j),
        &s(&img),
    ]);
    out.assert_code(1);
    assert!(out.stderr.contains("disk full"), "{out}");
    assert!(out.stderr.contains("removed the journal"), "{out}");
    assert!(!j.exists(), "the journal was left behind:\n{out}");
    assert_eq!(file_hash(&img), before, "the device was not restored");
    let j2 = dir.join("j2");
    let out = mkfs_alloc(&[
        "probe",
        "--yes",
        "--no-speed",
        "--keep-data",
        "--journal",
        &s(&j2),
        &s(&img),
    ]);
    out.assert_success();
    assert_eq!(file_hash(&img), before);
}

#[test]
fn full_with_keep_data_is_refused_and_writes_nothing() {
    let dir = TempDir::new("pj-full-keep");
    let img = dir.join("img");
    fill_random(&img, 8 * MIB, 81);
    let before = file_hash(&img);
    let out = mkfs_alloc(&["probe", "--yes", "--full", "--keep-data", &s(&img)]);
    out.assert_code(2);
    assert!(out.stderr.contains("cannot be used with --full"), "{out}");
    assert_eq!(file_hash(&img), before);
}

#[test]
fn full_writes_and_checks_every_block_with_the_same_json_as_sampling() {
    let dir = TempDir::new("pj-full");
    let img = dir.join("img");
    fill_random(&img, 16 * MIB, 82);
    let out = mkfs_alloc(&["probe", "--yes", "--json", "--full", &s(&img)]);
    out.assert_success();
    let full: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(json_str(&full, "verdict"), "genuine");
    assert_eq!(json_str(&full, "mode"), "full");
    assert_eq!(json_u64(&full, "bad_bytes"), 0);
    assert!(json_u64(&full, "bytes_written") >= 16 * MIB);
    assert!(json_u64(&full, "bytes_read") >= 16 * MIB);
    // Every block now holds a test block.
    let data = std::fs::read(&img).unwrap_or_default();
    assert!(data.chunks(UNIT as usize).all(|c| &c[..8] == b"MKFSPRB1"));
    let out = mkfs_alloc(&["probe", "--yes", "--json", &s(&img)]);
    out.assert_success();
    let sampled: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json_str(&sampled, "mode"), "sampling");
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&full), keys(&sampled), "the JSON shapes differ");
}

#[test]
fn the_sampling_report_and_the_help_say_what_sampling_cannot_prove() {
    let dir = TempDir::new("pj-text");
    let img = dir.join("img");
    fill_random(&img, 16 * MIB, 83);
    let out = mkfs_alloc(&["probe", "--yes", "--no-speed", &s(&img)]);
    out.assert_success();
    assert!(
        out.stdout.contains("cannot prove")
            && out.stdout.contains(&format!("probe --full {}", s(&img))),
        "{out}"
    );
    let help = mkfs_alloc(&["probe", "--help"]);
    help.assert_success();
    for words in ["--full", "cannot prove", "H2testw", "recycling the oldest"] {
        assert!(help.stdout.contains(words), "help lacks {words:?}:\n{help}");
    }
}

/// A journal path that is the probed target (by its name, a symbolic link
/// or a hard link), a device (`/dev/null`) or a directory is refused before
/// anything is written (exit 2, the target byte-identical, nothing
/// created), for `--keep-data` and for `--restore`; the refusal names what
/// the path is and never advises removing it.
#[test]
fn a_journal_that_is_the_target_or_a_device_is_refused() {
    let tmp = TempDir::new("probe-journal-target");
    let img = tmp.join("stick.img");
    fill_random(&img, 8 * MIB, 12);
    let before = file_hash(&img);
    let link = tmp.join("link.img");
    std::os::unix::fs::symlink(&img, &link).unwrap_or_else(|e| panic!("{e}"));
    let hard = tmp.join("hard.img");
    std::fs::hard_link(&img, &hard).unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.subdir("journals");
    let cases = [
        (img.clone(), "is the probed target"),
        (link, "is the probed target"),
        (hard, "is the probed target"),
        (Path::new("/dev/null").to_path_buf(), "is a device"),
        (dir.clone(), "is not a regular file"),
    ];
    for (j, why) in &cases {
        for args in [
            vec!["probe", "--yes", "--keep-data", "--journal"],
            vec!["probe", "--yes", "--restore"],
        ] {
            let mut all = args.clone();
            let (js, is) = (s(j), s(&img));
            all.push(&js);
            all.push(&is);
            let out = mkfs_alloc(&all);
            out.assert_code(2);
            assert!(out.stderr.contains(why), "{out}");
            assert!(out.stderr.contains("nothing was written"), "{out}");
            assert!(!out.stderr.contains("rm "), "{out}");
            assert_eq!(file_hash(&img), before, "{out}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
