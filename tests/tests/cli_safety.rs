//! The CLI's promises under hostile use (issue "safety and honesty"): one
//! JSON document for every outcome, exit codes that say whether anything
//! was written, `--dry-run` that opens nothing for writing, refusals of
//! FIFOs, subcommand names, locked targets and images whose loop device is
//! mounted, and the small texts a careful user reads.
//!
//! Each test names the item it pins; every one failed before its fix.

use mkfs_alloc_tests::check::TmpfsMount;
use mkfs_alloc_tests::{
    file_hash, fill_file, mkfs_alloc, mkfs_alloc_bin, require_root, require_tool, sparse_file,
    CmdOutput, FuseMount, LoopDevice, MkfsJson, TempDir, MIB, SOURCE_DATE_EPOCH,
};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary in `dir` (stdin /dev/null), with a pinned time.
fn run_in(dir: &Path, args: &[&str]) -> CmdOutput {
    let out = Command::new(mkfs_alloc_bin())
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .stdin(Stdio::null())
        .output()
        .expect("run mkfs-alloc");
    CmdOutput {
        command: format!("(cd {}; mkfs-alloc {})", dir.display(), args.join(" ")),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout_bytes: out.stdout,
    }
}

/// The JSON documents on stdout (a stream of values).
fn json_documents(out: &CmdOutput) -> Vec<Value> {
    serde_json::Deserializer::from_str(&out.stdout)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("stdout is not a stream of JSON documents ({e}):\n{out}"))
}

/// Exactly one JSON document on stdout; for a failure it carries `error`
/// and the process's exit code.
#[track_caller]
fn one_document(out: &CmdOutput) -> Value {
    let docs = json_documents(out);
    assert_eq!(docs.len(), 1, "expected one JSON document:\n{out}");
    let doc = docs.into_iter().next().unwrap_or_default();
    if out.code != Some(0) {
        assert!(doc["error"].is_string(), "no \"error\" in:\n{out}");
        assert_eq!(
            doc["exit_code"].as_i64(),
            out.code.map(i64::from),
            "exit_code field:\n{out}"
        );
    }
    doc
}

