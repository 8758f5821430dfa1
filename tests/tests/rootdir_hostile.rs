//! `--rootdir` under hostile use (issue #18 items 3, 4 and 7): names that
//! readers would disagree on are refused before writing, a target inside
//! the tree is refused before writing, and a tree changed under the run
//! (a file or directory swapped for a symbolic link to a secret outside)
//! never leaks a byte from outside the tree.
//!
//! Every refusal leaves the target byte-for-byte unchanged (a 0xD1
//! sentinel image, compared by hash). Each test failed before its fix.

use mkfs_alloc_tests::{file_hash, mkfs_alloc_env, TempDir};
use std::fs;
use std::path::Path;

/// A 64 MiB sentinel image (every byte 0xD1) and its hash.
fn sentinel(path: &Path) -> String {
    fs::write(path, vec![0xD1u8; 64 << 20]).expect("sentinel");
    file_hash(path)
}

/// Item 7: U+FFFF and the other Unicode noncharacters, and a surrogate in
/// WTF-8 form, are refused on FAT32 and exFAT: exit 2, every offending path
/// listed with its reason, the target unchanged.
#[test]
fn names_readers_disagree_on_are_refused_before_writing() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = TempDir::new("hostile-names");
    let src = tmp.subdir("src");
    fs::create_dir(src.join("sub")).expect("mkdir");
    fs::write(src.join("fine.txt"), b"x").expect("write");
    fs::write(src.join("nonchar\u{FFFF}.txt"), b"x").expect("write");
    fs::write(src.join("sub/fdd0\u{FDD0}"), b"x").expect("write");
    fs::write(src.join("sub/last\u{10FFFF}"), b"x").expect("write");
    fs::write(src.join(OsStr::from_bytes(b"sur\xED\xA0\x80")), b"x").expect("write");
    let img = tmp.join("t.img");
    let before = sentinel(&img);
    for fs_name in ["fat32", "exfat"] {
        let (src_s, img_s) = (src.to_string_lossy(), img.to_string_lossy());
        let out = mkfs_alloc_env(&["--fs", fs_name, "--rootdir", &src_s, &img_s], &[]);
        out.assert_code(2);
        for (name, reason) in [
            ("nonchar\u{FFFF}.txt", "U+FFFF, a Unicode noncharacter"),
            ("sub/fdd0\u{FDD0}", "U+FDD0, a Unicode noncharacter"),
            ("sub/last\u{10FFFF}", "U+10FFFF, a Unicode noncharacter"),
            ("sur", "unpaired surrogate 0xD800"),
        ] {
            let line = out
                .stderr
                .lines()
                .find(|l| l.contains(name))
                .unwrap_or_else(|| panic!("{fs_name}: {name} not listed:\n{}", out.stderr));
            assert!(line.contains(reason), "{fs_name}: {line}");
        }
        assert!(!out.stderr.contains("fine.txt"), "{}", out.stderr);
        assert_eq!(file_hash(&img), before, "{fs_name}: the target changed");
    }
}
