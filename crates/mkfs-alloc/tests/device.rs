//! The steps around the format on a raw device (a loop device, as root):
//! the discard, the limit to a planned size smaller than the device with
//! its old backup GPT header zeroed, the kernel's re-read only with a
//! table, and a planned size beyond the device refused before any write.

use std::sync::Mutex;

use mkfs_alloc::batch::{BatchPlan, Outcome, RunOptions, Stage, Verdict};
use mkfs_alloc::device::{DeviceTarget, Discard, Plain, Steps, Target};
use mkfs_alloc::layout::{FsKind, Timestamp};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::MediumOptions;
use mkfs_alloc_testsupport::TempDir;
use mkfs_alloc_testsupport::{LoopDevice, LoopOptions};

const MIB: u64 = 1 << 20;

fn format(target: &Target, table: TableKind, full: bool) -> (Outcome, Vec<Stage>) {
    let plan = MediumOptions::new()
        .fs(FsKind::Exfat)
        .table(table)
        .pinned(0x1234_ABCD, Timestamp { secs: 0, nanos: 0 })
        .plan(target.size_bytes(), 512)
        .expect("plan");
    let steps = Steps {
        discard: Discard::Always,
        full,
        ..Steps::default()
    };
    let mut t = DeviceTarget::new(Some(target), steps, table != TableKind::None, Plain);
    let stages = Mutex::new(Vec::new());
    let mut report = BatchPlan::one("loop", plan).run(vec![&mut t], &RunOptions::new(), &|e| {
        let mut s = stages.lock().expect("lock");
        if s.last() != Some(&e.stage) {
            s.push(e.stage);
        }
    });
    let outcome = report.outcomes.pop().expect("one outcome");
    assert_eq!(outcome.verdict, Verdict::Ok, "{:?}", outcome.error);
    (outcome, stages.into_inner().expect("stages"))
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn device_steps_discard_limit_and_reread_only_with_a_table() {
    let dir = TempDir::new("mkfs-alloc-device-steps");
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .and_then(|f| f.set_len(64 * MIB))
        .expect("image");
    // Partition scanning on: the kernel re-reads a loop device's table
    // only then.
    let scan = LoopOptions {
        partscan: true,
        ..LoopOptions::default()
    };
    let dev = LoopDevice::attach_with(&image, scan);

    // The whole device with a GPT: discarded before the zeroing, which
    // comes before the write; the kernel re-reads the table last.
    let whole = Target::inspect(dev.path(), None, None, false).expect("inspect");
    let (outcome, stages) = format(&whole, TableKind::Gpt, true);
    let at = |s| stages.iter().position(|x| *x == s).expect("stage");
    assert!(at(Stage::Zeroing) < at(Stage::Writing), "{stages:?}");
    assert_eq!(
        outcome.notes,
        [
            "discarded (TRIM) the whole device before writing",
            "full format: zeroed the whole medium",
            "the kernel re-read the partition table",
        ]
    );
    drop(whole);

    // Its first 32 MiB, no table: the old backup GPT header (the device's
    // last sector) zeroed, only that part discarded, no re-read.
    let part = Target::inspect(dev.path(), Some(32 * MIB), None, false).expect("inspect");
    let (outcome, _) = format(&part, TableKind::None, false);
    assert_eq!(
        outcome.notes,
        [
            format!(
                "zeroed the old backup GPT header at byte {}, beyond the planned size (partitioning tools would offer to restore the old table from it)",
                64 * MIB - 512
            ),
            "discarded (TRIM) the first 32 MiB of the device before writing".to_string(),
        ]
    );
    drop(part);
    dev.flush();
    let before = std::fs::read(&image).expect("read");

    // A size beyond the device: refused when inspected, nothing written.
    let beyond = Target::inspect(dev.path(), Some(128 * MIB), None, false);
    assert!(beyond.is_err(), "a size beyond the device was accepted");
    dev.flush();
    assert!(
        std::fs::read(&image).expect("read") == before,
        "the refusal wrote"
    );
}
