//! A medium plan with a tree to write into its volume (the `populate`
//! feature).

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_layout::WriteReport;
use mkfs_alloc_populate::{plan_tree, Populated, TimePolicy, Tree};

use crate::write::{write_medium, Found};
use crate::{FormatError, MediumPlan};

impl MediumPlan {
    /// Checks `tree` against this plan's volume (every name, the space it
    /// needs) and allocates its clusters; the result owns this plan, so the
    /// tree can only be written into the volume it was planned for. Nothing
    /// is written.
    ///
    /// # Errors
    ///
    /// [`FormatError::Populate`]: names the file system cannot store (every
    /// one listed), entries that cannot be read, a tree that does not fit.
    pub fn populate(self, tree: Tree, time: TimePolicy) -> Result<PopulatedPlan, FormatError> {
        let content = plan_tree(tree, &self.layout, time)?;
        Ok(PopulatedPlan {
            plan: self,
            content,
        })
    }
}

/// A [`MediumPlan`] and the tree planned for its volume
/// ([`MediumPlan::populate`]).
#[derive(Debug)]
pub struct PopulatedPlan {
    plan: MediumPlan,
    content: Populated,
}

impl PopulatedPlan {
    /// The medium's plan.
    pub fn plan(&self) -> &MediumPlan {
        &self.plan
    }

    /// The tree as planned: its entries, its clusters, its footprint.
    pub fn content(&self) -> &Populated {
        &self.content
    }

    /// Formats `dev` as [`MediumPlan::format`] does, writing the tree's
    /// directories and files into the volume before its boot sector.
    ///
    /// # Errors
    ///
    /// As [`MediumPlan::format`]; [`FormatError::Write`] with a
    /// `WriteError::Content` when a source file cannot be read or changes
    /// during the copy (the volume then has no main boot sector).
    pub fn format<D: BlockIo>(
        &mut self,
        dev: &mut D,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<WriteReport, FormatError> {
        let found = Found::probe(dev)?;
        self.write(dev, &found, progress)
    }

    /// [`PopulatedPlan::format`] with the signatures the caller has already
    /// found on this target.
    ///
    /// # Errors
    ///
    /// As [`PopulatedPlan::format`], and [`FormatError::NotPlannedTarget`]
    /// when `found` is of another target.
    pub fn write<D: BlockIo>(
        &mut self,
        dev: &mut D,
        found: &Found,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<WriteReport, FormatError> {
        let content = &mut self.content;
        write_medium(&self.plan, dev, found, |part, prior| {
            Ok(content.write_to(part, prior, progress)?)
        })
    }
}
