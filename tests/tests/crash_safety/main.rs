//! Crash safety: a format interrupted after any number of operations leaves
//! either no recognisable file system or the complete new one — never a
//! mountable-but-inconsistent volume, and never the old file system once
//! the format has flushed its first wipe.
//!
//! For each scenario (exFAT / FAT32, no table / MBR, a fresh sparse image or
//! one already holding another file system), the library facade
//! `mkfs_alloc::format` runs once through `FaultyIo(Fault::Never)` to count
//! the mutating operations N and log them, then for every k in 0..=N once
//! with `Fault::FailAfter(k)` (a failing medium) and once with
//! `Fault::StopAfter(k)` (a pulled stick), each on a fresh copy of the
//! prepared image. `blkid -p` and `fsck.exfat -n` / `fsck.fat -n` (on a
//! loop-device window for partitions) then classify what the image holds.
//!
//! A last test checks the CLI side: an I/O failure (ENOSPC on a tiny tmpfs)
//! exits 1 and names the failing byte offset.
//!
//! `power_cut` (pure tier) drops the in-order model: at each cut a seeded
//! subset of the unflushed blocks survives (`PowerCutIo`), and the format
//! run again must give the uncut run's bytes.

use mkfs_alloc::blockio::{
    injected_fault, Counting, Fault, FaultyIo, ImageFile, IoError, IoOp, LogEntry,
};
use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsKind, WriteError};
use mkfs_alloc::partition::{PartitionError, TableChoice, TableKind};
use mkfs_alloc::populate::{TimePolicy, Tree};
use mkfs_alloc::{FormatError, Found, MediumOptions, MediumPlan};
use mkfs_alloc_tests::check::{
    blkid_probe, fsck_verdict, serial_uuid, sparse_copy, with_volume, Fsck, Probe,
};
use mkfs_alloc_tests::{
    fill_range, mkfs_alloc, require_root, require_tool, run, sparse_file, ExfatBoot, Fat32Boot,
    MkfsJson, TempDir, TmpfsMount, KIB, MIB,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

mod power_cut;
mod scenarios;

/// The serial of every new file system; old ones get other serials.
const NEW_SERIAL: u32 = 0x5AFE_0001;
/// The serial `mkfs-alloc` gives an old file system.
const OLD_SERIAL: &str = "0DD5E41A";
/// The volume ID `mkfs.fat` gives an old file system.
const OLD_FAT_ID: &str = "0DDFA700";
const BS: u32 = 512;

/// What the target holds before the format.
#[derive(Debug, Clone, Copy)]
enum Old {
    /// Nothing: a new sparse image (`ImageFile::create`).
    Fresh,
    /// Formatted by `mkfs-alloc` with these extra arguments (and serial
    /// `OLD_SERIAL`).
    Ours(&'static [&'static str]),
    /// `mkfs.exfat -c 16K` (random serial).
    MkfsExfat,
    /// `mkfs.fat -F 32 -s 2 -i OLD_FAT_ID`.
    MkfsFat,
}

#[derive(Debug, Clone, Copy)]
struct Scenario {
    name: &'static str,
    fs: FsKind,
    cluster: u64,
    table: TableKind,
    size: u64,
    old: Old,
    /// Write a small tree into the volume (`--rootdir`) as part of the format.
    rootdir: bool,
}

/// The old file system of a prepared template, as the tools see it.
#[derive(Debug, Clone)]
struct OldFs {
    offset: u64,
    len: u64,
    kind: Fsck,
    uuid: String,
}

/// What an (interrupted) image holds, as the independent tools see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum State {
    /// The old file system, untouched and consistent.
    Old,
    /// No file system at the volume start; fsck refuses; old serial gone.
    Blank,
    /// The complete new file system: fsck clean, new serial and cluster size.
    New,
}

#[derive(Debug, Default)]
struct Tally {
    runs: usize,
    ks: usize,
    old: usize,
    blank: usize,
    new: usize,
    /// Blank at the new volume start, while the old volume still sits,
    /// unreferenced, at another offset.
    old_elsewhere: usize,
}

fn options(s: &Scenario) -> MediumOptions {
    MediumOptions::new()
        .format(
            FormatOptions::new()
                .fs(FsChoice::Fixed(s.fs))
                .cluster(ClusterChoice::Bytes(s.cluster))
                .serial(NEW_SERIAL),
        )
        .table(TableChoice::Fixed(s.table))
        .sector_size(BS)
        .expect("a valid sector size")
}

