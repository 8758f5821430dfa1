//! The format target: an image file or a block device, inspected read-only
//! before anything is planned, opened for writing (and locked) only after
//! the plan is valid and (for devices) confirmed.
//!
//! ```text
//!  Target::inspect(path, size, sector size, dry run) ─► Target { action, block size, device? }
//!    hostile paths refused: a dangling link, a directory, a FIFO, a socket, a
//!    character device; an image backing a mounted or held loop device, an image a
//!    FUSE driver mounted, a device `refusal` names, a lock held by another process
//!  Target::open_with(uncached) ─► Opened (an image created, grown or kept, and locked;
//!    or the device opened exclusively): a BlockIo
//! ```
//!
//! Beside it: [`medium_ids`], what names a medium (a target named twice is
//! one medium), and [`check_output`], the checks of a file written beside
//! the targets.
//!
//! A dry run inspects in the same way but collects what the real run would
//! refuse (read-only, permission denied, mounted, locked) instead of failing
//! ([`Target::would_refuse`]).

mod error;
mod identity;
/// An image's lock held by another process: the caller's, or a refusal.
mod lock;
mod opened;
mod output;
#[cfg(test)]
mod tests;
/// Who else uses an image file: loop devices, FUSE drivers.
mod users;

pub use error::{TargetError, TargetNote};
pub use identity::{canonical, medium_ids, repeated, same_medium, MediumId};
use lock::{lock_held_elsewhere, lock_is_callers};
pub use opened::Opened;
pub use output::{check_output, OutputError, OutputWrite};

use crate::{Device, DeviceInfo, RefusalKind};
use mkfs_alloc_blockio::ImageFile;
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
    refusal: Option<TargetError>,
    /// Facts for the summary (loop devices attached to the image).
    notes: Vec<TargetNote>,
    /// An existing image's length before this run.
    len_before: Option<u64>,
}

/// Refusals found while inspecting: errors in a real run, collected in a
/// dry run.
struct Refusals {
    dry_run: bool,
    first: Option<TargetError>,
}

impl Refusals {
    fn refuse(&mut self, e: TargetError) -> Result<(), TargetError> {
        if !self.dry_run {
            return Err(e);
        }
        self.first.get_or_insert(e);
        Ok(())
    }
}

