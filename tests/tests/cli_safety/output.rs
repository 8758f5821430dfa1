//! What the CLI prints: one JSON document per outcome, refusals that need no
//! write access, completions, and the small texts.

use super::*;

/// `--json` prints exactly one JSON document for every outcome,
/// argument errors included; `info --json` on a damaged image puts the
/// error into its report instead of printing a second document.
#[test]
fn json_is_one_document_for_every_outcome() {
    let tmp = TempDir::new("json-one");
    let img = tmp.join("a.img");
    let img_s = img.to_string_lossy().into_owned();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["--json", "--bogus", &img_s], 2),
        (vec!["--json", "--fs", "ntfs", "--size", "64M", &img_s], 2),
        (vec!["--json", "--size", "64M", "--size", "65M", &img_s], 2),
        (vec!["--json"], 2),
        (vec!["advise", "--json"], 2),
        (vec!["advise", "--json", "--size"], 2),
        (vec!["info", "--json"], 2),
        (vec!["list", "--json", "--bogus"], 2),
        (vec!["--json", "--dry-run", "--size", "64M", &img_s], 0),
        // `--json` anywhere, before a command's name and
        // with --help and --version too.
        (vec!["--json", "info", &img_s], 2),
        (vec!["--json", "--json", "advise", "--size", "1G"], 0),
        (vec!["--json", "list"], 0),
        (vec!["--json", "completions", "bash"], 2),
        (vec!["completions", "bash", "--json"], 2),
    ];
    for (args, code) in &cases {
        let out = mkfs_alloc(args);
        out.assert_code(*code);
        one_document(&out);
    }
    // {"help": TEXT} and {"name": "mkfs-alloc", "version": V}.
    for args in [
        vec!["--json", "--help"],
        vec!["--help", "--json"],
        vec!["--json", "info", "--help"],
        vec!["--json", "help", "info"],
        vec!["help", "--json"],
    ] {
        let out = mkfs_alloc(&args);
        out.assert_code(0);
        let doc = one_document(&out);
        let help = doc["help"].as_str().unwrap_or_default();
        assert!(help.contains("Usage: mkfs-alloc"), "{args:?}:\n{out}");
    }
    for args in [vec!["--json", "--version"], vec!["-V", "--json"]] {
        let out = mkfs_alloc(&args);
        out.assert_code(0);
        let doc = one_document(&out);
        assert_eq!(doc["name"], "mkfs-alloc", "{out}");
        assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"), "{out}");
    }
    assert!(!img.exists(), "a dry run created the image");

    // A truncated image: the report and its error in one document, exit 1.
    mkfs_alloc(&["--fs", "exfat", "--size", "64M", &img_s]).assert_success();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .expect("open");
    f.set_len(2 * MIB).expect("truncate");
    let out = mkfs_alloc(&["info", "--json", &img_s]);
    out.assert_code(1);
    let doc = one_document(&out);
    assert!(doc["volumes"].is_array(), "the report is kept:\n{out}");
}

/// `info` on a FIFO (or another non-regular, non-block file) exits
/// 2 at once instead of blocking on the open.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn info_refuses_a_fifo_at_once() {
    let tmp = TempDir::new("fifo");
    let fifo = tmp.join("pipe");
    let made = Command::new(require_tool("mkfifo"))
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success();
    assert!(made);
    for args in [
        vec!["info"],
        vec!["info", "--json"],
        vec!["--dry-run"],
        vec![],
    ] {
        let mut child = Command::new(mkfs_alloc_bin())
            .args(&args)
            .arg(&fifo)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break Some(s);
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let status = status.unwrap_or_else(|| panic!("mkfs-alloc {args:?} FIFO blocked"));
        let out = child.wait_with_output().expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("neither a regular file nor a block device"),
            "{args:?}: {stderr}"
        );
    }
}

