//! Compatibility front ends: the binary answers to `mkfs.fat`, `mkfs.vfat`,
//! `mkfs.msdos`, `mkdosfs` and `mkfs.exfat` (a symbolic or hard link
//! named so; dispatch is on the file name of argv[0]).
//!
//! ```text
//!  argv ─► getopt (GNU rules) ─► fat.rs / exfat.rs: the foreign options ─► Request
//!  Request ─► Target::inspect (read-only) ─► the width and cluster size that tool
//!             would choose (dosfs.rs for mkfs.fat), checked with MediumOptions::plan
//!          ─► mkfs-alloc's own arguments ─► args::Cli ─► cmd_format::run
//! ```
//!
//! Nothing here writes: the format runs through the same path as
//! `mkfs-alloc --table none --yes ...`, so every check of the CLI applies.
//! The lines callers pass, the differences from the originals and the exit
//! codes are in `docs/mkfs-compat.md`.

mod dosfs;
mod exfat;
mod fat;
mod getopt;

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsKind};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::MediumOptions;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The version of the foreign command lines the front ends follow.
const DOSFSTOOLS: &str = "4.2";

/// Which foreign tool the binary is standing in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    /// dosfstools' mkfs.fat, under one of its names.
    Fat(&'static str),
    /// exfatprogs' mkfs.exfat.
    Exfat,
}

impl FrontEnd {
    /// The front end argv[0] names, if any (`/sbin/mkfs.vfat`, `mkfs.exfat.exe`).
    pub fn from_argv0(argv0: &OsStr) -> Option<FrontEnd> {
        let name = Path::new(argv0).file_name()?.to_str()?;
        let name = name.strip_suffix(".exe").unwrap_or(name);
        match name {
            "mkfs.fat" => Some(FrontEnd::Fat("mkfs.fat")),
            "mkfs.vfat" => Some(FrontEnd::Fat("mkfs.vfat")),
            "mkfs.msdos" => Some(FrontEnd::Fat("mkfs.msdos")),
            "mkdosfs" => Some(FrontEnd::Fat("mkdosfs")),
            "mkfs.exfat" => Some(FrontEnd::Exfat),
            _ => None,
        }
    }

    /// The name messages start with.
    fn name(self) -> &'static str {
        match self {
            FrontEnd::Fat(n) => n,
            FrontEnd::Exfat => "mkfs.exfat",
        }
    }
}

/// How a command line ends before any format.
#[derive(Debug)]
pub enum Early {
    /// Print this on stdout and exit 0 (`--help`, `--version`).
    Print(String),
    /// A usage error of the original (no target, too many operands): the
    /// message and the usage on stderr, exit 1 as dosfstools and exfatprogs
    /// (kpmcore probes `mkfs.fat` and `mkfs.exfat` without arguments and
    /// accepts exit 0 or 1).
    Usage(String),
    /// Refused before anything is opened: an option we do not support
    /// (named), or a value out of range; exit 2.
    Refuse(String),
}

/// What the front end was asked to make, in mkfs-alloc's terms.
#[derive(Debug, Default)]
pub struct Request {
    /// The target as given.
    pub target: PathBuf,
    /// Create the target (`mkfs.fat -C`): it must not exist.
    pub create: bool,
    /// Bytes to use (`BLOCKS` KiB): `--size`.
    pub size: Option<u64>,
    /// `--sector-size`.
    pub sector: Option<u32>,
    /// `--label` (empty: none).
    pub label: Option<String>,
    /// `--serial`.
    pub serial: Option<u32>,
    /// `--align`.
    pub align: Option<u64>,
    /// `--root-entries` (FAT12/16 only).
    pub root_entries: Option<u32>,
    /// `--fats` (mkfs.fat's `-f`).
    pub fats: Option<u8>,
    /// FAT labels stored with the case given (mkfs.fat's way).
    pub keep_label_case: bool,
    /// `--full`.
    pub full: bool,
    /// `-q` (the originals print little; mkfs-alloc prints a summary).
    pub quiet: bool,
    /// The pinned time (`--invariant`), as `SOURCE_DATE_EPOCH`.
    pub epoch: Option<i64>,
    /// The whole-disk check of mkfs.fat (`-I` turns it off).
    pub refuse_partitioned_disk: bool,
    /// mkfs.fat's `-F`, `-s` and `-a`.
    pub fat: Option<(Option<u8>, Option<u32>, bool)>,
    /// mkfs.exfat's `-c`, in bytes.
    pub exfat_cluster: Option<u64>,
    /// mkfs.exfat's `-U`: the volume GUID entry's bytes.
    pub volume_guid: Option<[u8; 16]>,
}

