//! The seed of a probe run. The generator is `mkfs_alloc_ondisk::rng`'s
//! SplitMix64: not cryptographic, it only has to make probe blocks
//! unpredictable for a flash controller and sample positions without a
//! pattern.

/// A seed that differs between runs: the workspace's one source of fresh
/// randomness.
pub(crate) fn fresh_seed() -> u64 {
    mkfs_alloc_ondisk::rng::fresh_seed()
}
