//! Compression of an exFAT up-case table, shared by the library
//! ([`UpcaseTable::compress`](super::UpcaseTable::compress)) and the build
//! script, which compresses the recommended table once at build time.
//!
//! Sources: exFAT specification §7.2.5, Table 24 (identity-mapping
//! compression); the thresholds are explained in the `upcase` module.

use alloc::vec::Vec;

/// Value that introduces a run of identity mappings in a compressed table.
pub(crate) const RUN_MARKER: u16 = 0xFFFF;

/// Shortest run of identity mappings that is compressed. The spec's table is
/// reproduced by any value in 338..=843; 512 is a round number inside.
pub(crate) const MIN_COMPRESSED_RUN: usize = 512;

/// `map` (the up-case mapping of code units 0, 1, ...) compressed as written
/// to disk: little-endian u16s, runs of at least [`MIN_COMPRESSED_RUN`]
/// identity mappings as `0xFFFF, count`.
pub(crate) fn compress(map: &[u16]) -> Vec<u8> {
    // 2918 values for the recommended table.
    let mut values: Vec<u16> = Vec::with_capacity(2918);
    let mut index = 0;
    while let Some(&value) = map.get(index) {
        let run = map
            .iter()
            .enumerate()
            .skip(index)
            .take_while(|&(code, &mapped)| usize::from(mapped) == code)
            .count();
        if run >= MIN_COMPRESSED_RUN {
            // A run never exceeds 0xFFFF entries in the recommended table,
            // but split it if it would rather than truncate the count.
            let mut left = run;
            while left > 0 {
                let chunk = u16::try_from(left).unwrap_or(u16::MAX);
                values.push(RUN_MARKER);
                values.push(chunk);
                left -= usize::from(chunk);
            }
            index += run;
        } else {
            values.push(value);
            index += 1;
        }
    }
    values
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect()
}
