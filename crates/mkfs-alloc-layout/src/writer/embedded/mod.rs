//! Formatting from firmware: no `std`, no allocator, one sector of memory.
//!
//! A microcontroller formats its SD card (or any block device) with the
//! same planner and the same write sequence as the std writer, so the card
//! gets the bytes `mkfs-alloc` writes on a PC for the same options (with or
//! without one MBR partition). Memory: the caller's buffer of one sector
//! (512 bytes upward), a few hundred bytes of stack for the plan, nothing
//! else; the exFAT up-case table streams from constant runs in flash.
//!
//! ```
//! use mkfs_alloc_layout::embedded::{format, SectorDevice, Table};
//! use mkfs_alloc_layout::{FormatOptions, FsKind, Timestamp};
//!
//! /// A RAM disk standing in for a card.
//! struct Ram(Vec<u8>);
//! impl SectorDevice for Ram {
//!     type Error = core::convert::Infallible;
//!     fn sector_size(&self) -> u32 { 512 }
//!     fn sector_count(&mut self) -> Result<u64, Self::Error> { Ok(self.0.len() as u64 / 512) }
//!     fn write_sector(&mut self, lba: u64, data: &[u8]) -> Result<(), Self::Error> {
//!         let at = lba as usize * 512;
//!         self.0[at..at + 512].copy_from_slice(data);
//!         Ok(())
//!     }
//! }
//!
//! let mut card = Ram(vec![0; 64 << 20]);
//! let mut sector = [0u8; 512];
//! let opts = FormatOptions::new()
//!     .fs(FsKind::Exfat)
//!     .label("CARD")
//!     .pinned(0x1234_ABCD, Timestamp { secs: 1_700_000_000, nanos: 0 });
//! let done = format(&mut card, &mut sector, &opts, Table::Mbr)?;
//! assert_eq!(done.fs, FsKind::Exfat);
//! assert_eq!(&card.0[510..512], &[0x55, 0xAA]); // the MBR
//! # Ok::<(), mkfs_alloc_layout::embedded::Error<core::convert::Infallible>>(())
//! ```
//!
//! The order is the std path's: the old table area, the volume's first MiB
//! and the medium's last MiB are zeroed and flushed; then the volume (its
//! boot sector last, see the writer's write order); then the MBR. Every
//! check happens before the first write: a rejected option writes nothing.

use core::fmt;

use mkfs_alloc_ondisk::mbr::{partition_type, Mbr, MBR_TYPE_ESP};
use mkfs_alloc_ondisk::rng::SplitMix64;
use mkfs_alloc_ondisk::MAX_ALIGN;
use zerocopy::IntoBytes;

use crate::error::PlanError;
use crate::geometry::{ClusterSize, Clusters, SectorSize, Sectors};
use crate::options::{FormatOptions, FsKind, Medium};
use crate::plan::{plan, table_seed, Geometry, Layout};
use crate::writer::sequence::{self, Out};

/// A block device for formatting from firmware: whole sectors, each written
/// from the caller's buffer. The formatter never reads.
pub trait SectorDevice {
    /// Why an operation failed.
    type Error;
    /// Bytes per sector: 512, 1024, 2048 or 4096 (SD cards: 512).
    fn sector_size(&self) -> u32;
    /// Sectors on the device.
    ///
    /// # Errors
    ///
    /// The device's own.
    fn sector_count(&mut self) -> Result<u64, Self::Error>;
    /// Writes `data` (exactly one sector) to sector `lba`.
    ///
    /// # Errors
    ///
    /// The device's own.
    fn write_sector(&mut self, lba: u64, data: &[u8]) -> Result<(), Self::Error>;
    /// Makes what was written so far durable before anything written after
    /// (a cache flush; the write order depends on it). The default does
    /// nothing: right for a device without a write cache.
    ///
    /// # Errors
    ///
    /// The device's own.
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The partitioning of the medium (FatFs: `FM_SFD` or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Table {
    /// No partition table: the volume is the whole medium ("super-floppy").
    None,
    /// An MBR with one partition over the medium, at the alignment of the
    /// options (default 1 MiB), or where the SD layout puts it.
    Mbr,
}

/// Why a firmware format failed. Every variant but [`Error::Device`] is
/// returned before anything is written.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error<E> {
    /// The options do not fit the medium (the planner's error: the value,
    /// the limit and the valid range).
    Plan(PlanError),
    /// The MBR cannot hold this medium or this partition.
    Table(TableError),
    /// The buffer is smaller than one sector.
    Buffer {
        /// Its length.
        len: usize,
        /// The sector size.
        sector: u32,
    },
    /// The device failed (writing has begun: the volume has no main boot
    /// sector unless the format completed).
    Device(E),
}

/// Why the MBR cannot be planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableError {
    /// The partition alignment is not a power of two from the sector size
    /// up to [`MAX_ALIGN`].
    Align {
        /// The alignment asked for, in bytes.
        align: u64,
        /// The sector size.
        sector: u32,
    },
    /// An MBR addresses at most 2^32 sectors.
    TooLarge {
        /// The medium's sectors.
        sectors: u64,
    },
    /// No room for a partition of 1 MiB after the aligned start.
    TooSmall {
        /// The medium's bytes.
        medium: u64,
        /// The bytes a partition needs: its start plus 1 MiB.
        min: u64,
    },
}

