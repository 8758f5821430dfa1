//! The batch's reports: a table (one row per target), `--json` (one
//! document, one object per target) and `--log` (one JSON line per target,
//! appended).

use anyhow::Context;
use mkfs_alloc::batch::Outcome;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::report::{stored_label, OutcomeReport, TargetPlanReport};
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
    let serial = crate::report::serial_text(p.layout().serial());
    match stored_label(p.layout()) {
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
    let more = [
        r.plan.map(|p| json!(TargetPlanReport::of(p))),
        r.outcome.map(|o| json!(OutcomeReport::of(o))),
    ];
    if let Some(obj) = v.as_object_mut() {
        for m in more.into_iter().flatten() {
            if let Value::Object(m) = m {
                obj.extend(m);
            }
        }
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
    let now = mkfs_alloc::units::utc_text(SystemTime::now());
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
