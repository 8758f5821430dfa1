//! [`Zeroed`]: evidence that a run of blocks was zeroed, which only zeroing
//! makes.

use std::ops::Range;

use crate::{BlockIo, IoError};

/// Blocks of a target that [`zero_blocks`] zeroed. Only zeroing makes one,
/// so a writer that is handed one may skip zeroing those blocks again
/// without taking a caller's word for it (the layout writer's
/// `Prior::Wiped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zeroed {
    first_lba: u64,
    count: u64,
    block_size: u32,
}

impl Zeroed {
    /// First block zeroed.
    pub fn first_lba(&self) -> u64 {
        self.first_lba
    }

    /// Blocks zeroed.
    pub fn blocks(&self) -> u64 {
        self.count
    }

    /// Block size of the target.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// The bytes zeroed, as offsets on the target.
    pub fn bytes(&self) -> Range<u64> {
        let bs = u64::from(self.block_size);
        let start = self.first_lba.saturating_mul(bs);
        start..start.saturating_add(self.count.saturating_mul(bs))
    }

    /// The blocks `[first_lba, first_lba + count)` of this run, when they
    /// lie inside it (part of a zeroed run was zeroed too).
    pub fn part(&self, first_lba: u64, count: u64) -> Option<Zeroed> {
        let end = first_lba.checked_add(count)?;
        (first_lba >= self.first_lba && end <= self.first_lba + self.count).then_some(Zeroed {
            first_lba,
            count,
            block_size: self.block_size,
        })
    }
}

/// Zeroes `count` blocks of `dev` from `first_lba` ([`BlockIo::write_zeroes`])
/// and returns the evidence.
///
/// # Errors
///
/// The [`IoError`] of [`BlockIo::write_zeroes`].
pub fn zero_blocks<D: BlockIo + ?Sized>(
    dev: &mut D,
    first_lba: u64,
    count: u64,
) -> Result<Zeroed, IoError> {
    dev.write_zeroes(first_lba, count)?;
    Ok(Zeroed {
        first_lba,
        count,
        block_size: dev.block_size(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemDisk;

    #[test]
    fn a_part_of_a_zeroed_run_and_nothing_else() {
        let mut disk = MemDisk::new(512, 64).expect("disk");
        let z = zero_blocks(&mut disk, 8, 16).expect("zero");
        assert_eq!(z.bytes(), 4096..12288);
        assert_eq!(z.part(8, 16), Some(z));
        assert_eq!(z.part(10, 2).map(|p| p.bytes()), Some(5120..6144));
        assert_eq!(z.part(7, 2), None);
        assert_eq!(z.part(20, 5), None);
        assert_eq!(z.part(u64::MAX, 2), None);
    }
}