impl<E> From<PlanError> for Error<E> {
    fn from(e: PlanError) -> Self {
        Error::Plan(e)
    }
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::units::Size;
        match *self {
            TableError::Align { align, sector } => write!(
                f,
                "partition alignment {align} bytes is invalid; valid: a power of two from the sector size ({sector} B) up to {}",
                Size(MAX_ALIGN)
            ),
            TableError::TooLarge { sectors } => write!(
                f,
                "an MBR addresses at most 4294967296 sectors; the medium has {sectors}; valid: no partition table (Table::None)"
            ),
            TableError::TooSmall { medium, min } => write!(
                f,
                "a medium of {} has no room for a partition of 1 MiB after the aligned start; valid: at least {}, or no partition table (Table::None)",
                Size(medium),
                Size(min)
            ),
        }
    }
}

impl<E: fmt::Debug> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Plan(e) => write!(f, "{e}"),
            Error::Table(e) => write!(f, "{e}"),
            Error::Buffer { len, sector } => write!(
                f,
                "the sector buffer holds {len} bytes; valid: at least one sector ({sector} bytes)"
            ),
            Error::Device(e) => write!(f, "the device failed: {e:?}"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for Error<E> {}

/// What a format made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Formatted {
    /// The file system.
    pub fs: FsKind,
    /// Cluster size.
    pub cluster_size: ClusterSize,
    /// Clusters in the data region / cluster heap.
    pub cluster_count: Clusters,
    /// Byte offset of the volume on the medium (0 without a table).
    pub volume_offset: u64,
    /// Bytes of the volume.
    pub volume_bytes: u64,
    /// The MBR's disk signature, if one was written.
    pub disk_signature: Option<u32>,
}

/// The MBR of a planned medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MbrPart {
    start: u32,
    sectors: u32,
    os_type: u8,
    geometry: (u8, u8),
    signature: u32,
}

/// A medium planned for firmware: the volume and its table.
#[derive(Debug, Clone)]
pub struct MediumLayout {
    layout: Layout,
    mbr: Option<MbrPart>,
    sectors: u64,
}

