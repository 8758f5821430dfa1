//! The std writer: [`Layout`] → blocks through [`BlockIo`], in chunks of
//! [`CHUNK`] bytes (see the parent module for the write order).

use super::sequence::{self, Hooks, Out};
use crate::options::FsKind;
use crate::plan::{Geometry, Layout};
use mkfs_alloc_blockio::{BlockIo, IoError, Zeroed};
use std::boxed::Box;
use std::vec;
use std::vec::Vec;

/// Size of the generation buffer: the writer's memory bound.
pub const CHUNK: usize = 1 << 20;

/// Why a layout could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The target's block size does not divide the file system's sector size.
    #[error("the target's block size ({device} bytes) is larger than, or does not divide, the file system's sector size ({sector} bytes); valid: a sector size of {device} bytes or a multiple of it")]
    BlockSize {
        /// Target block size.
        device: u32,
        /// File system sector size.
        sector: u32,
    },
    /// The target is smaller than the planned volume.
    #[error("the target holds {device} bytes but the volume needs {volume}")]
    TooSmall {
        /// Target bytes.
        device: u64,
        /// Volume bytes.
        volume: u64,
    },
    /// An I/O operation failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The [`Content`] failed (a source file that cannot be read, or changed
    /// during the copy). The volume has no main boot sector.
    #[error(transparent)]
    Content(Box<dyn std::error::Error + Send + Sync>),
}

/// Files and directories written into the new volume as part of the format
/// (the `mkfs-alloc-populate` crate implements it).
///
/// The content owns every cluster from the root directory's first cluster
/// on: the format's root cluster(s) and `clusters()` more right after the
/// format's own, all contiguous. The writer marks them used (bitmap, FSInfo,
/// PercentInUse), asks [`Content::fat_entry`] for their FAT entries, and
/// calls [`Content::write`] after the FAT, bitmap and up-case table and
/// before any boot sector, so the write order stays crash-safe and a
/// failing content leaves no boot sector.
pub trait Content {
    /// Clusters allocated beyond the format's own (root-directory growth
    /// included), contiguous from the first free cluster.
    fn clusters(&self) -> u64;
    /// FAT entry `index` for an index at or after the root directory's first
    /// cluster (the root chain and the content's chains; 0 for clusters of
    /// exFAT allocations marked NoFatChain).
    fn fat_entry(&self, index: u64) -> u32;
    /// Writes the root directory (starting with `system_entries`, the
    /// entries the format puts there) and everything else, through `out`.
    ///
    /// # Errors
    ///
    /// [`WriteError::Content`] when a source cannot be read or changes during
    /// the copy; [`WriteError::Io`] from `out`.
    fn write(&mut self, system_entries: &[u8], out: &mut dyn ContentSink)
        -> Result<(), WriteError>;
}

/// Where [`Content::write`] writes: byte offsets from the volume start,
/// multiples of [`ContentSink::block_size`].
pub trait ContentSink {
    /// The target's block size in bytes.
    fn block_size(&self) -> u64;
    /// True if the target read as zero before the format (a fresh sparse
    /// image): zeros need not be written.
    fn fresh(&self) -> bool;
    /// Writes `data` (whole blocks) at `offset`.
    ///
    /// # Errors
    ///
    /// The target's [`IoError`].
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError>;
    /// Zeroes `len` bytes (whole blocks) at `offset`; on a fresh target this
    /// only counts them.
    ///
    /// # Errors
    ///
    /// The target's [`IoError`].
    fn zero_at(&mut self, offset: u64, len: u64) -> Result<(), IoError>;
    /// Records `len` bytes (whole blocks) at `offset` that the content put
    /// into the target itself, not through this sink (file data cloned or
    /// copied by the host into an image file): counted in
    /// [`WriteReport::bytes_placed`] and in the progress. The content must
    /// have done so before returning from [`Content::write`], so that the
    /// writer's flush covers them.
    fn placed(&mut self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}

/// What a write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteReport {
    /// Bytes of data written.
    pub bytes_written: u64,
    /// Bytes zeroed through `write_zeroes`.
    pub bytes_zeroed: u64,
    /// Bytes of zeros not written because the target already read as zero.
    pub bytes_skipped: u64,
    /// Bytes the quick format left untouched (free clusters, tail).
    pub bytes_untouched: u64,
    /// Bytes of file data the content put into the target itself
    /// ([`ContentSink::placed`]: cloned or copied by the host).
    pub bytes_placed: u64,
}

/// Progress callback: `(bytes_done, bytes_total)` of the regions to write.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// What the caller knows about the target before [`write_volume_to`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prior {
    /// It may hold a file system: the invalidated boot area is flushed
    /// before anything new is written.
    Unknown,
    /// The caller has probed the whole target and found no file system
    /// signature, or wiped and flushed those it found: the invalidation
    /// needs no flush of its own.
    NoFileSystem,
    /// As [`Prior::NoFileSystem`], and these blocks of the whole medium
    /// were zeroed ([`mkfs_alloc_blockio::zero_blocks`] is the only way to
    /// get a [`Zeroed`]: `mkfs_alloc_partition::wipe_for_table` zeroes the
    /// volume's first MiB): what of the volume's start they cover, measured
    /// from [`Layout::partition_offset`], is not zeroed again.
    Wiped(Zeroed),
}

