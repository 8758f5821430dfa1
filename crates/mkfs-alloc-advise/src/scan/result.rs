//! What a scan found: [`ScanResult`] and its summaries.

use super::*;

/// What one directory's names take, independent of the cluster size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(Serialize))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
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
