//! The compressed recommended up-case table streamed from 119 runs of
//! mappings (714 bytes of constant data) instead of stored whole (5,836
//! bytes): what firmware links. The bytes are those of
//! [`COMPRESSED_TABLE`](super::COMPRESSED_TABLE) (a test compares them),
//! produced with the same rule as `upcase/compression.rs`: runs of at least
//! [`MIN_RUN`] identity mappings as `0xFFFF, count`, every other code unit
//! as its mapping.
//!
//! Sources: exFAT specification §7.2.5, Table 24 (identity-mapping
//! compression).

include!(concat!(env!("OUT_DIR"), "/upcase_runs.rs"));

/// Shortest run of identity mappings that is compressed (the value of
/// `upcase/compression.rs`).
const MIN_RUN: u32 = 512;

/// Value that introduces a run of identity mappings.
const RUN_MARKER: u16 = 0xFFFF;

/// The compressed table's 16-bit values, in order.
struct Values {
    /// The next code unit to map (0..=0x10000).
    code: u32,
    /// The run holding the next non-identity code unit, and its index there.
    run: usize,
    k: u32,
    /// Identity mappings still to write as `0xFFFF, count` pairs.
    left: u32,
    /// The count owed after a marker.
    pending: Option<u16>,
}

impl Values {
    const fn new() -> Self {
        Values {
            code: 0,
            run: 0,
            k: 0,
            left: 0,
            pending: None,
        }
    }

    /// The next code unit whose mapping is not itself, with its delta.
    fn next_changed(&self) -> Option<(u32, u16)> {
        let [first, count, delta] = *RUNS.get(self.run)?;
        let stride = if count & 0x8000 != 0 { 2 } else { 1 };
        Some((u32::from(first) + self.k * stride, delta))
    }

    fn advance_run(&mut self) {
        if let Some([_, count, _]) = RUNS.get(self.run) {
            self.k += 1;
            if self.k == u32::from(count & 0x7FFF) {
                self.run += 1;
                self.k = 0;
            }
        }
    }
}

impl Iterator for Values {
    type Item = u16;

    fn next(&mut self) -> Option<u16> {
        if let Some(count) = self.pending.take() {
            return Some(count);
        }
        if self.left > 0 {
            let chunk = self.left.min(u32::from(u16::MAX));
            self.left -= chunk;
            self.code += chunk;
            self.pending = Some(chunk as u16);
            return Some(RUN_MARKER);
        }
        if self.code > u32::from(u16::MAX) {
            return None;
        }
        let changed = self.next_changed();
        let next = changed.map_or(0x1_0000, |(c, _)| c);
        match changed {
            Some((c, delta)) if c == self.code => {
                self.advance_run();
                self.code += 1;
                Some((c as u16).wrapping_add(delta))
            }
            _ if next - self.code >= MIN_RUN => {
                self.left = next - self.code;
                self.next()
            }
            _ => {
                self.code += 1;
                Some((self.code - 1) as u16)
            }
        }
    }
}

/// Fills `buf` with the compressed recommended table's bytes from byte
/// `at` on (zeros past its end). No allocation; regenerates from the start
/// each call (a few thousand steps), so calls may come in any order.
pub fn fill_compressed_table(at: u64, buf: &mut [u8]) {
    buf.fill(0);
    let bytes = Values::new().flat_map(u16::to_le_bytes);
    let skip = usize::try_from(at).unwrap_or(usize::MAX);
    for (dst, b) in buf.iter_mut().zip(bytes.skip(skip)) {
        *dst = b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exfat::upcase::{COMPRESSED_TABLE, UPCASE_TABLE_LEN};

    #[test]
    fn streams_the_stored_table() {
        let mut buf = [0u8; UPCASE_TABLE_LEN + 100];
        fill_compressed_table(0, &mut buf);
        assert_eq!(&buf[..UPCASE_TABLE_LEN], COMPRESSED_TABLE);
        assert!(buf[UPCASE_TABLE_LEN..].iter().all(|&b| b == 0));
        assert_eq!(RUNS.len(), 119);
    }

    #[test]
    fn any_window_in_any_order() {
        for sector in [512usize, 1024, 4096, 333] {
            let mut out = [0u8; UPCASE_TABLE_LEN];
            for (i, chunk) in out.chunks_mut(sector).enumerate().rev() {
                fill_compressed_table((i * sector) as u64, chunk);
            }
            assert_eq!(&out[..], COMPRESSED_TABLE, "windows of {sector}");
        }
    }
}
