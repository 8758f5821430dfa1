//! Command-line arguments.

use crate::{usage, Failure};
use anyhow::anyhow;
use clap::{Parser, ValueEnum};
use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsKind, Timestamp};
use mkfs_alloc::partition::{TableChoice, TableKind};
use mkfs_alloc::units::parse_size;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  Create an 8 GiB exFAT image with 32 KiB clusters:
    mkfs-alloc --fs exfat --cluster 32K --size 8G stick.img
  Format an existing image as FAT32 with 16 KiB clusters and a label:
    mkfs-alloc --fs fat32 --cluster 16K --label PHOTOS card.img
  Show the plan (regions, alignment, cluster count) without writing:
    mkfs-alloc --dry-run --size 128G stick.img
  Reproducible output (same bytes every run):
    SOURCE_DATE_EPOCH=0 mkfs-alloc --serial 1234ABCD --size 1G a.img
  A whole-stick image with an MBR partition table (partition at 1 MiB):
    mkfs-alloc --table mbr --fs exfat --cluster 32K --size 64G stick.img
  A USB stick (asks for confirmation; MBR partition table by default):
    mkfs-alloc --fs exfat --cluster 32K /dev/sdb
  Let your data choose the cluster size (largest with <= 1% waste):
    mkfs-alloc --fs exfat --data ~/Photos --size 64G photos.img
  An image holding a folder, just large enough (plus 10%), reproducible:
    SOURCE_DATE_EPOCH=315532800 mkfs-alloc --fs fat32 --rootdir esp/ --size auto --serial 1234ABCD esp.img
  An SD card (or a 64 GB card's image) laid out as SD Card Formatter does:
    mkfs-alloc --layout sd /dev/mmcblk0
    mkfs-alloc --layout sd --size 64GB --label CARD card.img
  Machine-readable plan and summary:
    mkfs-alloc --json --dry-run --size 64G a.img
  Eight sticks at once, numbered, filled from a folder and read back:
    mkfs-alloc --fs exfat --label 'KIT{n:03}' --rootdir kit/ --verify /dev/sd[b-i]

Sizes: K M G T P E (either case) and KiB..EiB are binary (4K = 4096),
kB MB GB TB PB EB decimal (8GB = 8,000,000,000); no space before the unit.
Defaults (--cluster auto): FAT32 4 KiB up to 8 GiB, 8 KiB up to 16 GiB,
16 KiB up to 32 GiB, 32 KiB above; exFAT 4 KiB up to 256 MiB, 32 KiB above;
FAT16/FAT12 4 KiB. The FAT width follows the cluster count: FAT12 below
4,085 clusters, FAT16 below 65,525, FAT32 above (16 clusters of margin).
A target named like a command (list, advise, info, probe, recluster, resize,
convert, completions, help) is written as a path: ./list.
Exit codes: 0 success; 1 I/O failure after writing began; 2 nothing was
written: invalid input, a refusal (read-only, permission denied, busy,
locked, mounted) or an error before the first write. With several targets:
0 only if every target succeeded, 2 if nothing was written anywhere, else 1.
--json anywhere on the line prints one JSON document (--help: {\"help\": ...},
--version: {\"name\": ..., \"version\": ...}).";

/// File system argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FsArg {
    /// exFAT above 32 GiB; FAT32 up to 32 GiB, FAT16/FAT12 when too small for FAT32.
    Auto,
    /// exFAT.
    Exfat,
    /// The FAT width the size allows (with --cluster: the width its cluster count gives).
    Fat,
    /// FAT32 (65,541 clusters or more).
    Fat32,
    /// FAT16 (4,101 to 65,508 clusters; fixed root directory).
    Fat16,
    /// FAT12 (up to 4,068 clusters; fixed root directory).
    Fat12,
}

/// Partition table argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableArg {
    /// A whole disk gets MBR below 2 TiB and GPT from 2 TiB; an image file gets none.
    Auto,
    /// No table: the file system spans the target ("superfloppy").
    None,
    /// MBR with one partition (type 0x0C FAT32, 0x06/0x04/0x0E FAT16, 0x01 FAT12, 0x07 exFAT).
    Mbr,
    /// GPT with one Microsoft Basic Data partition named after the label.
    Gpt,
}

/// How `--rootdir` file data reaches an image file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CopyArg {
    /// Shared with the source file (a reflink) where the image's file
    /// system can (XFS with reflink=1, btrfs), else copied by the kernel.
    Auto,
    /// Shared with the source, or refused before anything is written.
    Reflink,
    /// Read and written: never shared.
    Copy,
}

/// What TARGET receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The medium itself: an image file or a device.
    Raw,
    /// An Android sparse image of the medium (fastboot, simg2img): the
    /// blocks the format wrote or needs as zeros, the rest left out.
    Sparse,
}

