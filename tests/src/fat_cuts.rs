//! The FAT re-cluster's (or another in-place job's: [`CutJob`]) cut states
//! judged by the independent tools: the library's job on an image file is
//! cut at chosen operations
//! (`PowerCutIo`: a seeded subset of the unflushed writes survives), and
//! each surviving image is checked by `fsck.fat -n` (only the marks an
//! unfinished job may leave) and by one recursive mcopy (every file as
//! written); optionally the CLI then runs the same command again, and the
//! result must be clean for fsck.fat at the new size with every file
//! intact.

use crate::checks::fsck_fat_clean;
use crate::{mkfs_alloc, require_tool, run, CmdOutput, TempDir};
use std::collections::BTreeMap;
use std::path::Path;

/// Every one of `files`, read back by one recursive mcopy, equals what
/// went in.
#[track_caller]
pub fn assert_files_through_mcopy(tmp: &TempDir, img: &Path, files: &[(String, Vec<u8>)]) {
    if let Err(e) = files_through_mcopy(tmp, img, files, false) {
        panic!("{e}");
    }
}

/// Whether the first FAT of the FAT16 volume `img` has FAT\[1\]'s
/// clean-shutdown bit (0x8000, fatgen103 §4) clear: mtools then refuses
/// the volume ("Error reading FAT": it wants the FAT's fourth byte 0xFF)
/// unless `MTOOLS_SKIP_CHECK` is set. A re-cluster clears the bit on
/// purpose while it is unfinished.
pub fn fat16_clean_bit_clear(img: &Path) -> bool {
    let b = crate::read_at(img, 0, 24);
    let sector = u64::from(u16::from_le_bytes([b[11], b[12]]));
    let reserved = u64::from(u16::from_le_bytes([b[14], b[15]]));
    let fat16 = u16::from_le_bytes([b[22], b[23]]) != 0 && b[13] != 0 && {
        let sectors16 = u64::from(u16::from_le_bytes([b[19], b[20]]));
        sectors16 == 0 || sectors16 > 4085 * u64::from(b[13])
    };
    fat16 && crate::read_at(img, reserved * sector + 3, 1)[0] & 0x80 == 0
}

/// [`assert_files_through_mcopy`] as a result: what differs or what
/// mcopy said (`skip_check`: with `MTOOLS_SKIP_CHECK=1`).
pub fn files_through_mcopy(
    tmp: &TempDir,
    img: &Path,
    files: &[(String, Vec<u8>)],
    skip_check: bool,
) -> Result<(), String> {
    let out = tmp.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("mkdir");
    let to = out.to_str().expect("utf-8");
    let args = ["-i", img.to_str().expect("utf-8"), "-s", "-n", "::/", to];
    let env: &[(&str, &str)] = if skip_check {
        &[("MTOOLS_SKIP_CHECK", "1")]
    } else {
        &[]
    };
    let copy = crate::run_env(require_tool("mcopy"), &args, env);
    if !copy.success() {
        return Err(format!("mcopy fails:\n{copy}"));
    }
    for (path, data) in files {
        match std::fs::read(out.join(path)) {
            Ok(got) if got == *data => {}
            Ok(_) => return Err(format!("{path} differs")),
            Err(e) => return Err(format!("{path}: {e}")),
        }
    }
    Ok(())
}

/// The cluster size the boot sector of `img` gives (BPB_BytsPerSec times
/// BPB_SecPerClus, fatgen103 §3.1).
pub fn cluster_size(img: &Path) -> u64 {
    let b = crate::read_at(img, 0, 14);
    u64::from(u16::from_le_bytes([b[11], b[12]])) * u64::from(b[13])
}

/// A line of fsck.fat's list of bytes where the boot sector and its
/// backup differ (`  13:02/01, 14:20/a0`; a line it wraps goes on with
/// `  , 44:02/82`).
pub fn byte_differences(line: &str) -> bool {
    let mut pieces = line.split(',').map(str::trim).peekable();
    if pieces.peek() == Some(&"") {
        pieces.next();
    }
    pieces.all(|d| {
        d.split_once(':').is_some_and(|(off, v)| {
            off.parse::<u32>().is_ok()
                && v.split_once('/').is_some_and(|(a, b)| {
                    u8::from_str_radix(a, 16).is_ok() && u8::from_str_radix(b, 16).is_ok()
                })
        })
    })
}

/// What fsck.fat may say of a state a cut leaves, each for a reason: the
/// clean bit clear ("dirty bit": set while the job is unfinished, on
/// purpose); FATs that differ in their first sector or, where new FATs go
/// over the old second one, everywhere while the first is intact ("using
/// first FAT"); the backup boot sector ahead of the main one (either is a
/// complete volume: "mostly harmless", not fixed automatically, and the
/// list of the bytes that differ); FSInfo's hints set to unknown. Never a
/// chain, a size or a directory entry fsck.fat would change.
pub const ALLOWED_FINDINGS: &[&str] = &[
    "did not exit 0",
    "dirty bit",
    "fats differ but appear to be intact",
    "using first fat",
    "differences between boot sector and its backup",
    "mostly harmless",
    "not automatically fixing this",
    "free cluster summary uninitialized",
    "leaving filesystem unchanged",
];

