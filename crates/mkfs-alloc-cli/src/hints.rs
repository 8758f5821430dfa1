//! The command line's words for the libraries' errors and rules.
//!
//! The libraries report structured errors whose messages speak of values
//! and options in their own terms ("FAT32 at 32 KiB clusters has 32,704
//! clusters; valid: 512 B..8 KiB, or use exFAT"). Where a flag of this
//! command is the way out, the message here names it (`--fs fat`,
//! `--root-entries`, `--layout sd`); every other error keeps the library's
//! message.

use anyhow::anyhow;
use mkfs_alloc::layout::error::{valid_sizes_text, Alternative};
use mkfs_alloc::layout::fat::MAX_ROOT_ENTRIES;
use mkfs_alloc::layout::units::{format_count, format_size};
use mkfs_alloc::layout::{ClusterRule, FsRule};
use mkfs_alloc::layout::{FsChoice, FsKind, PlanError, WriteError};
use mkfs_alloc::layout::{SdConflict, SdError, SD_SECTOR};
use mkfs_alloc::populate::PopulateError;
use mkfs_alloc::FormatError;
use mkfs_alloc_advise::AdviseError;

/// A library error as an `anyhow` error in this command's words.
pub fn format_error(e: FormatError) -> anyhow::Error {
    let text = match &e {
        FormatError::Plan(p) => plan_text(p),
        FormatError::Write(w) => write_text(w),
        FormatError::NoSizeHolds => Some("--size auto: no volume size holds this tree".to_string()),
        _ => None,
    };
    text.map_or_else(|| anyhow!(e), |t| anyhow!(t))
}

/// [`format_error`] for the advice behind `advise`, `--data` and `--rootdir`.
pub fn advise_error(e: AdviseError) -> anyhow::Error {
    match &e {
        AdviseError::Plan(p) => plan_text(p).map_or_else(|| anyhow!(e), |t| anyhow!(t)),
        _ => anyhow!(e),
    }
}

/// [`format_error`] for a tree that cannot be written into the volume
/// (`sd`: the SD layout, which fixes the root directory's size).
pub fn populate_error(e: PopulateError, sd: bool) -> anyhow::Error {
    match &e {
        PopulateError::DoesNotFit { .. } => {
            anyhow!("{e}; use a larger --size, --size auto, or smaller clusters")
        }
        PopulateError::RootDirFull {
            fs,
            capacity,
            needed,
        } => {
            let raise = if !sd && *needed <= u64::from(MAX_ROOT_ENTRIES) {
                format!(
                    "raise --root-entries to {} or more (at most {}), ",
                    format_count(*needed),
                    format_count(u64::from(MAX_ROOT_ENTRIES))
                )
            } else {
                String::new()
            };
            anyhow!(
                "the root directory of {fs} holds {} entries (the label included) and the tree's top level needs {}; {raise}put the files in a subdirectory, or use --fs fat32 or --fs exfat",
                format_count(*capacity),
                format_count(*needed)
            )
        }
        // Every path with its reason, long paths shortened.
        PopulateError::Names { fs, problems } => anyhow!(
            "{} cannot be stored on {fs}:{}",
            if problems.len() == 1 {
                "1 path in --rootdir".to_string()
            } else {
                format!("{} paths in --rootdir", format_count(problems.len() as u64))
            },
            problems
                .iter()
                .map(|p| format!(
                    "\n  {}: {}",
                    crate::rootdir::shorten_path(&p.path),
                    p.problem
                ))
                .collect::<String>()
        ),
        _ => anyhow!(e),
    }
}

/// The planner's errors that a flag fixes.
fn plan_text(e: &PlanError) -> Option<String> {
    Some(match e {
        PlanError::TooFewClusters {
            fs,
            volume,
            cluster,
            clusters,
            min_clusters,
            valid,
        } => format!(
            "{} is too small for {fs} at {} clusters ({} clusters, needs >= {}); {}",
            format_size(*volume),
            format_size(*cluster),
            format_count(*clusters),
            format_count(*min_clusters),
            sizes_and_way_out(e, *fs, valid)?
        ),
        PlanError::TooManyClusters {
            fs,
            volume,
            cluster,
            clusters,
            max_clusters,
            valid,
        } => format!(
            "{} is too large for {fs} at {} clusters ({} clusters, maximum {}); {}",
            format_size(*volume),
            format_size(*cluster),
            format_count(*clusters),
            format_count(*max_clusters),
            sizes_and_way_out(e, *fs, valid)?
        ),
        PlanError::EspNotFat => "an EFI System Partition must be FAT (UEFI firmware reads FAT12, FAT16 and FAT32, not exFAT); use --fs fat, fat32, fat16 or fat12, or leave --fs out".to_string(),
        PlanError::RootEntriesNotFixed(fs) => format!(
            "--root-entries applies to FAT12 and FAT16 only; this volume is {fs} (its root directory grows as needed)"
        ),
        PlanError::Sd(sd) => sd_text(sd)?,
        _ => return None,
    })
}

/// "valid: 1 KiB..32 KiB, or use --fs fat (...)": the valid sizes and the
/// flag that leads out; `None` where the library's words need no flag.
fn sizes_and_way_out(
    e: &PlanError,
    fs: FsKind,
    valid: &mkfs_alloc::layout::error::ClusterSizes,
) -> Option<String> {
    let sizes = valid_sizes_text(fs, valid);
    let sep = if valid.is_empty() { "; " } else { ", or " };
    Some(match e.alternative()? {
        Alternative::FatWidth => {
            format!("{sizes}{sep}use --fs fat (the width follows the cluster count)")
        }
        Alternative::SmallerRoot => format!(
            "{sizes}; a smaller root directory leaves room for clusters (--root-entries, default 512 = 16 KiB; 16 entries take one 512-byte sector)"
        ),
        // "or use exFAT" names no flag: the library's words stand.
        _ => return None,
    })
}

