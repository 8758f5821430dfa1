//! [`PowerCutIo`]: a device with a volatile write cache whose power can be
//! cut, for crash tests under the power-loss model.
//!
//! The model: a write is acknowledged when it reaches the cache; a completed
//! flush makes every write issued before it durable; when the power goes,
//! **any subset of the writes since the last completed flush survives**, at
//! block granularity: each block of each unflushed write (zeroings included)
//! is kept or dropped on its own, so a multi-block write may persist partly,
//! and of two unflushed writes to one block the older, the newer or neither
//! may be what remains. [`FaultyIo`](crate::FaultyIo), in contrast, persists
//! operations strictly in order and loses nothing it acknowledged.
//!
//! A test runs its job once through [`PowerCutIo::counting`] to learn the
//! number `n` of mutating operations (writes, zeroings, flushes) and where
//! the flushes are, then for each cut point `k` in `0..=n` and each seed
//! through [`PowerCutIo::new`]`(medium, k, seed)`: operations `0..k` behave
//! as on a healthy device, operation `k` finds the power gone. At that moment
//! a subset of the unflushed writes, drawn from `seed`, reaches the medium;
//! operation `k` and every later one (reads too) fail with an [`IoError`]
//! whose source is a [`PowerLost`] (find it with [`power_lost`]).
//! [`PowerCutIo::into_surviving`] returns what the medium holds; for `k = n`
//! (the job finished) it cuts the power there, so unflushed writes at the
//! end of a job may be lost too. [`sweep`] runs this over many cut points
//! and seeds.
//!
//! How the subset is drawn: a splitmix64 generator seeded from the seed and
//! the cut point first draws a keep probability `p` (0 for one cut in
//! eight, 1 for another one in eight, else uniform in `[0, 1]`), then keeps
//! each block with probability `p`. Drawing `p` per cut makes "the whole
//! cache was lost", "all of it made it" and "almost all" as likely as the
//! middle, where a fixed one half would hardly ever keep every block of a
//! large write.

use std::fmt;
use std::io;

use mkfs_alloc_ondisk::rng::SplitMix64;

use crate::range::{blocks_of, buffer_range, inner_accessors};
use crate::{BlockIo, IoError, IoOp};

pub mod sweep;

#[cfg(test)]
mod tests;

/// The error inside the [`IoError`]s a [`PowerCutIo`] returns once its power
/// is gone; find it with [`power_lost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PowerLost {
    /// The mutating operation at which the power was cut.
    pub cut_at: u64,
    /// The operation that was refused.
    pub op: IoOp,
    /// Number of mutating operations seen before this one.
    pub ops_before: u64,
}

impl fmt::Display for PowerLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "injected power loss at mutating operation {}: {} refused after {} mutating operations",
            self.cut_at, self.op, self.ops_before
        )
    }
}

impl std::error::Error for PowerLost {}

/// The [`PowerLost`] inside `err`, if a [`PowerCutIo`] made it.
pub fn power_lost(err: &IoError) -> Option<&PowerLost> {
    err.source.get_ref()?.downcast_ref::<PowerLost>()
}

/// What the cut did to the writes since the last flush.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CutReport {
    /// The mutating operation at which the power went (`None`: not cut).
    pub cut_at: Option<u64>,
    /// Unflushed writes and zeroings at the cut.
    pub pending_writes: u64,
    /// Blocks of those that reached the medium.
    pub blocks_kept: u64,
    /// Blocks of those that were lost.
    pub blocks_dropped: u64,
}

/// One unflushed write, in the order issued.
#[derive(Debug, Clone)]
enum Pending {
    Data { lba: u64, bytes: Vec<u8> },
    Zero { lba: u64, count: u64 },
}

impl Pending {
    fn span(&self, block_size: u64) -> (u64, u64) {
        match self {
            Pending::Data { lba, bytes } => (
                *lba,
                u64::try_from(bytes.len()).unwrap_or(u64::MAX) / block_size,
            ),
            Pending::Zero { lba, count } => (*lba, *count),
        }
    }
}

/// How a cut chooses the surviving blocks: a keep probability in
/// 1/2^32 steps, drawn once per cut.
#[derive(Debug, Clone, Copy)]
struct Keep(u64);

impl Keep {
    /// One cut in eight keeps nothing, one in eight everything (the two
    /// extremes a test must meet: "the cache was lost", "the cache made
    /// it"), the rest keep each block with a probability drawn uniformly.
    fn draw(rng: &mut SplitMix64) -> Keep {
        match rng.next_u64() % 8 {
            0 => Keep(0),
            1 => Keep(1 << 32),
            _ => Keep(rng.next_u64() >> 32),
        }
    }

    fn block(self, rng: &mut SplitMix64) -> bool {
        (rng.next_u64() >> 32) < self.0
    }
}

