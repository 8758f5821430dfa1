//! Scans PATHs the way `mkfs-alloc advise` does and prints the totals and
//! the time, for comparison with `du -s --apparent-size -B1`.
//!
//! ```text
//! cargo run --release -p mkfs-alloc-advise --example scan -- [--threads N] [--follow] PATH...
//! ```

use mkfs_alloc_advise::{scan, ScanOptions};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut opts = ScanOptions::default();
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => opts.threads = n,
                None => {
                    eprintln!("--threads needs a number");
                    return ExitCode::from(2);
                }
            },
            "--follow" => opts.follow_symlinks = true,
            _ => paths.push(PathBuf::from(a)),
        }
    }
    match scan(&paths, &opts) {
        Ok(r) => {
            println!(
                "{} files, {} directories, {} bytes apparent, {} unreadable, {} symlinks skipped, {} duplicates: {:.3} s",
                r.file_count(),
                r.dir_count(),
                r.apparent_bytes,
                r.unreadable,
                r.symlinks_skipped,
                r.duplicates_skipped,
                r.elapsed.as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("scan: {e}");
            ExitCode::from(2)
        }
    }
}
