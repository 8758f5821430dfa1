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
use serde::Serialize;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How many unreadable (or invalidly named) paths a scan keeps as examples.
pub const MAX_REPORTED_PATHS: usize = 10;

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

/// A progress callback; called from the worker threads, at most once per
/// [`ScanOptions::progress_interval`], and once at the end.
pub type ProgressFn<'a> = &'a (dyn Fn(&ScanProgress) + Sync);

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

/// What one directory's names take, independent of the cluster size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DirRecord {
    /// Files and subdirectories in it.
    pub entries: u32,
    /// exFAT 32-byte entries of their entry sets (File, Stream Extension and
    /// File Name entries, [`names::exfat_entry_set`]).
    pub exfat_entries: u32,
    /// FAT32 32-byte entries: one short entry per name plus its long-name
    /// entries ([`names::fat32_lfn_entries`]); "." and ".." not included.
    pub fat32_entries: u32,
}

impl DirRecord {
    /// Counts one more name in this directory.
    pub fn add(&mut self, name: &OsStr) {
        let units = utf16_len(name);
        self.entries = self.entries.saturating_add(1);
        self.exfat_entries = self
            .exfat_entries
            .saturating_add(names::exfat_entry_set(units));
        self.fat32_entries = self
            .fat32_entries
            .saturating_add(1 + names::fat32_lfn_entries(name, units));
    }
}

/// An entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Unreadable {
    /// Its path.
    pub path: PathBuf,
    /// The operating system's error message.
    pub error: String,
}

/// The outcome of a scan.
#[derive(Debug, Clone, Default)]
pub struct ScanResult {
    /// Apparent size of every regular file counted (each hard link, unless
    /// [`ScanOptions::hard_links_once`]), in no particular order.
    pub file_sizes: Vec<u64>,
    /// Every directory below the PATH arguments (the PATH directories included).
    pub dirs: Vec<DirRecord>,
    /// The entries the PATH arguments add to the volume's root directory.
    pub root: DirRecord,
    /// Sum of `file_sizes`.
    pub apparent_bytes: u64,
    /// Symbolic links not followed.
    pub symlinks_skipped: u64,
    /// Further hard links to a file already counted (with
    /// [`ScanOptions::hard_links_once`]), and (with `follow_symlinks`)
    /// directories reached a second time.
    pub duplicates_skipped: u64,
    /// Further links to a file already counted that were counted as files of
    /// their own (without [`ScanOptions::hard_links_once`]).
    pub hard_links_as_files: u64,
    /// FIFOs, sockets and device nodes.
    pub special_skipped: u64,
    /// Entries that could not be read (directories not listed, files not
    /// stat'ed, broken links being followed).
    pub unreadable: u64,
    /// The first [`MAX_REPORTED_PATHS`] of them, sorted by path.
    pub unreadable_paths: Vec<Unreadable>,
    /// Names with characters exFAT and FAT32 cannot store (counted in the
    /// model as if they could).
    pub invalid_names: u64,
    /// The first [`MAX_REPORTED_PATHS`] of them, sorted.
    pub invalid_name_paths: Vec<PathBuf>,
    /// Wall time of the scan.
    pub elapsed: Duration,
}

/// One power-of-two bucket of the file-size histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// Smallest size in the bucket (0 for the empty-file bucket).
    pub min: u64,
    /// Largest size in the bucket.
    pub max: u64,
    /// Files in it.
    pub files: u64,
    /// Their apparent bytes.
    pub bytes: u64,
}

/// The JSON-friendly summary of a scan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataSummary {
    /// Regular files.
    pub files: u64,
    /// Directories (the PATH directories included).
    pub directories: u64,
    /// Apparent bytes of the files.
    pub apparent_bytes: u64,
    /// Files of 0 bytes.
    pub empty_files: u64,
    /// Largest file.
    pub largest_file: u64,
    /// See [`ScanResult::symlinks_skipped`].
    pub symlinks_skipped: u64,
    /// See [`ScanResult::duplicates_skipped`].
    pub duplicates_skipped: u64,
    /// See [`ScanResult::hard_links_as_files`].
    pub hard_links_as_files: u64,
    /// See [`ScanResult::special_skipped`].
    pub special_skipped: u64,
    /// See [`ScanResult::unreadable`].
    pub unreadable: u64,
    /// See [`ScanResult::unreadable_paths`].
    pub unreadable_paths: Vec<Unreadable>,
    /// See [`ScanResult::invalid_names`].
    pub invalid_names: u64,
    /// See [`ScanResult::invalid_name_paths`].
    pub invalid_name_paths: Vec<PathBuf>,
    /// Scan time in seconds.
    pub scan_seconds: f64,
    /// File sizes by power of two.
    pub histogram: Vec<SizeBucket>,
}

