//! `mkfs.fat` / `mkfs.vfat` / `mkfs.msdos` / `mkdosfs`: dosfstools 4.2's
//! command line, `mkfs.fat [OPTIONS] TARGET [BLOCKS]` (its `mkfs.fat.c`,
//! <https://github.com/dosfstools/dosfstools/blob/v4.2/src/mkfs.fat.c>).

use super::getopt::{Spec, Takes};
use super::{invalid, split_line, unsupported_option, Early, Request, UsageError};
use crate::units::parse_serial;
use std::ffi::OsString;
use std::path::PathBuf;

/// `--invariant`'s volume ID and time (dosfstools 4.2's constants).
const INVARIANT_SERIAL: u32 = 0x1234_ABCD;
const INVARIANT_EPOCH: i64 = 1_426_325_213;

const fn s(c: char, takes: Takes, key: &'static str) -> Spec {
    Spec {
        short: Some(c),
        long: None,
        takes,
        key,
    }
}

const fn l(name: &'static str, takes: Takes, key: &'static str) -> Spec {
    Spec {
        short: None,
        long: Some(name),
        takes,
        key,
    }
}

/// Every option of dosfstools 4.2's mkfs.fat (and `--version`).
const SPECS: &[Spec] = &[
    s('a', Takes::Nothing, "a"),
    s('A', Takes::Nothing, "A"),
    s('b', Takes::Value, "b"),
    s('c', Takes::Nothing, "c"),
    s('C', Takes::Nothing, "C"),
    s('D', Takes::Value, "D"),
    s('f', Takes::Value, "f"),
    s('F', Takes::Value, "F"),
    s('g', Takes::Value, "g"),
    s('h', Takes::Value, "h"),
    s('i', Takes::Value, "i"),
    s('I', Takes::Nothing, "I"),
    s('l', Takes::Value, "l"),
    s('m', Takes::Value, "m"),
    s('M', Takes::Value, "M"),
    s('n', Takes::Value, "n"),
    s('r', Takes::Value, "r"),
    s('R', Takes::Value, "R"),
    s('s', Takes::Value, "s"),
    s('S', Takes::Value, "S"),
    s('v', Takes::Nothing, "v"),
    l("mbr", Takes::Optional, "mbr"),
    l("codepage", Takes::Value, "codepage"),
    l("variant", Takes::Value, "variant"),
    l("invariant", Takes::Nothing, "invariant"),
    l("offset", Takes::Value, "offset"),
    l("help", Takes::Nothing, "help"),
    l("version", Takes::Nothing, "version"),
];

/// Options we know but do not do, with what they would have done.
fn unsupported(key: &str) -> Option<&'static str> {
    Some(match key {
        "A" => "the Atari variant",
        "c" => "a bad-block scan",
        "D" => "setting the BIOS drive number",
        "g" => "setting the disk geometry",
        "h" => "setting the hidden sectors (mkfs-alloc records the partition offset itself)",
        "l" => "a bad-block list",
        "m" => "a boot message file",
        "M" => "setting the media descriptor",
        "R" => "setting the reserved sectors (mkfs-alloc pads them to align the FAT)",
        "offset" => "writing at an offset into the target",
        _ => return None,
    })
}

/// The value of an option read as dosfstools reads it (C's `strtol` with
/// base 0: decimal, `0x` hexadecimal, `0` octal, leading white space and a
/// sign allowed, nothing after the number), or a refusal naming it and the
/// valid values.
fn value<T: TryFrom<i128>>(
    name: &str,
    v: &str,
    valid: &str,
    ok: impl Fn(&T) -> bool,
) -> Result<T, Early> {
    super::strtol(v)
        .and_then(|n| T::try_from(n).ok())
        .filter(|x| ok(x))
        .ok_or_else(|| invalid(name, v, Some(valid)))
}

/// What mkfs.fat's options ask for, before the target is looked at.
#[derive(Default)]
struct FatOpts {
    bits: Option<u8>,
    spc: Option<u32>,
    no_align: bool,
    invariant: bool,
    verbose: bool,
}

