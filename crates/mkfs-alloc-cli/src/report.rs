//! Output: the plan, the summary, JSON, progress.
//!
//! JSON field names are part of the interface (documented in the README):
//! add fields, never rename them.

use crate::target::{Action, Target};
use mkfs_alloc::layout::units::{format_count, format_size};
use mkfs_alloc::layout::{Layout, WriteReport};
use mkfs_alloc::partition::{Guid, Signature, TableSpec};
use mkfs_alloc::report::{stored_label, PlanReport};
use mkfs_alloc::units::percent;
use mkfs_alloc::MediumPlan;
use mkfs_alloc_device::DeviceInfo;
use serde_json::{json, Value};
use std::path::Path;

/// A byte progress bar on stderr, or nothing when not wanted.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// A bar labelled `what`, shown only if `show`.
    pub fn new(show: bool, what: &str) -> Self {
        if !show {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(0);
        let template =
            format!("{{spinner}} {what} [{{bar:40}}] {{bytes}}/{{total_bytes}} ({{eta}})");
        let style =
            indicatif::ProgressStyle::with_template(&template).map(|s| s.progress_chars("=> "));
        if let Ok(style) = style {
            bar.set_style(style);
        }
        Progress(Some(bar))
    }

    /// Moves the bar to `done` of `total` bytes (the writers' callback).
    pub fn update(&self, done: u64, total: u64) {
        if let Some(b) = &self.0 {
            b.set_length(total);
            b.set_position(done);
        }
    }

    /// Removes the bar.
    pub fn finish(self) {
        if let Some(b) = self.0 {
            b.finish_and_clear();
        }
    }
}

/// A volume serial as `1234-ABCD`.
pub fn serial_text(s: u32) -> String {
    format!("{:04X}-{:04X}", s >> 16, s & 0xFFFF)
}

fn alignment_note(offset: u64) -> String {
    format!("aligned to {}", format_size(Layout::alignment_of(offset)))
}

/// Why this table, in this command's words.
fn table_reason(plan: &MediumPlan) -> &'static str {
    crate::hints::table_reason(plan.table_reason(), plan.layout().sd().is_some())
}

fn print_table(plan: &MediumPlan) {
    let t = plan.table();
    let (name, ty) = match t.spec() {
        TableSpec::None => {
            outln!("  partition      none ({})", table_reason(plan));
            return;
        }
        TableSpec::Mbr(m) => ("MBR", format!("type 0x{:02X}", m.partition_type())),
        TableSpec::Gpt(g) if g.partition_type_guid() == Guid::EFI_SYSTEM => {
            ("GPT", "EFI System Partition".to_string())
        }
        TableSpec::Gpt(_) => ("GPT", "Microsoft Basic Data".to_string()),
    };
    outln!(
        "  partition      {name} ({}): 1 partition at {} ({}), {}, {ty}",
        table_reason(plan),
        format_size(t.partition_start()),
        alignment_note(t.partition_start()),
        format_size(t.partition_len())
    );
}

/// Old signatures: before writing they "will be" wiped, after it they were.
fn print_found(found: &[Signature], written: bool) {
    if found.is_empty() {
        return;
    }
    if written {
        outln!("  found before   (wiped or overwritten)");
    } else {
        outln!("  found before   (will be wiped or overwritten)");
    }
    for s in found {
        outln!(
            "                 {} at byte {}: {}",
            s.kind,
            s.offset,
            s.detail
        );
    }
}

/// The lines every plan and summary show (`rootdir`: the tree of
/// `--rootdir` chose the cluster size if data did).
fn print_common(plan: &MediumPlan, rootdir: bool) {
    let layout = &plan.layout();
    print_table(plan);
    let fs = layout.fs();
    outln!(
        "  file system    {fs} ({})",
        crate::hints::fs_rule(layout.fs_rule())
    );
    let windows = match layout.windows_default_cluster() {
        Some(w) => format!("Windows' default would be {}", format_size(w)),
        None => "Windows' format would refuse this volume".to_string(),
    };
    outln!(
        "  cluster size   {} ({}; {windows})",
        format_size(layout.cluster_size().bytes()),
        crate::hints::cluster_rule(layout.cluster_rule(), fs, layout.volume_bytes(), rootdir)
    );
    outln!("  sector size    {} B", layout.sector_size().get());
    outln!(
        "  clusters       {}",
        format_count(u64::from(layout.cluster_count()))
    );
    outln!(
        "  capacity       {} usable of {} (metadata and reserved: {}, {:.2}%)",
        format_size(layout.usable_bytes()),
        format_size(layout.volume_bytes()),
        format_size(layout.overhead_bytes()),
        percent(layout.overhead_bytes(), layout.volume_bytes())
    );
    outln!(
        "  FAT            at {} on the medium, {} x {} ({})",
        format_size(layout.fat_offset_on_medium()),
        layout.fat_count(),
        format_size(layout.fat_bytes()),
        alignment_note(layout.fat_offset_on_medium())
    );
    outln!(
        "  data region    at {} on the medium ({})",
        format_size(layout.data_offset_on_medium()),
        alignment_note(layout.data_offset_on_medium())
    );
    if let Some(sd) = layout.sd() {
        outln!("  layout         {}", sd.summary());
    }
    outln!("  serial         {}", serial_text(layout.serial()));
    outln!(
        "  label          {}",
        stored_label(layout).as_deref().unwrap_or("(none)")
    );
}