struct Sink<'a, D: BlockIo + ?Sized> {
    dev: &'a mut D,
    bs: u64,
    fresh: bool,
    prior: Prior,
    /// Where the volume starts on its medium (a [`Prior::Wiped`] run is
    /// counted on the medium).
    partition_offset: u64,
    report: WriteReport,
    done: u64,
    total: u64,
    progress: Progress<'a>,
    buf: Vec<u8>,
}

impl<D: BlockIo + ?Sized> ContentSink for Sink<'_, D> {
    fn block_size(&self) -> u64 {
        self.bs
    }
    fn fresh(&self) -> bool {
        self.fresh
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.write(offset, data)
    }
    fn zero_at(&mut self, offset: u64, len: u64) -> Result<(), IoError> {
        self.zero(offset, len)
    }
    fn placed(&mut self, _offset: u64, len: u64) {
        self.report.bytes_placed += len;
        self.advance(len);
    }
}

impl<D: BlockIo + ?Sized> Sink<'_, D> {
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.dev.write_blocks(offset / self.bs, data)?;
        let len = super::u64_of(data.len());
        self.report.bytes_written += len;
        self.advance(len);
        Ok(())
    }

    fn zero(&mut self, offset: u64, len: u64) -> Result<(), IoError> {
        if len == 0 {
            return Ok(());
        }
        if self.fresh {
            self.report.bytes_skipped += len;
        } else {
            self.dev.write_zeroes(offset / self.bs, len / self.bs)?;
            self.report.bytes_zeroed += len;
        }
        self.advance(len);
        Ok(())
    }

    fn advance(&mut self, n: u64) {
        self.done += n;
        (self.progress)(self.done, self.total);
    }
}

impl<D: BlockIo + ?Sized> Out for Sink<'_, D> {
    type Error = WriteError;

    fn region(
        &mut self,
        offset: u64,
        len: u64,
        content: u64,
        sector: u64,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), WriteError> {
        let content = content.div_ceil(sector).saturating_mul(sector).min(len);
        let mut buf = std::mem::take(&mut self.buf);
        let mut at = 0;
        let result = (|| {
            while at < content {
                let n = usize::try_from(content - at).map_or(CHUNK, |n| n.min(CHUNK));
                let chunk = &mut buf[..n];
                chunk.fill(0);
                fill(at, chunk);
                self.write(offset + at, chunk)?;
                at += super::u64_of(n);
            }
            self.zero(offset + content, len - content)
        })();
        self.buf = buf;
        Ok(result?)
    }

    fn zero(&mut self, offset: u64, len: u64) -> Result<(), WriteError> {
        Ok(Sink::zero(self, offset, len)?)
    }

    fn invalidate(&mut self, fat_offset: u64) -> Result<(), WriteError> {
        let zeroed = match self.prior {
            Prior::Wiped(z) => {
                let covered = z.bytes();
                if u64::from(z.block_size()) != self.bs || !covered.contains(&self.partition_offset)
                {
                    0
                } else {
                    (covered.end - self.partition_offset).min(fat_offset) / self.bs * self.bs
                }
            }
            Prior::Unknown | Prior::NoFileSystem => 0,
        };
        if zeroed > 0 {
            // Already zero: counted as skipped, not written again.
            self.report.bytes_skipped += zeroed;
            self.advance(zeroed);
        }
        Sink::zero(self, zeroed, fat_offset - zeroed)?;
        if self.fresh || self.prior != Prior::Unknown {
            Ok(())
        } else {
            Out::flush(self)
        }
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        Ok(self.dev.flush()?)
    }
}

/// A populated format's [`Content`] as the write sequence's hooks.
struct ContentHooks<'c>(&'c mut dyn Content);

impl<D: BlockIo + ?Sized> Hooks<Sink<'_, D>> for ContentHooks<'_> {
    fn extra_clusters(&self) -> u64 {
        self.0.clusters()
    }
    fn fat_entry(&self, index: u64) -> Option<u32> {
        Some(self.0.fat_entry(index))
    }
    fn root(&mut self, entries: &[u8], out: &mut Sink<'_, D>) -> Result<bool, WriteError> {
        self.0.write(entries, out).map(|()| true)
    }
}

/// Writes a planned volume to `dev`, whose block 0 is the volume's first byte
/// (wrap a whole medium in a `Slice` to format a partition). The target may
/// hold a file system ([`Prior::Unknown`]).
///
/// # Errors
///
/// Before the first write, [`WriteError::BlockSize`] or
/// [`WriteError::TooSmall`] for a target that cannot hold the layout;
/// after it, [`WriteError::Io`] (no main boot sector was written unless
/// the format completed).
pub fn write_volume<D: BlockIo + ?Sized>(
    layout: &Layout,
    dev: &mut D,
    progress: Progress<'_>,
) -> Result<WriteReport, WriteError> {
    write_volume_to(layout, dev, Prior::Unknown, progress)
}

