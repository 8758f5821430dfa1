//! The capacity probe's test block (`mkfs-alloc probe`, `--probe`): every
//! unit the probe writes starts with a [`TestBlockHeader`] (a magic, the
//! run's salt, the unit's own number and a check of both) and continues with
//! little-endian SplitMix64 words derived from the salt and the unit. A unit
//! read back identifies itself: which run wrote it, for which unit.
//!
//! Sources: this project's format (no external specification); the
//! generator is [`crate::rng::SplitMix64`].

use core::mem::size_of;

use zerocopy::little_endian::U64;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::rng::{mix, SplitMix64};

/// First 8 bytes of every test block.
pub const TEST_BLOCK_MAGIC: [u8; 8] = *b"MKFSPRB1";

/// The header of a test block: its first 32 bytes.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TestBlockHeader {
    /// [`TEST_BLOCK_MAGIC`].
    pub magic: [u8; 8],
    /// The run's salt.
    pub salt: U64,
    /// The unit this block was written for.
    pub unit: U64,
    /// [`header_check`] of the salt and the unit.
    pub check: U64,
}
const _: () = assert!(size_of::<TestBlockHeader>() == 32);

/// Bytes of the header.
pub const TEST_BLOCK_HEADER: usize = size_of::<TestBlockHeader>();

/// The check a header carries for `salt` and `unit`.
pub fn header_check(salt: u64, unit: u64) -> u64 {
    mix(salt ^ mix(unit ^ 0x5052_4F42_4543_4845))
}

impl TestBlockHeader {
    /// The header of `unit`'s block in run `salt`.
    pub fn new(salt: u64, unit: u64) -> Self {
        TestBlockHeader {
            magic: TEST_BLOCK_MAGIC,
            salt: salt.into(),
            unit: unit.into(),
            check: header_check(salt, unit).into(),
        }
    }

    /// The header at the start of `block`, if the magic is there.
    pub fn read(block: &[u8]) -> Option<&TestBlockHeader> {
        let (h, _) = TestBlockHeader::ref_from_prefix(block).ok()?;
        (h.magic == TEST_BLOCK_MAGIC).then_some(h)
    }

    /// True when the check matches the salt and the unit.
    pub fn intact(&self) -> bool {
        self.check.get() == header_check(self.salt.get(), self.unit.get())
    }
}

/// Fills `block` (one unit) with the test block of `unit` for run `salt`:
/// the header, then the body words.
pub fn fill(block: &mut [u8], salt: u64, unit: u64) {
    let header = TestBlockHeader::new(salt, unit);
    let n = TEST_BLOCK_HEADER.min(block.len());
    block[..n].copy_from_slice(&header.as_bytes()[..n]);
    let Some(body) = block.get_mut(TEST_BLOCK_HEADER..) else {
        return;
    };
    let mut words = SplitMix64::new(mix(salt ^ unit.rotate_left(17)));
    // Whole words first (exact chunks: about three times as fast as
    // checking each chunk's length), then a partial word, if any.
    let mut chunks = body.chunks_exact_mut(8);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&words.next_u64().to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let v = words.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn header_round_trip() {
        let mut b = vec![0u8; 100];
        fill(&mut b, 7, 9);
        let h = TestBlockHeader::read(&b).expect("magic");
        assert!(h.intact());
        assert_eq!((h.salt.get(), h.unit.get()), (7, 9));
        b[20] ^= 1;
        assert!(!TestBlockHeader::read(&b).expect("magic").intact());
    }

    /// The bytes of a test block, from SplitMix64's published mixer
    /// computed apart (a Python transcription of Steele, Lea and Flood's
    /// `mix64`): the check `mix(salt ^ mix(unit ^ "PROBECHE"))`, the body
    /// the generator seeded `mix(salt ^ rotl(unit, 17))`.
    #[test]
    fn block_bytes_are_the_recorded_ones() {
        // A salt whose bits meet the unit's rotated ones (9 << 17).
        let salt = 0x0012_0007;
        let mut b = vec![0u8; 32 + 8 + 8 + 5];
        fill(&mut b, salt, 9);
        assert_eq!(&b[..8], b"MKFSPRB1");
        assert_eq!(b[8..16], salt.to_le_bytes());
        assert_eq!(b[16..24], 9u64.to_le_bytes());
        assert_eq!(b[24..32], 0x09fc_ae5d_92b3_ed71u64.to_le_bytes());
        assert_eq!(b[32..40], 0x863b_891f_4c0a_bd4fu64.to_le_bytes());
        assert_eq!(b[40..48], 0x4d58_fbd2_82ea_f415u64.to_le_bytes());
        assert_eq!(b[48..], 0xf0e5_2107_0cc0_3750u64.to_le_bytes()[..5]);
    }
}
