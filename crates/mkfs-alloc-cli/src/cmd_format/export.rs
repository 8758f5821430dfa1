//! `--output-format sparse` and `--bmap FILE`: the flashing formats,
//! written from the plan's extent map after the format (the image is read
//! for the mapped ranges only, never scanned for holes).
//!
//! A sparse image needs a raw image to read from: the format goes into a
//! new sparse file beside TARGET (in the temporary directory for `-`),
//! which is removed when the sparse image is out, or when anything fails.

use super::preflight::{self, MediumId, Output, Write};
use crate::args::{FormatArgs, OutputFormat};
use crate::{usage, Failure};
use anyhow::{anyhow, Context};
use mkfs_alloc::blockio::ImageFile;
use mkfs_alloc::ExtentMap;
use mkfs_alloc_export::{
    replace_file, sparse_block_size, write_bmap, write_sparse, write_sparse_seekable, BlockReader,
    ExportError, SparseOptions,
};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The bmap's block size: bmaptool's own default.
const BMAP_BLOCK: u64 = 4096;

/// Where the flashing formats go.
#[derive(Debug)]
pub(super) struct Exports {
    /// `--output-format sparse`: TARGET (`None`: standard output).
    pub(super) sparse: Option<Option<PathBuf>>,
    /// `--bmap FILE`.
    pub(super) bmap: Option<PathBuf>,
}

impl Exports {
    /// The exports `cli` asks for, checked (nothing opened yet), and the
    /// path the medium is formatted at: TARGET, or for a sparse image a new
    /// raw image beside it.
    pub(super) fn from_args(
        cli: &FormatArgs,
        target: &Path,
    ) -> Result<(Exports, PathBuf), Failure> {
        let stdout = target.as_os_str() == "-";
        if cli.output_format == OutputFormat::Raw {
            if stdout {
                return Err(usage(anyhow!(
                    "TARGET \"-\" (standard output) needs --output-format sparse: a raw image is formatted in place"
                )));
            }
            let bmap = cli.bmap.clone();
            if bmap.is_some() && mkfs_alloc_device::is_block_device(target) {
                return Err(usage(anyhow!(
                    "--bmap maps an image file for flashing; {} is a device",
                    target.display()
                )));
            }
            return Ok((Exports { sparse: None, bmap }, target.to_path_buf()));
        }
        if cli.bmap.is_some() {
            return Err(usage(anyhow!(
                "--bmap maps a raw image; with --output-format sparse there is none to keep (bmaptool and fastboot each take their own format)"
            )));
        }
        if cli.size.is_none() {
            return Err(usage(anyhow!(
                "--output-format sparse makes a new image: give its --size (or --size auto with --rootdir)"
            )));
        }
        if stdout && cli.json {
            return Err(usage(anyhow!(
                "--json prints to standard output, where TARGET \"-\" sends the sparse image; give TARGET a file name"
            )));
        }
        if !stdout && mkfs_alloc_device::is_block_device(target) {
            return Err(usage(anyhow!(
                "--output-format sparse writes a file; {} is a device (flash the sparse image with fastboot, or expand it with simg2img)",
                target.display()
            )));
        }
        let raw = raw_path(if stdout { None } else { Some(target) });
        let sparse = Some((!stdout).then(|| target.to_path_buf()));
        Ok((Exports { sparse, bmap: None }, raw))
    }

    /// Refuses (exit 2, before anything is written) a `--bmap` FILE or a
    /// sparse TARGET that cannot be written as a regular file or that is
    /// the medium formatted (`targets`: its names, [`preflight::medium_ids`]).
    pub(super) fn check(&self, targets: &[Vec<MediumId>]) -> Result<(), Failure> {
        let mut outputs = Vec::new();
        if let Some(p) = self.bmap.as_deref() {
            outputs.push(Output {
                option: "--bmap",
                path: p,
                write: Write::Replace,
            });
        }
        if let Some(Some(p)) = &self.sparse {
            outputs.push(Output {
                option: "--output-format sparse: TARGET",
                path: p,
                write: Write::Replace,
            });
        }
        preflight::check_outputs(&outputs, targets)
    }

    /// True when the sparse image goes to standard output (the summary
    /// then stays off it).
    pub(super) fn to_stdout(&self) -> bool {
        matches!(self.sparse, Some(None))
    }

    /// Writes what was asked for from the formatted image at `raw`, along
    /// `map`; returns notes for the summary.
    pub(super) fn write(&self, raw: &Path, map: &ExtentMap) -> Result<Vec<String>, Failure> {
        let mut notes = Vec::new();
        let ranges = map.ranges();
        let size = map.medium_bytes();
        let open = || {
            ImageFile::open_read_only(raw, 512)
                .with_context(|| format!("reopening {} to read it", raw.display()))
                .map_err(Failure::Io)
        };
        if let Some(bmap) = &self.bmap {
            let mut reader = BlockReader::new(open()?);
            let s = to_file(bmap, |out| {
                write_bmap(size, BMAP_BLOCK, ranges, &mut reader, out)
            })?;
            notes.push(format!(
                "block map {}: {} of {} blocks of {} bytes mapped (bmaptool copy --bmap)",
                bmap.display(),
                s.mapped_blocks,
                s.blocks,
                s.block_size
            ));
        }
        if let Some(dest) = &self.sparse {
            let bs = sparse_block_size(size).ok_or_else(|| {
                usage(anyhow!(
                    "--output-format sparse: the size {size} is not a multiple of 512 bytes"
                ))
            })?;
            let opts = SparseOptions::new(bs).with_crc(true);
            let mut reader = BlockReader::new(open()?);
            let s = match dest {
                Some(path) => to_file(path, |out| {
                    write_sparse_seekable(size, opts, ranges, &mut reader, out)
                })?,
                None => {
                    let stdout = std::io::stdout();
                    let mut lock = stdout.lock();
                    let s = write_sparse(size, opts, ranges, &mut reader, &mut lock)
                        .context("writing the sparse image to standard output")
                        .map_err(Failure::Io)?;
                    lock.flush()
                        .context("writing the sparse image to standard output")
                        .map_err(Failure::Io)?;
                    s
                }
            };
            notes.push(format!(
                "sparse image: {} chunks, {} data blocks, {} filled, {} left out, {} bytes (block {} bytes, CRC32 {:08x})",
                s.chunks,
                s.raw_blocks,
                s.fill_blocks,
                s.dont_care_blocks,
                s.bytes,
                s.block_size,
                s.crc.unwrap_or(0)
            ));
        }
        Ok(notes)
    }
}

/// A new raw image's path: beside `target`, or in the temporary directory.
fn raw_path(target: Option<&Path>) -> PathBuf {
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

/// [`replace_file`], its failure an I/O failure naming `path`.
fn to_file<T>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<T, ExportError>,
) -> Result<T, Failure> {
    replace_file(path, write)
        .with_context(|| format!("writing {}", path.display()))
        .map_err(Failure::Io)
}
