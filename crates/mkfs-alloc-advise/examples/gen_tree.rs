//! Generates a benchmark tree of sparse files (apparent sizes only).
//!
//! ```text
//! cargo run --release -p mkfs-alloc-advise --example gen_tree -- DIR FILES [PER_DIR] [MAX_SIZE]
//! cargo run --release -p mkfs-alloc-advise --example gen_tree -- /dev/shm/t1m 1000000
//! ```
//!
//! `DIR` must not exist. Files go `PER_DIR` (default 1000) to a directory,
//! 100 directories to a group; sizes are uniform in `0..=MAX_SIZE` (default 1 MiB).

use mkfs_alloc_advise::testtree::flat_sparse;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u64| -> Result<u64, String> {
        args.get(i).map_or(Ok(default), |s| {
            s.parse().map_err(|e| format!("{s:?}: {e}"))
        })
    };
    let (Some(dir), Ok(files), Ok(per_dir), Ok(max)) = (
        args.first().map(PathBuf::from),
        num(1, 0),
        num(2, 1000),
        num(3, 1 << 20),
    ) else {
        eprintln!("usage: gen_tree DIR FILES [PER_DIR] [MAX_SIZE]");
        return ExitCode::from(2);
    };
    let start = std::time::Instant::now();
    match flat_sparse(&dir, files, per_dir, max, 42) {
        Ok(s) => {
            println!(
                "{}: {} files, {} directories, {} bytes apparent, made in {:.1} s",
                dir.display(),
                s.files,
                s.dirs,
                s.bytes,
                start.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_tree: {}: {e}", dir.display());
            ExitCode::from(1)
        }
    }
}
