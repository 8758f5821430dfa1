//! Size strings (`4K`, `1MiB`, `8G`, `8GB`) and volume serials parsed for
//! the command line and other front ends, beside the formatting and the
//! binary units of the layout crate (re-exported here, so one module holds
//! both directions), and the UTC text of a time for reports.

pub use mkfs_alloc_layout::units::{
    format_count, format_size, plural, Count, Size, GIB, KIB, MIB, TIB,
};

/// What [`parse_size`] accepts, in words (the text of every size error).
pub const ACCEPTED_SIZES: &str = "a whole number of bytes, optionally followed without a space by \
K, M, G, T, P or E (binary: 1K = 1024; same as KiB, MiB, GiB, TiB, PiB, EiB) \
or kB, MB, GB, TB, PB, EB (decimal: 1kB = 1000), or B for bytes; \
e.g. 512, 4K, 1MiB, 8G, 8GB; at most 16 EiB - 1 byte";

/// Why a size string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// Nothing was given.
    #[error("empty size; expected {ACCEPTED_SIZES}")]
    Empty,
    /// The number part is missing or malformed (including negative numbers).
    #[error("invalid size {0:?}; expected {ACCEPTED_SIZES}")]
    Malformed(String),
    /// The unit suffix is not one we know.
    #[error("unknown unit {unit:?} in size {input:?}; expected {ACCEPTED_SIZES}")]
    Unit {
        /// The full input.
        input: String,
        /// The suffix that was not recognised.
        unit: String,
    },
    /// The value does not fit in 64 bits.
    #[error("size {0:?} is too large (maximum 16 EiB - 1 byte = 18446744073709551615 bytes)")]
    Overflow(String),
}

/// The multiplier of a unit suffix, following GNU coreutils: `K M G T P E`
/// (either case) and `KiB … EiB` are powers of 1024, `kB MB GB TB PB EB`
/// (`KB` too) powers of 1000; `B` or nothing is bytes.
fn unit_multiplier(unit: &str) -> Option<u128> {
    if unit.is_empty() || unit == "B" {
        return Some(1);
    }
    let mut chars = unit.chars();
    let letter = chars.next()?.to_ascii_uppercase();
    let power = "KMGTPE".find(letter)? as u32 + 1;
    let base: u128 = match chars.as_str() {
        "" | "iB" => 1024,
        "B" => 1000,
        _ => return None,
    };
    Some(base.pow(power))
}

/// Parses a byte size: a whole number with an optional unit (see
/// [`ACCEPTED_SIZES`]). Whitespace around the value is ignored; whitespace
/// between the number and its unit is not accepted (as in coreutils).
///
/// # Errors
///
/// [`SizeError`] for an empty input, a number that is not whole, an unknown
/// unit (the error lists the accepted ones) or a size of 16 EiB or more.
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits_end);
    if num.is_empty() {
        return Err(SizeError::Malformed(input.to_string()));
    }
    let multiplier = unit_multiplier(unit).ok_or_else(|| SizeError::Unit {
        input: input.to_string(),
        unit: unit.to_string(),
    })?;
    let value: u128 = num
        .parse()
        .map_err(|_| SizeError::Overflow(input.to_string()))?;
    value
        .checked_mul(multiplier)
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| SizeError::Overflow(input.to_string()))
}

/// Parses a 32-bit volume serial in hexadecimal, as it is shown or given:
/// 1 to 8 digits (`1234abcd`), with `0x`/`0X` before them (`0x1234ABCD`),
/// or two groups of four around one dash (`1234-ABCD`, the way `vol` and
/// `blkid` show it); white space around it is ignored. `None` for anything
/// else.
pub fn parse_serial(s: &str) -> Option<u32> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let hex = match t.split_once('-') {
        None => t.to_string(),
        Some((hi, lo)) if hi.len() == 4 && lo.len() == 4 => format!("{hi}{lo}"),
        Some(_) => return None,
    };
    if hex.is_empty() || hex.len() > 8 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&hex, 16).ok()
}

