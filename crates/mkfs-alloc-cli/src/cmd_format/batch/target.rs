//! One target of a batch as the library's [`BatchTarget`]: the steps
//! around the format the single run takes too (`steps.rs`: capacity probe,
//! `--size` on a device, discard, `--full`, the re-read; and open and
//! lock), on the target's own thread.

use super::super::steps::{self, limit_device, Probed};
use crate::target::{Action, Opened, Target};
use anyhow::anyhow;
use mkfs_alloc::batch::{BatchTarget, Stage, TargetError, Verdict};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::FormatError;
use std::path::Path;

/// What a target needs of the arguments.
#[derive(Debug, Clone, Copy)]
pub(super) struct Steps {
    pub probe: bool,
    pub discard: bool,
    pub no_discard: bool,
    pub full: bool,
    /// Devices are written uncached (`O_DIRECT`): more than one target.
    pub uncached: bool,
}

/// A target of the batch (`None`: refused when inspected; never opened).
pub(super) struct CliTarget<'a> {
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
            created: false,
            opened: false,
        }
    }

    /// The target; a refused one is never asked for.
    fn target(&self) -> Result<&'a Target, TargetError> {
        self.target
            .ok_or_else(|| TargetError::new(Verdict::Refused, false, "refused when inspected"))
    }
}

/// A failure of the CLI's own steps as a target error.
fn failed(verdict: Verdict, wrote: bool, f: crate::Failure) -> TargetError {
    TargetError::new(verdict, wrote, crate::text::error_text(f.error()))
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
            match steps::probe(target, true).map_err(|f| failed(Verdict::Failed, true, f))? {
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
        let before = if probed {
            Verdict::Failed
        } else {
            Verdict::Refused
        };
        let mut opened = match self.held.take() {
            Some(o) => o,
            None => super::super::preflight::open_checked(target, self.steps.uncached)
                .map_err(|f| failed(before, probed, f))?,
        };
        self.created = opened.created();
        self.opened = true;
        if let Opened::Device(d) = &mut opened {
            let mut wrote = false;
            let size = target.size_bytes();
            limit_device(d, size, target.path(), &mut self.notes, &mut wrote).map_err(|f| {
                let v = if wrote || probed {
                    Verdict::Failed
                } else {
                    Verdict::Refused
                };
                failed(v, wrote || probed, f)
            })?;
        }
        Ok(opened)
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
            self.notes
                .extend(steps::discard(d, size, s.discard, s.no_discard));
        }
        if self.steps.full {
            progress(Stage::Zeroing, 0, 0);
            let note =
                steps::zero(io, &mut |d, t| progress(Stage::Zeroing, d, t)).map_err(|e| {
                    TargetError::new(self.classify(&FormatError::Io(e)), true, "zeroing failed")
                })?;
            self.notes.push(note);
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
        if removed(e, t.device().is_some(), t.path()) {
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
        } else if let (Action::Grow(_), Some(len), false, true) =
            (t.action(), t.len_before(), e.wrote, self.opened)
        {
            // Grown, nothing written: the old length back.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(t.path())
                .and_then(|f| f.set_len(len));
        }
    }
}

/// A device that went away: the operating system says there is no device
/// (ENODEV, ENXIO, ENOMEDIUM), or its node is gone.
fn removed(e: &FormatError, device: bool, path: &Path) -> bool {
    if !device {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            #[cfg(unix)]
            {
                use rustix::io::Errno;
                let gone = [Errno::NODEV, Errno::NXIO, no_medium()];
                if gone
                    .iter()
                    .any(|e| io.raw_os_error() == Some(e.raw_os_error()))
                {
                    return true;
                }
            }
            let _ = io;
        }
        source = s.source();
    }
    !path.exists()
}

/// ENOMEDIUM where it exists (Linux), else ENODEV again.
#[cfg(unix)]
fn no_medium() -> rustix::io::Errno {
    #[cfg(target_os = "linux")]
    return rustix::io::Errno::NOMEDIUM;
    #[cfg(not(target_os = "linux"))]
    return rustix::io::Errno::NODEV;
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkfs_alloc::blockio::{IoError, IoOp};

    fn io(errno: Option<i32>) -> FormatError {
        let source = errno.map_or_else(
            || std::io::Error::other("checksum"),
            std::io::Error::from_raw_os_error,
        );
        FormatError::Io(IoError::new(IoOp::Write, 0, 512, source))
    }

    /// A device that says it is gone, or whose node is gone, was removed;
    /// an image, or another error on a device still there, failed.
    #[test]
    #[cfg(target_os = "linux")]
    fn removed_devices_are_told_apart() {
        let here = Path::new("/");
        let gone = Path::new("/dev/no-such-device-of-mkfs-alloc");
        assert!(removed(&io(Some(19)), true, here)); // ENODEV
        assert!(removed(&io(Some(6)), true, here)); // ENXIO
        assert!(removed(&io(Some(123)), true, here)); // ENOMEDIUM
        assert!(!removed(&io(Some(5)), true, here)); // EIO, still there
        assert!(removed(&io(Some(5)), true, gone));
        assert!(!removed(&io(None), true, here));
        assert!(!removed(&io(Some(19)), false, here)); // an image
    }
}
