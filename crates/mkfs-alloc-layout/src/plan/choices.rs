//! The choices besides the geometry: label, serial, volume GUID, time and
//! compatibility warnings.

use super::ctx::Ctx;
use super::pick::Chosen;
use super::DEFAULT_ALIGN;
use crate::error::PlanError;
use crate::label::{exfat_units, fat_bytes, EncodedLabel, LabelText};
use crate::options::{FormatOptions, FsKind, Timestamp};
use crate::rules::{compat_max_cluster, ClusterRule, FsRule};
use crate::units::Size;
use core::fmt;
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
    pub(super) label: Option<(LabelText, EncodedLabel)>,
    pub(super) timestamp: Timestamp,
    /// What the warnings depend on besides the layout.
    pub(super) asked: Asked,
    /// The FAT boot sector's BIOS fields, if not a fixed disk's.
    pub(super) bios: Option<crate::options::BiosParams>,
}

/// The options the warnings depend on besides the layout (worked out when
/// asked for: firmware links no warning code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asked {
    pub(crate) esp: bool,
    pub(crate) align_given: bool,
    pub(crate) sd: bool,
}

impl Choices {
    /// Records the choices besides the geometry: the serial (given or
    /// random), the time (given or now), the exFAT volume GUID (derived
    /// from both), the label and the warnings.
    pub(super) fn new(
        ctx: &Ctx<'_>,
        opts: &FormatOptions,
        chosen: &Chosen,
        label: Option<(LabelText, EncodedLabel)>,
    ) -> Result<Self, PlanError> {
        let fs = chosen.fs;
        let (timestamp, serial) = time_and_serial(opts)?;
        Ok(Choices {
            fs,
            fs_rule: chosen.fs_rule,
            cluster: chosen.cluster,
            cluster_rule: chosen.cluster_rule,
            align: ctx.align,
            serial,
            volume_guid: match opts.volume_guid_bytes {
                _ if fs != FsKind::Exfat => None,
                Some(given) => Some(given),
                None => opts
                    .volume_guid
                    .then(|| volume_guid(opts, serial, timestamp)),
            },
            label,
            timestamp,
            asked: Asked {
                esp: opts.esp,
                align_given: opts.align.is_some(),
                sd: opts.sd,
            },
            bios: opts.bios,
        })
    }
}

/// The time and the serial: given, or (with `std`) now and fresh.
#[cfg(feature = "std")]
fn time_and_serial(opts: &FormatOptions) -> Result<(Timestamp, u32), PlanError> {
    let timestamp = opts.timestamp.unwrap_or_else(Timestamp::now);
    Ok((
        timestamp,
        opts.serial.unwrap_or_else(crate::options::random_serial),
    ))
}

/// The time and the serial: without `std` there is no clock and no
/// entropy, so the caller gives both (an RTC; the card's CID or a hardware
/// random number).
#[cfg(not(feature = "std"))]
fn time_and_serial(opts: &FormatOptions) -> Result<(Timestamp, u32), PlanError> {
    match (opts.timestamp, opts.serial) {
        (Some(t), Some(s)) => Ok((t, s)),
        _ => Err(PlanError::NeedsSerialAndTime),
    }
}

/// The label as given and as `fs` stores it.
pub(super) fn encode_label(
    label: Option<&LabelText>,
    fs: FsKind,
    keep_case: bool,
) -> Result<Option<(LabelText, EncodedLabel)>, PlanError> {
    let Some(l) = label else {
        return Ok(None);
    };
    let encoded = match fs {
        FsKind::Exfat => EncodedLabel::Exfat(exfat_units(l)?),
        fat => EncodedLabel::Fat32(fat_bytes(l, fat, keep_case)?),
    };
    Ok(Some((*l, encoded)))
}

