//! Scanning the data the user means to store: a parallel walk that keeps
//! just enough to predict its footprint at every cluster size.
//!
//! What is kept (about 8 bytes per file and 12 per directory):
//! - the apparent size (`metadata.len()`) of every regular file, because
//!   rounding up to a cluster needs each size;
//! - per directory, the number of entries and the 32-byte directory entries
//!   their names take on exFAT and FAT32 ([`DirRecord`]).
//!
//! Rules of the walk (the same as `du -s --apparent-size` where they overlap):
//! - symbolic links below the PATH arguments are skipped and counted unless
//!   [`ScanOptions::follow_symlinks`] is set; the PATH arguments themselves are
//!   always followed (like `find -H`);
//! - a file with several hard links is counted once per link, as a copy
//!   stores it (FAT and exFAT have no hard links); with
//!   [`ScanOptions::hard_links_once`] it is counted once, by (device, inode),
//!   and later links are neither data nor directory entries;
//! - with `follow_symlinks`, a directory reached twice (a link loop, or two
//!   links to one place) is walked once;
//! - entries that cannot be read are counted, the first
//!   [`MAX_REPORTED_PATHS`] kept with their error, and the walk goes on;
//! - FIFOs, sockets and devices are skipped and counted.
//!
//! Each PATH argument becomes one entry of the volume's root directory, the
//! way `cp -r PATH... MOUNTPOINT/` and `mcopy -s PATH... ::/` copy it.

use crate::names::{self, utf16_len};
#[cfg(feature = "serde")]
use serde::Serialize;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;
#[cfg(feature = "scan")]
use {
    std::collections::HashSet,
    std::ffi::OsString,
    std::fs,
    std::path::Path,
    std::sync::atomic::{AtomicU64, Ordering},
    std::sync::{Mutex, MutexGuard, PoisonError},
    std::time::Instant,
};

mod result;
#[cfg(feature = "scan")]
mod walk;

pub use result::{DataSummary, DirRecord, ScanResult, SizeBucket, Unreadable};
#[cfg(feature = "scan")]
use walk::*;

/// How many unreadable (or invalidly named) paths a scan keeps as examples.
pub const MAX_REPORTED_PATHS: usize = 10;

#[cfg(feature = "scan")]
/// Why a scan could not run at all (entries below the PATHs that cannot be
/// read are counted in [`ScanResult`] instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// A PATH argument cannot be read.
    #[error("cannot read {}", path.display())]
    Path {
        /// The argument.
        path: PathBuf,
        /// The error from the operating system.
        source: std::io::Error,
    },
    /// A PATH argument is neither a regular file nor a directory.
    #[error("{} is neither a regular file nor a directory", path.display())]
    NotFileOrDir {
        /// The argument.
        path: PathBuf,
    },
    /// The worker threads could not be started.
    #[error("cannot start the scan threads: {0}")]
    Threads(String),
}

#[cfg(feature = "scan")]
/// Progress of a running scan, passed to [`ScanOptions::progress`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanProgress {
    /// Regular files counted so far.
    pub files: u64,
    /// Directories read so far.
    pub directories: u64,
    /// Apparent bytes of the files so far.
    pub bytes: u64,
    /// Time since the scan started.
    pub elapsed: Duration,
}

#[cfg(feature = "scan")]
/// A progress callback; called from the worker threads, at most once per
/// [`ScanOptions::progress_interval`], and once at the end.
pub type ProgressFn<'a> = &'a (dyn Fn(&ScanProgress) + Sync);

#[cfg(feature = "scan")]
/// How to scan.
#[derive(Clone, Copy)]
pub struct ScanOptions<'a> {
    /// Follow symbolic links below the PATH arguments.
    pub follow_symlinks: bool,
    /// Count a file with several hard links once (a copy that recreates
    /// hard links; neither FAT nor exFAT can). Off by default: each link is
    /// a file of its own, as `cp -r` and `mcopy` store it.
    pub hard_links_once: bool,
    /// Worker threads; 0 means one per available CPU.
    pub threads: usize,
    /// Called with the running totals while the scan goes on.
    pub progress: Option<ProgressFn<'a>>,
    /// Least time between two progress calls.
    pub progress_interval: Duration,
}

