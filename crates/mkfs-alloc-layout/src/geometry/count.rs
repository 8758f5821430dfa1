//! The units of a volume as types, so that a sector count is never passed
//! where a byte count is meant, nor a cluster count where a cluster size is
//! (the models: gpt-disk-rs' `Lba` and `BlockSize`, embedded-sdmmc's
//! `BlockIdx` and `BlockCount`).
//!
//! Bytes stay plain `u64` (the unit every other figure converts to, named
//! by the accessor: `volume_bytes`, `fat_offset`); the other units are
//! these types. A type whose every value is valid has a public field
//! ([`Sectors`], [`Clusters`]); one with a rule has a checking constructor
//! ([`SectorSize`], [`ClusterSize`]). Conversions are explicit and cheap:
//! `get()` for the stored width, `bytes()` and `u64::from` for arithmetic;
//! with the `serde` feature each serializes as its number.

/// A number of sectors of the volume's [`SectorSize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct Sectors(pub u64);

/// A logical sector size in bytes (never zero; the planner and
/// [`Medium`](crate::Medium) hold it to the sector-size rule,
/// [`check_sector_size`](crate::check_sector_size)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct SectorSize(u32);

impl SectorSize {
    /// `bytes` as a sector size, or `None` for zero.
    pub const fn new(bytes: u32) -> Option<SectorSize> {
        if bytes == 0 {
            None
        } else {
            Some(SectorSize(bytes))
        }
    }

    /// A size that passed the sector-size rule (`check_sector_size`), so
    /// not zero.
    pub(crate) const fn checked(bytes: u32) -> SectorSize {
        debug_assert!(bytes != 0);
        SectorSize(bytes)
    }

    /// The size in bytes, as the BPB's field holds it.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The size in bytes, for byte arithmetic.
    pub fn bytes(self) -> u64 {
        u64::from(self.0)
    }

    /// Whole sectors in `bytes` (rounded down).
    pub fn sectors_in(self, bytes: u64) -> Sectors {
        Sectors(bytes / self.bytes())
    }

    /// Sectors that hold `bytes` (rounded up).
    pub fn sectors_for(self, bytes: u64) -> Sectors {
        Sectors(bytes.div_ceil(self.bytes()))
    }

    /// Bytes of `sectors` sectors.
    pub fn bytes_of(self, sectors: Sectors) -> u64 {
        sectors.0 * self.bytes()
    }
}

impl From<SectorSize> for u64 {
    fn from(s: SectorSize) -> u64 {
        s.bytes()
    }
}

/// A number of clusters: a count of the data region's clusters, or of
/// those in use (the FAT's entries are 32 bits wide, and so is this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct Clusters(pub u32);

impl Clusters {
    /// The count, as the boot sector's field holds it.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl From<Clusters> for u64 {
    fn from(c: Clusters) -> u64 {
        u64::from(c.0)
    }
}

/// The number of one cluster of the data region, as the FAT and the
/// directory entries name it: 2 for the first (0 and 1 name none), so an
/// offset computed from it cannot run before the data region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct ClusterIndex(u32);

impl ClusterIndex {
    /// The first cluster of the data region.
    pub const FIRST: ClusterIndex = ClusterIndex(2);

    /// Cluster `n`; `None` for 0 and 1, which name no cluster.
    pub const fn new(n: u32) -> Option<ClusterIndex> {
        if n >= Self::FIRST.0 {
            Some(ClusterIndex(n))
        } else {
            None
        }
    }

    /// The cluster `count` clusters after this one; `None` past the 32-bit
    /// range.
    pub const fn after(self, count: Clusters) -> Option<ClusterIndex> {
        match self.0.checked_add(count.0) {
            Some(n) => Some(ClusterIndex(n)),
            None => None,
        }
    }

    /// The number, as the FAT and the directory entries hold it.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// How many clusters of the data region come before this one.
    pub const fn in_heap(self) -> Clusters {
        Clusters(self.0 - Self::FIRST.0)
    }
}

impl From<ClusterIndex> for u32 {
    fn from(c: ClusterIndex) -> u32 {
        c.0
    }
}

impl From<ClusterIndex> for u64 {
    fn from(c: ClusterIndex) -> u64 {
        u64::from(c.0)
    }
}

/// A cluster size in bytes: a power of two (the planner holds it to the
/// file system's range, from the sector size up to 32 MiB on exFAT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct ClusterSize(u64);

impl ClusterSize {
    /// `bytes` as a cluster size, or `None` unless it is a power of two.
    pub const fn new(bytes: u64) -> Option<ClusterSize> {
        if bytes.is_power_of_two() {
            Some(ClusterSize(bytes))
        } else {
            None
        }
    }

    /// A size the planner checked (`error::check_cluster`, the geometry),
    /// so a power of two.
    pub(crate) const fn planned(bytes: u64) -> ClusterSize {
        debug_assert!(bytes.is_power_of_two());
        ClusterSize(bytes)
    }

    /// The size in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// Its base-2 logarithm (exFAT's `SectorsPerClusterShift` plus the
    /// sector's, FAT's sectors per cluster as a shift).
    pub const fn shift(self) -> u32 {
        self.0.trailing_zeros()
    }

    /// Bytes of `clusters` clusters.
    pub fn bytes_of(self, clusters: Clusters) -> u64 {
        u64::from(clusters.0) * self.0
    }

    /// Clusters that hold `bytes` (rounded up), saturating at the widest
    /// count.
    pub fn clusters_for(self, bytes: u64) -> Clusters {
        Clusters(u32::try_from(bytes.div_ceil(self.0)).unwrap_or(u32::MAX))
    }
}

impl From<ClusterSize> for u64 {
    fn from(c: ClusterSize) -> u64 {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_size_is_a_power_of_two() {
        assert_eq!(ClusterSize::new(0), None);
        assert_eq!(ClusterSize::new(3 << 10), None);
        let c = ClusterSize::new(32 << 10).expect("a power of two");
        assert_eq!(
            (c.bytes(), c.shift(), u64::from(c)),
            (32 << 10, 15, 32 << 10)
        );
        assert_eq!(c.bytes_of(Clusters(3)), 96 << 10);
        assert_eq!(c.clusters_for(0), Clusters(0));
        assert_eq!(c.clusters_for(1), Clusters(1));
        assert_eq!(c.clusters_for(64 << 10), Clusters(2));
        assert_eq!(c.clusters_for(u64::MAX), Clusters(u32::MAX));
        // The widest count times the largest size does not wrap.
        let big = ClusterSize::new(32 << 20).expect("a power of two");
        assert_eq!(big.bytes_of(Clusters(u32::MAX)), u64::from(u32::MAX) << 25);
    }

    #[test]
    fn a_sector_size_is_never_zero() {
        assert_eq!(SectorSize::new(0), None);
        let s = SectorSize::new(4096).expect("not zero");
        assert_eq!((s.get(), s.bytes(), u64::from(s)), (4096, 4096, 4096));
        assert_eq!(s.sectors_in(8191), Sectors(1));
        assert_eq!(s.sectors_for(8193), Sectors(3));
        assert_eq!(s.bytes_of(Sectors(2)), 8192);
        assert_eq!(u64::from(Clusters(7)), 7);
    }
}
