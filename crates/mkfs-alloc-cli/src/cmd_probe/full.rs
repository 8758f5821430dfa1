//! `mkfs-alloc probe --full`: every block written and read back, with a
//! progress bar (bytes, speed, time left) on stderr.

use super::{open, print, probe_failed, ProbeArgs};
use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc_capacity::{probe_full, Phase, ProbeOptions};
use mkfs_alloc_device as device;

/// The bar of one pass, replaced when the phase changes.
struct Bar {
    show: bool,
    phase: Option<Phase>,
    bar: Option<ProgressBar>,
}

impl Bar {
    fn update(&mut self, phase: Phase, done: u64, total: u64) {
        if !self.show {
            return;
        }
        if self.phase != Some(phase) {
            if let Some(b) = self.bar.take() {
                b.finish();
            }
            let what = if phase == Phase::Write {
                "writing  "
            } else {
                "verifying"
            };
            let b = ProgressBar::new(total);
            let template = format!(
                "{what} [{{bar:40}}] {{bytes}}/{{total_bytes}} {{binary_bytes_per_sec}} ({{eta}} left)"
            );
            if let Ok(style) = ProgressStyle::with_template(&template) {
                b.set_style(style.progress_chars("=> "));
            }
            self.bar = Some(b);
            self.phase = Some(phase);
        }
        if let Some(b) = &self.bar {
            b.set_length(total);
            b.set_position(done);
        }
    }

    fn finish(self) {
        if let Some(b) = self.bar {
            b.finish();
        }
    }
}

/// Runs the full pass on the target and prints the report.
pub fn run(
    a: &ProbeArgs,
    opts: &ProbeOptions,
    info: Option<&device::DeviceInfo>,
) -> Result<(), Failure> {
    let path = &a.target;
    if let Some(info) = info {
        let what = format!(
            "OVERWRITE EVERY BLOCK of {} ({}; all its data is lost) and read each back: as long as writing and reading the whole device",
            info.path.display(),
            format_size(info.size_bytes)
        );
        let holds = super::shown_holds(info, a);
        crate::confirm::confirm_action(info, &holds, &what, a.yes, a.quiet || a.json)?;
    }
    super::say_holds(a, info);
    let mut opened = open(path, info.is_some())?;
    let mut bar = Bar {
        show: !(a.quiet || a.json),
        phase: None,
        bar: None,
    };
    let report = probe_full(opened.target(), opts, &mut |p, done, total| {
        bar.update(p, done, total)
    });
    bar.finish();
    let report = report.map_err(|e| probe_failed(e, path))?;
    drop(opened);
    print::report(a, &report);
    Ok(())
}
