//! Bad input, table-driven: one row per invalid value, run against the CLI.
//!
//! Every row must exit with code 2, print a message on stderr that names the
//! reason and the valid range (each expected fragment; `a|b`: either), and
//! leave the target exactly as it was: a sentinel image (0xD1 bytes)
//! byte-for-byte unchanged (cksum), a target that did not exist still
//! missing, a directory still an empty directory.
//!
//! Read-only targets: root ignores file modes (a `chmod 444` image opens
//! for writing as root), so the read-only target sits on a tmpfs that is
//! remounted read-only (`mount -o remount,ro`), which binds root too.
//!
//! The test runs every row and then fails listing all failing rows, so one
//! product bug does not hide another.

use mkfs_alloc_tests::TmpfsMount;
use mkfs_alloc_tests::{
    file_hash, fill_file, mkfs_alloc, require_root, TempDir, KIB, MIB, SENTINEL,
};
use std::path::{Path, PathBuf};

/// What the row runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A 64 MiB image of 0xD1 bytes.
    Sentinel,
    /// A 512 KiB image of 0xD1 bytes (too small for any file system).
    Small,
    /// A path that does not exist; the row passes `--size`.
    New,
    /// A path that does not exist, without `--size`.
    Missing,
    /// An empty directory.
    Dir,
    /// A 4 MiB sentinel image on a read-only tmpfs.
    ReadOnly,
}

struct Row {
    name: &'static str,
    target: Target,
    args: &'static [&'static str],
    expect: &'static [&'static str],
}

const fn row(
    name: &'static str,
    target: Target,
    args: &'static [&'static str],
    expect: &'static [&'static str],
) -> Row {
    Row {
        name,
        target,
        args,
        expect,
    }
}

use Target::{Dir, Missing, New, ReadOnly, Sentinel, Small};

