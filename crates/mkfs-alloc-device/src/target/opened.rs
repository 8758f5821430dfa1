//! A target opened for writing: an image file or an exclusively opened
//! device, as one [`BlockIo`].

use crate::Device;
use mkfs_alloc_blockio::{BlockIo, ImageFile, IoError};

/// An opened (and locked) target.
pub enum Opened {
    /// An image file; `true` when this run created it.
    Image(ImageFile, bool),
    /// A block device, opened exclusively (boxed: larger on Windows).
    Device(Box<Device>),
}

impl Opened {
    /// The target as a block device.
    pub fn io(&mut self) -> &mut dyn BlockIo {
        match self {
            Opened::Image(i, _) => i,
            Opened::Device(d) => d.as_mut(),
        }
    }

    /// True when this run created the image (it is removed on failure).
    pub fn created(&self) -> bool {
        matches!(self, Opened::Image(_, true))
    }
}

impl BlockIo for Opened {
    fn block_size(&self) -> u32 {
        match self {
            Opened::Image(i, _) => i.block_size(),
            Opened::Device(d) => d.block_size(),
        }
    }
    fn num_blocks(&self) -> u64 {
        match self {
            Opened::Image(i, _) => i.num_blocks(),
            Opened::Device(d) => d.num_blocks(),
        }
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.io().read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.io().write_blocks(lba, src)
    }
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        self.io().write_zeroes(lba, count)
    }
    fn reads_as_zero(&self) -> bool {
        match self {
            Opened::Image(i, _) => i.reads_as_zero(),
            Opened::Device(d) => d.reads_as_zero(),
        }
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.io().flush()
    }
}
