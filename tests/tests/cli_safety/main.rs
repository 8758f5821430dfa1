//! The CLI's promises under hostile use (issue "safety and honesty"): one
//! JSON document for every outcome, exit codes that say whether anything
//! was written, `--dry-run` that opens nothing for writing, refusals of
//! FIFOs, subcommand names, locked targets and images whose loop device is
//! mounted, and the small texts a careful user reads.
//!
//! Each test names the item it pins; every one failed before its fix.

use mkfs_alloc_tests::TmpfsMount;
use mkfs_alloc_tests::{
    file_hash, fill_file, mkfs_alloc, mkfs_alloc_bin, require_root, require_tool, sparse_file,
    CmdOutput, FuseMount, LoopDevice, MkfsJson, TempDir, MIB, SOURCE_DATE_EPOCH,
};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod caller_lock;
mod output;
mod refusals;
mod side_files;
mod targets;

/// Runs the binary in `dir` (stdin /dev/null), with a pinned time.
fn run_in(dir: &Path, args: &[&str]) -> CmdOutput {
    let out = Command::new(mkfs_alloc_bin())
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .stdin(Stdio::null())
        .output()
        .expect("run mkfs-alloc");
    let command = format!("(cd {}; mkfs-alloc {})", dir.display(), args.join(" "));
    CmdOutput::from_output(command, out)
}

/// The JSON documents on stdout (a stream of values).
fn json_documents(out: &CmdOutput) -> Vec<Value> {
    serde_json::Deserializer::from_str(&out.stdout)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("stdout is not a stream of JSON documents ({e}):\n{out}"))
}

/// Exactly one JSON document on stdout; for a failure it carries `error`
/// and the process's exit code.
#[track_caller]
fn one_document(out: &CmdOutput) -> Value {
    let docs = json_documents(out);
    assert_eq!(docs.len(), 1, "expected one JSON document:\n{out}");
    let doc = docs.into_iter().next().unwrap_or_default();
    if out.code != Some(0) {
        assert!(doc["error"].is_string(), "no \"error\" in:\n{out}");
        assert_eq!(
            doc["exit_code"].as_i64(),
            out.code.map(i64::from),
            "exit_code field:\n{out}"
        );
    }
    doc
}

/// Runs the binary as user and group 65534 (nobody).
fn as_nobody(args: &[&str]) -> CmdOutput {
    let out = Command::new(require_tool("setpriv"))
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(mkfs_alloc_bin())
        .args(args)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv");
    let command = format!("setpriv --reuid=65534 mkfs-alloc {}", args.join(" "));
    CmdOutput::from_output(command, out)
}

/// `mkfs-alloc ARGS` with exactly one environment variable set.
fn mkfs_alloc_env_only(args: &[&str], key: &str, value: &str) -> CmdOutput {
    mkfs_alloc_tests::mkfs_alloc_env(args, &[(key, value)])
}
