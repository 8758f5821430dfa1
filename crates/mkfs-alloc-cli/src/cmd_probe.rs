//! `mkfs-alloc probe DEVICE`: find counterfeit capacity before formatting.
//!
//! The engine is `mkfs-alloc-capacity`; this file opens the device uncached
//! (`Device::open_uncached`), reopens it between the probe's write and read
//! phases, asks for confirmation, keeps the `--keep-data` journal and prints
//! the report. `mkfs-alloc --probe ...` calls [`probe_target`] before a format.

use crate::{usage, Failure};
use anyhow::{anyhow, Context};
use mkfs_alloc_blockio::{BlockIo, ImageFile, IoError, IoOp};
use mkfs_alloc_capacity::{
    probe, restore_journal, Backup, Journal, Phase, ProbeOptions, ProbeReport, ProbeTarget, Verdict,
};
use mkfs_alloc_device::{self as device, Device, DeviceError};
use mkfs_alloc_layout::units::format_size;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Options of `mkfs-alloc probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Save every block the probe overwrites to a journal file first and
    /// write it back at the end (without it the probe is destructive: it is
    /// meant for sticks about to be formatted).
    #[arg(long)]
    pub keep_data: bool,
    /// The journal of --keep-data (default: mkfs-alloc-probe-NAME.journal
    /// in the current directory). Keep it on another disk than the probed one.
    #[arg(long, value_name = "FILE", requires = "keep_data")]
    pub journal: Option<PathBuf>,
    /// Write back the blocks saved in the journal of an interrupted
    /// --keep-data probe, then delete the journal. Probes nothing.
    #[arg(long, value_name = "JOURNAL", conflicts_with_all = ["keep_data", "journal"])]
    pub restore: Option<PathBuf>,
    /// Do not measure the sequential and random write speeds.
    #[arg(long)]
    pub no_speed: bool,
    /// Largest device write cache to search for (default 64M).
    #[arg(long, value_name = "SIZE")]
    pub max_cache: Option<String>,
    /// Seed of the probe's salt and random positions (reproducible runs).
    #[arg(long, value_name = "N", hide = true)]
    pub seed: Option<u64>,
    /// Do not ask for confirmation (required without a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the report as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors (and the JSON with --json).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The stick or card to probe (a block device; an image file is
    /// accepted for testing, through the page cache).
    pub target: PathBuf,
}

/// A block device reopened uncached between the probe's write and read
/// phases: closing it drops every handle-level cache, reopening with
/// `O_DIRECT` / `F_NOCACHE` / no buffering reads from the device.
struct Reopening {
    path: PathBuf,
    dev: Option<Box<Device>>,
}

fn closed() -> IoError {
    IoError::new(
        IoOp::Open,
        0,
        0,
        std::io::Error::other("the device could not be reopened"),
    )
}

impl Reopening {
    fn dev(&mut self) -> Result<&mut Device, IoError> {
        self.dev.as_deref_mut().ok_or_else(closed)
    }
}

impl BlockIo for Reopening {
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

impl ProbeTarget for Reopening {
    fn reset(&mut self) -> Result<(), IoError> {
        let (bs, n) = (self.block_size(), self.num_blocks());
        self.dev()?.flush()?;
        // Exclusive opens: the old handle goes before the new one comes.
        self.dev = None;
        let dev = Device::open_uncached(&self.path)
            .map_err(|e| IoError::new(IoOp::Open, 0, 0, std::io::Error::other(e.to_string())))?;
        if dev.block_size() != bs || dev.num_blocks() != n {
            return Err(IoError::new(
                IoOp::Open,
                0,
                0,
                std::io::Error::other("the device changed size while it was reopened"),
            ));
        }
        self.dev = Some(Box::new(dev));
        Ok(())
    }
}

/// The probe target, opened.
enum Opened {
    Device(Reopening),
    Image(ImageFile),
}

impl Opened {
    fn target(&mut self) -> &mut dyn ProbeTarget {
        match self {
            Opened::Device(d) => d,
            Opened::Image(i) => i,
        }
    }
}

fn device_error(e: DeviceError) -> Failure {
    match e {
        DeviceError::Io { .. } => Failure::Io(e.into()),
        other => usage(other),
    }
}

/// Inspects `path` and refuses what must not be probed (mounted, system
/// disk, ...). Returns the device info for block devices.
fn check(path: &Path) -> Result<Option<device::DeviceInfo>, Failure> {
    if device::is_block_device(path) {
        let info = device::inspect(path).map_err(device_error)?;
        if let Some(r) = device::refusal(&info) {
            return Err(usage(anyhow!(
                "refusing to probe {}: {}",
                path.display(),
                r.reason
            )));
        }
        return Ok(Some(info));
    }
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot inspect {}", path.display()))
        .map_err(usage)?;
    if !meta.is_file() {
        return Err(usage(anyhow!(
            "{} is neither a block device nor an image file",
            path.display()
        )));
    }
    Ok(None)
}

fn open(path: &Path, is_device: bool) -> Result<Opened, Failure> {
    if is_device {
        let dev = Device::open_uncached(path).map_err(device_error)?;
        return Ok(Opened::Device(Reopening {
            path: path.to_path_buf(),
            dev: Some(Box::new(dev)),
        }));
    }
    ImageFile::open(path, 512)
        .with_context(|| format!("opening {}", path.display()))
        .map(Opened::Image)
        .map_err(Failure::Io)
}

fn phase_text(p: Phase) -> &'static str {
    match p {
        Phase::Sampling => "writing probe blocks across the device",
        Phase::CacheSearch => "searching for the device's cache at its end",
        Phase::Bisect => "narrowing down the real size",
        Phase::Speed => "measuring speeds",
        Phase::Restore => "writing the saved data back",
    }
}

/// Runs the probe on an opened target, showing the phases unless `quiet`.
fn run_probe(
    opened: &mut Opened,
    opts: &ProbeOptions,
    backup: Option<&mut dyn Backup>,
    quiet: bool,
    path: &Path,
) -> Result<ProbeReport, Failure> {
    let mut last = None;
    let mut progress = |p: Phase| {
        if !quiet && last != Some(p) {
            eprintln!("mkfs-alloc: probe: {}", phase_text(p));
        }
        last = Some(p);
    };
    probe(opened.target(), opts, backup, &mut progress).map_err(|e| {
        Failure::Io(anyhow::Error::new(e).context(format!("probing {}", path.display())))
    })
}

/// `mkfs-alloc --probe`: probes the format target (already confirmed)
/// destructively and returns the report.
pub fn probe_target(path: &Path, quiet: bool) -> Result<ProbeReport, Failure> {
    let info = check(path)?;
    let mut opened = open(path, info.is_some())?;
    let opts = ProbeOptions::default();
    run_probe(&mut opened, &opts, None, quiet, path)
}

/// The verdict, announced and real size in one line.
pub fn summary_line(r: &ProbeReport) -> String {
    if r.verdict == Verdict::Genuine {
        format!(
            "genuine: {} announced, all of it real",
            format_size(r.announced_bytes)
        )
    } else {
        format!(
            "{}: {} announced, {} real ({} bytes)",
            r.verdict,
            format_size(r.announced_bytes),
            format_size(r.real_bytes),
            r.real_bytes
        )
    }
}

fn default_journal(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "device".into());
    PathBuf::from(format!("mkfs-alloc-probe-{name}.journal"))
}

fn ask(info: &device::DeviceInfo, a: &ProbeArgs, journal: Option<&Path>) -> Result<(), Failure> {
    let what = match journal {
        Some(j) => format!(
            "write test blocks across {} (the blocks overwritten are saved to {} first and written back afterwards)",
            info.path.display(),
            j.display()
        ),
        None => format!(
            "OVERWRITE test blocks across {} (about 100 MiB at places all over the device: its data is lost)",
            info.path.display()
        ),
    };
    crate::confirm::confirm_action(info, &what, a.yes, a.quiet || a.json)
}

/// `mkfs-alloc probe`.
/// `--restore JOURNAL`: writes the saved blocks back, then removes the
/// journal.
fn restore(a: &ProbeArgs, j: &Path, info: Option<&device::DeviceInfo>) -> Result<(), Failure> {
    let path = &a.target;
    if !j.is_file() {
        return Err(usage(anyhow!("journal {} does not exist", j.display())));
    }
    if let Some(info) = info {
        let what = format!(
            "write the blocks saved in {} back to {}",
            j.display(),
            info.path.display()
        );
        crate::confirm::confirm_action(info, &what, a.yes, a.quiet || a.json)?;
    }
    let mut opened = open(path, info.is_some())?;
    let written = restore_journal(opened.target(), j).map_err(|e| {
        Failure::Io(anyhow::Error::new(e).context(format!("restoring {}", j.display())))
    })?;
    std::fs::remove_file(j)
        .with_context(|| format!("restored, but cannot remove {}", j.display()))
        .map_err(Failure::Io)?;
    if a.json {
        outln!(
            "{:#}",
            json!({ "target": path.display().to_string(), "restored_bytes": written, "journal": j.display().to_string() })
        );
    } else if !a.quiet {
        outln!(
            "{}: wrote back {} from {} (removed)",
            path.display(),
            format_size(written),
            j.display()
        );
    }
    Ok(())
}

pub fn run(a: &ProbeArgs) -> Result<(), Failure> {
    let path = &a.target;
    let info = check(path)?;
    let mut opts = ProbeOptions {
        seed: a.seed,
        measure: !a.no_speed,
        ..ProbeOptions::default()
    };
    if let Some(m) = &a.max_cache {
        opts.max_cache_bytes = mkfs_alloc_layout::units::parse_size(m)
            .map_err(|e| usage(anyhow!("--max-cache: {e}")))?;
    }

    if let Some(j) = &a.restore {
        return restore(a, j, info.as_ref());
    }

    let journal_path = a
        .keep_data
        .then(|| a.journal.clone().unwrap_or_else(|| default_journal(path)));
    if let Some(j) = &journal_path {
        if j.exists() {
            return Err(usage(anyhow!(
                "journal {} exists: a --keep-data probe was interrupted; put its data back with `mkfs-alloc probe --restore {} {}` first",
                j.display(),
                j.display(),
                path.display()
            )));
        }
    }
    if let Some(info) = &info {
        ask(info, a, journal_path.as_deref())?;
    }
    let mut opened = open(path, info.is_some())?;
    let mut journal = match &journal_path {
        None => None,
        Some(j) => {
            let t = opened.target();
            let size = t.num_blocks() * u64::from(t.block_size());
            let unit = opts.unit_bytes.max(t.block_size());
            Some(
                Journal::create(j, size, unit)
                    .with_context(|| format!("creating the journal {}", j.display()))
                    .map_err(Failure::Io)?,
            )
        }
    };
    let report = run_probe(
        &mut opened,
        &opts,
        journal.as_mut().map(|j| j as &mut dyn Backup),
        a.quiet || a.json,
        path,
    )?;
    drop(opened);
    if let Some(j) = &journal_path {
        // Everything was written back and flushed by the probe.
        std::fs::remove_file(j)
            .with_context(|| format!("cannot remove the journal {}", j.display()))
            .map_err(Failure::Io)?;
    }
    if a.json {
        let mut v = json!(report);
        if let Some(o) = v.as_object_mut() {
            o.insert("target".into(), json!(path.display().to_string()));
            o.insert("keep_data".into(), json!(a.keep_data));
        }
        outln!("{v:#}");
    } else if !a.quiet {
        print_report(path, &report);
    }
    Ok(())
}

fn rate(b: f64) -> String {
    format!("{:.1} MB/s", b / 1e6)
}

fn print_report(path: &Path, r: &ProbeReport) {
    outln!("{}: {}", path.display(), summary_line(r));
    if let Some(w) = r.wrap_bytes {
        outln!("  wraps at    {}", format_size(w));
    }
    match r.cache_bytes {
        Some(0) => outln!("  cache       none"),
        Some(c) => outln!("  cache       about {}", format_size(c)),
        None => outln!(
            "  cache       none found (searched up to {})",
            format_size(r.cache_search_limit_bytes)
        ),
    }
    if let Some(e) = &r.first_error {
        outln!("  I/O error   {e}");
    }
    outln!(
        "  written     {} in {:.1} s ({} reopens)",
        format_size(r.bytes_written),
        r.seconds,
        r.resets
    );
    if let Some(b) = r.bytes_restored {
        outln!("  restored    {} (--keep-data)", format_size(b));
    }
    if let Some(s) = &r.speeds {
        outln!(
            "  speed       sequential write {}, read {}; {} B random writes {:.0} IOPS",
            rate(s.seq_write_bytes_per_sec),
            rate(s.seq_read_bytes_per_sec),
            s.random_write_bytes,
            s.random_write_iops
        );
    }
    if r.verdict.is_fake() && r.real_bytes > 0 {
        outln!(
            "  Only the first {} store data. To use them: mkfs-alloc --size {} ... {}",
            format_size(r.real_bytes),
            r.real_bytes,
            path.display()
        );
    }
}
