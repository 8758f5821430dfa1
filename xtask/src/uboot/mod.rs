//! `cargo xtask test-uboot`: our FAT images through U-Boot's own FAT
//! driver (Debian's `u-boot-qemu`, 2023.01), in QEMU.
//!
//! Per case of [`CASES`] (the CI subset, or all with `--all`), one thread
//! of `--jobs` (default 2) each:
//! 1. The image: formatted (populated cases with the kernel suite's source
//!    tree, `write_source_tree`), read back with `mkfs-alloc info --json`,
//!    a negative control's fault put in; `fsck.fat -n` of the fresh volume
//!    must be clean.
//! 2. U-Boot: QEMU (TCG) boots the case's U-Boot build with the image as
//!    a virtio disk (512-byte sectors) or an NVMe namespace (4096), and
//!    the serial console is driven command by command (`console.rs`):
//!    `fatinfo` (the FAT width and label we wrote), `fatls` of every
//!    directory (exactly the source's entries and sizes), `size` and
//!    `fatload` + `crc32` of every file (the CRC-32 computed here), then
//!    `fatmkdir`, `fatwrite` and `fatrm` and U-Boot's own listing and load
//!    of what it wrote (`session.rs`).
//! 3. The host: `fsck.fat -n` after U-Boot's writes (only FSInfo's stale
//!    free count is accepted on FAT32, with the numbers it must have:
//!    U-Boot 2023.01 does not update FSInfo), and mtools' copy of the
//!    whole volume equal to the tree that must be on it (`judge.rs`).
//!
//! A case passes with no finding. A U-Boot limit case must fail with the
//! limit's message (reported as the limit, never as a pass); a negative
//! control must fail with its finding. Anything else fails the command.
//! `--json` prints the report as JSON on stdout: the U-Boot banner, the
//! seconds, `ok`, and per case its `result` (`pass`, `U-Boot limit`,
//! `fails as it must`, or a failure), `ok` (went as it must), seconds and
//! findings.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{json, Value};

use crate::kernel::{
    apply_change, fill_mtools, finish, format_image, fsck_volume, parse_options, read_volume,
    select_cases, write_source_tree, Make,
};
use crate::{cargo, install_packages, is_root, run, target_dir, workspace_root};

mod cases;
mod console;
mod host;
mod judge;
mod session;

use cases::*;
use host::*;
use judge::*;

/// Tools `test-uboot` runs, with their Debian packages (an absolute path
/// is a file the package must provide: the U-Boot builds).
pub const TOOLS: &[(&str, &str)] = &[
    ("qemu-system-arm", "qemu-system-arm"),
    ("qemu-system-aarch64", "qemu-system-arm"),
    ("/usr/lib/u-boot/qemu_arm/u-boot.bin", "u-boot-qemu"),
    ("/usr/lib/u-boot/qemu_arm64/u-boot.bin", "u-boot-qemu"),
    ("mcopy", "mtools"),
    ("fsck.fat", "dosfstools"),
    ("mkfs.fat", "dosfstools"),
    ("mkfs.exfat", "exfatprogs"),
    ("losetup", "mount"),
];

/// What came of one case.
struct Report {
    case: &'static Case,
    verdict: &'static str,
    ok: bool,
    findings: Vec<String>,
    notes: Vec<String>,
    banner: String,
    /// The text of the case's U-Boot limit appeared in a reply.
    limit_seen: bool,
    /// Wall seconds: the U-Boot session (boot to poweroff), the case.
    uboot: f64,
    total: f64,
}