/// Volume layout argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// FAT and data region aligned (--align, default 1 MiB); the table and
    /// file system as the other options say.
    Standard,
    /// The SD Association's layout for the card's capacity (SD Card
    /// Formatter's): file system, cluster size, MBR partition start and
    /// type, CHS geometry, FAT placement on the boundary unit, exFAT Flash
    /// Parameters. Cards up to 2 TiB.
    Sd,
}

/// Format a disk, stick, card or image as exFAT or FAT (FAT12, FAT16, FAT32) with an explicit cluster size.
#[derive(Debug, Parser)]
#[command(
    name = "mkfs-alloc",
    version,
    about,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// Other commands; without one, mkfs-alloc formats TARGET.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Formatting options.
    #[command(flatten)]
    pub format: FormatArgs,
}

/// Commands besides formatting.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List the block devices one could format (removable first).
    List(crate::cmd_list::ListArgs),
    /// Which cluster size fits a volume (and, given PATHs, your data).
    Advise(crate::cmd_advise::AdviseArgs),
    /// What a stick or image has now: table, file system, cluster size, waste.
    Info(crate::cmd_info::InfoArgs),
    /// Is this stick as big as it says? Find counterfeit capacity (writes test blocks).
    Probe(crate::cmd_probe::ProbeArgs),
    /// Change the cluster size of an exFAT volume that holds data, in place (safe against power loss).
    Recluster(crate::cmd_recluster::ReclusterArgs),
    /// Grow an exFAT or FAT32 volume that holds data into the space after it, in place (safe against power loss).
    Resize(crate::cmd_resize::ResizeArgs),
    /// Convert a FAT32 volume that holds data to exFAT, in place, keeping every file (safe against power loss).
    Convert(crate::cmd_convert::ConvertArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell).
    Completions(crate::completions::CompletionsArgs),
    /// Write the man pages into a directory (used by `cargo xtask man`).
    #[command(hide = true)]
    Man(crate::completions::ManArgs),
}

/// The names of the subcommands (a target of one of these names must be
/// written as a path, `./list`).
pub const SUBCOMMANDS: &[&str] = &[
    "list",
    "advise",
    "info",
    "probe",
    "recluster",
    "resize",
    "convert",
    "completions",
    "man",
    "help",
];

/// The commands with a `--json` of their own.
const JSON_COMMANDS: &[&str] = &[
    "list",
    "advise",
    "info",
    "probe",
    "recluster",
    "resize",
    "convert",
];

/// `--json` anywhere on the line: whether it was given (before a `--`), and
/// the arguments with every `--json` put where the command takes it. Given
/// before a command's name it belongs to the command (`mkfs-alloc --json
/// info X` is `mkfs-alloc info --json X`; without this, `info` would be
/// the target of a format and refused). Before or after `help`,
/// `completions` and `man`, which have no `--json`, it is taken out: help
/// is then printed as JSON, the others are refused as JSON.
pub fn lift_json(raw: Vec<std::ffi::OsString>) -> (Vec<std::ffi::OsString>, bool) {
    let end = raw.iter().position(|a| a == "--").unwrap_or(raw.len());
    let is_json = |i: usize, a: &std::ffi::OsString| i < end && a == "--json";
    let json = raw.iter().enumerate().any(|(i, a)| is_json(i, a));
    let command = raw
        .iter()
        .enumerate()
        .skip(1)
        .find(|(i, a)| !is_json(*i, a))
        .and_then(|(_, a)| a.to_str())
        .filter(|c| SUBCOMMANDS.contains(c));
    let Some(command) = command.filter(|_| json) else {
        return (raw, json);
    };
    let mut out: Vec<std::ffi::OsString> = raw
        .iter()
        .enumerate()
        .filter(|(i, a)| !is_json(*i, a))
        .map(|(_, a)| a.clone())
        .collect();
    if JSON_COMMANDS.contains(&command) {
        // After the command's name (argument 1 once the `--json`s are out).
        out.insert(2, "--json".into());
    }
    (out, json)
}