/// The medium the request lands on, read-only.
pub struct Medium {
    /// Bytes the volume may use.
    pub bytes: u64,
    /// The target's logical block size.
    pub block: u32,
    /// The file system's sector size (`-S`, else the block size).
    pub sector: u32,
    /// An image file or a removable device.
    pub not_fixed: bool,
    /// The alignment the CLI defaults to on this target.
    align: Option<u64>,
}

impl Medium {
    /// The file system `MediumOptions::plan` makes of `fs` at `cluster` bytes
    /// placed as `p` (and its cluster count), or `None` if it refuses.
    pub fn accepts(
        &self,
        fs: FsChoice,
        cluster: ClusterChoice,
        p: Placing,
        fats: Option<u8>,
    ) -> Option<(FsKind, u32)> {
        let small = matches!(fs, FsChoice::Fixed(FsKind::Fat12 | FsKind::Fat16));
        let mut format = FormatOptions::new()
            .fs(fs)
            .cluster(cluster)
            .align(p.align)
            .serial(0);
        if let Some(n) = p.root_entries.filter(|_| small) {
            format = format.root_entries(n).ok()?;
        }
        if let Some(n) = fats {
            format = format.fats(n).ok()?;
        }
        let opts = MediumOptions::new()
            .format(format)
            .table(TableKind::None)
            .whole_disk(false)
            .sector_size(self.sector)
            .ok()?;
        let plan = opts.plan(self.bytes, self.block).ok()?;
        Some((plan.layout().fs(), plan.layout().cluster_count()))
    }
}

/// Where the FAT structures go: the alignment and the root directory.
#[derive(Debug, Clone, Copy)]
pub struct Placing {
    /// `--align`, in bytes.
    pub align: u64,
    /// `--root-entries` (FAT12/16).
    pub root_entries: Option<u32>,
}

/// What a front end decided: mkfs-alloc's `--fs` and `--cluster`, and
/// notes on where it differs from the original.
pub struct Decision {
    /// `--fs`.
    pub fs: &'static str,
    /// `--cluster` (bytes, or `auto`).
    pub cluster: String,
    /// `--root-entries`: the original's count (a floppy's 224; whole
    /// clusters where it aligns).
    pub root_entries: Option<u32>,
    /// `--align`, unless `-a`/`-b` gave it.
    pub align: Option<u64>,
    /// A floppy's BIOS fields (media, geometry, drive), where the original
    /// writes them; `None`: a fixed disk's.
    pub bios: Option<mkfs_alloc::layout::BiosParams>,
    /// Printed on stderr before the format.
    pub notes: Vec<String>,
}

/// A command line in options (`key`, as written, value) and operands.
pub struct Line {
    /// The options, in order.
    pub opts: Vec<(&'static str, String, String)>,
    /// The operands, in order.
    pub operands: Vec<OsString>,
}

/// Parses `args` against `specs`; an option `unsupported` knows is refused
/// by name, with what it would have done.
pub fn split_line(
    name: &str,
    args: &[OsString],
    specs: &[getopt::Spec],
    unsupported: fn(&str) -> Option<&'static str>,
) -> Result<Line, Early> {
    let items = getopt::parse(args, specs)
        .map_err(|e| Early::Refuse(format!("{e} (see {name} --help)")))?;
    let mut line = Line {
        opts: Vec::new(),
        operands: Vec::new(),
    };
    for item in items {
        match item {
            getopt::Item::Operand(w) => line.operands.push(w),
            getopt::Item::Opt { key, name, value } => {
                if let Some(what) = unsupported(key) {
                    return Err(Early::Refuse(format!(
                        "option {name} ({what}) is not supported"
                    )));
                }
                line.opts.push((key, name, value.unwrap_or_default()));
            }
        }
    }
    Ok(line)
}

/// Runs the front end on the whole command line (argv[0] included).
pub fn run(front: FrontEnd, raw: &[OsString]) -> ExitCode {
    let name = front.name();
    let args = raw.get(1..).unwrap_or(&[]);
    let parsed = match front {
        FrontEnd::Fat(_) => fat::parse(name, args),
        FrontEnd::Exfat => exfat::parse(args),
    };
    let req = match parsed {
        Ok(r) => r,
        Err(Early::Print(text)) => {
            outln!("{}", text.trim_end());
            return ExitCode::SUCCESS;
        }
        Err(Early::Usage(msg)) => {
            eprintln!("{msg}");
            eprintln!("{}", usage_text(front));
            return ExitCode::from(1);
        }
        Err(Early::Refuse(msg)) => {
            eprintln!("{name}: {msg}");
            return ExitCode::from(2);
        }
    };
    if let FrontEnd::Fat(_) = front {
        // dosfstools prints its version first on every run.
        outln!("{}", fat::version_line());
        if let Some(w) = fat::label_warning(&req) {
            eprintln!("{w}");
        }
    }
    match format(front, req) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("{name}: error: {:#}", f.error());
            ExitCode::from(f.code())
        }
    }
}

