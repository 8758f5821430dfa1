//! A tree planned into a plan's volume, written with it (the `populate`
//! feature).

use mkfs_alloc_blockio::{CloneRefusal, CopyCounts, CopyMode, ImageFile};
use mkfs_alloc_layout::WriteError;
use mkfs_alloc_populate::{plan_tree, Populated, TimePolicy, Tree};

use crate::{FormatError, MediumPlan};

impl MediumPlan {
    /// Checks `tree` against this plan's volume (every name, the space it
    /// needs) and allocates its clusters; the plan then holds it, so the
    /// tree can only be written into the volume it was planned for
    /// ([`MediumPlan::format`] writes both). Nothing is written.
    ///
    /// # Errors
    ///
    /// [`FormatError::Populate`]: names the file system cannot store (every
    /// one listed), entries that cannot be read, a tree that does not fit.
    pub fn populate(mut self, tree: Tree, time: TimePolicy) -> Result<MediumPlan, FormatError> {
        self.content = Some(plan_tree(tree, &self.layout, time)?);
        Ok(self)
    }

    /// The tree as planned, if the plan holds one ([`MediumPlan::populate`]):
    /// its entries, its clusters, its footprint.
    pub fn content(&self) -> Option<&Populated> {
        self.content.as_ref()
    }

    /// File data of the plan's tree goes into `image` (the target this plan
    /// is then written to) through `image`'s
    /// [`FileCopier`](crate::blockio::FileCopier) in `mode`: the whole host
    /// blocks of every host file are cloned where the image's file system
    /// shares extents, else copied by the kernel ([`CopyMode::Auto`]); the
    /// rest through the writer. [`CopyMode::Copy`], or a plan without a
    /// tree, changes nothing.
    ///
    /// # Errors
    ///
    /// [`FormatError::Write`] with an I/O error when the image's file
    /// system cannot be asked for its block size.
    pub fn copy_into(&mut self, image: &ImageFile, mode: CopyMode) -> Result<(), FormatError> {
        let start = self.table.partition_start();
        match self.content.as_mut() {
            Some(content) => copy_content(content, start, image, mode),
            None => Ok(()),
        }
    }

    /// Before anything is written, with [`CopyMode::Reflink`]: whether
    /// every file's data can be cloned into the image given to
    /// [`MediumPlan::copy_into`] (its data region and clusters on the
    /// host's blocks; one file of each source device cloned into a
    /// temporary file beside the image). A plan without a tree passes.
    ///
    /// # Errors
    ///
    /// The [`CloneRefusal`] that says why not.
    pub fn check_clones(&mut self) -> Result<(), CloneRefusal> {
        self.content
            .as_mut()
            .map_or(Ok(()), Populated::check_clones)
    }

    /// Bytes of file data cloned, copied by the kernel and written by hand
    /// through the copier; `None` without [`MediumPlan::copy_into`].
    pub fn copy_counts(&self) -> Option<CopyCounts> {
        self.content.as_ref().and_then(Populated::copy_counts)
    }
}

/// `content`'s file data through `image`'s copier in `mode` (the volume
/// starting `volume_offset` bytes into the image); [`CopyMode::Copy`]
/// changes nothing.
fn copy_content(
    content: &mut Populated,
    volume_offset: u64,
    image: &ImageFile,
    mode: CopyMode,
) -> Result<(), FormatError> {
    if mode != CopyMode::Copy {
        let copier = image.copier(mode).map_err(WriteError::Io)?;
        content.copy_through(copier, volume_offset);
    }
    Ok(())
}

/// A batch target's part of the tree, before anything is written
/// ([`BatchTarget::before_content`](crate::batch::BatchTarget::before_content)):
/// what [`MediumPlan::copy_into`] and [`MediumPlan::check_clones`] do for a
/// plan holding its tree, for the part the batch writes.
#[derive(Debug)]
pub struct TargetContent<'a> {
    populated: &'a mut Populated,
    volume_offset: u64,
}

impl<'a> TargetContent<'a> {
    /// The part `populated` of a volume starting `volume_offset` bytes
    /// into its target.
    pub(crate) fn new(populated: &'a mut Populated, volume_offset: u64) -> Self {
        TargetContent {
            populated,
            volume_offset,
        }
    }

    /// The tree as planned into this target's volume.
    pub fn populated(&self) -> &Populated {
        self.populated
    }

    /// File data goes into `image` (the opened target) through its copier
    /// in `mode`, as [`MediumPlan::copy_into`].
    ///
    /// # Errors
    ///
    /// As [`MediumPlan::copy_into`].
    pub fn copy_into(&mut self, image: &ImageFile, mode: CopyMode) -> Result<(), FormatError> {
        copy_content(self.populated, self.volume_offset, image, mode)
    }

    /// Whether every file's data can be cloned into the image given to
    /// [`TargetContent::copy_into`], as [`MediumPlan::check_clones`].
    ///
    /// # Errors
    ///
    /// The [`CloneRefusal`] that says why not.
    pub fn check_clones(&mut self) -> Result<(), CloneRefusal> {
        self.populated.check_clones()
    }
}
