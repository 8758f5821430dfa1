//! A unique temporary directory, removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A directory under [`std::env::temp_dir`] that is removed (with its
/// contents) when dropped. Declare loop and mount guards *after* it so they
/// are dropped first.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `mkfs-alloc-<tag>-<pid>-<n>-<nanos>` under the temp directory.
    #[track_caller]
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tag: String = tag
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = std::env::temp_dir().join(format!(
            "mkfs-alloc-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Creates (and returns) a subdirectory, e.g. a mount point.
    #[track_caller]
    pub fn subdir(&self, name: &str) -> PathBuf {
        let p = self.path.join(name);
        std::fs::create_dir_all(&p)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", p.display()));
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Never recurse into something still mounted: remove_dir_all does not
        // cross into a FUSE mount only if it is gone; check first.
        if crate::fuse::mounted_under(&self.path) {
            eprintln!(
                "warning: leaving {} in place: something is still mounted there",
                self.path.display()
            );
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
