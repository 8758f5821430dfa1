//! The choices a tree makes (the `populate` feature): the cluster size it
//! should get on a planned volume, and the smallest medium that holds it.
//! Both work from a [`ScanResult`] taken beforehand
//! ([`scan_result`](crate::populate::scan_result) of a [`Tree`](crate::populate::Tree)):
//! nothing here reads a file.

use mkfs_alloc_advise::model::footprint_for;
use mkfs_alloc_advise::DEFAULT_MAX_WASTE_PERCENT;
use mkfs_alloc_advise::{recommend_for_format, AdviseError, Recommendation, ScanResult};
use mkfs_alloc_layout::{ClusterChoice, FormatOptions, Layout, Medium};

use crate::{FormatError, MediumOptions, MediumPlan};

/// The free space `--size auto` leaves by default, in percent of the
/// tree's footprint ([`MediumOptions::size_for`]).
pub const DEFAULT_SLACK_PERCENT: f64 = 10.0;

/// The cluster size advise recommends for `data` on the volume `auto`
/// (its file system as planned with `format`).
fn recommend(
    format: &FormatOptions,
    auto: &Layout,
    data: &ScanResult,
) -> Result<Recommendation, AdviseError> {
    let medium = Medium::partition(
        auto.volume_bytes(),
        auto.sector_size().get(),
        auto.partition_offset(),
    )?;
    let fixed = format.clone().fs(auto.fs());
    recommend_for_format(&fixed, &medium, data, DEFAULT_MAX_WASTE_PERCENT)
}

/// Whether a tree chooses the cluster size for `format` on `auto`: the
/// options leave it to the rule, and the SD layout does not decide it.
fn tree_chooses(format: &FormatOptions, auto: &Layout) -> bool {
    format.cluster_choice() == ClusterChoice::Auto && auto.sd().is_none()
}

/// The layout `medium` gets for `format`, `data` choosing the cluster size
/// where it can; `None` when the options do not fit this medium.
fn layout_for(format: &FormatOptions, medium: &Medium, data: &ScanResult) -> Option<Layout> {
    let auto = mkfs_alloc_layout::plan(format, medium).ok()?;
    if !tree_chooses(format, &auto) {
        return Some(auto);
    }
    match recommend(format, &auto, data) {
        Ok(r) => {
            let chosen = format
                .clone()
                .cluster(ClusterChoice::FromData(r.cluster_size));
            mkfs_alloc_layout::plan(&chosen, medium).ok()
        }
        Err(_) => Some(auto),
    }
}

impl MediumPlan {
    /// The cluster size `data` should get on this plan's volume (its file
    /// system as planned), with the reason; `None` when the options fix the
    /// cluster size or the SD layout decides it.
    pub fn recommend_cluster(
        &self,
        data: &ScanResult,
    ) -> Option<Result<Recommendation, AdviseError>> {
        tree_chooses(&self.format, &self.layout)
            .then(|| recommend(&self.format, &self.layout, data))
    }

    /// This plan with its file system planned again with `cluster` bytes per
    /// cluster, chosen for the data it is to hold
    /// ([`ClusterChoice::FromData`]); the table stays as planned.
    ///
    /// # Errors
    ///
    /// [`FormatError::Plan`] when the volume cannot have that cluster size.
    pub fn with_data_cluster(mut self, cluster: u64) -> Result<MediumPlan, FormatError> {
        self.format = self.format.cluster(ClusterChoice::FromData(cluster));
        let medium = Medium::partition(
            self.table.partition_len(),
            self.layout.sector_size().get(),
            self.table.partition_start(),
        )?;
        self.layout = mkfs_alloc_layout::plan(&self.format, &medium)?;
        self.table = self.table.holding(self.layout.fs());
        Ok(self)
    }

    /// This plan with the cluster size `data` chooses
    /// ([`MediumPlan::recommend_cluster`]); unchanged when the options fix
    /// it or no recommendation can be made.
    ///
    /// # Errors
    ///
    /// As [`MediumPlan::with_data_cluster`].
    pub fn fit_cluster(self, data: &ScanResult) -> Result<MediumPlan, FormatError> {
        match self.recommend_cluster(data) {
            Some(Ok(r)) => self.with_data_cluster(r.cluster_size),
            _ => Ok(self),
        }
    }
}

impl MediumOptions {
    /// The smallest medium (a multiple of the alignment, 1 MiB by default)
    /// in `block_size`-byte blocks whose volume holds `data` with
    /// `slack_percent` of its footprint free, `data` choosing the cluster
    /// size as [`MediumPlan::fit_cluster`] does. The partition table's share
    /// of the medium is worked out once ([`MediumOptions::placement`]); each
    /// step plans only the file system.
    ///
    /// # Errors
    ///
    /// As [`MediumOptions::placement`]; [`FormatError::NoSizeHolds`] when no
    /// size does.
    pub fn size_for(
        &self,
        data: &ScanResult,
        block_size: u32,
        slack_percent: f64,
    ) -> Result<u64, FormatError> {
        let unit = self
            .format
            .given_align()
            .unwrap_or(1 << 20)
            .max(u64::from(block_size));
        let placement = self.placement(block_size)?;
        let fits = |units: u64| -> bool {
            let Ok(medium) = placement.volume(units * unit) else {
                return false;
            };
            layout_for(&self.format, &medium, data).is_some_and(|l| {
                let need = footprint_for(&l, data).new_clusters();
                let free = u64::from(l.cluster_count().get() - l.used_clusters().get());
                let with_slack = (need as f64 * (1.0 + slack_percent / 100.0)).ceil() as u64;
                with_slack <= free
            })
        };
        // Grow until it fits, then search down.
        let mut hi = 1u64;
        while !fits(hi) {
            hi *= 2;
            if hi > (1u64 << 60) / unit {
                return Err(FormatError::NoSizeHolds);
            }
        }
        let mut lo = hi / 2; // does not fit (or 0)
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        // The cluster choice may make fits() non-monotonic near the edge:
        // the smallest size found that fits, which the search guarantees.
        Ok(hi * unit)
    }
}
