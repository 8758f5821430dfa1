//! The exFAT up-case table: the spec's recommended table, generated from a
//! rule instead of pasted as an array, plus its compression, expansion and
//! checksum. The rule (`upcase/rule.rs`) runs in the build script, which
//! stores the compressed table in the library; the tests run it again and
//! compare.
//!
//! # The mapping rule
//!
//! The recommended table is the simple (one code unit to one code unit)
//! upper-case mapping of the BMP as Unicode 5.0 (2006) defined it, with a few
//! quirks. We derive it from the standard library's case tables:
//!
//! 1. For every BMP character `U` whose `to_lowercase()` is one character
//!    `l != U`, `U` is a candidate upper case of `l`. Going through lower case
//!    (instead of `l.to_uppercase()`) is what gives the simple mapping:
//!    - `l.to_uppercase()` must be exactly `U`, or expand to several
//!      characters. The first condition drops the one-way mappings the table
//!      does not have: U+00B5 MICRO SIGN (upper case U+039C), U+0131 dotless i,
//!      U+017F long s, U+0345, the Greek symbol variants (U+03D0.., U+03F5,
//!      U+1FBE), U+1E9B, the title-case digraphs U+01C5/U+01C8/U+01CB/U+01F2,
//!      and the Kelvin, Ohm and Angstrom signs (which lower-case to ASCII `k`,
//!      `ω`, `å` but are not their upper case).
//!    - The "expands" case keeps the Greek letters with ypogegrammeni
//!      (U+1F80..U+1FAF, U+1FB3): their full upper case is two characters
//!      (`ᾀ` -> `ἈΙ`), their simple upper case is the title-case letter that
//!      lower-cases to them (`ᾀ` -> `ᾈ`), which is what the table stores.
//! 2. Pairs where either character was encoded after Unicode 5.0 are dropped
//!    (see `POST_UNICODE_5_0`): the table predates them, and current Unicode
//!    also gave new upper cases to old letters (ß -> ẞ, ɐ -> Ɐ, ა -> Ა, ...).
//! 3. Exceptions where the spec's table differs from that rule (see
//!    `apply_spec_quirks`): final sigma is up-cased, and four pairs are
//!    stored backwards (the capital maps to the small letter).
//!
//! The result does not depend on the toolchain's Unicode version as long as
//! Unicode keeps the case pairs of 2006 characters and new cased letters land
//! in the excluded ranges; the size and checksum tests catch any drift.
//!
//! # The compression rule
//!
//! A run of at least 512 (`MIN_COMPRESSED_RUN`) identity mappings is written as
//! `0xFFFF, run length`; everything else is written literally. The spec's
//! table compresses exactly its four identity runs of 843 or more code points
//! and keeps literal the next longest ones (337 at U+1FFD, 232 at U+0293, 165
//! at U+FF5B), so any threshold in 338..=843 reproduces it.
//!
//! A `0xFFFF` that is the entry for U+FFFF itself (the last value of the
//! table) is U+FFFF's identity mapping, not a run marker.

// Sources:
// - Microsoft, exFAT File System Specification (2019), section 7.2 "Up-case
//   Table Directory Entry" (TableChecksum), 7.2.5 "Up-case Table" (Table 24,
//   identity-mapping compression) and 7.2.5.1 "Recommended Up-case Table"
//   (Table 25, TableChecksum E619D30Dh).
//   https://learn.microsoft.com/en-us/windows/win32/fileio/exfat-specification
// - The rule and its exceptions were found by diffing against the table that
//   mkfs.exfat (exfatprogs) writes; no bytes of that table are copied here.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// Size in bytes of the compressed recommended up-case table.
pub const UPCASE_TABLE_LEN: usize = 5836;

/// Checksum of the compressed recommended up-case table.
pub const UPCASE_TABLE_CHECKSUM: u32 = 0xE619_D30D;

/// Number of code points a full (expanded) up-case table covers.
#[cfg(feature = "alloc")]
const FULL_TABLE_ENTRIES: usize = 0x1_0000;

