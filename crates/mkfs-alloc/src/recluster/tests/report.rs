//! The plan's report (`report.rs`): the keys a machine reader sees, their
//! figures the plan's own, and the larger size's object only for a larger
//! size.

use super::*;
use crate::recluster::report::JobReport;
use serde_json::Value;

fn report(disk: &mut MemDisk, cluster: u64) -> (Job, Value) {
    let job = plan(disk, cluster).unwrap();
    let v = serde_json::to_value(JobReport::new(&job, None, Some("mounted"))).unwrap();
    (job, v)
}

#[test]
fn a_smaller_size_reports_the_plans_figures() {
    let (job, v) = report(&mut image(SIZE, OLD), 4096);
    let p = job.plan.as_ref().unwrap();
    assert_eq!(v["step"], "start");
    assert_eq!(v["auto"], Value::Null);
    assert_eq!(v["would_refuse"], "mounted");
    let r = &v["plan"];
    assert_eq!(r["old"]["cluster_size"], OLD);
    assert_eq!(r["new"]["cluster_size"], 4096);
    assert_eq!(r["new"]["fat_offset"], p.new.fat_offset);
    assert_eq!(r["unused_old_fat"]["bytes"], p.gap.1);
    assert_eq!(r["bitmap"]["first_cluster"], p.bitmap.0);
    assert_eq!(r["directories_copied"], 6);
    assert_eq!(r["bytes_written"], p.bytes_written);
    assert_eq!(r["space_gained"], i64::try_from(p.space_gained()).unwrap());
    assert_eq!(r["estimated_seconds"], p.estimate_stick_seconds());
    assert!(p.estimate_stick_seconds() > 7.0 * 0.05);
    // exFAT, nothing to evacuate, not larger: null, null, absent.
    assert_eq!(r["fat"], Value::Null);
    assert_eq!(r["evacuation"], Value::Null);
    assert!(r.get("larger").is_none());
}

#[test]
fn a_larger_size_reports_its_groups_and_nothing_reports_no_plan() {
    let mut disk = image(SIZE, 4096);
    let (job, v) = report(&mut disk, 32 << 10);
    let c = job.plan.as_ref().and_then(|p| p.coarse.clone()).unwrap();
    let l = &v["plan"]["larger"];
    assert_eq!(l["old_clusters_per_new"], 8);
    assert_eq!(l["files_kept"], c.files_kept);
    assert_eq!(l["free_in_whole_new_clusters"], c.free_groups);
    run(&mut disk, &job).unwrap();
    let (_, v) = report(&mut disk, 32 << 10);
    assert_eq!(v["step"], "nothing");
    assert_eq!(v["plan"], Value::Null);
}

/// Bytes written per flush by a real run.
struct PerFlush<'a> {
    inner: &'a mut MemDisk,
    stages: Vec<u64>,
    stage: u64,
}

impl BlockIo for PerFlush<'_> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }
    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), mkfs_alloc_blockio::IoError> {
        self.inner.read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), mkfs_alloc_blockio::IoError> {
        self.stage += src.len() as u64;
        self.inner.write_blocks(lba, src)
    }
    fn write_zeroes(&mut self, lba: u64, n: u64) -> Result<(), mkfs_alloc_blockio::IoError> {
        self.stage += n * u64::from(self.inner.block_size());
        self.inner.write_zeroes(lba, n)
    }
    fn flush(&mut self) -> Result<(), mkfs_alloc_blockio::IoError> {
        self.stages.push(std::mem::take(&mut self.stage));
        self.inner.flush()
    }
}

#[test]
fn the_flush_stages_are_the_runs_and_leave_the_medium_unchanged() {
    for (from, cluster) in [(OLD, 4096), (4096, 32 << 10)] {
        let mut disk = image(SIZE, from);
        let job = plan(&mut disk, cluster).unwrap();
        let before = read(&disk, 0, SIZE as usize);
        let stages = flush_stages(&mut disk, &job).unwrap().unwrap();
        assert_eq!(
            read(&disk, 0, SIZE as usize),
            before,
            "the overlay wrote through"
        );
        let mut counted = PerFlush {
            inner: &mut disk,
            stages: Vec::new(),
            stage: 0,
        };
        run(&mut counted, &job).unwrap();
        assert_eq!(counted.stage, 0, "a write after the last flush");
        assert_eq!(stages, counted.stages);
        // The smaller size's seven: record, dirty flag, metadata, backup
        // region, main region, flag cleared, record cleared.
        if cluster == 4096 {
            assert_eq!(stages.len(), 7, "{stages:?}");
        }
        assert!(
            stages.iter().all(|&b| b > 0),
            "a flush with nothing written: {stages:?}"
        );
        let v = serde_json::to_value(
            JobReport::new(&job, None, None).with_flush_stages(Some(stages.clone())),
        )
        .unwrap();
        assert_eq!(v["flush_stages"], serde_json::json!(stages));
        check_files(&disk, from as usize).unwrap();
    }
}