fn print_warnings(layout: &Layout) {
    for w in layout.warnings() {
        eprintln!("mkfs-alloc: warning: {w}");
    }
}

/// The plan of a dry run: summary and region table (`rootdir`: a tree is
/// written).
pub fn print_plan(
    path: &Path,
    plan: &MediumPlan,
    found: &[Signature],
    target: &Target,
    rootdir: bool,
) {
    let layout = &plan.layout();
    let what = match target.action() {
        Action::Create(s) => format!("would create {} ({})", path.display(), format_size(s)),
        Action::Grow(s) => format!("would grow {} to {}", path.display(), format_size(s)),
        Action::Keep(s) => format!("would format {} ({})", path.display(), format_size(s)),
        Action::Device(s) => format!(
            "would format device {} ({})",
            path.display(),
            format_size(s)
        ),
    };
    outln!("mkfs-alloc: dry run, nothing written; {what}");
    print_common(plan, rootdir);
    print_found(found, false);
    outln!();
    outln!(
        "  {:<42} {:>16} {:>16}  written",
        "region",
        "offset",
        "length"
    );
    for r in layout.regions() {
        outln!(
            "  {:<42} {:>16} {:>16}  {}",
            r.kind.name(r.index, layout.fs()),
            r.offset,
            r.len,
            if r.written {
                "yes"
            } else {
                "no (quick format)"
            }
        );
    }
    print_warnings(layout);
}

/// The summary after formatting (`rootdir`: a tree was written).
pub fn print_summary(
    path: &Path,
    plan: &MediumPlan,
    found: &[Signature],
    write: &WriteReport,
    target: &Target,
    notes: &[String],
    rootdir: bool,
) {
    let layout = &plan.layout();
    let what = match target.action() {
        Action::Create(_) => "created and formatted",
        Action::Grow(_) => "grew and formatted",
        Action::Keep(_) | Action::Device(_) => "formatted",
    };
    outln!("mkfs-alloc: {what} {}", path.display());
    print_common(plan, rootdir);
    print_found(found, true);
    outln!(
        "  written        {} (the format's own writes: zeroed {}, skipped {} already zero)",
        format_size(write.bytes_written),
        format_size(write.bytes_zeroed),
        format_size(write.bytes_skipped)
    );
    for n in notes {
        outln!("  note           {n}");
    }
    print_warnings(layout);
}

/// The plan (and the write report) as one JSON object on stdout.
/// `extras`: more fields (`rootdir`; a dry run's `would_refuse`,
/// `contents` and `notes`); a `rootdir` among them means the tree chose the
/// cluster size if data did.
pub fn print_json_with(
    path: &Path,
    plan: &MediumPlan,
    found: &[Signature],
    device: Option<&DeviceInfo>,
    write: Option<(&WriteReport, &Vec<String>)>,
    dry_run: bool,
    extras: &[(&str, Value)],
) {
    let layout = &plan.layout();
    let mut v = json!(PlanReport::of(plan));
    let list = layout.regions();
    let names = list.iter().map(|r| r.kind.name(r.index, layout.fs()));
    let regions = v["regions"].as_array_mut().into_iter().flatten();
    for (r, name) in regions.zip(names) {
        r["name"] = json!(name);
    }
    let rootdir = extras.iter().any(|(k, _)| *k == "rootdir");
    let (rule, fs, bytes) = (layout.cluster_rule(), layout.fs(), layout.volume_bytes());
    v["cluster_rule_text"] = json!(crate::hints::cluster_rule(rule, fs, bytes, rootdir));
    v["target"] = json!(path.display().to_string());
    v["dry_run"] = json!(dry_run);
    v["table_reason"] = json!(table_reason(plan));
    v["signatures_found"] = json!(found);
    if let Some(obj) = v.as_object_mut() {
        if let Some((w, notes)) = write {
            obj.insert("write".into(), json!(w));
            obj.insert("notes".into(), json!(notes));
        }
        if let Some(d) = device {
            obj.insert("device".into(), json!(d));
        }
        for (k, e) in extras {
            obj.insert((*k).into(), e.clone());
        }
    }
    outln!("{v:#}");
}

/// An error as JSON on stdout (the message also goes to stderr).
pub fn print_json_error(e: &anyhow::Error, code: u8) {
    outln!(
        "{:#}",
        json!({ "error": crate::text::error_text(e), "exit_code": code })
    );
}

/// A finished in-place job's plan `v` (JSON) with `"done": true` and the
/// run's `seconds`, printed.
pub fn print_done(mut v: serde_json::Value, secs: f64) {
    v["done"] = serde_json::json!(true);
    v["seconds"] = serde_json::json!(secs);
    outln!("{v:#}");
}
