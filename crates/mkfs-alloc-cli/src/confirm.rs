//! Confirmation before writing to a device: show what is about to be
//! destroyed, ask on a terminal, refuse without one unless `--yes`.

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc::MediumPlan;
use mkfs_alloc_device::DeviceInfo;
use std::io::{BufRead, IsTerminal, Write};

/// Describes the device on stderr and asks for "yes"; `yes` skips the question.
pub fn confirm(
    info: &DeviceInfo,
    plan: &MediumPlan,
    contents: &[String],
    unmount: bool,
    yes: bool,
    quiet: bool,
) -> Result<(), Failure> {
    if !quiet || !yes {
        describe(info, plan, contents);
        if unmount {
            let mounts: Vec<String> = info
                .all_mountpoints()
                .map(|m| m.display().to_string())
                .collect();
            eprintln!(
                "  mounted    {} (will be unmounted first)",
                mounts.join(", ")
            );
        }
    }
    ask(info, "erase", "format it", yes)
}

/// Like [`confirm`] for another destructive action: describes the device
/// and what its volumes hold (`holds`, one line each), says `what` will be
/// done, asks for "yes" unless `yes`.
pub fn confirm_action(
    info: &DeviceInfo,
    holds: &[String],
    what: &str,
    yes: bool,
    quiet: bool,
) -> Result<(), Failure> {
    if !quiet || !yes {
        eprintln!("mkfs-alloc: about to write to {}:", info.path.display());
        describe_device(info, &[]);
        for h in holds {
            eprintln!("  holds      {h}");
        }
        eprintln!("  will       {what}");
    }
    ask(info, "write to", "go on", yes)
}

/// Asks for "yes" on the terminal: "Type "yes" to VERB DEVICE and THEN".
fn ask(info: &DeviceInfo, verb: &str, then: &str, yes: bool) -> Result<(), Failure> {
    let path = info.path.display();
    let prompt = format!("Type \"yes\" to {verb} {path} and {then}: ");
    ask_before_writing(yes, &prompt, &info.path)
}

/// Prints `prompt` and reads the answer from the terminal: "yes" goes on;
/// anything else fails with `declined`, no terminal with `no_terminal`
/// (both exit 2).
pub fn ask_yes(prompt: &str, no_terminal: &str, declined: &str) -> Result<(), Failure> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(usage(anyhow!("{no_terminal}")));
    }
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|e| usage(anyhow!(e).context("reading the confirmation")))?;
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err(usage(anyhow!("{declined}")))
    }
}

/// Asks `mkfs-alloc: QUESTION? type yes: ` before a change in place of
/// `path` (recluster, resize, convert), unless `yes`.
pub fn ask_in_place(yes: bool, question: &str, path: &std::path::Path) -> Result<(), Failure> {
    ask_before_writing(yes, &format!("mkfs-alloc: {question}? type yes: "), path)
}

/// [`ask_yes`] with `prompt` before writing to `path`, unless `yes`.
fn ask_before_writing(yes: bool, prompt: &str, path: &std::path::Path) -> Result<(), Failure> {
    if yes {
        return Ok(());
    }
    let p = path.display();
    ask_yes(
        prompt,
        &format!("refusing to write to {p} without confirmation: no terminal to ask on; pass --yes to confirm"),
        &format!("not confirmed; nothing was written to {p}"),
    )
}

fn describe(info: &DeviceInfo, plan: &MediumPlan, contents: &[String]) {
    eprintln!("mkfs-alloc: about to ERASE {}:", info.path.display());
    describe_device(info, contents);
    let table = match plan.table().kind() {
        mkfs_alloc::partition::TableKind::None => "no partition table",
        mkfs_alloc::partition::TableKind::Mbr => "an MBR partition table",
        mkfs_alloc::partition::TableKind::Gpt => "a GPT partition table",
    };
    eprintln!(
        "  will write {table}, {} with {} clusters",
        plan.layout().fs(),
        format_size(plan.layout().cluster_size().bytes())
    );
}

/// What the device is and holds, on stderr: `contents` (read from the
/// medium itself: partitions with their file systems and labels), else what
/// the system knows of its partitions.
fn describe_device(info: &DeviceInfo, contents: &[String]) {
    let name = [info.vendor.as_deref(), info.model.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!(
        "  device     {} ({}, {}{})",
        if name.is_empty() {
            "unknown model"
        } else {
            name.as_str()
        },
        format_size(info.size_bytes),
        if info.removable {
            "removable"
        } else {
            "NOT removable"
        },
        info.serial
            .as_deref()
            .map(|s| format!(", serial {s}"))
            .unwrap_or_default()
    );
    for c in contents {
        eprintln!("  contains   {c}");
    }
    if let (Some(fs), true) = (&info.fs_type, contents.is_empty()) {
        eprintln!(
            "  contains   {fs}{}",
            info.label
                .as_deref()
                .map(|l| format!(" labelled {l:?}"))
                .unwrap_or_default()
        );
    }
    for p in info.partitions.iter().filter(|_| contents.is_empty()) {
        eprintln!(
            "  partition  {} at {}, {}: {}{}",
            p.path.display(),
            format_size(p.start_bytes),
            format_size(p.size_bytes),
            p.fs_type.as_deref().unwrap_or("unknown contents"),
            p.label
                .as_deref()
                .map(|l| format!(" labelled {l:?}"))
                .unwrap_or_default()
        );
    }
}