/// The compressed recommended table, as written to disk (little-endian
/// u16s): generated from the rule by the build script (`build.rs`, from
/// `upcase/rule.rs`) and stored in the library as constant data, so no
/// format builds it at run time and no allocator is needed to write it.
pub const COMPRESSED_TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/upcase.bin"));
const _: () = assert!(COMPRESSED_TABLE.len() == UPCASE_TABLE_LEN);

mod stream;
pub use stream::fill_compressed_table;

#[cfg(feature = "alloc")]
mod compression;
#[cfg(all(test, feature = "alloc"))]
mod rule;

#[cfg(feature = "alloc")]
use compression::RUN_MARKER;

/// A full (expanded) up-case table: the up-case mapping of every UTF-16 code
/// unit. Get the recommended one with [`UpcaseTable::recommended`] (an
/// expansion of the built table, 128 KiB) and keep it; read a volume's with
/// [`UpcaseTable::from_compressed`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg(feature = "alloc")]
pub struct UpcaseTable {
    map: Vec<u16>,
}

#[cfg(feature = "alloc")]
impl UpcaseTable {
    /// The spec's recommended table, expanded from the compressed form the
    /// build script generated from the rule above.
    pub fn recommended() -> Self {
        // The build script wrote it with `compress`; the tests check that it
        // expands to the rule's mapping.
        let map = expand(COMPRESSED_TABLE).expect("the build script writes a well-formed table");
        Self { map }
    }

    /// Expands a table as stored on disk (compressed or not); `None` when
    /// malformed (see [`expand`]).
    pub fn from_compressed(table: &[u8]) -> Option<Self> {
        expand(table).map(|map| Self { map })
    }

    /// The up-case mapping of one UTF-16 code unit. Code units without an
    /// upper case (including surrogates) map to themselves.
    pub fn upcase(&self, unit: u16) -> u16 {
        self.map.get(usize::from(unit)).copied().unwrap_or(unit)
    }

    /// The 65536 mapped values, indexed by code unit.
    pub fn as_slice(&self) -> &[u16] {
        &self.map
    }

    /// The table compressed as written to disk (little-endian u16s; runs of
    /// at least 512 identity mappings as `0xFFFF, count`).
    pub fn compress(&self) -> Vec<u8> {
        compression::compress(&self.map)
    }
}

/// The compressed recommended table, as written to disk (little-endian u16s).
///
/// Always [`UPCASE_TABLE_LEN`] bytes with checksum [`UPCASE_TABLE_CHECKSUM`].
/// A copy of [`COMPRESSED_TABLE`].
#[cfg(feature = "alloc")]
pub fn compressed_table() -> Vec<u8> {
    COMPRESSED_TABLE.to_vec()
}

/// Checksum of an up-case table as stored (TableChecksum): the exFAT
/// rotate-add over every byte, [`crate::checksum32`].
///
/// Sources: exFAT specification §7.2.2, Figure 3.
pub fn checksum32(bytes: &[u8]) -> u32 {
    crate::checksum32(bytes)
}

/// Expands a compressed table into a full 65536-entry mapping; error on
/// malformed input (returns None).
///
/// `0xFFFF` followed by a count `n` stands for `n` identity mappings, except
/// when it is the entry of U+FFFF itself. Malformed means: an odd number of
/// bytes, a run marker without its count, a run that goes past U+FFFF,
/// values after U+FFFF, or fewer than 65536 entries in total. An uncompressed
/// table (65536 plain values) expands to itself.
#[cfg(feature = "alloc")]
pub fn expand(table: &[u8]) -> Option<Vec<u16>> {
    let pairs = table.chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return None;
    }
    let mut values = pairs.map(|pair| u16::from_le_bytes([pair[0], pair[1]]));
    let mut map: Vec<u16> = Vec::with_capacity(FULL_TABLE_ENTRIES);
    while let Some(value) = values.next() {
        let next_code = map.len();
        if next_code >= FULL_TABLE_ENTRIES {
            return None;
        }
        if value == RUN_MARKER && next_code != usize::from(RUN_MARKER) {
            let run = usize::from(values.next()?);
            let end = next_code.checked_add(run)?;
            if end > FULL_TABLE_ENTRIES {
                return None;
            }
            for code in next_code..end {
                map.push(u16::try_from(code).ok()?);
            }
        } else {
            map.push(value);
        }
    }
    (map.len() == FULL_TABLE_ENTRIES).then_some(map)
}

