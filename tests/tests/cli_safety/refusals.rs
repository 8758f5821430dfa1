//! Every refusal before the first write exits 2, says
//! why once, in words a terminal can show, and leaves the target as it was
//! (an existing image byte-identical and its length unchanged, a new one
//! never created). One table of the format command's refusals.

use super::*;

/// Where a row's target is.
#[derive(Clone, Copy)]
enum Target {
    /// An existing 4 MiB image filled with 0xD1.
    Existing,
    /// A path that does not exist.
    New,
    /// The path given as is.
    Path(&'static str),
}

/// One refusal: the arguments before the target, where the target is, and
/// words the message must hold.
struct Row {
    args: &'static [&'static str],
    target: Target,
    says: &'static [&'static str],
}

const fn row(args: &'static [&'static str], target: Target, says: &'static [&'static str]) -> Row {
    Row { args, target, says }
}

/// The refusals of the format command, each exit 2. `TREE` stands for a
/// small source tree, `WIDE` for one with 600 files at its top level.
#[rustfmt::skip]
const ROWS: &[Row] = &[
    // Arguments alone.
    row(&["--cluster", "3K", "--size", "64M"], Target::New, &["power of two"]),
    row(&["--size", "0"], Target::New, &["--size"]),
    row(&["--size", "12Q"], Target::New, &["--size"]),
    row(&["--serial", "xyz", "--size", "64M"], Target::New, &["--serial"]),
    row(&["--sector-size", "768", "--size", "64M"], Target::New, &["512, 1024, 2048, 4096"]),
    row(&["--align", "3K", "--size", "64M"], Target::New, &["--align"]),
    row(&["--label", "a/b", "--size", "64M"], Target::New, &["label"]),
    row(&["--root-entries", "0", "--fs", "fat16", "--size", "64M"], Target::New, &["1..=32768"]),
    row(&["--fs", "fat32", "--cluster", "32K", "--size", "1G"], Target::New, &["valid:"]),
    row(&["--size", "auto"], Target::New, &["--rootdir"]),
    row(&["--data", "TREE", "--cluster", "4K", "--size", "64M"], Target::New, &["--data"]),
    row(&["--rootdir", "TREE", "--data", "TREE", "--size", "64M"], Target::New, &["--data"]),
    row(&["--esp", "--fs", "exfat", "--size", "64M"], Target::New, &["FAT"]),
    // --slack: only with --size auto; its range named.
    row(&["--slack", "5", "--size", "64M"], Target::New, &["--slack", "--size auto"]),
    row(&["--rootdir", "TREE", "--slack", "5", "--size", "64M"], Target::New, &["--size auto"]),
    row(&["--rootdir", "TREE", "--slack", "-1", "--size", "auto"], Target::New, &["0..1000"]),
    row(&["--rootdir", "TREE", "--slack", "inf", "--size", "auto"], Target::New, &["0..1000"]),
    // The tree.
    row(&["--rootdir", "no/such/dir", "--size", "64M"], Target::New, &["no/such/dir"]),
    row(&["--fs", "fat16", "--rootdir", "WIDE", "--size", "32M"], Target::New,
        &["holds 512 entries", "--root-entries"]),
    // The target.
    row(&["--size", "64M"], Target::Path("list"), &["./list"]),
    row(&["--size", "64M"], Target::Path("probe"), &["./probe"]),
    row(&["--size", "64M"], Target::Path("help"), &["./help"]),
    row(&[], Target::New, &["does not exist"]),
    row(&["--size", "64M"], Target::Path("no/such/dir/a.img"), &["does not exist"]),
    row(&["--size", "64M"], Target::Path("."), &["is a directory"]),
    row(&["--size", "1M"], Target::Existing, &["never shrunk"]),
    row(&["--size", "4194404"], Target::Existing, &["sector size"]),
    row(&["--fs", "fat32"], Target::Existing, &["too small for FAT32"]),
    // A file of /proc takes any size and keeps its length: no image (exit 1
    // on the previous main, from its first read).
    row(&["--size", "64M"], Target::Path("/proc/version"), &["not an image file"]),
];

/// What is wrong with one row's run, if anything.
fn check_row(r: &Row, out: &CmdOutput, image_as_before: bool, created: bool) -> Vec<String> {
    let mut wrong = Vec::new();
    if out.code != Some(2) {
        wrong.push(format!("exit code {:?}", out.code));
    }
    for w in r.says.iter().filter(|w| !out.stderr.contains(*w)) {
        wrong.push(format!("{w:?} not said"));
    }
    if out.stderr.lines().filter(|l| l.contains("error")).count() != 1 {
        wrong.push("not one error line".into());
    }
    if !image_as_before {
        wrong.push("the existing image changed".into());
    }
    if created {
        wrong.push("the new image was created".into());
    }
    wrong
}