/// A [`BlockIo`] wrapper that holds the writes since the last flush in a
/// volatile cache and, at a chosen mutating operation, loses a seeded random
/// subset of them (see the module docs for the model).
///
/// Reads see every acknowledged write (read-your-writes). A flush writes
/// the cache through to the inner device in issue order, then flushes it.
///
/// ```
/// use mkfs_alloc_blockio::{power_lost, BlockIo, MemDisk, PowerCutIo};
///
/// // Power cut at mutating operation 2: op 0 is flushed (op 1), so it
/// // survives whatever the seed.
/// let mut dev = PowerCutIo::new(MemDisk::new(512, 4)?, 2, 7);
/// dev.write_blocks(0, &[1; 512])?; // op 0
/// dev.flush()?; // op 1
/// let err = dev.write_blocks(1, &[2; 512]).unwrap_err(); // op 2: no power
/// assert!(power_lost(&err).is_some());
/// let disk = dev.into_surviving()?;
/// assert_eq!(disk.as_bytes()[0], 1);
/// assert_eq!(disk.as_bytes()[512], 0);
/// # Ok::<(), mkfs_alloc_blockio::IoError>(())
/// ```
#[derive(Debug)]
pub struct PowerCutIo<D> {
    inner: D,
    cut_at: Option<u64>,
    seed: u64,
    ops_seen: u64,
    flushes: Vec<u64>,
    pending: Vec<Pending>,
    report: CutReport,
}

impl<D: BlockIo> PowerCutIo<D> {
    /// Wraps `inner`; the power goes at mutating operation `cut_at`, and
    /// `seed` chooses which unflushed blocks survive.
    pub fn new(inner: D, cut_at: u64, seed: u64) -> Self {
        PowerCutIo {
            inner,
            cut_at: Some(cut_at),
            seed,
            ops_seen: 0,
            flushes: Vec::new(),
            pending: Vec::new(),
            report: CutReport::default(),
        }
    }

    /// Wraps `inner` with a power supply that never fails: for counting the
    /// mutating operations and finding the flushes ([`PowerCutIo::flushes`]).
    pub fn counting(inner: D) -> Self {
        PowerCutIo {
            cut_at: None,
            ..PowerCutIo::new(inner, 0, 0)
        }
    }

    /// Number of mutating operations attempted so far, refused ones included.
    pub fn ops_seen(&self) -> u64 {
        self.ops_seen
    }

    /// The indices of the flushes among the mutating operations so far.
    pub fn flushes(&self) -> &[u64] {
        &self.flushes
    }

    /// True once the power is gone.
    pub fn is_cut(&self) -> bool {
        self.report.cut_at.is_some()
    }

    /// What the cut did (all zero before it).
    pub fn report(&self) -> CutReport {
        self.report
    }

    /// Unflushed writes and zeroings held in the cache.
    pub fn pending_writes(&self) -> usize {
        self.pending.len()
    }

    inner_accessors!(
        "The inner device, mutably: it holds only what was flushed (or \
         survived the cut); operations on it bypass the cache.",
        "Returns the inner device as it is: without the unflushed writes \
         (use [`PowerCutIo::into_surviving`] or [`PowerCutIo::into_all_written`])."
    );

    /// Cuts the power now (nothing happens if it is already gone): a random
    /// subset of the unflushed blocks reaches the inner device, every later
    /// operation fails.
    ///
    /// # Errors
    ///
    /// The inner device's error while writing the surviving blocks.
    pub fn cut_now(&mut self) -> Result<(), IoError> {
        if self.is_cut() {
            return Ok(());
        }
        let bs = u64::from(self.inner.block_size()).max(1);
        let mut rng =
            SplitMix64::new(self.seed ^ self.ops_seen.wrapping_mul(0xA076_1D64_78BD_642F));
        let keep = Keep::draw(&mut rng);
        let pending = std::mem::take(&mut self.pending);
        let mut report = CutReport {
            cut_at: Some(self.ops_seen),
            pending_writes: u64::try_from(pending.len()).unwrap_or(u64::MAX),
            ..CutReport::default()
        };
        for w in &pending {
            let (lba, count) = w.span(bs);
            // Runs of blocks with the same outcome, applied as one write.
            let mut carried = None;
            let mut i = 0;
            while i < count {
                let kept = carried.take().unwrap_or_else(|| keep.block(&mut rng));
                let mut j = i + 1;
                while j < count {
                    let next = keep.block(&mut rng);
                    if next != kept {
                        carried = Some(next);
                        break;
                    }
                    j += 1;
                }
                if kept {
                    report.blocks_kept += j - i;
                    self.apply(w, lba + i, i, j - i, bs)?;
                } else {
                    report.blocks_dropped += j - i;
                }
                i = j;
            }
        }
        self.report = report;
        Ok(())
    }

