//! What a run checks before its first write to any target: every target
//! opened for writing and locked (a device exclusively), and every file the
//! run writes besides its targets (`--bmap`, a sparse image, `--log`) a
//! regular file, or a new one in a writable directory, that is neither a
//! target nor another output. The single run and the batch both call these.
//!
//! An output that is a symbolic link is refused rather than written through:
//! a replaced file would replace the link, an appended one would land where
//! the link points, and neither is what its name says.

use crate::target::{os_text, writable, Action, Opened, Target};
use crate::{usage, Failure};
use anyhow::anyhow;
use std::path::{Path, PathBuf};

/// What identifies a medium or a file: a device number, a file's device and
/// inode, or its canonical path (for a file still to be created, the
/// canonical directory and its name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MediumId {
    /// A block device's number.
    #[cfg(unix)]
    Device(u64),
    /// A file's device and inode.
    #[cfg(unix)]
    File(u64, u64),
    /// A canonical path.
    Path(PathBuf),
}

/// The canonical path of `path`; for a path that does not exist yet, its
/// canonical directory joined with its name.
pub(crate) fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(path) {
        return Some(c);
    }
    let name = path.file_name()?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::canonicalize(parent).ok().map(|p| p.join(name))
}

/// Everything that names the medium at `path`: its canonical path, its
/// device number or inode, a loop device's backing file, and a disk's
/// partitions (`target`: the inspected target, when there is one).
pub(super) fn medium_ids(path: &Path, target: Option<&Target>) -> Vec<MediumId> {
    let mut ids = Vec::new();
    ids.extend(canonical(path).map(MediumId::Path));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let of = |p: &Path| -> Option<MediumId> {
            let m = std::fs::metadata(p).ok()?;
            Some(if mkfs_alloc_device::is_block_device(p) {
                MediumId::Device(m.rdev())
            } else {
                MediumId::File(m.dev(), m.ino())
            })
        };
        ids.extend(of(path));
        if let Some(b) = mkfs_alloc_device::loop_backing_file(path) {
            ids.extend(of(&b));
            ids.extend(canonical(&b).map(MediumId::Path));
        }
        if let Some(d) = target.and_then(Target::device) {
            ids.extend(d.partitions.iter().filter_map(|p| of(&p.path)));
        }
    }
    #[cfg(not(unix))]
    let _ = target;
    ids
}

/// How an output file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    /// Through a temporary file beside it, renamed over it: its directory
    /// must be writable.
    Replace,
    /// Appended to (created when missing).
    Append,
}

/// A file the run writes besides its targets.
#[derive(Debug, Clone, Copy)]
pub(super) struct Output<'a> {
    /// The option that names it (`--bmap`, `--log`, `TARGET`).
    pub(super) option: &'a str,
    /// The path given.
    pub(super) path: &'a Path,
    /// How it is written.
    pub(super) write: Write,
}

/// Refuses (exit 2) an output that is not a regular file or a new file in a
/// writable directory, that is a symbolic link, or that is one of `targets`
/// (their [`medium_ids`]) or another of `outputs`. Nothing is opened.
pub(super) fn check_outputs(
    outputs: &[Output<'_>],
    targets: &[Vec<MediumId>],
) -> Result<(), Failure> {
    let mut seen: Vec<(Vec<MediumId>, &Output<'_>)> = Vec::new();
    for out in outputs {
        check_output(out)?;
        let ids = medium_ids(out.path, None);
        if targets.iter().any(|t| t.iter().any(|x| ids.contains(x))) {
            return Err(usage(anyhow!(
                "{} {}: is a target of this run (or the same file under another name); give a file of its own",
                out.option,
                out.path.display()
            )));
        }
        if let Some((_, other)) = seen.iter().find(|(s, _)| s.iter().any(|x| ids.contains(x))) {
            return Err(usage(anyhow!(
                "{} {}: is the same file as {} {}; give each its own file",
                out.option,
                out.path.display(),
                other.option,
                other.path.display()
            )));
        }
        seen.push((ids, out));
    }
    Ok(())
}

/// One output on its own: its kind, its directory, its permissions.
fn check_output(out: &Output<'_>) -> Result<(), Failure> {
    let (option, path) = (out.option, out.path);
    let refuse = |why: String| Err(usage(anyhow!("{option} {}: {why}", path.display())));
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return refuse(format!("cannot inspect it: {}", os_text(&e))),
    };
    if let Some(m) = &meta {
        if m.file_type().is_symlink() {
            let to = std::fs::read_link(path).unwrap_or_default();
            return refuse(format!(
                "is a symbolic link (to {}); give the file's own path",
                to.display()
            ));
        }
        if m.is_dir() {
            return refuse("is a directory; give a file name".to_string());
        }
        if !m.is_file() {
            return refuse(format!(
                "is {}, not a regular file; give a file name",
                kind_text(m)
            ));
        }
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return refuse(format!("directory {} does not exist", parent.display()));
    }
    if meta.is_none() || out.write == Write::Replace {
        if let Err(e) = writable(parent) {
            return refuse(format!(
                "cannot write in directory {}: {}",
                parent.display(),
                os_text(&e)
            ));
        }
    }
    if meta.is_some() {
        if let Err(e) = writable(path) {
            return refuse(format!("cannot write it: {}", os_text(&e)));
        }
    }
    Ok(())
}

/// What kind of non-regular file `m` is.
fn kind_text(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = m;
    "a special file"
}

/// Opens (and locks) a target for writing and checks that it took its
/// size; nothing is written. The error is the refusal's text.
pub(super) fn open_checked(target: &Target, uncached: bool) -> Result<Opened, Failure> {
    let opened = target.open_with(uncached)?;
    if let Err(f) = crate::watch::check_opened(target, &opened) {
        undo_open(target, opened);
        return Err(f);
    }
    Ok(opened)
}

/// Opens every target of `targets` (`None`: not to be written) before any
/// of them is written: the handle of each, or why it cannot be opened.
pub(super) fn open_all(
    targets: &[Option<&Target>],
    uncached: bool,
) -> Vec<Option<Result<Opened, String>>> {
    targets
        .iter()
        .map(|t| {
            t.map(|t| open_checked(t, uncached).map_err(|f| crate::text::error_text(f.error())))
        })
        .collect()
}

/// Closes a target opened by [`open_all`] that will not be written, and
/// undoes what opening did: a created image is removed, a grown one gets
/// its old length back.
pub(super) fn undo_open(target: &Target, opened: Opened) {
    let created = opened.created();
    drop(opened);
    if created {
        let _ = std::fs::remove_file(target.path());
    } else if let (Action::Grow(_), Some(len)) = (target.action(), target.len_before()) {
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .open(target.path())
            .and_then(|f| f.set_len(len));
    }
}