const EXFAT_RANGE: &str = "512 B..32 MiB";
const FAT32_RANGE: &str = "512 B..64 KiB";
const EXFAT_LABEL_CHARS: &str = "\" * / : < > ? \\ |";
const FAT32_LABEL_CHARS: &str = "\" * + , . / : ; < = > ? [ \\ ] |";
const SIZE_UNITS: &str = "K, M, G, T, P or E (binary: 1K = 1024; same as KiB, MiB, GiB, TiB, PiB, EiB) or kB, MB, GB, TB, PB, EB (decimal";

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // Cluster sizes: not a power of two.
    row("exfat cluster 3K", Sentinel, &["--fs", "exfat", "--cluster", "3K"], &["not a power of two", EXFAT_RANGE]),
    row("exfat cluster 1000", Sentinel, &["--fs", "exfat", "--cluster", "1000"], &["not a power of two", EXFAT_RANGE]),
    row("fat32 cluster 3K", Sentinel, &["--fs", "fat32", "--cluster", "3K"], &["not a power of two", FAT32_RANGE]),
    row("cluster 0", Sentinel, &["--fs", "exfat", "--cluster", "0"], &[EXFAT_RANGE]),
    row("cluster unit 32Q", Sentinel, &["--fs", "exfat", "--cluster", "32Q"], &["--cluster", "unknown unit", SIZE_UNITS]),
    // Cluster sizes: below the sector size.
    row("exfat cluster 256", Sentinel, &["--fs", "exfat", "--cluster", "256"], &["out of range", EXFAT_RANGE]),
    row("fat32 cluster 256", Sentinel, &["--fs", "fat32", "--cluster", "256"], &["out of range", FAT32_RANGE]),
    row("exfat cluster 1K at 2048-byte sectors", New, &["--fs", "exfat", "--cluster", "1K", "--sector-size", "2048", "--size", "64M"], &["out of range", "2 KiB..32 MiB"]),
    // Cluster sizes: too large for the file system.
    row("exfat cluster 64M", Sentinel, &["--fs", "exfat", "--cluster", "64M"], &["out of range", EXFAT_RANGE]),
    row("fat32 cluster 128K at 512-byte sectors", Sentinel, &["--fs", "fat32", "--cluster", "128K", "--sector-size", "512"], &["out of range", FAT32_RANGE, "exFAT"]),
    row("fat32 cluster 1M", Sentinel, &["--fs", "fat32", "--cluster", "1M"], &["out of range", FAT32_RANGE]),
    // Cluster sizes: too large for the volume.
    row("fat32 32K on 1 GiB (new)", New, &["--fs", "fat32", "--cluster", "32K", "--size", "1G"], &["too small", "65,541", "valid: 512 B..8 KiB"]),
    row("fat32 4K on 64 MiB", Sentinel, &["--fs", "fat32", "--cluster", "4K"], &["too small", "65,541", "valid: 512 B"]),
    row("exfat 32M on 64 MiB", Sentinel, &["--fs", "exfat", "--cluster", "32M"], &["too small|too few|valid"]),
    // Sector sizes.
    row("sector size 0", Sentinel, &["--fs", "exfat", "--sector-size", "0"], &["512", "4096"]),
    row("sector size 256", Sentinel, &["--fs", "exfat", "--sector-size", "256"], &["256", "512", "4096"]),
    row("sector size 8192", Sentinel, &["--fs", "exfat", "--sector-size", "8192"], &["8192", "512", "4096"]),
    row("sector size 1000", Sentinel, &["--fs", "exfat", "--sector-size", "1000"], &["1000", "512", "4096"]),
    row("sector size 1000 (new)", New, &["--fs", "exfat", "--sector-size", "1000", "--size", "64000000"], &["1000", "512", "4096"]),
    row("sector size abc", Sentinel, &["--fs", "exfat", "--sector-size", "abc"], &["'abc'", "--sector-size"]),
    // Labels: too long.
    row("exfat label 12 chars", Sentinel, &["--fs", "exfat", "--label", "TWELVE_CHARS"], &["12 UTF-16", "at most 11"]),
    row("fat32 label 12 chars", Sentinel, &["--fs", "fat32", "--cluster", "512", "--label", "TWELVE_CHARS"], &["12 bytes", "at most 11"]),
    row("exfat label 12 multibyte chars", Sentinel, &["--fs", "exfat", "--label", "ÄÖÜäöüßÄÖÜäö"], &["12 UTF-16", "at most 11"]),
    row("exfat label 6 astral chars (12 UTF-16 units)", Sentinel, &["--fs", "exfat", "--label", "😀😀😀😀😀😀"], &["12 UTF-16", "at most 11"]),
    row("fat32 label non-ASCII", Sentinel, &["--fs", "fat32", "--cluster", "512", "--label", "Größe"], &["non-ASCII", "'ö'", "exFAT"]),
    // Labels: forbidden characters.
    row("exfat label a/b", Sentinel, &["--fs", "exfat", "--label", "a/b"], &["'/'", "not allowed", EXFAT_LABEL_CHARS]),
    row("exfat label a:b", Sentinel, &["--fs", "exfat", "--label", "a:b"], &["':'", "not allowed", EXFAT_LABEL_CHARS]),
    row("exfat label a*b", Sentinel, &["--fs", "exfat", "--label", "a*b"], &["'*'", "not allowed", EXFAT_LABEL_CHARS]),
    row("exfat label with a tab", Sentinel, &["--fs", "exfat", "--label", "a\tb"], &["control"]),
    row("fat32 label a.b", Sentinel, &["--fs", "fat32", "--cluster", "512", "--label", "a.b"], &["'.'", "not allowed", FAT32_LABEL_CHARS]),
    row("fat32 label a+b", Sentinel, &["--fs", "fat32", "--cluster", "512", "--label", "a+b"], &["'+'", "not allowed", FAT32_LABEL_CHARS]),
    row("fat32 label a[b", Sentinel, &["--fs", "fat32", "--cluster", "512", "--label", "a[b"], &["'['", "not allowed", FAT32_LABEL_CHARS]),
    // Sizes.
    row("size 4X", New, &["--fs", "exfat", "--size", "4X"], &["--size", "unknown unit", SIZE_UNITS]),
    row("size 4.5G", New, &["--fs", "exfat", "--size", "4.5G"], &["--size", "4.5G", SIZE_UNITS]),
    row("size -1G", New, &["--fs", "exfat", "--size=-1G"], &["--size", "-1G", SIZE_UNITS]),
    row("size 0", New, &["--fs", "exfat", "--size", "0"], &["--size", "greater than zero", "1 MiB"]),
    row("size 99999999999999999999", New, &["--fs", "exfat", "--size", "99999999999999999999"], &["--size", "too large", "16 EiB"]),
    row("size 17000000T", New, &["--fs", "exfat", "--size", "17000000T"], &["--size", "too large", "16 EiB"]),
    row("size 8 G (space before the unit)", New, &["--fs", "exfat", "--size", "8 G"], &["--size", "unknown unit", SIZE_UNITS]),
    row("size 8gb (bits?)", New, &["--fs", "exfat", "--size", "8gb"], &["--size", "unknown unit", SIZE_UNITS]),
    row("size 16E (one byte beyond the maximum)", New, &["--fs", "exfat", "--size", "16E"], &["--size", "too large", "16 EiB - 1 byte"]),
    row("size empty", New, &["--fs", "exfat", "--size="], &["--size", "empty"]),
    row("size 1048577 (not whole sectors)", New, &["--fs", "exfat", "--size", "1048577"], &["not a multiple", "512"]),
    row("size smaller than the image", Sentinel, &["--fs", "exfat", "--size", "32M"], &["smaller than the existing image", "never shrunk"]),
    // Alignment.
    row("align 3K", Sentinel, &["--fs", "exfat", "--align", "3K"], &["alignment", "power of two", "64 MiB"]),
    row("align 128M", Sentinel, &["--fs", "exfat", "--align", "128M"], &["alignment", "power of two", "64 MiB"]),
    row("align 256", Sentinel, &["--fs", "exfat", "--align", "256"], &["alignment", "power of two", "512 B"]),
    // Serial.
    row("serial xyz", Sentinel, &["--fs", "exfat", "--serial", "xyz"], &["--serial", "1 to 8 hex digits"]),
    row("serial 123456789", Sentinel, &["--fs", "exfat", "--serial", "123456789"], &["--serial", "1 to 8 hex digits"]),
    // File system and table names.
    row("fs ntfs", Sentinel, &["--fs", "ntfs"], &["'ntfs'", "exfat", "fat32"]),
    row("table foo", Sentinel, &["--table", "foo"], &["'foo'", "mbr", "gpt"]),
    row("table mbr on 3 TiB (new)", New, &["--fs", "exfat", "--table", "mbr", "--size", "3T"], &["too large for an MBR", "GPT"]),
    // Targets.
    row("target does not exist", Missing, &["--fs", "exfat"], &["does not exist", "--size"]),
    row("target is a directory", Dir, &["--fs", "exfat"], &["is a directory"]),
    row("target is read-only", ReadOnly, &["--fs", "exfat"], &["cannot open", "for writing", "Read-only"]),
    row("exfat on 512 KiB", Small, &["--fs", "exfat"], &["too small", "1048576|1 MiB"]),
    row("fat32 on 512 KiB", Small, &["--fs", "fat32"], &["too small"]),
    // FAT12/16: the width follows the cluster count; the error names the valid sizes.
    row("fat16 4K on 4 MiB (new)", New, &["--fs", "fat16", "--cluster", "4K", "--size", "4M"], &["too small for FAT16", "4,101", "valid: 512 B", "--fs fat"]),
    row("fat12 512 on 64 MiB", Sentinel, &["--fs", "fat12", "--cluster", "512"], &["too large for FAT12", "4,068", "valid: 16 KiB..64 KiB"]),
    row("fat12 on 1 GiB in no size (new)", New, &["--fs", "fat12", "--size", "1G"], &["too large for FAT12", "no cluster size is valid for FAT12", "use --fs fat (the width"]),
    row("fat16 at 1 KiB in no width (new)", New, &["--fs", "fat16", "--cluster", "512", "--size", "1G"], &["too large for FAT16", "65,508", "valid: 16 KiB..64 KiB"]),
    row("fat 4K in the FAT12/16 gap (new)", New, &["--fs", "fat", "--cluster", "4K", "--size", "18336K"], &["no FAT width fits", "(4,072 clusters", "FAT12 takes 1..4,068", "valid: 512 B, 1 KiB, 2 KiB, 8 KiB"]),
    row("esp with exfat", Sentinel, &["--esp", "--fs", "exfat"], &["EFI System Partition must be FAT", "--fs fat"]),
    row("root entries 0", Sentinel, &["--fs", "fat16", "--root-entries", "0"], &["root directory entries 0", "1..=32768"]),
    row("root entries 32769", Sentinel, &["--fs", "fat16", "--root-entries", "32769"], &["root directory entries 32769", "1..=32768"]),
    row("fats 3", Sentinel, &["--fs", "fat16", "--fats", "3"], &["3 FATs", "1 or 2"]),
    // A refused count comes after what planning checks before it.
    row("bad align before root entries 0", Sentinel, &["--fs", "fat16", "--root-entries", "0", "--align", "3"], &["--align 3", "a power of two"]),
    row("bad align before fats 3", Sentinel, &["--fs", "fat16", "--fats", "3", "--align", "3"], &["--align 3", "a power of two"]),
    row("root entries 0 before fats 3", Sentinel, &["--fs", "fat16", "--root-entries", "0", "--fats", "3"], &["root directory entries 0", "1..=32768"]),
    row("sd layout before fats 3", Sentinel, &["--layout", "sd", "--fats", "3"], &["--layout sd decides the number of FATs"]),
    row("missing target before root entries 0", Missing, &["--fs", "fat16", "--root-entries", "0"], &["does not exist", "--size"]),
    row("root entries on FAT32 (new)", New, &["--fs", "fat32", "--root-entries", "1024", "--size", "1G"], &["--root-entries applies to FAT12 and FAT16", "FAT32"]),
    row("fat32 on 4 TiB at 512-byte sectors (new)", New, &["--fs", "fat32", "--size", "4T"], &["too large for FAT32", "2.0 TiB", "exFAT|4096-byte sectors"]),
    // --data.
    row("--data with --cluster 32K", Sentinel, &["--fs", "exfat", "--data", "@DATA@", "--cluster", "32K"], &["--data", "cannot be combined with --cluster 32K"]),
    row("--data nonexistent", Sentinel, &["--fs", "exfat", "--data", "/nonexistent/mkfs-alloc-data"], &["--data", "no such file or directory"]),
];

