//! The planner: [`FormatOptions`] + [`Medium`] → a validated [`Layout`].
//!
//! Architecture invariant: every check happens here. The writer trusts a
//! `Layout` and never rejects input, so rejected input can never have written
//! a byte.
//!
//! The files follow the planner's steps: `ctx` holds what every
//! geometry computation of one plan shares, `pick` chooses the file system
//! and the cluster size, `choices` the serial, GUID, label and warnings, and
//! `build` turns them into the regions of a [`Layout`] (`layout`).

mod build;
mod choices;
mod ctx;
mod extents;
mod layout;
mod pick;
#[cfg(feature = "sd")]
mod sd;
#[cfg(test)]
mod tests;

pub use crate::geometry::Geometry;
pub use choices::Warning;
pub use choices::{serial_from_time, table_seed};
pub use ctx::valid_cluster_sizes;
pub use layout::{Layout, Region, RegionKind, Regions};

use crate::error::PlanError;
use crate::geometry::fat;
use crate::options::{FormatOptions, FsKind, Medium};
use crate::units::MIB;
use build::build;
use choices::{encode_label, Choices};
use ctx::Ctx;
use pick::pick_fs;

/// The default alignment for volumes of 16 MiB and more.
pub const DEFAULT_ALIGN: u64 = MIB;
pub use mkfs_alloc_ondisk::MAX_ALIGN;

/// The alignment used when none is given: 1 MiB, or for volumes under 16 MiB
/// the largest power of two not above 1/16 of the volume (at least the sector
/// size), so that alignment never eats a small volume.
pub fn default_align(volume_bytes: u64, sector_size: u32) -> u64 {
    let sixteenth = (volume_bytes / 16).max(1);
    let pow = 1u64 << (63 - sixteenth.leading_zeros());
    pow.clamp(u64::from(sector_size), DEFAULT_ALIGN)
}

/// Validates a file system's logical sector size: 512, 1024, 2048 or 4096
/// (the one check of the workspace; the planner, `advise` and the CLI's
/// argument check use it).
///
/// # Errors
///
/// [`PlanError::SectorSize`] for any other size.
pub fn check_sector_size(sector_size: u32) -> Result<(), PlanError> {
    if mkfs_alloc_ondisk::valid_sector_size(sector_size) {
        Ok(())
    } else {
        Err(PlanError::SectorSize(u64::from(sector_size)))
    }
}

/// Plans a format. Returns a [`Layout`] in which every invariant holds, or the
/// reason (naming the valid range) why the options cannot work on this medium.
///
/// The steps: check the alignment (the medium checked itself); pick the file system (and,
/// where the FAT width follows the cluster count, the cluster size with it);
/// check what depends on the file system (root entries, label); pick the
/// cluster size; record the remaining choices; lay out the regions. The SD
/// Association layout (`opts.sd`) takes its own path (`plan/sd.rs`).
///
/// # Errors
///
/// [`PlanError`], nothing written: each variant names the value, the limit
/// and the valid range (sector, cluster and volume sizes, the alignment,
/// the cluster count of the file system, the label, the root directory,
/// the SD layout's options).
pub fn plan(opts: &FormatOptions, medium: &Medium) -> Result<Layout, PlanError> {
    if opts.sd {
        #[cfg(feature = "sd")]
        return sd::plan_sd(opts, medium);
        #[cfg(not(feature = "sd"))]
        return Err(PlanError::NotBuilt("the SD layout (feature \"sd\")"));
    }
    // A copy the planner's steps share (the firmware's code is smaller
    // for it than for the caller's reference).
    let medium = *medium;
    let align = checked_align(opts, &medium)?;
    let ctx = Ctx {
        medium: &medium,
        align,
        // In range: their setters checked them.
        root_entries: opts.root_entries.unwrap_or(fat::DEFAULT_ROOT_ENTRIES),
        num_fats: opts.fats.unwrap_or(fat::NUM_FATS),
    };
    let pick = pick_fs(&ctx, opts)?;
    let fs = pick.fs();
    if opts.root_entries.is_some() && !fs.is_small_fat() {
        return Err(PlanError::RootEntriesNotFixed(fs));
    }
    if fs == FsKind::Exfat && opts.fats.is_some_and(|n| n != 1) {
        return Err(PlanError::FatCountExfat);
    }
    // Validated and encoded before anything else can fail late.
    let label = encode_label(opts.label.as_ref(), fs, opts.keep_label_case)?;
    let chosen = pick.with_cluster(&ctx, opts.cluster)?;
    let choices = Choices::new(&ctx, opts, &chosen, label)?;
    Ok(build(choices, &medium, chosen.geometry))
}

/// The alignment to use on `medium` (whose sector size and partition
/// offset its constructor checked).
fn checked_align(opts: &FormatOptions, medium: &Medium) -> Result<u64, PlanError> {
    let sector = medium.sector_size();
    match opts.align {
        Some(a) if !a.is_power_of_two() || a < sector.bytes() || a > MAX_ALIGN => {
            Err(PlanError::Align {
                align: a,
                sector: sector.get(),
                max: MAX_ALIGN,
            })
        }
        Some(a) => Ok(a),
        None => Ok(default_align(medium.volume_bytes(), sector.get())),
    }
}

/// A number of FATs: 1 or 2.
pub(crate) fn check_fats(n: u8) -> Result<u8, PlanError> {
    if (1..=2).contains(&n) {
        Ok(n)
    } else {
        Err(PlanError::FatCount(u64::from(n)))
    }
}

/// A FAT12/16 root directory size: 1..=32,768 entries.
pub(crate) fn check_root_entries(n: u32) -> Result<u32, PlanError> {
    if (1..=fat::MAX_ROOT_ENTRIES).contains(&n) {
        Ok(n)
    } else {
        Err(PlanError::RootEntries(u64::from(n)))
    }
}
