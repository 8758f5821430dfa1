//! Helpers for the tests that check our tables with the real tools.
#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use mkfs_alloc_testsupport::tool_ok as run_ok;

/// `sgdisk -v` must exit 0 and report no problems.
pub fn assert_sgdisk_clean(target: &str) {
    let out = run_ok("sgdisk", &["-v", target]);
    assert!(
        out.contains("No problems found"),
        "sgdisk -v {target} found problems:\n{out}"
    );
}

/// `sfdisk --json` parsed: the `partitiontable` object.
pub fn sfdisk_json(target: &str) -> serde_json::Value {
    let out = run_ok("sfdisk", &["--json", target]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["partitiontable"].clone()
}
