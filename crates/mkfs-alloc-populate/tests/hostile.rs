//! Hostile sources (issue #18): names that readers disagree on are refused
//! before anything is written.

use mkfs_alloc_layout::{plan, ClusterChoice, FormatOptions, FsChoice, FsType, Layout, Medium};
use mkfs_alloc_populate::{plan_tree, PopulateError, Problem, TimePolicy, Tree};
use mkfs_alloc_testsupport::TempDir;
use std::fs;
use std::time::SystemTime;

fn layout(fs: FsType, cluster: u64, size: u64) -> Layout {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_5678);
    plan(&opts, &Medium::whole(size, 512)).expect("plan")
}

fn problems(tree: Tree, fs: FsType) -> Vec<(String, Problem)> {
    let cluster = if fs == FsType::Fat16 { 2048 } else { 512 };
    let l = layout(fs, cluster, 64 << 20);
    match plan_tree(tree, &l, TimePolicy::default()) {
        Err(PopulateError::Names { problems, .. }) => {
            problems.into_iter().map(|p| (p.path, p.problem)).collect()
        }
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("{fs}: accepted"),
    }
}

/// Issue #18 item 7: U+FFFF and every other noncharacter, in FAT long names
/// and exFAT names alike.
#[test]
fn noncharacters_are_refused_on_every_file_system() {
    let names = [
        "\u{FFFF}",
        "\u{FFFE}",
        "\u{FDD0}",
        "\u{FDEF}",
        "\u{1FFFF}",
        "\u{10FFFE}",
    ];
    for fs in [FsType::Exfat, FsType::Fat32, FsType::Fat16] {
        let mut tree = Tree::new();
        let t = SystemTime::UNIX_EPOCH;
        tree.add_file("/fine.txt", std::io::empty(), 1, t)
            .expect("add");
        for (i, c) in names.iter().enumerate() {
            tree.add_file(&format!("/dir/name{i}{c}.txt"), std::io::empty(), 1, t)
                .expect("add");
        }
        let got = problems(tree, fs);
        assert_eq!(got.len(), names.len(), "{fs}: {got:?}");
        for (i, c) in names.iter().enumerate() {
            let ch = c.chars().next().expect("one char");
            let want = (format!("/dir/name{i}{c}.txt"), Problem::Noncharacter { ch });
            assert!(got.contains(&want), "{fs}: {want:?} not in {got:?}");
        }
        let msg = Problem::Noncharacter { ch: '\u{FFFF}' }.to_string();
        assert!(
            msg.contains("U+FFFF") && msg.contains("noncharacter"),
            "{msg}"
        );
    }
}

/// A Linux name holding a surrogate in WTF-8 form (`ED A0 80`, U+D800) is
/// refused naming the surrogate; other bytes that are not UTF-8 are refused
/// as not Unicode.
#[cfg(unix)]
#[test]
fn surrogate_byte_names_are_refused_with_their_reason() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = TempDir::new("hostile-names");
    let src = tmp.subdir("src");
    fs::write(src.join(OsStr::from_bytes(b"sur\xED\xA0\x80.txt")), b"x").expect("write");
    fs::write(src.join(OsStr::from_bytes(b"bad\xFF.txt")), b"x").expect("write");
    fs::write(src.join("fine.txt"), b"x").expect("write");
    for fs in [FsType::Exfat, FsType::Fat32] {
        let tree = Tree::from_dir(&src).expect("walk");
        let got = problems(tree, fs);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got.iter().any(
                |(p, e)| p.contains("sur") && *e == Problem::UnpairedSurrogate { unit: 0xD800 }
            ),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|(p, e)| p.contains("bad") && *e == Problem::NotUnicode),
            "{got:?}"
        );
    }
}
