//! The one definition of "waste" that `advise`, `--data` and `info --files`
//! report, so the same tree gives the same figure in each.

/// The definition in words, printed beside every waste figure.
pub const WASTE_DEFINITION: &str = "waste = the clusters the files and directories take \
(not counting the root directory's first cluster, which the format allocates) \
minus the files' sizes, in % of the files' sizes";

/// Waste in bytes: `file_cluster_bytes + dir_cluster_bytes - file_bytes`
/// (saturating), where `dir_cluster_bytes` are the clusters of every
/// directory except the root directory's first cluster.
pub fn waste_bytes(file_cluster_bytes: u64, dir_cluster_bytes: u64, file_bytes: u64) -> u64 {
    file_cluster_bytes
        .saturating_add(dir_cluster_bytes)
        .saturating_sub(file_bytes)
}

/// Waste in percent of the files' sizes; `None` when the files hold no bytes.
pub fn waste_percent(waste_bytes: u64, file_bytes: u64) -> Option<f64> {
    (file_bytes > 0).then(|| waste_bytes as f64 * 100.0 / file_bytes as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use std::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };

    #[test]
    fn waste_counts_directories_against_the_files_size() {
        // 10 files of 1000 bytes at 4 KiB, one subdirectory cluster.
        let w = waste_bytes(10 * 4096, 4096, 10_000);
        assert_eq!(w, 11 * 4096 - 10_000);
        assert_eq!(waste_percent(w, 10_000), Some(350.56));
        assert_eq!(waste_percent(0, 0), None);
        assert_eq!(waste_bytes(0, 0, 5), 0);
    }
}
