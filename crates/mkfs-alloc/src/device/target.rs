//! [`DeviceTarget`]: the steps in their order around the batch's format.

use mkfs_alloc_device::target::{Opened, Target};

use super::{steps, Front, Plain, StepError, StepFailure, StepNote, Steps};
use crate::batch::{BatchTarget, Stage, TargetError, Verdict};
use crate::FormatError;

/// A file or device target of a batch (`None`: refused when inspected,
/// never opened), with the [`Steps`] around its format; its notes are the
/// [`Front`]'s words for each [`StepNote`], after the caller's own.
pub struct DeviceTarget<'a, F = Plain> {
    target: Option<&'a Target>,
    steps: Steps,
    table: bool,
    front: F,
    notes: Vec<String>,
    after_probe: Vec<String>,
    held: Option<Opened>,
    refusal: Option<String>,
    single: bool,
    created: bool,
    opened: bool,
    wrote: bool,
    formatting: bool,
}

impl<'a, F: Front> DeviceTarget<'a, F> {
    /// `target` with `steps`; `table`: the plan writes a partition table
    /// (on a device, the kernel is asked to re-read it after the format).
    pub fn new(target: Option<&'a Target>, steps: Steps, table: bool, front: F) -> Self {
        DeviceTarget {
            target,
            steps,
            table,
            front,
            notes: Vec::new(),
            after_probe: Vec::new(),
            held: None,
            refusal: None,
            single: false,
            created: false,
            opened: false,
            wrote: false,
            formatting: false,
        }
    }

    /// The handle opened (and locked) before the run wrote anything, used
    /// instead of opening again.
    #[must_use]
    pub fn held(mut self, opened: Option<Opened>) -> Self {
        self.held = opened;
        self
    }

    /// Why the target could not be opened before the run: it is refused
    /// with this reason and never opened.
    #[must_use]
    pub fn refused(mut self, reason: Option<String>) -> Self {
        self.refusal = reason;
        self
    }

    /// Notes that come first, and notes that follow the probe's.
    #[must_use]
    pub fn notes(mut self, first: Vec<String>, after_probe: Vec<String>) -> Self {
        self.notes = first;
        self.after_probe = after_probe;
        self
    }

    /// The one target of a run: when the probe stops it, the handle held
    /// since before the probe is closed and what opening did undone (a
    /// created image removed, a grown one shrunk back).
    #[must_use]
    pub fn single(mut self) -> Self {
        self.single = true;
        self
    }

    /// The front end, with what its hooks kept.
    pub fn front_mut(&mut self) -> &mut F {
        &mut self.front
    }

    /// One of the steps began to write (the limit's zeroing of an old
    /// backup GPT, the discard, the zeroing).
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    /// The format began: the steps before it are done.
    pub fn formatting(&self) -> bool {
        self.formatting
    }

    fn fail(
        &mut self,
        verdict: Verdict,
        wrote: bool,
        opened: bool,
        error: StepError,
    ) -> TargetError {
        match self.target {
            Some(t) => self.front.fail(
                t,
                StepFailure {
                    verdict,
                    wrote,
                    opened,
                    error,
                },
            ),
            None => TargetError::new(verdict, wrote, error),
        }
    }

    /// [`Verdict::Removed`] when `e` says the device went away.
    fn verdict_of(&self, e: &(dyn std::error::Error + 'static)) -> Verdict {
        match self.target {
            Some(t) if t.device().is_some() && mkfs_alloc_device::device_removed(e, t.path()) => {
                Verdict::Removed
            }
            _ => Verdict::Failed,
        }
    }

    fn note(&mut self, note: &StepNote) {
        let text = self.front.note(note);
        self.notes.push(text);
    }

    /// The target; a refused one is never asked for.
    fn target(&self) -> Result<&'a Target, TargetError> {
        self.target
            .ok_or_else(|| TargetError::new(Verdict::Refused, false, "refused when inspected"))
    }

