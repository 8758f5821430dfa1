//! The files a run writes besides its targets: `--bmap FILE`, the sparse
//! image of `--output-format sparse TARGET`, `--log FILE`. Each must be a
//! regular file or a new one in a writable directory, not a symbolic link
//! and not a target of the run; anything else exits 2 before the first
//! write, every target byte-identical (a new one never created) and the
//! named file as it was (a device stays a device, a FIFO a FIFO, a link a
//! link and its target unchanged). The device node is the test's own: a
//! run that replaced it must not break the machine's `/dev/full`.

use super::*;
use std::os::unix::fs::FileTypeExt;

/// A hostile place for an output file.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// A character device (`/dev/full`'s numbers, made in the test's
    /// directory: a run that replaced it must not break the machine's).
    CharDevice,
    /// A FIFO in the test's directory.
    Fifo,
    /// A symbolic link to a regular file.
    Symlink,
    /// A directory.
    Dir,
    /// A file in a directory that does not exist.
    MissingDir,
    /// A new file in a read-only file system.
    ReadOnly,
    /// The existing image that is the (first) target.
    Target,
    /// A hard link to the existing image.
    HardLink,
}

const PLACES: [Place; 8] = [
    Place::CharDevice,
    Place::Fifo,
    Place::Symlink,
    Place::Dir,
    Place::MissingDir,
    Place::ReadOnly,
    Place::Target,
    Place::HardLink,
];

/// The files of one test directory.
struct Setup {
    /// An existing 64 MiB image, filled with 0xD1.
    image: std::path::PathBuf,
    /// A second existing image (a batch's second target).
    other: std::path::PathBuf,
    chardev: std::path::PathBuf,
    fifo: std::path::PathBuf,
    link: std::path::PathBuf,
    /// The regular file the link points to.
    linked: std::path::PathBuf,
    dir: std::path::PathBuf,
    ro: TmpfsMount,
}

impl Setup {
    fn new(tmp: &TempDir) -> Setup {
        let image = tmp.join("same.img");
        fill_file(&image, 64 * MIB, 0xD1);
        let other = tmp.join("other.img");
        fill_file(&other, 64 * MIB, 0xD1);
        let chardev = tmp.join("full");
        make_node(&chardev, &["c", "1", "7"]);
        let fifo = tmp.join("fifo");
        make_node(&fifo, &["p"]);
        let linked = tmp.join("linked.txt");
        std::fs::write(&linked, b"the link's target\n").expect("write");
        let link = tmp.join("link");
        std::os::unix::fs::symlink(&linked, &link).expect("symlink");
        std::fs::hard_link(&image, tmp.join("hard.img")).expect("hard link");
        let dir = tmp.subdir("a-dir");
        let ro = TmpfsMount::mount(&tmp.subdir("ro"), "size=1m");
        ro.remount_read_only();
        Setup {
            image,
            other,
            chardev,
            fifo,
            link,
            linked,
            dir,
            ro,
        }
    }

    fn path(&self, p: Place) -> std::path::PathBuf {
        match p {
            Place::CharDevice => self.chardev.clone(),
            Place::Fifo => self.fifo.clone(),
            Place::Symlink => self.link.clone(),
            Place::Dir => self.dir.clone(),
            Place::MissingDir => self.dir.join("no/such/out"),
            Place::ReadOnly => self.ro.path().join("out"),
            Place::Target => self.image.clone(),
            Place::HardLink => self.image.with_file_name("hard.img"),
        }
    }

    /// What is wrong with the places after a refused run.
    fn damage(&self, before: &[String]) -> Vec<String> {
        let mut wrong = Vec::new();
        if [file_hash(&self.image), file_hash(&self.other)] != before {
            wrong.push("a target changed".to_string());
        }
        if !std::fs::symlink_metadata(&self.chardev).is_ok_and(|m| m.file_type().is_char_device()) {
            wrong.push("the device node is no longer a device".into());
        }
        if !std::fs::symlink_metadata(&self.fifo).is_ok_and(|m| m.file_type().is_fifo()) {
            wrong.push("the FIFO is no longer a FIFO".into());
        }
        if !std::fs::symlink_metadata(&self.link).is_ok_and(|m| m.file_type().is_symlink()) {
            wrong.push("the symbolic link was replaced".into());
        }
        if std::fs::read(&self.linked).ok().as_deref() != Some(&b"the link's target\n"[..]) {
            wrong.push("the link's target changed".into());
        }
        if std::fs::read_dir(&self.dir).map_or(true, |d| d.count() != 0) {
            wrong.push("something was written into the directory".into());
        }
        wrong
    }
}

/// `mknod PATH TYPE...` (root for a device).
fn make_node(path: &Path, kind: &[&str]) {
    let out = Command::new(require_tool("mknod"))
        .arg(path)
        .args(kind)
        .output()
        .expect("mknod");
    assert!(out.status.success(), "mknod {} {kind:?}", path.display());
}

