//! The floors of `cargo xtask bench --recluster`: the bytes a re-cluster
//! writes (and reads) moved by `dd` with direct I/O, as one sequential
//! write ended by one `fsync`, and in the job's own flush-separated stages.

use crate::bench::median;
use crate::bench_recluster::{sh, timed};
use std::path::Path;

const KIB: u64 = 1 << 10;

/// The floor: `write` bytes (rounded up to 4 KiB) written by `dd bs=1M
/// oflag=direct conv=fsync` over an existing file in `dir`, the sequential
/// write of the same bytes with nothing to read or plan; and that plus
/// `read` bytes read back by `dd iflag=direct` first, the reads the
/// recluster makes too. Medians of five runs.
pub(crate) fn floor(dir: &Path, write: u64, read: u64) -> Result<(f64, f64), String> {
    let round = |b: u64| (b.div_ceil(4 * KIB) * 4 * KIB).to_string();
    let (w, r) = (round(write), round(read));
    let file = dir.join("floor.bin");
    let most = round(write.max(read));
    sh(
        "head -c \"$2\" /dev/urandom >\"$1\" && sync",
        &[&file, &most],
    )?;
    let dd_write = "dd if=/dev/zero of=\"$1\" bs=1M count=\"$2\" iflag=count_bytes oflag=direct conv=notrunc,fsync status=none";
    let dd_read =
        "dd if=\"$1\" of=/dev/null bs=1M count=\"$3\" iflag=direct,count_bytes status=none";
    let (mut tw, mut trw) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        tw.push(timed(|| sh(dd_write, &[&file, &w]).map(drop))?);
        let both = format!("{dd_read} && {dd_write}");
        trw.push(timed(|| sh(&both, &[&file, &w, &r]).map(drop))?);
    }
    Ok((median(tw), median(trw)))
}

/// The staged floor: each of `stages` (bytes, rounded up to 4 KiB) written
/// by its own `dd bs=1M oflag=direct conv=fsync`, one after the other at
/// consecutive offsets of an existing file in `dir`, in one shell; the
/// median of five runs.
pub(crate) fn floor_staged(dir: &Path, stages: &[u64]) -> Result<f64, String> {
    let round = |b: u64| b.div_ceil(4 * KIB) * 4 * KIB;
    let total: u64 = stages.iter().map(|&b| round(b)).sum();
    let file = dir.join("floor-staged.bin");
    sh(
        "head -c \"$2\" /dev/urandom >\"$1\" && sync",
        &[&file, &total.max(4 * KIB).to_string()],
    )?;
    let mut script = String::new();
    let mut at = 0u64;
    for &b in stages.iter().filter(|&&b| b > 0) {
        let b = round(b);
        script.push_str(&format!(
            "dd if=/dev/zero of=\"$1\" bs=1M count={b} seek={at} iflag=count_bytes oflag=direct,seek_bytes conv=notrunc,fsync status=none && "
        ));
        at += b;
    }
    script.push_str("true");
    let mut t = Vec::new();
    for _ in 0..5 {
        t.push(timed(|| sh(&script, &[&file]).map(drop))?);
    }
    Ok(median(t))
}
