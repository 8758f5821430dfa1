//! The plan's report (`report.rs`): the keys a machine reader sees, their
//! figures the plan's own, and the larger size's object only for a larger
//! size.

use super::*;
use crate::recluster::convert::NewCluster;
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

/// `disk` with `extra` zero bytes after it.
fn extended(disk: &MemDisk, extra: u64) -> MemDisk {
    let mut v = disk.as_bytes().to_vec();
    v.resize(v.len() + usize::try_from(extra).unwrap(), 0);
    MemDisk::from_vec(disk.block_size(), v).unwrap()
}

#[test]
fn a_resize_reports_its_grow_and_nothing_reports_no_grow() {
    let mut disk = extended(&image(SIZE, OLD), SIZE);
    let request = Request::Resize(NewSize::Max);
    assert_eq!(request.image_extended_to(&mut disk, SIZE, None), None);
    assert_eq!(
        Request::Resize(NewSize::Bytes(SIZE + 1)).image_extended_to(&mut disk, SIZE, None),
        Some(SIZE + 1)
    );
    let planned = request.plan(&mut disk).unwrap();
    let v = serde_json::to_value(planned.report(None)).unwrap();
    let Planned::Resize(job) = &planned else {
        panic!("not a resize")
    };
    let g = job.grow.as_ref().unwrap();
    assert_eq!(v["command"], "resize");
    assert_eq!(v["step"], "start");
    assert_eq!(v["would_refuse"], Value::Null);
    let r = &v["grow"];
    assert_eq!(r["fs"], "exfat");
    assert_eq!(r["volume_bytes"], serde_json::json!([SIZE, 2 * SIZE]));
    assert_eq!(r["cluster_count"][1], g.new.cluster_count);
    assert_eq!(r["bitmap"]["cluster"], g.bitmap.0);
    assert_eq!(r["root"]["clusters"], g.root_clusters);
    assert_eq!(r["free_bytes"][1], g.free_after);
    assert_eq!(r["bytes_written"], g.bytes_written);
    planned.run(&mut disk, &mut |_, _| {}).unwrap();
    let v = serde_json::to_value(request.plan(&mut disk).unwrap().report(Some("busy"))).unwrap();
    assert_eq!(v["step"], "nothing to do");
    assert_eq!(v["would_refuse"], "busy");
    assert!(v.get("grow").is_none());
}

#[test]
fn a_conversion_reports_its_figures_then_nulls_once_exfat() {
    let (mut disk, _) = super::fat::fat32((40 << 20) + (2 << 20), 512, 2, super::fat::Table::None);
    let planned = Request::ConvertToExfat(NewCluster::Keep)
        .plan(&mut disk)
        .unwrap();
    let v = serde_json::to_value(planned.report(None)).unwrap();
    let Planned::Convert(c) = &planned else {
        panic!("not a conversion")
    };
    let p = c.conversion.plan.as_ref().unwrap();
    assert_eq!(v["step"], "start");
    assert_eq!(v["cluster_size"], 512);
    assert_eq!(v["heap_offset"], p.exfat.heap_offset);
    assert_eq!(v["serial"], format!("{:08X}", p.serial));
    assert_eq!(v["partition_type"], Value::Null);
    assert_eq!(v["recluster"], Value::Null);
    assert_eq!(v["new_cluster_size"], Value::Null);
    assert_eq!(v["job_bytes_written"], p.bytes_written);
    assert!(!planned.reports_progress());
    planned.run(&mut disk, &mut |_, _| {}).unwrap();
    let again = Request::ConvertToExfat(NewCluster::Keep)
        .plan(&mut disk)
        .unwrap();
    assert!(again.is_done());
    let v = serde_json::to_value(again.report(None)).unwrap();
    assert_eq!(v["step"], "nothing to do");
    assert_eq!(v["files"], Value::Null);
    assert_eq!(v["serial"], Value::Null);
}

