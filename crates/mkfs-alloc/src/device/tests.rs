//! The steps' order and refusals on image files, with a front end that
//! records what it is asked (the probe is its: no test blocks written).

use std::path::PathBuf;
use std::sync::Mutex;

use mkfs_alloc_capacity::{Mode, ProbeReport, Verdict as ProbeVerdict};

use super::{DeviceTarget, Front, Plain, StepFailure, Steps, Target};
use crate::batch::{BatchPlan, Event, Outcome, RunOptions, Stage, TargetError, Verdict};
use crate::layout::{FsKind, Timestamp};
use crate::MediumOptions;

const SIZE: u64 = 64 << 20;

/// A directory of its own, removed after the test.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("mkfs-alloc-device-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A probe that finds `real` bytes of `announced`.
fn report(announced: u64, real: u64) -> ProbeReport {
    ProbeReport {
        verdict: if real < announced {
            ProbeVerdict::Limbo
        } else {
            ProbeVerdict::Genuine
        },
        mode: Mode::Sampling,
        announced_bytes: announced,
        real_bytes: real,
        wrap_bytes: None,
        cache_bytes: None,
        cache_search_limit_bytes: 0,
        unit_bytes: 4096,
        bytes_written: 0,
        bytes_read: 0,
        bytes_restored: None,
        bad_bytes: None,
        resets: 0,
        rounds: 0,
        first_error: None,
        speeds: None,
        seconds: 0.0,
    }
}

/// A front end that finds `real` bytes and records the calls.
struct Recording {
    real: u64,
    calls: Vec<&'static str>,
}

impl Front for Recording {
    fn probe(&mut self, target: &Target) -> Result<ProbeReport, TargetError> {
        self.calls.push("probe");
        Ok(report(target.size_bytes(), self.real))
    }

    fn fail(&mut self, _target: &Target, failure: StepFailure) -> TargetError {
        self.calls.push("fail");
        failure.into()
    }
}

/// Formats `target` as a batch of one; the outcome and the stages seen.
fn run<F: Front>(t: &mut DeviceTarget<'_, F>) -> (Outcome, Vec<Stage>) {
    let opts = MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(32 << 10)
        .pinned(0x1234_ABCD, Timestamp { secs: 0, nanos: 0 });
    let plan = opts.plan(SIZE, 512).expect("plan");
    let mut batch = BatchPlan::one("t", plan);
    let stages = Mutex::new(Vec::new());
    let record = |e: Event| {
        let mut s = stages.lock().expect("lock");
        if s.last() != Some(&e.stage) {
            s.push(e.stage);
        }
    };
    let mut report = batch.run(vec![t], &RunOptions::new(), &record);
    let outcome = report.outcomes.pop().expect("one outcome");
    (outcome, stages.into_inner().expect("stages"))
}

fn position(stages: &[Stage], s: Stage) -> usize {
    stages
        .iter()
        .position(|x| *x == s)
        .unwrap_or_else(|| panic!("{s:?} not in {stages:?}"))
}

#[test]
fn the_probe_comes_before_the_zeroing_and_the_zeroing_before_the_write() {
    let dir = Dir::new("order");
    let path = dir.0.join("a.img");
    let target = Target::inspect(&path, Some(SIZE), None, false).expect("inspect");
    let steps = Steps {
        probe: true,
        full: true,
        ..Steps::default()
    };
    let front = Recording {
        real: SIZE,
        calls: Vec::new(),
    };
    let mut t = DeviceTarget::new(Some(&target), steps, true, front)
        .notes(vec!["first".into()], vec!["after the probe".into()]);
    let (outcome, stages) = run(&mut t);
    assert_eq!(outcome.verdict, Verdict::Ok, "{:?}", outcome.error);
    let probing = position(&stages, Stage::Probing);
    let zeroing = position(&stages, Stage::Zeroing);
    let writing = position(&stages, Stage::Writing);
    assert!(probing < zeroing && zeroing < writing, "{stages:?}");
    assert_eq!(t.front_mut().calls, ["probe"]);
    assert!(t.wrote() && t.formatting());
    // An image has no partition re-read, whatever the table.
    assert_eq!(
        outcome.notes,
        [
            "first",
            "probed first: genuine: 64 MiB announced, all of it real",
            "after the probe",
            "full format: zeroed the whole medium",
        ]
    );
}

