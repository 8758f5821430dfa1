//! The CLI's front end to the library's steps around each target's format
//! ([`DeviceTarget`]: open and lock, capacity probe, the limit to `--size`
//! on a device, discard, `--full`, the re-read): the probe with its
//! progress lines, the failures and notes in the CLI's words (the flags
//! they name), and `--copy`. Every target of a batch is one, and so is the
//! target of a single run (a batch of one), which keeps its failures whole
//! for its own messages and exit codes.

use crate::args::FormatArgs;
use crate::Failure;
use anyhow::anyhow;
use mkfs_alloc::batch::{TargetContent, TargetError, Verdict};
use mkfs_alloc::blockio::CopyMode;
use mkfs_alloc::device::{
    DeviceTarget, Discard, Front, Opened, ProbeSummary, StepError, StepFailure, StepNote, Steps,
    Target,
};
use mkfs_alloc_capacity::ProbeReport;

/// A target of the run.
pub(in crate::cmd_format) type CliTarget<'a> = DeviceTarget<'a, CliFront>;

/// The steps `cli` asks of every target (`uncached`: devices are written
/// with `O_DIRECT`, for more than one target).
pub(in crate::cmd_format) fn steps(cli: &FormatArgs, uncached: bool) -> Steps {
    let discard = if cli.no_discard {
        Discard::Never
    } else if cli.discard {
        Discard::Always
    } else {
        Discard::Auto
    };
    Steps {
        probe: cli.probe,
        discard,
        full: cli.full,
        uncached,
    }
}

/// What the single run's target keeps that a batch's does not.
#[derive(Default)]
pub(in crate::cmd_format) struct Single {
    /// `--copy`: how the tree's file data reaches an image.
    pub copy: Option<CopyMode>,
    /// The failure of one of the target's own steps, and whether it came
    /// once the target was open for the format ([`crate::watch::settle`]
    /// applies).
    pub failure: Option<(Failure, bool)>,
}

/// The CLI's words and hooks.
pub(in crate::cmd_format) struct CliFront {
    /// The capacity probe shows no progress of its own.
    pub probe_quiet: bool,
    /// The single run's own (`None` in a batch).
    pub single: Option<Single>,
}

impl CliFront {
    /// A failure of the target's own steps: its text for the batch; the
    /// single run keeps it whole (`settles`: it came once the target was
    /// open for the format).
    fn keep(&mut self, verdict: Verdict, wrote: bool, f: Failure, settles: bool) -> TargetError {
        let text = crate::text::error_text(f.error());
        if let Some(s) = self.single.as_mut() {
            s.failure = Some((f, settles));
        }
        TargetError::new(verdict, wrote, text)
    }
}

impl Front for CliFront {
    fn probe(&mut self, target: &Target) -> Result<ProbeReport, TargetError> {
        crate::cmd_probe::probe_target(target.path(), self.probe_quiet)
            .map_err(|f| self.keep(Verdict::Failed, true, f, false))
    }

    fn fail(&mut self, target: &Target, failure: StepFailure) -> TargetError {
        let path = target.path().display();
        let StepFailure {
            verdict,
            wrote,
            opened,
            error,
            ..
        } = failure;
        let f = match error {
            StepError::Fake(r) if self.single.is_some() => Failure::Io(anyhow!(
                "refusing to format {path}: the probe found it {}; pass --size {} (or less) to use only its real capacity",
                ProbeSummary(&r),
                r.real_bytes,
            )),
            StepError::Fake(r) => {
                return TargetError::new(
                    verdict,
                    wrote,
                    format!(
                        "the probe found it {}; not formatted (--size {} or less would use only its real capacity)",
                        ProbeSummary(&r),
                        r.real_bytes
                    ),
                )
            }
            StepError::Open(e) => e.into(),
            StepError::BackupGpt(e) => Failure::Io(
                anyhow::Error::new(e).context(format!("zeroing the old backup GPT of {path}")),
            ),
            StepError::Limit(e) => {
                Failure::Io(anyhow::Error::new(e).context(format!("limiting {path}")))
            }
            StepError::Zeroing(e) if self.single.is_some() => {
                let f = Failure::Io(anyhow::Error::new(e).context(format!("zeroing {path}")));
                return self.keep(Verdict::Failed, wrote, f, opened);
            }
            e => return TargetError::new(verdict, wrote, e.to_string()),
        };
        self.keep(verdict, wrote, f, opened)
    }

    fn note(&self, note: &StepNote) -> String {
        match note {
            StepNote::BackupGptZeroed { offset } => format!(
                "zeroed the old backup GPT header at byte {offset}, beyond --size (partitioning tools would offer to restore the old table from it)"
            ),
            StepNote::Discarded { whole: false, size } => format!(
                "discarded (TRIM) the first {} of the device (--size) before writing",
                mkfs_alloc::layout::units::format_size(*size)
            ),
            n => n.to_string(),
        }
    }

    fn before_content(
        &mut self,
        _target: &Target,
        io: &mut Opened,
        content: &mut TargetContent<'_>,
    ) -> Result<(), TargetError> {
        // --copy (auto by default): file data into an image file through its
        // copier; before any write, so that `reflink` can still refuse.
        let mode = self.single.as_ref().and_then(|s| s.copy);
        if let (Opened::Image(img, _), Some(mode)) = (&*io, mode) {
            if let Err(f) = super::super::plan::copy_into(content, img, mode) {
                return Err(self.keep(Verdict::Refused, false, f, true));
            }
        }
        Ok(())
    }
}