#[cfg(test)]
mod constant {
    use super::*;

    /// The table a format writes is constant data of the library, with the
    /// recorded length and checksum, whatever the features (the firmware
    /// builds without `alloc`).
    #[test]
    fn the_written_table_is_static_data() {
        let table: &'static [u8] = COMPRESSED_TABLE;
        assert_eq!(table.len(), UPCASE_TABLE_LEN);
        assert_eq!(checksum32(table), UPCASE_TABLE_CHECKSUM);
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::compression::MIN_COMPRESSED_RUN;
    use super::rule::*;
    use super::*;
    use alloc::vec;

    fn upcase(unit: u16) -> u16 {
        thread_table().upcase(unit)
    }

    fn thread_table() -> &'static UpcaseTable {
        extern crate std;
        static TABLE: std::sync::OnceLock<UpcaseTable> = std::sync::OnceLock::new();
        TABLE.get_or_init(UpcaseTable::recommended)
    }

    fn u16s(bytes: &[u8]) -> Vec<u16> {
        bytes
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect()
    }

    #[test]
    fn the_built_table_is_the_rule_compressed() {
        let rule = recommended_map();
        assert_eq!(UpcaseTable::recommended().as_slice(), &rule[..]);
        assert_eq!(compressed_table(), compression::compress(&rule));
        assert_eq!(UpcaseTable { map: rule }.compress(), COMPRESSED_TABLE);
    }

    #[test]
    fn length_matches_spec() {
        assert_eq!(compressed_table().len(), UPCASE_TABLE_LEN);
    }

    #[test]
    fn checksum_matches_spec() {
        assert_eq!(checksum32(&compressed_table()), UPCASE_TABLE_CHECKSUM);
    }

    #[test]
    fn checksum_matches_reference_formula() {
        // The formula as the spec writes it, on a few inputs.
        fn reference(bytes: &[u8]) -> u32 {
            let mut c: u32 = 0;
            for &b in bytes {
                c = (if c & 1 != 0 { 0x8000_0000u32 } else { 0 })
                    .wrapping_add(c >> 1)
                    .wrapping_add(u32::from(b));
            }
            c
        }
        for input in [&b""[..], b"\x01", b"\xff\xff\xff\xff", b"exFAT up-case"] {
            assert_eq!(checksum32(input), reference(input));
        }
        let table = compressed_table();
        assert_eq!(checksum32(&table), reference(&table));
    }

    #[test]
    fn run_markers_at_spec_positions() {
        let values = u16s(&compressed_table());
        assert_eq!(values.len(), 2918);
        let markers: Vec<(usize, u16)> = values
            .iter()
            .enumerate()
            .filter(|&(i, &v)| v == RUN_MARKER && i + 1 < values.len())
            .map(|(i, _)| (i, values[i + 1]))
            .collect();
        assert_eq!(
            markers,
            vec![(1415, 6134), (2449, 843), (2477, 1862), (2725, 53787)]
        );
    }

    #[test]
    fn last_value_is_identity_of_ffff() {
        let values = u16s(&compressed_table());
        assert_eq!(values.last(), Some(&0xFFFF));
        assert_eq!(values.len() - 1, 2917);
        assert_eq!(upcase(0xFFFF), 0xFFFF);
        assert_eq!(expand(&compressed_table()).map(|m| m[0xFFFF]), Some(0xFFFF));
    }

    #[test]
    fn ascii_maps_only_a_to_z() {
        for unit in 0u16..128 {
            let expected = if (0x61..=0x7A).contains(&unit) {
                unit - 0x20
            } else {
                unit
            };
            assert_eq!(upcase(unit), expected, "U+{unit:04X}");
        }
    }

    #[test]
    fn expand_of_compressed_equals_upcase() {
        let map = expand(&compressed_table()).expect("recommended table expands");
        assert_eq!(map.len(), 65536);
        for unit in 0..=u16::MAX {
            assert_eq!(map[usize::from(unit)], upcase(unit), "U+{unit:04X}");
        }
    }