/// fsck.fat -n's findings on `img` (by the project's judge), those of
/// them that no cut may leave (not in [`ALLOWED_FINDINGS`], not a list of
/// bytes, not lost clusters unless `allow_lost`), and its output.
pub fn fsck_fat_cut_findings(
    img: &Path,
    allow_lost: bool,
) -> (Vec<String>, Vec<String>, CmdOutput) {
    use mkfs_alloc_testsupport::{fsck_findings, FsckKind};
    let out = run(require_tool("fsck.fat"), &[Path::new("-n"), img]);
    let found = fsck_findings(FsckKind::Fat, out.success(), &out.stdout, &out.stderr);
    let wrong = found
        .iter()
        .filter(|f| {
            let l = f.to_lowercase();
            !(ALLOWED_FINDINGS.iter().any(|w| l.contains(w))
                || byte_differences(&l)
                || (allow_lost && lost_clusters(f)))
        })
        .cloned()
        .collect();
    (found, wrong, out)
}

/// Whether fsck.fat's line `f` reports lost clusters.
fn lost_clusters(f: &str) -> bool {
    let l = f.to_lowercase();
    l.starts_with("reclaimed ") && l.contains(" unused cluster")
}

/// An in-place job a sweep cuts: the library's run, the same command of
/// the CLI (its arguments before `--yes -q IMAGE`) and the check of the
/// volume it leaves (besides fsck.fat and the files).
pub struct CutJob<'a> {
    /// The library's job.
    pub run: &'a crate::recluster::EngineJob<'a>,
    /// The CLI's command, e.g. `["recluster", "--cluster", "512"]`.
    pub args: &'a [&'a str],
    /// What the finished image must be.
    pub done: &'a dyn Fn(&Path) -> Result<(), String>,
}

/// Runs the CLI's command of `job` on `img`.
fn cli_rerun(job: &CutJob<'_>, img: &Path) -> CmdOutput {
    let mut args = job.args.to_vec();
    args.extend(["--yes", "-q", img.to_str().expect("utf-8")]);
    mkfs_alloc(&args)
}

/// A copy of the cut state `img` repaired by `fsck.fat -a` (what a boot's
/// automatic check does: frees the lost clusters, clears the dirty bit,
/// makes the FATs equal) still holds every file, and the same command
/// finishes the job on it: clean, as `job` wants it, every file intact.
fn repaired_then_finished(
    tmp: &TempDir,
    img: &Path,
    job: &CutJob<'_>,
    files: &[(String, Vec<u8>)],
) -> Result<(), String> {
    let copy = img.with_extension("repaired");
    std::fs::copy(img, &copy).expect("copy");
    let fix = run(require_tool("fsck.fat"), &[Path::new("-a"), &copy]);
    // Exit 1: errors found and corrected.
    if !matches!(fix.code, Some(0 | 1)) {
        return Err(format!("fsck.fat -a fails:\n{fix}"));
    }
    files_through_mcopy(tmp, &copy, files, false).map_err(|e| format!("repaired: {e}"))?;
    let again = cli_rerun(job, &copy);
    if !again.success() {
        return Err(format!("repaired, the rerun fails:\n{again}"));
    }
    fsck_fat_clean(&copy);
    (job.done)(&copy).map_err(|e| format!("repaired, the rerun: {e}"))?;
    files_through_mcopy(tmp, &copy, files, false).map_err(|e| format!("repaired, rerun: {e}"))?;
    std::fs::remove_file(&copy).expect("remove");
    Ok(())
}

/// One sweep of cut states.
#[derive(Debug, Clone, Copy)]
pub struct FatCuts {
    /// The new cluster size.
    pub to: u64,
    /// The medium's sector size (the block size of the cut device).
    pub sector: u32,
    /// Seeds `0..seeds` at each cut point.
    pub seeds: u64,
    /// At most this many evenly spread cut points plus those around each
    /// flush (`cut_points`); every operation when the job has fewer.
    pub max_points: usize,
    /// Whether each cut state is then finished by the CLI's same command
    /// and checked again.
    pub rerun: bool,
    /// Whether lost clusters (allocated, named by no chain: "Reclaimed N
    /// unused clusters") may be found: an evacuation's copies before the
    /// entry that names them is flushed, and the old clusters after it
    /// until their release is. fsck.fat would free them; no file changes:
    /// each such state is also repaired by `fsck.fat -a` on a copy and
    /// finished by the same command there.
    pub lost_clusters: bool,
}

