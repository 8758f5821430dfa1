//! `mkfs-alloc info TARGET`: what is on an image or a device, read-only.
//!
//! Exit codes: 0 report printed; 2 bad input (missing file, a directory);
//! 1 I/O failure, or a volume that could not be read to the end (the report
//! is printed first, with the volume's error).

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::inspect::medium_info;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc::layout::SD_SECTOR;
use mkfs_alloc_inspect::{InspectOptions, ReadOnlyFile};
use std::io::ErrorKind;
use std::path::PathBuf;

/// Arguments of `mkfs-alloc info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The image file or device to inspect (opened read-only; no root needed for images).
    pub target: PathBuf,
    /// Also walk the directory trees of FAT/exFAT volumes: file count, sizes,
    /// waste, and what the files would take at every other cluster size.
    #[arg(long)]
    pub files: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `info`.
pub fn run(args: &InfoArgs) -> Result<(), Failure> {
    let path = &args.target;
    check_kind(path)?;
    // The error's source already names the path.
    let block_size = mkfs_alloc_device::read_block_size(path);
    let mut dev = ReadOnlyFile::open(path, block_size).map_err(|e| {
        let msg = anyhow!("cannot open {}", e.source);
        match e.source.kind() {
            ErrorKind::NotFound | ErrorKind::InvalidInput | ErrorKind::PermissionDenied => {
                usage(msg)
            }
            _ => Failure::Io(msg),
        }
    })?;
    let opts = InspectOptions {
        files: args.files,
        ..InspectOptions::default()
    };
    let info = medium_info(&mut dev, &opts)
        .map_err(|e| Failure::Io(anyhow!(e).context(format!("reading {}", path.display()))))?;
    let (report, sd, unfinished) = (&info.report, &info.sd, &info.unfinished);
    let errors: Vec<String> = report
        .errors()
        .map(|(i, e)| format!("volume {}: {e}", i + 1))
        .collect();
    let failure =
        (!errors.is_empty()).then(|| anyhow!("{}: {}", path.display(), errors.join("; ")));
    if args.json {
        // One document: the report, with the error and exit code if any.
        let target = path.display().to_string();
        let error = failure.as_ref().map(crate::text::error_text);
        let v = serde_json::to_value(info.json_report(&target, error))
            .map_err(|e| Failure::Io(anyhow!(e).context("serialising the report")))?;
        outln!("{v:#}");
        return failure.map_or(Ok(()), |e| Err(Failure::IoInReport(e)));
    }
    out!("{}", info.text(&path.display().to_string()));
    for u in &unfinished.recluster {
        outln!();
        outln!(
            "volume {}: a re-cluster to {} clusters is unfinished (the volume is intact); finish it with: mkfs-alloc recluster --cluster {} {}",
            u.volume,
            format_size(u.cluster_size),
            u.cluster_size,
            crate::text::shell_word(path)
        );
    }
    for i in &unfinished.resize {
        outln!();
        outln!(
            "volume {i}: a resize is unfinished (the volume is intact, old or new); finish it with the same command: mkfs-alloc resize --size SIZE|max {}",
            crate::text::shell_word(path)
        );
    }
    for i in &unfinished.convert {
        outln!();
        outln!(
            "volume {i}: a conversion to exFAT is unfinished (the volume is intact); finish it with: mkfs-alloc convert --fs exfat {}",
            crate::text::shell_word(path)
        );
    }
    if let Some(sd) = &sd {
        outln!();
        outln!(
            "layout: SD Association ({} card of {}): partition, FAT and data region where the SD specification puts them",
            sd.class.name(),
            format_size(sd.total_sectors * SD_SECTOR)
        );
    }
    failure.map_or(Ok(()), |e| Err(Failure::Io(e)))
}

/// Refuses at once a directory, which cannot be read, and what
/// [`check_file_or_device`] refuses.
fn check_kind(path: &std::path::Path) -> Result<(), Failure> {
    if path.is_dir() {
        return Err(usage(anyhow!(
            "{} is a directory; expected an image file or a block device",
            path.display()
        )));
    }
    check_file_or_device(path)
}

/// Refuses at once what is neither a regular file nor a block device (a
/// FIFO would block the open).
pub fn check_file_or_device(path: &std::path::Path) -> Result<(), Failure> {
    let m = std::fs::metadata(path)
        .map_err(|e| usage(anyhow!(e).context(format!("cannot open {}", path.display()))))?;
    if !m.is_file() && !mkfs_alloc_device::is_block_device(path) {
        return Err(usage(anyhow!(
            "{} is neither a regular file nor a block device",
            path.display()
        )));
    }
    Ok(())
}
