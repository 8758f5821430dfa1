//! A disk that reaches the host through semihosting, as an
//! `embedded_sdmmc::BlockDevice` (the trait an SD card driver implements):
//! 512-byte blocks, the host file's length as the card's size.

use core::fmt;

use embedded_sdmmc::{Block, BlockCount, BlockDevice, BlockIdx};

use crate::semihosting::File;

/// A host file as a block device.
pub struct HostDisk {
    file: File,
    blocks: u32,
}

/// A semihosting call failed.
#[derive(Debug)]
pub struct HostError;

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("semihosting I/O failed")
    }
}

impl core::error::Error for HostError {}

impl HostDisk {
    /// Opens the host file `name` (NUL-terminated).
    pub fn open(name: &[u8]) -> Option<HostDisk> {
        let file = File::open(name)?;
        let blocks = file.len()? / Block::LEN_U32;
        Some(HostDisk { file, blocks })
    }
}

impl BlockDevice for HostDisk {
    type Error = HostError;

    fn read(&self, blocks: &mut [Block], start: BlockIdx) -> Result<(), HostError> {
        for (i, block) in blocks.iter_mut().enumerate() {
            let offset = (start.0 + i as u32) * Block::LEN_U32;
            if !self.file.read_at(offset, &mut block.contents) {
                return Err(HostError);
            }
        }
        Ok(())
    }

    fn write(&self, blocks: &[Block], start: BlockIdx) -> Result<(), HostError> {
        for (i, block) in blocks.iter().enumerate() {
            let offset = (start.0 + i as u32) * Block::LEN_U32;
            if !self.file.write_at(offset, &block.contents) {
                return Err(HostError);
            }
        }
        Ok(())
    }

    fn num_blocks(&self) -> Result<BlockCount, HostError> {
        Ok(BlockCount(self.blocks))
    }
}