/// `cargo xtask test-uboot [--all] [--json] [--jobs N] [--case NAME]... [--keep]`.
pub fn test_uboot_cmd(args: &[String]) -> Result<(), String> {
    let opts = parse_options(args, true)?;
    let start = Instant::now();
    if !is_root() {
        return Err("test-uboot runs fsck.fat on loop devices: run it as root".into());
    }
    install_packages(TOOLS)?;
    run(Command::new(cargo()).current_dir(workspace_root()).args([
        "build",
        "--workspace",
        "--bin",
        "mkfs-alloc",
    ]))?;
    let bin = target_dir().join("debug").join("mkfs-alloc");
    let cases = select_cases(CASES, &opts, |c| c.name, |c| c.ci)?;
    let work = target_dir().join("uboot-test").join("run");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;

    let next = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.min(cases.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let report = run_case(case, &bin, &work);
                eprintln!(
                    "xtask: test-uboot: {} {} ({:.1} s)",
                    case.name, report.verdict, report.total
                );
                if let Ok(mut r) = reports.lock() {
                    r.push((i, report));
                }
            });
        }
    });
    let mut reports = reports.into_inner().map_err(|_| "a case thread panicked")?;
    reports.sort_by_key(|(i, _)| *i);
    let reports: Vec<Report> = reports.into_iter().map(|(_, r)| r).collect();
    if reports.len() != cases.len() {
        return Err(format!(
            "{} of {} cases reported (a thread panicked)",
            reports.len(),
            cases.len()
        ));
    }
    print_table(&reports, start);
    if opts.json {
        println!("{}", to_json(&reports, start));
    }
    let failed: Vec<&str> = reports
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.case.name)
        .collect();
    finish(&opts, &work, &failed)
}

/// One case, start to end; a setup error is a finding like any other.
fn run_case(case: &'static Case, bin: &Path, work: &Path) -> Report {
    let start = Instant::now();
    let mut report = Report {
        case,
        verdict: "",
        ok: false,
        findings: Vec::new(),
        notes: Vec::new(),
        banner: String::new(),
        limit_seen: false,
        uboot: 0.0,
        total: 0.0,
    };
    if let Err(e) = check_case(case, bin, work, &mut report) {
        report.findings.push(e);
    }
    (report.verdict, report.ok) = verdict(case.expect, &report.findings, report.limit_seen);
    report.total = start.elapsed().as_secs_f64();
    report
}

fn check_case(case: &Case, bin: &Path, work: &Path, report: &mut Report) -> Result<(), String> {
    let image = work.join(format!("{}.img", case.name));
    let src = work.join(format!("{}.src", case.name));
    let mut rootdir = Vec::new();
    if case.populated {
        write_source_tree(&src)?;
        rootdir = vec!["--rootdir".into(), src.clone().into_os_string()];
    }
    format_image(case.name, case.make, bin, &image, &rootdir)?;
    if let Some(change) = case.change {
        if case.populated && matches!(case.make, Make::Peer { .. }) {
            fill_mtools(case.name, bin, &image, &src, work, case.past)?;
        }
        // Checked there through info --json: the change happened.
        apply_change(case.name, change, bin, &image)?;
    }
    let vol = Volume::from_json(&read_volume(case.name, bin, &image)?)?;
    if vol.sector != u64::from(case.sector) {
        return Err(format!(
            "info says {}-byte sectors; the case says {}",
            vol.sector, case.sector
        ));
    }
    if let Expect::Fails(fault, _) = case.expect {
        inject(fault, &image, &vol, &src)?;
    }
    let source = if case.populated {
        Some(Tree::read(&src)?)
    } else {
        None
    };
    let fat = vol.width().is_some();
    if fat {
        // The FAT decoder here against mkfs-alloc's count.
        let counted = count_free(&image, &vol)?;
        if counted != vol.free_clusters {
            report.findings.push(format!(
                "fresh image: {counted} free clusters counted here, {} by mkfs-alloc info",
                vol.free_clusters
            ));
        }
        let (_, text) = fsck_volume("fsck.fat", &image, vol.start, vol.size)?;
        let fresh = judge_fsck(&text, None);
        report
            .findings
            .extend(fresh.into_iter().map(|f| format!("fresh image: {f}")));
    }

    let session = Instant::now();
    let transcript = work.join(format!("{}.console", case.name));
    let mut console = console::Console::boot(case, &image, &transcript)?;
    report.banner = console.banner.clone();
    let outcome = session::converse(&mut console, case, &vol, source.as_ref());
    if let Err(e) = console.poweroff() {
        report.findings.push(e);
    }
    report.uboot = session.elapsed().as_secs_f64();
    report.findings.extend(outcome.findings);
    report.notes.extend(outcome.notes);
    report.limit_seen = outcome.limit_seen;
    if !fat || matches!(case.expect, Expect::Limit(_)) {
        return Ok(());
    }

    host_checks(
        case,
        &image,
        &vol,
        outcome.after.as_ref().or(source.as_ref()),
        work,
        report,
    )
}

