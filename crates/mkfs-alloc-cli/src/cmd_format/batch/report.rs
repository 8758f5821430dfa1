//! The batch's reports: a table (one row per target), `--json` (one
//! document, one object per target) and `--log` (one JSON line per target,
//! appended).

use crate::report::shown_label;
use anyhow::Context;
use mkfs_alloc::batch::Outcome;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::MediumPlan;
use mkfs_alloc_device::DeviceInfo;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// What is known of one target at the end.
pub(super) struct Row<'a> {
    pub path: &'a Path,
    pub size: Option<u64>,
    pub device: Option<&'a DeviceInfo>,
    pub plan: Option<&'a MediumPlan>,
    pub verdict: String,
    pub error: Option<String>,
    pub outcome: Option<&'a Outcome>,
    pub notes: Vec<String>,
    /// What the medium holds now (dry run, refusals).
    pub contents: Vec<String>,
}

fn table_name(kind: TableKind) -> &'static str {
    match kind {
        TableKind::None => "no table",
        TableKind::Mbr => "MBR",
        TableKind::Gpt => "GPT",
    }
}

fn layout_text(p: &MediumPlan) -> String {
    let l = p.layout();
    format!(
        "{} {}, {}",
        l.fs(),
        format_size(l.cluster_size().bytes()),
        table_name(p.table().kind())
    )
}

fn serial_text(p: &MediumPlan) -> String {
    let s = p.layout().serial();
    let serial = format!("{:04X}-{:04X}", s >> 16, s & 0xFFFF);
    match shown_label(p.layout()) {
        Some(l) => format!("{serial} {l}"),
        None => serial,
    }
}

fn mb_per_sec(bytes_per_sec: f64) -> String {
    format!("{:.1}", bytes_per_sec / 1e6)
}

fn verify_text(o: Option<&Outcome>) -> String {
    match o.and_then(|o| o.verify) {
        None => "-".into(),
        Some(v) if v.mismatches > 0 => format!("{} bad", v.mismatches),
        Some(v) => format!("ok {} MB/s", mb_per_sec(v.bytes_per_sec())),
    }
}

/// The table, on stdout.
pub(super) fn print_table(rows: &[Row<'_>]) {
    let head = [
        "TARGET", "SIZE", "VERDICT", "LAYOUT", "SERIAL", "WRITTEN", "MB/s", "VERIFY", "ERROR",
    ];
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|r| {
            let written = r.outcome.map(|o| o.bytes_written).unwrap_or(0);
            [
                r.path.display().to_string(),
                r.size.map(format_size).unwrap_or_else(|| "-".into()),
                r.verdict.clone(),
                r.plan.map(layout_text).unwrap_or_else(|| "-".into()),
                r.plan.map(serial_text).unwrap_or_else(|| "-".into()),
                if written > 0 {
                    format_size(written)
                } else {
                    "-".into()
                },
                r.outcome
                    .filter(|o| o.bytes_written > 0)
                    .map(|o| mb_per_sec(o.write_bytes_per_sec()))
                    .unwrap_or_else(|| "-".into()),
                verify_text(r.outcome),
                r.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c.iter()).take(8) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |c: &[String]| {
        let mut s = String::new();
        for (i, cell) in c.iter().enumerate() {
            if i < 8 {
                s.push_str(&format!("{cell:<w$}  ", w = width[i]));
            } else {
                s.push_str(cell);
            }
        }
        s.trim_end().to_string()
    };
    outln!("{}", line(&head.map(String::from)));
    for c in &cells {
        outln!("{}", line(c));
    }
}

/// One target as JSON.
pub(super) fn target_json(r: &Row<'_>) -> Value {
    let mut v = json!({
        "target": r.path.display().to_string(),
        "size_bytes": r.size,
        "verdict": r.verdict,
        "error": r.error,
        "device": r.device.map(|d| json!({
            "path": d.path.display().to_string(),
            "serial": d.serial,
            "model": d.model,
            "vendor": d.vendor,
            "removable": d.removable,
        })),
        "contents": r.contents,
        "notes": r.notes,
    });
    if let Some(p) = r.plan {
        let l = p.layout();
        v["fs"] = json!(l.fs().id());
        v["cluster_size"] = json!(l.cluster_size());
        v["table"] = json!(p.table().kind().id());
        v["partition_start"] = json!(p.table().partition_start());
        v["volume_bytes"] = json!(l.volume_bytes());
        v["serial"] = json!(format!("{:08X}", l.serial()));
        v["label"] = json!(shown_label(l));
        v["volume_guid"] = json!(l.volume_guid().as_ref().map(crate::guid::text));
        v["mbr_disk_signature"] = json!(p
            .table()
            .mbr()
            .map(|m| format!("{:08X}", m.disk_signature())));
        v["gpt_disk_guid"] = json!(p.table().gpt().map(|g| g.disk_guid().to_string()));
        v["gpt_partition_guid"] = json!(p.table().gpt().map(|g| g.partition_guid().to_string()));
    }
    if let Some(o) = r.outcome {
        v["bytes_written"] = json!(o.bytes_written);
        v["write_seconds"] = json!(o.write_time.as_secs_f64());
        v["write_bytes_per_sec"] = json!(o.write_bytes_per_sec());
        v["started"] = json!(utc(o.started));
        v["finished"] = json!(utc(o.finished));
        v["verify"] = json!(o.verify.map(|x| json!({
            "bytes_read": x.bytes_read,
            "bytes_verified": x.bytes_verified,
            "mismatches": x.mismatches,
            "first_mismatch": x.first_mismatch,
            "unverifiable_bytes": x.unverifiable_bytes,
            "seconds": x.elapsed.as_secs_f64(),
            "bytes_per_sec": x.bytes_per_sec(),
        })));
    }
    v
}

/// Opens `--log FILE` for appending (created when missing).
pub(super) fn open_log(file: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .with_context(|| format!("--log {}", file.display()))
}

/// Appends one line per target to the log `f`: the time, the command line
/// and the target's object.
pub(super) fn append_log(f: &mut std::fs::File, rows: &[Row<'_>]) -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let now = utc(SystemTime::now());
    let mut text = String::new();
    for r in rows {
        let line = json!({
            "time": now,
            "command": args,
            "result": target_json(r),
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    // One write: the lines of one run stay together.
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_data())
        .context("writing --log")
}

/// `2026-12-01T17:04:49Z`.
pub(super) fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = mkfs_alloc::layout::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_is_civil_time() {
        let at = |s| utc(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