#[test]
fn medium_info_names_a_cut_recluster_until_it_is_run_again() {
    use crate::inspect::{medium_info, InspectOptions};
    use mkfs_alloc_blockio::PowerCutIo;
    let disk = image(SIZE, OLD);
    let opts = InspectOptions::default();
    let mut d = disk.clone();
    let info = medium_info(&mut d, &opts).unwrap();
    assert_eq!(info.unfinished, Unfinished::default());
    assert_eq!(info.findings.len(), info.report.volumes.len());
    assert!(info
        .findings
        .iter()
        .all(|f| f.findings.is_empty() && f.dropped == 0));
    assert!(info.sd.is_none());
    // Cut after the intent record and VolumeDirty are flushed.
    let mut cut = PowerCutIo::new(disk, 8, 1);
    assert!(recluster(&mut cut, 4096).is_err());
    let mut d = cut.into_surviving().unwrap();
    let info = medium_info(&mut d, &opts).unwrap();
    let v = serde_json::to_value(&info.unfinished).unwrap();
    assert_eq!(
        v["recluster_unfinished"],
        serde_json::json!([{"volume": 1, "cluster_size": 4096}])
    );
    assert_eq!(v["resize_unfinished"], serde_json::json!([]));
    assert_eq!(v["convert_unfinished"], serde_json::json!([]));
    recluster(&mut d, 4096).unwrap();
    assert_eq!(
        medium_info(&mut d, &opts).unwrap().unfinished,
        Unfinished::default()
    );
}

#[test]
fn a_shrink_reports_what_moves_and_the_image_length_it_leaves() {
    let mut disk = image(SIZE, OLD);
    let planned = Request::Resize(NewSize::Bytes(SIZE / 2))
        .plan(&mut disk)
        .expect("a shrink of a fresh image is planned");
    let v = serde_json::to_value(planned.report(None)).expect("json");
    assert_eq!(
        v["grow"]["volume_bytes"],
        serde_json::json!([SIZE, SIZE / 2])
    );
    assert!(v["grow"]["moved_clusters"].is_u64(), "{v:#}");
    assert!(v["grow"]["moved_bytes"].is_u64(), "{v:#}");
    assert!(v["grow"].get("partition").is_none(), "{v:#}");
    // The image held only the volume: cut to it; a longer file is not.
    assert_eq!(planned.image_cut_to(SIZE), Some(SIZE / 2));
    assert_eq!(planned.image_cut_to(SIZE + 512), None);
    let grow = Request::Resize(NewSize::Max)
        .plan(&mut extended(&disk, SIZE))
        .expect("a grow is planned");
    assert_eq!(grow.image_cut_to(2 * SIZE), None);
}

/// `planned`'s dry-run stages on `disk`, checked against the bytes its
/// real run writes between flushes (the medium untouched by the dry run)
/// and found under `flush_stages` in its report.
fn stages_match_the_run(disk: &mut MemDisk, planned: &Planned) -> Vec<u64> {
    let before = disk.as_bytes().to_vec();
    let stages = planned.flush_stages(disk).expect("simulated");
    assert_eq!(disk.as_bytes(), &before[..], "the overlay wrote through");
    let v =
        serde_json::to_value(planned.report(None).with_flush_stages(Some(stages.clone()))).unwrap();
    assert_eq!(v["flush_stages"], serde_json::json!(stages));
    let mut counted = PerFlush {
        inner: disk,
        stages: Vec::new(),
        stage: 0,
    };
    planned.run(&mut counted, &mut |_, _| {}).unwrap();
    assert_eq!(counted.stage, 0, "a write after the last flush");
    assert_eq!(stages, counted.stages);
    assert!(stages.iter().all(|&b| b > 0), "an empty stage: {stages:?}");
    stages
}

#[test]
fn a_resize_and_a_conversion_have_the_flush_stages_of_their_runs() {
    let mut disk = extended(&image(SIZE, OLD), SIZE);
    let planned = Request::Resize(NewSize::Max).plan(&mut disk).unwrap();
    let grow = stages_match_the_run(&mut disk, &planned);
    assert!(grow.len() >= 2, "{grow:?}");
    check_files(&disk, OLD as usize).unwrap();

    let (mut disk, _) = super::fat::fat32((40 << 20) + (2 << 20), 512, 2, super::fat::Table::None);
    let planned = Request::ConvertToExfat(NewCluster::Keep)
        .plan(&mut disk)
        .unwrap();
    let convert = stages_match_the_run(&mut disk, &planned);
    assert!(convert.len() >= 2, "{convert:?}");
    // Without a dry run the report has no such key.
    let v = serde_json::to_value(planned.report(None)).unwrap();
    assert!(v.get("flush_stages").is_none());
}