    #[test]
    fn expand_rejects_malformed_input() {
        let table = compressed_table();
        // Truncated anywhere, including inside a u16 and right after a marker.
        for len in [0, 1, 2, 100, 2830, 2831, 2832, 5451, 5452, table.len() - 2] {
            assert_eq!(expand(&table[..len]), None, "truncated to {len} bytes");
        }
        // Odd length.
        let mut odd = table.clone();
        odd.push(0);
        assert_eq!(expand(&odd), None);
        // Trailing value after U+FFFF.
        let mut long = table.clone();
        long.extend_from_slice(&0x0041u16.to_le_bytes());
        assert_eq!(expand(&long), None);
        // A run that goes past U+FFFF.
        let overflow: Vec<u8> = [0xFFFFu16, 0xFFFF, 0xFFFF, 0x0002]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(expand(&overflow), None);
    }

    #[test]
    fn expand_accepts_uncompressed_table() {
        let plain: Vec<u8> = (0..=u16::MAX)
            .flat_map(|u| upcase(u).to_le_bytes())
            .collect();
        assert_eq!(expand(&plain), expand(&compressed_table()));
    }

    #[test]
    fn compression_threshold_is_inside_the_window() {
        // The spec's longest literal identity run is 337, its shortest
        // compressed one 843.
        assert!((338..=843).contains(&MIN_COMPRESSED_RUN));
    }

    #[test]
    fn documented_exceptions() {
        let cases: &[(u16, u16, &str)] = &[
            (0x00B5, 0x00B5, "micro sign: one-way mapping"),
            (0x00DF, 0x00DF, "sharp s: capital is post-5.0"),
            (0x00FF, 0x0178, "y diaeresis"),
            (0x0131, 0x0131, "dotless i: one-way mapping"),
            (0x017F, 0x017F, "long s: one-way mapping"),
            (0x01C5, 0x01C5, "title-case digraph"),
            (0x01C6, 0x01C4, "dz caron"),
            (0x019B, 0x019B, "lambda with stroke: capital is Unicode 16"),
            (0x023A, 0x2C65, "reversed pair"),
            (0x2C65, 0x2C65, "reversed pair"),
            (0x023E, 0x2C66, "reversed pair"),
            (0x2C66, 0x2C66, "reversed pair"),
            (0x0250, 0x0250, "turned a: capital is post-5.0"),
            (0x03C2, 0x03A3, "final sigma"),
            (0x03C3, 0x03A3, "sigma"),
            (0x03D0, 0x03D0, "beta symbol: one-way mapping"),
            (0x03F2, 0x03F9, "lunate sigma"),
            (0x10D0, 0x10D0, "Georgian: Mtavruli is Unicode 11"),
            (0x1D7D, 0x2C63, "p with stroke"),
            (
                0x1F80,
                0x1F88,
                "simple upper case of alpha with ypogegrammeni",
            ),
            (0x1FB3, 0x1FBC, "alpha with ypogegrammeni"),
            (0x1FC3, 0x1FC3, "reversed pair"),
            (0x1FCC, 0x1FC3, "reversed pair"),
            (0x1FF3, 0x1FF3, "reversed pair"),
            (0x1FFC, 0x1FF3, "reversed pair"),
            (0x1FBE, 0x1FBE, "prosgegrammeni: one-way mapping"),
            (0x2D00, 0x10A0, "Georgian Nuskhuri"),
            (0x006B, 0x004B, "k, not the Kelvin sign"),
            (0x00E5, 0x00C5, "a ring, not the Angstrom sign"),
            (0x03C9, 0x03A9, "omega, not the Ohm sign"),
            (0xA641, 0xA641, "Cyrillic Extended-B is post-5.0"),
            (0xFF41, 0xFF21, "fullwidth a"),
            (0xD800, 0xD800, "surrogate"),
        ];
        for &(unit, expected, why) in cases {
            assert_eq!(upcase(unit), expected, "U+{unit:04X}: {why}");
        }
    }

    #[test]
    fn mapping_is_idempotent() {
        // Up-casing twice changes nothing: every target maps to itself.
        for unit in 0..=u16::MAX {
            let up = upcase(unit);
            assert_eq!(upcase(up), up, "U+{unit:04X} -> U+{up:04X}");
        }
    }
}