/// Parses mkfs.fat's command line (without argv\[0\]).
///
/// # Errors
///
/// See [`super::parse`].
pub fn parse(args: &[OsString]) -> Result<Request, Early> {
    let line = split_line(args, SPECS, unsupported)?;
    let mut req = Request {
        refuse_partitioned_disk: true,
        is_fat: true,
        ..Request::default()
    };
    let mut o = FatOpts::default();
    for (key, opt, v) in line.opts {
        match key {
            "a" => o.no_align = true,
            "b" => {
                value(&opt, &v, "6 (where mkfs-alloc puts it)", |&b: &u32| b == 6)?;
            }
            "C" => req.create = true,
            "f" => {
                let valid = "1, 2 (mkfs.fat's 3 and 4 are not supported)";
                req.fats = Some(value(&opt, &v, valid, |f: &u8| [1, 2].contains(f))?);
            }
            "F" => {
                o.bits = Some(value(&opt, &v, "12, 16, 32", |b: &u8| {
                    [12, 16, 32].contains(b)
                })?)
            }
            "i" => {
                let serial = parse_serial(&v);
                let valid = "a 32-bit hex number, e.g. 2e24ec82";
                req.serial = Some(serial.ok_or_else(|| invalid(&opt, &v, Some(valid)))?);
            }
            "I" => req.refuse_partitioned_disk = false,
            "n" => req.label = Some(v),
            "codepage" => {
                value(&opt, &v, "a DOS codepage number", |_: &u32| true)?;
            }
            "r" => {
                // The planner's rule (mkfs.fat's upper limit too).
                let valid = format!("1..{}", mkfs_alloc_layout::fat::MAX_ROOT_ENTRIES);
                req.root_entries = Some(value(&opt, &v, &valid, |&r: &u32| {
                    mkfs_alloc_layout::FormatOptions::new()
                        .root_entries(r)
                        .is_ok()
                })?)
            }
            "s" => {
                let ok = |&c: &u32| c.is_power_of_two() && c <= 128;
                o.spc = Some(value(&opt, &v, "1, 2, 4, ... 128", ok)?);
            }
            "S" => {
                let ok = |c: &u32| [512, 1024, 2048, 4096].contains(c);
                let valid = "512, 1024, 2048, 4096 (mkfs.fat's larger sizes are not supported)";
                req.sector = Some(value(&opt, &v, valid, ok)?)
            }
            "v" => o.verbose = true,
            "mbr" => match v.as_str() {
                "n" | "no" | "a" | "auto" => {}
                "" | "y" | "yes" => {
                    let written = if v.is_empty() {
                        opt
                    } else {
                        format!("{opt}={v}")
                    };
                    let what = "a fake MBR inside the boot sector";
                    return Err(unsupported_option(written, Some(what)));
                }
                _ => return Err(invalid(&opt, &v, Some("y, n, a"))),
            },
            "variant" => match v.as_str() {
                "standard" => {}
                "atari" => {
                    let what = Some("the Atari variant");
                    return Err(unsupported_option(format!("{opt}=atari"), what));
                }
                _ => return Err(invalid(&opt, &v, Some("standard, atari"))),
            },
            "invariant" => o.invariant = true,
            "help" => return Err(Early::Help),
            "version" => return Err(Early::Version),
            _ => return Err(unsupported_option(opt, None)),
        }
    }
    finish(req, o, line.operands)
}

/// Operands, `-C`, `--invariant` and `-v`.
fn finish(mut req: Request, o: FatOpts, operands: Vec<OsString>) -> Result<Request, Early> {
    let mut words = operands.into_iter();
    let target = words.next().ok_or(Early::Usage(UsageError::NoTarget))?;
    let blocks = words
        .next()
        .map(|b| {
            let b = b.to_string_lossy().into_owned();
            value(
                "BLOCKS",
                &b,
                "a positive number of 1024-byte blocks",
                |&n: &u64| n > 0 && n < 1 << 50,
            )
        })
        .transpose()?;
    if let Some(extra) = words.next() {
        return Err(Early::Usage(UsageError::Excess(extra)));
    }
    if req.create && blocks.is_none() {
        return Err(Early::Usage(UsageError::NeedSize));
    }
    req.target = PathBuf::from(target);
    req.size = blocks.map(|b| b * 1024);
    // mkfs.fat keeps the label's case, and writes no label entry for a
    // blank label or "NO NAME" (its boot sector says "NO NAME" then).
    req.keep_label_case = true;
    if let Some(l) = &req.label {
        let t = l.trim_end_matches(' ');
        if t.is_empty() || t == "NO NAME" {
            req.label = Some(String::new());
        }
    }
    if o.invariant {
        req.serial = req.serial.or(Some(INVARIANT_SERIAL));
        req.epoch = Some(INVARIANT_EPOCH);
    }
    req.quiet = !o.verbose;
    (req.fat_bits, req.spc, req.no_align) = (o.bits, o.spc, o.no_align);
    Ok(req)
}
