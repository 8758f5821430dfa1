//! `mkfs-alloc convert --fs exfat` as a black box: refusals and a dry run
//! leave the target byte-identical (exit 2 for a refusal); and (tool tier)
//! a FAT32 volume made by mkfs.fat and filled by mtools (long names,
//! nested directories, a non-ASCII name, an empty file, attributes, time
//! stamps, a label) converts to an exFAT volume that fsck.exfat finds
//! clean, dump.exfat reads with the label, serial and cluster size kept,
//! and exfat-fuse reads back with every file identical, its name and its
//! modification time (to FAT's 2 seconds) as mtools stored them; with
//! `--cluster 32K`, the same at 32 KiB clusters (the conversion and the
//! re-cluster in one run).

use mkfs_alloc_tests::checks::{dump_exfat_cluster_size, fsck_exfat_clean};
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, FuseMount, LoopDevice, TempDir};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An image of `size` made by our formatter as `fs`.
fn ours(tmp: &TempDir, fs: &str, size: &str) -> std::path::PathBuf {
    let img = tmp.join(&format!("{fs}.img"));
    let p = img.to_str().expect("utf-8");
    mkfs_alloc(&["--fs", fs, "--size", size, "--yes", "-q", p]).assert_success();
    img
}

#[test]
fn a_dry_run_and_refusals_leave_the_target_byte_identical() {
    let tmp = TempDir::new("convert-refusals");
    let fat32 = ours(&tmp, "fat32", "300M");
    let p = fat32.to_str().expect("utf-8");
    let before = std::fs::read(&fat32).expect("read");
    let out = mkfs_alloc(&["convert", "--fs", "exfat", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["step"], "start");
    assert_eq!(v["directories"], 1);
    assert!(std::fs::read(&fat32).expect("read") == before);
    for args in [
        &["convert", "--fs", "exfat", p][..], // no --yes, no terminal
        &["convert", "--fs", "fat16", "--yes", p][..],
    ] {
        mkfs_alloc(args).assert_code(2);
        assert!(std::fs::read(&fat32).expect("read") == before, "{args:?}");
    }
    let fat16 = ours(&tmp, "fat16", "64M");
    let before = std::fs::read(&fat16).expect("read");
    let out = mkfs_alloc(&[
        "convert",
        "--fs",
        "exfat",
        "--yes",
        fat16.to_str().expect("utf-8"),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("FAT32 only"), "{out}");
    assert!(std::fs::read(&fat16).expect("read") == before);
}

/// The host tree mtools copies: (path, bytes, modification time).
fn tree() -> Vec<(String, Vec<u8>, SystemTime)> {
    let t = |i: u64| UNIX_EPOCH + Duration::from_secs(1_600_000_000 + i * 3_000_002);
    let mut v = vec![
        ("readme.txt".to_string(), test_data(100, 1), t(0)),
        ("empty".to_string(), Vec::new(), t(1)),
        (
            "A long photo name 0001.jpeg".to_string(),
            test_data(70_003, 2),
            t(2),
        ),
        (
            "photos/Holiday in the mountains.raw".to_string(),
            test_data(900_000, 4),
            t(3),
        ),
        ("docs/deep/er/note.md".to_string(), test_data(4097, 5), t(4)),
        (
            "Deep/ünïcödé name.dat".to_string(),
            test_data(5000, 6),
            t(5),
        ),
        ("Deep/short.TXT".to_string(), test_data(10, 7), t(6)),
    ];
    for i in 0..40u64 {
        v.push((
            format!("many/file number {i:02}.txt"),
            test_data(700 * i as usize + 1, 8 + i),
            t(7 + i),
        ));
    }
    v
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.fat, mtools, fsck.exfat, dump.exfat, exfat-fuse)"]
fn mkfs_fat_filled_by_mtools_converts_to_exfat_with_every_file() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("convert-mkfs-fat");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", "300M", p]).assert_success();
    run(
        require_tool("mkfs.fat"),
        &["-F", "32", "-n", "HOLIDAYS", "-i", "1234ABCD", p],
    )
    .assert_success();
    let host = tmp.subdir("in");
    let files = tree();
    for (path, data, t) in &files {
        let f = host.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
        std::fs::File::options()
            .write(true)
            .open(&f)
            .and_then(|h| h.set_modified(*t))
            .expect("mtime");
    }
    let mut args = vec!["-s".to_string(), "-m".into(), "-i".into(), p.into()];
    for e in std::fs::read_dir(&host).expect("dir") {
        args.push(e.expect("entry").path().to_str().expect("utf-8").into());
    }
    args.push("::/".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(require_tool("mcopy"), &args).assert_success();
    run(
        require_tool("mattrib"),
        &["-i", p, "+r", "+h", "::/readme.txt"],
    )
    .assert_success();
    let listed = run(require_tool("mdir"), &["-/", "-a", "-i", p, "::/"]);
    listed.assert_success();
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&["convert", "--fs", "exfat", "--yes", "--json", p]);
    out.assert_success();
    eprintln!(
        "convert of a 300 MiB mkfs.fat volume ({} files): {:.2} s\n{}",
        files.len(),
        started.elapsed().as_secs_f64(),
        out.stdout
    );
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 4096);
    let dump = run(require_tool("dump.exfat"), &[p]);
    assert!(dump.stdout.contains("HOLIDAYS"), "{dump}");
    assert!(dump.stdout.to_lowercase().contains("0x1234abcd"), "{dump}");
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let mut seen = 0;
    for (path, data, t) in &files {
        let f = mnt.join(path);
        assert!(std::fs::read(&f).expect("read") == *data, "{path} differs");
        let got = std::fs::metadata(&f)
            .and_then(|m| m.modified())
            .expect("mtime");
        let d = got.duration_since(*t).unwrap_or_else(|e| e.duration());
        assert!(d <= Duration::from_secs(2), "{path}: {got:?} vs {t:?}");
        seen += 1;
    }
    assert_eq!(count_files(&mnt), files.len());
    m.unmount();
    eprintln!("{seen} files identical through exfat-fuse, names and mtimes kept");
    // Again: nothing to do.
    let out = mkfs_alloc(&["convert", "--fs", "exfat", "--yes", p]);
    out.assert_success();
}