#[cfg(feature = "scan")]
impl Default for ScanOptions<'_> {
    fn default() -> Self {
        ScanOptions {
            follow_symlinks: false,
            hard_links_once: false,
            threads: 0,
            progress: None,
            progress_interval: Duration::from_millis(100),
        }
    }
}

#[cfg(feature = "scan")]
impl std::fmt::Debug for ScanOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanOptions")
            .field("follow_symlinks", &self.follow_symlinks)
            .field("hard_links_once", &self.hard_links_once)
            .field("threads", &self.threads)
            .field("progress", &self.progress.is_some())
            .field("progress_interval", &self.progress_interval)
            .finish()
    }
}

#[cfg(feature = "scan")]
/// Scans `paths` (files or directories) in parallel (the `scan` feature,
/// on by default: it brings in rayon).
///
/// # Errors
///
/// [`ScanError::Path`] or [`ScanError::NotFileOrDir`] when a PATH argument
/// itself cannot be used; entries below it that cannot be read are counted
/// in the result instead.
pub fn scan(paths: &[PathBuf], opts: &ScanOptions<'_>) -> Result<ScanResult, ScanError> {
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let walk = Walk {
        follow: opts.follow_symlinks,
        links_once: opts.hard_links_once,
        accs: (0..threads).map(|_| Mutex::new(Acc::default())).collect(),
        links: Mutex::new(HashSet::new()),
        dirs_seen: Mutex::new(HashSet::new()),
        files: AtomicU64::new(0),
        dirs: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        start: Instant::now(),
        last_report_ms: AtomicU64::new(0),
        interval_ms: opts.progress_interval.as_millis() as u64,
        progress: opts.progress,
    };

    let mut top = Acc::default();
    let mut root = DirRecord::default();
    let mut top_dirs = Vec::new();
    let mut top_seen = HashSet::new();
    for path in paths {
        let m = fs::metadata(path).map_err(|source| ScanError::Path {
            path: path.clone(),
            source,
        })?;
        let name = top_name(path);
        if m.is_dir() {
            let id = dir_id(&m);
            let first = id.is_none_or(|id| top_seen.insert(id));
            if let Some(id) = id {
                lock(&walk.dirs_seen).insert(id);
            }
            if !first {
                top.duplicates += 1;
                continue;
            }
            top_dirs.push(path.clone());
        } else if m.is_file() {
            if !walk.count_link(&m, &mut top) {
                continue;
            }
            top.sizes.push(m.len());
            top.apparent = top.apparent.saturating_add(m.len());
        } else {
            return Err(ScanError::NotFileOrDir { path: path.clone() });
        }
        root.add(&name);
        top.check_name(Path::new(""), &name);
    }
    walk.files.store(top.sizes.len() as u64, Ordering::Relaxed);
    walk.bytes.store(top.apparent, Ordering::Relaxed);

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("scan-{i}"))
        .build()
        .map_err(|e| ScanError::Threads(e.to_string()))?;
    let w = &walk;
    pool.scope(|s| {
        for dir in top_dirs {
            s.spawn(move |s| walk_dir(w, s, dir));
        }
    });
    if let Some(progress) = walk.progress {
        progress(&walk.snapshot());
    }

    let elapsed = walk.start.elapsed();
    let mut all = top;
    for acc in walk.accs {
        all.merge(acc.into_inner().unwrap_or_else(PoisonError::into_inner));
    }
    all.unreadable_paths.sort();
    all.unreadable_paths.truncate(MAX_REPORTED_PATHS);
    all.invalid_paths.sort();
    all.invalid_paths.truncate(MAX_REPORTED_PATHS);
    Ok(ScanResult {
        file_sizes: all.sizes,
        dirs: all.dirs,
        root,
        apparent_bytes: all.apparent,
        symlinks_skipped: all.symlinks,
        duplicates_skipped: all.duplicates,
        hard_links_as_files: all.links_as_files,
        special_skipped: all.special,
        unreadable: all.unreadable,
        unreadable_paths: all.unreadable_paths,
        invalid_names: all.invalid,
        invalid_name_paths: all.invalid_paths,
        elapsed,
    })
}
