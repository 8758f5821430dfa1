//! Running under the caller's lock: systemd-repart, systemd-makefs and
//! `flock -x DEV mkfs.vfat DEV` lock the device (systemd's "locking block
//! device access") and run mkfs under that lock. A lock held by an
//! ancestor is the device held for us: the run formats. A lock of an
//! unrelated process is still refused (exit 2, nothing written), naming the
//! holder's pid and command line.

use super::*;
use mkfs_alloc_tests::run;

/// Our binary as the CLI and under the front-end name `mkfs.vfat` (a
/// symbolic link: argv[0] chooses the front end), each with the arguments
/// that format `target` as FAT32.
fn front_ends(tmp: &TempDir, target: &str) -> Vec<(std::path::PathBuf, Vec<String>)> {
    let vfat = tmp.join("mkfs.vfat");
    if !vfat.exists() {
        std::os::unix::fs::symlink(mkfs_alloc_bin(), &vfat).expect("symlink mkfs.vfat");
    }
    let own = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            mkfs_alloc_bin(),
            own(&[
                "--yes", "--table", "none", "--fs", "fat32", "--serial", "D9C23CC2", target,
            ]),
        ),
        (
            vfat,
            own(&["-i", "d9c23cc2", "-n", "ESP", "-F", "32", target]),
        ),
    ]
}

/// `flock -x TARGET PROGRAM ARGS`: the program runs as flock's child under
/// its exclusive lock.
fn under_lock(target: &str, program: &Path, args: &[String]) -> CmdOutput {
    let mut all = vec!["-x".to_string(), target.to_string()];
    all.push(program.to_string_lossy().into_owned());
    all.extend(args.iter().cloned());
    run(require_tool("flock"), &all)
}

/// An unrelated process (`flock --no-fork -x TARGET sleep 60`, a sibling of
/// the run under test, which is flock turned into sleep: killing it ends
/// the lock) holding the lock; killed on drop.
struct Holder(std::process::Child);

impl Holder {
    fn lock(target: &str) -> Holder {
        let child = Command::new(require_tool("flock"))
            .args(["--no-fork", "-x", target, "sleep", "60"])
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn flock");
        let holder = Holder(child);
        // Held once a non-blocking attempt of our own fails.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let probe = run(require_tool("flock"), &["-n", "-x", target, "true"]);
            if probe.code == Some(1) {
                return holder;
            }
            assert!(
                Instant::now() < deadline,
                "the lock was never taken: {probe}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The refusal of a lock held by `holder`: exit 2, and the message says
/// the target is in use and names the holder's pid and command.
#[track_caller]
fn assert_refused_naming(out: &CmdOutput, holder: &Holder) {
    out.assert_code(2);
    assert!(out.stderr.contains("in use by another process"), "{out}");
    let pid = format!("process {}: ", holder.pid());
    assert!(out.stderr.contains(&pid), "names {pid:?}:\n{out}");
    assert!(out.stderr.contains("sleep 60"), "names the command:\n{out}");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_device_locked_by_the_caller_is_formatted_another_lock_is_refused() {
    require_root();
    require_tool("fsck.fat");
    let tmp = TempDir::new("caller-lock-dev");
    let img = tmp.join("d.img");
    fill_file(&img, 64 * MIB, 0xD1);
    let lo = LoopDevice::attach(&img);
    let dev = lo.path_str().to_string();
    for (program, args) in front_ends(&tmp, &dev) {
        // An unrelated holder: refused, the device untouched.
        let before = file_hash(&img);
        let holder = Holder::lock(&dev);
        let out = run(&program, &args);
        assert_refused_naming(&out, &holder);
        drop(holder);
        lo.flush();
        assert_eq!(file_hash(&img), before, "a locked device was written");
        // The caller's lock: formatted, a clean FAT32.
        under_lock(&dev, &program, &args).assert_success();
        lo.flush();
        let fsck = mkfs_alloc_tests::tool("fsck.fat", &["-n", &dev]);
        fsck.assert_success();
        let blkid = mkfs_alloc_tests::tool("blkid", &["-p", "-o", "export", &dev]);
        assert!(blkid.stdout.contains("VERSION=FAT32"), "{blkid}");
        assert!(blkid.stdout.contains("UUID=D9C2-3CC2"), "{blkid}");
        fill_file(&img, 64 * MIB, 0xD1);
        lo.flush();
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn an_image_locked_by_the_caller_is_formatted_another_lock_is_refused() {
    require_tool("fsck.fat");
    let tmp = TempDir::new("caller-lock-img");
    let img = tmp.join("i.img");
    let img_s = img.to_string_lossy().into_owned();
    for (program, args) in front_ends(&tmp, &img_s) {
        fill_file(&img, 64 * MIB, 0xD1);
        let before = file_hash(&img);
        let holder = Holder::lock(&img_s);
        let out = run(&program, &args);
        assert_refused_naming(&out, &holder);
        assert_eq!(file_hash(&img), before, "a locked image was written");
        drop(holder);
        under_lock(&img_s, &program, &args).assert_success();
        mkfs_alloc_tests::tool("fsck.fat", &["-n", &img_s]).assert_success();
    }
    // A dry run under the caller's lock says the real run would go on.
    let dry = under_lock(
        &img_s,
        &mkfs_alloc_bin(),
        &[
            "--dry-run".into(),
            "--fs".into(),
            "exfat".into(),
            img_s.clone(),
        ],
    );
    dry.assert_success();
    assert!(!dry.stdout.contains("would refuse"), "{dry}");
    let holder = Holder::lock(&img_s);
    let dry = mkfs_alloc(&["--dry-run", "--fs", "exfat", &img_s]);
    dry.assert_success();
    assert!(dry.stdout.contains("would refuse"), "{dry}");
    assert!(
        dry.stdout.contains(&format!("process {}: ", holder.pid())),
        "{dry}"
    );
}
