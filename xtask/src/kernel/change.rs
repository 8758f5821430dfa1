//! The in-place changes a case's volume goes through before the kernel
//! reads it (`Change`): re-cluster, grow, shrink, conversion to exFAT, each
//! by the CLI, each checked through `info --json` afterwards (the change
//! happened, to the figures asked for), so that a change skipped or cut
//! short fails the case before any boot.

use super::*;

/// A CLI run's exit code, stdout and stderr.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `mkfs-alloc ARGS IMAGE`.
fn cli(bin: &Path, args: &[&str], image: &Path) -> Result<Ran, String> {
    let out = Command::new(bin)
        .args(args)
        .arg(image)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    Ok(Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// `mkfs-alloc ARGS IMAGE`, which must succeed.
fn cli_ok(name: &str, bin: &Path, args: &[&str], image: &Path) -> Result<Ran, String> {
    let ran = cli(bin, args, image)?;
    if ran.code == Some(0) {
        Ok(ran)
    } else {
        Err(format!(
            "{name}: mkfs-alloc {} failed ({:?}): {}",
            args.join(" "),
            ran.code,
            ran.stderr
        ))
    }
}

/// The number after `key` in `text` (`at most 12345 bytes`).
fn number_after(text: &str, key: &str) -> Option<u64> {
    text.split(key)
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.trim_end_matches([',', '.', ';', ')']).parse().ok())
}

/// Applies `change` to the volume of case `name` on `image`, then checks
/// through `info --json` that the volume is what the change asked for.
pub(crate) fn apply(name: &str, change: Change, bin: &Path, image: &Path) -> Result<(), String> {
    let before = read_volume(name, bin, image)?;
    let old_size = json_u64(&before, "size")?;
    let start = json_u64(&before, "start")?;
    let fs_before = before.get("fs").and_then(Value::as_str).unwrap_or("");
    match change {
        Change::Recluster(to) => recluster(name, bin, image, to)?,
        Change::Grow { medium, .. } => {
            let len = std::fs::metadata(image)
                .map_err(|e| format!("{}: {e}", image.display()))?
                .len();
            if medium <= len {
                return Err(format!(
                    "{name}: the grow's medium of {medium} bytes is not past the image's {len}"
                ));
            }
            File::options()
                .write(true)
                .open(image)
                .and_then(|f| f.set_len(medium))
                .map_err(|e| format!("{}: {e}", image.display()))?;
            grow(name, change, bin, image)?;
        }
        Change::Shrink(to) => {
            let size = to.to_string();
            let ran = cli_ok(
                name,
                bin,
                &["resize", "--size", &size, "--yes", "--json"],
                image,
            )?;
            let v: Value = serde_json::from_str(&ran.stdout)
                .map_err(|e| format!("{name}: resize --json: {e}"))?;
            let moved = v
                .get("grow")
                .and_then(|g| g.get("moved_clusters"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            // The case's premise: the tree lay past the new end.
            if moved == 0 {
                return Err(format!(
                    "{name}: the shrink to {to} bytes moved no cluster: {}",
                    ran.stdout.trim()
                ));
            }
        }
        Change::ToExfat(cluster) => {
            if !fs_before.starts_with("fat") {
                return Err(format!("{name}: {fs_before} to convert, not FAT"));
            }
            let size = cluster.map(|c| c.to_string());
            let mut args = vec!["convert", "--fs", "exfat", "--yes", "-q"];
            if let Some(size) = &size {
                args.extend(["--cluster", size]);
            }
            cli_ok(name, bin, &args, image)?;
        }
    }
    let after = read_volume(name, bin, image)?;
    let size = json_u64(&after, "size")?;
    let fs = after.get("fs").and_then(Value::as_str).unwrap_or("");
    let cluster = json_u64(&after, "cluster_size")?;
    let wrong = match change {
        Change::Recluster(to) => (cluster != to).then(|| format!("{cluster} B clusters, not {to}")),
        Change::Grow { medium, slack } => {
            if size <= old_size {
                Some(format!(
                    "{size} bytes of volume, {old_size} before the grow"
                ))
            } else if !slack && start + size != medium {
                Some(format!(
                    "the volume ends at {}, not at the medium's end {medium}",
                    start + size
                ))
            } else {
                None
            }
        }
        Change::Shrink(to) => {
            let len = std::fs::metadata(image)
                .map_err(|e| format!("{}: {e}", image.display()))?
                .len();
            (size != to || len != start + to).then(|| {
                format!("{size} bytes of volume and an image of {len}, not {to} after the shrink")
            })
        }
        Change::ToExfat(want) => (fs != "exfat" || want.is_some_and(|w| w != cluster))
            .then(|| format!("{fs} at {cluster} B clusters after the conversion to exFAT")),
    };
    match wrong {
        Some(w) => Err(format!("{name}: info says {w} ({change:?})")),
        None => Ok(()),
    }
}

/// `resize --size max`; a FAT32 grow past its FATs' slack is refused
/// (exit 2) naming the largest size, and goes to that size when the case
/// says `slack`.
fn grow(name: &str, change: Change, bin: &Path, image: &Path) -> Result<(), String> {
    let max = ["resize", "--size", "max", "--yes", "-q"];
    let ran = cli(bin, &max, image)?;
    match (ran.code, change) {
        (Some(0), Change::Grow { slack: false, .. }) => Ok(()),
        (Some(2), Change::Grow { slack: true, .. }) => {
            let most = number_after(&ran.stderr, "at most ").ok_or_else(|| {
                format!(
                    "{name}: resize --size max refused naming no size: {}",
                    ran.stderr
                )
            })?;
            let size = most.to_string();
            cli_ok(
                name,
                bin,
                &["resize", "--size", &size, "--yes", "-q"],
                image,
            )
            .map(|_| ())
        }
        (code, _) => Err(format!(
            "{name}: mkfs-alloc {} exited {code:?} ({change:?}): {}",
            max.join(" "),
            ran.stderr
        )),
    }
}
