//! `mkfs-alloc advise --target` and `probe`'s pre-check read existing
//! volumes through the library's one reader, as a black box.
//!
//! A target that holds no volume (zeros), or a volume without files, is
//! advised from its size exactly as `advise --size ITS_SIZE` (stdout byte
//! for byte, text and JSON), and so is one with PATHs given. A volume with
//! files is advised from them: the advice per file system equals `advise
//! --size BYTES --fs FS` on the same files on the host, its recommendation
//! is what `recluster --cluster auto --dry-run` picks, the report names
//! the current size, the files, both wastes and the re-cluster to run, and
//! the target is unchanged; `probe` says what the volume holds and exits
//! as before. Tool tier: a volume made by mkfs.exfat and filled through
//! exfat-fuse, and one made by mkfs.fat and filled by mtools.

use mkfs_alloc_tests::checks::fsck_exfat_clean;
use mkfs_alloc_tests::recluster::{
    fat_tool_tree, mkfs_exfat_filled, mkfs_fat_filled, our_image_with, write_tree,
};
use mkfs_alloc_tests::tools::{require_fuse, require_root};
use mkfs_alloc_tests::{mkfs_alloc, LoopDevice, TempDir};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn json_of(args: &[&str]) -> Value {
    let out = mkfs_alloc(args);
    out.assert_success();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Each entry of `dir`, sorted: the PATHs whose root entries are the
/// volume's.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path().display().to_string())
        .collect();
    v.sort();
    v
}

/// `n` with thousands separators, as the reports print counts.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What `advise --target` says of `img`, checked against the host's
/// advice for the files of `host` on a volume of the file system's size
/// (`--fs fs`; the medium's size must hold it) and against `recluster
/// --cluster auto --dry-run`; `img` unchanged. Returns the advise JSON.
fn check_against_host(img: &Path, host: &Path, fs: &str) -> Value {
    let p = img.to_str().expect("utf-8");
    let before = std::fs::read(img).expect("read");
    let v = json_of(&["advise", "--target", p, "--json"]);
    let size = v["on_volume"]["volume_bytes"].as_u64().expect("size");
    assert!(size <= before.len() as u64 && size > 0, "{v:#}");
    let size = size.to_string();
    let mut args = vec!["advise", "--size", &size, "--fs", fs, "--json"];
    let paths = entries(host);
    args.extend(paths.iter().map(String::as_str));
    let on_host = json_of(&args);
    // The same files, the same volume size and file system: the same table,
    // defaults and recommendation.
    assert_eq!(v["per_fs"], on_host["per_fs"], "{v:#}\n{on_host:#}");
    assert_eq!(v["volume_bytes"], on_host["volume_bytes"]);
    assert_eq!(v["data"]["files"], on_host["data"]["files"]);
    assert_eq!(
        v["data"]["apparent_bytes"],
        on_host["data"]["apparent_bytes"]
    );
    let on = &v["on_volume"];
    let rec = v["per_fs"][0]["recommendation"]["cluster_size"]
        .as_u64()
        .expect("a recommendation");
    assert_eq!(on["recommended_cluster_size"], rec, "{on:#}");
    assert_eq!(on["files"], v["data"]["files"]);
    assert_eq!(on["file_bytes"], v["data"]["apparent_bytes"]);
    eprintln!("{p}: on_volume {on:#}");
    // What recluster --cluster auto picks: its plan, or its refusal of it.
    let dry = mkfs_alloc(&["recluster", "--cluster", "auto", "--dry-run", "--json", p]);
    eprintln!("recluster --cluster auto --dry-run: exit {:?}", dry.code);
    if dry.code == Some(0) {
        let d: Value = serde_json::from_str(&dry.stdout).expect("json");
        assert_eq!(d["auto"]["cluster_size"], rec, "{d:#}");
        assert_eq!(d["auto"]["current_cluster_size"], on["cluster_size"]);
    } else {
        dry.assert_code(2);
        let said = format!("the recommended cluster size is {rec} bytes (");
        assert!(dry.stderr.contains(&said), "{dry}");
    }
    assert!(std::fs::read(img).expect("read") == before, "advise wrote");
    v
}

