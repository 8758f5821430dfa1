//! Compatibility front ends: the binary answers to `mkfs.fat`, `mkfs.vfat`,
//! `mkfs.msdos`, `mkdosfs` and `mkfs.exfat` (a symbolic or hard link
//! named so; dispatch is on the file name of argv[0]).
//!
//! ```text
//!  argv ─► mkfs_alloc::compat::cmdline::parse (GNU getopt rules, the foreign options) ─► Request
//!  Request ─► Target::inspect (read-only) ─► Request::decide (mkfs_alloc::compat: the width and
//!             cluster size that tool would choose, checked with the planner)
//!          ─► mkfs-alloc's own arguments ─► args::Cli ─► cmd_format::run
//! ```
//!
//! Nothing here writes: the format runs through the same path as
//! `mkfs-alloc --table none --yes ...`, so every check of the CLI applies.
//! What is here is the originals' words: usage, version, notes and the
//! wording of usage errors and refusals. The lines callers pass, the
//! differences from the originals and the exit codes are in
//! `docs/mkfs-compat.md`.

mod exfat;
mod fat;

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::compat::cmdline::{parse, Early, Refusal, Request, UsageError};
use mkfs_alloc::compat::{Decision, Medium};
use mkfs_alloc::layout::{ClusterChoice, FsChoice};
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

pub use mkfs_alloc::compat::cmdline::FrontEnd;

/// The version of the foreign command lines the front ends follow.
const DOSFSTOOLS: &str = "4.2";

/// Runs the front end on the whole command line (argv[0] included).
pub fn run(front: FrontEnd, raw: &[OsString]) -> ExitCode {
    let name = front.name();
    let args = raw.get(1..).unwrap_or(&[]);
    let req = match parse(front, args) {
        Ok(r) => r,
        Err(e @ (Early::Help | Early::Version)) => {
            outln!("{}", early_text(front, &e).trim_end());
            return ExitCode::SUCCESS;
        }
        Err(Early::Usage(u)) => {
            eprintln!("{}", usage_error(front, &u));
            eprintln!("{}", usage_text(front));
            return ExitCode::from(1);
        }
        Err(Early::Refuse(Refusal::Getopt(e))) => {
            eprintln!("{name}: {e} (see {name} --help)");
            return ExitCode::from(2);
        }
        Err(Early::Refuse(r)) => {
            eprintln!("{name}: {r}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("{name}: {e:?}");
            return ExitCode::from(2);
        }
    };
    if let FrontEnd::Fat(_) = front {
        // dosfstools prints its version first on every run.
        outln!("{}", fat::version_line());
        if req.lowercase_label() {
            eprintln!("{}", fat::LABEL_WARNING);
        }
    }
    match format(front, req) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("{name}: error: {:#}", f.error());
            ExitCode::from(f.code())
        }
    }
}

/// `--help`'s and `--version`'s text.
fn early_text(front: FrontEnd, e: &Early) -> String {
    match (front, e) {
        (FrontEnd::Exfat, Early::Help) => exfat::usage(),
        (FrontEnd::Exfat, _) => exfat::version_line(),
        (_, Early::Help) => format!("{}\n{}", fat::version_line(), usage_text(front)),
        _ => fat::version_line(),
    }
}

/// A usage error in the original's words.
fn usage_error(front: FrontEnd, u: &UsageError) -> String {
    match (front, u) {
        (FrontEnd::Exfat, UsageError::NoTarget) => "mkfs.exfat: no device given".to_string(),
        (FrontEnd::Exfat, UsageError::Excess(x)) => {
            format!("mkfs.exfat: one DEVICE only, not also {x:?}")
        }
        (_, UsageError::NoTarget) => "No device specified.".to_string(),
        (_, UsageError::Excess(x)) => format!("Excess arguments on command line: {x:?}"),
        (_, UsageError::NeedSize) => "Need intended size with -C.".to_string(),
        (_, u) => format!("{u:?}"),
    }
}

/// The original's usage text (with our name for what is not supported).
fn usage_text(front: FrontEnd) -> String {
    match front {
        FrontEnd::Exfat => exfat::usage(),
        _ => fat::usage(front.name()),
    }
}

