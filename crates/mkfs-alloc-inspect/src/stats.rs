//! [`FileStats`] from the volume model's pass: a [`Visit`] that counts the
//! files and directories as [`crate::model`] reads them, so that the
//! statistics and the findings come from one walk of the tree.

use mkfs_alloc_layout::waste::waste_bytes;

use crate::model::{DirRead, EntrySet, Finding, Visit, VolumeModel};
use crate::report::{AtClusterSize, FileEntry, FileStats, Volume};
use crate::walk::round_up;

/// Accumulates [`FileStats`] from entry sets and directories read.
pub(crate) struct Stats {
    stats: FileStats,
    cluster_size: u64,
    cluster_count: u64,
    sizes: Vec<u64>,
    max_listed: usize,
    /// The root directory's clusters were counted in `dir_bytes` (it lives
    /// in the data region); its first one is then not waste.
    root_counted: bool,
}

impl Stats {
    /// Statistics of a volume of `cluster_count` clusters of `cluster_size`
    /// bytes compared with `sizes` (the volume's own is added when
    /// missing); every file listed when `list` (at most `max_listed`).
    pub(crate) fn new(
        (cluster_size, cluster_count): (u64, u64),
        mut sizes: Vec<u64>,
        list: bool,
        max_listed: usize,
    ) -> Self {
        if !sizes.contains(&cluster_size) {
            sizes.push(cluster_size);
            sizes.sort_unstable();
        }
        Stats {
            stats: FileStats {
                complete: true,
                at_cluster_sizes: sizes
                    .iter()
                    .map(|&c| AtClusterSize {
                        cluster_size: c,
                        allocated_bytes: 0,
                        waste_bytes: 0,
                        dir_bytes: 0,
                    })
                    .collect(),
                entries: list.then(Vec::new),
                ..FileStats::default()
            },
            cluster_size,
            cluster_count,
            sizes,
            max_listed,
            root_counted: false,
        }
    }

    /// Puts the statistics into `vol`, with the waste at every cluster
    /// size; the first damage the model found in the tree becomes the
    /// volume's error (unless it has one).
    pub(crate) fn finish(mut self, model: &VolumeModel, vol: &mut Volume) {
        // One definition with `advise` (mkfs_alloc_layout::waste): files'
        // and directories' clusters, less the root directory's first
        // cluster (the format allocates it), minus the files' sizes.
        let total = self.stats.total_bytes;
        let root_first = |c: u64| if self.root_counted { c } else { 0 };
        self.stats.waste_bytes = waste_bytes(
            self.stats.allocated_bytes,
            self.stats
                .dir_bytes
                .saturating_sub(root_first(self.cluster_size)),
            total,
        );
        for a in &mut self.stats.at_cluster_sizes {
            let dirs = a.dir_bytes.saturating_sub(root_first(a.cluster_size));
            a.waste_bytes = waste_bytes(a.allocated_bytes, dirs, total);
        }
        if model.findings.iter().any(|f| {
            matches!(
                f,
                Finding::Incomplete { .. } | Finding::UnreadableDirectory { .. }
            )
        }) {
            self.stats.complete = false;
        }
        vol.files = Some(self.stats);
        if let Some(d) = model.findings.iter().find(|f| tree_damage(f)) {
            vol.error
                .get_or_insert(format!("the file system is damaged: {d}"));
        }
    }
}

/// Damage in the directory tree or its chains: what makes the statistics
/// of the files doubtful.
fn tree_damage(f: &Finding) -> bool {
    matches!(
        f,
        Finding::FirstCluster { .. }
            | Finding::BrokenChain { .. }
            | Finding::CrossLinked { .. }
            | Finding::ChainTooLong { .. }
            | Finding::ChainTooShort { .. }
            | Finding::SetChecksum { .. }
            | Finding::DamagedEntry { .. }
            | Finding::UnreadableDirectory { .. }
    )
}

impl Visit for Stats {
    fn entry(&mut self, set: &EntrySet) {
        let s = &mut self.stats;
        if set.is_dir {
            s.dirs += 1;
            // A directory with a length whose clusters are not where it
            // says is not read (its contents are missing), and one longer
            // than the volume is read only as far as its chain goes.
            if set.size > 0 && set.clusters == 0
                || set.size.div_ceil(self.cluster_size) > self.cluster_count
            {
                s.complete = false;
            }
            return;
        }
        // A length the volume cannot hold is not counted.
        let size = if set.size.div_ceil(self.cluster_size) > self.cluster_count {
            s.complete = false;
            0
        } else {
            set.size
        };
        let allocated = round_up(size, self.cluster_size);
        s.count += 1;
        s.total_bytes = s.total_bytes.saturating_add(size);
        s.allocated_bytes = s.allocated_bytes.saturating_add(allocated);
        for (a, &c) in s.at_cluster_sizes.iter_mut().zip(&self.sizes) {
            a.allocated_bytes = a.allocated_bytes.saturating_add(round_up(size, c));
        }
        let fragments = (size > 0 && set.clusters > 0).then_some(set.fragments);
        if fragments.is_some_and(|f| f > 1) {
            s.fragmented += 1;
        }
        if let Some(list) = s.entries.as_mut() {
            if list.len() < self.max_listed {
                list.push(FileEntry {
                    path: set.path.clone(),
                    size: set.size,
                    allocated_bytes: allocated,
                    fragments,
                });
            }
        }
    }

    fn dir(&mut self, d: &DirRead) {
        let Some(allocated) = d.allocated else {
            return;
        };
        self.root_counted |= d.root;
        let s = &mut self.stats;
        s.dir_bytes = s.dir_bytes.saturating_add(allocated);
        let used = (d.entries * 32).max(1);
        for (a, &c) in s.at_cluster_sizes.iter_mut().zip(&self.sizes) {
            a.dir_bytes = a.dir_bytes.saturating_add(round_up(used, c));
        }
    }
}

/// A [`Visit`] that keeps nothing (the model alone).
pub(crate) struct Nothing;

impl Visit for Nothing {
    fn entry(&mut self, _set: &EntrySet) {}
}