/// What a sweep saw.
#[derive(Debug, Clone, Default)]
pub struct FatCutCounts {
    /// The uncut job's mutating operations.
    pub ops: u64,
    /// Cut states checked (cut points x seeds).
    pub states: usize,
    /// States in which every file read back intact before any rerun.
    pub intact_before: usize,
    /// States with lost clusters whose copy, repaired by `fsck.fat -a`,
    /// the same command then finished (clean, every file intact).
    pub repaired_then_finished: usize,
    /// States of a FAT16 volume whose clean bit was clear, read by mcopy
    /// with `MTOOLS_SKIP_CHECK=1` (mtools refuses them otherwise).
    pub clean_bit_clear: usize,
    /// States the rerun finished, clean with every file intact.
    pub finished_by_rerun: usize,
    /// fsck.fat's findings over all states, by line, with how many states
    /// said each.
    pub findings: BTreeMap<String, usize>,
}

/// The sweep of the module docs on `img` (restored from its bytes before
/// each trial), every one of `files` checked in every state: the
/// re-cluster to `sweep.to`.
#[track_caller]
pub fn fsck_fat_every_cut_state(
    tmp: &TempDir,
    img: &Path,
    sweep: FatCuts,
    files: &[(String, Vec<u8>)],
) -> FatCutCounts {
    let to = sweep.to.to_string();
    let job = CutJob {
        run: &|dev| mkfs_alloc::recluster::recluster(dev, sweep.to).map(|_| ()),
        args: &["recluster", "--cluster", &to],
        done: &|img| match cluster_size(img) {
            c if c == sweep.to => Ok(()),
            c => Err(format!("{c}-byte clusters")),
        },
    };
    fsck_fat_every_cut_state_of(tmp, img, sweep, files, &job)
}

/// [`fsck_fat_every_cut_state`] of `job` (`sweep.to` only named in the
/// summary).
#[track_caller]
pub fn fsck_fat_every_cut_state_of(
    tmp: &TempDir,
    img: &Path,
    sweep: FatCuts,
    files: &[(String, Vec<u8>)],
    job: &CutJob<'_>,
) -> FatCutCounts {
    use mkfs_alloc_blockio::powercut::sweep::cut_points;
    use mkfs_alloc_blockio::{BlockIo, ImageFile, PowerCutIo};
    let pristine = std::fs::read(img).expect("read");
    let open = || ImageFile::open(img, sweep.sector).expect("open");
    let (ops, flushes) = {
        let mut count = PowerCutIo::counting(open());
        (job.run)(&mut count).expect("uncut");
        let seen = (count.ops_seen(), count.flushes().to_vec());
        drop(count.into_all_written().expect("write"));
        seen
    };
    let mut c = FatCutCounts {
        ops,
        ..FatCutCounts::default()
    };
    for k in cut_points(ops, &flushes, sweep.max_points) {
        for seed in 0..sweep.seeds {
            std::fs::write(img, &pristine).expect("reset");
            let mut cut = PowerCutIo::new(open(), k, seed);
            let cut_run = (job.run)(&mut cut);
            // A cut after the last operation lets the job succeed.
            assert!(cut_run.is_err() || k == ops, "cut at {k}: succeeded");
            let mut dev = cut.into_surviving().expect("cut");
            dev.flush().expect("flush");
            drop(dev);
            let (found, wrong, out) = fsck_fat_cut_findings(img, sweep.lost_clusters);
            assert!(
                wrong.is_empty(),
                "cut at {k}, seed {seed}: {found:?}\n{out}"
            );
            c.states += 1;
            for f in &found {
                *c.findings.entry(f.clone()).or_default() += 1;
            }
            if found.iter().any(|f| lost_clusters(f)) {
                repaired_then_finished(tmp, img, job, files)
                    .unwrap_or_else(|e| panic!("cut at {k}, seed {seed}: {e}"));
                c.repaired_then_finished += 1;
            }
            let skip = fat16_clean_bit_clear(img);
            c.clean_bit_clear += usize::from(skip);
            if let Err(e) = files_through_mcopy(tmp, img, files, skip) {
                panic!("cut at {k} of {ops}, seed {seed}: {e}\nfsck.fat: {found:?}");
            }
            c.intact_before += 1;
            if sweep.rerun {
                let again = cli_rerun(job, img);
                assert!(
                    again.success(),
                    "cut at {k}, seed {seed}: the rerun:\n{again}"
                );
                fsck_fat_clean(img);
                if let Err(e) = (job.done)(img) {
                    panic!("cut at {k}, seed {seed}, after the rerun: {e}");
                }
                if let Err(e) = files_through_mcopy(tmp, img, files, false) {
                    panic!("cut at {k} of {ops}, seed {seed}, after the rerun: {e}");
                }
                c.finished_by_rerun += 1;
            }
        }
    }
    eprintln!(
        "fsck.fat on {} cut states of {ops} ops to {}: {} intact before the rerun ({} of them a \
         FAT16 with its clean bit clear), {} finished by it, {} with lost clusters repaired by \
         fsck.fat -a and finished; findings {:?}",
        c.states,
        sweep.to,
        c.intact_before,
        c.clean_bit_clear,
        c.finished_by_rerun,
        c.repaired_then_finished,
        c.findings
    );
    c
}
