//! `--output-format sparse` and `--bmap FILE`: the flashing formats,
//! written from the plan's extent map after the format
//! ([`mkfs_alloc_export::export_image`]).
//!
//! A sparse image needs a raw image to read from: the format goes into a
//! new sparse file beside TARGET (in the temporary directory for `-`),
//! which is removed when the sparse image is out, or when anything fails.

use super::preflight::{self, MediumId, Output, Write};
use crate::args::{FormatArgs, OutputFormat};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::ExtentMap;
use mkfs_alloc_export::{export_image, raw_path, ImageExportError, Outputs};
use std::path::{Path, PathBuf};

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
    /// `map` ([`export_image`]); returns notes for the summary.
    pub(super) fn write(&self, raw: &Path, map: &ExtentMap) -> Result<Vec<String>, Failure> {
        let outputs = Outputs {
            bmap: self.bmap.clone(),
            sparse: self.sparse.clone(),
        };
        let done =
            export_image(raw, map.medium_bytes(), map.ranges(), &outputs).map_err(|e| match e {
                ImageExportError::SparseSize { .. } => {
                    usage(anyhow!(e).context("--output-format sparse"))
                }
                e => Failure::Io(e.into()),
            })?;
        let mut notes = Vec::new();
        if let (Some(bmap), Some(s)) = (&self.bmap, done.bmap) {
            notes.push(format!(
                "block map {}: {} of {} blocks of {} bytes mapped (bmaptool copy --bmap)",
                bmap.display(),
                s.mapped_blocks,
                s.blocks,
                s.block_size
            ));
        }
        if let Some(s) = done.sparse {
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
