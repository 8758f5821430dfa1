//! The black-box power-cut sweep the in-place jobs share: a prepared image
//! is served by `powercut.py` under `losetup --direct-io=on`
//! ([`PowerCutDisk`]) and one CLI command (`recluster`, `resize`,
//! `convert`) runs on the loop device, first uncut (its operations and
//! fsyncs), then cut at each of `cut_points` (one seed each, from the
//! prepared image each time). Per cut: the CLI must not report success if
//! the power went during its run; before the rerun a state the independent
//! fsck calls consistent (but for the marks of an unfinished job) must hold
//! every file byte-identical through the independent reader; then the same
//! command, served uncut, must succeed, and the result must be clean, in
//! the new geometry, with every file identical. The readers of both sides
//! live here too: exfat-fuse on a read-only loop device, mcopy, and the
//! two fsck judges.

use crate::fat_cuts::{fat16_clean_bit_clear, files_through_mcopy, fsck_fat_cut_findings};
use crate::powercut::{CutStats, PowerCutDisk};
use crate::{mkfs_alloc, FuseMount, LoopDevice, LoopOptions, TempDir};
use mkfs_alloc_blockio::powercut::sweep::cut_points;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// Files by path and bytes.
pub type Files = [(String, Vec<u8>)];

/// Mounts `img` read-only through exfat-fuse (on a read-only plain loop
/// device) and returns the paths of `files` whose bytes differ or cannot
/// be read, or `Err` with the driver's failure if it does not mount.
pub fn exfat_files_differing(img: &Path, mnt: &Path, files: &Files) -> Result<Vec<String>, String> {
    let lo = LoopDevice::attach_with(
        img,
        LoopOptions {
            read_only: true,
            ..LoopOptions::default()
        },
    );
    let prog = crate::require_tool("mount.exfat-fuse");
    let args = vec![
        "-d".into(),
        "-o".into(),
        "ro".into(),
        lo.path().to_string_lossy().into_owned(),
        mnt.to_string_lossy().into_owned(),
    ];
    let m = std::panic::catch_unwind(|| FuseMount::spawn(&prog, &args, mnt))
        .map_err(|_| "exfat-fuse does not mount it".to_string())?;
    let differ = files
        .iter()
        .filter(|(path, data)| std::fs::read(mnt.join(path)).ok().as_ref() != Some(data))
        .map(|(path, _)| path.clone())
        .collect();
    m.unmount();
    drop(lo);
    Ok(differ)
}

/// [`exfat_files_differing`] as a verdict: `Err` names the files that
/// differ (or why it does not mount).
pub fn exfat_files_intact(img: &Path, mnt: &Path, files: &Files) -> Result<(), String> {
    match exfat_files_differing(img, mnt, files)? {
        d if d.is_empty() => Ok(()),
        d => Err(format!("{} differs", d.join(", "))),
    }
}

/// Every one of `files` reads back identical through one recursive mcopy
/// (with `MTOOLS_SKIP_CHECK` where a FAT16's clean bit is clear: an
/// unfinished job clears it on purpose and mtools refuses such a FAT).
pub fn fat_files_intact(tmp: &TempDir, img: &Path, files: &Files) -> Result<(), String> {
    files_through_mcopy(tmp, img, files, fat16_clean_bit_clear(img))
}

/// Whether `img` holds an exFAT volume (its boot sector's name).
pub fn is_exfat(img: &Path) -> bool {
    crate::read_at(img, 3, 8) == b"EXFAT   "
}

/// The independent fsck's findings on a cut state that no unfinished job
/// may leave: fsck.exfat's but for the dirty flag (VolumeDirty is set
/// while a job is unfinished) on an exFAT volume, fsck.fat's but for the
/// marks of [`crate::fat_cuts::ALLOWED_FINDINGS`] on a FAT one.
pub fn unexpected_findings(img: &Path) -> Vec<String> {
    if is_exfat(img) {
        crate::recluster::fsck_findings_but_dirty(img).0
    } else {
        fsck_fat_cut_findings(img, false).1
    }
}