/// `--slack` when not given: 10 % of the tree's footprint left free.
pub const DEFAULT_SLACK: f64 = mkfs_alloc::DEFAULT_SLACK_PERCENT;

/// Options of the format command (the default command).
#[derive(Debug, clap::Args)]
pub struct FormatArgs {
    /// File system to create.
    #[arg(long, value_enum, default_value_t = FsArg::Auto)]
    pub fs: FsArg,
    /// Cluster (allocation unit) size, e.g. 4K, 32K, 1M, or "auto".
    #[arg(long, short = 'c', default_value = "auto", value_name = "SIZE|auto")]
    pub cluster: String,
    /// With --cluster auto: pick the largest cluster size that keeps the waste
    /// of these files within 1% (see `mkfs-alloc advise`). May be repeated.
    #[arg(long, value_name = "PATH")]
    pub data: Vec<PathBuf>,
    /// Copy this directory's files and subdirectories into the new volume
    /// (sorted, reproducible; symlinks, devices, FIFOs and sockets skipped).
    #[arg(long, short = 'd', value_name = "DIR")]
    pub rootdir: Option<PathBuf>,
    /// With --size auto: free space to leave, in percent of the tree's
    /// footprint, 0 to 1000 (default 10).
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true)]
    pub slack: Option<f64>,
    /// With --rootdir into an image file, how file data gets there: "auto"
    /// (default) shares it with the source files where the image's file
    /// system can (reflinks), else the kernel copies it; "reflink" shares or
    /// refuses (exit 2, nothing written); "copy" reads and writes it.
    #[arg(long, value_enum, value_name = "HOW")]
    pub copy: Option<CopyArg>,
    /// Also write a bmaptool block map of the image to FILE: the blocks the
    /// format wrote or needs as zeros; `bmaptool copy` writes only those.
    /// FILE: a regular file or a new one, not a symbolic link, a device, a
    /// FIFO or the image.
    #[arg(long, value_name = "FILE")]
    pub bmap: Option<PathBuf>,
    /// "raw": TARGET is the medium; "sparse": TARGET ("-": standard output)
    /// receives an Android sparse image of a new image of --size (a regular
    /// file or a new one, not a symbolic link, a device or a FIFO).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = OutputFormat::Raw)]
    pub output_format: OutputFormat,
    /// Volume label (exFAT: up to 11 UTF-16 units; FAT32: up to 11 ASCII bytes).
    #[arg(long, short = 'L')]
    pub label: Option<String>,
    /// Volume serial number in hex (e.g. 1234ABCD or 1234-ABCD); pins every identifier written
    /// (so does SOURCE_DATE_EPOCH; otherwise the GUIDs are random).
    #[arg(long, value_name = "HEX")]
    pub serial: Option<String>,
    /// Logical sector size of the file system: 512, 1024, 2048 or 4096
    /// (default: the device's logical sector size; 512 for images, where it is
    /// also the image's block size, e.g. for a partition table).
    #[arg(long, value_name = "N")]
    pub sector_size: Option<u32>,
    /// Align the FAT and the data region to this many bytes (default 1M; less for tiny volumes).
    #[arg(long, value_name = "SIZE")]
    pub align: Option<String>,
    /// Create the image with this size, or grow an existing one (sparse);
    /// "auto" with --rootdir: the smallest that holds the tree plus --slack;
    /// on a device, use only its first SIZE bytes (a counterfeit's real capacity).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Make an EFI System Partition: FAT of the width the size allows, GPT type
    /// C12A7328-F81F-11D2-BA4B-00A0C93EC93B or MBR type 0xEF with a table.
    #[arg(long)]
    pub esp: bool,
    /// FAT12/FAT16 root directory entries (default 512; rounded up to whole sectors).
    #[arg(long, value_name = "N")]
    pub root_entries: Option<u32>,
    /// Number of FATs on FAT12/16/32: 1 or 2 (default 2; exFAT has one).
    /// One FAT leaves no copy for repair tools to fall back on.
    #[arg(long, value_name = "N")]
    pub fats: Option<u8>,
    /// Write an exFAT Volume GUID entry: --volume-guid alone a random one
    /// (derived from the serial with --serial or SOURCE_DATE_EPOCH),
    /// --volume-guid=GUID this one (as `info` and the summary show it).
    /// Off by default: exfatprogs' fsck.exfat 1.2 reports it as an unknown
    /// entry. FAT volumes have none.
    #[arg(long, value_name = "GUID", num_args = 0..=1, require_equals = true)]
    pub volume_guid: Option<Option<String>>,
    /// Volume layout: "standard", or "sd" for the SD Association's layout
    /// of a card of this size (the device's size, or --size for an image).
    #[arg(long, value_enum, default_value_t = LayoutArg::Standard)]
    pub layout: LayoutArg,
    /// Partition table: "auto" (none for an image file), "none", "mbr" or "gpt".
    #[arg(long, value_enum, default_value_t = TableArg::Auto)]
    pub table: TableArg,
    /// Discard (TRIM) the whole device before writing (default for devices that support it).
    #[arg(long, conflicts_with = "no_discard")]
    pub discard: bool,
    /// Do not discard.
    #[arg(long)]
    pub no_discard: bool,
    /// Zero the whole volume ("full format") instead of writing metadata only.
    #[arg(long)]
    pub full: bool,
    /// Do not ask for confirmation before writing to a device (required without a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Probe the device for counterfeit capacity first (`mkfs-alloc probe`,
    /// destructive); refuse to format a fake unless --size keeps the volume
    /// inside its real capacity.
    #[arg(long, conflicts_with = "dry_run")]
    pub probe: bool,
    /// Print the plan and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan and the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Read every block written back after the format and compare (the
    /// metadata, the --rootdir files, what the format relies on being zero);
    /// reports the read-back's throughput. Runs the format as a batch.
    #[arg(long, conflicts_with = "dry_run")]
    pub verify: bool,
    /// With several targets: format at most N at once (default: all).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// With several targets: serial of the first, counting up (hex, as
    /// --serial); pins each target's identifiers. Without it every target
    /// gets a fresh random serial and GUIDs, never two alike.
    #[arg(long, value_name = "HEX", conflicts_with = "serial")]
    pub serial_from: Option<String>,
    /// The number of the first target in a numbered --label (KIT{n:03}:
    /// KIT001, KIT002, ...); default 1.
    #[arg(long, value_name = "N")]
    pub number_from: Option<u64>,
    /// With several targets: format the others when some are refused
    /// (mounted, system disk, in use, ...); without it nothing is written
    /// anywhere when one is refused.
    #[arg(long)]
    pub skip_refused: bool,
    /// Append one JSON line per target to FILE (time, device serial and
    /// model, options, result): an audit trail of batches. FILE: a regular
    /// file or a new one, not a symbolic link, a device, a FIFO or a target.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// The image files or block devices to format: several format them all
    /// at once, each planned for its own size.
    #[arg(required = true, value_name = "TARGET")]
    pub targets: Vec<PathBuf>,
    /// Set by the mkfs.fat front end only (no option of its own): FAT
    /// labels keep their case, as dosfstools stores them.
    #[arg(skip)]
    pub keep_label_case: bool,
    /// Set by the mkfs.fat front end only: a floppy's BIOS fields.
    #[arg(skip)]
    pub bios: Option<mkfs_alloc::layout::BiosParams>,
}

