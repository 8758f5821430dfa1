//! Many targets at once: `mkfs-alloc [options] TARGET TARGET...`
//! plans each target for its own size with its own identity, asks once,
//! formats them concurrently, reads them back with `--verify`, and lets a
//! failing target fail alone; the table, `--json` and `--log` report every
//! target. `images.rs` needs no tool; `devices.rs` (root, tool tier) runs
//! loop devices, a counterfeit and a dying stick together.

use mkfs_alloc_tests::{file_hash, fill_file, mkfs_alloc, mkfs_alloc_env, CmdOutput, TempDir, MIB};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod devices;
mod held;
mod images;

/// `mkfs-alloc ARGS TARGETS...`.
fn batch(args: &[&str], targets: &[PathBuf]) -> CmdOutput {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(targets.iter().map(|t| t.to_string_lossy().into_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    mkfs_alloc(&all)
}

/// The same without `SOURCE_DATE_EPOCH` (random identities).
fn batch_random(args: &[&str], targets: &[PathBuf]) -> CmdOutput {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(targets.iter().map(|t| t.to_string_lossy().into_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    mkfs_alloc_env(&all, &[])
}

/// The one JSON document of a `--json` run.
#[track_caller]
fn doc(out: &CmdOutput) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{out}"))
}

/// The `targets` array of a document.
fn targets(v: &Value) -> &Vec<Value> {
    v["targets"].as_array().expect("targets")
}

/// The verdict of each target of a document.
fn verdicts(v: &Value) -> Vec<&str> {
    targets(v)
        .iter()
        .map(|x| x["verdict"].as_str().unwrap_or(""))
        .collect()
}

/// `n` existing images of slightly different sizes (`base` MiB plus 0, 1,
/// 2... MiB), filled with 0xD1.
fn images(tmp: &TempDir, n: usize, base: u64) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let p = tmp.join(&format!("stick{i}.img"));
            fill_file(&p, (base + i as u64) * MIB, 0xD1);
            p
        })
        .collect()
}

/// Hash of every file of `paths`.
fn hashes(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| file_hash(p)).collect()
}

/// A small source tree: a few files, one over a MiB, in a subdirectory.
fn source_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let files: Vec<(String, Vec<u8>)> = vec![
        ("README.TXT".into(), b"a batch\n".to_vec()),
        (
            "data/big.bin".into(),
            (0..3_000_000u32).map(|i| (i % 253) as u8).collect(),
        ),
        ("data/Long Name Here.txt".into(), vec![b'x'; 9000]),
        ("data/empty".into(), Vec::new()),
    ];
    for (name, data) in &files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, data).expect("write");
    }
    files
}
