//! Batches of image files: no tool, no root.

use super::*;

/// Each image is planned for its own size; random identities all differ;
/// numbered labels; every target read back equal (`--verify`).
#[test]
fn each_image_gets_its_own_size_and_identity() {
    let tmp = TempDir::new("batch-own");
    let imgs = images(&tmp, 4, 60);
    let out = batch_random(
        &[
            "--fs",
            "exfat",
            "--label",
            "KIT{n:03}",
            "--verify",
            "--json",
        ],
        &imgs,
    );
    out.assert_success();
    let v = doc(&out);
    let t = targets(&v);
    assert_eq!(t.len(), 4);
    let mut serials = std::collections::BTreeSet::new();
    for (i, x) in t.iter().enumerate() {
        assert_eq!(x["verdict"], "ok", "{x}");
        assert_eq!(x["size_bytes"], (60 + i as u64) * MIB, "{x}");
        assert_eq!(x["volume_bytes"], (60 + i as u64) * MIB, "{x}");
        assert_eq!(x["label"], format!("KIT{:03}", i + 1));
        assert_eq!(x["verify"]["mismatches"], 0, "{x}");
        assert!(x["verify"]["bytes_verified"].as_u64() > Some(0), "{x}");
        assert!(x["bytes_written"].as_u64() > Some(0), "{x}");
        serials.insert(x["serial"].as_str().expect("serial").to_string());
        let boot = std::fs::read(&imgs[i]).expect("read");
        assert_eq!(&boot[3..11], b"EXFAT   ");
    }
    assert_eq!(serials.len(), 4, "two targets share a serial: {serials:?}");
    // The table says the same on a terminal-less stdout.
    let out = batch_random(&["--fs", "exfat", "--verify"], &imgs);
    out.assert_success();
    assert!(out.stdout.starts_with("TARGET"), "{out}");
    assert_eq!(
        out.stdout.lines().filter(|l| l.contains(" ok ")).count(),
        4,
        "{out}"
    );
}