impl ScanResult {
    /// Number of regular files.
    pub fn file_count(&self) -> u64 {
        self.file_sizes.len() as u64
    }

    /// Number of directories below the root.
    pub fn dir_count(&self) -> u64 {
        self.dirs.len() as u64
    }

    /// Files larger than FAT32's limit of 4 GiB - 1 bytes.
    pub fn files_over_fat32_limit(&self) -> u64 {
        self.file_sizes
            .iter()
            .filter(|&&s| s > u64::from(u32::MAX))
            .count() as u64
    }

    /// File sizes by power of two: a bucket for empty files, then
    /// `[2^(k-1), 2^k - 1]` for k = 1..=64, trimmed to the non-empty range.
    pub fn histogram(&self) -> Vec<SizeBucket> {
        let mut files = [0u64; 65];
        let mut bytes = [0u64; 65];
        for &s in &self.file_sizes {
            let k = (64 - s.leading_zeros()) as usize;
            files[k] += 1;
            bytes[k] = bytes[k].saturating_add(s);
        }
        let first = files.iter().position(|&n| n > 0);
        let last = files.iter().rposition(|&n| n > 0);
        let (Some(first), Some(last)) = (first, last) else {
            return Vec::new();
        };
        (first..=last)
            .map(|k| {
                let (min, max) = match k {
                    0 => (0, 0),
                    64 => (1 << 63, u64::MAX),
                    k => (1u64 << (k - 1), (1u64 << k) - 1),
                };
                SizeBucket {
                    min,
                    max,
                    files: files[k],
                    bytes: bytes[k],
                }
            })
            .collect()
    }

    /// A summary for reports.
    pub fn summary(&self) -> DataSummary {
        DataSummary {
            files: self.file_count(),
            directories: self.dir_count(),
            apparent_bytes: self.apparent_bytes,
            empty_files: self.file_sizes.iter().filter(|&&s| s == 0).count() as u64,
            largest_file: self.file_sizes.iter().copied().max().unwrap_or(0),
            symlinks_skipped: self.symlinks_skipped,
            duplicates_skipped: self.duplicates_skipped,
            hard_links_as_files: self.hard_links_as_files,
            special_skipped: self.special_skipped,
            unreadable: self.unreadable,
            unreadable_paths: self.unreadable_paths.clone(),
            invalid_names: self.invalid_names,
            invalid_name_paths: self.invalid_name_paths.clone(),
            scan_seconds: self.elapsed.as_secs_f64(),
            histogram: self.histogram(),
        }
    }
}

/// Per-worker totals, merged at the end.
#[derive(Default)]
struct Acc {
    sizes: Vec<u64>,
    dirs: Vec<DirRecord>,
    apparent: u64,
    symlinks: u64,
    duplicates: u64,
    links_as_files: u64,
    special: u64,
    unreadable: u64,
    unreadable_paths: Vec<Unreadable>,
    invalid: u64,
    invalid_paths: Vec<PathBuf>,
}

impl Acc {
    fn unreadable(&mut self, path: &Path, e: &std::io::Error) {
        self.unreadable += 1;
        if self.unreadable_paths.len() < MAX_REPORTED_PATHS {
            self.unreadable_paths.push(Unreadable {
                path: path.to_path_buf(),
                error: e.to_string(),
            });
        }
    }

    fn check_name(&mut self, dir: &Path, name: &OsStr) {
        if names::is_invalid_on_fat(name) {
            self.invalid += 1;
            if self.invalid_paths.len() < MAX_REPORTED_PATHS {
                self.invalid_paths.push(dir.join(name));
            }
        }
    }

    fn merge(&mut self, o: Acc) {
        self.sizes.extend_from_slice(&o.sizes);
        self.dirs.extend_from_slice(&o.dirs);
        self.apparent = self.apparent.saturating_add(o.apparent);
        self.symlinks += o.symlinks;
        self.duplicates += o.duplicates;
        self.links_as_files += o.links_as_files;
        self.special += o.special;
        self.unreadable += o.unreadable;
        self.unreadable_paths.extend(o.unreadable_paths);
        self.invalid += o.invalid;
        self.invalid_paths.extend(o.invalid_paths);
    }
}

/// State shared by the workers.
struct Walk<'a> {
    follow: bool,
    links_once: bool,
    accs: Vec<Mutex<Acc>>,
    links: Mutex<HashSet<(u64, u64)>>,
    dirs_seen: Mutex<HashSet<(u64, u64)>>,
    files: AtomicU64,
    dirs: AtomicU64,
    bytes: AtomicU64,
    start: Instant,
    last_report_ms: AtomicU64,
    interval_ms: u64,
    progress: Option<ProgressFn<'a>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// (device, inode) of a file that has more than one hard link.
