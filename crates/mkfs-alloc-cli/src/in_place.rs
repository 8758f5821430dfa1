//! The one flow of the in-place commands (`recluster`, `resize`,
//! `convert`) over the library's [`Request`] and [`Planned`] job: plan
//! read-only, refuse (exit 2, the target unchanged) or say there is
//! nothing to do, print the plan (a dry run stops there), confirm, run
//! with a progress bar, report. Each command gives its flags and its words
//! ([`Words`]).

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::blockio::{BlockIo, Slice};
use mkfs_alloc::inspect::ReadOnlyFile;
use mkfs_alloc::recluster::{Extended, Planned, ReclusterError, Request};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The flags every in-place command takes (a command words `--dry-run`
/// and `TARGET` its own way with [`help_of`]).
#[derive(Debug, clap::Args)]
pub struct InPlaceArgs {
    /// Print the plan and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the plan and the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The partition holding the volume (1-based, as fdisk counts), when
    /// the medium has more than one FAT/exFAT partition.
    #[arg(long, value_name = "N")]
    pub partition: Option<u32>,
    /// The image file or block device holding the volume (whole medium, or
    /// one partition of an MBR or GPT).
    pub target: PathBuf,
}

/// Words `--dry-run` and `TARGET` the command's way (`mut_args`, which
/// keeps the flags' order for the completions).
pub fn help_of(dry_run: &'static str, target: &'static str) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |a| match a.get_id().as_str() {
        "dry_run" => a.help(dry_run),
        "target" => a.help(target),
        _ => a,
    }
}

/// What an in-place command says, in its words.
pub trait Words {
    /// The question before the run, e.g. `re-cluster stick.img in place`.
    fn question(&self, path: &Path) -> String;
    /// The sentence when there is nothing to do (after `mkfs-alloc: `).
    fn nothing(&self, path: &Path, planned: &Planned) -> String;
    /// What the volume is after the run, e.g. `4 KiB clusters`.
    fn now(&self, planned: &Planned) -> String;
    /// What "the volume is intact" means after a failed run.
    fn intact(&self) -> &'static str;
    /// The progress bar's label.
    fn bar(&self) -> &'static str;
    /// The plan as text (not `--json`, not `--quiet`), `would_refuse` a dry
    /// run's refusal of the real run.
    fn print_plan(&self, path: &Path, planned: &Planned, would_refuse: Option<&str>);
}

/// Runs `request` on `a.target`.
pub fn run(request: Request, a: &InPlaceArgs, words: &dyn Words) -> Result<(), Failure> {
    let path = &a.target;
    let block_size = target_block_size(path)?;
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    // An image shorter than a resize's SIZE (and a partition's table after
    // it) is planned as if extended (read as zeros past its end) and
    // extended only once every check has passed.
    let mut extend = None;
    let early = if a.dry_run || !request.plans_once() {
        let mut ro = ReadOnlyFile::open(path, block_size)
            .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
        let at = Where::pick(&mut ro, &request, a.partition)?;
        if !mkfs_alloc_device::is_block_device(path) {
            extend = request.image_extended_to(&mut ro, len, at.part);
        }
        let blocks = extend.map_or(0, |b| b.div_ceil(u64::from(block_size)));
        let mut ro = Extended::new(ro, blocks);
        let planned = at.plan(&request, &mut ro)?;
        if a.dry_run {
            // The bytes of each flush-separated stage, for a machine reader:
            // the job run on an overlay of the read-only handle (a job
            // planned on a partition's slice has no such key).
            let stages = (a.json && a.partition.is_none())
                .then(|| planned.flush_stages(&mut ro))
                .flatten();
            let target = Target::inspect(path, extend, None, true)?;
            if a.json {
                let report = planned.report(target.would_refuse());
                outln!(
                    "{:#}",
                    serde_json::to_value(report.with_flush_stages(stages)).unwrap_or_default()
                );
            } else {
                print_plan(a, words, &planned, target.would_refuse());
            }
            return Ok(());
        }
        Some((planned, at))
    } else {
        None
    };
    let target = Target::inspect(path, extend, None, false)?;
    // A job planned once is planned on the opened and locked target: the
    // medium cannot change between the plan and the run.
    let mut opened = None;
    let (planned, at) = match early {
        Some(p) => p,
        None => {
            let o = opened.insert(target.open_with(false)?);
            let at = Where::pick(o.io(), &request, a.partition)?;
            (at.plan(&request, o.io())?, at)
        }
    };
    if planned.is_done() {
        if a.json {
            print_plan(a, words, &planned, None);
        } else if !a.quiet {
            eprintln!("mkfs-alloc: {}", words.nothing(path, &planned));
        }
        return Ok(());
    }
    if !a.quiet && !a.json {
        words.print_plan(path, &planned, None);
    }
    crate::confirm::ask_in_place(a.yes, &words.question(path), path)?;
    let started = Instant::now();
    let (mut opened, planned) = match opened {
        Some(o) => (o, planned),
        None => {
            let mut o = target.open_with(false)?;
            // Planned again on the opened (and extended) target.
            let p = at.plan(&request.again(&planned), o.io()).inspect_err(|_| {
                if extend.is_some() {
                    let _ = std::fs::OpenOptions::new()
                        .write(true)
                        .open(path)
                        .and_then(|f| f.set_len(len));
                }
            })?;
            (o, p)
        }
    };
    let show = planned.reports_progress() && !a.quiet && !a.json;
    let bar = crate::report::Progress::new(show, words.bar());
    let done = at.run(&planned, opened.io(), &mut |d, t| bar.update(d, t));
    bar.finish();
    done.map_err(|e| {
        Failure::Io(anyhow!(
            "{e}; the volume is intact ({}): run the same command again to finish",
            words.intact()
        ))
    })?;
    drop(opened);
    // Only an image file is cut to a shrunk volume; a device keeps its size
    // (its length as a file is 0).
    let image = !mkfs_alloc_device::is_block_device(path);
    if let Some(cut) = planned
        .image_cut_to(len)
        .filter(|_| extend.is_none() && image)
    {
        cut_image(path, cut)?;
    }
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        crate::report::print_done(plan_json(&planned, None), secs);
    } else if !a.quiet {
        let now = words.now(&planned);
        eprintln!("mkfs-alloc: {}: now {now} ({secs:.2} s)", path.display());
    }
    Ok(())
}