/// The text report's lines on the volume, and `probe`'s line on what it
/// holds: `holds`, then the files'
/// bytes (the probe overwrites `img`: last).
fn check_text_and_probe(img: &Path, v: &Value, holds: &str) {
    let p = img.to_str().expect("utf-8");
    let on = &v["on_volume"];
    let text = mkfs_alloc(&["advise", "--target", p]);
    text.assert_success();
    assert!(text.stdout.contains("waste now, at "), "{text}");
    assert!(text.stdout.contains(&format!("{} (", p)), "{text}");
    match on["recluster_cluster"].as_str() {
        Some(c) => {
            let cmd = format!("to change it in place: mkfs-alloc recluster --cluster {c} {p}");
            assert!(text.stdout.contains(&cmd), "{text}");
            assert_eq!(
                on["recluster_command"],
                cmd["to change it in place: ".len()..]
            );
        }
        None => assert!(text.stdout.contains("nothing to change"), "{text}"),
    }
    let bytes = on["file_bytes"].as_u64().expect("bytes");
    let probe = mkfs_alloc(&["probe", "--no-speed", p]);
    probe.assert_success();
    assert!(probe.stderr.contains(holds), "want {holds:?}\n{probe}");
    let bytes = format!("({} bytes)", grouped(bytes));
    assert!(probe.stderr.contains(&bytes), "want {bytes:?}\n{probe}");
}

#[test]
fn a_target_without_files_is_advised_from_its_size_byte_for_byte_as_before() {
    let tmp = TempDir::new("advise-target-as-before");
    let zeros = tmp.join("zeros.img");
    std::fs::File::create(&zeros)
        .and_then(|f| f.set_len(48 << 20))
        .expect("image");
    let empty = tmp.join("empty.img");
    let e = empty.to_str().expect("utf-8");
    mkfs_alloc(&["--fs", "exfat", "--size", "32M", "--yes", "-q", e]).assert_success();
    let data = tmp.subdir("data");
    std::fs::write(data.join("a.bin"), vec![7u8; 70_000]).expect("write");
    let d = data.to_str().expect("utf-8").to_string();
    // Our image with files, but PATHs given: the PATHs are the data.
    let with_files = our_image_with(&tmp, &["--cluster", "128K"]);
    for img in [&zeros, &empty] {
        let p = img.to_str().expect("utf-8");
        let size = std::fs::metadata(img).expect("stat").len().to_string();
        for extra in [&[][..], &["--json"], &["--fs", "fat32", "--max-waste", "2"]] {
            let mut t = vec!["advise", "--target", p];
            t.extend_from_slice(extra);
            let mut s = vec!["advise", "--size", &size];
            s.extend_from_slice(extra);
            let (t, s) = (mkfs_alloc(&t), mkfs_alloc(&s));
            t.assert_success();
            assert!(t.stdout_bytes == s.stdout_bytes, "{t}\n{s}");
            assert!(t.stderr.is_empty(), "{t}");
        }
        let probe = mkfs_alloc(&["probe", "--no-speed", "--seed", "1", p]);
        probe.assert_success();
        let held = probe.stderr.contains(" holds ");
        assert_eq!(held, img == &empty, "{probe}");
    }
    let p = with_files.to_str().expect("utf-8");
    let size = std::fs::metadata(&with_files)
        .expect("stat")
        .len()
        .to_string();
    let mut t = json_of(&["advise", "--target", p, "--json", &d]);
    let mut s = json_of(&["advise", "--size", &size, "--json", &d]);
    for v in [&mut t, &mut s] {
        v["data"]["scan_seconds"] = Value::Null;
    }
    assert_eq!(t, s);
    assert!(t.get("on_volume").is_none());
}

#[test]
fn a_volume_of_ours_with_files_is_advised_from_them() {
    let tmp = TempDir::new("advise-target-ours");
    let img = our_image_with(&tmp, &["--cluster", "128K"]);
    let v = check_against_host(&img, &tmp.join("tree"), "exfat");
    assert_eq!(v["on_volume"]["volume_bytes"], 32 << 20);
    let on = &v["on_volume"];
    assert_eq!(v["per_fs"].as_array().map(Vec::len), Some(1), "{v:#}");
    assert_eq!(on["fs"], "exfat");
    assert_eq!(on["cluster_size"], 128 << 10);
    assert_eq!(on["files"], 6);
    assert_eq!(on["directories"], 1);
    assert_eq!(on["file_bytes"], 1_600_015);
    assert_eq!(on["recommended_cluster_size"], 4096);
    assert_eq!(on["recluster_cluster"], "4K");
    assert!(on["refusal"].is_null());
    let (now, rec) = (
        on["waste_bytes"].as_u64(),
        on["recommended_waste_bytes"].as_u64(),
    );
    assert!(now.zip(rec).is_some_and(|(n, r)| n > r), "{on:#}");
    let holds = "holds exFAT volume (whole medium, 32 MiB, 128 KiB clusters): \
                 6 files in 1 directory, 1.5 MiB (1,600,015 bytes)";
    check_text_and_probe(&img, &v, holds);
}

