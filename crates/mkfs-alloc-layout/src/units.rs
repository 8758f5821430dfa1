//! Byte sizes for people: the binary units and the formatting layout's own
//! messages use (parsing a size string is the command line's job: the
//! facade's `mkfs_alloc::units::parse_size`), and the units of a volume
//! as types ([`SectorSize`], [`Sectors`], [`ClusterSize`], [`Clusters`]:
//! what `Layout` and `Medium` return).

pub use crate::geometry::count::{ClusterSize, Clusters, SectorSize, Sectors};

/// One kibibyte.
pub const KIB: u64 = 1 << 10;
/// One mebibyte.
pub const MIB: u64 = 1 << 20;
/// One gibibyte.
pub const GIB: u64 = 1 << 30;
/// One tebibyte.
pub const TIB: u64 = 1 << 40;

/// A byte count for people (its `Display`): exact binary units when the
/// value is a whole number of them (`32 KiB`, `2 TiB`), else one decimal
/// rounded to nearest (`1.5 GiB`; 266,318,725 bytes, 253.98 MiB, is
/// `254.0 MiB`: the `.0` marks a rounded value). No allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl core::fmt::Display for Size {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        const UNITS: [(&str, u32); 6] = [
            ("EiB", 60),
            ("PiB", 50),
            ("TiB", 40),
            ("GiB", 30),
            ("MiB", 20),
            ("KiB", 10),
        ];
        let bytes = self.0;
        for (name, shift) in UNITS {
            let unit = 1u64 << shift;
            if bytes >= unit {
                if bytes % unit == 0 {
                    return write!(f, "{} {name}", bytes >> shift);
                }
                let unit = u128::from(unit);
                // At most 10 × 2^64 / 2^10: a u64.
                let tenths =
                    u64::try_from((u128::from(bytes) * 10 + unit / 2) / unit).unwrap_or(u64::MAX);
                return write!(f, "{}.{} {name}", tenths / 10, tenths % 10);
            }
        }
        write!(f, "{bytes} B")
    }
}

/// An integer with thousands separators (its `Display`): `32758` →
/// `32,758`. No allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub u64);

impl core::fmt::Display for Count {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = self.0;
        let digits = if n == 0 { 1 } else { n.ilog10() + 1 };
        for i in (0..digits).rev() {
            let d = (n / 10u64.pow(i)) % 10;
            write!(f, "{d}")?;
            if i > 0 && i % 3 == 0 {
                f.write_str(",")?;
            }
        }
        Ok(())
    }
}

/// [`Size`] as text.
#[cfg(feature = "alloc")]
pub fn format_size(bytes: u64) -> alloc::string::String {
    alloc::string::ToString::to_string(&Size(bytes))
}

/// [`Count`] as text.
#[cfg(feature = "alloc")]
pub fn format_count(n: u64) -> alloc::string::String {
    alloc::string::ToString::to_string(&Count(n))
}

/// `n` and the word for it: `1 file`, `2,048 files` (`one`, `many`: the
/// singular and the plural).
#[cfg(feature = "alloc")]
pub fn plural(n: u64, one: &str, many: &str) -> alloc::string::String {
    alloc::format!("{} {}", Count(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use std::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };

    #[test]
    fn formats() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(32 * KIB), "32 KiB");
        assert_eq!(format_size(3 * GIB / 2), "1.5 GiB");
        assert_eq!(format_size(2 * TIB), "2 TiB");
        assert_eq!(format_size(16_775_168), "16.0 MiB");
        assert_eq!(format_size(266_318_725), "254.0 MiB");
        assert_eq!(format_size(266_000_000), "253.7 MiB");
        assert_eq!(format_size(u64::MAX), "16.0 EiB");
        assert_eq!(format_count(32758), "32,758");
        assert_eq!(format_count(65525), "65,525");
        assert_eq!(format_count(100), "100");
        assert_eq!(format_count(1_000_000), "1,000,000");
    }
}
