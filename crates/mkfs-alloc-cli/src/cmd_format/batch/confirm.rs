//! One confirmation for the whole batch: every target to be written, its
//! size and what it holds now, before anything is written anywhere.

use super::Entry;
use crate::args::FormatArgs;
use crate::Failure;
use mkfs_alloc::batch::BatchPlan;
use mkfs_alloc::layout::units::format_size;

/// Lists the targets on stderr and asks for "yes" when a device is among
/// them (images alone are written without a question, as one image is);
/// `--yes` skips the question.
pub(super) fn confirm_all(
    cli: &FormatArgs,
    entries: &[Entry],
    plan: &BatchPlan,
) -> Result<(), Failure> {
    let to_write: Vec<(&Entry, &mkfs_alloc::MediumPlan)> = entries
        .iter()
        .zip(plan.plans())
        .filter_map(|(e, p)| p.ok().map(|p| (e, p)))
        .collect();
    let devices = to_write
        .iter()
        .filter(|(e, _)| e.target.as_ref().is_some_and(|t| t.device().is_some()))
        .count();
    if devices == 0 {
        return Ok(());
    }
    if !(cli.quiet || cli.json) || !cli.yes {
        eprintln!(
            "mkfs-alloc: about to ERASE {} target{} ({devices} device{}):",
            to_write.len(),
            if to_write.len() == 1 { "" } else { "s" },
            if devices == 1 { "" } else { "s" }
        );
        for (e, p) in &to_write {
            describe(e, p);
        }
    }
    if cli.yes {
        return Ok(());
    }
    crate::confirm::ask_yes(
        &format!("Type \"yes\" to erase these {} targets: ", to_write.len()),
        &format!("refusing to write to {devices} device(s) without confirmation: no terminal to ask on; pass --yes to confirm; nothing was written"),
        "not confirmed; nothing was written to any target",
    )
}

/// One target: path, size, model, what it holds and what it gets.
fn describe(e: &Entry, p: &mkfs_alloc::MediumPlan) {
    let Some(t) = e.target.as_ref() else {
        return;
    };
    let what = match t.device() {
        Some(d) => {
            let name = [d.vendor.as_deref(), d.model.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            format!(
                "{}, {}{}",
                if name.is_empty() {
                    "unknown model"
                } else {
                    &name
                },
                if d.removable {
                    "removable"
                } else {
                    "NOT removable"
                },
                d.serial
                    .as_deref()
                    .map(|s| format!(", serial {s}"))
                    .unwrap_or_default()
            )
        }
        None => "image file".to_string(),
    };
    eprintln!(
        "  {}  {}  ({what}) ─► {} {}",
        e.path.display(),
        format_size(t.size_bytes()),
        p.layout().fs(),
        format_size(p.layout().cluster_size().bytes())
    );
    let contents = t.contents();
    if contents.is_empty() {
        if let Some(fs) = t.device().and_then(|d| d.fs_type.as_deref()) {
            eprintln!("      contains {fs}");
        }
    }
    for c in contents {
        eprintln!("      contains {c}");
    }
    if t.unmounts() {
        eprintln!("      mounted: its volumes will be unmounted first");
    }
}