impl Target {
    /// Checks the target without modifying it and without opening it for
    /// writing. `size` limits a device to its first `size` bytes, or is the
    /// size to create or grow an image to; `sector_size` is the file system's
    /// (the medium's block size for images, 512 if not given). With
    /// `dry_run`, refusals that only the real run meets are recorded
    /// ([`Target::would_refuse`]) instead of failing.
    ///
    /// # Errors
    ///
    /// [`TargetError`]: a path that cannot be a target, a size that does not
    /// fit it, or (unless `dry_run`) a target in use or not writable.
    pub fn inspect(
        path: &Path,
        size: Option<u64>,
        sector_size: Option<u32>,
        dry_run: bool,
    ) -> Result<Self, TargetError> {
        let mut refusals = Refusals {
            dry_run,
            first: None,
        };
        let mut target = if crate::is_block_device(path) {
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
    ) -> Result<Self, TargetError> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if let Ok(link) = std::fs::read_link(path) {
                    return Err(TargetError::DanglingLink {
                        path: path.to_path_buf(),
                        link,
                    });
                }
                None
            }
            Err(source) => {
                return Err(TargetError::Inspect {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let bs = u64::from(sector_size);
        let mut notes = Vec::new();
        let mut len_before = None;
        let action = match (meta, size) {
            (None, None) => {
                return Err(TargetError::Missing {
                    path: path.to_path_buf(),
                })
            }
            (None, Some(s)) => {
                let parent = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if !parent.is_dir() {
                    return Err(TargetError::NoDirectory {
                        path: path.to_path_buf(),
                        dir: parent.to_path_buf(),
                    });
                }
                if let Err(e) = writable(parent) {
                    refusals.refuse(TargetError::CannotCreate {
                        path: path.to_path_buf(),
                        reason: os_text(&e),
                    })?;
                }
                Action::Create(round_to(s, bs, path)?)
            }
            (Some(m), size) => {
                existing_image_kind(path, &m)?;
                if let Err(e) = writable(path) {
                    refusals.refuse(not_writable(path, &e))?;
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
    ) -> Result<Self, TargetError> {
        let info = crate::inspect(path)?;
        // A size on a device limits the medium to its first bytes (the real
        // capacity of a counterfeit stick, as the capacity probe finds it).
        if let Some(s) = size {
            if s > info.size_bytes {
                return Err(TargetError::SizeBeyondDevice {
                    path: path.to_path_buf(),
                    size: s,
                    device_size: info.size_bytes,
                });
            }
            round_to(s, u64::from(info.logical_block_size), path)?;
        }
        if let Some(s) = sector_size {
            if s < info.logical_block_size {
                return Err(TargetError::SectorBelowDevice {
                    path: path.to_path_buf(),
                    sector_size: s,
                    logical: info.logical_block_size,
                });
            }
        }
        if refusals.dry_run {
            if let Err(e) = writable(path) {
                refusals.refuse(not_writable(path, &e))?;
            }
            if let Some(why) = users::device_held_elsewhere(path) {
                refusals.refuse(why)?;
            }
        }
        let mut unmount = false;
        if let Some(r) = crate::refusal(&info) {
            // Only a mounted stick on macOS or Windows may go on: its volumes
            // are unmounted after the user's confirmation.
            if r.overridable && r.kind == RefusalKind::Mounted {
                unmount = true;
            } else {
                refusals.refuse(TargetError::Refused {
                    path: path.to_path_buf(),
                    reason: r.reason,
                })?;
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

    /// Dry run: what the real run would refuse (the first refusal), if
    /// anything.
    pub fn would_refuse(&self) -> Option<&TargetError> {
        self.refusal.as_ref()
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
    pub fn notes(&self) -> &[TargetNote] {
        &self.notes
    }

    /// Unmounts the device's volumes where the platform needs a command for
    /// it (macOS: `diskutil unmountDisk`). On Windows `Device::open` locks
    /// and dismounts them itself.
    ///
    /// # Errors
    ///
    /// [`TargetError::UnmountSpawn`], [`TargetError::UnmountFailed`].
    pub fn unmount_volumes(&self) -> Result<(), TargetError> {
        if !self.unmount || !cfg!(target_os = "macos") {
            return Ok(());
        }
        let status = std::process::Command::new("diskutil")
            .arg("unmountDisk")
            .arg(&self.path)
            .status()
            .map_err(|source| TargetError::UnmountSpawn { source })?;
        if !status.success() {
            return Err(TargetError::UnmountFailed {
                path: self.path.clone(),
                status,
            });
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

    /// Creates or opens the target for writing, and locks it. Every failure
    /// here happens before anything is written. With `uncached`, a device
    /// is opened bypassing the page cache (`Device::open_uncached`; a device that refuses
    /// direct I/O is opened as usual). A batch writes its devices so:
    /// buffered writes to many block devices at once cost the kernel two to
    /// three times the CPU of the same writes one device after the other
    /// (see BENCHMARKS.md, "Many targets at once").
    ///
    /// # Errors
    ///
    /// [`TargetError`]: the image cannot be created, opened or locked (a
    /// lock held by another process than the caller), or the device cannot
    /// be opened exclusively.
    pub fn open_with(&self, uncached: bool) -> Result<Opened, TargetError> {
        let bs = self.block_size;
        let path = &self.path;
        let opened = match self.action {
            Action::Create(s) => ImageFile::create(path, s, bs)
                .map(|i| Opened::Image(i, true))
                .map_err(|e| TargetError::CannotCreate {
                    path: path.clone(),
                    reason: open_text(path, &e),
                })?,
            Action::Grow(_) | Action::Keep(_) => {
                let r = match self.action {
                    Action::Grow(s) => ImageFile::open_resize(path, s, bs),
                    _ => ImageFile::open(path, bs),
                };
                r.map(|i| Opened::Image(i, false))
                    .map_err(|e| TargetError::NotWritable {
                        path: path.clone(),
                        reason: open_text(path, &e),
                    })?
            }
            Action::Device(_) => {
                // Whole: `--size` is applied by the writer after it has
                // zeroed an old backup GPT beyond it (`limit_device`).
                let d = if uncached {
                    Device::open_uncached(path).or_else(|_| Device::open(path))
                } else {
                    Device::open(path)
                }?;
                return Ok(Opened::Device(Box::new(d)));
            }
        };
        if let Opened::Image(img, created) = &opened {
            let refused = match img.try_lock_exclusive() {
                Ok(()) => None,
                Err(e) if e.kind() == ErrorKind::WouldBlock => lock_is_callers(img).err(),
                Err(source) => Some(TargetError::Lock {
                    path: path.clone(),
                    source,
                }),
            };
            if let Some(e) = refused {
                if *created {
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
        }
        Ok(opened)
    }

    /// Checks that an opened image took the size it was opened with: a file
    /// of a pseudo file system (`/proc`, `/sys`) accepts the resize, keeps
    /// its length, and fails its first read. Devices pass.
    ///
    /// # Errors
    ///
    /// [`TargetError::NotAnImage`], or [`TargetError::Inspect`] when its
    /// length cannot be read.
    pub fn check_opened(&self, opened: &Opened) -> Result<(), TargetError> {
        if !matches!(opened, Opened::Image(..)) {
            return Ok(());
        }
        let path = self.path.clone();
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(source) => return Err(TargetError::Inspect { path, source }),
        };
        let want = self.size_bytes();
        if len != want {
            return Err(TargetError::NotAnImage { path, want, len });
        }
        Ok(())
    }

    /// Closes a target opened by [`Target::open_with`] that will not be
    /// written, and undoes what opening did: a created image is removed, a
    /// grown one gets its old length back.
    pub fn undo_open(&self, opened: Opened) {
        let created = opened.created();
        drop(opened);
        if created {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = self.shrink_back();
        }
    }

    /// Gives an image this run grew its old length back (nothing for any
    /// other target).
    ///
    /// # Errors
    ///
    /// The system's refusal to open or truncate the image.
    pub fn shrink_back(&self) -> io::Result<()> {
        if let (Action::Grow(_), Some(len)) = (self.action, self.len_before) {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&self.path)?
                .set_len(len)?;
        }
        Ok(())
    }
}

/// An existing path that can be an image: a regular file (not a directory,
/// a FIFO, a socket or a character device).
fn existing_image_kind(path: &Path, m: &Metadata) -> Result<(), TargetError> {
    let path = path.to_path_buf();
    if m.is_dir() {
        return Err(TargetError::Directory { path });
    }
    if !m.is_file() {
        return Err(TargetError::NotAFile { path });
    }
    Ok(())
}

/// What happens to an existing image of `current` bytes given a size.
fn existing_action(
    path: &Path,
    current: u64,
    size: Option<u64>,
    bs: u64,
    sector_size: u32,
) -> Result<Action, TargetError> {
    match size {
        None => {
            if current % bs != 0 {
                return Err(TargetError::LengthNotMultiple {
                    path: path.to_path_buf(),
                    len: current,
                    sector_size,
                });
            }
            Ok(Action::Keep(current))
        }
        Some(s) => {
            let s = round_to(s, bs, path)?;
            if s < current {
                return Err(TargetError::Shrink { size: s, current });
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
///
/// # Errors
///
/// The system's refusal.
pub fn writable(path: &Path) -> io::Result<()> {
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
pub fn os_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// An image's open error without the path the library put in front.
fn open_text(path: &Path, e: &mkfs_alloc_blockio::IoError) -> String {
    let text = os_text(&e.source);
    let prefix = format!("{}: ", path.display());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
}

/// `size`, if it is a whole number of `bs`-byte sectors.
fn round_to(size: u64, bs: u64, path: &Path) -> Result<u64, TargetError> {
    if size % bs != 0 {
        return Err(TargetError::SizeNotMultiple {
            path: path.to_path_buf(),
            size,
            sector_size: bs,
        });
    }
    Ok(size)
}

/// The target cannot be opened for writing, in the system's words.
fn not_writable(path: &Path, e: &io::Error) -> TargetError {
    TargetError::NotWritable {
        path: path.to_path_buf(),
        reason: os_text(e),
    }
}
