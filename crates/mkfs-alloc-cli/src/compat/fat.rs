//! `mkfs.fat` / `mkfs.vfat` / `mkfs.msdos` / `mkdosfs`: dosfstools 4.2's
//! command line, `mkfs.fat [OPTIONS] TARGET [BLOCKS]`.

use super::getopt::{Spec, Takes};
use super::{parse_serial, split_line, Early, Request, DOSFSTOOLS};
use mkfs_alloc::compat::{FatRequest, Note};
use mkfs_alloc::layout::units::format_size;
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

/// dosfstools 4.2's warning for a label with lower-case letters (its text
/// exactly, whatever the program's name).
pub fn label_warning(req: &Request) -> Option<&'static str> {
    req.label
        .as_deref()
        .filter(|l| l.chars().any(|c| c.is_ascii_lowercase()))
        .map(|_| "mkfs.fat: Warning: lowercase labels might not work properly on some systems")
}

/// The first line of every run and of `--help`: the dialect we follow, then
/// who we are. libblockdev reads `mkfs.fat\s+([\d.]+).+` from `--help` and
/// passes `--mbr=no` from 4.2 on.
pub fn version_line() -> String {
    format!(
        "mkfs.fat {DOSFSTOOLS} (mkfs-alloc {}; dosfstools-compatible front end)",
        env!("CARGO_PKG_VERSION")
    )
}

/// The usage text (`--help`, and after a usage error).
pub fn usage(name: &str) -> String {
    format!(
        "Usage: {name} [OPTIONS] TARGET [BLOCKS]\n\
         Make a FAT12/16/32 file system on TARGET (a block device or an image file) with\n\
         mkfs-alloc, taking dosfstools {DOSFSTOOLS}'s options. BLOCKS: 1024-byte blocks to use;\n\
         with -C, TARGET is created with that size.\n\n\
         Options:\n  \
         -a           do not align the FAT and data region (default: 1 MiB alignment)\n  \
         -C           create TARGET (BLOCKS required)\n  \
         -F 12|16|32  FAT width (default: as mkfs.fat chooses from the size)\n  \
         -f 1|2       number of FATs (default 2)\n  \
         -b 6         FAT32 backup boot sector (only 6)\n  \
         -i VOLID     volume ID, 32-bit hex\n  \
         -I           format a whole disk that holds partitions\n  \
         -n LABEL     volume label (up to 11 characters, case kept)\n  \
         --codepage=N DOS codepage of the label (labels are ASCII here)\n  \
         -r COUNT     root directory entries (FAT12/16)\n  \
         -s COUNT     sectors per cluster (a power of two up to 128)\n  \
         -S SIZE      logical sector size: 512, 1024, 2048 or 4096\n  \
         -v           verbose: print mkfs-alloc's summary\n  \
         --mbr=n|a    no fake MBR in the boot sector (the only way here)\n  \
         --variant=standard\n  \
         --invariant  volume ID 1234-ABCD and a fixed time\n  \
         --help, --version\n\
         Refused by name (exit 2): -A -c -D -g -h -l -m -M -R --offset, --mbr=y, --variant=atari.\n\
         Exit codes: 0 done; 1 no TARGET, or an I/O failure after writing began;\n\
         2 refused before anything was written. See mkfs-alloc(1)."
    )
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
        .ok_or_else(|| Early::Refuse(format!("invalid value {v:?} for {name}: valid: {valid}")))
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

/// Parses mkfs.fat's command line.
pub fn parse(name: &str, args: &[OsString]) -> Result<Request, Early> {
    let line = split_line(name, args, SPECS, unsupported)?;
    let mut req = Request {
        refuse_partitioned_disk: true,
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
                let serial = parse_serial(v.trim());
                req.serial = Some(serial.ok_or_else(|| {
                    Early::Refuse(format!(
                        "invalid value {v:?} for {opt}: valid: a 32-bit hex number, e.g. 2e24ec82"
                    ))
                })?);
            }
            "I" => req.refuse_partitioned_disk = false,
            "n" => req.label = Some(v),
            "codepage" => {
                value(&opt, &v, "a DOS codepage number", |_: &u32| true)?;
            }
            "r" => {
                // The planner's rule (mkfs.fat's upper limit too).
                let valid = format!("1..{}", mkfs_alloc::layout::fat::MAX_ROOT_ENTRIES);
                req.root_entries = Some(value(&opt, &v, &valid, |&r: &u32| {
                    mkfs_alloc::layout::FormatOptions::new()
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
                    return Err(Early::Refuse(format!(
                        "option {opt}{} (a fake MBR inside the boot sector) is not supported",
                        if v.is_empty() {
                            String::new()
                        } else {
                            format!("={v}")
                        }
                    )))
                }
                _ => {
                    return Err(Early::Refuse(format!(
                        "invalid value {v:?} for {opt}: valid: y, n, a"
                    )))
                }
            },
            "variant" => match v.as_str() {
                "standard" => {}
                "atari" => {
                    return Err(Early::Refuse(format!(
                        "option {opt}=atari (the Atari variant) is not supported"
                    )))
                }
                _ => {
                    return Err(Early::Refuse(format!(
                        "invalid value {v:?} for {opt}: valid: standard, atari"
                    )))
                }
            },
            "invariant" => o.invariant = true,
            "help" => return Err(Early::Print(format!("{}\n{}", version_line(), usage(name)))),
            "version" => return Err(Early::Print(version_line())),
            _ => return Err(Early::Refuse(format!("option {opt} is not supported"))),
        }
    }
    finish(name, req, o, line.operands)
}

/// Operands, `-C`, `--invariant` and `-v`.
fn finish(
    _name: &str,
    mut req: Request,
    o: FatOpts,
    operands: Vec<OsString>,
) -> Result<Request, Early> {
    let mut words = operands.into_iter();
    let target = words
        .next()
        .ok_or_else(|| Early::Usage("No device specified.".to_string()))?;
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
        return Err(Early::Usage(format!(
            "Excess arguments on command line: {extra:?}"
        )));
    }
    if req.create && blocks.is_none() {
        return Err(Early::Usage("Need intended size with -C.".to_string()));
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
    req.fat = Some((o.bits, o.spc, o.no_align));
    Ok(req)
}

/// The options of the request the width and cluster size depend on.
pub fn request(req: &Request) -> FatRequest {
    let (fat_bits, spc, no_align) = req.fat.unwrap_or_default();
    FatRequest {
        fat_bits,
        spc,
        no_align,
        root_entries: req.root_entries,
        align: req.align,
        fats: req.fats,
    }
}

/// A note's words, after `NAME: note: `.
pub fn note_text(n: &Note) -> String {
    match *n {
        Note::RootEntriesOnFat32 => {
            "root directory entries specified with -r have no effect on FAT32".to_string()
        }
        Note::OutsideMargins {
            fs,
            cluster,
            clusters,
            instead,
        } => {
            let why = format!(
                "mkfs.fat {DOSFSTOOLS} would make {} with {} clusters ({clusters} of them); mkfs-alloc's layout \
                 leaves a count outside that width's range with its 16-cluster margins (FAT12 1..4,068, \
                 FAT16 4,101..65,508, FAT32 65,541 and more), where readers disagree about the width",
                fs.id().to_uppercase(),
                format_size(cluster),
            );
            match instead {
                Some((bytes, n)) => format!(
                    "{why}; made it with {} clusters ({n} of them) instead",
                    format_size(bytes)
                ),
                None => format!(
                    "{why}; made the width the volume's size allows, at mkfs-alloc's cluster size, instead"
                ),
            }
        }
        _ => "the volume differs from mkfs.fat's".to_string(),
    }
}
