//! The format target: an image file or a block device, inspected read-only
//! before anything is planned, opened for writing (and locked) only after
//! the plan is valid and (for devices) confirmed.
//!
//! A dry run inspects in the same way but collects what the real run would
//! refuse (read-only, permission denied, mounted, locked) instead of failing.

use crate::{usage, Failure};
use anyhow::{anyhow, Context};

/// An image's lock held by another process: the caller's, or a refusal.
mod lock;
/// Who else uses an image file: loop devices, FUSE drivers.
mod users;
use lock::{lock_held_elsewhere, lock_is_callers};

use mkfs_alloc::blockio::{BlockIo, ImageFile};
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc::partition::{probe_signatures, Signature};
use mkfs_alloc_device::{self as device, Device, DeviceError, DeviceInfo, RefusalKind};
use std::fs::Metadata;
use std::io::{self, ErrorKind};
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
    /// Dry run only: what the real run would refuse.
    refusal: Option<String>,
    /// Facts for the summary (loop devices attached to the image).
    notes: Vec<String>,
    /// An existing image's length before this run.
    len_before: Option<u64>,
}

/// An opened (and locked) target.
pub enum Opened {
    /// An image file; `true` when this run created it.
    Image(ImageFile, bool),
    /// A block device, opened exclusively (boxed: larger on Windows).
    Device(Box<Device>),
}

impl Opened {
    /// The target as a block device.
    pub fn io(&mut self) -> &mut dyn BlockIo {
        match self {
            Opened::Image(i, _) => i,
            Opened::Device(d) => d.as_mut(),
        }
    }

    /// True when this run created the image (it is removed on failure).
    pub fn created(&self) -> bool {
        matches!(self, Opened::Image(_, true))
    }
}

impl BlockIo for Opened {
    fn block_size(&self) -> u32 {
        match self {
            Opened::Image(i, _) => i.block_size(),
            Opened::Device(d) => d.block_size(),
        }
    }
    fn num_blocks(&self) -> u64 {
        match self {
            Opened::Image(i, _) => i.num_blocks(),
            Opened::Device(d) => d.num_blocks(),
        }
    }
    fn read_blocks(
        &mut self,
        lba: u64,
        dst: &mut [u8],
    ) -> Result<(), mkfs_alloc::blockio::IoError> {
        self.io().read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), mkfs_alloc::blockio::IoError> {
        self.io().write_blocks(lba, src)
    }
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), mkfs_alloc::blockio::IoError> {
        self.io().write_zeroes(lba, count)
    }
    fn reads_as_zero(&self) -> bool {
        match self {
            Opened::Image(i, _) => i.reads_as_zero(),
            Opened::Device(d) => d.reads_as_zero(),
        }
    }
    fn flush(&mut self) -> Result<(), mkfs_alloc::blockio::IoError> {
        self.io().flush()
    }
}

/// A device error while inspecting or opening: nothing has been written
/// yet, so every one exits 2 (a refusal, missing permission, or a device
/// that cannot be read).
fn device_error(e: DeviceError) -> Failure {
    usage(e)
}

/// Refusals found while inspecting: errors in a real run, collected in a
/// dry run.
struct Refusals {
    dry_run: bool,
    first: Option<String>,
}

impl Refusals {
    fn refuse(&mut self, e: anyhow::Error) -> Result<(), Failure> {
        if !self.dry_run {
            return Err(usage(e));
        }
        self.first
            .get_or_insert_with(|| crate::text::error_text(&e));
        Ok(())
    }
}

impl Target {
    /// Checks the target without modifying it and without opening it for
    /// writing. `size` is `--size`, `sector_size` is `--sector-size` (the
    /// medium's block size for images). With `dry_run`, refusals that only
    /// the real run meets are recorded ([`Target::would_refuse`]) instead of
    /// failing.
    pub fn inspect(
        path: &Path,
        size: Option<u64>,
        sector_size: Option<u32>,
        dry_run: bool,
    ) -> Result<Self, Failure> {
        let mut refusals = Refusals {
            dry_run,
            first: None,
        };
        let mut target = if device::is_block_device(path) {
            Self::inspect_device(path, size, sector_size, &mut refusals)?
        } else {
            Self::inspect_image(path, size, sector_size.unwrap_or(512), &mut refusals)?
        };
        target.refusal = refusals.first;
        Ok(target)
    }

