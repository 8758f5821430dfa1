//! File data straight into an image file: the whole host blocks at the
//! start of every host file go through a [`FileCopier`] (cloned where the
//! image's file system shares extents, else copied by the kernel), the
//! rest (the file's tail beyond its last whole host block, the cluster's
//! padding) through the writer. The bytes are the same either
//! way; only how they arrive differs. A clone is a data write like any
//! other: it happens before the writer's flush and its boot sector.

use crate::plan::Populated;
use crate::source::Opened;
use crate::tree::cursor::Cursor;
use crate::tree::Src;
use crate::write::{content_err, Out, SourceError};
use mkfs_alloc_blockio::{CloneRefusal, CopyCounts, CopyError, FileCopier};
use mkfs_alloc_layout::WriteError;
use std::fs::File;

/// The copier and where the volume starts in the image file.
#[derive(Debug)]
pub(crate) struct Direct {
    copier: FileCopier,
    volume_offset: u64,
}

impl Populated {
    /// Sends the whole host blocks of every host file through `copier`
    /// (made by the `ImageFile` this tree is then written to) instead of
    /// the writer; `volume_offset` is the volume's byte offset in that
    /// image (the partition start). Files given in memory, and files
    /// smaller than one host block, go through the writer.
    pub fn copy_through(&mut self, copier: FileCopier, volume_offset: u64) {
        self.direct = Some(Direct {
            copier,
            volume_offset,
        });
    }

    /// Bytes of file data that went through the copier, by way; `None`
    /// without [`Populated::copy_through`] (every byte through the writer).
    pub fn copy_counts(&self) -> Option<CopyCounts> {
        self.direct.as_ref().map(|d| d.copier.counts())
    }

    /// Whether every host file's data can be cloned into the image, before
    /// anything is written (`--copy reflink`): the data region and the
    /// clusters lie on the image file system's blocks, and one file of each
    /// source device (the first of at least one host block) clones into a
    /// temporary file beside the image.
    ///
    /// # Errors
    ///
    /// [`CloneRefusal`] with the reason; also when no copier was given
    /// ([`CloneRefusal::Unsupported`]).
    pub fn check_clones(&mut self) -> Result<(), CloneRefusal> {
        let Some(d) = self.direct.as_ref() else {
            return Err(CloneRefusal::Unsupported);
        };
        let hb = d.copier.host_block_size();
        d.copier
            .check_alignment(d.volume_offset + self.data_offset, self.cluster)?;
        let mut seen: Vec<u64> = Vec::new();
        let mut cursor = Cursor::new();
        for k in 0..self.tree.nodes.len() as u32 {
            let n = self.tree.nodes[k as usize];
            let host = matches!(n.src(), Src::HostDir(_) | Src::HostPath(_));
            let dev = self.tree.file_ids[k as usize].dev;
            if n.is_dir() || !host || n.size < hb || seen.contains(&dev) {
                continue;
            }
            seen.push(dev);
            let name = self.tree.display_path(k);
            let opened = self
                .open_source(k, &mut cursor)
                .map_err(|e| CloneRefusal::Refused {
                    source_name: name.clone(),
                    reason: e.to_string(),
                })?;
            if let (Opened::Host { file, .. }, Some(d)) = (&opened, self.direct.as_mut()) {
                d.copier.probe(file, &name)?;
            }
        }
        Ok(())
    }

    /// Puts the whole host blocks at the start of node `k`'s host file
    /// (`size` bytes, its data at volume offset `start`) through the copier
    /// and moves `out` past them; returns the bytes put (0 without a
    /// copier, or for a file of less than one host block).
    pub(crate) fn copy_head(
        &mut self,
        k: u32,
        file: &File,
        start: u64,
        size: u64,
        out: &mut Out<'_>,
    ) -> Result<u64, WriteError> {
        let Some(d) = self.direct.as_mut() else {
            return Ok(0);
        };
        // Whole host blocks that are also whole blocks of the target.
        let unit = d.copier.host_block_size().max(out.bs);
        let head = size / unit * unit;
        if head == 0 {
            return Ok(0);
        }
        let at = d.volume_offset + start;
        d.copier
            .copy(file, 0, at, head, out.fresh)
            .map_err(|e| match e {
                CopyError::Source { source, .. } => content_err(SourceError::Io {
                    path: self.tree.display_path(k),
                    source,
                }),
                CopyError::SourceEnded { at } => content_err(SourceError::Changed {
                    path: self.tree.display_path(k),
                    expected: size,
                    found: at,
                }),
                CopyError::Target(io) => WriteError::Io(io),
                other => content_err(SourceError::Io {
                    path: self.tree.display_path(k),
                    source: std::io::Error::other(other.to_string()),
                }),
            })?;
        out.placed(start, head)?;
        Ok(head)
    }
}
