//! The size of a medium named by a path, whether device or image file.

use std::io;
use std::path::Path;

use crate::{inspect, is_block_device, DeviceError};

/// Why [`size_of`] cannot tell a size.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// Inspecting the device failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// Reading the file's metadata failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Neither a regular file nor a block device.
    #[error("neither an image file nor a block device")]
    Kind,
}

/// The bytes of what `path` names: a block device's size (inspected, not
/// opened), a regular file's length.
///
/// # Errors
///
/// [`SizeError`].
pub fn size_of(path: &Path) -> Result<u64, SizeError> {
    if is_block_device(path) {
        return Ok(inspect(path)?.size_bytes);
    }
    let m = std::fs::metadata(path)?;
    if !m.is_file() {
        return Err(SizeError::Kind);
    }
    Ok(m.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_has_its_length_a_directory_no_size() {
        let dir = std::env::temp_dir().join(format!("device-size-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let img = dir.join("card.img");
        std::fs::write(&img, vec![0u8; 4096]).expect("image");
        assert_eq!(size_of(&img).expect("a file"), 4096);
        assert!(matches!(size_of(&dir), Err(SizeError::Kind)));
        assert!(matches!(size_of(&dir.join("none")), Err(SizeError::Io(_))));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
