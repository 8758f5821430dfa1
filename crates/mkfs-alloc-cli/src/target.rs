//! The format target: an image file or a block device, inspected read-only
//! before anything is planned, opened for writing only after the plan is
//! valid and (for devices) confirmed.

use crate::{usage, Failure};
use anyhow::{anyhow, Context};

use mkfs_alloc_blockio::{BlockIo, ImageFile};
use mkfs_alloc_device::{self as device, Device, DeviceError, DeviceInfo, RefusalKind};
use mkfs_alloc_layout::units::format_size;
use mkfs_alloc_partition::{probe_signatures, Signature};
use std::path::{Path, PathBuf};

/// What will be done to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create a new sparse image of this size.
    Create(u64),
    /// Grow an existing image to this size (sparse).
    Grow(u64),
    /// Keep the existing image's size.
    Keep(u64),
    /// Format a block device of this size.
    Device(u64),
}

/// A validated target.
#[derive(Debug)]
pub struct Target {
    path: PathBuf,
    action: Action,
    /// Logical block size of the medium (the device's, or the image's).
    block_size: u32,
    device: Option<DeviceInfo>,
    /// The device's volumes must be unmounted first (macOS, Windows).
    unmount: bool,
}

/// An opened target.
pub enum Opened {
    /// An image file.
    Image(ImageFile),
    /// A block device, opened exclusively (boxed: larger on Windows).
    Device(Box<Device>),
}

impl Opened {
    /// The target as a block device.
    pub fn io(&mut self) -> &mut dyn BlockIo {
        match self {
            Opened::Image(i) => i,
            Opened::Device(d) => d.as_mut(),
        }
    }
}

fn device_error(e: DeviceError) -> Failure {
    match e {
        DeviceError::Io { .. } => Failure::Io(e.into()),
        other => usage(other),
    }
}

impl Target {
    /// Checks the target without modifying it. `size` is `--size`,
    /// `sector_size` is `--sector-size` (the medium's block size for images).
    pub fn inspect(
        path: &Path,
        size: Option<u64>,
        sector_size: Option<u32>,
    ) -> Result<Self, Failure> {
        if device::is_block_device(path) {
            return Self::inspect_device(path, size, sector_size);
        }
        let sector_size = sector_size.unwrap_or(512);
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
                        "{} is a directory; expected an image file or a block device",
                        path.display()
                    )));
                }
                if !m.is_file() {
                    return Err(usage(anyhow!(
                        "{} is neither a regular file nor a block device",
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
            block_size: sector_size,
            device: None,
            unmount: false,
        })
    }

    fn inspect_device(
        path: &Path,
        size: Option<u64>,
        sector_size: Option<u32>,
    ) -> Result<Self, Failure> {
        if size.is_some() {
            return Err(usage(anyhow!(
                "--size applies to image files; {} is a block device and keeps its size",
                path.display()
            )));
        }
        let info = device::inspect(path).map_err(device_error)?;
        if let Some(s) = sector_size {
            if s < info.logical_block_size {
                return Err(usage(anyhow!(
                    "--sector-size {s} is smaller than the logical sector size of {} ({}); valid: {}..4096",
                    path.display(),
                    info.logical_block_size,
                    info.logical_block_size
                )));
            }
        }
        let mut unmount = false;
        if let Some(r) = device::refusal(&info) {
            // Only a mounted stick on macOS or Windows may go on: its volumes
            // are unmounted after the user's confirmation.
            if r.overridable && r.kind == RefusalKind::Mounted {
                unmount = true;
            } else {
                return Err(usage(anyhow!(
                    "refusing to format {}: {}",
                    path.display(),
                    r.reason
                )));
            }
        }
        Ok(Target {
            path: path.to_path_buf(),
            action: Action::Device(info.size_bytes),
            block_size: info.logical_block_size,
            device: Some(info),
            unmount,
        })
    }

    /// The size the medium will have.
    pub fn size_bytes(&self) -> u64 {
        match self.action {
            Action::Create(s) | Action::Grow(s) | Action::Keep(s) | Action::Device(s) => s,
        }
    }

    /// The medium's logical block size.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// What will be done.
    pub fn action(&self) -> Action {
        self.action
    }

    /// True when the device's mounted volumes will be unmounted before writing.
    pub fn unmounts(&self) -> bool {
        self.unmount
    }

    /// Unmounts the device's volumes where the platform needs a command for
    /// it (macOS: `diskutil unmountDisk`). On Windows `Device::open` locks
    /// and dismounts them itself.
    pub fn unmount_volumes(&self) -> Result<(), Failure> {
        if !self.unmount || !cfg!(target_os = "macos") {
            return Ok(());
        }
        let status = std::process::Command::new("diskutil")
            .arg("unmountDisk")
            .arg(&self.path)
            .status()
            .map_err(|e| Failure::Io(anyhow!(e).context("running diskutil unmountDisk")))?;
        if !status.success() {
            return Err(Failure::Io(anyhow!(
                "diskutil unmountDisk {} failed ({status}); nothing was written",
                self.path.display()
            )));
        }
        Ok(())
    }

    /// The device, if the target is one.
    pub fn device(&self) -> Option<&DeviceInfo> {
        self.device.as_ref()
    }

    /// The alignment a device asks for: the larger of 1 MiB and its optimal
    /// I/O size and discard granularity, where those are powers of two.
    pub fn preferred_align(&self) -> Option<u64> {
        let d = self.device.as_ref()?;
        let mut a = 1u64 << 20;
        for v in [u64::from(d.optimal_io_size), d.discard_granularity] {
            if v.is_power_of_two() && v <= 64 << 20 {
                a = a.max(v);
            }
        }
        Some(a)
    }

    /// Signatures found on the existing target (read-only); none for a new image.
    pub fn probe(&self) -> anyhow::Result<Vec<Signature>> {
        if let Action::Create(_) = self.action {
            return Ok(Vec::new());
        }
        if self.device.is_some() {
            // The device is probed through its exclusive handle in open().
            return Ok(Vec::new());
        }
        let mut img =
            ImageFile::open_read_only(&self.path, self.block_size).with_context(|| {
                format!("opening {} to look for old signatures", self.path.display())
            })?;
        probe_signatures(&mut img).with_context(|| format!("probing {}", self.path.display()))
    }

    /// Creates or opens the target for writing.
    pub fn open(&self) -> Result<Opened, Failure> {
        let bs = self.block_size;
        let r = match self.action {
            Action::Create(s) => ImageFile::create(&self.path, s, bs).map(Opened::Image),
            Action::Grow(s) => ImageFile::open_resize(&self.path, s, bs).map(Opened::Image),
            Action::Keep(_) => ImageFile::open(&self.path, bs).map(Opened::Image),
            Action::Device(_) => {
                return Device::open(&self.path)
                    .map(|d| Opened::Device(Box::new(d)))
                    .map_err(device_error)
            }
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
