//! Volume sizes for the test matrices, found through the planner.

use mkfs_alloc_layout::{plan, ClusterChoice, FormatOptions, FsChoice, FsKind, Layout, Medium};

/// The options the CLI uses for `--fs fs --cluster cluster` (default alignment).
pub fn options(fs: FsKind, cluster: u64) -> FormatOptions {
    FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0x1234_ABCD)
}

/// Plans `fs` at `cluster` on a whole-medium volume of `bytes`.
pub fn plan_for(fs: FsKind, cluster: u64, sector: u32, bytes: u64) -> Option<Layout> {
    let medium = Medium::whole(bytes, sector).ok()?;
    plan(&options(fs, cluster), &medium).ok()
}

/// The smallest volume (a whole number of sectors) the planner accepts for
/// `fs` at `cluster` bytes and `sector`-byte sectors: the first size that
/// plans while one sector less does not, found by doubling then bisection.
/// Panics if nothing up to 16 TiB plans.
#[track_caller]
pub fn smallest_valid(fs: FsKind, cluster: u64, sector: u32) -> u64 {
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
    assert_near_minimum(fs, cluster, sector, hi * s);
    hi * s
}

/// The size the bisection found is the smallest in the spec's terms too,
/// not only the planner's: its cluster count is at least the width's
/// minimum (README.md's limits: FAT12 1, FAT16 4,101, FAT32 65,541; exFAT
/// the bitmap, the 5,836-byte up-case table and the root) and exceeds it
/// by no more than what one more alignment unit (1 MiB, the default) and
/// the FAT entries of those clusters can account for. A planner whose
/// minimum drifted up would pass the bisection and fail here.
#[track_caller]
fn assert_near_minimum(fs: FsKind, cluster: u64, sector: u32, bytes: u64) {
    let count = u64::from(
        plan_for(fs, cluster, sector, bytes)
            .expect("plans")
            .cluster_count(),
    );
    let min = match fs {
        FsKind::Exfat => 3 + 5836u64.div_ceil(cluster),
        _ => spec_count_range(fs).0,
    };
    let slack = (2 << 20) / cluster + 2;
    assert!(
        (min..=min + slack).contains(&count),
        "the smallest {fs} at {cluster} B clusters, {sector} B sectors ({bytes} B) has {count} \
         clusters: the minimum is {min}, at most {slack} more expected"
    );
}

/// The largest volume (a whole number of sectors) the planner accepts for
/// `fs` at `cluster` bytes and `sector`-byte sectors, searched between
/// `accepted` bytes (which must plan) and `refused` bytes (which must not):
/// the last size that plans while one sector more does not, by bisection.
#[track_caller]
pub fn largest_valid(fs: FsKind, cluster: u64, sector: u32, accepted: u64, refused: u64) -> u64 {
    let s = u64::from(sector);
    let ok = |sectors: u64| plan_for(fs, cluster, sector, sectors * s).is_some();
    let (mut lo, mut hi) = (accepted / s, refused / s);
    assert!(
        ok(lo),
        "{fs} at {cluster}-byte clusters refuses {accepted} bytes"
    );
    assert!(
        !ok(hi),
        "{fs} at {cluster}-byte clusters accepts {refused} bytes"
    );
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo * s
}

/// The cluster-count range of `fs` by the spec's width boundaries (4,085
/// and 65,525 clusters; exFAT at most 2^32 - 11) with the project's
/// 16-cluster margins (README: FAT12 1..4,068, FAT16 4,101..65,508, FAT32
/// 65,541..268,435,445), written apart from the planner.
pub fn spec_count_range(fs: FsKind) -> (u64, u64) {
    use crate::geometry::{EXFAT_MAX_CLUSTERS, FAT12_LIMIT, FAT16_LIMIT};
    match fs {
        FsKind::Fat12 => (1, FAT12_LIMIT - 1 - 16),
        FsKind::Fat16 => (FAT12_LIMIT + 16, FAT16_LIMIT - 1 - 16),
        FsKind::Fat32 => (FAT16_LIMIT + 16, 0x0FFF_FFF5),
        _ => (1, EXFAT_MAX_CLUSTERS),
    }
}

/// Bounds on the cluster count of `fs` at `cluster` bytes on `volume` bytes
/// (`sector`-byte sectors, FAT and data aligned to `align`) by the spec's
/// arithmetic alone, apart from the planner: at most every byte is a
/// cluster; at least what is left after the largest metadata any layout
/// needs (64 boot and reserved sectors, the FATs for that many clusters, a
/// FAT12/16 root of up to 512 entries and a sector, and up to `align` of
/// padding before the FAT and before the data region each).
pub fn spec_count_bounds(
    fs: FsKind,
    cluster: u64,
    sector: u32,
    volume: u64,
    align: u64,
) -> (u64, u64) {
    let b = u64::from(sector);
    let ub = volume / cluster;
    let (bits, fats) = match fs {
        FsKind::Fat12 => (12, 2),
        FsKind::Fat16 => (16, 2),
        FsKind::Fat32 => (32, 2),
        _ => (32, 1),
    };
    let fat = ((ub + 2) * bits / 8).div_ceil(b) * b + b;
    let root = if matches!(fs, FsKind::Fat12 | FsKind::Fat16) {
        512 * 32 + b
    } else {
        0
    };
    let overhead = 2 * align + 64 * b + fats * fat + root;
    (volume.saturating_sub(overhead) / cluster, ub)
}

/// A volume size of an interoperability matrix.
#[derive(Debug, Clone, Copy)]
pub enum Size {
    /// The smallest size the planner accepts for this cluster and sector size.
    Smallest,
    /// A fixed size in bytes.
    Bytes(u64),
}

impl Size {
    /// The size in bytes of `fs` at `cluster` bytes and `sector`-byte sectors.
    #[track_caller]
    pub fn bytes(self, fs: FsKind, cluster: u64, sector: u32) -> u64 {
        match self {
            Size::Smallest => smallest_valid(fs, cluster, sector),
            Size::Bytes(b) => b,
        }
    }
}

/// One `#[test]` per row (tool tier: the rows run external checkers), each
/// calling `$case` with the row's arguments:
/// `matrix_cases!(exfat_case; c512_s512_smallest: 512, 512, Size::Smallest;)`.
#[macro_export]
macro_rules! matrix_cases {
    ($case:ident; $($name:ident: $($arg:expr),+;)*) => {
        $(
            #[test]
            #[ignore = "tool tier: cargo xtask test"]
            fn $name() {
                $case($($arg),+);
            }
        )*
    };
}

/// Two `#[test]`s per row (tool tier), in a module named after the row: `smallest`
/// calls `$case(cluster, sector, Size::Smallest)`, `medium` calls it with
/// `Size::Bytes($medium)`:
/// `smallest_and_medium!(exfat_case, MEDIUM; c4k_s512: 4 * KIB, 512;)`.
#[macro_export]
macro_rules! smallest_and_medium {
    ($case:ident, $medium:expr; $($name:ident: $cluster:expr, $sector:expr;)*) => {
        $(
            mod $name {
                use super::*;

                #[test]
                #[ignore = "tool tier: cargo xtask test"]
                fn smallest() {
                    $case($cluster, $sector, $crate::Size::Smallest);
                }

                #[test]
                #[ignore = "tool tier: cargo xtask test"]
                fn medium() {
                    $case($cluster, $sector, $crate::Size::Bytes($medium));
                }
            }
        )*
    };
}
