//! [`Reopening`]: a raw device as a [`ProbeTarget`] whose handle is closed
//! and opened again at each reset, which drops every handle-level cache
//! (the caller's opener opens it uncached: `O_DIRECT`, `F_NOCACHE`, no
//! buffering), so that the next reads come from the device.

use crate::ProbeTarget;
use mkfs_alloc_blockio::{BlockIo, IoError, IoOp};

/// How a [`Reopening`] opens its device again.
pub type Opener<D> = Box<dyn FnMut() -> Result<D, IoError> + Send>;

/// A device reopened by its opener at every [`ProbeTarget::reset`]. A
/// reopen that fails, or that finds another block size or block count,
/// fails the reset; the target is then closed and every access fails.
pub struct Reopening<D> {
    dev: Option<Box<D>>,
    open: Opener<D>,
}

impl<D: BlockIo> Reopening<D> {
    /// `dev`, opened by `open`, which opens it again at each reset.
    pub fn new(dev: D, open: Opener<D>) -> Self {
        Reopening {
            dev: Some(Box::new(dev)),
            open,
        }
    }

    fn dev(&mut self) -> Result<&mut D, IoError> {
        self.dev
            .as_deref_mut()
            .ok_or_else(|| open_error(std::io::Error::other("the device could not be reopened")))
    }
}

/// An error of (re)opening.
fn open_error(e: std::io::Error) -> IoError {
    IoError::new(IoOp::Open, 0, 0, e)
}

impl<D: BlockIo> BlockIo for Reopening<D> {
    fn block_size(&self) -> u32 {
        self.dev.as_ref().map_or(512, |d| d.block_size())
    }
    fn num_blocks(&self) -> u64 {
        self.dev.as_ref().map_or(0, |d| d.num_blocks())
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.dev()?.read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.dev()?.write_blocks(lba, src)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.dev()?.flush()
    }
}

impl<D: BlockIo> ProbeTarget for Reopening<D> {
    fn reset(&mut self) -> Result<(), IoError> {
        let (bs, n) = (self.block_size(), self.num_blocks());
        self.dev()?.flush()?;
        // Exclusive opens: the old handle goes before the new one comes.
        self.dev = None;
        let dev = (self.open)()?;
        if dev.block_size() != bs || dev.num_blocks() != n {
            return Err(open_error(std::io::Error::other(
                "the device changed size while it was reopened",
            )));
        }
        self.dev = Some(Box::new(dev));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkfs_alloc_blockio::MemDisk;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    fn disk(blocks: u64) -> MemDisk {
        MemDisk::new(512, blocks).expect("a disk")
    }

    #[test]
    fn each_reset_closes_and_opens_again() {
        let opened = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&opened);
        let mut r = Reopening::new(
            disk(8),
            Box::new(move || {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(disk(8))
            }),
        );
        r.write_blocks(1, &[7; 512]).expect("write");
        r.reset().expect("reset");
        r.reset().expect("reset");
        assert_eq!(opened.load(Ordering::SeqCst), 2);
        assert_eq!((r.block_size(), r.num_blocks()), (512, 8));
    }

    #[test]
    fn a_device_that_changed_or_did_not_open_fails_the_reset() {
        let mut r = Reopening::new(disk(8), Box::new(|| Ok(disk(4))));
        let e = r.reset().expect_err("another size");
        assert!(e.source.to_string().contains("changed size"), "{e}");
        let mut b = [0; 512];
        let e = r.read_blocks(0, &mut b).expect_err("closed");
        assert!(
            e.source.to_string().contains("could not be reopened"),
            "{e}"
        );
        let gone = || Err(open_error(std::io::Error::other("unplugged")));
        let mut r = Reopening::new(disk(8), Box::new(gone));
        assert!(r.reset().is_err());
        assert_eq!(r.num_blocks(), 0);
    }
}
