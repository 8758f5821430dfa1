//! The job's writes by flush: [`flush_stages`] runs a [`Job`] against an
//! in-memory overlay of the medium (reads see the medium under what the
//! job wrote; nothing reaches the medium) and counts the bytes written
//! between one flush and the next. A dry run reports them, so that a
//! measurement of the floor can write the same bytes in the same number of
//! flush-separated stages.

use std::collections::BTreeMap;

use mkfs_alloc_blockio::{BlockIo, IoError};

use super::{run, Job, ReclusterError};

/// The most bytes the overlay holds: a job that writes more (a larger
/// cluster size moves file data) is not simulated.
pub const MAX_SIMULATED_BYTES: u64 = 64 << 20;

/// The bytes `job` writes before each of its flushes, in order (the last
/// entry, if not zero, was written after the last flush: a job writes
/// nothing there), from running it on an overlay of `dev` that the job's
/// writes never pass. `None` when the plan writes more than
/// [`MAX_SIMULATED_BYTES`].
///
/// # Errors
///
/// What [`run`] on the overlay returns: a read error of `dev`, or a
/// refusal of the evacuation's second phase.
pub fn flush_stages<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
) -> Result<Option<Vec<u64>>, ReclusterError> {
    let planned = job.plan.as_ref().map_or(0, |p| p.bytes_written);
    if planned > MAX_SIMULATED_BYTES {
        return Ok(None);
    }
    let mut overlay = Overlay {
        inner: dev,
        blocks: BTreeMap::new(),
        stages: Vec::new(),
        stage: 0,
    };
    run(&mut overlay, job)?;
    let mut stages = overlay.stages;
    if overlay.stage > 0 {
        stages.push(overlay.stage);
    }
    Ok(Some(stages))
}

/// A copy-on-write view of a medium: written blocks are kept here.
struct Overlay<'a, D: ?Sized> {
    inner: &'a mut D,
    blocks: BTreeMap<u64, Vec<u8>>,
    /// Bytes written per flush so far.
    stages: Vec<u64>,
    /// Bytes written since the last flush.
    stage: u64,
}

impl<D: BlockIo + ?Sized> Overlay<'_, D> {
    fn bs(&self) -> usize {
        usize::try_from(self.inner.block_size()).unwrap_or(512)
    }
}

impl<D: BlockIo + ?Sized> BlockIo for Overlay<'_, D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }

    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }

    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.inner.read_blocks(lba, dst)?;
        let bs = self.bs();
        let n = (dst.len() / bs) as u64;
        for (&b, data) in self.blocks.range(lba..lba + n) {
            let at = usize::try_from(b - lba).unwrap_or(0) * bs;
            dst[at..at + bs].copy_from_slice(data);
        }
        Ok(())
    }

    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let bs = self.bs();
        for (i, chunk) in src.chunks_exact(bs).enumerate() {
            self.blocks.insert(lba + i as u64, chunk.to_vec());
        }
        self.stage += src.len() as u64;
        Ok(())
    }

    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        let bs = self.bs();
        for b in lba..lba + count {
            self.blocks.insert(b, vec![0; bs]);
        }
        self.stage += count * bs as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.stages.push(std::mem::take(&mut self.stage));
        Ok(())
    }
}
