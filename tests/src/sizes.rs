//! Volume sizes for the test matrices, found through the planner.

use mkfs_alloc_layout::{plan, ClusterChoice, FormatOptions, FsChoice, FsType, Layout, Medium};

/// The options the CLI uses for `--fs fs --cluster cluster` (default alignment).
pub fn options(fs: FsType, cluster: u64) -> FormatOptions {
    FormatOptions {
        fs: FsChoice::Fixed(fs),
        cluster: ClusterChoice::Bytes(cluster),
        serial: Some(0x1234_ABCD),
        ..FormatOptions::default()
    }
}

/// Plans `fs` at `cluster` on a whole-medium volume of `bytes`.
pub fn plan_for(fs: FsType, cluster: u64, sector: u32, bytes: u64) -> Option<Layout> {
    plan(&options(fs, cluster), &Medium::whole(bytes, sector)).ok()
}

/// The smallest volume (a whole number of sectors) the planner accepts for
/// `fs` at `cluster` bytes and `sector`-byte sectors: the first size that
/// plans while one sector less does not, found by doubling then bisection.
/// Panics if nothing up to 16 TiB plans.
#[track_caller]
pub fn smallest_valid(fs: FsType, cluster: u64, sector: u32) -> u64 {
    let s = u64::from(sector);
    let ok = |sectors: u64| plan_for(fs, cluster, sector, sectors * s).is_some();
    let mut hi = (1u64 << 20) / s;
    while !ok(hi) {
        hi *= 2;
        assert!(
            hi * s <= 16 << 40,
            "no valid {fs} volume at {cluster}-byte clusters up to 16 TiB"
        );
    }
    let mut lo = 0u64; // invalid
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi * s
}