/// Makes the template image of a scenario with an old file system and
/// returns where that file system is and what identifies it.
fn prepare(s: &Scenario, tpl: &Path) -> Option<OldFs> {
    let size = s.size;
    let (offset, len) = match s.old {
        Old::Fresh => return None,
        Old::Ours(args) => {
            let size_s = mkfs_alloc_tests::size_arg(size);
            let tpl_s = tpl.to_string_lossy().into_owned();
            let mut all: Vec<&str> = args.to_vec();
            all.extend([
                "--size", &size_s, "--serial", OLD_SERIAL, "--json", "-q", &tpl_s,
            ]);
            let out = mkfs_alloc(&all);
            out.assert_success();
            let json = MkfsJson::parse(&out);
            (json.u64("partition_offset"), json.u64("volume_bytes"))
        }
        Old::MkfsExfat => {
            sparse_file(tpl, size);
            run(
                require_tool("mkfs.exfat"),
                &[Path::new("-c"), Path::new("16K"), tpl],
            )
            .assert_success();
            (0, size)
        }
        Old::MkfsFat => {
            sparse_file(tpl, size);
            let tpl_s = tpl.to_string_lossy().into_owned();
            run(
                require_tool("mkfs.fat"),
                &["-F", "32", "-s", "2", "-i", OLD_FAT_ID, &tpl_s],
            )
            .assert_success();
            (0, size)
        }
    };
    let p = blkid_probe(tpl, offset);
    let kind = p
        .fs_type
        .as_deref()
        .and_then(Fsck::from_blkid)
        .unwrap_or_else(|| {
            panic!(
                "{}: the old file system is not recognised:\n{}",
                s.name, p.raw
            )
        });
    let uuid = p.uuid.clone().expect("old file system has a UUID");
    assert_ne!(uuid, serial_uuid(NEW_SERIAL));
    let (clean, out) = with_volume(tpl, offset, len, |v| fsck_verdict(kind, v));
    assert!(
        clean,
        "{}: the old file system is not clean:\n{out}",
        s.name
    );
    Some(OldFs {
        offset,
        len,
        kind,
        uuid,
    })
}

/// One format run on `img` (a copy of `tpl`, or created fresh).
fn run_format(
    s: &Scenario,
    tpl: Option<&Path>,
    img: &Path,
    fault: Fault,
) -> (Result<(), FormatError>, u64, Vec<LogEntry>) {
    let _ = std::fs::remove_file(img);
    let dev = match tpl {
        None => ImageFile::create(img, s.size, BS),
        Some(t) => {
            sparse_copy(t, img);
            ImageFile::open(img, BS)
        }
    }
    .unwrap_or_else(|e| panic!("{}: cannot open the image: {e}", s.name));
    let mut dev = FaultyIo::new(Counting::new(dev, true), fault);
    let result = if s.rootdir {
        populated_format(s, &mut dev)
    } else {
        options(s)
            .plan_for(&dev)
            .and_then(|mut plan| plan.format(&mut dev))
            .map(|_| ())
    };
    let ops = dev.ops_seen();
    let log = dev.inner().log().to_vec();
    drop(dev);
    (result, ops, log)
}

/// A small tree: nested directories, a long name, an empty file and a file
/// of several clusters.
fn small_tree() -> Tree {
    let mut t = Tree::new();
    let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    let len = big.len() as u64;
    t.add_file(
        "/docs/A long file name.txt",
        std::io::Cursor::new(big),
        len,
        when,
    )
    .expect("add");
    t.add_file("/README.TXT", &b"hello\n"[..], 6, when)
        .expect("add");
    t.add_file("/docs/deep/empty", std::io::empty(), 0, when)
        .expect("add");
    t
}

/// The facade's populated format: plan, plan the tree, probe, write.
fn populated_format<D: mkfs_alloc::blockio::BlockIo>(
    s: &Scenario,
    dev: &mut D,
) -> Result<(), FormatError> {
    let plan = options(s).plan_for(dev)?;
    let mut populated = plan
        .populate(small_tree(), TimePolicy::default())
        .unwrap_or_else(|e| panic!("{}: the tree does not fit: {e}", s.name));
    let found = Found::probe(dev)?;
    populated
        .format_with(dev, mkfs_alloc::Writing::new().found(&found))
        .map(|_| ())
}

/// The I/O error inside a `FormatError`, whichever layer reported it.
fn io_error(e: &FormatError) -> Option<&IoError> {
    match e {
        FormatError::Io(io)
        | FormatError::Write(WriteError::Io(io))
        | FormatError::Partition(PartitionError::Io(io)) => Some(io),
        _ => None,
    }
}

