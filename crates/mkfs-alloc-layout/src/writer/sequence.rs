//! The write order of a format, once for every driver: the std writer
//! (1 MiB chunks through `BlockIo`, zeros skipped or handed to
//! `write_zeroes`) and the firmware's (one sector at a time through the
//! caller's sector buffer) run the same steps with the same bytes.
//!
//! A driver implements [`Out`] (how a region reaches the target); the
//! populated format's directories come in through [`Hooks`]. No allocation
//! here: every byte comes from a fill function writing into the driver's
//! buffer, whatever its size (a whole number of sectors).

use super::{exfat, fat, u64_of};
use crate::geometry::{ExfatGeometry, FatGeometry};
use crate::options::FsKind;
use crate::plan::Layout;
use mkfs_alloc_ondisk::exfat::upcase::{fill_compressed_table, UPCASE_TABLE_LEN};
use mkfs_alloc_ondisk::exfat::BOOT_REGION_SECTORS;
use mkfs_alloc_ondisk::fat::table as fat_table;
use mkfs_alloc_ondisk::fat::{BACKUP_BOOT_SECTOR, FSINFO_SECTOR};

/// How a driver puts the steps of a format on its target. Offsets and
/// lengths are bytes from the volume's start, whole sectors.
pub(crate) trait Out {
    /// Why a step failed.
    type Error;

    /// Step 1 of the write order: zero everything before the FAT (the old
    /// boot sectors and their backups) and, when the target may hold a
    /// file system, flush so the old one is gone before anything new.
    fn invalidate(&mut self, fat_offset: u64) -> Result<(), Self::Error>;

    /// A region of `len` bytes at `offset` whose first `content` bytes
    /// (rounded up to whole `sector`s) come from `fill(byte_offset_in_region,
    /// buffer)` on a zeroed buffer, and whose rest is zero. (`dyn`: one copy
    /// of each driver's loop, not one per region, keeps firmware small; a
    /// call per chunk or sector costs nothing measurable.)
    fn region(
        &mut self,
        offset: u64,
        len: u64,
        content: u64,
        sector: u64,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), Self::Error>;

    /// `len` zero bytes at `offset`.
    fn zero(&mut self, offset: u64, len: u64) -> Result<(), Self::Error>;

    /// Makes everything written so far durable before what follows.
    fn flush(&mut self) -> Result<(), Self::Error>;
}

/// What a populated format adds: clusters after the format's own, their
/// FAT entries, and the root directory written with its files.
pub(crate) trait Hooks<O: Out> {
    /// Clusters used beyond the format's own, contiguous.
    fn extra_clusters(&self) -> u64;
    /// FAT entry `index`, for an index at or after the root directory's
    /// first cluster; `None` for the format's own entry.
    fn fat_entry(&self, index: u64) -> Option<u32>;
    /// Writes the root directory (starting with `entries`) and the rest;
    /// `false` when there is nothing to add (the plain root is written).
    fn root(&mut self, entries: &[u8], out: &mut O) -> Result<bool, O::Error>;
}

/// A format with nothing added.
pub(crate) struct Plain;

impl<O: Out> Hooks<O> for Plain {
    fn extra_clusters(&self) -> u64 {
        0
    }
    fn fat_entry(&self, _: u64) -> Option<u32> {
        None
    }
    fn root(&mut self, _: &[u8], _: &mut O) -> Result<bool, O::Error> {
        Ok(false)
    }
}

/// A directory region: `entries` at its start, zeros after.
fn entries<O: Out>(
    out: &mut O,
    offset: u64,
    len: u64,
    e: &[u8],
    sector: u64,
) -> Result<(), O::Error> {
    out.region(offset, len, u64_of(e.len()), sector, &mut |at, buf| {
        if at == 0 {
            buf[..e.len()].copy_from_slice(e);
        }
    })
}

