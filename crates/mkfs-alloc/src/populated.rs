//! A medium plan with a tree to write into its volume (the `populate`
//! feature).

use mkfs_alloc_blockio::{BlockIo, CloneRefusal, CopyCounts, CopyMode, ImageFile};
use mkfs_alloc_layout::{WriteError, WriteReport};
use mkfs_alloc_populate::{plan_tree, Populated, TimePolicy, Tree};

use crate::write::{write_medium, Found};
use crate::{ExtentMap, FormatError, MediumPlan};

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

    /// What a format of this plan writes or relies on being zero on the
    /// target where `found` was found: [`MediumPlan::extents`] and the
    /// tree's clusters.
    pub fn extents(&self, found: &Found) -> ExtentMap {
        ExtentMap::new(&self.plan, found, self.content.new_clusters())
    }

    /// File data goes into `image` (the target this plan is then written
    /// to) through `image`'s [`FileCopier`](crate::blockio::FileCopier) in
    /// `mode`: the whole host blocks of every host file are cloned where
    /// the image's file system shares extents, else copied by the kernel
    /// ([`CopyMode::Auto`]); the rest through the writer. [`CopyMode::Copy`]
    /// changes nothing (every byte through the writer, as without this call).
    ///
    /// # Errors
    ///
    /// [`FormatError::Write`] with an I/O error when the image's file
    /// system cannot be asked for its block size.
    pub fn copy_into(&mut self, image: &ImageFile, mode: CopyMode) -> Result<(), FormatError> {
        if mode != CopyMode::Copy {
            let copier = image.copier(mode).map_err(WriteError::Io)?;
            let start = self.plan.table().partition_start();
            self.content.copy_through(copier, start);
        }
        Ok(())
    }

    /// Before anything is written, with [`CopyMode::Reflink`]: whether
    /// every file's data can be cloned into the image given to
    /// [`PopulatedPlan::copy_into`] (its data region and clusters on the
    /// host's blocks; one file of each source device cloned into a
    /// temporary file beside the image).
    ///
    /// # Errors
    ///
    /// The [`CloneRefusal`] that says why not.
    pub fn check_clones(&mut self) -> Result<(), CloneRefusal> {
        self.content.check_clones()
    }

    /// Bytes of file data cloned, copied by the kernel and written by hand
    /// through the copier; `None` without [`PopulatedPlan::copy_into`].
    pub fn copy_counts(&self) -> Option<CopyCounts> {
        self.content.copy_counts()
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