/// Checks the error of a run interrupted at operation `k`.
fn check_error(s: &Scenario, fault: Fault, k: u64, e: &FormatError, log: &[LogEntry]) {
    let ctx = format!("{} {fault:?}", s.name);
    assert!(!e.is_invalid_input(), "{ctx}: not an I/O error: {e}");
    let io = io_error(e).unwrap_or_else(|| panic!("{ctx}: no IoError inside: {e:?}"));
    let inj = injected_fault(io).unwrap_or_else(|| panic!("{ctx}: not the injected fault: {e}"));
    assert_eq!((inj.fault, inj.ops_before), (fault, k), "{ctx}: {e}");
    let (op, lba, _) = log[usize::try_from(k).expect("k fits")];
    let offset = if op == IoOp::Flush {
        0
    } else {
        lba * u64::from(BS)
    };
    assert_eq!((io.op, io.offset), (op, offset), "{ctx}: {e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("at byte offset {offset} ")),
        "{ctx}: the message does not name the failing offset {offset}: {msg}"
    );
}

/// The new file system at the volume start, complete and consistent?
fn check_new(s: &Scenario, plan: &MediumPlan, img: &Path, ctx: &str) {
    let off = plan.table().partition_start();
    let len = plan.layout().volume_bytes();
    let (clean, out) = with_volume(img, off, len, |v| fsck_verdict(Fsck::from(s.fs), v));
    assert!(
        clean,
        "{ctx}: MOUNTABLE BUT INCONSISTENT: blkid sees the new file system, fsck rejects it:\n{out}"
    );
    let (cluster, serial) = match s.fs {
        FsKind::Exfat => {
            let b = ExfatBoot::read(img, off);
            assert_eq!(b.bytes_per_sector(), u64::from(BS), "{ctx}");
            (b.cluster_size(), b.serial)
        }
        _ => {
            let b = Fat32Boot::read(img, off);
            assert_eq!(u32::from(b.bytes_per_sector), BS, "{ctx}");
            (b.cluster_size(), b.serial())
        }
    };
    assert_eq!(
        (cluster, serial),
        (s.cluster, NEW_SERIAL),
        "{ctx}: boot fields"
    );
}

/// Classifies the image after a run that passed exactly `k` operations.
///
/// - `New`: blkid sees the new serial at the volume start, fsck is clean,
///   the boot sector has the new cluster size.
/// - `Old`: the old file system is recognisable at its own offset and still
///   consistent; an old partition at another offset than the new volume
///   counts only while a partition table still points at it.
/// - `Blank`: no file system at the volume start, every fsck refuses it,
///   the old serial is nowhere tools look.
///
/// Anything else (a file system fsck rejects, an unknown one, a table that
/// points at an incomplete volume) fails the test.
fn classify(
    s: &Scenario,
    plan: &MediumPlan,
    old: Option<&OldFs>,
    img: &Path,
    ctx: &str,
    tally: &mut Tally,
) -> State {
    let off = plan.table().partition_start();
    let len = plan.layout().volume_bytes();
    let new_kind = Fsck::from(s.fs);
    let new_uuid = serial_uuid(NEW_SERIAL);
    let at_volume = blkid_probe(img, off);
    let whole = if off == 0 {
        at_volume.clone()
    } else {
        blkid_probe(img, 0)
    };
    let is_old = |p: &Probe| {
        old.is_some_and(|o| {
            p.fs_type.as_deref() == Some(o.kind.blkid_type()) && p.uuid.as_deref() == Some(&o.uuid)
        })
    };
    let is_new = |p: &Probe| {
        p.fs_type.as_deref() == Some(new_kind.blkid_type()) && p.uuid.as_deref() == Some(&new_uuid)
    };
    // The old file system at its own offset, and whether anything points
    // at it (offset 0 needs no table).
    let old_here = old.filter(|o| {
        let p = if o.offset == off {
            at_volume.clone()
        } else if o.offset == 0 {
            whole.clone()
        } else {
            blkid_probe(img, o.offset)
        };
        is_old(&p)
    });
    let referenced = |o: &OldFs| o.offset == 0 || o.offset == off || whole.pttype.is_some();
    let state = if is_new(&at_volume) {
        check_new(s, plan, img, ctx);
        assert!(
            old_here.is_none(),
            "{ctx}: the old file system survived a complete format"
        );
        State::New
    } else if let Some(o) = old_here.filter(|o| referenced(o)) {
        let (clean, out) = with_volume(img, o.offset, o.len, |v| fsck_verdict(o.kind, v));
        assert!(
            clean,
            "{ctx}: the OLD file system is recognisable but damaged:\n{out}"
        );
        State::Old
    } else if at_volume.fs_type.is_some() {
        panic!(
            "{ctx}: blkid sees a file system that is neither the new one nor the intact old one:\n{}",
            at_volume.raw
        );
    } else {
        // (a): nothing there, and every fsck refuses the volume.
        let mut kinds = vec![new_kind];
        if let Some(o) = old {
            if o.kind != new_kind {
                kinds.push(o.kind);
            }
        }
        for kind in kinds {
            let (clean, out) = with_volume(img, off, len, |v| fsck_verdict(kind, v));
            assert!(
                !clean && !out.success(),
                "{ctx}: blkid finds nothing, yet fsck accepts the volume:\n{out}"
            );
        }
        if let Some(o) = old {
            assert!(
                !is_old(&whole) && !is_old(&at_volume),
                "{ctx}: old serial {} still visible",
                o.uuid
            );
        }
        if old_here.is_some() {
            tally.old_elsewhere += 1;
        }
        State::Blank
    };
    // What offset 0 of a partitioned image shows: a partition table only
    // while the old file system is intact or once the new one is complete
    // (the table is written last), and no file system but the old one.
    if off != 0 {
        if let Some(pt) = whole.pttype.as_deref() {
            assert!(
                pt == "dos" && state != State::Blank,
                "{ctx}: partition table {pt:?} visible, but the volume is {state:?}:\n{}",
                whole.raw
            );
        }
        assert!(
            whole.fs_type.is_none() || (is_old(&whole) && state == State::Old),
            "{ctx}: a file system at offset 0 of a partitioned image ({state:?}):\n{}",
            whole.raw
        );
    }
    match state {
        State::Old => tally.old += 1,
        State::Blank => tally.blank += 1,
        State::New => tally.new += 1,
    }
    state
}

