//! What the capacity suites share: the probe options of the in-memory tests.

use mkfs_alloc_capacity::ProbeOptions;

/// One mebibyte.
pub const MIB: u64 = 1 << 20;

/// Options for small in-memory fakes: a 4 MiB cache search, 1 MiB of
/// sequential speed test, 16 random writes, the seed given.
pub fn opts(seed: u64) -> ProbeOptions {
    ProbeOptions {
        seed: Some(seed),
        max_cache_bytes: 4 * MIB,
        speed_bytes: MIB,
        random_writes: 16,
        ..ProbeOptions::default()
    }
}