#[cfg(unix)]
fn link_id(m: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    (m.nlink() > 1).then(|| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn link_id(_m: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// (device, inode) of a directory, for loop detection.
#[cfg(unix)]
fn dir_id(m: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn dir_id(_m: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

impl Walk<'_> {
    /// Whether to count this file: always, unless hard links count once
    /// and this is not the first link seen. A further link counted as a
    /// file of its own is recorded in `acc`.
    fn count_link(&self, m: &fs::Metadata, acc: &mut Acc) -> bool {
        let first = match link_id(m) {
            Some(id) => lock(&self.links).insert(id),
            None => true,
        };
        if first {
            true
        } else if self.links_once {
            acc.duplicates += 1;
            false
        } else {
            acc.links_as_files += 1;
            true
        }
    }

    /// True the first time a directory is seen (always true when links are
    /// not followed: then no directory can be reached twice).
    fn first_dir(&self, m: Option<&fs::Metadata>) -> bool {
        if !self.follow {
            return true;
        }
        match m.and_then(dir_id) {
            Some(id) => lock(&self.dirs_seen).insert(id),
            None => true,
        }
    }

    fn snapshot(&self) -> ScanProgress {
        ScanProgress {
            files: self.files.load(Ordering::Relaxed),
            directories: self.dirs.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            elapsed: self.start.elapsed(),
        }
    }

    fn count(&self, files: u64, bytes: u64) {
        self.files.fetch_add(files, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.dirs.fetch_add(1, Ordering::Relaxed);
        let Some(progress) = self.progress else {
            return;
        };
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.last_report_ms.load(Ordering::Relaxed);
        if now >= last + self.interval_ms
            && self
                .last_report_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            progress(&self.snapshot());
        }
    }
}

/// Reads one directory, counts its files, and spawns a task per subdirectory.
fn walk_dir<'s>(w: &'s Walk<'s>, scope: &rayon::Scope<'s>, dir: PathBuf) {
    let slot = rayon::current_thread_index().unwrap_or(0) % w.accs.len();
    // Only this worker takes this lock (spawn never runs a task inline), so
    // it is uncontended; holding it saves a per-directory buffer.
    let mut acc = lock(&w.accs[slot]);
    let mut rec = DirRecord::default();
    let (mut files, mut bytes) = (0u64, 0u64);
    match fs::read_dir(&dir) {
        Err(e) => acc.unreadable(&dir, &e),
        Ok(rd) => {
            for ent in rd {
                let ent = match ent {
                    Ok(ent) => ent,
                    Err(e) => {
                        acc.unreadable(&dir, &e);
                        break;
                    }
                };
                let name = ent.file_name();
                let mut ft = match ent.file_type() {
                    Ok(ft) => ft,
                    Err(e) => {
                        acc.unreadable(&ent.path(), &e);
                        continue;
                    }
                };
                let mut meta = None;
                if ft.is_symlink() {
                    if !w.follow {
                        acc.symlinks += 1;
                        continue;
                    }
                    match fs::metadata(ent.path()) {
                        Ok(m) => {
                            ft = m.file_type();
                            meta = Some(m);
                        }
                        Err(e) => {
                            acc.unreadable(&ent.path(), &e);
                            continue;
                        }
                    }
                }
                if ft.is_dir() {
                    if w.follow {
                        if meta.is_none() {
                            meta = ent.metadata().ok();
                        }
                        if !w.first_dir(meta.as_ref()) {
                            acc.duplicates += 1;
                            continue;
                        }
                    }
                    rec.add(&name);
                    acc.check_name(&dir, &name);
                    let sub = ent.path();
                    scope.spawn(move |s| walk_dir(w, s, sub));
                } else if ft.is_file() {
                    let m = match meta {
                        Some(m) => m,
                        None => match ent.metadata() {
                            Ok(m) => m,
                            Err(e) => {
                                acc.unreadable(&ent.path(), &e);
                                continue;
                            }
                        },
                    };
                    if !w.count_link(&m, &mut acc) {
                        continue;
                    }
                    rec.add(&name);
                    acc.check_name(&dir, &name);
                    let len = m.len();
                    acc.sizes.push(len);
                    acc.apparent = acc.apparent.saturating_add(len);
                    files += 1;
                    bytes = bytes.saturating_add(len);
                } else {
                    acc.special += 1;
                }
            }
        }
    }
    acc.dirs.push(rec);
    drop(acc);
    w.count(files, bytes);
}

/// The root-directory name a PATH argument gets: its last component, or for
/// `.`, `..` and `/` the last component of its canonical form.
fn top_name(path: &Path) -> OsString {
    path.file_name()
        .map(OsStr::to_os_string)
        .or_else(|| {
            fs::canonicalize(path)
                .ok()
                .and_then(|c| c.file_name().map(OsStr::to_os_string))
        })
        .unwrap_or_else(|| OsString::from("ROOT"))
}

/// Scans `paths` (files or directories) in parallel.
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
