//! [`FakeStick`]: an in-memory counterfeit flash drive for tests.
//!
//! It announces more blocks than it stores and misbehaves beyond its real
//! size the way counterfeit sticks do (see [`FakeKind`]). A write cache holds
//! the last blocks written, answers reads of them and survives
//! [`ProbeTarget::reset`], like the permanent caches some fakes use to pass
//! tools that only read back what they just wrote.
//!
//! Storage is sparse (only written blocks take memory).

use std::collections::{HashMap, VecDeque};
use std::io;

use mkfs_alloc_blockio::{BlockIo, IoError, IoOp};

use crate::ProbeTarget;

/// How a [`FakeStick`] maps announced blocks to its real storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeKind {
    /// Every announced block is real (a genuine device; `real_blocks` is ignored).
    Genuine,
    /// Block `b` is stored at `b % real_blocks`: writes beyond the real size
    /// overwrite the start.
    Wraparound,
    /// Blocks below `real_blocks` are real; writes beyond are dropped and
    /// reads there return zeros.
    Limbo,
    /// Block `b` is stored at `b % modulus`; of those cells only the ones
    /// below `real_blocks` keep data (`real_blocks < modulus`).
    Chain {
        /// The address wrap, in blocks (a power of two).
        modulus: u64,
    },
    /// A genuine device whose reads fail in `count` blocks from `first`.
    Damaged {
        /// First unreadable block.
        first: u64,
        /// Number of unreadable blocks.
        count: u64,
    },
}

/// An in-memory counterfeit stick. See the [module docs](self).
#[derive(Debug)]
pub struct FakeStick {
    block_size: u32,
    announced: u64,
    real: u64,
    kind: FakeKind,
    cells: HashMap<u64, Box<[u8]>>,
    cache: HashMap<u64, (u64, Box<[u8]>)>,
    order: VecDeque<(u64, u64)>,
    cache_blocks: usize,
    seq: u64,
    resets: u64,
}

impl FakeStick {
    /// A fake of `announced_blocks` blocks of `block_size` bytes that stores
    /// `real_blocks` blocks, misbehaving as `kind`, with a write cache of
    /// `cache_blocks` blocks (0: none).
    pub fn new(
        kind: FakeKind,
        block_size: u32,
        announced_blocks: u64,
        real_blocks: u64,
        cache_blocks: usize,
    ) -> Self {
        FakeStick {
            block_size,
            announced: announced_blocks,
            real: real_blocks.min(announced_blocks).max(1),
            kind,
            cells: HashMap::new(),
            cache: HashMap::new(),
            order: VecDeque::new(),
            cache_blocks,
            seq: 0,
            resets: 0,
        }
    }

    /// How many times [`ProbeTarget::reset`] was called.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// The storage cell of announced block `lba`, or `None` when the block
    /// has none (writes dropped, reads zero).
    fn cell(&self, lba: u64) -> Option<u64> {
        match self.kind {
            FakeKind::Genuine | FakeKind::Damaged { .. } => Some(lba),
            FakeKind::Wraparound => Some(lba % self.real),
            FakeKind::Limbo => (lba < self.real).then_some(lba),
            FakeKind::Chain { modulus } => {
                let c = lba % modulus.max(1);
                (c < self.real).then_some(c)
            }
        }
    }

    fn check(&self, op: IoOp, lba: u64, len: usize) -> Result<(), IoError> {
        let bs = u64::from(self.block_size);
        let n = len as u64 / bs;
        if len as u64 % bs != 0 || lba.checked_add(n).is_none_or(|end| end > self.announced) {
            return Err(IoError::new(
                op,
                lba.saturating_mul(bs),
                len as u64,
                io::Error::new(io::ErrorKind::InvalidInput, "outside the fake stick"),
            ));
        }
        Ok(())
    }
}

impl BlockIo for FakeStick {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn num_blocks(&self) -> u64 {
        self.announced
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.check(IoOp::Read, lba, dst.len())?;
        let bs = self.block_size as usize;
        for (i, out) in dst.chunks_mut(bs).enumerate() {
            let b = lba + i as u64;
            if let FakeKind::Damaged { first, count } = self.kind {
                if b >= first && b - first < count {
                    return Err(IoError::new(
                        IoOp::Read,
                        b * bs as u64,
                        bs as u64,
                        io::Error::other("injected medium error"),
                    ));
                }
            }
            if let Some((_, data)) = self.cache.get(&b) {
                out.copy_from_slice(data);
                continue;
            }
            match self.cell(b).and_then(|c| self.cells.get(&c)) {
                Some(data) => out.copy_from_slice(data),
                None => out.fill(0),
            }
        }
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.check(IoOp::Write, lba, src.len())?;
        let bs = self.block_size as usize;
        for (i, data) in src.chunks(bs).enumerate() {
            let b = lba + i as u64;
            if let Some(c) = self.cell(b) {
                self.cells.insert(c, data.into());
            }
            if self.cache_blocks > 0 {
                self.seq += 1;
                self.cache.insert(b, (self.seq, data.into()));
                self.order.push_back((b, self.seq));
                while self.order.len() > self.cache_blocks {
                    if let Some((old, seq)) = self.order.pop_front() {
                        if self.cache.get(&old).is_some_and(|(s, _)| *s == seq) {
                            self.cache.remove(&old);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

impl ProbeTarget for FakeStick {
    fn reset(&mut self) -> Result<(), IoError> {
        self.resets += 1;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wraparound_overwrites_the_start_and_the_cache_hides_it() {
        let mut f = FakeStick::new(FakeKind::Wraparound, 512, 64, 16, 1);
        f.write_blocks(1, &[1; 512]).unwrap();
        f.write_blocks(17, &[2; 512]).unwrap();
        let mut b = [0u8; 512];
        f.read_blocks(1, &mut b).unwrap();
        assert_eq!(b[0], 2);
        f.read_blocks(17, &mut b).unwrap();
        assert_eq!(b[0], 2);
        // Limbo: the cached block reads back until the cache moves on.
        let mut l = FakeStick::new(FakeKind::Limbo, 512, 64, 16, 1);
        l.write_blocks(40, &[3; 512]).unwrap();
        l.read_blocks(40, &mut b).unwrap();
        assert_eq!(b[0], 3);
        l.write_blocks(0, &[4; 512]).unwrap();
        l.read_blocks(40, &mut b).unwrap();
        assert_eq!(b[0], 0);
    }
}