/// The exFAT steps, in the write order of the writer's module docs.
pub(crate) fn exfat<O: Out, H: Hooks<O>>(
    layout: &Layout,
    g: &ExfatGeometry,
    hooks: &mut H,
    out: &mut O,
) -> Result<(), O::Error> {
    let bps = u64::from(g.bps);
    let used = u64::from(g.used_clusters()) + hooks.extra_clusters();
    let region_len = BOOT_REGION_SECTORS * bps;
    // 1. Invalidate whatever was there: zero all sectors before the FAT.
    out.invalidate(layout.fat_offset)?;
    // 2. FAT, heap padding, bitmap, up-case table, root directory.
    let root_first = u64::from(g.root_cluster());
    {
        let h = &*hooks;
        out.region(
            layout.fat_offset,
            layout.fat_bytes,
            (2 + used) * 4,
            bps,
            &mut |at, buf| {
                fat_table::fill(FsKind::Exfat, at, buf, |i| {
                    let added = if i >= root_first {
                        h.fat_entry(i)
                    } else {
                        None
                    };
                    added.unwrap_or_else(|| exfat::fat_entry(g, i))
                })
            },
        )?;
    }
    let fat_end = layout.fat_offset + layout.fat_bytes;
    out.zero(fat_end, layout.data_offset - fat_end)?;
    let bitmap_len = u64::from(g.bitmap_clusters) * g.cluster;
    out.region(
        layout.cluster_offset(g.bitmap_cluster()),
        bitmap_len,
        used.div_ceil(8),
        bps,
        &mut |at, buf| {
            for (i, b) in (at..).zip(buf.iter_mut()) {
                let bit0 = i * 8;
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
    out.region(
        layout.cluster_offset(g.upcase_cluster()),
        u64::from(g.upcase_clusters) * g.cluster,
        u64_of(UPCASE_TABLE_LEN),
        bps,
        &mut |at, buf| fill_compressed_table(at, buf),
    )?;
    let root = exfat::root_entries(layout, g);
    if !hooks.root(root.as_bytes(), out)? {
        let root_len = u64::from(g.root_clusters) * g.cluster;
        let at = layout.cluster_offset(g.root_cluster());
        entries(out, at, root_len, root.as_bytes(), bps)?;
    }
    // Main boot sectors 1..11 (checksum sector included): unread without sector 0.
    let boot = |first: u64| {
        move |at: u64, buf: &mut [u8]| {
            exfat::boot_region_fill(layout, g, used, first + at, buf);
        }
    };
    out.region(bps, region_len - bps, region_len - bps, bps, &mut boot(bps))?;
    out.flush()?;
    // 3. The backup boot region, then sector 0 last.
    out.region(region_len, region_len, region_len, bps, &mut boot(0))?;
    out.region(0, bps, bps, bps, &mut boot(0))?;
    out.flush()
}

/// The FAT12/16/32 steps, in the write order of the writer's module docs.
pub(crate) fn fat<O: Out, H: Hooks<O>>(
    layout: &Layout,
    g: &FatGeometry,
    hooks: &mut H,
    out: &mut O,
) -> Result<(), O::Error> {
    let bps = u64::from(g.bps);
    let is32 = g.fs == FsKind::Fat32;
    let extra = hooks.extra_clusters();
    // 1. Invalidate: zero the reserved area (boot sector, FSInfo, backups).
    out.invalidate(layout.fat_offset)?;
    // 2. The FATs, then the root directory (cluster 2, or the fixed region).
    let bits = g.fs.entry_bits();
    // Entries 0 and 1 (and the FAT32 root's entry 2, and the content's).
    let head = if is32 {
        (3 + extra) * 4
    } else {
        ((2 + extra) * bits).div_ceil(8)
    };
    for i in 0..u64::from(layout.fat_count) {
        let h = &*hooks;
        let off = layout.fat_offset + i * layout.fat_bytes;
        out.region(off, layout.fat_bytes, head, bps, &mut |at, buf| {
            fat_table::fill(g.fs, at, buf, |n| {
                let added = if n >= 2 { h.fat_entry(n) } else { None };
                added.unwrap_or_else(|| fat::fat_entry(g.fs, layout.media(), n))
            })
        })?;
    }
    let root = fat::root_entries(layout);
    if !hooks.root(root.as_bytes(), out)? {
        if is32 {
            entries(out, layout.data_offset, g.cluster, root.as_bytes(), bps)?;
        } else {
            let (at, len) = (g.root_sector() * bps, g.root_sectors() * bps);
            entries(out, at, len, root.as_bytes(), bps)?;
        }
    }
    let mut boot = |_: u64, buf: &mut [u8]| fat::boot_sector(layout, g, buf);
    let mut info = |_: u64, buf: &mut [u8]| fat::fsinfo_sector(g, extra, buf);
    if is32 {
        // FSInfo, backup boot sector, backup FSInfo: no tool reads them
        // without a valid sector 0.
        out.region(FSINFO_SECTOR * bps, bps, bps, bps, &mut info)?;
        out.region(BACKUP_BOOT_SECTOR * bps, bps, bps, bps, &mut boot)?;
        out.region((BACKUP_BOOT_SECTOR + 1) * bps, bps, bps, bps, &mut info)?;
    }
    out.flush()?;
    // 3. Sector 0 last (FAT12/16 have no other boot-area sector).
    out.region(0, bps, bps, bps, &mut boot)?;
    out.flush()
}
