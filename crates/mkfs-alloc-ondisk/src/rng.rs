//! SplitMix64 (Steele, Lea, Flood 2014), the one copy of the workspace: the
//! seeded generator every written identifier derives from (volume serials
//! and GUIDs, the MBR disk signature, GPT GUIDs), and the capacity probe's
//! block patterns and sampling. Not for cryptography.
//!
//! It lives here, in the I/O-free crate every writer already depends on, so
//! that layout, partition and capacity share it without depending on each
//! other.

/// The golden-ratio increment of the SplitMix64 state.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijective 64-bit bit mixer.
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The first output of a generator seeded with `x`
/// (`SplitMix64::new(x).next_u64()`): a well-mixed hash of one value.
pub const fn splitmix64(x: u64) -> u64 {
    mix(x.wrapping_add(GAMMA))
}

/// A seed that differs between calls, processes, machines and times: the
/// standard library's per-process random hash keys, a counter, the clock
/// and the process id, mixed. The one source of fresh randomness of the
/// workspace (random serials, the capacity probe's run salt). Not for
/// cryptography.
#[cfg(feature = "std")]
pub fn fresh_seed() -> u64 {
    use core::hash::{BuildHasher, Hasher};
    use core::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    splitmix64(h.finish())
}

/// A SplitMix64 generator: equal seeds give equal sequences.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// The high 32 bits of the next value that has any: an MBR disk
    /// signature (0 means "none" to Windows).
    pub fn next_nonzero_u32(&mut self) -> u32 {
        loop {
            let v = (self.next_u64() >> 32) as u32;
            if v != 0 {
                return v;
            }
        }
    }

    /// A value in `0..n` (0 when `n` is 0), by the high half of a 128-bit
    /// product: bias below 2^-32 for the `n` used here.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn reference_values() {
        // First outputs for seed 1234567 (reference implementation by Vigna).
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(splitmix64(1_234_567), 6_457_827_717_110_365_317);
        assert_eq!(mix(1_234_567u64.wrapping_add(GAMMA)), splitmix64(1_234_567));
    }

    #[test]
    fn below_stays_in_range_and_shuffle_permutes() {
        let mut r = SplitMix64::new(7);
        for n in [1u64, 2, 3, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
        // The high half of output x n, from the reference outputs for seed
        // 1234567 (6457827717110365317, ...): floor(x * n / 2^64).
        let mut r = SplitMix64::new(1_234_567);
        let got: [u64; 4] = core::array::from_fn(|_| r.below(1000));
        assert_eq!(got, [350, 173, 532, 249]);
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.below(1 << 40), 384_916_527_099);
        let mut v: Vec<u32> = (0..100).collect();
        r.shuffle(&mut v);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
    }
}