/// An option before a subcommand name does not turn the name into
/// a target: `mkfs-alloc --size 64M list` formats nothing and says how to
/// mean a file of that name (`./list`).
#[test]
fn a_subcommand_name_is_never_formatted() {
    let tmp = TempDir::new("subcmd-name");
    for name in ["list", "advise", "info", "completions", "help"] {
        let out = run_in(tmp.path(), &["--size", "64M", name]);
        out.assert_code(2);
        assert!(
            out.stderr.contains(&format!("./{name}")),
            "the error says how to mean the file:\n{out}"
        );
        assert!(!tmp.join(name).exists(), "{name} was created:\n{out}");
    }
    let out = run_in(tmp.path(), &["--size", "64M", "./list"]);
    out.assert_success();
    assert!(tmp.join("list").exists());
}

/// A mistyped command word (`mkfs-alloc recluser --size 32M --yes
/// DEV`) is not taken for a new image beside the real target: the first
/// TARGET, a bare word (no `/`, no `.`) that names no file, is refused
/// (exit 2, nothing created or written) with the commands and `./NAME`;
/// an existing file of such a name, `./NAME` and `NAME.img` still work.
#[test]
fn a_command_word_that_names_no_file_is_refused() {
    let tmp = TempDir::new("command-word");
    let img = tmp.join("stick.img");
    fill_file(&img, 64 * MIB, 0xD1);
    let before = file_hash(&img);
    let img_s = img.to_string_lossy().into_owned();
    for (word, says) in [("recluser", "recluster"), ("lst", "list")] {
        let out = run_in(tmp.path(), &[word, "--size", "64M", "--yes", &img_s]);
        out.assert_code(2);
        assert!(
            out.stderr.contains(&format!("unknown command `{word}`"))
                && out.stderr.contains(&format!("./{word}"))
                && out.stderr.contains(says),
            "{out}"
        );
        assert!(!tmp.join(word).exists(), "{word} was created:\n{out}");
        assert_eq!(file_hash(&img), before, "the target was written:\n{out}");
    }
    // A bare new name first: refused the same way; as a path, created.
    run_in(tmp.path(), &["--size", "64M", "disk"]).assert_code(2);
    assert!(!tmp.join("disk").exists());
    run_in(tmp.path(), &["-q", "--size", "64M", "./disk"]).assert_success();
    // An existing file of that name is formatted, first or not.
    run_in(tmp.path(), &["-q", "disk"]).assert_success();
    run_in(tmp.path(), &["-q", "disk", "stick.img"]).assert_success();
}

/// `-` is standard output for one sparse image only: among several
/// targets (or with a batch option) it is refused, and no file named `-`
/// is created.
#[test]
fn a_dash_target_in_a_batch_is_refused() {
    let tmp = TempDir::new("dash-target");
    for args in [
        &["--size", "64M", "a.img", "-"][..],
        &["--size", "64M", "--verify", "-"][..],
    ] {
        let out = run_in(tmp.path(), args);
        out.assert_code(2);
        assert!(out.stderr.contains("./-"), "{out}");
        assert!(
            !tmp.join("-").exists(),
            "a file named - was created:\n{out}"
        );
        assert!(!tmp.join("a.img").exists(), "{out}");
    }
}

/// Items 6 and 11: `--data` that cannot be stored is refused (exit 2, the
/// reason named, nothing created): a file over FAT32's 4 GiB - 1 limit, and
/// data larger than the volume.
#[test]
fn data_that_cannot_be_stored_is_refused() {
    let tmp = TempDir::new("data-refused");
    let data = tmp.subdir("data");
    sparse_file(&data.join("big.bin"), 5 << 30);
    let img = tmp.join("a.img");
    let img_s = img.to_string_lossy().into_owned();
    let data_s = data.to_string_lossy().into_owned();
    let out = mkfs_alloc(&["--fs", "fat32", "--size", "40G", "--data", &data_s, &img_s]);
    out.assert_code(2);
    assert!(out.stderr.contains("4 GiB - 1"), "{out}");
    assert!(!img.exists());

    let small = tmp.subdir("small");
    sparse_file(&small.join("a.bin"), 100 * MIB);
    let small_s = small.to_string_lossy().into_owned();
    let out = mkfs_alloc(&["--fs", "exfat", "--size", "64M", "--data", &small_s, &img_s]);
    out.assert_code(2);
    assert!(out.stderr.contains("does not fit"), "{out}");
    assert!(!img.exists());
}

