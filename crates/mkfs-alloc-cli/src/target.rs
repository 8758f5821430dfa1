//! The format target on the CLI side: `mkfs_alloc_device::target` inspects
//! and opens it; here its refusals are worded with the flags that caused
//! them (exit 2: nothing has been written), and the old contents and
//! signatures are read for the summary and the confirmation.

use crate::{usage, Failure};
use anyhow::{anyhow, Context};
use mkfs_alloc::blockio::ImageFile;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc::partition::{probe_signatures, Signature};
use mkfs_alloc_device::target::{self as lib, TargetError};
use std::path::Path;

pub use lib::{Action, Opened};

impl From<TargetError> for Failure {
    fn from(e: TargetError) -> Failure {
        usage(worded(e))
    }
}

/// The error as the CLI says it: the variants a flag caused name the flag.
fn worded(e: TargetError) -> anyhow::Error {
    match e {
        TargetError::Missing { path } => anyhow!(
            "{} does not exist; give --size SIZE to create an image",
            path.display()
        ),
        TargetError::SizeNotMultiple {
            path,
            size,
            sector_size,
        } => anyhow!(
            "--size {size} for {} is not a multiple of the {sector_size}-byte sector size",
            path.display()
        ),
        TargetError::Shrink { size, current } => anyhow!(
            "--size {} is smaller than the existing image ({}); images are grown, never shrunk",
            format_size(size),
            format_size(current)
        ),
        TargetError::SizeBeyondDevice {
            path,
            size,
            device_size,
        } => anyhow!(
            "--size {} is larger than {} ({}); a device keeps its size",
            format_size(size),
            path.display(),
            format_size(device_size)
        ),
        TargetError::SectorBelowDevice {
            path,
            sector_size,
            logical,
        } => anyhow!(
            "--sector-size {sector_size} is smaller than the logical sector size of {} ({logical}); valid: {logical}..4096",
            path.display()
        ),
        e => anyhow::Error::new(e),
    }
}

/// An inspected target, with its dry-run refusal and notes in the CLI's words.
#[derive(Debug)]
pub struct Target {
    inner: lib::Target,
    refusal: Option<String>,
    notes: Vec<String>,
}

impl Target {
    /// Checks the target without modifying it and without opening it for
    /// writing ([`lib::Target::inspect`]). `size` is `--size`,
    /// `sector_size` is `--sector-size`. With `dry_run`, refusals that only
    /// the real run meets are recorded ([`Target::would_refuse`]) instead of
    /// failing.
    pub fn inspect(
        path: &Path,
        size: Option<u64>,
        sector_size: Option<u32>,
        dry_run: bool,
    ) -> Result<Self, Failure> {
        let inner = lib::Target::inspect(path, size, sector_size, dry_run)?;
        let refusal = inner.would_refuse().map(chain_text);
        let notes = inner.notes().iter().map(ToString::to_string).collect();
        Ok(Target {
            inner,
            refusal,
            notes,
        })
    }

    /// Dry run: what the real run would refuse, if anything, in words.
    pub fn would_refuse(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    /// Facts worth a note in the summary (an attached loop device), in words.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Signatures found on the existing target, read-only; none for a new
    /// image.
    pub fn probe(&self) -> anyhow::Result<Vec<Signature>> {
        if let Action::Create(_) = self.action() {
            return Ok(Vec::new());
        }
        let path = self.path();
        let mut img = ImageFile::open_read_only(path, self.block_size())
            .with_context(|| format!("opening {} to look for old signatures", path.display()))?;
        probe_signatures(&mut img).with_context(|| format!("probing {}", path.display()))
    }

    /// What the medium holds, read from the medium itself (partition nodes
    /// may not exist): one line per partition and volume, with file system
    /// and label. Empty for a new image or an unreadable target.
    pub fn contents(&self) -> Vec<String> {
        if let Action::Create(_) = self.action() {
            return Vec::new();
        }
        crate::contents::describe(self.path(), self.block_size())
    }

    /// What this medium brings to the options, the same for the single run
    /// and a batch (`sector_size`: `--sector-size`, else the block size).
    pub fn overrides(&self, sector_size: Option<u32>) -> mkfs_alloc::batch::Overrides {
        mkfs_alloc::batch::Overrides::of_medium(
            self.device().is_some_and(|d| d.is_whole_disk),
            self.preferred_align(),
            sector_size.unwrap_or(self.block_size()),
        )
    }
}

/// The rest is the library's target: its errors become [`Failure`]s (exit
/// 2) through `?`.
impl std::ops::Deref for Target {
    type Target = lib::Target;

    fn deref(&self) -> &lib::Target {
        &self.inner
    }
}

/// `e` and its causes as [`crate::text::error_text`] words them.
fn chain_text(e: &TargetError) -> String {
    let mut out = String::new();
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&s);
        }
        cause = c.source();
    }
    crate::text::shorten_long_paths(&out)
}
