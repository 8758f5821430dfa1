//! The format target: an image file, inspected (read-only) before anything is
//! planned, opened for writing only after the plan is valid.

use crate::{usage, Failure};
use anyhow::{anyhow, Context};
use mkfs_alloc_blockio::ImageFile;
use mkfs_alloc_layout::units::format_size;
use mkfs_alloc_partition::{probe_signatures, Signature};
use std::path::{Path, PathBuf};

/// What will be done to the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create a new sparse image of this size.
    Create(u64),
    /// Grow an existing image to this size (sparse).
    Grow(u64),
    /// Keep the existing image's size.
    Keep(u64),
}

/// A validated target.
#[derive(Debug)]
pub struct Target {
    path: PathBuf,
    action: Action,
    sector_size: u32,
}

impl Target {
    /// Checks the target without modifying it. `size` is `--size`.
    pub fn inspect(path: &Path, size: Option<u64>, sector_size: u32) -> Result<Self, Failure> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(usage(
                    anyhow!(e).context(format!("cannot inspect {}", path.display())),
                ));
            }
        };
        let bs = u64::from(sector_size);
        let action = match (meta, size) {
            (None, None) => {
                return Err(usage(anyhow!(
                    "{} does not exist; give --size SIZE to create an image",
                    path.display()
                )))
            }
            (None, Some(s)) => {
                let parent = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if !parent.is_dir() {
                    return Err(usage(anyhow!(
                        "cannot create {}: directory {} does not exist",
                        path.display(),
                        parent.display()
                    )));
                }
                Action::Create(round_to(s, bs, path)?)
            }
            (Some(m), size) => {
                if m.is_dir() {
                    return Err(usage(anyhow!(
                        "{} is a directory; expected an image file",
                        path.display()
                    )));
                }
                if !m.is_file() {
                    return Err(usage(anyhow!(
                        "{} is not a regular file; formatting devices is not supported yet, only image files",
                        path.display()
                    )));
                }
                // Opening for writing changes nothing, and tells us now rather
                // than after planning that the file is read-only.
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| {
                        usage(
                            anyhow!(e)
                                .context(format!("cannot open {} for writing", path.display())),
                        )
                    })?;
                let current = m.len();
                match size {
                    None => {
                        if current % bs != 0 {
                            return Err(usage(anyhow!(
                                "{} is {current} bytes, not a multiple of the {sector_size}-byte sector size",
                                path.display()
                            )));
                        }
                        Action::Keep(current)
                    }
                    Some(s) => {
                        let s = round_to(s, bs, path)?;
                        if s < current {
                            return Err(usage(anyhow!(
                                "--size {} is smaller than the existing image ({}); images are grown, never shrunk",
                                format_size(s),
                                format_size(current)
                            )));
                        }
                        if s == current {
                            Action::Keep(s)
                        } else {
                            Action::Grow(s)
                        }
                    }
                }
            }
        };
        Ok(Target {
            path: path.to_path_buf(),
            action,
            sector_size,
        })
    }

    /// The size the image will have.
    pub fn size_bytes(&self) -> u64 {
        match self.action {
            Action::Create(s) | Action::Grow(s) | Action::Keep(s) => s,
        }
    }

    /// What will be done.
    pub fn action(&self) -> Action {
        self.action
    }

    /// Signatures found on the existing image (read-only); none for a new one.
    pub fn probe(&self) -> anyhow::Result<Vec<Signature>> {
        if let Action::Create(_) = self.action {
            return Ok(Vec::new());
        }
        let mut img =
            ImageFile::open_read_only(&self.path, self.sector_size).with_context(|| {
                format!("opening {} to look for old signatures", self.path.display())
            })?;
        probe_signatures(&mut img).with_context(|| format!("probing {}", self.path.display()))
    }

    /// Creates or opens the image for writing.
    pub fn open(&self) -> Result<ImageFile, Failure> {
        let r = match self.action {
            Action::Create(s) => ImageFile::create(&self.path, s, self.sector_size),
            Action::Grow(s) => ImageFile::open_resize(&self.path, s, self.sector_size),
            Action::Keep(_) => ImageFile::open(&self.path, self.sector_size),
        };
        r.with_context(|| format!("opening {}", self.path.display()))
            .map_err(Failure::Io)
    }
}

fn round_to(size: u64, bs: u64, path: &Path) -> Result<u64, Failure> {
    if size % bs != 0 {
        return Err(usage(anyhow!(
            "--size {size} for {} is not a multiple of the {bs}-byte sector size",
            path.display()
        )));
    }
    Ok(size)
}
