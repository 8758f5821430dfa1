//! Locating and running the `mkfs-alloc` binary.

use crate::cmd::{run_env, CmdOutput};
use mkfs_alloc_layout::FsKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `SOURCE_DATE_EPOCH` the tests pin (2023-11-14T22:13:20Z).
pub const SOURCE_DATE_EPOCH: &str = "1700000000";

/// The binary under test: `$MKFS_ALLOC_BIN`, else `mkfs-alloc` next to the
/// test executable's directory (`target/<profile>/mkfs-alloc`). Panics with
/// instructions when it does not exist.
#[track_caller]
pub fn mkfs_alloc_bin() -> PathBuf {
    let path = match std::env::var_os("MKFS_ALLOC_BIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let exe = std::env::current_exe().expect("the test executable has a path");
            // target/<profile>/deps/<test>-<hash> -> target/<profile>/mkfs-alloc
            let deps = exe.parent().expect("the test executable is in a directory");
            deps.join("..").join("mkfs-alloc")
        }
    };
    assert!(
        path.is_file(),
        "the mkfs-alloc binary is missing at {}: run `cargo build -p mkfs-alloc-cli` first \
         (`cargo xtask test` does), or point MKFS_ALLOC_BIN at it",
        path.display()
    );
    path
}

/// Runs `mkfs-alloc ARGS` with a pinned `SOURCE_DATE_EPOCH`.
#[track_caller]
pub fn mkfs_alloc(args: &[&str]) -> CmdOutput {
    mkfs_alloc_env(args, &[("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)])
}

/// Runs `mkfs-alloc ARGS` with the given environment additions.
#[track_caller]
pub fn mkfs_alloc_env(args: &[&str], env: &[(&str, &str)]) -> CmdOutput {
    run_env(mkfs_alloc_bin(), args, env)
}

/// The object `mkfs-alloc --json` prints.
#[derive(Debug, Clone)]
pub struct MkfsJson {
    /// The whole object.
    pub value: Value,
}

impl MkfsJson {
    /// Parses the stdout of a `--json` run; panics with the output if it is not
    /// one JSON object.
    #[track_caller]
    pub fn parse(out: &CmdOutput) -> MkfsJson {
        let value: Value = serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("--json output is not JSON ({e}):\n{out}"));
        assert!(value.is_object(), "--json output is not an object:\n{out}");
        MkfsJson { value }
    }

    /// An unsigned field; panics if it is missing.
    #[track_caller]
    pub fn u64(&self, key: &str) -> u64 {
        json_u64(&self.value, key)
    }

    /// A string field; panics if it is missing.
    #[track_caller]
    pub fn str(&self, key: &str) -> &str {
        json_str(&self.value, key)
    }

    /// `write.bytes_written`, if the run wrote.
    pub fn bytes_written(&self) -> Option<u64> {
        self.value.get("write")?.get("bytes_written")?.as_u64()
    }
}

/// The unsigned field `key` of the JSON object `v`; panics if it is missing.
#[track_caller]
pub fn json_u64(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("JSON field {key:?} missing or not an integer in {v}"))
}

/// The string field `key` of the JSON object `v`; panics if it is missing.
#[track_caller]
pub fn json_str<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("JSON field {key:?} missing or not a string in {v}"))
}

/// The names under which the CLI is the drop-in for dosfstools and
/// exfatprogs (a link by one of these names runs the compat front end).
pub const FRONT_ENDS: [&str; 5] = [
    "mkfs.fat",
    "mkfs.vfat",
    "mkfs.msdos",
    "mkdosfs",
    "mkfs.exfat",
];

/// What [`format_image`] asks for.
#[derive(Debug, Clone, Copy)]
pub struct FormatArgs<'a> {
    /// `exfat` or `fat32`.
    pub fs: &'a str,
    /// Cluster size in bytes.
    pub cluster: u64,
    /// Sector size in bytes.
    pub sector: u32,
    /// Image size in bytes (`--size`: created sparse).
    pub size: u64,
    /// Volume label.
    pub label: Option<&'a str>,
    /// Volume serial (`--serial`, hex).
    pub serial: u32,
}

impl<'a> FormatArgs<'a> {
    /// `fs` at `cluster` bytes, `sector`-byte sectors, `size` bytes, no label,
    /// serial 0x1234ABCD.
    pub fn new(fs: &'a str, cluster: u64, sector: u32, size: u64) -> Self {
        FormatArgs {
            fs,
            cluster,
            sector,
            size,
            label: None,
            serial: 0x1234_ABCD,
        }
    }

    /// The command-line arguments, without the target.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--fs".to_string(),
            self.fs.to_string(),
            "--cluster".into(),
            crate::size_arg(self.cluster),
            "--sector-size".into(),
            self.sector.to_string(),
            "--size".into(),
            crate::size_arg(self.size),
            "--serial".into(),
            format!("{:08X}", self.serial),
            "--json".into(),
            "-q".into(),
        ];
        if let Some(l) = self.label {
            a.extend(["--label".into(), l.to_string()]);
        }
        a
    }
}

/// Formats `image` (created sparse) with the CLI; asserts exit 0 and that the
/// JSON report says what was asked for. Returns the report.
#[track_caller]
pub fn format_image(image: &Path, f: &FormatArgs<'_>) -> MkfsJson {
    let mut args = f.args();
    args.push(image.to_string_lossy().into_owned());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = mkfs_alloc(&refs);
    out.assert_success();
    let json = MkfsJson::parse(&out);
    assert_eq!(json.str("fs"), f.fs, "{out}");
    assert_eq!(json.u64("cluster_size"), f.cluster, "{out}");
    assert_eq!(json.u64("sector_size"), u64::from(f.sector), "{out}");
    assert_eq!(
        json.str("serial").to_ascii_uppercase(),
        format!("{:08X}", f.serial),
        "{out}"
    );
    let len = std::fs::metadata(image).map(|m| m.len()).unwrap_or(0);
    assert_eq!(len, f.size, "image size after --size {}", f.size);
    json
}

/// [`format_image`], then checks the written boot sector against the
/// spec's geometry rules ([`crate::geometry::checked_cluster_count`], written
/// apart from the planner) and that the CLI reports the cluster count the
/// boot sector declares.
#[track_caller]
pub fn format_planned(image: &Path, fs: FsKind, f: &FormatArgs<'_>) -> MkfsJson {
    let json = format_image(image, f);
    let offset = json.u64("partition_offset");
    let count = crate::geometry::checked_cluster_count(image, offset, f.size - offset, fs);
    assert_eq!(
        json.u64("cluster_count"),
        count,
        "the report and the boot sector"
    );
    json
}