    /// Cuts the power (unless it is gone already) and returns what the
    /// medium holds.
    ///
    /// # Errors
    ///
    /// As [`PowerCutIo::cut_now`].
    pub fn into_surviving(mut self) -> Result<D, IoError> {
        self.cut_now()?;
        Ok(self.inner)
    }

    /// Returns the medium with every acknowledged write on it, as after a
    /// clean shutdown (after a cut: what survived).
    ///
    /// # Errors
    ///
    /// The inner device's error while writing the cache through.
    pub fn into_all_written(mut self) -> Result<D, IoError> {
        self.write_through()?;
        Ok(self.inner)
    }

    /// Writes blocks `from..from + run` of the pending write `w` (whose
    /// block `from` is at `lba`) to the inner device.
    fn apply(
        &mut self,
        w: &Pending,
        lba: u64,
        from: u64,
        run: u64,
        bs: u64,
    ) -> Result<(), IoError> {
        match w {
            Pending::Data { bytes, .. } => {
                let start = usize::try_from(from * bs).unwrap_or(usize::MAX);
                let end = usize::try_from((from + run) * bs).unwrap_or(usize::MAX);
                self.inner.write_blocks(lba, &bytes[start..end])
            }
            Pending::Zero { .. } => self.inner.write_zeroes(lba, run),
        }
    }

    fn write_through(&mut self) -> Result<(), IoError> {
        for w in std::mem::take(&mut self.pending) {
            match w {
                Pending::Data { lba, bytes } => self.inner.write_blocks(lba, &bytes)?,
                Pending::Zero { lba, count } => self.inner.write_zeroes(lba, count)?,
            }
        }
        Ok(())
    }

    /// Counts one mutating operation; cuts the power when it is the chosen
    /// one; refuses it once the power is gone.
    fn admit(&mut self, op: IoOp, lba: u64, blocks: u64) -> Result<(), IoError> {
        let index = self.ops_seen;
        if self.cut_at == Some(index) {
            self.cut_now()?;
        }
        self.ops_seen = self.ops_seen.saturating_add(1);
        if self.is_cut() {
            return Err(self.refused(op, lba, blocks, index));
        }
        Ok(())
    }

    fn refused(&self, op: IoOp, lba: u64, blocks: u64, ops_before: u64) -> IoError {
        let bs = u64::from(self.inner.block_size());
        let source = io::Error::other(PowerLost {
            cut_at: self.report.cut_at.unwrap_or(ops_before),
            op,
            ops_before,
        });
        IoError::new(
            op,
            lba.saturating_mul(bs),
            blocks.saturating_mul(bs),
            source,
        )
    }
}

impl<D: BlockIo> BlockIo for PowerCutIo<D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        let bs = self.inner.block_size();
        if self.is_cut() {
            let blocks = blocks_of(bs, dst.len());
            return Err(self.refused(IoOp::Read, lba, blocks, self.ops_seen));
        }
        self.inner.read_blocks(lba, dst)?;
        // The cache, oldest first, over what the medium holds.
        let bs = u64::from(bs).max(1);
        let want = blocks_of(self.inner.block_size(), dst.len());
        for w in &self.pending {
            let (wlba, count) = w.span(bs);
            let start = wlba.max(lba);
            let end = (wlba + count).min(lba + want);
            if start >= end {
                continue;
            }
            let to = usize::try_from((start - lba) * bs).unwrap_or(usize::MAX);
            let len = usize::try_from((end - start) * bs).unwrap_or(usize::MAX);
            match w {
                Pending::Data { bytes, .. } => {
                    let from = usize::try_from((start - wlba) * bs).unwrap_or(usize::MAX);
                    dst[to..to + len].copy_from_slice(&bytes[from..from + len]);
                }
                Pending::Zero { .. } => dst[to..to + len].fill(0),
            }
        }
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let bs = self.inner.block_size();
        let blocks = blocks_of(bs, src.len());
        self.admit(IoOp::Write, lba, blocks)?;
        buffer_range(IoOp::Write, bs, self.inner.num_blocks(), lba, src.len())?;
        self.pending.push(Pending::Data {
            lba,
            bytes: src.to_vec(),
        });
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        self.admit(IoOp::Zero, lba, count)?;
        let bs = self.inner.block_size();
        crate::range::block_range(IoOp::Zero, bs, self.inner.num_blocks(), lba, count)?;
        self.pending.push(Pending::Zero { lba, count });
        Ok(())
    }

    fn reads_as_zero(&self) -> bool {
        self.pending.is_empty() && self.inner.reads_as_zero()
    }

    fn flush(&mut self) -> Result<(), IoError> {
        let index = self.ops_seen;
        self.admit(IoOp::Flush, 0, 0)?;
        self.flushes.push(index);
        self.write_through()?;
        self.inner.flush()
    }
}
