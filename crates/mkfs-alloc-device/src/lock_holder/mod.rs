//! Who holds the BSD lock (`flock`) that keeps us from locking a device
//! or an image, and whether it is our caller's.

use std::path::Path;

use serde::Serialize;

use crate::DeviceError;

/// `/proc/locks` and the process tree (Linux).
#[cfg(target_os = "linux")]
mod linux_locks;

/// A process that holds a BSD lock (`flock`) on a device or a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockHolder {
    /// Its process id (as `/proc/locks` shows it: the process that took
    /// the lock, which may have handed the open file to its children).
    pub pid: u32,
    /// Its program name (`/proc/PID/comm`), if still readable.
    pub name: Option<String>,
    /// Its command line (`/proc/PID/cmdline`, arguments joined by spaces,
    /// control characters shown as `?`, shortened), if still readable.
    pub command: Option<String>,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "process {}", self.pid)?;
        match (&self.name, &self.command) {
            (_, Some(c)) => write!(f, ": {c}"),
            (Some(n), None) => write!(f, ": {n}"),
            (None, None) => Ok(()),
        }
    }
}

/// The words after "in use by another process": who holds the lock, when
/// that is known.
pub(crate) fn clause(holder: Option<&LockHolder>) -> String {
    match holder {
        Some(h) => format!("{h}, which holds a lock on it"),
        None => "it holds a lock on it".to_string(),
    }
}

/// After a non-blocking `flock` on `path` failed because a lock is held
/// (`EWOULDBLOCK`), whether that lock is the caller's own: `Ok(())` when
/// every `FLOCK` entry of `/proc/locks` on the file (matched by the device
/// and inode of `meta`, the `fstat` of the open file) was taken by this
/// process or one of its ancestors. That is systemd's convention for
/// running mkfs under a lock (systemd-repart, systemd-makefs, `flock -x
/// DEV mkfs DEV`): the caller holds the device for us. Linux only.
///
/// # Errors
///
/// [`DeviceError::Locked`] naming the other holder, or without one when no
/// entry names a process this one can see (or on other platforms).
pub fn check_lock_holder(path: &Path, meta: &std::fs::Metadata) -> Result<(), DeviceError> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = (rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
        linux_locks::check(path.to_path_buf(), dev, meta.ino())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = meta;
        Err(DeviceError::Locked {
            path: path.to_path_buf(),
            holder: None,
        })
    }
}