fn size_arg(name: &str, value: &str) -> Result<u64, Failure> {
    parse_size(value).map_err(|e| usage(anyhow!("--{name}: {e}")))
}

impl FormatArgs {
    /// The `--size` value in bytes, if given.
    pub fn size_bytes(&self) -> Result<Option<u64>, Failure> {
        match &self.size {
            None => Ok(None),
            Some(s) if s.eq_ignore_ascii_case("auto") => Ok(None),
            Some(s) => {
                let v = size_arg("size", s)?;
                if v == 0 {
                    return Err(usage(anyhow!("--size: must be greater than zero (exFAT needs at least 1 MiB, FAT32 about 33 MiB)")));
                }
                Ok(Some(v))
            }
        }
    }

    /// True for `--size auto`.
    pub fn size_auto(&self) -> bool {
        self.size
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case("auto"))
    }

    /// The partition table choice.
    pub fn table_choice(&self) -> TableChoice {
        match self.table {
            TableArg::Auto => TableChoice::Auto,
            TableArg::None => TableChoice::Fixed(TableKind::None),
            TableArg::Mbr => TableChoice::Fixed(TableKind::Mbr),
            TableArg::Gpt => TableChoice::Fixed(TableKind::Gpt),
        }
    }

    /// The options for the planner.
    pub fn format_options(&self) -> Result<FormatOptions, Failure> {
        let fs = match self.fs {
            FsArg::Auto => FsChoice::Auto,
            FsArg::Exfat => FsChoice::Fixed(FsKind::Exfat),
            FsArg::Fat => FsChoice::Fat,
            FsArg::Fat32 => FsChoice::Fixed(FsKind::Fat32),
            FsArg::Fat16 => FsChoice::Fixed(FsKind::Fat16),
            FsArg::Fat12 => FsChoice::Fixed(FsKind::Fat12),
        };
        let cluster = if self.cluster.eq_ignore_ascii_case("auto") {
            ClusterChoice::Auto
        } else {
            ClusterChoice::Bytes(size_arg("cluster", &self.cluster)?)
        };
        let align = self
            .align
            .as_deref()
            .map(|a| size_arg("align", a))
            .transpose()?;
        // The serial comes from the clock (or SOURCE_DATE_EPOCH) unless
        // --serial gives it. --serial or SOURCE_DATE_EPOCH
        // pin every identifier (reproducible output); otherwise the GUIDs
        // and the MBR disk signature are fresh random values.
        let timestamp = timestamp()?;
        let given = self
            .serial
            .as_deref()
            .map(|s| parse_serial_arg("serial", s))
            .transpose()?;
        let serial = given.unwrap_or_else(|| timestamp.serial());
        let mut o = FormatOptions::new()
            .fs(fs)
            .cluster(cluster)
            .volume_guid(self.volume_guid.is_some())
            .esp(self.esp)
            .sd(self.layout == LayoutArg::Sd);
        o = if given.is_some() || std::env::var("SOURCE_DATE_EPOCH").is_ok() {
            o.pinned(serial, timestamp)
        } else {
            o.serial(serial).timestamp(timestamp)
        };
        if let Some(label) = self.label.as_deref().filter(|l| !l.is_empty()) {
            o = o.label(label);
        }
        if let Some(a) = align {
            o = o.align(a);
        }
        if let Some(Some(text)) = &self.volume_guid {
            let bytes = crate::guid::parse(text).ok_or_else(|| {
                usage(anyhow!(
                    "--volume-guid {text:?} is not a GUID; valid: {}",
                    crate::guid::FORMS
                ))
            })?;
            o = o
                .given_volume_guid(bytes)
                .map_err(|e| usage(anyhow!("--volume-guid {text:?}: {e}")))?;
        }
        // --root-entries and --fats are set at planning (`Counts`), where
        // their refusals come in the order planning checks them.
        o = o.keep_label_case(self.keep_label_case);
        if let Some(bios) = self.bios {
            o = o.bios(bios);
        }
        Ok(o)
    }
}

/// `--NAME HEX`: a serial as [`mkfs_alloc::units::parse_serial`] reads it.
pub fn parse_serial_arg(name: &str, s: &str) -> Result<u32, Failure> {
    mkfs_alloc::units::parse_serial(s).ok_or_else(|| {
        usage(anyhow!(
            "--{name} {s:?}: expected 1 to 8 hex digits, e.g. 1234ABCD, 0x1234abcd or 1234-ABCD"
        ))
    })
}

/// The clock, or `SOURCE_DATE_EPOCH` when set (reproducible builds convention).
fn timestamp() -> Result<Timestamp, Failure> {
    let Ok(v) = std::env::var("SOURCE_DATE_EPOCH") else {
        return Ok(Timestamp::now());
    };
    let secs: i64 = v.trim().parse().ok().filter(|&s| s >= 0).ok_or_else(|| {
        usage(anyhow!(
            "SOURCE_DATE_EPOCH={v:?}: expected a whole number of seconds since 1970, 0 or more"
        ))
    })?;
    Ok(Timestamp { secs, nanos: 0 })
}

#[cfg(test)]
mod tests;