#[test]
fn without_the_steps_only_the_format_writes() {
    let dir = Dir::new("plain");
    let path = dir.0.join("a.img");
    let target = Target::inspect(&path, Some(SIZE), None, false).expect("inspect");
    let mut t = DeviceTarget::new(Some(&target), Steps::default(), false, Plain);
    let (outcome, stages) = run(&mut t);
    assert_eq!(outcome.verdict, Verdict::Ok, "{:?}", outcome.error);
    assert!(!stages.contains(&Stage::Probing) && !stages.contains(&Stage::Zeroing));
    assert!(!t.wrote() && t.formatting());
    assert!(outcome.notes.is_empty(), "{:?}", outcome.notes);
}

#[test]
fn a_fake_is_refused_before_any_write_and_its_bytes_stay() {
    let dir = Dir::new("fake");
    let path = dir.0.join("a.img");
    let old: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &old).expect("old bytes");
    let target = Target::inspect(&path, None, None, false).expect("inspect");
    let steps = Steps {
        probe: true,
        full: true,
        ..Steps::default()
    };
    let front = Recording {
        real: SIZE / 4,
        calls: Vec::new(),
    };
    let held = super::open_checked(&target, false).expect("open");
    let mut t = DeviceTarget::new(Some(&target), steps, false, front)
        .held(Some(held))
        .single();
    let (outcome, stages) = run(&mut t);
    assert_eq!(outcome.verdict, Verdict::Fake);
    assert!(!stages.contains(&Stage::Zeroing) && !stages.contains(&Stage::Writing));
    assert_eq!(t.front_mut().calls, ["probe", "fail"]);
    let text = outcome.error.map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        text,
        "the probe found it limbo: 64 MiB announced, 16 MiB real (16777216 bytes); not formatted"
    );
    assert!(!t.formatting());
    assert!(
        std::fs::read(&path).expect("read") == old,
        "the fake's bytes changed"
    );
}

#[test]
fn a_target_refused_before_the_run_is_never_opened() {
    let dir = Dir::new("refused");
    let path = dir.0.join("a.img");
    let target = Target::inspect(&path, Some(SIZE), None, false).expect("inspect");
    let steps = Steps {
        probe: true,
        ..Steps::default()
    };
    let front = Recording {
        real: SIZE,
        calls: Vec::new(),
    };
    let mut t =
        DeviceTarget::new(Some(&target), steps, false, front).refused(Some("in use".into()));
    let (outcome, _) = run(&mut t);
    assert_eq!(outcome.verdict, Verdict::Refused);
    assert_eq!(
        outcome.error.map(|e| e.to_string()).as_deref(),
        Some("in use")
    );
    assert!(t.front_mut().calls.is_empty());
    assert!(!path.exists(), "a refused image was created");
}

#[test]
fn a_target_inside_the_tree_is_found_by_inode_and_one_outside_is_not() {
    use crate::populate::Tree;
    let d = Dir::new("inside");
    let tree_dir = d.0.join("tree");
    std::fs::create_dir_all(tree_dir.join("sub")).expect("dir");
    std::fs::write(tree_dir.join("sub/a.img"), b"x").expect("file");
    std::fs::hard_link(tree_dir.join("sub/a.img"), d.0.join("link.img")).expect("link");
    let tree = Tree::from_dir(&tree_dir).expect("tree");
    // The file, a hard link of it outside the tree, and a new image in a
    // directory of the tree are inside; a new one beside the tree is not.
    for target in [
        tree_dir.join("sub/a.img"),
        d.0.join("link.img"),
        tree_dir.join("sub/new.img"),
    ] {
        let inside = super::target_inside(&tree, &target).expect("inside");
        assert_eq!(inside.backing, None, "{}", target.display());
    }
    assert_eq!(super::target_inside(&tree, &d.0.join("beside.img")), None);
}
