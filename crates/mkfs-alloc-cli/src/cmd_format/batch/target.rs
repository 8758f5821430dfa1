//! A target as the library's [`BatchTarget`]: the steps around the format
//! (`steps.rs`: capacity probe, `--size` on a device, discard, `--full`,
//! the re-read; and open and lock), on the target's own thread. Every
//! target of a batch is one, and so is the target of a single run (a batch
//! of one, [`CliTarget::single`]), which also takes `--copy` and keeps its
//! failures whole for its own messages and exit codes.

use super::super::steps::{self, limit_device, Probed};
use crate::target::{Opened, Target};
use crate::Failure;
use anyhow::anyhow;
use mkfs_alloc::batch::{BatchTarget, Stage, TargetContent, TargetError, Verdict};
use mkfs_alloc::blockio::CopyMode;
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::FormatError;

/// What a target needs of the arguments.
#[derive(Debug, Clone, Copy)]
pub(in crate::cmd_format) struct Steps {
    pub probe: bool,
    pub discard: bool,
    pub no_discard: bool,
    pub full: bool,
    /// Devices are written uncached (`O_DIRECT`): more than one target.
    pub uncached: bool,
    /// The capacity probe shows no progress of its own.
    pub probe_quiet: bool,
}

impl Steps {
    /// The steps `cli` asks of every target.
    pub fn of(cli: &crate::args::FormatArgs, uncached: bool, probe_quiet: bool) -> Self {
        Steps {
            probe: cli.probe,
            discard: cli.discard,
            no_discard: cli.no_discard,
            full: cli.full,
            uncached,
            probe_quiet,
        }
    }
}

/// What the single run's target keeps that a batch's does not.
#[derive(Default)]
pub(in crate::cmd_format) struct Single {
    /// `--copy`: how the tree's file data reaches an image.
    pub copy: Option<CopyMode>,
    /// Notes that follow the capacity probe's.
    pub later_notes: Vec<String>,
    /// The failure of one of the target's own steps, and whether it came
    /// once the target was open for the format ([`crate::watch::settle`]
    /// applies).
    pub failure: Option<(Failure, bool)>,
    /// One of the target's own steps began to write (`--size` on a device,
    /// the discard, `--full`).
    pub wrote: bool,
    /// The format began (its signatures were found, the target prepared).
    pub formatting: bool,
}

/// A target of the batch (`None`: refused when inspected; never opened).
pub(in crate::cmd_format) struct CliTarget<'a> {
    pub target: Option<&'a Target>,
    pub steps: Steps,
    /// The plan writes a partition table (the kernel is asked to re-read it).
    pub table: bool,
    pub notes: Vec<String>,
    /// The target opened (and locked) before the batch wrote anything.
    pub held: Option<Opened>,
    /// Why the target could not be opened then (`--skip-refused` goes on
    /// without it).
    pub refusal: Option<String>,
    /// The single run's own (`None` in a batch).
    pub single: Option<Single>,
    created: bool,
    opened: bool,
}

impl<'a> CliTarget<'a> {
    pub fn new(target: Option<&'a Target>, steps: Steps, table: TableKind) -> Self {
        CliTarget {
            target,
            steps,
            table: table != TableKind::None,
            notes: Vec::new(),
            held: None,
            refusal: None,
            single: None,
            created: false,
            opened: false,
        }
    }

    /// A failure of the target's own steps: its text for the batch; the
    /// single run keeps it whole (`settles`: it came once the target was
    /// open for the format).
    fn fail(&mut self, verdict: Verdict, wrote: bool, f: Failure, settles: bool) -> TargetError {
        let text = crate::text::error_text(f.error());
        if let Some(s) = self.single.as_mut() {
            s.failure = Some((f, settles));
        }
        TargetError::new(verdict, wrote, text)
    }

    /// The single run's handle held since before the probe, closed and
    /// what opening did undone (the probe stopped the run).
    fn undo_held(&mut self) {
        if self.single.is_none() {
            return;
        }
        if let (Some(t), Some(o)) = (self.target, self.held.take()) {
            super::super::preflight::undo_open(t, o);
        }
    }

    /// The target; a refused one is never asked for.
    fn target(&self) -> Result<&'a Target, TargetError> {
        self.target
            .ok_or_else(|| TargetError::new(Verdict::Refused, false, "refused when inspected"))
    }
}