/// The small things a careful user noticed.
#[test]
fn small_things() {
    let tmp = TempDir::new("small-things");
    let img = tmp.join("a.img");
    let img_s = img.to_string_lossy().into_owned();
    // A lower-case FAT32 label is shown as written: upper case.
    let out = mkfs_alloc(&[
        "--json",
        "--fs",
        "fat32",
        "--size",
        "64M",
        "--cluster",
        "512",
        "-L",
        "photos",
        &img_s,
    ]);
    out.assert_success();
    assert_eq!(MkfsJson::parse(&out).str("label"), "PHOTOS", "{out}");
    let out = mkfs_alloc(&["--fs", "fat32", "--cluster", "512", "-L", "photos", &img_s]);
    out.assert_success();
    assert!(out.stdout.contains("PHOTOS"), "{out}");
    assert!(!out.stdout.contains("photos"), "{out}");
    // No "table table", and old signatures named as wiped after writing.
    assert!(!out.stdout.contains("table table"), "{out}");
    assert!(!out.stdout.contains("will be wiped"), "{out}");
    // `-L ""`: no label, null in JSON.
    let out = mkfs_alloc(&["--json", "--fs", "exfat", "-L", "", &img_s]);
    out.assert_success();
    assert!(MkfsJson::parse(&out).value["label"].is_null(), "{out}");
    // info on a table-less image: no partition "at byte 0, aligned to 64 MiB".
    let out = mkfs_alloc(&["info", &img_s]);
    out.assert_success();
    assert!(!out.stdout.contains("aligned to 64 MiB"), "{out}");
    // Rejected: --discard with --no-discard, odd serials, --max-waste inf,
    // a negative SOURCE_DATE_EPOCH.
    for args in [
        vec!["--discard", "--no-discard", "--dry-run", &img_s],
        vec!["--serial", "ABCD-", "--dry-run", &img_s],
        vec!["--serial", "12-34-56-78", "--dry-run", &img_s],
        vec!["advise", "--size", "1G", "--max-waste", "inf"],
    ] {
        mkfs_alloc(&args).assert_code(2);
    }
    let out = mkfs_alloc_env_only(&["--dry-run", &img_s], "SOURCE_DATE_EPOCH", "-1");
    out.assert_code(2);
    // --align too large for the volume names --align.
    let out = mkfs_alloc(&[
        "--fs",
        "exfat",
        "--size",
        "64M",
        "--align",
        "32M",
        "--dry-run",
        &tmp.join("b.img").to_string_lossy(),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("--align"), "{out}");
    // An --align no planner accepts names the valid values, not room.
    let out = mkfs_alloc(&[
        "--fs",
        "exfat",
        "--size",
        "64M",
        "--table",
        "mbr",
        "--align",
        "3M",
        "--dry-run",
        &tmp.join("c.img").to_string_lossy(),
    ]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--align 3M") && out.stderr.contains("power of two"),
        "{out}"
    );
    assert!(!out.stderr.contains("too little room"), "{out}");
    // advise without a size names both ways to give one.
    let out = mkfs_alloc(&["advise"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--size") && out.stderr.contains("--target"),
        "{out}"
    );
    // advise --help does not say --target refuses devices.
    let out = mkfs_alloc(&["advise", "--help"]);
    out.assert_success();
    assert!(!out.stdout.contains("not a device"), "{out}");
    // Counts agree in number: "1 directory", no "entr(ies)".
    let data = tmp.subdir("tree");
    std::fs::create_dir(data.join("d")).expect("mkdir");
    std::fs::write(data.join("d/small.txt"), b"hello").expect("write");
    let out = mkfs_alloc(&["advise", "--size", "1G", &data.to_string_lossy()]);
    out.assert_success();
    assert!(
        !out.stdout.contains("(ies)") && !out.stdout.contains("1 directories"),
        "{out}"
    );
}

/// `info --files` and `advise` report the same waste for the same
/// tree, and both state the definition.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn info_files_and_advise_agree_on_waste() {
    require_tool("mcopy");
    let tmp = TempDir::new("waste-agree");
    let data = tmp.subdir("tree");
    let sub = data.join("photos");
    std::fs::create_dir(&sub).expect("mkdir");
    for i in 0..40u64 {
        std::fs::write(
            sub.join(format!("IMG{i:04}.JPG")),
            vec![7u8; (i * 3001 % 20000 + 1) as usize],
        )
        .expect("write");
    }
    let img = tmp.join("fat.img");
    let img_s = img.to_string_lossy().into_owned();
    mkfs_alloc(&[
        "--fs",
        "fat32",
        "--cluster",
        "4K",
        "--size",
        "300M",
        "-L",
        "LABEL",
        &img_s,
    ])
    .assert_success();
    let out = Command::new(require_tool("mcopy"))
        .args(["-s", "-i", &img_s])
        .arg(&sub)
        .arg("::/")
        .output()
        .expect("mcopy");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = mkfs_alloc(&["info", "--files", "--json", &img_s]);
    info.assert_success();
    let info_doc = one_document(&info);
    let info_waste = info_doc["volumes"][0]["files"]["waste_bytes"].as_u64();
    let advice = mkfs_alloc(&[
        "advise",
        "--json",
        "--fs",
        "fat32",
        "--size",
        "300M",
        &sub.to_string_lossy(),
    ]);
    advice.assert_success();
    let adv = one_document(&advice);
    let row = adv["per_fs"][0]["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["cluster_size"] == 4096))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        info_waste,
        row["waste_bytes"].as_u64(),
        "info:\n{info}\nadvise:\n{advice}"
    );
    // The text outputs state the one definition.
    let def = "minus the files' sizes";
    assert!(mkfs_alloc(&["info", "--files", &img_s])
        .stdout
        .contains(def));
    assert!(mkfs_alloc(&[
        "advise",
        "--fs",
        "fat32",
        "--size",
        "300M",
        &sub.to_string_lossy()
    ])
    .stdout
    .contains(def));
}

/// Completion scripts for four shells, and the man pages.
#[test]
fn completions_for_four_shells() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef mkfs-alloc"),
        ("fish", "complete -c mkfs-alloc"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = mkfs_alloc(&["completions", shell]);
        out.assert_success();
        assert!(out.stdout.contains(marker), "{shell}:\n{out}");
        assert!(out.stdout.contains("--cluster"), "{shell}:\n{out}");
    }
    mkfs_alloc(&["completions", "tcsh"]).assert_code(2);
    // The man pages `cargo xtask man` installs: one per command.
    let tmp = TempDir::new("man");
    let dir = tmp.join("man");
    mkfs_alloc(&["man", &dir.to_string_lossy()]).assert_success();
    for page in [
        "mkfs-alloc.1",
        "mkfs-alloc-advise.1",
        "mkfs-alloc-info.1",
        "mkfs-alloc-list.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_default();
        assert!(text.contains(".TH"), "{page}: not a man page");
    }
}

