//! Platforms without raw device support: every entry point fails with
//! [`DeviceError::Unsupported`].

use std::io;
use std::path::Path;

use super::{DeviceError, DeviceInfo, XferResult};

fn unsupported(what: &str) -> DeviceError {
    DeviceError::Unsupported {
        what: what.to_string(),
    }
}

pub(super) fn is_block_device(_path: &Path) -> bool {
    false
}

pub(super) fn inspect(_path: &Path) -> Result<DeviceInfo, DeviceError> {
    Err(unsupported("inspect"))
}

pub(super) fn list() -> Result<Vec<DeviceInfo>, DeviceError> {
    Err(unsupported("list"))
}

/// Never constructed.
#[derive(Debug)]
pub(super) enum RawDevice {}

impl RawDevice {
    pub(super) fn open(
        _path: &Path,
        _uncached: bool,
    ) -> Result<(RawDevice, DeviceInfo), DeviceError> {
        Err(unsupported("open"))
    }

    pub(super) fn read_at(&mut self, _offset: u64, _buf: &mut [u8]) -> XferResult {
        match *self {}
    }

    pub(super) fn write_at(&mut self, _offset: u64, _buf: &[u8]) -> XferResult {
        match *self {}
    }

    pub(super) fn zero_range(&mut self, _offset: u64, _len: u64) -> io::Result<bool> {
        match *self {}
    }

    pub(super) fn discard(&mut self, _offset: u64, _len: u64) -> io::Result<bool> {
        match *self {}
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(super) fn forget_cached(&mut self) -> io::Result<()> {
        Ok(())
    }

    pub(super) fn reread_partitions(&mut self) -> io::Result<()> {
        match *self {}
    }
}