/// The table: exit 2, the words, the target untouched, one error line; the
/// same with `--json` as one document.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn every_refusal_before_writing_exits_2() {
    // As root: a non-root run is refused /proc/version by its permissions.
    require_root();
    let tmp = TempDir::new("refusal-table");
    let tree = tmp.subdir("tree");
    std::fs::write(tree.join("a.txt"), b"a").expect("write");
    let wide = tmp.subdir("wide");
    for i in 0..600 {
        std::fs::write(wide.join(format!("f{i}")), b"").expect("write");
    }
    let existing = tmp.join("old.img");
    let new = tmp.join("new.img");
    let mut failures = Vec::new();
    for r in ROWS {
        let mut args: Vec<String> = r
            .args
            .iter()
            .map(|a| match *a {
                "TREE" => tree.to_string_lossy().into_owned(),
                "WIDE" => wide.to_string_lossy().into_owned(),
                a => a.to_string(),
            })
            .collect();
        args.push(match r.target {
            Target::Existing => existing.to_string_lossy().into_owned(),
            Target::New => new.to_string_lossy().into_owned(),
            Target::Path(p) => p.to_string(),
        });
        for json in [false, true] {
            fill_file(&existing, 4 * MIB, 0xD1);
            let before = file_hash(&existing);
            let mut a: Vec<&str> = json.then_some("--json").into_iter().collect();
            a.extend(args.iter().map(String::as_str));
            let out = run_in(tmp.path(), &a);
            let as_before = file_hash(&existing) == before
                && std::fs::metadata(&existing).map(|m| m.len()).ok() == Some(4 * MIB);
            let mut wrong = check_row(r, &out, as_before, new.exists());
            if json {
                // The JSON document, not the words on stderr, is checked.
                wrong.retain(|w| !w.ends_with("not said") && w != "not one error line");
                if out.code == Some(2) {
                    one_document(&out);
                }
            }
            let _ = std::fs::remove_file(&new);
            if !wrong.is_empty() {
                failures.push(format!("{}:\n{out}", wrong.join(", ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The missing `--rootdir` said its reason twice ("No such file or
/// directory (os error 2): No such file or directory (os error 2)").
#[test]
fn an_error_says_its_cause_once() {
    let tmp = TempDir::new("cause-once");
    let out = run_in(
        tmp.path(),
        &["--rootdir", "missing", "--size", "64M", "a.img"],
    );
    out.assert_code(2);
    assert_eq!(
        out.stderr.matches("No such file or directory").count(),
        1,
        "{out}"
    );
    let doc = one_document(&run_in(
        tmp.path(),
        &["--json", "--rootdir", "missing", "--size", "64M", "a.img"],
    ));
    let e = doc["error"].as_str().unwrap_or_default();
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
}

/// A target path far over PATH_MAX is shortened in the message (it was
/// printed whole: 5 KB of one line).
#[test]
fn a_path_over_path_max_is_shortened() {
    let tmp = TempDir::new("long-path");
    let long = format!(
        "{}/{}/{}/last.img",
        tmp.path().display(),
        "d".repeat(250),
        vec!["x".repeat(250); 20].join("/")
    );
    assert!(long.len() > 4096);
    for args in [
        vec!["--size", "64M", long.as_str()],
        vec!["info", long.as_str()],
        vec!["--rootdir", long.as_str(), "--size", "64M", "a.img"],
    ] {
        let out = run_in(tmp.path(), &args);
        out.assert_code(2);
        assert!(out.stderr.len() < 800, "{} bytes:\n{out}", out.stderr.len());
        assert!(out.stderr.contains('…'), "{out}");
        let mut json = vec!["--json"];
        json.extend(&args);
        let doc = one_document(&run_in(tmp.path(), &json));
        let e = doc["error"].as_str().unwrap_or_default();
        assert!(e.len() < 800, "{e}");
    }
}

/// The summary of a `--rootdir` format says the tree chose the cluster
/// size (it said "--data"), in the text and in the JSON.
#[test]
fn a_rootdir_summary_does_not_say_data() {
    let tmp = TempDir::new("rootdir-rule");
    let tree = tmp.subdir("tree");
    std::fs::write(tree.join("a.txt"), b"a").expect("write");
    let tree_s = tree.to_string_lossy().into_owned();
    let out = run_in(
        tmp.path(),
        &["--fs", "exfat", "-d", &tree_s, "--size", "64M", "a.img"],
    );
    out.assert_success();
    assert!(!out.stdout.contains("--data"), "{out}");
    assert!(
        out.stdout.contains("chosen for the files of --rootdir"),
        "{out}"
    );
    let doc = one_document(&run_in(
        tmp.path(),
        &[
            "--json",
            "--dry-run",
            "--fs",
            "exfat",
            "-d",
            &tree_s,
            "--size",
            "64M",
            "b.img",
        ],
    ));
    assert_eq!(
        doc["cluster_rule_text"],
        "chosen for the files of --rootdir"
    );
}