/// Where on the medium the job runs: `--partition`'s choice.
#[derive(Debug, Clone, Copy)]
struct Where {
    /// The partition a resize or a conversion is planned in (`None`: the
    /// medium's one volume).
    part: Option<u32>,
    /// The blocks `(first, count)` a re-cluster runs on alone (it leaves
    /// the table alone; `None`: the whole medium, whose one volume it
    /// finds).
    slice: Option<(u64, u64)>,
}

impl Where {
    /// The volume `asked` (`--partition`) names on `dev` for `request`.
    /// Reads only.
    fn pick(dev: &mut dyn BlockIo, request: &Request, asked: Option<u32>) -> Result<Self, Failure> {
        let part = crate::partition_pick::choose(dev, asked)?;
        if !matches!(request, Request::Recluster(_) | Request::ReclusterAuto) {
            return Ok(Self { part, slice: None });
        }
        let slice = match part {
            Some(n) if asked.is_some() => Some(crate::partition_pick::blocks_of(dev, n)?),
            _ => None,
        };
        Ok(Self { part: None, slice })
    }

    /// `request` planned on `dev` there.
    fn plan(&self, request: &Request, dev: &mut dyn BlockIo) -> Result<Planned, Failure> {
        match self.slice {
            Some((first, count)) => {
                let mut s = Slice::new(dev, first, count).map_err(|e| Failure::Io(anyhow!(e)))?;
                request.plan_in(&mut s, None).map_err(refusal)
            }
            None => request.plan_in(dev, self.part).map_err(refusal),
        }
    }

    /// `planned` run on `dev` there.
    fn run(
        &self,
        planned: &Planned,
        dev: &mut dyn BlockIo,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(), ReclusterError> {
        match self.slice {
            Some((first, count)) => Slice::new(dev, first, count)
                .map_err(ReclusterError::Io)
                .and_then(|mut s| planned.run(&mut s, progress)),
            None => planned.run(dev, progress),
        }
    }
}

/// Cuts the image file `path` to the shrunk volume's `len` bytes (the job
/// is done: nothing past it belongs to the volume any more).
fn cut_image(path: &Path, len: u64) -> Result<(), Failure> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| {
            f.set_len(len)?;
            f.sync_all()
        })
        .map_err(|e| {
            Failure::Io(anyhow!(
                "the volume is shrunk, but cutting the image to {len} bytes failed: {e}"
            ))
        })
}

/// The plan, as JSON or in the command's words.
fn print_plan(a: &InPlaceArgs, words: &dyn Words, planned: &Planned, refuse: Option<&str>) {
    if a.json {
        outln!("{:#}", plan_json(planned, refuse));
    } else if !a.quiet {
        words.print_plan(&a.target, planned, refuse);
    }
}

/// The plan's JSON (the library's report; keys sorted, as every `--json`
/// object of the CLI).
fn plan_json(planned: &Planned, would_refuse: Option<&str>) -> serde_json::Value {
    serde_json::to_value(planned.report(would_refuse)).unwrap_or_default()
}

/// A refusal or a read error before any write: exit 2.
pub(crate) fn refusal(e: ReclusterError) -> Failure {
    match e {
        ReclusterError::Io(e) => Failure::Io(anyhow!(e)),
        other => usage(anyhow!(other)),
    }
}

/// The logical block size of `path`, an image file (512) or a block
/// device; anything else is a usage error.
pub(crate) fn target_block_size(path: &Path) -> Result<u32, Failure> {
    crate::cmd_info::check_file_or_device(path)?;
    Ok(mkfs_alloc_device::read_block_size(path))
}