/// Item 7: `--json` prints exactly one JSON document for every outcome,
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
    ];
    for (args, code) in &cases {
        let out = mkfs_alloc(args);
        out.assert_code(*code);
        one_document(&out);
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

/// Item 4: `info` on a FIFO (or another non-regular, non-block file) exits
/// 2 at once instead of blocking on the open.
#[test]
fn info_refuses_a_fifo_at_once() {
    let tmp = TempDir::new("fifo");
    let fifo = tmp.join("pipe");
    let made = Command::new("mkfifo")
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

/// Item 14: an option before a subcommand name does not turn the name into
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

/// Item 11: exit 2 for every refusal before anything is written, with the
/// reason in words; a run that fails after creating its image removes it.
#[test]
fn refusals_before_writing_exit_2() {
    require_root();
    let tmp = TempDir::new("exit-codes");
    // A missing directory.
    let out = mkfs_alloc(&[
        "--size",
        "64M",
        &tmp.join("no/such/a.img").to_string_lossy(),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("does not exist"), "{out}");
    // A dangling symbolic link: never followed into a new file.
    let link = tmp.join("dangling.img");
    std::os::unix::fs::symlink(tmp.join("missing-target"), &link).expect("symlink");
    let out = mkfs_alloc(&["--size", "64M", &link.to_string_lossy()]);
    out.assert_code(2);
    assert!(out.stderr.contains("dangling symbolic link"), "{out}");
    assert!(!tmp.join("missing-target").exists());
    // A read-only file system: creating and formatting an existing image.
    let ro = tmp.subdir("ro");
    let mnt = TmpfsMount::mount(&ro, "size=16m");
    let existing = ro.join("old.img");
    fill_file(&existing, 4 * MIB, 0xD1);
    mnt.remount_read_only();
    let new = ro.join("new.img");
    let out = mkfs_alloc(&["--size", "64M", &new.to_string_lossy()]);
    out.assert_code(2);
    assert!(
        out.stderr.contains(&format!(
            "cannot create {}: Read-only file system",
            new.display()
        )),
        "{out}"
    );
    let before = file_hash(&existing);
    let out = mkfs_alloc(&["--fs", "exfat", &existing.to_string_lossy()]);
    out.assert_code(2);
    assert!(out.stderr.contains("Read-only file system"), "{out}");
    assert_eq!(file_hash(&existing), before);
    // Permission denied (not root): exit 2.
    require_tool("setpriv");
    let mine = tmp.join("root-only.img");
    fill_file(&mine, 4 * MIB, 0xD1);
    let mut perms = std::fs::metadata(&mine).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
    std::fs::set_permissions(&mine, perms).expect("chmod");
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod dir");
    let out = as_nobody(&["--fs", "exfat", &mine.to_string_lossy()]);
    out.assert_code(2);
    assert!(out.stderr.contains("Permission denied"), "{out}");
}

/// Runs the binary as user and group 65534 (nobody).
fn as_nobody(args: &[&str]) -> CmdOutput {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(mkfs_alloc_bin())
        .args(args)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv");
    CmdOutput {
        command: format!("setpriv --reuid=65534 mkfs-alloc {}", args.join(" ")),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout_bytes: out.stdout,
    }
}

/// Item 10: `--dry-run` opens nothing for writing: it works on a read-only
/// file system and as a user who cannot write the image, and says what the
/// real run would refuse.
#[test]
fn dry_run_opens_nothing_for_writing() {
    require_root();
    require_tool("setpriv");
    let tmp = TempDir::new("dry-ro");
    let ro = tmp.subdir("ro");
    let mnt = TmpfsMount::mount(&ro, "size=16m,mode=0755");
    let img = ro.join("old.img");
    fill_file(&img, 8 * MIB, 0xD1);
    let img_s = img.to_string_lossy().into_owned();
    let mut perms = std::fs::metadata(&img).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
    std::fs::set_permissions(&img, perms).expect("chmod");

    // Not root: the image is readable, not writable.
    let out = as_nobody(&["--fs", "exfat", "--dry-run", "--json", &img_s]);
    out.assert_success();
    let doc = one_document(&out);
    let refusal = doc["would_refuse"].as_str().unwrap_or_default();
    assert!(refusal.contains("Permission denied"), "{out}");
    let out = as_nobody(&["--fs", "exfat", "--dry-run", &img_s]);
    out.assert_success();
    assert!(out.stdout.contains("the real run would refuse"), "{out}");

    // Read-only file system, as root.
    mnt.remount_read_only();
    let out = mkfs_alloc(&["--fs", "exfat", "--dry-run", "--json", &img_s]);
    out.assert_success();
    let doc = one_document(&out);
    let refusal = doc["would_refuse"].as_str().unwrap_or_default();
    assert!(refusal.contains("Read-only file system"), "{out}");
    // A dry run that would create an image in a read-only directory.
    let new = ro.join("new.img");
    let out = mkfs_alloc(&[
        "--dry-run",
        "--json",
        "--size",
        "64M",
        &new.to_string_lossy(),
    ]);
    out.assert_success();
    let doc = one_document(&out);
    let refusal = doc["would_refuse"].as_str().unwrap_or_default();
    assert!(refusal.contains("Read-only file system"), "{out}");
    assert!(!new.exists());
}

/// Item 10 on devices: a dry run on a mounted device, and as a user who
/// may not open the device, works (exit 0) and says what the real run
/// would refuse; the real runs exit 2.
#[test]
fn dry_run_on_devices_reports_the_refusals() {
    require_root();
    require_tool("setpriv");
    let tmp = TempDir::new("dry-dev");
    let img = tmp.join("d.img");
    let img_s = img.to_string_lossy().into_owned();
    mkfs_alloc(&["--fs", "exfat", "--size", "64M", &img_s]).assert_success();
    let lo = LoopDevice::attach(&img);
    let dev = lo.path().to_string_lossy().into_owned();
    // Not root: no permission to open the device.
    let out = as_nobody(&["--dry-run", "--json", "--fs", "exfat", &dev]);
    out.assert_success();
    let doc = one_document(&out);
    let refusal = doc["would_refuse"].as_str().unwrap_or_default();
    assert!(refusal.contains("Permission denied"), "{out}");
    let out = as_nobody(&["--yes", "--fs", "exfat", &dev]);
    out.assert_code(2);
    // Mounted.
    let mnt_dir = tmp.subdir("mnt");
    let mount = FuseMount::exfat(lo.path(), &mnt_dir);
    let out = mkfs_alloc(&["--dry-run", "--json", "--fs", "exfat", &dev]);
    out.assert_success();
    let doc = one_document(&out);
    let refusal = doc["would_refuse"].as_str().unwrap_or_default();
    assert!(refusal.contains("mounted"), "{out}");
    mkfs_alloc(&["--yes", "--fs", "exfat", &dev]).assert_code(2);
    mount.unmount();
}

/// Item 3: a run takes an exclusive advisory lock on the image; while
/// another process holds it, mkfs-alloc exits 2 "in use by another process"
/// without writing. Two runs at once never both write.
#[test]
fn a_locked_image_is_not_formatted() {
    require_tool("flock");
    let tmp = TempDir::new("lock");
    let img = tmp.join("a.img");
    let img_s = img.to_string_lossy().into_owned();
    fill_file(&img, 64 * MIB, 0xD1);
    let before = file_hash(&img);
    let mut holder = Command::new("flock")
        .args(["--exclusive", "--nonblock", "--no-fork"])
        .arg(&img)
        .args(["sleep", "30"])
        .spawn()
        .expect("flock");
    std::thread::sleep(Duration::from_millis(300));
    let out = mkfs_alloc(&["--fs", "exfat", &img_s]);
    let _ = holder.kill();
    let _ = holder.wait();
    out.assert_code(2);
    assert!(out.stderr.contains("in use by another process"), "{out}");
    assert_eq!(file_hash(&img), before, "a locked image was written");

    // Concurrent runs: each either formats or is refused; never a broken volume.
    require_tool("fsck.exfat");
    for round in 0..20 {
        let spawn = |serial: &str| {
            Command::new(mkfs_alloc_bin())
                .args(["--fs", "exfat", "-q", "--serial", serial, &img_s])
                .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        };
        let a = spawn("11111111");
        let b = spawn("22222222");
        let mut ok = 0;
        for c in [a, b] {
            let out = c.wait_with_output().expect("wait");
            let err = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0) => ok += 1,
                Some(2) => assert!(err.contains("in use by another process"), "{err}"),
                other => panic!("round {round}: exit {other:?}: {err}"),
            }
        }
        assert!(ok >= 1, "round {round}: both refused");
        let fsck = Command::new("fsck.exfat")
            .args(["-n"])
            .arg(&img)
            .output()
            .expect("fsck.exfat");
        assert!(
            fsck.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&fsck.stdout)
        );
    }
}

