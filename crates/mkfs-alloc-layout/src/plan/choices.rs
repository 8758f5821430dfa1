//! The choices besides the geometry: label, serial, volume GUID, time and
//! compatibility warnings.

use super::ctx::Ctx;
use super::pick::Chosen;
use super::DEFAULT_ALIGN;
use crate::error::PlanError;
use crate::label::{exfat_label, fat_label, EncodedLabel};
use crate::options::{random_serial, random_u64, FormatOptions, FsKind, Timestamp};
use crate::rules::{compat_max_cluster, ClusterRule, FsRule};
use crate::units::format_size;
use mkfs_alloc_ondisk::rng::splitmix64;

/// Everything the planner chose, besides the geometry.
pub(super) struct Choices {
    pub(super) fs: FsKind,
    pub(super) fs_rule: FsRule,
    pub(super) cluster: u64,
    pub(super) cluster_rule: ClusterRule,
    pub(super) align: u64,
    pub(super) serial: u32,
    pub(super) volume_guid: Option<[u8; 16]>,
    pub(super) label: Option<(String, EncodedLabel)>,
    pub(super) timestamp: Timestamp,
    pub(super) warnings: Vec<String>,
}

impl Choices {
    /// Records the choices besides the geometry: the serial (given or
    /// random), the time (given or now), the exFAT volume GUID (derived
    /// from both), the label and the warnings.
    pub(super) fn new(
        ctx: &Ctx<'_>,
        opts: &FormatOptions,
        chosen: &Chosen,
        label: Option<(String, EncodedLabel)>,
    ) -> Self {
        let fs = chosen.fs;
        let timestamp = opts.timestamp.unwrap_or_else(Timestamp::now);
        let serial = opts.serial.unwrap_or_else(random_serial);
        Choices {
            fs,
            fs_rule: chosen.fs_rule,
            cluster: chosen.cluster,
            cluster_rule: chosen.cluster_rule,
            align: ctx.align,
            serial,
            volume_guid: (fs == FsKind::Exfat && opts.volume_guid).then(|| {
                if opts.is_pinned() {
                    derive_guid(serial, timestamp)
                } else {
                    random_guid()
                }
            }),
            label,
            timestamp,
            warnings: warnings(ctx, fs, chosen.cluster, opts),
        }
    }
}

/// The label as given and as `fs` stores it.
pub(super) fn encode_label(
    label: Option<&str>,
    fs: FsKind,
) -> Result<Option<(String, EncodedLabel)>, PlanError> {
    let Some(l) = label else {
        return Ok(None);
    };
    let encoded = match fs {
        FsKind::Exfat => EncodedLabel::Exfat(exfat_label(l)?),
        fat => EncodedLabel::Fat32(fat_label(l, fat)?),
    };
    Ok(Some((l.to_string(), encoded)))
}

/// Compatibility warnings for a valid layout.
fn warnings(ctx: &Ctx<'_>, fs: FsKind, cluster: u64, opts: &FormatOptions) -> Vec<String> {
    let (medium, align) = (ctx.medium, ctx.align);
    let volume_bytes = medium.volume_bytes;
    let mut warnings = Vec::new();
    let limit = compat_max_cluster(fs);
    if cluster > limit {
        let (limit, size) = (format_size(limit), format_size(cluster));
        warnings.push(if fs.is_fat() {
            format!("{fs} clusters above {limit} ({size}) are not handled by some systems (old DOS, some BIOS and camera firmware)")
        } else {
            format!("exFAT clusters above {limit} ({size}) are not mounted by some systems (older macOS) and waste space on small files")
        });
    }
    if fs == FsKind::Fat32 && volume_bytes > 32 * 1_000_000_000 {
        warnings.push(
            "FAT32 above 32 GB is valid, but Windows' own format refuses it and some firmware rejects it".to_string(),
        );
    }
    if opts.esp {
        // Microsoft's minimum ESP (Windows' own partitioning): 100 MB, 260 MB
        // on 4Kn drives (FAT32 needs 65,525 clusters of 4 KiB).
        let min = if medium.sector_size >= 4096 {
            260 * 1_000_000
        } else {
            100 * 1_000_000
        };
        if volume_bytes < min {
            warnings.push(format!(
                "EFI System Partition of {} is below Microsoft's minimum of {} MB{}: UEFI firmware reads it ({fs}), but Windows' tools expect at least that",
                format_size(volume_bytes),
                min / 1_000_000,
                if medium.sector_size >= 4096 { " at 4096-byte sectors" } else { "" }
            ));
        }
    }
    if align < DEFAULT_ALIGN && opts.align.is_none() && !opts.sd {
        warnings.push(format!(
            "small volume: alignment reduced to {}",
            format_size(align)
        ));
    }
    warnings
}

/// A serial from the clock's seconds and nanoseconds, mixed (in the spirit
/// of DOS, which mixed date and time): the CLI's serial when `--serial` is
/// not given, pinned by `SOURCE_DATE_EPOCH`.
pub fn serial_from_time(t: Timestamp) -> u32 {
    let x = splitmix64((t.secs as u64) ^ (u64::from(t.nanos) << 32));
    (x ^ (x >> 32)) as u32
}

/// The exFAT volume GUID of pinned options, derived from the serial (and
/// the timestamp) so that pinned inputs give pinned output.
fn derive_guid(serial: u32, t: Timestamp) -> [u8; 16] {
    let seed = u64::from(serial) ^ 0x6d6b_6673_2d61_6c6c ^ (t.secs as u64).rotate_left(17);
    let a = splitmix64(seed);
    guid_v4(a, splitmix64(a))
}

/// A fresh exFAT volume GUID: 128 random bits ([`random_u64`] twice), of
/// which a version-4 GUID keeps 122.
fn random_guid() -> [u8; 16] {
    let a = random_u64();
    guid_v4(a, random_u64())
}

/// A version-4-shaped GUID (in the entry's byte order) from two 64-bit
/// values; never all zero.
fn guid_v4(a: u64, b: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&a.to_le_bytes());
    g[8..].copy_from_slice(&b.to_le_bytes());
    g[7] = (g[7] & 0x0F) | 0x40;
    g[8] = (g[8] & 0x3F) | 0x80;
    g
}