impl MediumLayout {
    /// The volume's plan.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// Bytes zeroed before the volume is written: the volume's first MiB and
/// the medium's last MiB (as the std path's wipe).
const WIPE: u64 = 1 << 20;
/// Smallest partition in an MBR: 1 MiB (the partition crate's minimum).
const MIN_PARTITION: u64 = 1 << 20;
/// Default partition alignment: 1 MiB (the partition crate's default).
const DEFAULT_PARTITION_ALIGN: u64 = 1 << 20;

/// Plans a medium of `sectors` sectors of `sector_size` bytes: every check
/// of a format, nothing written.
///
/// # Errors
///
/// [`Error::Plan`] (the planner's) or [`Error::Table`] (the MBR's).
pub fn plan_medium<E>(
    opts: &FormatOptions,
    table: Table,
    sector_size: u32,
    sectors: u64,
) -> Result<MediumLayout, Error<E>> {
    crate::plan::check_sector_size(sector_size)?;
    let sector = SectorSize::checked(sector_size);
    let bs = sector.bytes();
    let medium_bytes = sectors.saturating_mul(bs);
    // The volume's bytes, its first sector and the MBR's placement.
    let (volume, first, placed) = match table {
        Table::None => (medium_bytes, 0, None),
        #[cfg(not(feature = "sd"))]
        Table::Mbr if opts.sd => {
            return Err(PlanError::NotBuilt("the SD layout (feature \"sd\")").into())
        }
        #[cfg(feature = "sd")]
        Table::Mbr if opts.sd => {
            let (sd, _) = crate::geometry::sd::card_layout(
                opts,
                medium_bytes / crate::geometry::sd::SD_SECTOR,
            )
            .map_err(PlanError::from)?;
            let start = sd.part_start;
            (
                (sectors - start) * bs,
                start,
                Some((start, sd.mbr_type, (sd.heads, sd.sectors_per_track))),
            )
        }
        Table::Mbr => {
            let align = opts.align.unwrap_or(DEFAULT_PARTITION_ALIGN);
            if !align.is_power_of_two() || align < bs || align > MAX_ALIGN {
                return Err(Error::Table(TableError::Align {
                    align,
                    sector: sector_size,
                }));
            }
            if sectors > 1 << 32 {
                return Err(Error::Table(TableError::TooLarge { sectors }));
            }
            let start = align / bs;
            if sectors.saturating_sub(start) * bs < MIN_PARTITION {
                return Err(Error::Table(TableError::TooSmall {
                    medium: medium_bytes,
                    min: align + MIN_PARTITION,
                }));
            }
            ((sectors - start) * bs, start, Some((start, 0, (255, 63))))
        }
    };
    let medium = Medium::at_sector(volume, sector, Sectors(first));
    let layout = plan(opts, &medium)?;
    let mbr = match placed {
        None => None,
        Some((start, sd_type, geometry)) => {
            let len = layout.volume_bytes() / bs;
            let os_type = match (sd_type, opts.esp) {
                (_, true) => MBR_TYPE_ESP,
                (0, false) => partition_type(layout.fs(), start, len),
                (t, false) => t,
            };
            // The checks above keep MBR media within 2^32 sectors, so
            // neither saturates.
            let lba = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
            Some(MbrPart {
                start: lba(start),
                sectors: lba(len),
                os_type,
                geometry,
                signature: SplitMix64::new(table_seed(layout.serial())).next_nonzero_u32(),
            })
        }
    };
    Ok(MediumLayout {
        layout,
        mbr,
        sectors,
    })
}

/// Formats `dev` with `opts`: plans (every check first), then writes
/// through `buf` (at least one sector) one sector at a time.
///
/// Without `std` the options must give the serial and the time
/// ([`FormatOptions::pinned`], or `serial` and `timestamp`): firmware has
/// no clock or entropy of its own here (an RTC, the card's CID or a
/// hardware random number generator give them).
///
/// # Errors
///
/// Before any write: [`Error::Plan`], [`Error::Table`], [`Error::Buffer`],
/// or [`Error::Device`] from [`SectorDevice::sector_count`]; after:
/// [`Error::Device`].
pub fn format<D: SectorDevice>(
    dev: &mut D,
    buf: &mut [u8],
    opts: &FormatOptions,
    table: Table,
) -> Result<Formatted, Error<D::Error>> {
    let sector = dev.sector_size();
    let sectors = dev.sector_count().map_err(Error::Device)?;
    let medium = plan_medium(opts, table, sector, sectors)?;
    let len = buf.len();
    let Some(buf) = usize::try_from(sector).ok().and_then(|n| buf.get_mut(..n)) else {
        return Err(Error::Buffer { len, sector });
    };
    let mut io = SectorIo { dev, buf };
    write_medium(&medium, &mut io).map_err(Error::Device)
}

/// A device and a buffer of one sector, as the medium writer's target (the
/// embedded-sdmmc adapter brings its own).
pub(crate) trait SectorTarget {
    /// Why an operation failed.
    type Error;
    /// The buffer (one sector).
    fn buf(&mut self) -> &mut [u8];
    /// Writes the buffer to sector `lba`.
    fn write(&mut self, lba: u64) -> Result<(), Self::Error>;
    /// Flushes the device.
    fn flush(&mut self) -> Result<(), Self::Error>;
}

struct SectorIo<'a, D> {
    dev: &'a mut D,
    buf: &'a mut [u8],
}

impl<D: SectorDevice> SectorTarget for SectorIo<'_, D> {
    type Error = D::Error;
    fn buf(&mut self) -> &mut [u8] {
        self.buf
    }
    fn write(&mut self, lba: u64) -> Result<(), D::Error> {
        self.dev.write_sector(lba, self.buf)
    }
    fn flush(&mut self) -> Result<(), D::Error> {
        self.dev.flush()
    }
}

