//! `--output-format sparse` and `--bmap FILE`, both from the
//! plan's extent map: `simg2img` expands the sparse image to exactly the
//! raw image the same options give (a table, a tree, every file system),
//! also when it went through a pipe (`-`); `bmaptool copy` with the map
//! writes the raw image again, and onto a device of old bytes it leaves a
//! volume fsck finds clean, the mapped bytes the image's. Misuse is refused
//! before anything is created.

use mkfs_alloc_tests::checks::{fsck_exfat_clean, fsck_fat_clean};
use mkfs_alloc_tests::loopdev::LoopDevice;
use mkfs_alloc_tests::tempdir::TempDir;
use mkfs_alloc_tests::{mkfs_alloc, mkfs_alloc_bin, test_data, tool, CmdOutput};
use std::fs;
use std::path::{Path, PathBuf};

const MIB: usize = 1 << 20;

fn make_tree(root: &Path) {
    fs::create_dir_all(root.join("docs")).expect("mkdir");
    fs::write(root.join("big.bin"), test_data(3 * MIB + 123, 1)).expect("write");
    fs::write(root.join("docs/readme.txt"), b"hello\n").expect("write");
    let mut holey = vec![0u8; 2 * MIB];
    holey[MIB] = 1;
    fs::write(root.join("docs/holey.bin"), holey).expect("write");
}

fn args<'a>(fs: &'a str, table: &'a str, tree: &'a str) -> Vec<&'a str> {
    vec![
        "--fs",
        fs,
        "--table",
        table,
        "--size",
        "300M",
        "--serial",
        "1234ABCD",
        "--rootdir",
        tree,
        "-q",
    ]
}

fn run(base: &[&str], extra: &[&str]) -> CmdOutput {
    let mut a = base.to_vec();
    a.extend_from_slice(extra);
    mkfs_alloc(&a)
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn simg2img_gives_back_the_raw_image() {
    let dir = TempDir::new("sparse");
    let tree = dir.join("tree");
    make_tree(&tree);
    let t = tree.to_string_lossy().into_owned();
    for (fs, table) in [
        ("exfat", "gpt"),
        ("fat32", "mbr"),
        ("fat16", "none"),
        ("exfat", "none"),
    ] {
        let base = args(fs, table, &t);
        let (raw, simg, back) = (
            dir.join("raw.img"),
            dir.join("x.simg"),
            dir.join("back.img"),
        );
        run(&base, &[&raw.to_string_lossy()]).assert_success();
        run(
            &base,
            &["--output-format", "sparse", &simg.to_string_lossy()],
        )
        .assert_success();
        tool("simg2img", &[simg.as_os_str(), back.as_os_str()]).assert_success();
        let raw_bytes = fs::read(&raw).expect("read");
        assert!(
            raw_bytes == fs::read(&back).expect("read"),
            "{fs} {table}: simg2img differs"
        );
        // Much smaller than the 300 MiB it stands for.
        assert!(fs::metadata(&simg).expect("stat").len() < 32 * MIB as u64);
        // No raw image left behind beside it.
        let left: Vec<PathBuf> = fs::read_dir(dir.path())
            .expect("ls")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".raw"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // Through a pipe: the same bytes.
        let mut cmd = std::process::Command::new(mkfs_alloc_bin());
        cmd.args(&base).args(["--output-format", "sparse", "-"]);
        cmd.env(
            "SOURCE_DATE_EPOCH",
            mkfs_alloc_tests::cli::SOURCE_DATE_EPOCH,
        );
        let out = cmd.output().expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stdout == fs::read(&simg).expect("read"),
            "{fs} {table}: the piped image differs"
        );
        for p in [raw, simg, back] {
            fs::remove_file(p).expect("rm");
        }
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn bmaptool_flashes_the_image_by_its_map() {
    let dir = TempDir::new("bmap");
    let tree = dir.join("tree");
    make_tree(&tree);
    let t = tree.to_string_lossy().into_owned();
    for fs in ["exfat", "fat32"] {
        let base = args(fs, "none", &t);
        let (raw, map, copy) = (
            dir.join("raw.img"),
            dir.join("raw.bmap"),
            dir.join("copy.img"),
        );
        run(
            &base,
            &["--bmap", &map.to_string_lossy(), &raw.to_string_lossy()],
        )
        .assert_success();
        let bmap = |dest: &Path| {
            tool(
                "bmaptool",
                &[
                    "copy".as_ref(),
                    "--bmap".as_ref(),
                    map.as_os_str(),
                    raw.as_os_str(),
                    dest.as_os_str(),
                ],
            )
        };
        bmap(&copy).assert_success();
        let image = fs::read(&raw).expect("read");
        assert!(
            image == fs::read(&copy).expect("read"),
            "{fs}: bmaptool's copy differs"
        );
        // Onto a device of old bytes: a clean volume, mapped bytes the image's.
        let old = dir.join("old.img");
        fs::write(&old, test_data(image.len(), 9)).expect("write");
        let dev = LoopDevice::attach(&old);
        bmap(dev.path()).assert_success();
        dev.flush();
        drop(dev);
        if fs == "exfat" {
            fsck_exfat_clean(&old);
        } else {
            fsck_fat_clean(&old);
        }
        let flashed = fs::read(&old).expect("read");
        let same = image.iter().zip(&flashed).filter(|(a, b)| a == b).count();
        // Everything the volume uses came over (about 6 MiB of the tree and
        // metadata); the rest is still the old bytes.
        assert!(
            same > 6 * MIB && same < image.len() / 2,
            "{fs}: {same} bytes equal"
        );
        for p in [raw, map, copy, old] {
            fs::remove_file(p).expect("rm");
        }
    }
}

#[test]
fn misuse_is_refused_before_anything_is_made() {
    let dir = TempDir::new("export-misuse");
    let img = dir.join("x.img");
    let i = img.to_string_lossy().into_owned();
    let bmap = dir.join("x.bmap").to_string_lossy().into_owned();
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "64M", "-"], "needs --output-format sparse"),
        (
            &[
                "--size",
                "64M",
                "--output-format",
                "sparse",
                "--bmap",
                &bmap,
                &i,
            ],
            "--bmap maps a raw image",
        ),
        (&["--output-format", "sparse", &i], "give its --size"),
        (
            &["--size", "64M", "--output-format", "sparse", "--json", "-"],
            "--json prints to standard output",
        ),
        (
            &["--size", "64M", "--copy", "reflink", &i],
            "give --rootdir",
        ),
    ];
    for (a, why) in cases {
        let out = mkfs_alloc(a);
        out.assert_code(2);
        assert!(out.stderr.contains(why), "{a:?}: {out}");
        assert!(
            fs::read_dir(dir.path()).expect("ls").next().is_none(),
            "{a:?} left a file"
        );
    }
}
