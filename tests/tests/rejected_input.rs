//! Invalid input: exit code 2, a message naming the valid range, and not one
//! byte of the target changed (the image is filled with a sentinel byte and
//! hashed before and after).

use mkfs_alloc_tests::{
    file_hash, fill_file, fill_range, mkfs_alloc, sparse_file, TempDir, GIB, MIB, SENTINEL,
};
use std::path::Path;

/// How the sentinel image is made.
#[derive(Clone, Copy)]
enum Image {
    /// `bytes` of the sentinel byte.
    Filled(u64),
    /// A sparse file of `bytes` whose first 128 MiB and last 16 MiB hold the
    /// sentinel (where a formatter writes first); the hash covers it all.
    Ends(u64),
}

/// Runs `mkfs-alloc ARGS IMG` on a sentinel image; checks exit code 2, that
/// stderr contains every `expect` fragment (`a|b`: either), and that the
/// image is unchanged.
fn rejected(image: Image, args: &[&str], expect: &[&str]) {
    let tmp = TempDir::new("rejected");
    let img = tmp.join("sentinel.img");
    let size = match image {
        Image::Filled(n) => {
            fill_file(&img, n, SENTINEL);
            n
        }
        Image::Ends(n) => {
            sparse_file(&img, n);
            fill_range(&img, 0, 128 * MIB, SENTINEL);
            fill_range(&img, n - 16 * MIB, 16 * MIB, SENTINEL);
            n
        }
    };
    let before = file_hash(&img);
    let mut all: Vec<&str> = args.to_vec();
    let img_s = img.to_string_lossy().into_owned();
    all.push(&img_s);
    let out = mkfs_alloc(&all);
    out.assert_code(2);
    for e in expect {
        // "a|b": either fragment will do.
        let any = e.split('|').any(|alt| out.stderr.contains(alt));
        assert!(any, "stderr lacks {e:?}:\n{out}");
    }
    assert!(
        out.stdout.trim().is_empty() || !out.stdout.contains("bytes_written"),
        "{out}"
    );
    assert_unchanged(&img, size, &before);
}

fn assert_unchanged(img: &Path, size: u64, before: &str) {
    let len = std::fs::metadata(img).expect("image still exists").len();
    assert_eq!(len, size, "the image changed size");
    assert_eq!(
        file_hash(img),
        before,
        "the image changed although the input was rejected"
    );
}

const SMALL: Image = Image::Filled(64 * MIB);

#[test]
fn exfat_cluster_not_power_of_two() {
    rejected(
        SMALL,
        &["--fs", "exfat", "--cluster", "3K"],
        &["not a power of two", "valid", "512 B..32 MiB"],
    );
}

#[test]
fn exfat_cluster_too_large() {
    rejected(
        SMALL,
        &["--fs", "exfat", "--cluster", "64M"],
        &["out of range", "valid: 512 B..32 MiB"],
    );
}

#[test]
fn fat32_cluster_too_large_for_512_byte_sectors() {
    rejected(
        SMALL,
        &["--fs", "fat32", "--cluster", "128K", "--sector-size", "512"],
        &["out of range", "valid: 512 B..64 KiB"],
    );
}

#[test]
fn exfat_label_too_long() {
    rejected(
        SMALL,
        &["--fs", "exfat", "--label", "TWELVE_CHARS"],
        &["at most 11"],
    );
}

#[test]
fn fat32_label_too_long() {
    rejected(
        SMALL,
        &[
            "--fs",
            "fat32",
            "--cluster",
            "512",
            "--label",
            "TWELVE_CHARS",
        ],
        &["at most 11"],
    );
}

#[test]
fn exfat_label_forbidden_character() {
    rejected(
        SMALL,
        &["--fs", "exfat", "--label", "A*B"],
        &["'*'", "not allowed"],
    );
}

#[test]
fn fat32_label_forbidden_character() {
    rejected(
        SMALL,
        &["--fs", "fat32", "--cluster", "512", "--label", "A.B"],
        &["'.'", "not allowed"],
    );
}

#[test]
fn fat32_too_few_clusters() {
    rejected(
        SMALL,
        &["--fs", "fat32", "--cluster", "4K"],
        &["too small", "valid: 512 B"],
    );
}

#[test]
fn exfat_volume_too_small() {
    rejected(
        Image::Filled(512 * 1024),
        &["--fs", "exfat"],
        &["too small", "1 MiB|1048576"],
    );
}

#[test]
fn unknown_fs() {
    rejected(SMALL, &["--fs", "ntfs"], &["ntfs", "exfat", "fat32"]);
}

#[test]
fn bad_sector_size() {
    rejected(
        SMALL,
        &["--fs", "exfat", "--sector-size", "8192"],
        &["512", "4096"],
    );
}

/// Reference B.2's trap: 1 GiB at 32 KiB clusters has too few clusters.
#[test]
fn fat32_1gib_at_32k() {
    rejected(
        Image::Ends(GIB),
        &["--fs", "fat32", "--cluster", "32K"],
        &["too small", "valid: 512 B..8 KiB"],
    );
}
