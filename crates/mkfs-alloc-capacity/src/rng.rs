//! The seed of a probe run. The generator is `mkfs_alloc_ondisk::rng`'s
//! SplitMix64: not cryptographic, it only has to make probe blocks
//! unpredictable for a flash controller and sample positions without a
//! pattern.

/// A seed that differs between runs (time, process id, address-space noise).
pub(crate) fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish()
}
