//! The flashing formats of a formatted raw image file, written along its
//! map of written ranges (the image is read for the mapped ranges only,
//! never scanned for holes).

use std::io::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

use mkfs_alloc_blockio::{ImageFile, IoError};

use crate::{
    replace_file, sparse_block_size, write_bmap, write_sparse, write_sparse_seekable, BlockReader,
    BmapSummary, ExportError, ReplaceError, SparseOptions, SparseSummary,
};

/// The bmap's block size: bmaptool's own default.
pub const BMAP_BLOCK: u64 = 4096;

/// Where the flashing formats of one image go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    /// A bmaptool block map, to this file.
    pub bmap: Option<PathBuf>,
    /// An Android sparse image (with CRC32): to this file, or with
    /// `Some(None)` to standard output.
    pub sparse: Option<Option<PathBuf>>,
}

/// What [`export_image`] wrote.
#[derive(Debug, Clone, Default)]
pub struct Exported {
    /// The block map's counts.
    pub bmap: Option<BmapSummary>,
    /// The sparse image's counts.
    pub sparse: Option<SparseSummary>,
}

/// Why [`export_image`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageExportError {
    /// The image's size is not a multiple of 512 bytes (checked before
    /// anything is written).
    #[error("the size {size} is not a multiple of 512 bytes")]
    SparseSize {
        /// The image's size.
        size: u64,
    },
    /// The raw image cannot be reopened.
    #[error("reopening {} to read it", path.display())]
    Reopen {
        /// The raw image.
        path: PathBuf,
        /// The failure.
        #[source]
        source: IoError,
    },
    /// Writing an output file failed (it is not left half-written).
    #[error("writing {}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// The failure.
        #[source]
        source: ReplaceError,
    },
    /// Writing the sparse image to standard output failed.
    #[error("writing the sparse image to standard output")]
    Stdout(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A new raw image's path for a sparse image: beside `target` (a hidden
/// name holding the process id), or in the temporary directory.
pub fn raw_path(target: Option<&Path>) -> PathBuf {
    let tag = format!("mkfs-alloc-{}.raw", std::process::id());
    match target {
        Some(t) => {
            let name = t
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            t.with_file_name(format!(".{name}.{tag}"))
        }
        None => std::env::temp_dir().join(tag),
    }
}

/// Writes `outputs` from the raw image at `raw` (`size` bytes, `ranges`
/// written or needed as zeros): the block map first, then the sparse image.
///
/// # Errors
///
/// [`ImageExportError`].
pub fn export_image(
    raw: &Path,
    size: u64,
    ranges: &[Range<u64>],
    outputs: &Outputs,
) -> Result<Exported, ImageExportError> {
    let sparse_block = match &outputs.sparse {
        Some(_) => Some(sparse_block_size(size).ok_or(ImageExportError::SparseSize { size })?),
        None => None,
    };
    let open = || {
        ImageFile::open_read_only(raw, 512)
            .map(BlockReader::new)
            .map_err(|source| ImageExportError::Reopen {
                path: raw.to_path_buf(),
                source,
            })
    };
    let mut done = Exported::default();
    if let Some(bmap) = &outputs.bmap {
        let mut reader = open()?;
        done.bmap = Some(to_file(bmap, |out| {
            write_bmap(size, BMAP_BLOCK, ranges, &mut reader, out)
        })?);
    }
    if let (Some(dest), Some(bs)) = (&outputs.sparse, sparse_block) {
        let opts = SparseOptions::new(bs).with_crc(true);
        let mut reader = open()?;
        done.sparse = Some(match dest {
            Some(path) => to_file(path, |out| {
                write_sparse_seekable(size, opts, ranges, &mut reader, out)
            })?,
            None => {
                let stdout = std::io::stdout();
                let mut lock = stdout.lock();
                let s = write_sparse(size, opts, ranges, &mut reader, &mut lock)
                    .map_err(|e| ImageExportError::Stdout(e.into()))?;
                lock.flush()
                    .map_err(|e| ImageExportError::Stdout(e.into()))?;
                s
            }
        });
    }
    Ok(done)
}

/// [`replace_file`], its failure naming `path`.
fn to_file<T>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<T, ExportError>,
) -> Result<T, ImageExportError> {
    replace_file(path, write).map_err(|source| ImageExportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_exported_along_its_map() {
        let dir = std::env::temp_dir().join(format!("export-image-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let raw = raw_path(Some(&dir.join("out.simg")));
        assert!(raw.starts_with(&dir));
        let mut bytes = vec![0u8; 1 << 20];
        bytes[..4096].fill(0xA5);
        bytes[8192..12288].fill(0x5A);
        std::fs::write(&raw, &bytes).expect("raw image");
        let outputs = Outputs {
            bmap: Some(dir.join("out.bmap")),
            sparse: Some(Some(dir.join("out.simg"))),
        };
        let written: Vec<Range<u64>> = vec![0..4096, 8192..12288];
        let done = export_image(&raw, 1 << 20, &written, &outputs).expect("exported");
        let bmap = done.bmap.expect("a block map");
        assert_eq!((bmap.mapped_blocks, bmap.blocks), (2, 256));
        let sparse = done.sparse.expect("a sparse image");
        let file = std::fs::metadata(dir.join("out.simg")).expect("sparse image");
        assert!(sparse.chunks >= 2 && file.len() == sparse.bytes);
        assert!(dir.join("out.bmap").is_file());
        // A size no sparse block divides is refused before anything is written.
        let odd = Outputs {
            bmap: Some(dir.join("odd.bmap")),
            sparse: Some(Some(dir.join("odd.simg"))),
        };
        let e = export_image(&raw, 1000, &[], &odd).expect_err("odd size");
        assert!(matches!(e, ImageExportError::SparseSize { size: 1000 }));
        assert!(!dir.join("odd.bmap").exists());
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