/// The original's usage text (with our name for what is not supported).
fn usage_text(front: FrontEnd) -> String {
    match front {
        FrontEnd::Fat(name) => fat::usage(name),
        FrontEnd::Exfat => exfat::usage(),
    }
}

/// Inspects the target, decides, and formats through `cmd_format`.
fn format(front: FrontEnd, mut req: Request) -> Result<(), Failure> {
    let exists = std::fs::symlink_metadata(&req.target).is_ok();
    if req.create && exists {
        return Err(usage(anyhow!(
            "unable to create {}: it exists (-C creates a new file; leave -C out to format it)",
            req.target.display()
        )));
    }
    if !req.create && !exists {
        return Err(usage(anyhow!(
            "unable to open {}: no such file or device (-C BLOCKS creates an image)",
            req.target.display()
        )));
    }
    let target = Target::inspect(&req.target, req.size, req.sector, true)?;
    if req.refuse_partitioned_disk {
        refuse_partitioned_disk(&target, &req.target)?;
    }
    let medium = Medium {
        bytes: target.size_bytes(),
        block: target.block_size(),
        sector: req.sector.unwrap_or(target.block_size()),
        not_fixed: target.device().is_none_or(|d| d.removable),
        align: target.preferred_align(),
    };
    drop(target);
    if let Some((_, _, true)) = req.fat {
        // mkfs.fat -a: no alignment beyond the sector.
        req.align = Some(u64::from(medium.sector));
    }
    let decision = match front {
        FrontEnd::Fat(_) => fat::decide(&req, &medium),
        FrontEnd::Exfat => exfat::decide(&req, &medium),
    };
    for n in &decision.notes {
        eprintln!("{}: note: {n}", front.name());
    }
    let argv = mkfs_alloc_args(&req, &decision);
    if !req.quiet {
        eprintln!(
            "{}: as: {}{}",
            front.name(),
            shell_words(&argv),
            beyond_options(&req, &decision)
        );
    }
    let mut cli = <crate::args::Cli as clap::Parser>::try_parse_from(&argv).map_err(|e| {
        usage(anyhow!(
            "internal: mkfs-alloc refused its own arguments {argv:?}: {e}"
        ))
    })?;
    // What mkfs-alloc's own command line has no option for.
    cli.format.keep_label_case = req.keep_label_case;
    cli.format.bios = decision.bios;
    if let Some(epoch) = req.epoch {
        if std::env::var_os("SOURCE_DATE_EPOCH").is_none() {
            std::env::set_var("SOURCE_DATE_EPOCH", epoch.to_string());
        }
    }
    crate::cmd_format::run(cli.format)
}

/// mkfs.fat without `-I` refuses a whole disk that has partition devices
/// (dosfstools 4.2 asks whether the device has children).
fn refuse_partitioned_disk(target: &Target, path: &Path) -> Result<(), Failure> {
    let Some(d) = target.device().filter(|d| d.is_whole_disk) else {
        return Ok(());
    };
    if !d.partitions.iter().any(|p| p.path.exists()) {
        return Ok(());
    }
    Err(usage(anyhow!(
        "{} is a whole disk with partitions; not making a file system across it \
         (give a partition, or use -I to override)",
        path.display()
    )))
}

/// What the front end sets that mkfs-alloc's command line cannot say, for
/// the `as:` line (empty when nothing).
fn beyond_options(req: &Request, d: &Decision) -> String {
    let mut more = Vec::new();
    if req.keep_label_case && fat::label_warning(req).is_some() {
        more.push("the label's case kept".to_string());
    }
    if let Some(b) = d.bios {
        more.push(format!(
            "media 0x{:02X}, {} heads, {} sectors per track, drive 0x{:02X}",
            b.media, b.heads, b.sectors_per_track, b.drive
        ));
    }
    if more.is_empty() {
        String::new()
    } else {
        format!(" (and, as mkfs.fat: {})", more.join("; "))
    }
}