/// A FAT32 image of `size` made by mkfs.fat (`mkfs` its options besides
/// `-F 32`), filled by mtools with [`tree`] (times kept).
fn mtools_filled(tmp: &TempDir, size: &str, mkfs: &[&str]) -> std::path::PathBuf {
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", size, p]).assert_success();
    let mut all = vec!["-F", "32"];
    all.extend_from_slice(mkfs);
    all.push(p);
    run(require_tool("mkfs.fat"), &all).assert_success();
    let host = tmp.subdir("in");
    for (path, data, t) in &tree() {
        let f = host.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
        std::fs::File::options()
            .write(true)
            .open(&f)
            .and_then(|h| h.set_modified(*t))
            .expect("mtime");
    }
    let mut args = vec!["-s".to_string(), "-m".into(), "-i".into(), p.into()];
    for e in std::fs::read_dir(&host).expect("dir") {
        args.push(e.expect("entry").path().to_str().expect("utf-8").into());
    }
    args.push("::/".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(require_tool("mcopy"), &args).assert_success();
    img
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.fat, mtools, fsck.exfat, dump.exfat, exfat-fuse)"]
fn convert_with_a_cluster_size_makes_exfat_at_that_size_with_every_file() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("convert-cluster");
    // 512-byte clusters, so that 32 KiB is a re-cluster of 64 to one.
    let img = mtools_filled(&tmp, "64M", &["-s", "1", "-n", "CLUSTERS"]);
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    // Refused in its re-cluster part (not a power of two), and a dry run:
    // nothing written.
    let out = mkfs_alloc(&["convert", "--fs", "exfat", "--cluster", "3000", "--yes", p]);
    out.assert_code(2);
    assert!(std::fs::read(&img).expect("read") == before);
    let out = mkfs_alloc(&[
        "convert",
        "--fs",
        "exfat",
        "--cluster",
        "32K",
        "--dry-run",
        "--json",
        p,
    ]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["step"], "start");
    assert_eq!(v["new_cluster_size"], 32768);
    assert_eq!(
        v["recluster"]["plan"]["new"]["cluster_size"], 32768,
        "{v:#}"
    );
    assert!(std::fs::read(&img).expect("read") == before);
    let started = std::time::Instant::now();
    let out = mkfs_alloc(&["convert", "--fs", "exfat", "--cluster", "32K", "--yes", p]);
    out.assert_success();
    eprintln!(
        "convert --cluster 32K of a 64 MiB mkfs.fat volume: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    fsck_exfat_clean(&img);
    assert_eq!(dump_exfat_cluster_size(&img), 32768);
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let files = tree();
    for (path, data, t) in &files {
        let f = mnt.join(path);
        assert!(std::fs::read(&f).expect("read") == *data, "{path} differs");
        let got = std::fs::metadata(&f)
            .and_then(|m| m.modified())
            .expect("mtime");
        let d = got.duration_since(*t).unwrap_or_else(|e| e.duration());
        assert!(d <= Duration::from_secs(2), "{path}: {got:?} vs {t:?}");
    }
    assert_eq!(count_files(&mnt), files.len());
    m.unmount();
    drop(lo);
    // Again: nothing to do, nothing written.
    let done = std::fs::read(&img).expect("read");
    mkfs_alloc(&["convert", "--fs", "exfat", "--cluster", "32K", "--yes", p]).assert_success();
    assert!(std::fs::read(&img).expect("read") == done);
}

/// fsck's findings on `img`: fsck.exfat's for an exFAT volume (VolumeDirty
/// left out: it is set until the job is done, on purpose), fsck.fat's for
/// the FAT32 volume before the switch (FATs that differ left out: the
/// second one is no longer mirrored and holds the exFAT FAT; and a backup
/// boot sector that differs only in ExtFlags or in the last bytes of the
/// boot code, which fsck.fat calls "mostly harmless": a cut between the
/// two single-sector writes of step 2).
fn findings_of_cut_state(img: &Path) -> (Vec<String>, &'static str) {
    use mkfs_alloc_testsupport::{fsck_findings, FsckKind};
    let bytes = std::fs::read(img).expect("read");
    let (tool, kind, name, skip) = if &bytes[3..11] == b"EXFAT   " {
        ("fsck.exfat", FsckKind::Exfat, "exFAT", "dirty")
    } else {
        ("fsck.fat", FsckKind::Fat, "FAT32", "fats differ")
    };
    let out = run(require_tool(tool), &[Path::new("-n"), img]);
    let all = fsck_findings(kind, out.success(), &out.stdout, &out.stderr);
    let harmless = |l: &String| {
        let l = l.trim();
        l.starts_with("There are differences between boot sector and its backup")
            || l.starts_with("This is mostly harmless")
            || l.starts_with("Not automatically fixing")
            || ["40:", "41:", "508:", "509:"]
                .iter()
                .any(|o| l.starts_with(o))
    };
    // What fsck.fat says besides, when the FATs differ: it would copy the
    // first over the second (it does not read ExtFlags), hence its exit code.
    let differ = all.iter().any(|l| l.to_lowercase().contains(skip));
    let follows = |l: &String| {
        let l = l.trim();
        l == "Leaving filesystem unchanged."
            || (differ && (l == "Using first FAT." || l == "fsck.fat did not exit 0"))
    };
    let kept = all
        .into_iter()
        .filter(|l| !l.to_lowercase().contains(skip) && !harmless(l) && !follows(l))
        .collect();
    (kept, name)
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools, fsck.fat, fsck.exfat)"]
fn fsck_finds_every_cut_state_of_a_conversion_consistent() {
    use mkfs_alloc::recluster::Step;
    use mkfs_alloc_blockio::{BlockIo, ImageFile, PowerCutIo};
    let tmp = TempDir::new("convert-cuts");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", "300M", p]).assert_success();
    run(require_tool("mkfs.fat"), &["-F", "32", "-n", "CUTS", p]).assert_success();
    let host = tmp.subdir("in");
    for (path, data, _) in tree() {
        let f = host.join(&path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
    }
    let mut args = vec!["-s".to_string(), "-i".into(), p.into()];
    for e in std::fs::read_dir(&host).expect("dir") {
        args.push(e.expect("entry").path().to_str().expect("utf-8").into());
    }
    args.push("::/".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(require_tool("mcopy"), &args).assert_success();
    let pristine = std::fs::read(&img).expect("read");
    let ops = {
        let mut count = PowerCutIo::counting(ImageFile::open(&img, 512).expect("open"));
        mkfs_alloc::recluster::convert::convert(&mut count).expect("uncut");
        count.ops_seen()
    };
    let (mut states, mut fat32, mut named_states) = (0, 0, 0);
    for k in 0..ops {
        for seed in 0..2 {
            std::fs::write(&img, &pristine).expect("reset");
            let mut cut = PowerCutIo::new(ImageFile::open(&img, 512).expect("open"), k, seed);
            assert!(mkfs_alloc::recluster::convert::convert(&mut cut).is_err());
            let mut dev = cut.into_surviving().expect("cut");
            dev.flush().expect("flush");
            drop(dev);
            let (findings, kind) = findings_of_cut_state(&img);
            // `info` names an unfinished conversion exactly while one is.
            let step = {
                let mut dev = ImageFile::open(&img, 512).expect("open");
                mkfs_alloc::recluster::convert::plan(&mut dev)
                    .expect("plan")
                    .step
            };
            let info = mkfs_alloc(&["info", "--json", p]);
            let v: serde_json::Value = serde_json::from_str(&info.stdout).expect("json");
            let named = v["convert_unfinished"] == serde_json::json!([1]);
            let unfinished = matches!(step, Step::Redo | Step::Finish);
            assert_eq!(named, unfinished, "cut at {k}, seed {seed}: {step:?}");
            named_states += usize::from(named);
            assert!(
                findings.is_empty(),
                "cut at {k}, seed {seed} ({kind}): {findings:?}"
            );
            states += 1;
            fat32 += usize::from(kind == "FAT32");
            // The same command finishes it: a clean exFAT volume.
            mkfs_alloc(&["convert", "--fs", "exfat", "--yes", "-q", p]).assert_success();
            fsck_exfat_clean(&img);
        }
    }
    eprintln!(
        "fsck on {states} cut states of {ops} ops of a conversion: all consistent \
         ({fat32} FAT32 for fsck.fat, {} exFAT for fsck.exfat; info named {named_states} \
         unfinished); each finished by the same command",
        states - fat32
    );
}

/// Files (not directories) under `dir`.
fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| {
            let p = e.expect("entry").path();
            if p.is_dir() {
                count_files(&p)
            } else {
                1
            }
        })
        .sum()
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat)"]
fn one_fat_or_few_reserved_sectors_are_refused_unchanged() {
    let tmp = TempDir::new("convert-refused-layouts");
    let img = tmp.join("v.img");
    let p = img.to_str().expect("utf-8");
    for (args, said) in [
        (&["-F", "32", "-f", "1"][..], "one FAT"),
        (&["-F", "32", "-R", "16"][..], "reserved sectors"),
    ] {
        let _ = std::fs::remove_file(&img);
        run("truncate", &["-s", "300M", p]).assert_success();
        let mut all = args.to_vec();
        all.push(p);
        run(require_tool("mkfs.fat"), &all).assert_success();
        let before = std::fs::read(&img).expect("read");
        let out = mkfs_alloc(&["convert", "--fs", "exfat", "--yes", p]);
        out.assert_code(2);
        assert!(out.stderr.contains(said), "{args:?}: {out}");
        assert!(std::fs::read(&img).expect("read") == before, "{args:?}");
    }
}

/// What shows a large sparse image unchanged without reading it all: its
/// first 32 MiB (exFAT's boot regions, FAT, bitmap, up-case table and
/// directories as mkfs.exfat places them), its length and its mtime.
fn digest(img: &Path) -> (Vec<u8>, u64, SystemTime) {
    use std::io::Read;
    let mut head = vec![0u8; 32 << 20];
    let mut f = std::fs::File::open(img).expect("open");
    f.read_exact(&mut head).expect("read");
    let m = f.metadata().expect("metadata");
    (head, m.len(), m.modified().expect("mtime"))
}

/// A `size` image made by mkfs.exfat at 4 KiB clusters, mounted through
/// exfat-fuse for `fill`, unmounted.
fn exfat_filled(tmp: &TempDir, size: &str, fill: &dyn Fn(&Path)) -> std::path::PathBuf {
    let img = tmp.join("x.img");
    let p = img.to_str().expect("utf-8");
    run("truncate", &["-s", size, p]).assert_success();
    run(require_tool("mkfs.exfat"), &["-c", "4K", p]).assert_success();
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("xmnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    fill(&mnt);
    m.unmount();
    drop(lo);
    img
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn exfat_to_fat32_is_planned_and_refuses_what_fat32_cannot_hold_unchanged() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("convert-fat32");
    let files = tree();
    let img = exfat_filled(&tmp, "300M", &|mnt| {
        for (path, data, t) in &files {
            let f = mnt.join(path);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
            std::fs::write(&f, data).expect("write");
            std::fs::File::options()
                .write(true)
                .open(&f)
                .and_then(|h| h.set_modified(*t))
                .expect("mtime");
        }
    });
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(&img).expect("read");
    let out = mkfs_alloc(&["convert", "--fs", "fat32", "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["files"], files.len(), "{v:#}");
    assert_eq!(v["cluster_size"], 4096);
    assert_eq!(v["write_supported"], false);
    let out = mkfs_alloc(&["convert", "--fs", "fat32", "--yes", p]);
    out.assert_code(2);
    assert!(out.stderr.contains("not supported yet"), "{out}");
    assert!(std::fs::read(&img).expect("read") == before);
    std::fs::remove_file(&img).expect("rm");
    // A 4 GiB file exFAT holds (exfat-fuse's truncate: DataLength 4 GiB):
    // named, exit 2, unchanged.
    let started = std::time::Instant::now();
    let img = exfat_filled(&tmp, "4200M", &|mnt| {
        std::fs::create_dir_all(mnt.join("dir")).expect("mkdir");
        std::fs::write(mnt.join("dir/a.txt"), b"first").expect("write");
        std::fs::File::create(mnt.join("dir/big.bin"))
            .and_then(|f| f.set_len(4 << 30))
            .expect("truncate");
    });
    let p = img.to_str().expect("utf-8");
    let sum = digest(&img);
    for args in [
        &["convert", "--fs", "fat32", "--dry-run", p][..],
        &["convert", "--fs", "fat32", "--yes", p][..],
    ] {
        let out = mkfs_alloc(args);
        out.assert_code(2);
        assert!(
            out.stderr.contains("/dir/big.bin") && out.stderr.contains("4 GiB"),
            "{out}"
        );
    }
    assert!(digest(&img) == sum);
    eprintln!(
        "the 4 GiB file's volume made and refused in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