/// A compatibility warning: the layout is valid, but some systems may
/// balk. Its `Display` is the sentence (no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// Clusters above what some systems handle.
    LargeCluster {
        /// File system.
        fs: FsKind,
        /// The compatibility limit.
        limit: u64,
        /// The cluster size.
        cluster: u64,
    },
    /// FAT32 above 32 GB.
    Fat32Above32Gb,
    /// An EFI System Partition below Microsoft's minimum.
    SmallEsp {
        /// File system.
        fs: FsKind,
        /// Volume bytes.
        volume: u64,
        /// The minimum in MB.
        min_mb: u64,
        /// 4096-byte sectors (the larger minimum).
        four_k: bool,
    },
    /// A small volume got a smaller alignment than 1 MiB.
    SmallVolumeAlign {
        /// The alignment used.
        align: u64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Warning::LargeCluster { fs, limit, cluster } => {
                let (limit, size) = (Size(limit), Size(cluster));
                if fs.is_fat() {
                    write!(f, "{fs} clusters above {limit} ({size}) are not handled by some systems (old DOS, some BIOS and camera firmware)")
                } else {
                    write!(f, "exFAT clusters above {limit} ({size}) are not mounted by some systems (older macOS) and waste space on small files")
                }
            }
            Warning::Fat32Above32Gb => f.write_str(
                "FAT32 above 32 GB is valid, but Windows' own format refuses it and some firmware rejects it",
            ),
            Warning::SmallEsp { fs, volume, min_mb, four_k } => write!(
                f,
                "EFI System Partition of {} is below Microsoft's minimum of {min_mb} MB{}: UEFI firmware reads it ({fs}), but Windows' tools expect at least that",
                Size(volume),
                if four_k { " at 4096-byte sectors" } else { "" }
            ),
            Warning::SmallVolumeAlign { align } => {
                write!(f, "small volume: alignment reduced to {}", Size(align))
            }
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Warning {
    /// As its sentence.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The warnings of a layout (at most one of each kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Warnings {
    list: [Option<Warning>; 4],
    len: usize,
}

impl Warnings {
    fn push(&mut self, w: Warning) {
        self.list[self.len] = Some(w);
        self.len += 1;
    }

    /// The warnings, in order.
    pub(crate) fn into_iter(self) -> impl Iterator<Item = Warning> {
        self.list.into_iter().flatten()
    }
}

/// Compatibility warnings for a valid layout.
pub(crate) fn warnings(l: &crate::Layout, asked: Asked) -> Warnings {
    let (fs, cluster, align) = (l.fs(), l.cluster_size().bytes(), l.align());
    let volume_bytes = l.volume_bytes();
    let sector_size = l.sector_size().get();
    let mut warnings = Warnings::default();
    let limit = compat_max_cluster(fs);
    if cluster > limit {
        warnings.push(Warning::LargeCluster { fs, limit, cluster });
    }
    if fs == FsKind::Fat32 && volume_bytes > 32 * 1_000_000_000 {
        warnings.push(Warning::Fat32Above32Gb);
    }
    if asked.esp {
        // Microsoft's minimum ESP (Windows' own partitioning): 100 MB, 260 MB
        // on 4Kn drives (FAT32 needs 65,525 clusters of 4 KiB).
        let four_k = sector_size >= 4096;
        let min_mb = if four_k { 260 } else { 100 };
        if volume_bytes < min_mb * 1_000_000 {
            warnings.push(Warning::SmallEsp {
                fs,
                volume: volume_bytes,
                min_mb,
                four_k,
            });
        }
    }
    if align < DEFAULT_ALIGN && !asked.align_given && !asked.sd {
        warnings.push(Warning::SmallVolumeAlign { align });
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

/// The seed of a partition table's identifiers (the MBR disk signature,
/// the GPT GUIDs) for pinned options: derived from the serial, so that a
/// pinned serial pins the table too. The facade and the firmware path both
/// seed with it.
pub fn table_seed(serial: u32) -> u64 {
    u64::from(serial) ^ 0x7061_7274_6974_696f
}

/// The exFAT volume GUID of pinned options, derived from the serial (and
/// the timestamp) so that pinned inputs give pinned output.
fn derive_guid(serial: u32, t: Timestamp) -> [u8; 16] {
    let seed = u64::from(serial) ^ 0x6d6b_6673_2d61_6c6c ^ (t.secs as u64).rotate_left(17);
    let a = splitmix64(seed);
    guid_v4(a, splitmix64(a))
}

/// The exFAT volume GUID: derived from the serial and the time when
/// pinned, else fresh: 128 random bits (`random_u64` twice), of which a
/// version-4 GUID keeps 122.
#[cfg(feature = "std")]
fn volume_guid(opts: &FormatOptions, serial: u32, t: Timestamp) -> [u8; 16] {
    if opts.is_pinned() {
        return derive_guid(serial, t);
    }
    let a = crate::options::random_u64();
    guid_v4(a, crate::options::random_u64())
}

/// Without `std` there is no entropy: the GUID derives from the serial and
/// the time the caller gave (a fresh serial gives a fresh GUID).
#[cfg(not(feature = "std"))]
fn volume_guid(_: &FormatOptions, serial: u32, t: Timestamp) -> [u8; 16] {
    derive_guid(serial, t)
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
