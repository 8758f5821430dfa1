//! One progress line per target on a terminal (indicatif's MultiProgress);
//! nothing otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use mkfs_alloc::batch::{Event, Stage};

/// The lines, or nothing when not shown.
pub(super) struct Lines {
    bars: Vec<ProgressBar>,
    _multi: Option<MultiProgress>,
}

impl Lines {
    /// A line per name when `show`.
    pub(super) fn new(show: bool, names: &[String]) -> Lines {
        if !show {
            return Lines {
                bars: Vec::new(),
                _multi: None,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let width = names
            .iter()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(0)
            .min(40);
        let template = format!(
            "{{prefix:<{width}}} {{msg:<9}} [{{bar:30}}] {{bytes:>10}}/{{total_bytes:<10}} {{binary_bytes_per_sec:>12}}"
        );
        let style = ProgressStyle::with_template(&template).map(|s| s.progress_chars("=> "));
        let bars = names
            .iter()
            .map(|n| {
                let b = multi.add(ProgressBar::new(0));
                if let Ok(s) = &style {
                    b.set_style(s.clone());
                }
                b.set_prefix(n.clone());
                b.set_message("waiting");
                b
            })
            .collect();
        Lines {
            bars,
            _multi: Some(multi),
        }
    }

    /// Shows `e` on its target's line.
    pub(super) fn event(&self, e: Event) {
        let Some(b) = self.bars.get(e.index) else {
            return;
        };
        let msg = match e.stage {
            Stage::Opening => "opening",
            Stage::Probing => "probing",
            Stage::Zeroing => "zeroing",
            Stage::Writing => "writing",
            Stage::Verifying => "verifying",
            Stage::Done(v) => {
                b.abandon_with_message(v.as_str());
                return;
            }
            _ => "working",
        };
        if b.message() != msg {
            b.set_message(msg);
            b.reset();
        }
        b.set_length(e.total);
        b.set_position(e.done);
    }
}