    fn inspect_image(
        path: &Path,
        size: Option<u64>,
        sector_size: u32,
        refusals: &mut Refusals,
    ) -> Result<Self, Failure> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if let Ok(link) = std::fs::read_link(path) {
                    return Err(usage(anyhow!(
                        "{} is a dangling symbolic link (to {}); give the image's own path",
                        path.display(),
                        link.display()
                    )));
                }
                None
            }
            Err(e) => {
                return Err(usage(
                    anyhow!(e).context(format!("cannot inspect {}", path.display())),
                ));
            }
        };
        let bs = u64::from(sector_size);
        let mut notes = Vec::new();
        let mut len_before = None;
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
                if let Err(e) = writable(parent) {
                    refusals.refuse(anyhow!(
                        "cannot create {}: {}",
                        path.display(),
                        os_text(&e)
                    ))?;
                }
                Action::Create(round_to(s, bs, path)?)
            }
            (Some(m), size) => {
                existing_image_kind(path, &m)?;
                if let Err(e) = writable(path) {
                    refusals.refuse(anyhow!(
                        "cannot open {} for writing: {}",
                        path.display(),
                        os_text(&e)
                    ))?;
                }
                users::check_loop_devices(path, refusals, &mut notes)?;
                users::check_image_mounts(path, refusals)?;
                // A dry run looks; a real run finds out when it locks (a look
                // here would make two real runs refuse each other).
                if refusals.dry_run {
                    if let Err(e) = lock_held_elsewhere(path, sector_size) {
                        refusals.refuse(e)?;
                    }
                }
                len_before = Some(m.len());
                existing_action(path, m.len(), size, bs, sector_size)?
            }
        };
        Ok(Target {
            path: path.to_path_buf(),
            action,
            block_size: sector_size,
            device: None,
            unmount: false,
            refusal: None,
            notes,
            len_before,
        })
    }

    fn inspect_device(
        path: &Path,
        size: Option<u64>,
        sector_size: Option<u32>,
        refusals: &mut Refusals,
    ) -> Result<Self, Failure> {
        let info = device::inspect(path).map_err(device_error)?;
        // --size on a device limits the medium to its first SIZE bytes (the
        // real capacity of a counterfeit stick, see `mkfs-alloc probe`).
        if let Some(s) = size {
            if s > info.size_bytes {
                return Err(usage(anyhow!(
                    "--size {} is larger than {} ({}); a device keeps its size",
                    format_size(s),
                    path.display(),
                    format_size(info.size_bytes)
                )));
            }
            round_to(s, u64::from(info.logical_block_size), path)?;
        }
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
        if refusals.dry_run {
            if let Err(e) = writable(path) {
                refusals.refuse(anyhow!(
                    "cannot open {} for writing: {}",
                    path.display(),
                    os_text(&e)
                ))?;
            }
            if let Some(why) = users::device_held_elsewhere(path) {
                refusals.refuse(why)?;
            }
        }
        let mut unmount = false;
        if let Some(r) = device::refusal(&info) {
            // Only a mounted stick on macOS or Windows may go on: its volumes
            // are unmounted after the user's confirmation.
            if r.overridable && r.kind == RefusalKind::Mounted {
                unmount = true;
            } else {
                refusals.refuse(anyhow!(
                    "refusing to format {}: {}",
                    path.display(),
                    r.reason
                ))?;
            }
        }
        Ok(Target {
            path: path.to_path_buf(),
            action: Action::Device(size.unwrap_or(info.size_bytes)),
            block_size: info.logical_block_size,
            device: Some(info),
            unmount,
            refusal: None,
            notes: Vec::new(),
            len_before: None,
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

    /// Dry run: what the real run would refuse, if anything.
    pub fn would_refuse(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    /// An existing image's length before this run (`None` for a new image
    /// or a device).
    pub fn len_before(&self) -> Option<u64> {
        self.len_before
    }

    /// The path given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Facts worth a note in the summary (an attached loop device).
    pub fn notes(&self) -> &[String] {
        &self.notes
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
            .map_err(|e| usage(anyhow!(e).context("running diskutil unmountDisk")))?;
        if !status.success() {
            return Err(usage(anyhow!(
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

    /// Signatures found on the existing target, read-only; none for a new
    /// image.
    pub fn probe(&self) -> anyhow::Result<Vec<Signature>> {
        if let Action::Create(_) = self.action {
            return Ok(Vec::new());
        }
        let mut img =
            ImageFile::open_read_only(&self.path, self.block_size).with_context(|| {
                format!("opening {} to look for old signatures", self.path.display())
            })?;
        probe_signatures(&mut img).with_context(|| format!("probing {}", self.path.display()))
    }

    /// What the medium holds, read from the medium itself (partition nodes
    /// may not exist): one line per partition and volume, with file system
    /// and label. Empty for a new image or an unreadable target.
    pub fn contents(&self) -> Vec<String> {
        if let Action::Create(_) = self.action {
            return Vec::new();
        }
        crate::contents::describe(&self.path, self.block_size)
    }

    /// Creates or opens the target for writing, and locks it. Every failure
    /// here happens before anything is written (exit 2). With `uncached`, a
    /// device is opened bypassing
    /// the page cache (`Device::open_uncached`; a device that refuses
    /// direct I/O is opened as usual). A batch writes its devices so:
    /// buffered writes to many block devices at once cost the kernel two to
    /// three times the CPU of the same writes one device after the other
    /// (see BENCHMARKS.md, "Many targets at once").
    pub fn open_with(&self, uncached: bool) -> Result<Opened, Failure> {
        let bs = self.block_size;
        let path = &self.path;
        let opened = match self.action {
            Action::Create(s) => ImageFile::create(path, s, bs)
                .map(|i| Opened::Image(i, true))
                .map_err(|e| {
                    usage(anyhow!(
                        "cannot create {}: {}",
                        path.display(),
                        open_text(path, &e)
                    ))
                })?,
            Action::Grow(_) | Action::Keep(_) => {
                let r = match self.action {
                    Action::Grow(s) => ImageFile::open_resize(path, s, bs),
                    _ => ImageFile::open(path, bs),
                };
                r.map(|i| Opened::Image(i, false)).map_err(|e| {
                    usage(anyhow!(
                        "cannot open {} for writing: {}",
                        path.display(),
                        open_text(path, &e)
                    ))
                })?
            }
            Action::Device(_) => {
                // Whole: `--size` is applied by the writer after it has
                // zeroed an old backup GPT beyond it (`limit_device`).
                let d = if uncached {
                    Device::open_uncached(path).or_else(|_| Device::open(path))
                } else {
                    Device::open(path)
                }
                .map_err(device_error)?;
                return Ok(Opened::Device(Box::new(d)));
            }
        };
        if let Opened::Image(img, created) = &opened {
            let refused = match img.try_lock_exclusive() {
                Ok(()) => None,
                Err(e) if e.kind() == ErrorKind::WouldBlock => lock_is_callers(img).err(),
                Err(e) => Some(anyhow!(e).context(format!("cannot lock {}", path.display()))),
            };
            if let Some(e) = refused {
                if *created {
                    let _ = std::fs::remove_file(path);
                }
                return Err(usage(e));
            }
        }
        Ok(opened)
    }
}

/// An existing path that can be an image: a regular file (not a directory,
/// a FIFO, a socket or a character device).
fn existing_image_kind(path: &Path, m: &Metadata) -> Result<(), Failure> {
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
    Ok(())
}

/// What happens to an existing image of `current` bytes given `--size`.
fn existing_action(
    path: &Path,
    current: u64,
    size: Option<u64>,
    bs: u64,
    sector_size: u32,
) -> Result<Action, Failure> {
    match size {
        None => {
            if current % bs != 0 {
                return Err(usage(anyhow!(
                    "{} is {current} bytes, not a multiple of the {sector_size}-byte sector size",
                    path.display()
                )));
            }
            Ok(Action::Keep(current))
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
            Ok(if s == current {
                Action::Keep(s)
            } else {
                Action::Grow(s)
            })
        }
    }
}

/// Whether `path` could be opened for writing (`access(W_OK)`: a read-only
/// file system, missing permission), without opening it.
pub(crate) fn writable(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        rustix::fs::access(path, rustix::fs::Access::WRITE_OK).map_err(io::Error::from)
    }
    #[cfg(not(unix))]
    {
        let m = std::fs::metadata(path)?;
        if m.permissions().readonly() {
            return Err(io::Error::from(ErrorKind::PermissionDenied));
        }
        Ok(())
    }
}

/// The operating system's words for an error, without "(os error N)".
pub(crate) fn os_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// An image's open error without the path the library put in front.
fn open_text(path: &Path, e: &mkfs_alloc::blockio::IoError) -> String {
    let text = os_text(&e.source);
    let prefix = format!("{}: ", path.display());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
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