/// A sentinel image and its hash.
struct Image {
    path: PathBuf,
    size: u64,
    hash: String,
}

impl Image {
    fn make(path: PathBuf, size: u64) -> Image {
        fill_file(&path, size, SENTINEL);
        let hash = file_hash(&path);
        Image { path, size, hash }
    }

    /// `None` when unchanged, else what changed (and the image is made anew).
    fn changed(&mut self, writable: bool) -> Option<String> {
        let now = match std::fs::metadata(&self.path) {
            Ok(m) if m.len() != self.size => format!("size {} -> {}", self.size, m.len()),
            Ok(_) if file_hash(&self.path) != self.hash => "contents changed".to_string(),
            Ok(_) => return None,
            Err(e) => format!("gone: {e}"),
        };
        if writable {
            *self = Image::make(self.path.clone(), self.size);
        }
        Some(now)
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn every_invalid_value_exits_2_and_writes_nothing() {
    require_root();
    let tmp = TempDir::new("bad-input");
    let data = tmp.subdir("data");
    std::fs::write(data.join("file.bin"), vec![7u8; 100 * 1024]).expect("write data");
    let mut sentinel = Image::make(tmp.join("sentinel.img"), 64 * MIB);
    let mut small = Image::make(tmp.join("small.img"), 512 * KIB);
    let dir = tmp.subdir("a-directory");
    let ro_dir = tmp.subdir("ro");
    let ro_mount = TmpfsMount::mount(&ro_dir, "size=8m");
    let mut ro = Image::make(ro_dir.join("sentinel.img"), 4 * MIB);
    ro_mount.remount_read_only();

    let mut failures: Vec<String> = Vec::new();
    for (i, r) in ROWS.iter().enumerate() {
        let new_path = tmp.join(&format!("new-{i}.img"));
        let target: &Path = match r.target {
            Sentinel => &sentinel.path,
            Small => &small.path,
            New | Missing => &new_path,
            Dir => &dir,
            ReadOnly => &ro.path,
        };
        let data_s = data.to_string_lossy().into_owned();
        let target_s = target.to_string_lossy().into_owned();
        let mut args: Vec<&str> = r
            .args
            .iter()
            .map(|a| if *a == "@DATA@" { data_s.as_str() } else { a })
            .collect();
        args.push(&target_s);
        let out = mkfs_alloc(&args);
        let mut problems = Vec::new();
        if out.code != Some(2) {
            problems.push(format!("exit code {:?}, expected 2", out.code));
        }
        for e in r.expect {
            if !e.split('|').any(|alt| out.stderr.contains(alt)) {
                problems.push(format!("stderr lacks {e:?}"));
            }
        }
        if out.stderr.contains("panicked") {
            problems.push("the binary panicked".to_string());
        }
        let unchanged = match r.target {
            Sentinel => sentinel.changed(true),
            Small => small.changed(true),
            ReadOnly => ro.changed(false),
            New | Missing => target
                .exists()
                .then(|| "the target was created".to_string()),
            Dir => (!dir.is_dir() || std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(1) != 0)
                .then(|| "the directory changed".to_string()),
        };
        if let Some(c) = unchanged {
            problems.push(format!("target not left alone: {c}"));
            let _ = std::fs::remove_file(&new_path);
        }
        if !problems.is_empty() {
            failures.push(format!(
                "row {} ({}): {}\n{out}",
                i + 1,
                r.name,
                problems.join("; ")
            ));
        }
    }
    drop(ro_mount);
    eprintln!(
        "bad input matrix: {} rows, {} passed, {} failed",
        ROWS.len(),
        ROWS.len() - failures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n\n")
    );
}
