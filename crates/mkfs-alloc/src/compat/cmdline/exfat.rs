//! `mkfs.exfat`: exfatprogs' command line, `mkfs.exfat [OPTIONS] DEVICE`
//! (its `mkfs/main.c`, <https://github.com/exfatprogs/exfatprogs>).

use super::getopt::{Spec, Takes};
use super::{invalid, parse_bytes, split_line, Early, Request, UsageError};
use mkfs_alloc_partition::Guid;
use std::ffi::OsString;
use std::path::PathBuf;

const fn o(
    short: Option<char>,
    long: Option<&'static str>,
    takes: Takes,
    key: &'static str,
) -> Spec {
    Spec {
        short,
        long,
        takes,
        key,
    }
}

/// exfatprogs' options (1.2.0 and the later `-U`, `-q`, `-s` and the
/// options we refuse).
const SPECS: &[Spec] = &[
    o(Some('L'), Some("volume-label"), Takes::Value, "label"),
    o(Some('n'), None, Takes::Value, "label"),
    o(Some('c'), Some("cluster-size"), Takes::Value, "cluster"),
    o(Some('b'), Some("boundary-align"), Takes::Value, "align"),
    o(Some('s'), Some("sector-size"), Takes::Value, "sector"),
    o(Some('f'), Some("full-format"), Takes::Nothing, "full"),
    o(Some('U'), Some("volume-guid"), Takes::Value, "guid"),
    o(Some('q'), Some("quiet"), Takes::Nothing, "quiet"),
    o(Some('v'), Some("verbose"), Takes::Nothing, "verbose"),
    o(Some('V'), Some("version"), Takes::Nothing, "version"),
    o(Some('h'), Some("help"), Takes::Nothing, "help"),
    o(None, Some("pack-bitmap"), Takes::Nothing, "pack-bitmap"),
    o(Some('C'), None, Takes::Nothing, "C"),
    o(Some('F'), None, Takes::Nothing, "F"),
    o(Some('K'), None, Takes::Nothing, "K"),
    o(Some('P'), None, Takes::Value, "P"),
    o(None, Some("upcase"), Takes::Value, "upcase"),
];

/// Options we know but do not do.
fn unsupported(key: &str) -> Option<&'static str> {
    Some(match key {
        "pack-bitmap" => "moving the allocation bitmap into the FAT's alignment gap",
        "C" | "F" | "K" | "P" => "an option of later exfatprogs versions",
        "upcase" => "a custom up-case table",
        _ => return None,
    })
}

/// Parses mkfs.exfat's command line (without argv\[0\]).
///
/// # Errors
///
/// See [`super::parse`].
pub fn parse(args: &[OsString]) -> Result<Request, Early> {
    let line = split_line(args, SPECS, unsupported)?;
    let mut req = Request::default();
    for (key, opt, v) in line.opts {
        let size = |valid: &str| {
            parse_bytes(v.trim())
                .filter(|n| n.is_power_of_two())
                .ok_or_else(|| invalid(&opt, &v, Some(valid)))
        };
        match key {
            "label" => req.label = Some(v.clone()),
            "cluster" => {
                req.exfat_cluster = Some(size("a power of two, in bytes or with k/K, m/M")?)
            }
            "align" => req.align = Some(size("a power of two, in bytes or with k/K, m/M")?),
            "sector" => {
                let s = size("512, 1024, 2048, 4096")?;
                req.sector = Some(u32::try_from(s).map_err(|_| invalid(&opt, &v, None))?);
            }
            "full" => req.full = true,
            "guid" => {
                // exfatprogs' form: the bytes in text order; not all zero.
                let valid =
                    "32 hexadecimal digits, with or without dashes (8-4-4-4-12), not all zero";
                let g = Guid::parse(v.trim())
                    .filter(|g| *g != Guid::NIL)
                    .ok_or_else(|| invalid(&opt, &v, Some(valid)))?;
                req.volume_guid = Some(g.to_bytes());
            }
            "quiet" => req.quiet = true,
            "verbose" => {}
            "version" => return Err(Early::Version),
            "help" => return Err(Early::Help),
            _ => return Err(super::unsupported_option(opt, None)),
        }
    }
    let mut words = line.operands.into_iter();
    let target = words.next().ok_or(Early::Usage(UsageError::NoTarget))?;
    if let Some(extra) = words.next() {
        return Err(Early::Usage(UsageError::Excess(extra)));
    }
    req.target = PathBuf::from(target);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
    }

    #[test]
    fn lines_callers_pass() {
        let r = parse(&words(&["-L", "", "/dev/sdb1"])).expect("GParted's line");
        assert_eq!(
            (r.label.as_deref(), r.target.to_str()),
            (Some(""), Some("/dev/sdb1"))
        );
        let r = parse(&words(&["-c", "32768", "/dev/sdb1"])).expect("kpmcore's line");
        assert_eq!(r.exfat_cluster, Some(32768));
        let r = parse(&words(&["/dev/sdb1", "-n", "STICK"])).expect("libblockdev's line");
        assert_eq!(r.label.as_deref(), Some("STICK"));
        let r = parse(&words(&[
            "-U",
            "00112233-4455-6677-8899-aabbccddeeff",
            "x.img",
        ]))
        .expect("a given GUID");
        assert_eq!(
            r.volume_guid.map(|g| (g[0], g[3], g[15])),
            Some((0x00, 0x33, 0xFF))
        );
        let r = parse(&words(&[
            "--cluster-size=1M",
            "-b",
            "4M",
            "-f",
            "-q",
            "x.img",
        ]))
        .expect("options");
        assert_eq!(
            (r.exfat_cluster, r.align, r.full, r.quiet),
            (Some(1 << 20), Some(4 << 20), true, true)
        );
    }

    #[test]
    fn refusals() {
        for line in [
            &["--pack-bitmap", "x"][..],
            &["-U", "0x1", "x"],
            &["-U", "00000000-0000-0000-0000-000000000000", "x"],
            &["-c", "3000", "x"],
            &["-x", "x"],
        ] {
            assert!(
                matches!(parse(&words(line)), Err(Early::Refuse(_))),
                "{line:?}"
            );
        }
        assert!(matches!(parse(&words(&[])), Err(Early::Usage(_))));
        assert!(parse(&words(&["-V"])) == Err(Early::Version));
    }
}