/// `--serial-from` numbers the serials (and pins each target's GUIDs:
/// every one differs); `--number-from` the labels.
#[test]
fn numbered_serials_and_labels() {
    let tmp = TempDir::new("batch-numbered");
    let imgs = images(&tmp, 3, 64);
    let out = batch(
        &[
            "--fs",
            "fat32",
            "--table",
            "gpt",
            "--label",
            "CLASS{n:02}",
            "--serial-from",
            "1000-00FE",
            "--number-from",
            "9",
            "--json",
        ],
        &imgs,
    );
    out.assert_success();
    let v = doc(&out);
    let got: Vec<(String, String)> = targets(&v)
        .iter()
        .map(|x| {
            (
                x["serial"].as_str().unwrap_or("").to_string(),
                x["label"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("100000FE".to_string(), "CLASS09".to_string()),
            ("100000FF".to_string(), "CLASS10".to_string()),
            ("10000100".to_string(), "CLASS11".to_string()),
        ]
    );
    let mut guids = std::collections::BTreeSet::new();
    for x in targets(&v) {
        guids.insert(x["gpt_disk_guid"].to_string());
        guids.insert(x["gpt_partition_guid"].to_string());
    }
    assert_eq!(guids.len(), 6, "{guids:?}");
    // One --serial cannot serve several targets.
    let out = batch(&["--serial", "1234ABCD"], &imgs);
    out.assert_code(2);
    assert!(out.stderr.contains("--serial-from"), "{out}");
    // A template that cannot be read is refused before anything.
    let before = hashes(&imgs);
    batch(&["--label", "KIT{m}"], &imgs).assert_code(2);
    assert_eq!(hashes(&imgs), before);
}

/// One refused target: nothing is written anywhere (every target byte for
/// byte as it was, exit 2), each refusal named; `--skip-refused` formats
/// the others (exit 1: not every target succeeded).
#[test]
fn one_refused_target_stops_the_batch() {
    let tmp = TempDir::new("batch-refused");
    let mut imgs = images(&tmp, 3, 40);
    let small = tmp.join("small.img");
    fill_file(&small, MIB, 0xD1);
    imgs.insert(1, tmp.subdir("a-directory"));
    imgs.push(small.clone());
    let files: Vec<PathBuf> = imgs.iter().filter(|p| p.is_file()).cloned().collect();
    let before = hashes(&files);
    let out = batch(&["--fs", "fat32", "--json"], &imgs);
    out.assert_code(2);
    assert_eq!(hashes(&files), before, "a refused batch wrote something");
    let v = doc(&out);
    let got = verdicts(&v);
    assert_eq!(
        got,
        [
            "not written",
            "refused",
            "not written",
            "not written",
            "refused"
        ]
    );
    assert!(
        out.stderr.contains("a-directory") && out.stderr.contains("small.img"),
        "{out}"
    );
    assert!(out.stderr.contains("nothing was written"), "{out}");
    // The others go on with --skip-refused.
    let out = batch(&["--fs", "fat32", "--json", "--skip-refused"], &imgs);
    out.assert_code(1);
    let v = doc(&out);
    let got = verdicts(&v);
    assert_eq!(got, ["ok", "refused", "ok", "ok", "refused"]);
    assert_eq!(
        file_hash(&small),
        before[3],
        "the refused image was written"
    );
}

/// The same medium twice (a path and a symbolic link to it) is refused the
/// second time.
#[test]
fn the_same_image_twice_is_refused() {
    let tmp = TempDir::new("batch-twice");
    let imgs = images(&tmp, 1, 40);
    let link = tmp.join("link.img");
    std::os::unix::fs::symlink(&imgs[0], &link).expect("symlink");
    let before = hashes(&imgs);
    let out = batch(&[], &[imgs[0].clone(), link]);
    out.assert_code(2);
    assert!(out.stdout.contains("same medium"), "{out}");
    assert_eq!(hashes(&imgs), before);
}

/// `--log FILE` appends one JSON line per target and run: the time, the
/// command line and the target's result.
#[test]
fn log_appends_one_line_per_target() {
    let tmp = TempDir::new("batch-log");
    let imgs = images(&tmp, 2, 40);
    let log = tmp.join("batch.log");
    for _ in 0..2 {
        batch(&["--quiet", "--log", &log.to_string_lossy()], &imgs).assert_success();
    }
    let text = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(
            l["result"]["target"],
            imgs[i % 2].to_string_lossy().as_ref()
        );
        assert_eq!(l["result"]["verdict"], "ok");
        assert!(l["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{l}");
        assert!(l["command"].as_array().is_some_and(|c| c.len() > 2), "{l}");
    }
}

/// A dry run plans every target and writes nothing.
#[test]
fn a_dry_run_writes_nothing() {
    let tmp = TempDir::new("batch-dry");
    let imgs = images(&tmp, 3, 40);
    let before = hashes(&imgs);
    let out = batch(&["--dry-run", "--json"], &imgs);
    out.assert_success();
    let v = doc(&out);
    assert!(targets(&v).iter().all(|x| x["verdict"] == "planned"), "{v}");
    assert_eq!(hashes(&imgs), before);
}

/// The small texts of a batch: one target with a batch option and `--bmap`
/// is told which option runs the batch (not "give one target");
/// `--number-from` that would run past `u64::MAX` is refused with its
/// range; a template's stray brace is counted from 1; `--help` shows the
/// `{n:03}` placeholder on its line. Nothing is created.
#[test]
fn the_small_texts_of_a_batch() {
    let tmp = TempDir::new("batch-texts");
    let (a, b) = (tmp.join("a.img"), tmp.join("b.img"));
    let out = batch(
        &["--size", "64M", "--verify", "--bmap", "m.bmap"],
        std::slice::from_ref(&a),
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains("--verify") && !out.stderr.contains("give one target"),
        "{out}"
    );
    let out = batch(
        &["--size", "64M", "--number-from", "18446744073709551615"],
        &[a.clone(), b.clone()],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains("valid: 0..=18446744073709551614"),
        "{out}"
    );
    let out = batch(
        &["--size", "64M", "--label", "KIT{"],
        &[a.clone(), b.clone()],
    );
    out.assert_code(2);
    assert!(out.stderr.contains("character 4 of"), "{out}");
    assert!(!a.exists() && !b.exists(), "an image was created");
    let help = mkfs_alloc(&["--help"]);
    help.assert_success();
    let line = help
        .stdout
        .lines()
        .skip_while(|l| !l.contains("--number-from"))
        .nth(1)
        .unwrap_or_default();
    assert!(line.contains("KIT{n:03}"), "{}", help.stdout);
}