/// Item 3 on devices: a whole block device locked by another process
/// (systemd's "locking block device access") is refused the same way.
#[test]
fn a_locked_device_is_not_formatted() {
    require_root();
    require_tool("flock");
    let tmp = TempDir::new("lock-dev");
    let img = tmp.join("d.img");
    fill_file(&img, 64 * MIB, 0xD1);
    let lo = LoopDevice::attach(&img);
    let mut holder = Command::new("flock")
        .args(["--exclusive", "--nonblock", "--no-fork"])
        .arg(lo.path())
        .args(["sleep", "30"])
        .spawn()
        .expect("flock");
    std::thread::sleep(Duration::from_millis(300));
    let out = mkfs_alloc(&["--fs", "exfat", "--yes", &lo.path().to_string_lossy()]);
    let _ = holder.kill();
    let _ = holder.wait();
    out.assert_code(2);
    assert!(out.stderr.contains("in use by another process"), "{out}");
    drop(lo);
    let data = std::fs::read(&img).expect("read");
    assert!(
        data.iter().all(|&b| b == 0xD1),
        "the locked device was written"
    );
}

/// Item 1: an image file whose loop device is mounted is refused (exit 2,
/// naming the device and the mount point); attached but not mounted, the
/// run goes on and says so.
#[test]
fn an_image_whose_loop_device_is_mounted_is_refused() {
    require_root();
    let tmp = TempDir::new("loop-backed");
    let img = tmp.join("m.img");
    let img_s = img.to_string_lossy().into_owned();
    mkfs_alloc(&["--fs", "exfat", "--size", "64M", &img_s]).assert_success();
    let lo = LoopDevice::attach(&img);
    let dev = lo.path().to_string_lossy().into_owned();
    let mnt_dir = tmp.subdir("mnt");
    let mount = FuseMount::exfat(lo.path(), &mnt_dir);
    let before = file_hash(&img);
    let out = mkfs_alloc(&["--fs", "exfat", &img_s]);
    out.assert_code(2);
    assert!(out.stderr.contains(&dev), "names the loop device:\n{out}");
    assert!(
        out.stderr.contains(&mnt_dir.to_string_lossy().into_owned()),
        "names the mount point:\n{out}"
    );
    // (Compared while mounted: unmounting makes exfat-fuse write its flags.)
    assert_eq!(file_hash(&img), before, "the mounted image was written");
    mount.unmount();
    // Attached, not mounted: formatted, and the summary says so.
    let out = mkfs_alloc(&["--fs", "exfat", "--json", &img_s]);
    out.assert_success();
    let doc = one_document(&out);
    let notes = doc["notes"].to_string();
    assert!(notes.contains(&dev) && notes.contains("attached"), "{out}");
    drop(lo);
}