fn scenario(s: Scenario) -> Tally {
    let started = Instant::now();
    let tmp = TempDir::new(&format!("crash-{}", s.name));
    let tpl = tmp.join("template.img");
    let img = tmp.join("run.img");
    let old = prepare(&s, &tpl);
    let tpl_ref: Option<PathBuf> = old.as_ref().map(|_| tpl.clone());
    let plan = options(&s).plan(s.size, BS).expect("valid scenario");

    // Count the operations, and log them.
    let (result, n, log) = run_format(&s, tpl_ref.as_deref(), &img, Fault::Never);
    result.unwrap_or_else(|e| panic!("{}: the uninterrupted format fails: {e}", s.name));
    assert_eq!(n as usize, log.len());
    assert!(n >= 5, "{}: only {n} operations?", s.name);
    let first_flush = log
        .iter()
        .position(|e| e.0 == IoOp::Flush)
        .expect("the format flushes") as u64;

    let mut tally = Tally::default();
    for fault_kind in ["FailAfter", "StopAfter"] {
        let mut states = Vec::new();
        for k in 0..=n {
            let fault = if fault_kind == "FailAfter" {
                Fault::FailAfter(k)
            } else {
                Fault::StopAfter(k)
            };
            let ctx = format!("{}: {fault:?} of {n} ops", s.name);
            let (result, _, passed) = run_format(&s, tpl_ref.as_deref(), &img, fault);
            assert_eq!(
                passed.as_slice(),
                &log[..usize::try_from(k).expect("fits")],
                "{ctx}: the run is not deterministic"
            );
            match &result {
                Ok(()) => assert_eq!(k, n, "{ctx}: succeeded although op {k} failed"),
                Err(e) => {
                    assert!(k < n, "{ctx}: failed without a fault: {e}");
                    check_error(&s, fault, k, e, &log);
                }
            }
            let state = classify(&s, &plan, old.as_ref(), &img, &ctx, &mut tally);
            if state == State::Old {
                assert!(
                    k <= first_flush,
                    "{ctx}: the old file system is still there after the first flush (op {first_flush})"
                );
            }
            tally.runs += 1;
            states.push(state);
        }
        // Old* Blank* New*, ending with New.
        assert!(
            states.windows(2).all(|w| w[0] <= w[1]),
            "{}: {fault_kind}: states go backwards: {states:?}",
            s.name
        );
        assert_eq!(states.last(), Some(&State::New), "{}", s.name);
        if old.is_some() {
            assert_eq!(states.first(), Some(&State::Old), "{}: k=0", s.name);
        }
        tally.ks += states.len();
    }
    eprintln!(
        "{}: N = {n} ops, {} runs: {} old (intact), {} no file system, {} new (complete); \
         {} with the old volume unreferenced at another offset; {:.1} s",
        s.name,
        tally.runs,
        tally.old,
        tally.blank,
        tally.new,
        tally.old_elsewhere,
        started.elapsed().as_secs_f64()
    );
    tally
}
