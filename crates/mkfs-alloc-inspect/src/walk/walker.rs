//! The bounded directory walk's state: visited clusters, counts, the file
//! list and the statistics it fills in.

use super::*;

/// Accumulates [`FileStats`] and warnings during a walk, within [`Limits`].
pub(crate) struct Walker<'o> {
    pub(crate) stats: FileStats,
    pub(crate) limits: &'o Limits,
    list: bool,
    cluster_size: u64,
    sizes: Vec<u64>,
    warnings: Vec<String>,
    suppressed: u64,
    chain_budget: u64,
    budget_warned: bool,
    /// Directory bytes that may still be read.
    pub(crate) dir_budget: u64,
    /// Clusters read as directory data (cycle and cross-link detection).
    pub(crate) dir_clusters: HashSet<u32>,
    stopped: bool,
    /// The root directory's clusters were counted in `dir_bytes` (it lives
    /// in the data region); its first one is then not waste.
    root_counted: bool,
    damage: Option<String>,
}

impl<'o> Walker<'o> {
    /// A walker for the clusters of `geo`; `sizes` are the cluster sizes to
    /// compare (the volume's own is added when missing).
    pub(crate) fn new(opts: &'o InspectOptions, geo: &Geo, mut sizes: Vec<u64>) -> Self {
        if !sizes.contains(&geo.cluster_size) {
            sizes.push(geo.cluster_size);
            sizes.sort_unstable();
        }
        let limits = &opts.limits;
        let chain_budget = limits
            .max_chain_steps
            .unwrap_or_else(|| 2 * u64::from(geo.cluster_count) + (1 << 20));
        Walker {
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
                entries: opts.list_files.then(Vec::new),
                ..FileStats::default()
            },
            limits,
            list: opts.list_files,
            cluster_size: geo.cluster_size,
            sizes,
            warnings: Vec::new(),
            suppressed: 0,
            chain_budget,
            budget_warned: false,
            dir_budget: limits.max_dir_bytes_total,
            dir_clusters: HashSet::new(),
            stopped: false,
            root_counted: false,
            damage: None,
        }
    }

    /// Records a warning (the first [`Limits::max_warnings`] are kept).
    pub(crate) fn warn(&mut self, w: String) {
        if self.warnings.len() < self.limits.max_warnings {
            self.warnings.push(w);
        } else {
            self.suppressed += 1;
        }
    }

    /// Records damage to the file system (a warning; the first one becomes
    /// the volume's error).
    pub(crate) fn damaged(&mut self, w: String) {
        if self.damage.is_none() {
            self.damage = Some(w.clone());
        }
        self.warn(w);
    }

    /// Marks the statistics as partial, with a reason.
    pub(crate) fn incomplete(&mut self, w: String) {
        self.stats.complete = false;
        self.warn(w);
    }

    /// True once a limit stopped the walk.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Counts one more entry against [`Limits::max_entries`]; false (and
    /// the walk stops) when over.
    fn count_entry(&mut self) -> bool {
        if self.stats.count + self.stats.dirs >= self.limits.max_entries {
            if !self.stopped {
                self.stopped = true;
                let max = self.limits.max_entries;
                self.incomplete(format!("stopped after {max} files and directories (limit)"));
            }
            return false;
        }
        true
    }

    /// Whether a subdirectory at `depth` may be queued (`pending` already
    /// queued); warns when not.
    pub(crate) fn may_descend(&mut self, path: &str, depth: u32, pending: usize) -> bool {
        if !self.count_entry() {
            return false;
        }
        self.stats.dirs += 1;
        if depth > self.limits.max_depth {
            self.incomplete(format!(
                "{path}: deeper than {} levels; not read",
                self.limits.max_depth
            ));
            return false;
        }
        if pending as u64 >= self.limits.max_pending_dirs {
            self.incomplete(format!(
                "{path}: more than {} directories waiting to be read; not read",
                self.limits.max_pending_dirs
            ));
            return false;
        }
        true
    }

    /// Records a directory whose entries take `used` bytes and whose
    /// clusters take `allocated` bytes now.
    pub(crate) fn add_dir(&mut self, used: u64, allocated: u64, root: bool) {
        self.root_counted |= root;
        self.stats.dir_bytes = self.stats.dir_bytes.saturating_add(allocated);
        let used = used.max(1);
        for (a, &c) in self.stats.at_cluster_sizes.iter_mut().zip(&self.sizes) {
            a.dir_bytes = a.dir_bytes.saturating_add(round_up(used, c));
        }
    }

    /// Records a file; checks its chain when it has one.
    pub(crate) fn add_file<D: BlockIo + ?Sized>(
        &mut self,
        d: &mut Disk<'_, '_, D>,
        path: &dyn Fn() -> String,
        size: u64,
        first: u32,
        contiguous: bool,
    ) -> Result<(), InspectError> {
        if !self.count_entry() {
            return Ok(());
        }
        let mut fragments = None;
        // The bytes counted: none for a length the volume cannot hold.
        let mut counted = size;
        if size > 0 {
            match check_extent(d.geo, size, first, contiguous) {
                Err(BadExtent::TooLong(why)) => {
                    counted = 0;
                    self.stats.complete = false;
                    self.damaged(format!("{}: {why}", path()));
                }
                Err(BadExtent::Misplaced(why)) => self.damaged(format!("{}: {why}", path())),
                Ok(_) if contiguous => fragments = Some(1),
                Ok(clusters) if clusters <= self.chain_budget => {
                    self.chain_budget -= clusters;
                    match file_fragments(d.r, d.fat, first, clusters)? {
                        Ok(f) => fragments = Some(f),
                        Err(p) => self.damaged(format!("{}: {p}", path())),
                    }
                }
                Ok(_) if !self.budget_warned => {
                    self.budget_warned = true;
                    self.warn(format!(
                        "{}: FAT chain checks stopped: the chains walked so far are longer than the volume (cross-linked files?)",
                        path()
                    ));
                }
                Ok(_) => {}
            }
        }
        let allocated = round_up(counted, self.cluster_size);
        let s = &mut self.stats;
        s.count += 1;
        s.total_bytes = s.total_bytes.saturating_add(counted);
        s.allocated_bytes = s.allocated_bytes.saturating_add(allocated);
        s.waste_bytes = s.allocated_bytes.saturating_sub(s.total_bytes);
        for (a, &c) in s.at_cluster_sizes.iter_mut().zip(&self.sizes) {
            a.allocated_bytes = a.allocated_bytes.saturating_add(round_up(counted, c));
        }
        if fragments.is_some_and(|f| f > 1) {
            self.stats.fragmented += 1;
        }
        if self.list {
            let max = self.limits.max_listed_files;
            if let Some(list) = self.stats.entries.as_mut() {
                if list.len() < max {
                    list.push(FileEntry {
                        path: path(),
                        size,
                        allocated_bytes: allocated,
                        fragments,
                    });
                }
            }
        }
        Ok(())
    }

    /// Records a directory that is not read because its entry is damaged
    /// (`why`): the statistics lack its contents.
    pub(crate) fn unread_dir(&mut self, path: &str, why: &str) {
        self.stats.complete = false;
        self.damaged(format!("{path}: {why}; not read"));
    }

    /// Warns about a damaged directory (the walk goes on without it).
    pub(crate) fn broken_dir(&mut self, path: &str, e: &InspectError) {
        self.stats.complete = false;
        self.damaged(format!("{}: {e}", display_path(path)));
    }

    /// Puts the statistics and the warnings into `vol`; the first damage
    /// found becomes its error (unless it has one).
    pub(crate) fn finish(mut self, vol: &mut Volume) {
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
        if self.suppressed > 0 {
            self.warnings
                .push(format!("... and {} more warnings", self.suppressed));
        }
        vol.files = Some(self.stats);
        vol.warnings.extend(self.warnings);
        if let Some(d) = self.damage {
            vol.error
                .get_or_insert(format!("the file system is damaged: {d}"));
        }
    }
}