/// `--bmap PATH`, the sparse TARGET and `--log PATH` at every hostile place:
/// exit 2, one error line naming the option, nothing written.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn hostile_output_files_are_refused_before_writing() {
    require_root(); // the read-only tmpfs
    let tmp = TempDir::new("side-files");
    let s = Setup::new(&tmp);
    let before = [file_hash(&s.image), file_hash(&s.other)];
    let image = s.image.to_string_lossy().into_owned();
    let other = s.other.to_string_lossy().into_owned();
    let new = tmp.join("new.img");
    let mut failures = Vec::new();
    for place in PLACES {
        let p = s.path(place).to_string_lossy().into_owned();
        let runs: Vec<(&str, Vec<&str>)> = vec![
            ("--bmap", vec!["--fs", "exfat", "--bmap", &p, &image]),
            (
                "TARGET",
                vec![
                    "--fs",
                    "exfat",
                    "--size",
                    "64M",
                    "--output-format",
                    "sparse",
                    &p,
                ],
            ),
            ("--log", vec!["--fs", "exfat", "--log", &p, &image, &other]),
            ("--log", vec!["--fs", "exfat", "--log", &p, &image]),
        ];
        for (option, args) in runs {
            if option == "TARGET" && matches!(place, Place::Target | Place::HardLink) {
                continue; // the sparse image is the target itself
            }
            let out = mkfs_alloc(&args);
            let mut wrong = s.damage(&before);
            if out.code != Some(2) {
                wrong.push(format!("exit code {:?}", out.code));
            }
            let errors: Vec<&str> = out.stderr.lines().filter(|l| l.contains("error")).collect();
            if errors.len() != 1 || !errors[0].contains(option) {
                wrong.push(format!("error lines {errors:?}"));
            }
            if new.exists()
                || std::fs::read_dir(tmp.path()).is_ok_and(|d| {
                    d.flatten()
                        .any(|e| e.file_name().to_string_lossy().contains("mkfs-alloc"))
                })
            {
                wrong.push("a file was left behind".into());
            }
            if !wrong.is_empty() {
                failures.push(format!("{place:?} {option}: {}\n{out}", wrong.join(", ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `--log` naming a loop device that is also a target (`--log /dev/loopN
/// /dev/loopN b.img`), or the backing file of a target's loop device, is
/// refused: the log would be written into a formatted medium.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_log_on_a_target_device_is_refused() {
    require_root();
    let tmp = TempDir::new("side-log-dev");
    let backing = tmp.join("d.raw");
    fill_file(&backing, 64 * MIB, 0xD1);
    let img = tmp.join("b.img");
    fill_file(&img, 64 * MIB, 0xD1);
    let lo = LoopDevice::attach(&backing);
    let dev = lo.path().to_string_lossy().into_owned();
    let img_s = img.to_string_lossy().into_owned();
    let backing_s = backing.to_string_lossy().into_owned();
    let before = [file_hash(&backing), file_hash(&img)];
    for log in [&dev, &backing_s] {
        let out = mkfs_alloc(&["--fs", "exfat", "--yes", "--log", log, &dev, &img_s]);
        lo.flush();
        out.assert_code(2);
        assert!(out.stderr.contains("--log"), "{out}");
        assert_eq!([file_hash(&backing), file_hash(&img)], before, "{out}");
    }
}

/// A good `--log` is opened before the first write: a log that can be
/// created and a batch that writes, as before.
#[test]
fn a_good_log_still_logs() {
    let tmp = TempDir::new("side-log-ok");
    let img = tmp.join("a.img");
    fill_file(&img, 64 * MIB, 0xD1);
    let log = tmp.join("run.log");
    let out = mkfs_alloc(&[
        "--fs",
        "exfat",
        "-q",
        "--log",
        &log.to_string_lossy(),
        &img.to_string_lossy(),
    ]);
    out.assert_success();
    let text = std::fs::read_to_string(&log).expect("log");
    assert_eq!(text.lines().count(), 1, "{text}");
}

/// The log is opened once the batch is confirmed: a batch of a device that
/// is not confirmed (no terminal, no `--yes`) writes nothing and leaves no
/// log behind.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn an_unconfirmed_batch_leaves_no_log() {
    require_root();
    let tmp = TempDir::new("side-log-unconfirmed");
    let backing = tmp.join("d.raw");
    fill_file(&backing, 64 * MIB, 0xD1);
    let lo = LoopDevice::attach(&backing);
    let log = tmp.join("run.log");
    let before = file_hash(&backing);
    let out = mkfs_alloc(&[
        "--fs",
        "exfat",
        "--log",
        &log.to_string_lossy(),
        &lo.path().to_string_lossy(),
    ]);
    lo.flush();
    out.assert_code(2);
    assert!(out.stderr.contains("--yes"), "{out}");
    assert!(!log.exists(), "a log was left behind:\n{out}");
    assert_eq!(file_hash(&backing), before);
}
