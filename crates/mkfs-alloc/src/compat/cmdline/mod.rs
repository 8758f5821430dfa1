//! The foreign command lines themselves: dosfstools 4.2's `mkfs.fat` (also
//! named `mkfs.vfat`, `mkfs.msdos`, `mkdosfs`) and exfatprogs' `mkfs.exfat`,
//! read by GNU `getopt_long`'s rules into a [`Request`], which
//! [`Request::decide`] turns into the tool's [`Decision`] once the medium
//! is known.
//!
//! ```text
//!  argv[0]   ─► FrontEnd::from_argv0
//!  argv[1..] ─► parse: getopt (GNU rules) ─► each tool's options ─► Request | Early
//!  Request + Medium ─► Request::decide ─► Decision ─► Decision::apply_to(MediumOptions)
//! ```
//!
//! A refusal names the option as written and the values it takes
//! ([`Refusal`]); the usage and version texts, and the words of a
//! [`UsageError`], are the caller's (the tools word them differently).
//! The differences from the originals are in `docs/mkfs-compat.md`.
//!
//! ```
//! use mkfs_alloc::compat::cmdline::{parse, FrontEnd};
//! use std::ffi::{OsStr, OsString};
//!
//! let front = FrontEnd::from_argv0(OsStr::new("/usr/sbin/mkfs.vfat")).expect("a front end");
//! let args: Vec<OsString> = ["-F", "32", "-n", "STICK", "/dev/sdb1"].map(OsString::from).into();
//! let req = parse(front, &args).expect("mkfs.fat's line");
//! assert_eq!((req.fat_bits, req.label.as_deref()), (Some(32), Some("STICK")));
//! ```

mod exfat;
mod fat;
mod getopt;

pub use getopt::GetoptError;

use super::{decide_exfat, decide_fat, Decision, FatRequest, Medium};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

/// Which foreign tool a command line is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrontEnd {
    /// dosfstools' mkfs.fat, under one of its names.
    Fat(&'static str),
    /// exfatprogs' mkfs.exfat.
    Exfat,
}

impl FrontEnd {
    /// The front end a program name names, if any (`/sbin/mkfs.vfat`,
    /// `mkfs.exfat.exe`): dispatch is on the file name of argv\[0\].
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

    /// The tool's name, as its messages start.
    pub fn name(self) -> &'static str {
        match self {
            FrontEnd::Fat(n) => n,
            FrontEnd::Exfat => "mkfs.exfat",
        }
    }
}

/// How a command line ends before any format.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Early {
    /// `--help` (`-h` for mkfs.exfat): the usage text, exit 0.
    Help,
    /// `--version` (`-V` for mkfs.exfat): the version, exit 0.
    Version,
    /// A usage error of the original: dosfstools and exfatprogs exit 1.
    Usage(UsageError),
    /// Refused before anything is opened: an option not supported, or a
    /// value out of range.
    Refuse(Refusal),
}

/// A usage error of the original (its words differ between the tools).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageError {
    /// No target operand.
    NoTarget,
    /// An operand beyond those the tool takes.
    Excess(OsString),
    /// mkfs.fat's `-C` without a block count.
    NeedSize,
}

