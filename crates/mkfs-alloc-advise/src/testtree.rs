//! Deterministic file trees for tests and benchmarks.
//!
//! [`varied`] makes the trees `tests/reality.rs` copies onto real volumes:
//! empty files, one-byte files, exact cluster multiples and their
//! neighbours, names at the 8.3 / 13-unit / 15-unit boundaries, long names,
//! nested and empty directories, and one directory large enough to span
//! several directory clusters. Names differ by more than case, so none
//! clash on the case-insensitive FAT file systems.
//!
//! [`flat_sparse`] makes the large trees of the scan benchmark: files of
//! random apparent size created with `set_len` (sparse, so a million of
//! them fit in RAM on tmpfs).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use mkfs_alloc_ondisk::rng::SplitMix64;

/// What a generator made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Regular files.
    pub files: u64,
    /// Directories, the top one included.
    pub dirs: u64,
    /// Apparent bytes of the files.
    pub bytes: u64,
}

/// Shape of a [`varied`] tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariedSpec {
    /// Seed of the sizes and names.
    pub seed: u64,
    /// Number of files.
    pub files: usize,
    /// Largest file size (the size mix is log-uniform up to it).
    pub max_size: u64,
    /// Put files in nested directories (else all in the top directory).
    pub nested: bool,
}

impl Default for VariedSpec {
    fn default() -> Self {
        VariedSpec {
            seed: 1,
            files: 300,
            max_size: 3 << 20,
            nested: true,
        }
    }
}

/// A file size from the test mix.
fn varied_size(rng: &mut SplitMix64, max: u64) -> u64 {
    const MULTIPLES: [u64; 6] = [512, 4096, 8192, 32768, 65536, 131072];
    let m = MULTIPLES[rng.below(MULTIPLES.len() as u64) as usize];
    let s = match rng.below(10) {
        0 => 0,
        1 => 1 + rng.below(3),
        2 => m * (1 + rng.below(4)),
        3 => m * (1 + rng.below(4)) + 1,
        4 => m * (1 + rng.below(4)) - 1,
        _ => {
            // Log-uniform: pick a power of two, then a size below it.
            let bits = 64 - max.leading_zeros();
            let top = 1u64 << (1 + rng.below(u64::from(bits)));
            rng.below(top)
        }
    };
    s.min(max)
}

/// A file name from the test mix; `i` makes it unique, case-insensitively.
fn varied_name(rng: &mut SplitMix64, i: usize) -> String {
    match rng.below(8) {
        0 => format!("F{i:05}.BIN"), // upper-case 8.3: no long name on FAT32
        1 => format!("f{i:05}.txt"), // lower-case 8.3
        2 => format!("Mixed{i:03}.Dat"),
        3 => format!("n{i:011}x"), // 13 units: one LFN entry
        4 => format!("n{i:012}x"), // 14 units: two LFN entries
        5 => format!("e{i:013}x"), // 15 units: one exFAT name entry
        6 => format!("e{i:014}x"), // 16 units: two exFAT name entries
        _ => {
            let len = 20 + rng.below(180) as usize;
            let mut s = format!("long name {i:05} ");
            while s.len() < len {
                s.push_str("with words, spaces & dots.");
            }
            s.truncate(len);
            s.trim_end_matches(['.', ' ']).to_string() + ".dat"
        }
    }
}

fn write_file(path: &Path, size: u64, fill: u8) -> io::Result<()> {
    let mut f = fs::File::create(path)?;
    let block = vec![fill; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Writes a [`VariedSpec`] tree under `root` (created; must not exist).
/// File contents are real bytes (not sparse).
///
/// # Errors
///
/// The I/O error of creating a directory or writing a file.
pub fn varied(root: &Path, spec: &VariedSpec) -> io::Result<TreeStats> {
    let mut rng = SplitMix64::new(spec.seed);
    fs::create_dir(root)?;
    let mut stats = TreeStats {
        dirs: 1,
        ..TreeStats::default()
    };
    let mut dirs: Vec<PathBuf> = vec![root.to_path_buf()];
    if spec.nested {
        // Depth up to 3, a few empty directories, and one "big" directory.
        let layout = [
            "docs",
            "docs/Reports 2024",
            "docs/Reports 2024/Q1",
            "PHOTOS",
            "photos of a rather long holiday trip",
            "music/Artist Name/Album Title",
            "empty",
            "empty/EMPTY2",
            "big",
        ];
        for d in layout {
            fs::create_dir_all(root.join(d))?;
        }
        let all = walk_dirs(root)?;
        stats.dirs = all.len() as u64;
        dirs = all
            .into_iter()
            .filter(|d| !d.ends_with("empty") && !d.ends_with("EMPTY2"))
            .collect();
        dirs.sort();
    }
    let big = root.join("big");
    for i in 0..spec.files {
        let dir = if spec.nested && i % 3 == 0 {
            big.clone()
        } else {
            dirs[rng.below(dirs.len() as u64) as usize].clone()
        };
        let size = varied_size(&mut rng, spec.max_size);
        let name = varied_name(&mut rng, i);
        write_file(&dir.join(name), size, (i % 251) as u8)?;
        stats.files += 1;
        stats.bytes += size;
    }
    Ok(stats)
}

/// All directories under `root`, `root` included.
fn walk_dirs(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let mut subs = Vec::new();
        for e in fs::read_dir(&out[i])? {
            let e = e?;
            if e.file_type()?.is_dir() {
                subs.push(e.path());
            }
        }
        out.extend(subs);
        i += 1;
    }
    Ok(out)
}

/// Writes `files` sparse files of random apparent size (0..=`max_size`)
/// under `root` (created; must not exist), `per_dir` per directory, in
/// directories two levels deep.
///
/// # Errors
///
/// The I/O error of creating a directory or a file.
pub fn flat_sparse(
    root: &Path,
    files: u64,
    per_dir: u64,
    max_size: u64,
    seed: u64,
) -> io::Result<TreeStats> {
    let mut rng = SplitMix64::new(seed);
    let per_dir = per_dir.max(1);
    fs::create_dir(root)?;
    let mut stats = TreeStats {
        dirs: 1,
        ..TreeStats::default()
    };
    let mut dir = root.to_path_buf();
    for i in 0..files {
        if i % per_dir == 0 {
            let d = i / per_dir;
            let group = root.join(format!("g{:03}", d / 100));
            if d % 100 == 0 {
                fs::create_dir(&group)?;
                stats.dirs += 1;
            }
            dir = group.join(format!("d{d:06}"));
            fs::create_dir(&dir)?;
            stats.dirs += 1;
        }
        let size = rng.below(max_size + 1);
        let f = fs::File::create(dir.join(format!("file{i:08}.dat")))?;
        f.set_len(size)?;
        stats.files += 1;
        stats.bytes += size;
    }
    Ok(stats)
}
