//! The writer: [`Layout`] → blocks, through [`BlockIo`].
//!
//! Memory stays bounded: FAT and bitmap are generated in chunks of
//! [`CHUNK`] bytes, whatever the volume size; zero regions are handed to
//! [`BlockIo::write_zeroes`] (hole punching, `ZERO_RANGE`, `BLKZEROOUT`) or,
//! on a target that already reads as zero, skipped.
//!
//! Write order (so an interrupted format never leaves a half-valid file system):
//! 1. unless the target reads as zero: zero everything before the FAT — the
//!    old boot sector(s) and their backups — and, when the target may hold a
//!    file system ([`Prior::Unknown`]), flush, so the old file system is gone
//!    before anything new exists; no flush when the caller knows no file
//!    system is left ([`Prior::NoFileSystem`]) or the target reads as zero;
//! 2. FAT(s), allocation bitmap, up-case table, root directory, and the
//!    boot sectors no tool reads without sector 0 (exFAT main boot sectors
//!    1..11; FAT32 FSInfo, backup boot sector and backup FSInfo); flush, so
//!    that no cache can persist what follows before them;
//! 3. exFAT: the backup boot region (fsck.exfat restores a volume from it
//!    when sector 0 is bad, so it must not exist before step 2 is durable);
//!    then sector 0 (the main boot sector, which makes the volume
//!    recognisable); flush.
//!
//! A crash before step 3 leaves a volume with no main boot sector and (exFAT)
//! no backup boot region: no tool recognises it. That is two flushes on a
//! target that held no file system, three on one that may have.

use crate::exfat;
use crate::fat;
use crate::options::FsKind;
use crate::plan::{Geometry, Layout};
use mkfs_alloc_blockio::{BlockIo, IoError, Zeroed};
use mkfs_alloc_ondisk::fat::table as fat_table;

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
}

