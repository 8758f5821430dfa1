//! The library's `image_from_dir` example makes the image the CLI makes with
//! `--rootdir DIR --size auto --cluster auto`: the same size, file system
//! and cluster size, for trees of several shapes.

use mkfs_alloc_tests::tempdir::TempDir;
use mkfs_alloc_tests::{mkfs_alloc, run, MkfsJson};
use std::fs;
use std::path::{Path, PathBuf};

/// The example's binary, built beside the CLI's
/// (`target/<profile>/examples/image_from_dir`).
#[track_caller]
fn example_bin() -> PathBuf {
    // `cargo xtask test-pure` runs copies of the executables elsewhere and
    // names the example's copy.
    if let Some(p) = std::env::var_os("MKFS_ALLOC_EXAMPLE_IMAGE_FROM_DIR") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable has a path");
    let deps = exe.parent().expect("the test executable is in a directory");
    let path = deps.join("..").join("examples").join("image_from_dir");
    assert!(
        path.is_file(),
        "the image_from_dir example is missing at {}: run `cargo build -p mkfs-alloc --examples` \
         first (a workspace `cargo test` builds it)",
        path.display()
    );
    path
}

/// Size, file system and cluster size of the image the CLI makes from
/// `dir` (its `--json`) and of the one the example makes.
fn both(dir: &Path, tmp: &Path) -> [(u64, String, u64); 2] {
    let (cli_img, lib_img) = (tmp.join("cli.img"), tmp.join("lib.img"));
    let (d, c) = (
        dir.to_str().expect("utf-8"),
        cli_img.to_str().expect("utf-8"),
    );
    let args = [
        "--rootdir",
        d,
        "--size",
        "auto",
        "--cluster",
        "auto",
        "--json",
        c,
    ];
    let out = mkfs_alloc(&args);
    assert!(out.success(), "{out}");
    let j = MkfsJson::parse(&out);
    let cli = (
        fs::metadata(&cli_img).expect("cli image").len(),
        j.str("fs").to_string(),
        j.u64("cluster_size"),
    );
    let out = run(example_bin(), &[d, lib_img.to_str().expect("utf-8")]);
    assert!(out.success(), "{out}");
    let out = mkfs_alloc(&["info", "--json", lib_img.to_str().expect("utf-8")]);
    assert!(out.success(), "{out}");
    let info = MkfsJson::parse(&out);
    let volume = &info.value["volumes"][0];
    let lib = (
        fs::metadata(&lib_img).expect("example image").len(),
        volume["fs"].as_str().expect("fs").to_string(),
        volume["cluster_size"].as_u64().expect("cluster_size"),
    );
    [cli, lib]
}

#[test]
fn the_example_makes_the_image_the_cli_makes() {
    let tmp = TempDir::new("image-from-dir");
    // Small files in a few directories (a FAT12 floppy-sized image), then
    // a tree with a large file (a larger file system and cluster size).
    let shapes: [&[(&str, u64)]; 2] = [
        &[
            ("a/one", 3000),
            ("a/two", 12_000),
            ("b/c/three", 700),
            ("four.txt", 90_000),
        ],
        &[("big.bin", 48 << 20), ("small/x", 100), ("small/y", 9000)],
    ];
    let mut seen = Vec::new();
    for (i, files) in shapes.iter().enumerate() {
        let dir = tmp.path().join(format!("tree{i}"));
        for (name, len) in *files {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            let f = fs::File::create(&path).expect("create");
            f.set_len(*len).expect("set_len"); // sparse: reads as zeros
        }
        let out = tmp.path().join(format!("out{i}"));
        fs::create_dir_all(&out).expect("mkdir");
        let [cli, lib] = both(&dir, &out);
        assert_eq!(
            cli, lib,
            "tree {i}: the CLI's (size, fs, cluster) vs the example's"
        );
        seen.push(cli);
    }
    assert_ne!(
        seen[0], seen[1],
        "the two trees should differ in their choices"
    );
}