/// Why an option is refused, by the option as written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The line does not parse.
    Getopt(GetoptError),
    /// An option (with its value where that decides) this crate does not do.
    Unsupported {
        /// As written (`-c`, `--mbr=y`).
        option: String,
        /// What it would have done.
        what: Option<&'static str>,
    },
    /// A value the option does not take.
    InvalidValue {
        /// As written.
        option: String,
        /// The value given.
        value: String,
        /// The values it takes.
        valid: Option<String>,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Getopt(e) => write!(f, "{e}"),
            Refusal::Unsupported { option, what } => match what {
                Some(what) => write!(f, "option {option} ({what}) is not supported"),
                None => write!(f, "option {option} is not supported"),
            },
            Refusal::InvalidValue {
                option,
                value,
                valid,
            } => {
                write!(f, "invalid value {value:?} for {option}")?;
                match valid {
                    Some(v) => write!(f, ": valid: {v}"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// What a command line asks for, in this crate's terms (each `None`/`false`
/// when not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The target as given.
    pub target: PathBuf,
    /// Create the target (`mkfs.fat -C`): it must not exist.
    pub create: bool,
    /// Bytes to use (mkfs.fat's `BLOCKS`, 1024 each).
    pub size: Option<u64>,
    /// The file system's sector size.
    pub sector: Option<u32>,
    /// The label (empty: none).
    pub label: Option<String>,
    /// The volume serial.
    pub serial: Option<u32>,
    /// The alignment of the FAT and the data region (mkfs.exfat's `-b`).
    pub align: Option<u64>,
    /// Root directory entries (FAT12/16 only).
    pub root_entries: Option<u32>,
    /// The number of FATs (mkfs.fat's `-f`).
    pub fats: Option<u8>,
    /// FAT labels stored with the case given (mkfs.fat's way).
    pub keep_label_case: bool,
    /// Zero the whole target (mkfs.exfat's `-f`).
    pub full: bool,
    /// Print little (the originals' default; mkfs.fat's `-v` clears it).
    pub quiet: bool,
    /// The pinned time (mkfs.fat's `--invariant`), in seconds since 1970.
    pub epoch: Option<i64>,
    /// Refuse a whole disk that has partitions (mkfs.fat without `-I`).
    pub refuse_partitioned_disk: bool,
    /// mkfs.fat's `-F`: the FAT width.
    pub fat_bits: Option<u8>,
    /// mkfs.fat's `-s`: sectors per cluster.
    pub spc: Option<u32>,
    /// mkfs.fat's `-a`: no alignment beyond the sector.
    pub no_align: bool,
    /// mkfs.exfat's `-c`, in bytes.
    pub exfat_cluster: Option<u64>,
    /// mkfs.exfat's `-U`: the volume GUID entry's bytes.
    pub volume_guid: Option<[u8; 16]>,
    /// mkfs.fat's line rather than mkfs.exfat's.
    is_fat: bool,
}

/// Parses a command line (without argv\[0\]) as `front`'s tool would.
///
/// # Errors
///
/// [`Early`]: `--help` or `--version`, a usage error, or a refusal.
pub fn parse(front: FrontEnd, args: &[OsString]) -> Result<Request, Early> {
    match front {
        FrontEnd::Fat(_) => fat::parse(args),
        FrontEnd::Exfat => exfat::parse(args),
    }
}

impl Request {
    /// The alignment to plan with on sectors of `sector` bytes: mkfs.fat's
    /// `-a` asks for none beyond the sector.
    pub fn align_for(&self, sector: u32) -> Option<u64> {
        if self.no_align {
            Some(u64::from(sector))
        } else {
            self.align
        }
    }

    /// Whether the label holds lower-case letters (dosfstools warns).
    pub fn lowercase_label(&self) -> bool {
        self.label
            .as_deref()
            .is_some_and(|l| l.chars().any(|c| c.is_ascii_lowercase()))
    }

    /// What the tool whose line this was parsed from would make on `m`:
    /// [`decide_fat`] for mkfs.fat's, else [`decide_exfat`] (a
    /// `Request::default()` is mkfs.exfat's).
    pub fn decide(&self, m: &Medium) -> Decision {
        if !self.is_fat {
            return decide_exfat(self.exfat_cluster, m);
        }
        let req = FatRequest {
            fat_bits: self.fat_bits,
            spc: self.spc,
            no_align: self.no_align,
            root_entries: self.root_entries,
            align: self.align_for(m.sector),
            fats: self.fats,
        };
        decide_fat(&req, m)
    }
}

/// A command line in options (`key`, as written, value) and operands.
struct Line {
    opts: Vec<(&'static str, String, String)>,
    operands: Vec<OsString>,
}

/// Parses `args` against `specs`; an option `unsupported` knows is refused
/// by name, with what it would have done.
fn split_line(
    args: &[OsString],
    specs: &[getopt::Spec],
    unsupported: fn(&str) -> Option<&'static str>,
) -> Result<Line, Early> {
    let items = getopt::parse(args, specs).map_err(|e| Early::Refuse(Refusal::Getopt(e)))?;
    let mut line = Line {
        opts: Vec::new(),
        operands: Vec::new(),
    };
    for item in items {
        match item {
            getopt::Item::Operand(w) => line.operands.push(w),
            getopt::Item::Opt { key, name, value } => {
                if let Some(what) = unsupported(key) {
                    return Err(unsupported_option(name, Some(what)));
                }
                line.opts.push((key, name, value.unwrap_or_default()));
            }
        }
    }
    Ok(line)
}

/// The refusal of `option` (as written), which would have done `what`.
fn unsupported_option(option: String, what: Option<&'static str>) -> Early {
    Early::Refuse(Refusal::Unsupported { option, what })
}

/// The refusal of `value` for `option`, which takes `valid`.
fn invalid(option: &str, value: &str, valid: Option<&str>) -> Early {
    Early::Refuse(Refusal::InvalidValue {
        option: option.to_string(),
        value: value.to_string(),
        valid: valid.map(str::to_string),
    })
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
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
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

#[cfg(test)]
mod tests;
