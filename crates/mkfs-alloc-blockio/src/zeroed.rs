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

/// Zeroes every block of `dev` in 64 MiB steps, telling `progress` the
/// bytes done of the total after each, then flushes (a full format).
///
/// # Errors
///
/// The first [`IoError`] of zeroing or of the flush.
pub fn zero_all(dev: &mut dyn BlockIo, progress: &mut dyn FnMut(u64, u64)) -> Result<(), IoError> {
    let bs = u64::from(dev.block_size());
    let total = dev.num_blocks();
    let step = ((64 << 20) / bs).max(1);
    let mut at = 0;
    while at < total {
        let n = step.min(total - at);
        dev.write_zeroes(at, n)?;
        at += n;
        progress(at * bs, total * bs);
    }
    dev.flush()
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

    #[test]
    fn zero_all_zeroes_every_block_in_steps() {
        // 64 MiB and one block: two steps.
        let blocks = (64 << 20) / 4096 + 1;
        let mut disk = MemDisk::new(4096, blocks).expect("disk");
        disk.write_blocks(blocks - 1, &[0xAA; 4096]).expect("write");
        let mut seen = Vec::new();
        zero_all(&mut disk, &mut |d, t| seen.push((d, t))).expect("zero");
        let total = blocks * 4096;
        assert_eq!(seen, [(64 << 20, total), (total, total)]);
        let mut b = [0xFF; 4096];
        disk.read_blocks(blocks - 1, &mut b).expect("read");
        assert_eq!(b, [0; 4096]);
    }
}
