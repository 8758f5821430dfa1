//! `FormatOptions::sd`: the SD Association layout ([`crate::geometry::sd`]) as a plan.
//! The card's capacity decides everything but the label, serial and time;
//! options that would change it are refused by name.

use super::build::build;
use super::choices::{encode_label, Choices};
use super::ctx::Ctx;
use super::pick::Chosen;
use super::{Geometry, Layout};
use crate::error::PlanError;
use crate::geometry::sd::{card_layout, SdError, SdLayout, SD_SECTOR};
use crate::geometry::{fat, ExfatGeometry, FatGeometry};
use crate::options::{FormatOptions, FsKind, Medium};
use crate::rules::ClusterRule;
use mkfs_alloc_ondisk::exfat::upcase::UPCASE_TABLE_LEN;

/// Plans the SD layout of the card whose end is the medium's end. The steps:
/// find the card's layout (refusing the options it decides itself); check the
/// medium starts the volume where it says; make the geometry; record the
/// choices as [`plan`](super::plan()) does.
pub(super) fn plan_sd(opts: &FormatOptions, medium: &Medium) -> Result<Layout, PlanError> {
    if medium.sector_size().bytes() != SD_SECTOR {
        return Err(SdError::SectorSize(medium.sector_size().get()).into());
    }
    // Whole sectors of SD_SECTOR bytes: the medium's constructor checked it.
    let start = medium.partition_offset() / SD_SECTOR;
    let sectors = medium.volume_bytes() / SD_SECTOR;
    let total = start + sectors;
    let (sd, fs_rule) = card_layout(opts, total)?;
    if (start, sectors) != (sd.part_start, sd.part_sectors) {
        return Err(SdError::Placement {
            total,
            start: sd.part_start,
            sectors: sd.part_sectors,
            got_start: start,
            got_sectors: sectors,
        }
        .into());
    }
    let label = encode_label(opts.label.as_ref(), sd.fs, opts.keep_label_case)?;
    let chosen = Chosen {
        fs: sd.fs,
        fs_rule,
        cluster: sd.sec_per_clus * SD_SECTOR,
        cluster_rule: ClusterRule::SdCapacityClass,
        geometry: geometry(&sd, medium.sector_size().get())?,
    };
    // The alignment both the first FAT and the data region have on the card
    // (the data region is on a boundary unit; the FAT12/16 FAT is not).
    let abs = |sector: u64| Layout::alignment_of((sd.part_start + sector) * SD_SECTOR);
    let ctx = Ctx {
        medium,
        align: abs(sd.fat_offset).min(abs(sd.data_offset)),
        root_entries: fat::DEFAULT_ROOT_ENTRIES,
        num_fats: fat::NUM_FATS,
    };
    let choices = Choices::new(&ctx, opts, &chosen, label)?;
    let mut layout = build(choices, medium, chosen.geometry);
    layout.sd = Some(sd);
    Ok(layout)
}

/// The file-system geometry the SD layout gives, in sectors of `bps`
/// (`SD_SECTOR`) bytes.
fn geometry(sd: &SdLayout, bps: u32) -> Result<Geometry, PlanError> {
    let cluster = sd.sec_per_clus * SD_SECTOR;
    let too_large = |_| PlanError::VolumeTooLarge {
        fs: sd.fs,
        volume: sd.part_sectors * SD_SECTOR,
        sector: bps,
        max: u64::from(u32::MAX) * SD_SECTOR,
    };
    let u32_of = |v: u64| u32::try_from(v).map_err(too_large);
    Ok(match sd.fs {
        FsKind::Exfat => {
            let bitmap_bytes = sd.cluster_count.div_ceil(8);
            Geometry::Exfat(ExfatGeometry {
                bps,
                cluster,
                volume_sectors: sd.part_sectors,
                fat_offset: u32_of(sd.fat_offset)?,
                fat_length: u32_of(sd.fat_sectors)?,
                heap_offset: u32_of(sd.data_offset)?,
                cluster_count: u32_of(sd.cluster_count)?,
                bitmap_bytes,
                bitmap_clusters: u32_of(bitmap_bytes.div_ceil(cluster).max(1))?,
                upcase_clusters: u32_of(
                    u64::try_from(UPCASE_TABLE_LEN)
                        .map_err(too_large)?
                        .div_ceil(cluster),
                )?,
                root_clusters: 1,
            })
        }
        fs => Geometry::Fat(FatGeometry {
            fs,
            bps,
            cluster,
            sec_per_clus: u8::try_from(sd.sec_per_clus).map_err(too_large)?,
            tot_sec: u32_of(sd.part_sectors)?,
            rsvd: u16::try_from(sd.rsvd).map_err(|_| SdError::ReservedOverflow {
                sectors: sd.total_sectors,
                rsvd: sd.rsvd,
            })?,
            fat_sz: u32_of(sd.fat_sectors)?,
            root_entries: if fs == FsKind::Fat32 {
                0
            } else {
                u16::try_from(fat::DEFAULT_ROOT_ENTRIES).map_err(too_large)?
            },
            cluster_count: u32_of(sd.cluster_count)?,
            num_fats: fat::NUM_FATS,
        }),
    })
}