    /// The capacity probe, run before the target is opened for the format.
    fn probe(&mut self, target: &'a Target) -> Result<(), TargetError> {
        // The probe opens the target itself (exclusively): a device's
        // handle held since before the first write is closed, and the
        // target opened again after the probe. An image stays open: the
        // probe does not lock it.
        if matches!(self.held, Some(Opened::Device(_))) {
            self.held = None;
        }
        let probe = self.front.probe(target);
        let holds =
            matches!(&probe, Ok(r) if !(r.verdict.is_fake() && target.size_bytes() > r.real_bytes));
        if !holds && self.single {
            if let Some(o) = self.held.take() {
                target.undo_open(o);
            }
        }
        let report = probe?;
        if !holds {
            return Err(self.fail(
                Verdict::Fake,
                true,
                false,
                StepError::Fake(Box::new(report)),
            ));
        }
        self.note(&StepNote::Probed(report));
        Ok(())
    }
}

impl<F: Front> BatchTarget for DeviceTarget<'_, F> {
    type Io = Opened;

    fn open(&mut self, progress: &mut dyn FnMut(Stage, u64, u64)) -> Result<Opened, TargetError> {
        let target = self.target()?;
        if let Some(r) = self.refusal.take() {
            return Err(TargetError::new(Verdict::Refused, false, r));
        }
        let probed = self.steps.probe;
        if probed {
            progress(Stage::Probing, 0, 0);
            self.probe(target)?;
        }
        self.notes.append(&mut self.after_probe);
        let before = if probed {
            Verdict::Failed
        } else {
            Verdict::Refused
        };
        let mut opened = match self.held.take() {
            Some(o) => o,
            None => steps::open_checked(target, self.steps.uncached)
                .map_err(|e| self.fail(before, probed, false, StepError::Open(e)))?,
        };
        self.created = opened.created();
        self.opened = true;
        if let Opened::Device(d) = &mut opened {
            let mut wrote = false;
            let mut notes = Vec::new();
            let limited = steps::limit(d, target.size_bytes(), &mut notes, &mut wrote);
            self.wrote |= wrote;
            for n in &notes {
                self.note(n);
            }
            limited.map_err(|e| {
                let v = if wrote || probed {
                    Verdict::Failed
                } else {
                    Verdict::Refused
                };
                self.fail(v, wrote || probed, true, e)
            })?;
        }
        Ok(opened)
    }

    #[cfg(feature = "populate")]
    fn before_content(
        &mut self,
        io: &mut Opened,
        content: &mut crate::batch::TargetContent<'_>,
    ) -> Result<(), TargetError> {
        let target = self.target()?;
        self.front.before_content(target, io, content)
    }

    fn before_format(
        &mut self,
        io: &mut Opened,
        progress: &mut dyn FnMut(Stage, u64, u64),
    ) -> Result<(), TargetError> {
        let target = self.target()?;
        if let Opened::Device(d) = io {
            if let Some(note) = steps::discard(d, target.size_bytes(), self.steps.discard) {
                self.wrote = true;
                self.note(&note);
            }
        }
        if self.steps.full {
            self.wrote = true;
            progress(Stage::Zeroing, 0, 0);
            match steps::zero(io, &mut |d, t| progress(Stage::Zeroing, d, t)) {
                Ok(note) => self.note(&note),
                Err(e) => {
                    let v = self.verdict_of(&e);
                    return Err(self.fail(v, true, true, StepError::Zeroing(e)));
                }
            }
        }
        self.formatting = true;
        Ok(())
    }

    fn before_verify(&mut self, io: &mut Opened) -> Result<(), TargetError> {
        steps::forget_cached(io)
    }

    fn finish(&mut self, io: &mut Opened) -> Vec<String> {
        if let (Opened::Device(d), true) = (io, self.table) {
            let note = steps::reread(d);
            self.note(&note);
        }
        std::mem::take(&mut self.notes)
    }

    fn classify(&self, e: &FormatError) -> Verdict {
        self.verdict_of(e)
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