/// [`write_volume`] with what the caller knows about the target: with
/// [`Prior::NoFileSystem`] the invalidation of the old boot area is not
/// flushed on its own (see the module's write order).
///
/// # Errors
///
/// As [`write_volume`].
pub fn write_volume_to<D: BlockIo + ?Sized>(
    layout: &Layout,
    dev: &mut D,
    prior: Prior,
    progress: Progress<'_>,
) -> Result<WriteReport, WriteError> {
    write_volume_with(layout, None, dev, prior, progress)
}

/// [`write_volume_to`] with files and directories written into the new
/// volume before its boot sectors (see [`Content`]).
///
/// # Errors
///
/// As [`write_volume`], and [`WriteError::Content`] from `content`.
pub fn write_volume_with<D: BlockIo + ?Sized>(
    layout: &Layout,
    content: Option<&mut dyn Content>,
    dev: &mut D,
    prior: Prior,
    progress: Progress<'_>,
) -> Result<WriteReport, WriteError> {
    let bs = dev.block_size();
    check_block_size(bs, layout.sector_size.get())?;
    let device = dev.num_blocks().saturating_mul(u64::from(bs));
    if device < layout.volume_bytes {
        return Err(WriteError::TooSmall {
            device,
            volume: layout.volume_bytes,
        });
    }
    // The boot sectors are zeroed with their region, then written: count both.
    let boot_sectors = match layout.geometry {
        Geometry::Exfat(_) => 2 * mkfs_alloc_ondisk::exfat::BOOT_REGION_SECTORS,
        Geometry::Fat(g) if g.fs == FsKind::Fat32 => 4,
        Geometry::Fat(_) => 1,
    };
    let total = layout
        .regions()
        .iter()
        .filter(|r| r.written)
        .map(|r| r.len)
        .sum::<u64>()
        + boot_sectors * layout.sector_size.bytes()
        + content
            .as_ref()
            .map_or(0, |c| c.clusters() * layout.cluster_size.bytes());
    let untouched = layout
        .regions()
        .iter()
        .filter(|r| !r.written)
        .map(|r| r.len)
        .sum::<u64>()
        .saturating_sub(
            content
                .as_ref()
                .map_or(0, |c| c.clusters() * layout.cluster_size.bytes()),
        );
    let fresh = dev.reads_as_zero();
    let mut sink = Sink {
        dev,
        bs: u64::from(bs),
        fresh,
        prior,
        partition_offset: layout.partition_offset,
        report: WriteReport {
            bytes_untouched: untouched,
            ..WriteReport::default()
        },
        done: 0,
        total,
        progress,
        buf: vec![0u8; CHUNK],
    };
    match (&layout.geometry, content) {
        (Geometry::Exfat(g), None) => sequence::exfat(layout, g, &mut sequence::Plain, &mut sink)?,
        (Geometry::Exfat(g), Some(c)) => {
            sequence::exfat(layout, g, &mut ContentHooks(c), &mut sink)?;
        }
        (Geometry::Fat(g), None) => sequence::fat(layout, g, &mut sequence::Plain, &mut sink)?,
        (Geometry::Fat(g), Some(c)) => sequence::fat(layout, g, &mut ContentHooks(c), &mut sink)?,
    }
    Ok(sink.report)
}

/// Checks that a target of `block_size`-byte blocks can hold a file system
/// of `sector_size`-byte sectors (the block size divides the sector size).
/// The planners and the writer all check with this.
///
/// # Errors
///
/// [`WriteError::BlockSize`] when the block size is 0, larger than the
/// sector size or does not divide it.
pub fn check_block_size(block_size: u32, sector_size: u32) -> Result<(), WriteError> {
    if block_size == 0 || block_size > sector_size || sector_size % block_size != 0 {
        return Err(WriteError::BlockSize {
            device: block_size,
            sector: sector_size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use mkfs_alloc_ondisk::fat::table::fill;
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
    fn fat12_and_fat16_start_with_media_and_end_of_chain() {
        use crate::writer::fat::fat_entry;
        use crate::FsKind;
        let mut b = [0u8; 6];
        fill(FsKind::Fat12, 0, &mut b, |n| {
            fat_entry(FsKind::Fat12, 0xF8, n)
        });
        assert_eq!(b, [0xF8, 0xFF, 0xFF, 0, 0, 0]);
        fill(FsKind::Fat16, 0, &mut b, |n| {
            fat_entry(FsKind::Fat16, 0xF8, n)
        });
        assert_eq!(b, [0xF8, 0xFF, 0xFF, 0xFF, 0, 0]);
    }
}
