//! The one flow of the in-place commands (`recluster`, `resize`,
//! `convert`) over the library's [`Request`] and [`Planned`] job: plan
//! read-only, refuse (exit 2, the target unchanged) or say there is
//! nothing to do, print the plan (a dry run stops there), confirm, run
//! with a progress bar, report. Each command gives its flags and its words
//! ([`Words`]).

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::inspect::ReadOnlyFile;
use mkfs_alloc::recluster::{Extended, Planned, ReclusterError, Request, Step, Totals};
use mkfs_alloc::units::format_size;
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
    // An image shorter than a resize's SIZE is planned as if extended (read
    // as zeros past its end) and extended only once every check has passed.
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    let extend = if mkfs_alloc_device::is_block_device(path) {
        None
    } else {
        request.image_extended_to(len)
    };
    let early = if a.dry_run || !request.plans_once() {
        let ro = ReadOnlyFile::open(path, block_size)
            .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
        let blocks = extend.map_or(0, |b| b.div_ceil(u64::from(block_size)));
        Some(
            request
                .plan(&mut Extended::new(ro, blocks))
                .map_err(refusal)?,
        )
    } else {
        None
    };
    if let (true, Some(planned)) = (a.dry_run, &early) {
        let target = Target::inspect(path, extend, None, true)?;
        print_plan(a, words, planned, target.would_refuse());
        return Ok(());
    }
    let target = Target::inspect(path, extend, None, false)?;
    // A job planned once is planned on the opened and locked target: the
    // medium cannot change between the plan and the run.
    let mut opened = None;
    let planned = match early {
        Some(p) => p,
        None => {
            let o = opened.insert(target.open_with(false)?);
            request.plan(o.io()).map_err(refusal)?
        }
    };
    if *planned.step() == Step::Nothing {
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
            let p = request.plan(o.io()).map_err(|e| {
                if extend.is_some() {
                    let _ = std::fs::OpenOptions::new()
                        .write(true)
                        .open(path)
                        .and_then(|f| f.set_len(len));
                }
                refusal(e)
            })?;
            (o, p)
        }
    };
    let show = planned.reports_progress() && !a.quiet && !a.json;
    let bar = crate::report::Progress::new(show, words.bar());
    let done = planned.run(opened.io(), &mut |d, t| bar.update(d, t));
    bar.finish();
    done.map_err(|e| {
        Failure::Io(anyhow!(
            "{e}; the volume is intact ({}): run the same command again to finish",
            words.intact()
        ))
    })?;
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        crate::report::print_done(plan_json(&planned, None), secs);
    } else if !a.quiet {
        let now = words.now(&planned);
        eprintln!("mkfs-alloc: {}: now {now} ({secs:.2} s)", path.display());
    }
    Ok(())
}

/// A plan's free space (`gained`: what it gains, in words), I/O and time
/// estimate, as text.
pub fn print_totals(t: &Totals, gained: &str) {
    let sz = format_size;
    outln!(
        "  free           {} -> {} (gained {gained})",
        sz(t.free.0),
        sz(t.free.1)
    );
    let (r, w) = (sz(t.bytes_read), sz(t.bytes_written));
    outln!("  I/O            reads {r}, writes {w}");
    outln!(
        "  time           about {:.1} s on a stick that reads 20 MB/s and writes 5 MB/s",
        t.estimate_stick_seconds
    );
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
fn refusal(e: ReclusterError) -> Failure {
    match e {
        ReclusterError::Io(e) => Failure::Io(anyhow!(e)),
        other => usage(anyhow!(other)),
    }
}

/// The logical block size of `path`, an image file (512) or a block
/// device; anything else is a usage error.
fn target_block_size(path: &Path) -> Result<u32, Failure> {
    crate::cmd_info::check_file_or_device(path)?;
    Ok(mkfs_alloc_device::read_block_size(path))
}