impl<D: BlockIo + ?Sized> Sink<'_, D> {
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.dev.write_blocks(offset / self.bs, data)?;
        self.report.bytes_written += data.len() as u64;
        self.advance(data.len() as u64);
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

    /// Writes a region of `len` bytes at `offset` whose first `content` bytes
    /// come from `fill(byte_offset_in_region, buffer)` and whose rest is zero.
    /// `content` is rounded up to whole sectors.
    fn region(
        &mut self,
        offset: u64,
        len: u64,
        content: u64,
        sector: u64,
        mut fill: impl FnMut(u64, &mut [u8]),
    ) -> Result<(), IoError> {
        let content = content.div_ceil(sector).saturating_mul(sector).min(len);
        let mut buf = std::mem::take(&mut self.buf);
        let mut at = 0;
        let result = (|| {
            while at < content {
                let n = (content - at).min(CHUNK as u64) as usize;
                let chunk = &mut buf[..n];
                chunk.fill(0);
                fill(at, chunk);
                self.write(offset + at, chunk)?;
                at += n as u64;
            }
            self.zero(offset + content, len - content)
        })();
        self.buf = buf;
        result
    }

    /// Writes a directory region: `entries` at its start, zeros after.
    fn entries(
        &mut self,
        offset: u64,
        len: u64,
        entries: &[u8],
        sector: u64,
    ) -> Result<(), IoError> {
        self.region(offset, len, entries.len() as u64, sector, |at, buf| {
            if at == 0 {
                buf[..entries.len()].copy_from_slice(entries);
            }
        })
    }

    /// Step 1 of the write order: zero everything before the FAT (the old
    /// boot sectors and their backups) and, when the target may hold a file
    /// system, flush so the old one is gone before anything new.
    fn invalidate(&mut self, fat_offset: u64) -> Result<(), IoError> {
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
        self.zero(zeroed, fat_offset - zeroed)?;
        if self.fresh || self.prior != Prior::Unknown {
            Ok(())
        } else {
            self.flush()
        }
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.dev.flush()
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
    check_block_size(bs, layout.sector_size)?;
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
        .regions
        .iter()
        .filter(|r| r.written)
        .map(|r| r.len)
        .sum::<u64>()
        + boot_sectors * u64::from(layout.sector_size)
        + content
            .as_ref()
            .map_or(0, |c| c.clusters() * layout.cluster_size);
    let untouched = layout
        .regions
        .iter()
        .filter(|r| !r.written)
        .map(|r| r.len)
        .sum::<u64>()
        .saturating_sub(
            content
                .as_ref()
                .map_or(0, |c| c.clusters() * layout.cluster_size),
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
    match &layout.geometry {
        Geometry::Exfat(g) => write_exfat(layout, g, content, &mut sink)?,
        Geometry::Fat(g) => write_fat(layout, g, content, &mut sink)?,
    }
    Ok(sink.report)
}

fn write_exfat<D: BlockIo + ?Sized>(
    layout: &Layout,
    g: &exfat::Geometry,
    content: Option<&mut dyn Content>,
    s: &mut Sink<'_, D>,
) -> Result<(), WriteError> {
    let bps = u64::from(g.bps);
    let extra = content.as_ref().map_or(0, |c| c.clusters());
    let used = u64::from(g.used_clusters()) + extra;
    let boot = exfat::boot_region_used(layout, g, used);
    let region_len = boot.len() as u64;
    // 1. Invalidate whatever was there: zero all sectors before the FAT.
    s.invalidate(layout.fat_offset)?;
    // 2. FAT, heap padding, bitmap, up-case table, root directory.
    let fat_content = (2 + used) * 4;
    let root_first = u64::from(g.root_cluster());
    s.region(
        layout.fat_offset,
        layout.fat_bytes,
        fat_content,
        bps,
        |at, buf| {
            fat_table::fill(FsKind::Exfat, at, buf, |i| match &content {
                Some(c) if i >= root_first => c.fat_entry(i),
                _ => exfat::fat_entry(g, i),
            })
        },
    )?;
    let fat_end = layout.fat_offset + layout.fat_bytes;
    s.zero(fat_end, layout.data_offset - fat_end)?;
    let bitmap_len = u64::from(g.bitmap_clusters) * g.cluster;
    s.region(
        layout.cluster_offset(g.bitmap_cluster()),
        bitmap_len,
        used.div_ceil(8),
        bps,
        |at, buf| {
            for (i, b) in buf.iter_mut().enumerate() {
                let bit0 = (at + i as u64) * 8;
                *b = if bit0 + 8 <= used {
                    0xFF
                } else if bit0 < used {
                    (1u8 << (used - bit0)) - 1
                } else {
                    0
                };
            }
        },
    )?;
    let table = mkfs_alloc_ondisk::exfat::upcase::compressed_table();
    let upcase_len = u64::from(g.upcase_clusters) * g.cluster;
    s.region(
        layout.cluster_offset(g.upcase_cluster()),
        upcase_len,
        table.len() as u64,
        bps,
        |at, buf| {
            let from = (at as usize).min(table.len());
            let n = (table.len() - from).min(buf.len());
            buf[..n].copy_from_slice(&table[from..from + n]);
        },
    )?;
    let root = exfat::root_entries(layout, g);
    match content {
        Some(c) => c.write(&root, s)?,
        None => {
            let root_len = u64::from(g.root_clusters) * g.cluster;
            s.entries(
                layout.cluster_offset(g.root_cluster()),
                root_len,
                &root,
                bps,
            )?;
        }
    }
    // Main boot sectors 1..11 (checksum sector included): unread without sector 0.
    s.write(bps, &boot[bps as usize..])?;
    s.flush()?;
    // 3. The backup boot region, then sector 0 last.
    s.write(region_len, &boot)?;
    s.write(0, &boot[..bps as usize])?;
    Ok(s.flush()?)
}

fn write_fat<D: BlockIo + ?Sized>(
    layout: &Layout,
    g: &fat::Geometry,
    content: Option<&mut dyn Content>,
    s: &mut Sink<'_, D>,
) -> Result<(), WriteError> {
    let bps = u64::from(g.bps);
    let is32 = g.fs == FsKind::Fat32;
    let extra = content.as_ref().map_or(0, |c| c.clusters());
    // 1. Invalidate: zero the reserved area (boot sector, FSInfo, backups).
    s.invalidate(layout.fat_offset)?;
    // 2. Both FATs, then the root directory (cluster 2, or the fixed region).
    let bits = g.fs.entry_bits();
    // Entries 0 and 1 (and the FAT32 root's entry 2, and the content's).
    let head = if is32 {
        (3 + extra) * 4
    } else {
        ((2 + extra) * bits).div_ceil(8)
    };
    for i in 0..u64::from(layout.fat_count) {
        let off = layout.fat_offset + i * layout.fat_bytes;
        s.region(off, layout.fat_bytes, head, bps, |at, buf| {
            fat_table::fill(g.fs, at, buf, |n| match &content {
                Some(c) if n >= 2 => c.fat_entry(n),
                _ => fat::fat_entry(g.fs, n),
            })
        })?;
    }
    let root = fat::root_entries(layout);
    match content {
        Some(c) => c.write(&root, s)?,
        None if is32 => s.entries(layout.data_offset, g.cluster, &root, bps)?,
        None => s.entries(g.root_sector() * bps, g.root_sectors() * bps, &root, bps)?,
    }
    let boot = fat::boot_sector(layout, g);
    if is32 {
        // FSInfo, backup boot sector, backup FSInfo: no tool reads them
        // without a valid sector 0.
        let info = fat::fsinfo_sector_used(g, extra);
        s.write(mkfs_alloc_ondisk::fat::FSINFO_SECTOR * bps, &info)?;
        s.write(mkfs_alloc_ondisk::fat::BACKUP_BOOT_SECTOR * bps, &boot)?;
        s.write(
            (mkfs_alloc_ondisk::fat::BACKUP_BOOT_SECTOR + 1) * bps,
            &info,
        )?;
    }
    s.flush()?;
    // 3. Sector 0 last (FAT12/16 have no other boot-area sector).
    s.write(0, &boot)?;
    Ok(s.flush()?)
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

    #[test]
    fn fat12_and_fat16_start_with_media_and_end_of_chain() {
        use crate::fat::fat_entry;
        use crate::FsKind;
        let mut b = [0u8; 6];
        fill(FsKind::Fat12, 0, &mut b, |n| fat_entry(FsKind::Fat12, n));
        assert_eq!(b, [0xF8, 0xFF, 0xFF, 0, 0, 0]);
        fill(FsKind::Fat16, 0, &mut b, |n| fat_entry(FsKind::Fat16, n));
        assert_eq!(b, [0xF8, 0xFF, 0xFF, 0xFF, 0, 0]);
    }
}