/// The host's view of what U-Boot left: fsck.fat (only FSInfo's stale
/// count accepted, with its numbers) and mtools' copy of the volume equal
/// to `want` (`None`: an empty volume).
fn host_checks(
    case: &Case,
    image: &Path,
    vol: &Volume,
    want: Option<&Tree>,
    work: &Path,
    report: &mut Report,
) -> Result<(), String> {
    let counted = count_free(image, vol)?;
    let wrote = report.notes.iter().all(|n| !n.contains("nothing written"));
    let fsinfo = match vol.fs.as_str() {
        "fat32" if wrote => Some((vol.fsinfo_free.unwrap_or(u64::MAX), counted)),
        _ => None,
    };
    let (_, text) = fsck_volume("fsck.fat", image, vol.start, vol.size)?;
    report.findings.extend(
        judge_fsck(&text, fsinfo)
            .into_iter()
            .map(|f| format!("after U-Boot: {f}")),
    );
    let empty = Tree {
        dirs: [(String::new(), Vec::new())].into(),
        ..Tree::default()
    };
    let want = want.unwrap_or(&empty).renamed(mtools_name);
    match mtools_copy(image, vol, &work.join(format!("{}.mtools", case.name))) {
        Ok(got) => report.findings.extend(compare_trees("mtools", &want, &got)),
        Err(e) => report.findings.push(format!("mtools: {e}")),
    }
    Ok(())
}

/// The table on stderr: one line per case, its findings and notes below.
fn print_table(reports: &[Report], start: Instant) {
    let banner = reports
        .iter()
        .map(|r| r.banner.as_str())
        .find(|b| !b.is_empty())
        .unwrap_or("(U-Boot did not boot)");
    eprintln!("xtask: test-uboot: {banner}, {} cases", reports.len());
    eprintln!(
        "  {:<32} {:<6} {:<20} {:>7} {:>7}",
        "case", "cpu", "result", "U-Boot", "total"
    );
    for r in reports {
        eprintln!(
            "  {:<32} {:<6} {:<20} {:>5.1} s {:>5.1} s",
            r.case.name,
            r.case.arch.name(),
            r.verdict,
            r.uboot,
            r.total
        );
        // A limit or a control fails by design: its first findings suffice.
        let shown = if r.ok && !r.findings.is_empty() {
            3
        } else {
            usize::MAX
        };
        for f in r.findings.iter().take(shown) {
            eprintln!("      {f}");
        }
        if r.findings.len() > shown {
            eprintln!("      ... {} more findings", r.findings.len() - shown);
        }
        for n in &r.notes {
            eprintln!("      note: {n}");
        }
    }
    eprintln!("xtask: test-uboot finished in {:.0?}", start.elapsed());
}

/// The report as JSON.
fn to_json(reports: &[Report], start: Instant) -> Value {
    let cases: Vec<Value> = reports
        .iter()
        .map(|r| {
            json!({
                "name": r.case.name,
                "arch": r.case.arch.name(),
                "bus": r.case.bus.interface(),
                "sector_size": r.case.sector,
                "populated": r.case.populated,
                "ci": r.case.ci,
                "result": r.verdict,
                "ok": r.ok,
                "uboot_seconds": r.uboot,
                "seconds": r.total,
                "findings": r.findings,
                "notes": r.notes,
            })
        })
        .collect();
    json!({
        "uboot": reports.iter().map(|r| r.banner.as_str()).find(|b| !b.is_empty()),
        "seconds": start.elapsed().as_secs_f64(),
        "ok": reports.iter().all(|r| r.ok),
        "cases": cases,
    })
}