/// One case of the sweep.
pub struct DeviceJob<'a> {
    /// What the summary line calls the case.
    pub name: &'a str,
    /// The CLI's arguments before the device path (the same every run).
    pub args: &'a [&'a str],
    /// The files on the volume (path, bytes).
    pub files: &'a Files,
    /// One of `files` (at least 4,160 bytes) whose data the control flips.
    pub control: &'a str,
    /// Every file read back through the independent reader: `Err` names
    /// what differs.
    pub intact: &'a dyn Fn(&Path) -> Result<(), String>,
    /// The geometry of a state, as a label to count (old or new).
    pub layout: &'a dyn Fn(&Path) -> String,
    /// Panics unless the volume is fsck-clean in the new geometry.
    pub finished: &'a dyn Fn(&Path),
    /// Evenly spread cut points before those around the fsyncs.
    pub spread: usize,
}

/// What a sweep saw.
#[derive(Debug, Clone, Default)]
pub struct DeviceCutCounts {
    /// The uncut run's counters.
    pub uncut: CutStats,
    /// Cut points (one seed each).
    pub points: usize,
    /// Cut runs in which the power went before the CLI exited.
    pub cut_during_run: usize,
    /// Cut runs the CLI reported as failed.
    pub failed_runs: usize,
    /// States fsck called consistent, every file intact, before the rerun.
    pub intact_before: usize,
    /// States fsck did not call consistent before the rerun.
    pub not_consistent: usize,
    /// States the rerun finished: clean, new geometry, every file intact.
    pub intact_after: usize,
    /// The layouts of the states intact before the rerun, counted.
    pub layouts: BTreeMap<String, usize>,
    /// Unflushed blocks kept at the cuts.
    pub kept: u64,
    /// Unflushed blocks lost at the cuts.
    pub dropped: u64,
}

/// Runs the CLI's command of `job` on `dev`.
fn command(job: &DeviceJob<'_>, dev: &Path) -> crate::CmdOutput {
    let dev = dev.to_string_lossy().into_owned();
    let mut args = job.args.to_vec();
    args.push(&dev);
    mkfs_alloc(&args)
}

/// A copy of `img` at `control` with one byte flipped at every place the
/// 64 bytes at 4,096 of `data` are (a copied file's old clusters keep them
/// too).
pub fn flipped_copy(img: &Path, data: &[u8], control: &Path) {
    let probe = &data[4096..4096 + 64];
    let mut bytes = std::fs::read(img).expect("read the result");
    let found: Vec<usize> = bytes
        .windows(probe.len())
        .enumerate()
        .filter(|(_, w)| *w == probe)
        .map(|(at, _)| at)
        .collect();
    assert!(!found.is_empty(), "the file's bytes are in the image");
    for at in found {
        bytes[at] ^= 0x5A;
    }
    std::fs::write(control, &bytes).expect("write");
}