/// Item 2: on a device, `--dry-run`, the confirmation and `list` show the
/// partitions read from the medium itself, with their file systems and
/// labels (loop devices have no partition nodes).
#[test]
fn a_devices_partitions_are_shown_before_erasing() {
    require_root();
    let tmp = TempDir::new("dev-contents");
    let img = tmp.join("d.img");
    sparse_file(&img, 128 * MIB);
    let lo = LoopDevice::attach(&img);
    let dev = lo.path().to_string_lossy().into_owned();
    mkfs_alloc(&[
        "--table", "mbr", "--fs", "exfat", "-L", "PRECIOUS", "--yes", &dev,
    ])
    .assert_success();
    let out = mkfs_alloc(&["--dry-run", "--json", "--fs", "exfat", &dev]);
    out.assert_success();
    let doc = one_document(&out);
    assert!(doc.to_string().contains("PRECIOUS"), "{out}");
    let out = mkfs_alloc(&["--dry-run", "--fs", "exfat", &dev]);
    out.assert_success();
    assert!(out.stdout.contains("PRECIOUS"), "{out}");
    // No terminal, no --yes: refused, after describing what would be erased.
    let out = mkfs_alloc(&["--fs", "exfat", &dev]);
    out.assert_code(2);
    assert!(out.stderr.contains("PRECIOUS"), "{out}");
    let out = mkfs_alloc(&["list", "--json"]);
    out.assert_success();
    let doc = one_document(&out);
    let entry = doc
        .as_array()
        .and_then(|a| a.iter().find(|d| d["path"].as_str() == Some(dev.as_str())))
        .cloned()
        .unwrap_or_default();
    assert!(entry.to_string().contains("PRECIOUS"), "{out}");
}

/// Item 15: the small things a careful user noticed.
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

/// `mkfs-alloc ARGS` with exactly one environment variable set.
fn mkfs_alloc_env_only(args: &[&str], key: &str, value: &str) -> CmdOutput {
    mkfs_alloc_tests::mkfs_alloc_env(args, &[(key, value)])
}

/// Item 12: `info --files` and `advise` report the same waste for the same
/// tree, and both state the definition.
#[test]
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
    let out = Command::new("mcopy")
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

/// Item 17: completion scripts for four shells, and the man pages.
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
