//! Byte sizes: parsing (`4K`, `1MiB`, `8G`) and human-readable formatting.

/// One kibibyte.
pub const KIB: u64 = 1 << 10;
/// One mebibyte.
pub const MIB: u64 = 1 << 20;
/// One gibibyte.
pub const GIB: u64 = 1 << 30;
/// One tebibyte.
pub const TIB: u64 = 1 << 40;

/// Why a size string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// Nothing was given.
    #[error("empty size; expected a number with an optional unit, e.g. 512, 4K, 1MiB, 8G")]
    Empty,
    /// The number part is missing or malformed (including negative numbers).
    #[error("invalid size {0:?}; expected a whole number with an optional unit K, M, G, T (or KiB, MiB, GiB, TiB), e.g. 512, 4K, 1MiB, 8G")]
    Malformed(String),
    /// The unit suffix is not one we know.
    #[error("unknown unit {unit:?} in size {input:?}; valid units: B, K/KiB, M/MiB, G/GiB, T/TiB (binary, 1K = 1024)")]
    Unit {
        /// The full input.
        input: String,
        /// The suffix that was not recognised.
        unit: String,
    },
    /// The value does not fit in 64 bits.
    #[error("size {0:?} is too large (maximum 16 EiB - 1)")]
    Overflow(String),
}

/// Parses a byte size: a whole number with an optional binary unit.
///
/// Accepted: `512`, `512B`, `4K`, `4k`, `4KiB`, `4KB`, `1M`, `1MiB`, `8G`, `2T`.
/// All units are binary (`1K` = 1024). Whitespace around the value is ignored.
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
    let value: u64 = num
        .parse()
        .map_err(|_| SizeError::Overflow(input.to_string()))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => {
            return Err(SizeError::Unit {
                input: input.to_string(),
                unit: unit.to_string(),
            })
        }
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| SizeError::Overflow(input.to_string()))
}

/// Formats a byte count for people: exact binary units when the value is a
/// whole number of them (`32 KiB`, `2 TiB`), else one decimal rounded down
/// (`1.5 GiB`; 16,775,168 bytes is `15.9 MiB`, not `16.0 MiB`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u32); 5] = [
        ("PiB", 50),
        ("TiB", 40),
        ("GiB", 30),
        ("MiB", 20),
        ("KiB", 10),
    ];
    for (name, shift) in UNITS {
        let unit = 1u64 << shift;
        if bytes >= unit {
            if bytes % unit == 0 {
                return format!("{} {name}", bytes >> shift);
            }
            // Rounded down: never claim more than there is.
            let tenths = (u128::from(bytes) * 10 / u128::from(unit)) as u64;
            return format!("{}.{} {name}", tenths / 10, tenths % 10);
        }
    }
    format!("{bytes} B")
}

/// Formats an integer with thousands separators: `32758` → `32,758`.
pub fn format_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
            ("4KB", 4096),
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
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(32 * KIB), "32 KiB");
        assert_eq!(format_size(3 * GIB / 2), "1.5 GiB");
        assert_eq!(format_size(2 * TIB), "2 TiB");
        assert_eq!(format_size(16_775_168), "15.9 MiB");
        assert_eq!(format_count(32758), "32,758");
        assert_eq!(format_count(65525), "65,525");
        assert_eq!(format_count(100), "100");
        assert_eq!(format_count(1_000_000), "1,000,000");
    }
}