/// Writes a planned medium: wipe, volume, MBR.
pub(crate) fn write_medium<T: SectorTarget>(
    m: &MediumLayout,
    t: &mut T,
) -> Result<Formatted, T::Error> {
    let l = &m.layout;
    let bs = l.sector_size().bytes();
    let start = l.partition_offset() / bs;
    let volume = l.volume_bytes() / bs;
    // The std path's wipe: what lies before the partition (the old table),
    // the volume's first MiB and the medium's last MiB; then a flush, so the
    // old file system is gone before anything new exists.
    let wipe = WIPE.div_ceil(bs);
    let head = start + wipe.min(volume);
    zero_sectors(t, 0, head)?;
    let tail = m.sectors.saturating_sub(wipe).max(head);
    zero_sectors(t, tail, m.sectors)?;
    t.flush()?;
    let mut out = SectorOut {
        t,
        base: start,
        bps: bs,
        wiped: wipe.min(volume) * bs,
    };
    match l.geometry() {
        Geometry::Exfat(g) => sequence::exfat(l, g, &mut sequence::Plain, &mut out)?,
        Geometry::Fat(g) => sequence::fat(l, g, &mut sequence::Plain, &mut out)?,
    }
    let t = out.t;
    if let Some(p) = m.mbr {
        let mbr = Mbr::one_partition(p.signature, p.os_type, p.start, p.sectors, p.geometry);
        let buf = t.buf();
        buf.fill(0);
        buf[..core::mem::size_of::<Mbr>()].copy_from_slice(mbr.as_bytes());
        t.write(0)?;
        t.flush()?;
    }
    Ok(Formatted {
        fs: l.fs(),
        cluster_size: l.cluster_size(),
        cluster_count: l.cluster_count(),
        volume_offset: l.partition_offset(),
        volume_bytes: l.volume_bytes(),
        disk_signature: m.mbr.map(|p| p.signature),
    })
}

/// Zeroes sectors `from..to`.
fn zero_sectors<T: SectorTarget>(t: &mut T, from: u64, to: u64) -> Result<(), T::Error> {
    t.buf().fill(0);
    for lba in from..to {
        t.write(lba)?;
    }
    Ok(())
}

/// The write sequence's target, one sector at a time: volume offsets from
/// sector `base`; the first `wiped` bytes of the volume are already zero.
struct SectorOut<'a, T> {
    t: &'a mut T,
    base: u64,
    bps: u64,
    wiped: u64,
}

impl<T: SectorTarget> Out for SectorOut<'_, T> {
    type Error = T::Error;

    fn invalidate(&mut self, fat_offset: u64) -> Result<(), T::Error> {
        // The wipe zeroed and flushed the volume's start already.
        let from = self.wiped.min(fat_offset);
        self.zero(from, fat_offset - from)
    }

    fn region(
        &mut self,
        offset: u64,
        len: u64,
        content: u64,
        sector: u64,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), T::Error> {
        let content = content.div_ceil(sector).saturating_mul(sector).min(len);
        let mut at = 0;
        while at < content {
            let buf = self.t.buf();
            buf.fill(0);
            fill(at, buf);
            self.t.write(self.base + (offset + at) / self.bps)?;
            at += self.bps;
        }
        self.zero(offset + content, len - content)
    }

    fn zero(&mut self, offset: u64, len: u64) -> Result<(), T::Error> {
        let first = self.base + offset / self.bps;
        zero_sectors(self.t, first, first + len / self.bps)
    }

    fn flush(&mut self) -> Result<(), T::Error> {
        self.t.flush()
    }
}

#[cfg(feature = "embedded-sdmmc")]
mod sdmmc;
#[cfg(feature = "embedded-sdmmc")]
pub use sdmmc::format_sdmmc;

/// The module's memory promise: "a few hundred bytes of stack for the
/// plan". The firmware's measured peak stack is checked in QEMU by `cargo
/// xtask embedded`; this catches a plan or error type that grows first, in
/// the pure tier.
#[cfg(test)]
mod stack_budget {
    #[test]
    fn the_plan_and_its_error_stay_small() {
        // The plan held while formatting: under one 512-byte sector.
        let plan = core::mem::size_of::<super::MediumLayout>();
        assert!(plan < 512, "MediumLayout is {plan} bytes");
        // Returned through every frame of the format: shrunk from 184 to
        // 96 bytes (cluster sizes as a bit set, labels in 36 bytes).
        let err = core::mem::size_of::<crate::PlanError>();
        assert!(err <= 96, "PlanError is {err} bytes");
    }
}