/// The writer's errors that a flag fixes.
fn write_text(e: &WriteError) -> Option<String> {
    match e {
        WriteError::BlockSize { device, sector } => Some(format!(
            "the target's block size ({device} bytes) is larger than, or does not divide, the file system's sector size ({sector} bytes); use --sector-size {device} or larger"
        )),
        _ => None,
    }
}

/// The SD layout's errors, with the flags that lead out.
pub fn sd_text(e: &SdError) -> Option<String> {
    Some(match e {
        SdError::TooLarge { sectors } => format!(
            "{sectors} sectors ({} bytes) is above 2 TiB: the SD specification publishes no layout for such cards (SDUC); format without --layout sd",
            sectors * SD_SECTOR
        ),
        SdError::Conflict { option } => sd_conflict(sd_flag(*option), option.decides()),
        SdError::Fs {
            sectors,
            class,
            class_fs,
            asked,
            allowed,
        } => {
            let names: Vec<String> = allowed
                .iter()
                .map(|c| match c {
                    FsChoice::Fixed(FsKind::Fat32) if *class_fs == FsKind::Exfat => {
                        "fat32 (64 KiB clusters)".to_string()
                    }
                    c => choice_flag(*c).to_string(),
                })
                .collect();
            let allowed = match names.as_slice() {
                [a, b, c] if *class_fs == FsKind::Exfat => format!("{a}, {b}, or {c}"),
                [a, b, c] => format!("{a}, {b} or {c}"),
                _ => names.join(", "),
            };
            format!(
                "--layout sd gives a card of {} ({class}) {class_fs}; --fs {} is not allowed. Valid: --fs {allowed}",
                format_size(sectors * SD_SECTOR),
                choice_flag(*asked)
            )
        }
        SdError::ReservedOverflow { sectors, rsvd } => format!(
            "FAT32 in the SD layout of a card of {sectors} sectors needs {rsvd} reserved sectors to put the data region on a boundary unit, more than the 16-bit field holds; use exFAT (leave --fs out)"
        ),
        SdError::SectorSize(n) => {
            format!("--layout sd needs 512-byte sectors (SD cards have them); got {n}-byte sectors")
        }
        _ => return None,
    })
}

/// An option `--layout sd` decides itself, refused by its flag.
pub fn sd_conflict(flag: &str, what: &str) -> String {
    format!(
        "--layout sd decides {what} itself, from the card's capacity; leave {flag} out. With --layout sd you may give --fs (the class's file system, or fat32 on SDXC cards), --label, --serial, --rootdir, and --size for an image"
    )
}

/// The flag of an option the SD layout decides.
fn sd_flag(c: SdConflict) -> &'static str {
    match c {
        SdConflict::Cluster => "--cluster",
        SdConflict::Align => "--align",
        SdConflict::RootEntries => "--root-entries",
        SdConflict::Esp => "--esp",
        SdConflict::TableNone => "--table none",
        SdConflict::TableGpt => "--table gpt",
        _ => "an option",
    }
}

/// `--fs`'s value for a choice.
fn choice_flag(c: FsChoice) -> &'static str {
    match c {
        FsChoice::Fat => "fat",
        FsChoice::Fixed(fs) => fs.id(),
        _ => "auto",
    }
}

/// Why this file system, in the summary's words.
pub fn fs_rule(r: FsRule) -> &'static str {
    match r {
        FsRule::Explicit => "chosen with --fs",
        FsRule::FatFat32Fits => "--fs fat: FAT32 fits this volume",
        FsRule::EspFat32Fits => "--esp: the FAT width the size allows, and FAT32 fits this volume",
        FsRule::SdCapacityClass => "--layout sd: the file system of the card's capacity class",
        FsRule::SdFat32OnSdxc => {
            "--layout sd with --fs fat32 on an SDXC card: FAT32 instead of exFAT"
        }
        r => r.describe(),
    }
}

/// Why this cluster size, in the summary's words (`rootdir`: the files of
/// `--rootdir` chose it, not those of `--data`).
pub fn cluster_rule(r: ClusterRule, fs: FsKind, volume_bytes: u64, rootdir: bool) -> String {
    match r {
        ClusterRule::Explicit => "chosen with --cluster".to_string(),
        ClusterRule::FromData if rootdir => "chosen for the files of --rootdir".to_string(),
        ClusterRule::FromData => "chosen for the files given with --data".to_string(),
        ClusterRule::SdCapacityClass => {
            "--layout sd: the cluster size of the card's capacity class".to_string()
        }
        r => r.describe(fs, volume_bytes),
    }
}

/// Why this partition table, in the summary's words.
pub fn table_reason(reason: &'static str, sd: bool) -> &'static str {
    if sd {
        "--layout sd: an MBR with one partition, as the SD specification lays out cards"
    } else {
        reason
    }
}

/// A row note of `advise`'s table, in this command's words.
pub fn row_note(n: mkfs_alloc_advise::RowNote, fs: FsKind) -> String {
    match n {
        mkfs_alloc_advise::RowNote::AutoDefault => "--cluster auto".to_string(),
        n => n.describe(fs),
    }
}

/// A note of `advise` on a whole file system, in this command's words.
pub fn fs_note(n: &mkfs_alloc_advise::FsNote, fs: FsKind) -> String {
    match n {
        mkfs_alloc_advise::FsNote::RootDirFull { entries, capacity } => format!(
            "the top level needs {} root directory entries but the fixed {fs} root holds {}: raise --root-entries",
            format_count(*entries),
            format_count(*capacity)
        ),
        n => n.describe(fs),
    }
}
