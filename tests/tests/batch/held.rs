//! Targets held by another process (root, tool tier): every target is
//! opened and locked before the first write to any of them, so a batch with
//! one held target writes nothing (exit 2), and `--dry-run` calls the held
//! ones refused.

use super::*;
use mkfs_alloc_tests::{require_root, require_tool, LoopDevice};
use std::process::{Child, Command};
use std::time::Duration;

/// `flock --exclusive FILE sleep 60`, killed when dropped.
struct Flock(Child);

impl Flock {
    fn hold(path: &Path) -> Flock {
        let child = Command::new(require_tool("flock"))
            .args(["--exclusive", "--nonblock", "--no-fork"])
            .arg(path)
            .args(["sleep", "60"])
            .spawn()
            .expect("flock");
        std::thread::sleep(Duration::from_millis(300));
        Flock(child)
    }
}

impl Drop for Flock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An exclusive open (`O_EXCL`) of a block device by this process, as
/// another formatter or device-mapper holds one.
fn hold_exclusively(dev: &Path) -> rustix::fd::OwnedFd {
    use rustix::fs::{open, Mode, OFlags};
    open(
        dev,
        OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap_or_else(|e| panic!("O_EXCL open of {}: {e}", dev.display()))
}

/// Three loop devices, the second locked by `flock`, the third opened with
/// `O_EXCL` by another process: exit 2, every backing file byte-identical,
/// both named; the dry run calls both refused and the first planned;
/// `--skip-refused` formats the first alone.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_held_device_stops_the_batch_before_any_write() {
    require_root();
    let tmp = TempDir::new("batch-held");
    let backing: Vec<PathBuf> = (0..3)
        .map(|i| {
            let p = tmp.join(&format!("held{i}.raw"));
            fill_file(&p, (64 + i) * MIB, 0xD1);
            p
        })
        .collect();
    let loops: Vec<LoopDevice> = backing.iter().map(|b| LoopDevice::attach(b)).collect();
    let devs: Vec<PathBuf> = loops.iter().map(|l| l.path().to_path_buf()).collect();
    let before = hashes(&backing);
    let locked = Flock::hold(&devs[1]);
    // The exclusive open is this test's own: mkfs-alloc is another process.
    let exclusive = hold_exclusively(&devs[2]);

    let out = batch(&["--fs", "exfat", "--dry-run", "--json"], &devs);
    out.assert_success();
    assert_eq!(
        verdicts(&doc(&out)),
        ["planned", "refused", "refused"],
        "{out}"
    );

    let out = batch(&["--fs", "exfat", "--yes", "--json"], &devs);
    for l in &loops {
        l.flush();
    }
    out.assert_code(2);
    assert_eq!(hashes(&backing), before, "a batch with a held target wrote");
    let v = doc(&out);
    assert_eq!(verdicts(&v), ["not written", "refused", "refused"], "{v:#}");
    assert!(
        out.stderr.contains(&*devs[1].to_string_lossy())
            && out.stderr.contains(&*devs[2].to_string_lossy())
            && out.stderr.contains("nothing was written"),
        "{out}"
    );
    let t = targets(&v);
    for x in &t[1..] {
        assert!(
            x["error"]
                .as_str()
                .is_some_and(|e| e.contains("in use by another process")),
            "{x}"
        );
    }

    let out = batch(
        &["--fs", "exfat", "--yes", "--json", "--skip-refused"],
        &devs,
    );
    for l in &loops {
        l.flush();
    }
    out.assert_code(1);
    assert_eq!(verdicts(&doc(&out)), ["ok", "refused", "refused"], "{out}");
    assert_ne!(
        file_hash(&backing[0]),
        before[0],
        "the free device was not formatted"
    );
    assert_eq!(
        hashes(&backing[1..]),
        before[1..],
        "a held device was written"
    );
    drop((locked, exclusive));
}

/// A target that only its opening refuses (a `/proc` file takes no size;
/// as root every permission check passes) stops the batch before the new
/// image beside it is created, and a grown image keeps its length.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_target_refused_when_opened_stops_the_batch() {
    require_root();
    let tmp = TempDir::new("batch-open-refused");
    let new = tmp.join("new.img");
    let grown = tmp.join("grown.img");
    fill_file(&grown, 32 * MIB, 0xD1);
    let before = file_hash(&grown);
    let targets = [new.clone(), grown.clone(), PathBuf::from("/proc/version")];
    let out = batch(&["--fs", "exfat", "--size", "64M", "--json"], &targets);
    out.assert_code(2);
    assert!(!new.exists(), "the new image was created: {out}");
    assert_eq!(
        file_hash(&grown),
        before,
        "the grown image was changed: {out}"
    );
    assert_eq!(
        verdicts(&doc(&out)),
        ["not written", "not written", "refused"],
        "{out}"
    );
}
