//! `--rootdir DIR`: write a folder into the new volume as part of the format.

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::layout::units::{format_count, format_size};
use mkfs_alloc::populate::{Populated, TimePolicy, Tree};
use mkfs_alloc::report::TreeReport;
use mkfs_alloc::{FormatError, MediumPlan};
use serde_json::{json, Value};
use std::path::Path;

/// Walks `dir` (nothing is written), with a spinner on a terminal when `show`.
pub fn walk(dir: &Path, show: bool) -> Result<Tree, Failure> {
    let spinner = show.then(|| {
        let s = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} reading {msg}") {
            s.set_style(style);
        }
        s
    });
    let mut tree = Tree::new();
    let result = tree.add_dir_with_progress(dir, "/", &mut |n| {
        if let Some(s) = &spinner {
            s.set_message(format!("{}: {} entries", dir.display(), format_count(n)));
        }
    });
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    result.map_err(|e| usage(anyhow!(e).context("--rootdir")))?;
    Ok(tree)
}

/// Refuses a target inside the tree (exit 2, before anything is written;
/// [`mkfs_alloc::device::target_inside`]): the copy would otherwise read
/// the volume while writing it.
pub fn refuse_target_inside(tree: &Tree, dir: &Path, target: &Path) -> Result<(), Failure> {
    let Some(inside) = mkfs_alloc::device::target_inside(tree, target) else {
        return Ok(());
    };
    let what = inside.backing.map_or("it".to_string(), |b| {
        format!("its backing file {}", b.display())
    });
    Err(usage(anyhow!(
        "refusing to format {}: {what} is inside --rootdir {} (at {}): the copy would read \
         the volume while writing it; put the target outside the tree",
        target.display(),
        dir.display(),
        inside.at.display()
    )))
}

/// Checks the tree against the planned volume and allocates it (exit 2 on
/// refusal); the plan then holds it.
pub fn populate(tree: Tree, plan: MediumPlan) -> Result<MediumPlan, Failure> {
    let sd = plan.layout().sd().is_some();
    plan.populate(tree, TimePolicy::from_env())
        .map_err(|e| match e {
            FormatError::Populate(e) => usage(crate::hints::populate_error(e, sd)),
            e => crate::cmd_format::format_failure(e, None),
        })
}

/// Paths longer than this many characters are shortened in messages.
const PATH_SHOWN: usize = 240;

/// `path` for a message: whole when short; otherwise its start, `…` and
/// its end, the last component always whole (a path can be far longer than
/// a terminal line: a tree may nest beyond PATH_MAX).
pub fn shorten_path(path: &str) -> String {
    let chars = path.chars().count();
    if chars <= PATH_SHOWN {
        return path.to_string();
    }
    let last = path
        .rsplit(std::path::is_separator)
        .next()
        .unwrap_or(path)
        .chars()
        .count()
        + 1;
    let tail = last.max(PATH_SHOWN / 2).min(chars);
    let head = (PATH_SHOWN - PATH_SHOWN / 2).min(chars - tail);
    let start: String = path.chars().take(head).collect();
    let end: String = path.chars().skip(chars - tail).collect();
    format!("{start}…{end}")
}

/// The summary line(s).
pub fn summary(p: &Populated) -> Vec<String> {
    let r = TreeReport::of(p);
    let mut lines = vec![format!(
        "copied {} files ({}) and {} directories from --rootdir: {} clusters ({})",
        format_count(r.files),
        format_size(r.bytes),
        format_count(r.directories),
        format_count(r.clusters),
        format_size(r.bytes_on_disk),
    )];
    if p.copy_counts().is_some() {
        lines.push(format!(
            "file data: {} shared with the source files (cloned), {} copied by the kernel, {} written",
            format_size(r.copy.cloned),
            format_size(r.copy.copied_in_kernel),
            format_size(r.copy.written),
        ));
    }
    if !r.skipped_counts.is_empty() {
        let what: Vec<String> = r
            .skipped_counts
            .iter()
            .map(|(k, n)| format!("{n} {}{}", k.name(), if *n == 1 { "" } else { "s" }))
            .collect();
        let mut line = format!("skipped {}:", what.join(", "));
        for s in r.skipped {
            line.push_str(&format!("\n    {} ({})", s.path.display(), s.kind.name()));
        }
        lines.push(line);
    }
    lines
}

/// The `rootdir` JSON object.
pub fn json(p: &Populated) -> Value {
    json!(TreeReport::of(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_keep_their_ends() {
        assert_eq!(shorten_path("src/a.txt"), "src/a.txt");
        let deep = format!("{}/name\u{FFFF}.txt", "d/".repeat(3000));
        let short = shorten_path(&deep);
        assert!(short.chars().count() < 300, "{short}");
        assert!(short.starts_with("d/d/") && short.ends_with("/name\u{FFFF}.txt"));
        assert!(short.contains('…'));
        // A long last component stays whole.
        let name = "n".repeat(255);
        let short = shorten_path(&format!("{}{name}", "x/".repeat(500)));
        assert!(short.ends_with(&format!("/{name}")) && short.contains('…'));
    }
}