/// `info` reports what the volume model finds: a `findings` list on each
/// volume of `info --json` (empty on a clean volume) and a `finding:` line
/// per finding in the text; the exit code and the other fields stay.
#[test]
fn info_reports_the_volume_models_findings() {
    let tmp = TempDir::new("info-findings");
    let img = tmp.join("a.img");
    let img_s = img.to_string_lossy().into_owned();
    mkfs_alloc(&["--fs", "exfat", "--size", "64M", &img_s]).assert_success();
    let out = mkfs_alloc(&["info", "--json", &img_s]);
    out.assert_success();
    let doc = one_document(&out);
    assert_eq!(
        doc["volumes"][0]["findings"],
        serde_json::json!([]),
        "{out}"
    );
    // VolumeDirty (byte 106, bit 1; outside the boot checksum).
    let mut bytes = std::fs::read(&img).expect("read");
    bytes[106] |= 0x02;
    std::fs::write(&img, &bytes).expect("write");
    let out = mkfs_alloc(&["info", "--json", &img_s]);
    out.assert_success();
    let doc = one_document(&out);
    let f = &doc["volumes"][0]["findings"];
    assert_eq!(f[0]["kind"], "dirty", "{out}");
    assert_eq!(f[0]["refuses_change"], true, "{out}");
    assert!(doc["volumes"][0]["cluster_size"].is_u64(), "{out}");
    let out = mkfs_alloc(&["info", &img_s]);
    out.assert_success();
    assert!(
        out.stdout.contains("  finding: VolumeDirty is set"),
        "{out}"
    );
}
