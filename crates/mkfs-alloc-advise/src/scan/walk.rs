//! The parallel walk: per-worker totals, the shared state, one task per
//! directory.

use super::*;

/// Per-worker totals, merged at the end.
#[derive(Default)]
pub(super) struct Acc {
    pub(super) sizes: Vec<u64>,
    pub(super) dirs: Vec<DirRecord>,
    pub(super) apparent: u64,
    pub(super) symlinks: u64,
    pub(super) duplicates: u64,
    pub(super) links_as_files: u64,
    pub(super) special: u64,
    pub(super) unreadable: u64,
    pub(super) unreadable_paths: Vec<Unreadable>,
    pub(super) invalid: u64,
    pub(super) invalid_paths: Vec<PathBuf>,
}

impl Acc {
    pub(super) fn unreadable(&mut self, path: &Path, e: &std::io::Error) {
        self.unreadable += 1;
        if self.unreadable_paths.len() < MAX_REPORTED_PATHS {
            self.unreadable_paths.push(Unreadable {
                path: path.to_path_buf(),
                error: e.to_string(),
            });
        }
    }

    pub(super) fn check_name(&mut self, dir: &Path, name: &OsStr) {
        if names::is_invalid_on_fat(name) {
            self.invalid += 1;
            if self.invalid_paths.len() < MAX_REPORTED_PATHS {
                self.invalid_paths.push(dir.join(name));
            }
        }
    }

    pub(super) fn merge(&mut self, o: Acc) {
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
pub(super) struct Walk<'a> {
    pub(super) follow: bool,
    pub(super) links_once: bool,
    pub(super) accs: Vec<Mutex<Acc>>,
    pub(super) links: Mutex<HashSet<(u64, u64)>>,
    pub(super) dirs_seen: Mutex<HashSet<(u64, u64)>>,
    pub(super) files: AtomicU64,
    pub(super) dirs: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) start: Instant,
    pub(super) last_report_ms: AtomicU64,
    pub(super) interval_ms: u64,
    pub(super) progress: Option<ProgressFn<'a>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
pub(super) fn dir_id(m: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
pub(super) fn dir_id(_m: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

impl Walk<'_> {
    /// Whether to count this file: always, unless hard links count once
    /// and this is not the first link seen. A further link counted as a
    /// file of its own is recorded in `acc`.
    pub(super) fn count_link(&self, m: &fs::Metadata, acc: &mut Acc) -> bool {
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

    pub(super) fn snapshot(&self) -> ScanProgress {
        ScanProgress {
            files: self.files.load(Ordering::Relaxed),
            directories: self.dirs.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            elapsed: self.start.elapsed(),
        }
    }

    pub(super) fn count(&self, files: u64, bytes: u64) {
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
pub(super) fn walk_dir<'s>(w: &'s Walk<'s>, scope: &rayon::Scope<'s>, dir: PathBuf) {
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
pub(super) fn top_name(path: &Path) -> OsString {
    path.file_name()
        .map(OsStr::to_os_string)
        .or_else(|| {
            fs::canonicalize(path)
                .ok()
                .and_then(|c| c.file_name().map(OsStr::to_os_string))
        })
        .unwrap_or_else(|| OsString::from("ROOT"))
}