impl BatchTarget for CliTarget<'_> {
    type Io = Opened;

    fn open(&mut self, progress: &mut dyn FnMut(Stage, u64, u64)) -> Result<Opened, TargetError> {
        let target = self.target()?;
        if let Some(r) = self.refusal.take() {
            return Err(TargetError::new(Verdict::Refused, false, r));
        }
        let probed = self.steps.probe;
        if probed {
            // The probe opens the target itself (exclusively): the handle
            // held since before the first write is closed, and the target
            // opened again after the probe. An image stays open: the probe
            // does not lock it.
            if matches!(self.held, Some(Opened::Device(_))) {
                self.held = None;
            }
            progress(Stage::Probing, 0, 0);
            let probe = steps::probe(target, self.steps.probe_quiet);
            if !matches!(probe, Ok(Probed::Holds(_))) {
                self.undo_held();
            }
            match probe.map_err(|f| self.fail(Verdict::Failed, true, f, false))? {
                Probed::Fake(line, real) if self.single.is_some() => {
                    let f = Failure::Io(anyhow!(
                        "refusing to format {}: the probe found it {line}; pass --size {real} (or less) to use only its real capacity",
                        target.path().display(),
                    ));
                    return Err(self.fail(Verdict::Fake, true, f, false));
                }
                Probed::Fake(line, real) => {
                    return Err(TargetError::new(
                        Verdict::Fake,
                        true,
                        format!(
                            "the probe found it {line}; not formatted (--size {real} or less would use only its real capacity)"
                        ),
                    ));
                }
                Probed::Holds(line) => self.notes.push(format!("probed first: {line}")),
            }
        }
        if let Some(s) = self.single.as_mut() {
            self.notes.append(&mut s.later_notes);
        }
        let before = if probed {
            Verdict::Failed
        } else {
            Verdict::Refused
        };
        let mut opened = match self.held.take() {
            Some(o) => o,
            None => super::super::preflight::open_checked(target, self.steps.uncached)
                .map_err(|f| self.fail(before, probed, f, false))?,
        };
        self.created = opened.created();
        self.opened = true;
        if let Opened::Device(d) = &mut opened {
            let mut wrote = false;
            let size = target.size_bytes();
            let limited = limit_device(d, size, target.path(), &mut self.notes, &mut wrote);
            if let Some(s) = self.single.as_mut() {
                s.wrote |= wrote;
            }
            limited.map_err(|f| {
                let v = if wrote || probed {
                    Verdict::Failed
                } else {
                    Verdict::Refused
                };
                self.fail(v, wrote || probed, f, true)
            })?;
        }
        Ok(opened)
    }

    fn before_content(
        &mut self,
        io: &mut Opened,
        content: &mut TargetContent<'_>,
    ) -> Result<(), TargetError> {
        // --copy (auto by default): file data into an image file through its
        // copier; before any write, so that `reflink` can still refuse.
        let mode = self.single.as_ref().and_then(|s| s.copy);
        if let (Opened::Image(img, _), Some(mode)) = (&*io, mode) {
            if let Err(f) = super::super::plan::copy_into(content, img, mode) {
                return Err(self.fail(Verdict::Refused, false, f, true));
            }
        }
        Ok(())
    }

    fn before_format(
        &mut self,
        io: &mut Opened,
        progress: &mut dyn FnMut(Stage, u64, u64),
    ) -> Result<(), TargetError> {
        let target = self.target()?;
        if let Opened::Device(d) = io {
            let s = self.steps;
            let size = target.size_bytes();
            let note = steps::discard(d, size, s.discard, s.no_discard);
            if let (Some(s), Some(_)) = (self.single.as_mut(), &note) {
                s.wrote = true;
            }
            self.notes.extend(note);
        }
        if self.steps.full {
            if let Some(s) = self.single.as_mut() {
                s.wrote = true;
            }
            progress(Stage::Zeroing, 0, 0);
            let zeroed = steps::zero(io, &mut |d, t| progress(Stage::Zeroing, d, t));
            let note = match zeroed {
                Ok(note) => note,
                Err(e) if self.single.is_some() => {
                    let f = Failure::Io(
                        anyhow::Error::new(e)
                            .context(format!("zeroing {}", target.path().display())),
                    );
                    return Err(self.fail(Verdict::Failed, true, f, true));
                }
                Err(e) => {
                    let v = self.classify(&FormatError::Io(e));
                    return Err(TargetError::new(v, true, "zeroing failed"));
                }
            };
            self.notes.push(note);
        }
        if let Some(s) = self.single.as_mut() {
            s.formatting = true;
        }
        Ok(())
    }

    fn before_verify(&mut self, io: &mut Opened) -> Result<(), TargetError> {
        let r = match io {
            Opened::Device(d) => d.forget_cached().map_err(|e| anyhow!(e)),
            Opened::Image(i, _) => i.forget_cached().map_err(|e| anyhow!(e)),
        };
        r.map_err(|e| {
            TargetError::new(
                Verdict::Failed,
                true,
                format!("dropping the cached blocks before reading back: {e:#}"),
            )
        })
    }

    fn finish(&mut self, io: &mut Opened) -> Vec<String> {
        if let (Opened::Device(d), true) = (io, self.table) {
            self.notes.push(steps::reread(d));
        }
        std::mem::take(&mut self.notes)
    }

    fn classify(&self, e: &FormatError) -> Verdict {
        let Some(t) = self.target else {
            return Verdict::Failed;
        };
        if t.device().is_some() && mkfs_alloc_device::device_removed(e, t.path()) {
            Verdict::Removed
        } else {
            Verdict::Failed
        }
    }

    fn failed(&mut self, e: &TargetError) {
        let Some(t) = self.target else {
            return;
        };
        if self.created {
            // Ours, and useless: never leave a half-made image behind.
            let _ = std::fs::remove_file(t.path());
        } else if !e.wrote && self.opened {
            // Grown, nothing written: the old length back.
            let _ = t.shrink_back();
        }
    }
}