/// A time as RFC 3339 text in UTC to the second (`2026-12-01T17:04:49Z`);
/// a time before 1970 is shown as 1970's start.
pub fn utc_text(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = mkfs_alloc_ondisk::time::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A signed byte difference as [`format_size`] writes a size, `-` before a
/// loss (`-2.2 MiB`).
pub fn format_signed_size(v: i128) -> String {
    let mag = u64::try_from(v.unsigned_abs()).unwrap_or(u64::MAX);
    if v < 0 {
        format!("-{}", format_size(mag))
    } else {
        format_size(mag)
    }
}

/// `part` in percent of `whole` (0 for nothing).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_counts_and_picks_the_word() {
        assert_eq!(plural(1, "file", "files"), "1 file");
        assert_eq!(plural(0, "file", "files"), "0 files");
        assert_eq!(
            plural(2048, "old cluster", "old clusters"),
            "2,048 old clusters"
        );
        assert_eq!(percent(1, 4), 25.0);
        assert_eq!(percent(5, 0), 0.0);
    }

    #[test]
    fn a_loss_is_signed_a_gain_is_not() {
        assert_eq!(format_signed_size(416 << 10), format_size(416 << 10));
        assert_eq!(
            format_signed_size(-(2 << 20)),
            format!("-{}", format_size(2 << 20))
        );
        assert_eq!(
            format_signed_size(i128::MIN),
            format!("-{}", format_size(u64::MAX))
        );
    }

    #[test]
    fn serials_in_the_forms_shown() {
        assert_eq!(parse_serial("1234ABCD"), Some(0x1234_ABCD));
        assert_eq!(parse_serial("1234-abcd"), Some(0x1234_ABCD));
        assert_eq!(parse_serial(" 0xff\n"), Some(0xFF));
        assert_eq!(parse_serial("0X2e24ec82"), Some(0x2E24_EC82));
        for bad in ["123456789", "ABCD-", "12-34-56-78", "-", "xyz", "", "0x"] {
            assert_eq!(parse_serial(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn utc_is_civil_time() {
        let at =
            |s| utc_text(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        let before = std::time::SystemTime::UNIX_EPOCH - std::time::Duration::from_secs(5);
        assert_eq!(utc_text(before), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn parses_the_documented_forms() {
        for (s, v) in [
            ("512", 512),
            ("4K", 4096),
            ("4k", 4096),
            ("4KiB", 4096),
            ("4KB", 4000),
            ("4kB", 4000),
            ("8GB", 8_000_000_000),
            ("8G", 8 * GIB),
            ("8g", 8 * GIB),
            ("8GiB", 8 * GIB),
            ("1P", 1 << 50),
            ("1PB", 1_000_000_000_000_000),
            ("15E", 15 << 60),
            ("1EB", 1_000_000_000_000_000_000),
            ("18446744073709551615", u64::MAX),
            ("4B", 4),
            ("32K", 32768),
            ("1M", MIB),
            ("1MiB", MIB),
            ("8G", 8 * GIB),
            ("2T", 2 * TIB),
            (" 16 ", 16),
            ("0", 0),
        ] {
            assert_eq!(parse_size(s), Ok(v), "{s}");
        }
    }

    #[test]
    fn rejects_bad_sizes() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert!(matches!(parse_size("-4K"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("K"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("4X"), Err(SizeError::Unit { .. })));
        assert!(matches!(parse_size("4.5K"), Err(SizeError::Unit { .. })));
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(SizeError::Overflow(_))
        ));
        assert!(matches!(
            parse_size("17000000T"),
            Err(SizeError::Overflow(_))
        ));
        // 16 EiB is one byte beyond the maximum: too large, not an unknown unit.
        assert!(matches!(parse_size("16E"), Err(SizeError::Overflow(_))));
        assert!(matches!(parse_size("16EiB"), Err(SizeError::Overflow(_))));
        assert!(matches!(
            parse_size("18446744073709551616"),
            Err(SizeError::Overflow(_))
        ));
        // A space between number and unit, bits and unknown suffixes are refused.
        for bad in ["8 G", "8 GB", "8gb", "8Gb", "8GIB", "8iB", "8Z", "4KiBB"] {
            assert!(
                matches!(parse_size(bad), Err(SizeError::Unit { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_error_lists_every_accepted_unit() {
        let text = parse_size("4X").expect_err("4X is not a size").to_string();
        for unit in [
            "K", "M", "G", "T", "P", "E", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "kB", "MB",
            "GB", "TB", "PB", "EB",
        ] {
            assert!(text.contains(unit), "{unit} missing from {text}");
        }
    }
}