/// The command line as a shell would take it, for the note.
fn shell_words(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.to_string_lossy();
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The arguments of `mkfs-alloc` for the request.
fn mkfs_alloc_args(req: &Request, d: &Decision) -> Vec<OsString> {
    let mut a: Vec<OsString> = [
        "mkfs-alloc",
        "--table",
        "none",
        "--yes",
        "--fs",
        d.fs,
        "--cluster",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    a.push(d.cluster.clone().into());
    let mut opt = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            a.push(name.into());
            a.push(v.into());
        }
    };
    opt("--sector-size", req.sector.map(|s| s.to_string()));
    opt("--label", req.label.clone().filter(|l| !l.is_empty()));
    opt("--serial", req.serial.map(|s| format!("{s:08X}")));
    opt("--size", req.size.map(|s| s.to_string()));
    opt("--align", req.align.or(d.align).map(|s| s.to_string()));
    opt("--fats", req.fats.map(|f| f.to_string()));
    let small = matches!(d.fs, "fat12" | "fat16");
    let root = d.root_entries.or(req.root_entries);
    opt(
        "--root-entries",
        root.filter(|_| small).map(|r| r.to_string()),
    );
    if let Some(g) = &req.volume_guid {
        a.push(format!("--volume-guid={}", crate::guid::text(g)).into());
    }
    if req.full {
        a.push("--full".into());
    }
    if req.quiet {
        a.push("-q".into());
    }
    a.push("--".into());
    a.push(plain_target(&req.target));
    a
}

/// A bare relative name (`list`) as a path (`./list`): mkfs-alloc takes a
/// subcommand's name for a mistake, mkfs.fat for a file.
fn plain_target(p: &Path) -> OsString {
    if p.is_relative() && p.components().count() == 1 {
        Path::new(".").join(p).into_os_string()
    } else {
        p.as_os_str().to_owned()
    }
}

/// Parses a size the way exfatprogs does: bytes, or a `k`/`K`/`m`/`M` suffix.
fn parse_bytes(s: &str) -> Option<u64> {
    let (num, shift) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 10),
        (i, 'm' | 'M') => (&s[..i], 20),
        _ => (s, 0),
    };
    let n: u64 = num.parse().ok()?;
    n.checked_mul(1 << shift)
}

/// C's `strtol(s, &end, 0)` where `*end` must be the string's end: leading
/// white space, a sign, then `0x`/`0X` hexadecimal, `0` octal or decimal
/// digits, and nothing else (`None`, also on overflow).
fn strtol(s: &str) -> Option<i128> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .filter(|h| h.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (radix, digits) = match hex {
        Some(h) => (16, h),
        None if t.len() > 1 && t.starts_with('0') => (8, &t[1..]),
        None => (10, t),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = i128::from_str_radix(digits, radix).ok()?;
    Some(if neg { -n } else { n })
}

/// Parses a 32-bit volume serial in hex (`1234abcd`, `0x1234ABCD`, `1234-ABCD`).
fn parse_serial(s: &str) -> Option<u32> {
    let t = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let t: String = match t.split_once('-') {
        Some((a, b)) if a.len() == 4 && b.len() == 4 => format!("{a}{b}"),
        Some(_) => return None,
        None => t.to_string(),
    };
    if t.is_empty() || t.len() > 8 || !t.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&t, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for (n, f) in [
            ("/usr/sbin/mkfs.vfat", Some(FrontEnd::Fat("mkfs.vfat"))),
            ("mkfs.fat", Some(FrontEnd::Fat("mkfs.fat"))),
            ("mkfs.msdos", Some(FrontEnd::Fat("mkfs.msdos"))),
            ("mkdosfs", Some(FrontEnd::Fat("mkdosfs"))),
            ("mkfs.exfat.exe", Some(FrontEnd::Exfat)),
            ("./mkfs.exfat", Some(FrontEnd::Exfat)),
            ("mkfs-alloc", None),
            ("mkfs.ext4", None),
        ] {
            assert_eq!(FrontEnd::from_argv0(OsStr::new(n)), f, "{n}");
        }
    }

    #[test]
    fn values() {
        assert_eq!(parse_bytes("32768"), Some(32768));
        assert_eq!(parse_bytes("32k"), Some(32768));
        assert_eq!(parse_bytes("1M"), Some(1 << 20));
        assert_eq!(parse_bytes("1G"), None);
        assert_eq!(parse_bytes(""), None);
        assert_eq!(strtol("0x20"), Some(32));
        assert_eq!(strtol("010"), Some(8));
        assert_eq!(strtol(" 0X1000"), Some(4096));
        assert_eq!(strtol("-5"), Some(-5));
        assert_eq!(strtol("0"), Some(0));
        for bad in ["08", "0x", "12 ", "1e3", "", "-", "0xg", "32k"] {
            assert_eq!(strtol(bad), None, "{bad:?}");
        }
        assert_eq!(parse_serial("2e24ec82"), Some(0x2E24_EC82));
        assert_eq!(parse_serial("0x1234ABCD"), Some(0x1234_ABCD));
        assert_eq!(parse_serial("2E24-EC82"), Some(0x2E24_EC82));
        assert_eq!(parse_serial("123456789"), None);
        assert_eq!(parse_serial("xyz"), None);
        assert_eq!(plain_target(Path::new("list")), OsString::from("./list"));
        assert_eq!(
            plain_target(Path::new("/dev/sdb1")),
            OsString::from("/dev/sdb1")
        );
    }
}
