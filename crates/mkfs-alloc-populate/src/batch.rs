//! A tree for many volumes (a batch of targets): planned once per distinct
//! allocation ([`plan_batch`]), its data read once ([`crate::feed`]).

use mkfs_alloc_advise::model::RootDir;
use mkfs_alloc_advise::Footprint;
use mkfs_alloc_layout::Layout;

use crate::plan::{plan_parts, root_place, PopulateError, Populated};
use crate::time::TimePolicy;
use crate::tree::Tree;

/// What planning a tree into a volume decides besides the tree's own
/// cluster numbers ([`plan_parts`](crate::plan::plan_parts)).
pub(crate) struct Parts {
    pub(crate) root_first: u32,
    pub(crate) root_clusters: u32,
    pub(crate) root_region: Option<(u64, u64)>,
    pub(crate) end: u32,
    pub(crate) run_ends: Vec<u32>,
    pub(crate) footprint: Footprint,
}

impl Parts {
    pub(crate) fn into_populated(self, tree: Tree, layout: &Layout, time: TimePolicy) -> Populated {
        Populated {
            layout: layout.clone(),
            tree,
            fs: layout.fs(),
            cluster: layout.cluster_size().bytes(),
            data_offset: layout.data_offset(),
            root_first: self.root_first,
            root_clusters: self.root_clusters,
            root_region: self.root_region,
            end: self.end,
            run_ends: self.run_ends,
            time,
            footprint: self.footprint,
            direct: None,
            feed: None,
        }
    }
}

impl Populated {
    /// This tree, allocated cluster for cluster as it is here, in the
    /// volume `layout` describes: a batch plans a tree once for targets of
    /// slightly different sizes. `None` unless everything the allocation
    /// depends on is the same there (the file system, the cluster size,
    /// the data region's offset, the root directory's place and its
    /// entries at format time) and the tree fits. Source files given in
    /// memory are not in the copy (it reads through a feed,
    /// [`Populated::read_from`]).
    pub fn for_layout(&self, layout: &Layout) -> Option<Populated> {
        let same = layout.fs() == self.fs
            && layout.cluster_size().bytes() == self.cluster
            && layout.data_offset() == self.data_offset
            && root_place(layout) == (self.root_first, self.root_region)
            && RootDir::of(layout) == RootDir::of(&self.layout);
        // Clusters 2.. hold the allocation up to `end`.
        let fits = u64::from(self.end) <= u64::from(layout.cluster_count()) + 2;
        (same && fits).then(|| Populated {
            layout: layout.clone(),
            tree: self.tree.clone_without_readers(),
            fs: self.fs,
            cluster: self.cluster,
            data_offset: self.data_offset,
            root_first: self.root_first,
            root_clusters: self.root_clusters,
            root_region: self.root_region,
            end: self.end,
            run_ends: self.run_ends.clone(),
            time: self.time,
            footprint: self.footprint,
            direct: None,
            feed: None,
        })
    }

    /// File data from `reader` (a batch's one reading of the tree,
    /// [`crate::feed`]) instead of the source files.
    pub fn read_from(&mut self, reader: crate::feed::FeedReader) {
        self.feed = Some(reader);
    }
}

/// A tree planned for a batch ([`plan_batch`]).
#[derive(Debug)]
pub struct BatchTree {
    /// The tree itself, with the readers of files given in memory: what
    /// [`FeedSource::run`](crate::feed::FeedSource::run) reads.
    pub source: Tree,
    /// Each volume's plan (`None` where no layout was given).
    pub plans: Vec<Option<Result<Populated, PopulateError>>>,
    /// How many times the tree was planned (once per distinct allocation).
    pub plannings: usize,
}

/// Plans `tree` into every volume of `layouts` (`None`: a target without a
/// volume, passed over): planned once, then once more only for a volume
/// where [`Populated::for_layout`] cannot reuse an earlier plan (another
/// file system, cluster size, data region offset or root directory, or too
/// small for it). A volume the tree does not fit (or whose file system
/// cannot store its names) gets its error; the others are planned.
pub fn plan_batch(mut tree: Tree, layouts: &[Option<&Layout>], time: TimePolicy) -> BatchTree {
    let mut made: Vec<Populated> = Vec::new();
    let mut plans = Vec::with_capacity(layouts.len());
    for layout in layouts {
        let Some(layout) = layout else {
            plans.push(None);
            continue;
        };
        if let Some(p) = made.iter().find_map(|m| m.for_layout(layout)) {
            plans.push(Some(Ok(p)));
            continue;
        }
        let planned = plan_parts(&mut tree, layout)
            .map(|parts| parts.into_populated(tree.clone_without_readers(), layout, time));
        match planned {
            Ok(p) => {
                let mine = p.for_layout(layout);
                made.push(p);
                plans.push(mine.map(Ok));
            }
            Err(e) => plans.push(Some(Err(e))),
        }
    }
    BatchTree {
        source: tree,
        plans,
        plannings: made.len(),
    }
}
