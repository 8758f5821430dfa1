//! Size strings (`4K`, `1MiB`, `8G`, `8GB`) parsed for the command line and
//! other front ends, beside the formatting and the binary units of the
//! layout crate (re-exported here, so one module holds both directions).

pub use mkfs_alloc_layout::units::{format_count, format_size, Count, Size, GIB, KIB, MIB, TIB};

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

#[cfg(test)]
mod tests {
    use super::*;

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