/// The files, directories (every parent, the root not counted) and bytes
/// of a tree.
fn counts(tree: &[(String, Vec<u8>)]) -> (u64, u64, u64) {
    let mut dirs = std::collections::BTreeSet::new();
    for (path, _) in tree {
        let mut p = Path::new(path).parent();
        while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_path_buf());
            p = d.parent();
        }
    }
    let bytes = tree.iter().map(|(_, d)| d.len() as u64).sum();
    (tree.len() as u64, dirs.len() as u64, bytes)
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, mkfs.exfat, exfat-fuse)"]
fn a_mkfs_exfat_volume_filled_through_exfat_fuse_is_advised_from_its_files() {
    require_root();
    require_fuse();
    let tmp = TempDir::new("advise-target-exfat");
    let args = ["-c", "128K", "-L", "STICK"];
    let (img, tree, a, b) = mkfs_exfat_filled(&tmp, "256M", &args, (31, 32), 256 << 10);
    fsck_exfat_clean(&img);
    let host: PathBuf = tmp.subdir("host");
    write_tree(&host, &tree);
    std::fs::write(host.join("interleaved-a.bin"), &a).expect("write");
    std::fs::write(host.join("interleaved-b.bin"), &b).expect("write");
    let v = check_against_host(&img, &host, "exfat");
    assert_eq!(v["on_volume"]["volume_bytes"], 256 << 20);
    let on = &v["on_volume"];
    let (files, dirs, bytes) = counts(&tree);
    let (files, bytes) = (files + 2, bytes + (a.len() + b.len()) as u64);
    assert_eq!(on["cluster_size"], 128 << 10, "{on:#}");
    assert_eq!(on["files"], files);
    assert_eq!(on["directories"], dirs);
    assert_eq!(on["file_bytes"], bytes);
    assert!(
        on["recommended_cluster_size"].as_u64() < Some(128 << 10),
        "{on:#}"
    );
    fsck_exfat_clean(&img);
    let holds = format!(
        "holds exFAT volume (whole medium, 256 MiB, 128 KiB clusters): {files} files in {dirs} directories, "
    );
    // A device: the probe's confirmation says it too (a copy, through a
    // loop device), and the probe runs as it would without.
    let copy = tmp.join("copy.img");
    std::fs::copy(&img, &copy).expect("copy");
    {
        let lo = LoopDevice::attach_direct(&copy);
        let dev = lo.path().to_str().expect("utf-8");
        let out = mkfs_alloc(&["probe", "--no-speed", "--yes", dev]);
        out.assert_success();
        let line = format!(
            "  holds      exFAT volume (whole medium, 256 MiB, 128 KiB clusters): {files} files"
        );
        assert!(out.stderr.contains(&line), "want {line:?}\n{out}");
        assert!(
            out.stderr.contains(&format!("({} bytes)", grouped(bytes))),
            "{out}"
        );
        let quiet = mkfs_alloc(&["probe", "--no-speed", "--yes", "-q", dev]);
        quiet.assert_success();
        assert!(!quiet.stderr.contains("holds"), "{quiet}");
    }
    check_text_and_probe(&img, &v, &holds);
}

#[test]
#[ignore = "tool tier: cargo xtask test (mkfs.fat, mtools)"]
fn a_mkfs_fat_volume_filled_by_mtools_is_advised_from_its_files() {
    let tmp = TempDir::new("advise-target-fat");
    let size: u64 = 2200 << 20;
    let img = mkfs_fat_filled(&tmp, size, &["-F", "32", "-s", "64", "-S", "512"]);
    let tree = fat_tool_tree();
    let host = tmp.subdir("host");
    write_tree(&host, &tree);
    let v = check_against_host(&img, &host, "fat32");
    let on = &v["on_volume"];
    let (files, dirs, bytes) = counts(&tree);
    assert_eq!(on["fs"], "fat32", "{on:#}");
    assert_eq!(on["cluster_size"], 32 << 10);
    assert_eq!(on["files"], files);
    assert_eq!(on["directories"], dirs);
    assert_eq!(on["file_bytes"], bytes);
    let holds = format!(
        "holds FAT32 volume (whole medium, 2.1 GiB, 32 KiB clusters): {files} files in {dirs} directories, "
    );
    check_text_and_probe(&img, &v, &holds);
}