/// Inspects the target, decides, and formats through `cmd_format`.
fn format(front: FrontEnd, req: Request) -> Result<(), Failure> {
    let exists = std::fs::symlink_metadata(&req.target).is_ok();
    if req.create && exists {
        return Err(usage(anyhow!(
            "unable to create {}: it exists (-C creates a new file; leave -C out to format it)",
            req.target.display()
        )));
    }
    if !req.create && !exists {
        return Err(usage(anyhow!(
            "unable to open {}: no such file or device (-C BLOCKS creates an image)",
            req.target.display()
        )));
    }
    let target = Target::inspect(&req.target, req.size, req.sector, true)?;
    if req.refuse_partitioned_disk {
        refuse_partitioned_disk(&target, &req.target)?;
    }
    let medium = Medium {
        bytes: target.size_bytes(),
        block: target.block_size(),
        sector: req.sector.unwrap_or(target.block_size()),
        not_fixed: target.device().is_none_or(|d| d.removable),
        align: target.preferred_align(),
    };
    drop(target);
    let decision = req.decide(&medium);
    for n in &decision.notes {
        eprintln!("{}: note: {}", front.name(), fat::note_text(n));
    }
    let argv = mkfs_alloc_args(&req, &decision, medium.sector);
    if !req.quiet {
        eprintln!(
            "{}: as: {}{}",
            front.name(),
            shell_words(&argv),
            beyond_options(&req, &decision)
        );
    }
    let mut cli = <crate::args::Cli as clap::Parser>::try_parse_from(&argv).map_err(|e| {
        usage(anyhow!(
            "internal: mkfs-alloc refused its own arguments {argv:?}: {e}"
        ))
    })?;
    // What mkfs-alloc's own command line has no option for.
    cli.format.keep_label_case = req.keep_label_case;
    cli.format.bios = decision.bios;
    if let Some(epoch) = req.epoch {
        if std::env::var_os("SOURCE_DATE_EPOCH").is_none() {
            std::env::set_var("SOURCE_DATE_EPOCH", epoch.to_string());
        }
    }
    crate::cmd_format::run(cli.format)
}

/// mkfs.fat without `-I` refuses a whole disk that has partition devices
/// (dosfstools 4.2 asks whether the device has children).
fn refuse_partitioned_disk(target: &Target, path: &Path) -> Result<(), Failure> {
    let Some(d) = target.device().filter(|d| d.is_whole_disk) else {
        return Ok(());
    };
    if !d.partitions.iter().any(|p| p.path.exists()) {
        return Ok(());
    }
    Err(usage(anyhow!(
        "{} is a whole disk with partitions; not making a file system across it \
         (give a partition, or use -I to override)",
        path.display()
    )))
}

/// What the front end sets that mkfs-alloc's command line cannot say, for
/// the `as:` line (empty when nothing).
fn beyond_options(req: &Request, d: &Decision) -> String {
    let mut more = Vec::new();
    if req.keep_label_case && req.lowercase_label() {
        more.push("the label's case kept".to_string());
    }
    if let Some(b) = d.bios {
        more.push(format!(
            "media 0x{:02X}, {} heads, {} sectors per track, drive 0x{:02X}",
            b.media, b.heads, b.sectors_per_track, b.drive
        ));
    }
    if more.is_empty() {
        String::new()
    } else {
        format!(" (and, as mkfs.fat: {})", more.join("; "))
    }
}

/// The command line as a shell would take it, for the note.
fn shell_words(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.to_string_lossy();
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The arguments of `mkfs-alloc` for the request.
fn mkfs_alloc_args(req: &Request, d: &Decision, sector: u32) -> Vec<OsString> {
    let mut a: Vec<OsString> = [
        "mkfs-alloc",
        "--table",
        "none",
        "--yes",
        "--fs",
        fs_arg(d.fs),
        "--cluster",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    a.push(cluster_arg(d.cluster).into());
    let mut opt = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            a.push(name.into());
            a.push(v.into());
        }
    };
    opt("--sector-size", req.sector.map(|s| s.to_string()));
    opt("--label", req.label.clone().filter(|l| !l.is_empty()));
    opt("--serial", req.serial.map(|s| format!("{s:08X}")));
    opt("--size", req.size.map(|s| s.to_string()));
    opt(
        "--align",
        req.align_for(sector).or(d.align).map(|s| s.to_string()),
    );
    opt("--fats", req.fats.map(|f| f.to_string()));
    let small = matches!(fs_arg(d.fs), "fat12" | "fat16");
    let root = d.root_entries.or(req.root_entries);
    opt(
        "--root-entries",
        root.filter(|_| small).map(|r| r.to_string()),
    );
    if let Some(g) = &req.volume_guid {
        a.push(format!("--volume-guid={}", mkfs_alloc::report::guid_text(g)).into());
    }
    if req.full {
        a.push("--full".into());
    }
    if req.quiet {
        a.push("-q".into());
    }
    a.push("--".into());
    a.push(plain_target(&req.target));
    a
}

/// `--fs`'s value for a decision's file system.
fn fs_arg(fs: FsChoice) -> &'static str {
    match fs {
        FsChoice::Fixed(k) => k.id(),
        FsChoice::Fat => "fat",
        _ => "auto",
    }
}

/// `--cluster`'s value for a decision's cluster size.
fn cluster_arg(c: ClusterChoice) -> String {
    match c {
        ClusterChoice::Bytes(b) | ClusterChoice::FromData(b) => b.to_string(),
        _ => "auto".to_string(),
    }
}

/// A bare relative name (`list`) as a path (`./list`): mkfs-alloc takes a
/// subcommand's name for a mistake, mkfs.fat for a file.
fn plain_target(p: &Path) -> OsString {
    if p.is_relative() && p.components().count() == 1 {
        Path::new(".").join(p).into_os_string()
    } else {
        p.as_os_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_targets() {
        assert_eq!(plain_target(Path::new("list")), OsString::from("./list"));
        assert_eq!(
            plain_target(Path::new("/dev/sdb1")),
            OsString::from("/dev/sdb1")
        );
    }
}
