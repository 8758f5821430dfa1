//! `--verify` on volumes of 1 to 64 MiB with `--rootdir`: every byte the
//! format writes is checked, the first MiB included (where the boot
//! sector, written last, shares its MiB with the metadata and files
//! written before it). Images read back whole, nothing unverifiable (pure
//! tier); a stick whose first MiB does not keep one byte fails the verify
//! at every size (root, tool tier: the FUSE fake `fakestick.py bitflip`).

use mkfs_alloc_tests::fakestick::FakeStick;
use mkfs_alloc_tests::{mkfs_alloc, require_root, sparse_file, CmdOutput, TempDir, MIB};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The sizes swept, in MiB.
const SIZES: std::ops::RangeInclusive<u64> = 1..=64;
/// The file systems swept.
const FS: [&str; 4] = ["exfat", "fat12", "fat16", "fat32"];
/// The byte of the first MiB the fake stick does not keep: in the boot
/// sector, which every format writes.
const FLIPPED: u64 = 100;

/// A small tree whose first file (300,000 bytes) lands in the first MiB
/// of a small volume, beside its boot region.
fn source_tree(tmp: &TempDir) -> PathBuf {
    let src = tmp.subdir("src");
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(src.join("first.bin"), data).expect("write first.bin");
    std::fs::write(src.join("notes.txt"), b"read back\n").expect("write notes.txt");
    src
}

/// The one JSON document of a `--json` run.
#[track_caller]
fn doc(out: &CmdOutput) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{out}"))
}

/// `mkfs-alloc --fs FS --rootdir SRC --verify --json --yes ARGS TARGETS...`.
fn format_verify(fs: &str, src: &Path, args: &[&str], targets: &[PathBuf]) -> CmdOutput {
    let src = src.to_string_lossy();
    let mut all: Vec<String> = ["--fs", fs, "--rootdir", &src, "--verify", "--json", "--yes"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(targets.iter().map(|t| t.to_string_lossy().into_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    mkfs_alloc(&all)
}

/// Checks the read-back of a formatted target: nothing unverifiable, at
/// least the tree and the first MiB compared.
#[track_caller]
fn read_back_whole(x: &Value, what: &str) {
    let v = &x["verify"];
    assert_eq!(v["unverifiable_bytes"], 0, "{what}: {x:#}");
    let verified = v["bytes_verified"].as_u64().unwrap_or(0);
    assert!(
        verified >= MIB.min(x["volume_bytes"].as_u64().unwrap_or(0)),
        "{what}: {x:#}"
    );
    assert!(verified > 300_000, "{what}: {x:#}");
}

/// Checks that `formatted` (sizes in MiB) holds the small sizes where the
/// whole layout and the first file share the first MiB, and the largest.
#[track_caller]
fn smallest_formatted(fs: &str, formatted: &[u64]) {
    let small: &[u64] = match fs {
        "exfat" | "fat12" => &[1, 2, 3, 4, 5, 6, 7],
        "fat16" => &[4, 5, 6, 7],
        _ => &[],
    };
    for mib in small
        .iter()
        .chain(if fs == "fat12" { None } else { Some(&64) })
    {
        assert!(
            formatted.contains(mib),
            "{fs} {mib} MiB not formatted: {formatted:?}"
        );
    }
}

/// Sixty-four images per file system in one batch (`--skip-refused`: the
/// sizes the file system cannot have are refused alone): every formatted
/// one reads back equal with nothing unverifiable.
#[test]
fn small_images_read_back_whole() {
    let tmp = TempDir::new("verify-small");
    let src = source_tree(&tmp);
    for fs in FS {
        let imgs: Vec<PathBuf> = SIZES
            .map(|mib| {
                let p = tmp.join(&format!("{fs}-{mib}.img"));
                sparse_file(&p, mib * MIB);
                p
            })
            .collect();
        let out = format_verify(fs, &src, &["--skip-refused"], &imgs);
        let v = doc(&out);
        let targets = v["targets"].as_array().expect("targets");
        assert_eq!(targets.len(), imgs.len(), "{out}");
        let mut ok = Vec::new();
        for (mib, x) in SIZES.zip(targets) {
            let what = format!("{fs} {mib} MiB");
            match x["verdict"].as_str() {
                Some("ok") => {
                    assert_eq!(x["verify"]["mismatches"], 0, "{what}: {x:#}");
                    read_back_whole(x, &what);
                    ok.push(mib);
                }
                Some("refused") => {}
                other => panic!("{what}: verdict {other:?}: {x:#}"),
            }
        }
        let code = if ok.len() == imgs.len() { 0 } else { 1 };
        out.assert_code(code);
        smallest_formatted(fs, &ok);
        eprintln!(
            "{fs}: {} of {} sizes formatted and verified",
            ok.len(),
            imgs.len()
        );
    }
}

/// A 64 MiB stick that reads byte 100 back flipped, formatted without a
/// table on its first 1..=64 MiB (`--size`; `--align 4K` as small images
/// get it, so that the first file shares the first MiB with the boot
/// region, rather than the 1 MiB a device gets): the verify fails at every
/// size each file system can have (exit 1, verdict `verify-failed`, the
/// first MiB named), with nothing unverifiable.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_byte_the_first_mib_does_not_keep_fails_the_verify() {
    require_root();
    let tmp = TempDir::new("verify-flip");
    let src = source_tree(&tmp);
    let ft = TempDir::new("verify-flip-fake");
    let stick = FakeStick::bitflip(&ft, 64 * MIB, FLIPPED);
    let dev = stick.path().to_path_buf();
    for fs in FS {
        let mut failed = Vec::new();
        for mib in SIZES {
            let what = format!("{fs} {mib} MiB");
            let size = format!("{mib}M");
            let out = format_verify(
                fs,
                &src,
                &["--table", "none", "--align", "4K", "--size", &size],
                std::slice::from_ref(&dev),
            );
            let v = doc(&out);
            let x = &v["targets"][0];
            match (out.code, x["verdict"].as_str()) {
                (Some(1), Some("verify-failed")) => {
                    assert_eq!(x["verify"]["first_mismatch"], 0, "{what}: {x:#}");
                    assert!(
                        x["verify"]["mismatches"].as_u64() >= Some(1),
                        "{what}: {x:#}"
                    );
                    read_back_whole(x, &what);
                    failed.push(mib);
                }
                (Some(2), Some("refused")) => {}
                _ => panic!("{what}: the flipped byte went unnoticed or the run failed:\n{out}"),
            }
        }
        smallest_formatted(fs, &failed);
        eprintln!("{fs}: the flip found at {} sizes", failed.len());
    }
    stick.remove();
}