/// The sweep of the module docs on the prepared volume `img` (a file in
/// `tmp`), returning its counts after printing them.
#[track_caller]
pub fn sweep_on_a_device(tmp: &TempDir, img: &Path, job: &DeviceJob<'_>) -> DeviceCutCounts {
    let started = Instant::now();
    let disk_mnt = tmp.subdir("disk");
    assert_eq!((job.intact)(img), Ok(()), "the prepared volume");
    let prepared = std::fs::read(img).expect("read the prepared image");

    // The uncut run: the operation count, where the fsyncs come, and proof
    // that the loop device's flushes reach the FUSE process.
    let disk = PowerCutDisk::serve(&disk_mnt, img, None, 0);
    command(job, disk.path()).assert_success();
    let uncut = disk.remove();
    assert!(
        uncut.fsyncs > 0 && uncut.writes > 0 && !uncut.cut,
        "{uncut:?}"
    );
    (job.finished)(img);
    assert_eq!((job.intact)(img), Ok(()), "the uncut run");
    // The comparison is over real bytes: a flipped byte of one file's data
    // is that file's difference.
    {
        let data = &job
            .files
            .iter()
            .find(|(p, _)| p == job.control)
            .expect("the control file is one of the files")
            .1;
        let control = tmp.join("control.img");
        flipped_copy(img, data, &control);
        assert_eq!(
            (job.intact)(&control),
            Err(format!("{} differs", job.control)),
            "a flipped data byte goes unnoticed"
        );
        std::fs::remove_file(&control).expect("remove");
    }

    let points = cut_points(uncut.ops, &uncut.fsync_ops, job.spread);
    let mut c = DeviceCutCounts {
        points: points.len(),
        ..DeviceCutCounts::default()
    };
    for &k in &points {
        let ctx = format!("{}: cut at op {k} of {}", job.name, uncut.ops);
        std::fs::write(img, &prepared).expect("reset");
        let disk = PowerCutDisk::serve(&disk_mnt, img, Some(k), k);
        let out = command(job, disk.path());
        let at_exit = disk.stats();
        assert!(
            !(at_exit.cut && out.success()),
            "{ctx}: the CLI reports success although the power went during its run:\n{out}"
        );
        assert!(
            at_exit.cut || out.success(),
            "{ctx}: the CLI fails although the power stayed on:\n{out}"
        );
        c.cut_during_run += usize::from(at_exit.cut);
        c.failed_runs += usize::from(!out.success());
        let cut = disk.remove();
        (c.kept, c.dropped) = (c.kept + cut.kept, c.dropped + cut.dropped);

        // Before the rerun: consistent for the independent fsck (but for
        // the marks of an unfinished job) means every file reads back.
        let wrong = unexpected_findings(img);
        if wrong.is_empty() {
            if let Err(e) = (job.intact)(img) {
                panic!("{ctx}: CONSISTENT BUT DAMAGED before the rerun: {e}");
            }
            c.intact_before += 1;
            *c.layouts.entry((job.layout)(img)).or_default() += 1;
        } else {
            c.not_consistent += 1;
            eprintln!("{ctx}: before the rerun fsck says {wrong:?}");
        }

        let disk = PowerCutDisk::serve(&disk_mnt, img, None, 0);
        let out = command(job, disk.path());
        assert!(out.success(), "{ctx}: the rerun fails:\n{out}");
        assert!(!disk.remove().cut, "{ctx}");
        (job.finished)(img);
        if let Err(e) = (job.intact)(img) {
            panic!("{ctx}: after the rerun {e}");
        }
        c.intact_after += 1;
    }
    c.uncut = uncut;
    eprintln!(
        "{} ({} files): {} ops ({} writes, {} fsyncs at {:?}); {} cut points (one seed each): \
         the power went during {} cut runs, {} of them failed; {} consistent and intact before \
         the rerun (layouts {:?}; {} not consistent), {} intact after it; {} unflushed blocks \
         kept, {} lost; {:.1} s",
        job.name,
        job.files.len(),
        c.uncut.ops,
        c.uncut.writes,
        c.uncut.fsyncs,
        c.uncut.fsync_ops,
        c.points,
        c.cut_during_run,
        c.failed_runs,
        c.intact_before,
        c.layouts,
        c.not_consistent,
        c.intact_after,
        c.kept,
        c.dropped,
        started.elapsed().as_secs_f64()
    );
    c
}

/// The counts every case must reach: each cut state finished intact by
/// the rerun, each judged before it, every run the power left failed.
#[track_caller]
pub fn assert_counts(c: &DeviceCutCounts, least_points: usize) {
    assert!(c.points >= least_points, "{c:?}");
    assert_eq!(c.intact_after, c.points, "{c:?}");
    assert_eq!(c.intact_before + c.not_consistent, c.points, "{c:?}");
    assert_eq!(c.failed_runs, c.cut_during_run, "{c:?}");
    assert!(c.cut_during_run + 2 >= c.points, "{c:?}");
}
