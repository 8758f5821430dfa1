//! The units of the geometry arithmetic as types, so that a sector count is
//! never passed where a byte count is meant (the models: gpt-disk-rs'
//! `Lba` and `BlockSize`, embedded-sdmmc's `BlockCount`).

/// A number of sectors of the volume's [`SectorSize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sectors(pub u64);

/// A logical sector size in bytes (never zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SectorSize(u32);

impl SectorSize {
    /// `bytes` as a sector size, or `None` for zero (the planner checks the
    /// sector-size rule itself, `check_sector_size`).
    pub const fn new(bytes: u32) -> Option<SectorSize> {
        if bytes == 0 {
            None
        } else {
            Some(SectorSize(bytes))
        }
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
