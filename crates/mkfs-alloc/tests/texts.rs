//! The texts and the JSON a front end prints of a medium's report and of
//! the in-place plans: line for line what `mkfs-alloc info` and
//! `recluster --dry-run` print of the same volume (a 64 MiB exFAT image at
//! 4 KiB clusters, as `mkfs-alloc --size 64M --fs exfat --cluster 4K`
//! makes it).

use mkfs_alloc::blockio::MemDisk;
use mkfs_alloc::inspect::{medium_info, InspectOptions, MediumInfo};
use mkfs_alloc::layout::FsKind;
use mkfs_alloc::recluster;
use mkfs_alloc::MediumOptions;

/// The formatted image and its serial as `info` prints it.
fn exfat_64m() -> (MemDisk, String) {
    let mut disk = MemDisk::new(512, 64 * 2048).expect("disk");
    let mut plan = MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(4096)
        .plan_for(&disk)
        .expect("plan");
    plan.format(&mut disk).expect("format");
    let s = plan.layout().serial();
    (disk, format!("{:04X}-{:04X}", s >> 16, s & 0xFFFF))
}

fn info(disk: &mut MemDisk) -> MediumInfo {
    medium_info(disk, &InspectOptions::default()).expect("inspect")
}

#[test]
fn the_report_reads_as_info_prints_it() {
    let (mut disk, serial) = exfat_64m();
    let want = format!(
        "g.img: 64 MiB (67108864 bytes), partition table: none

volume 1 (whole medium, 64 MiB): exFAT
  label          (none)
  serial         {serial}
  cluster size   4 KiB
  sector size    512 B
  clusters       15,872
  size           64 MiB (67108864 bytes)
  used           16 KiB (0.0%)
  free           62.0 MiB (100.0%)
  partition      none (the volume spans the whole medium)
  FAT            at byte 1048576 (1 MiB), aligned to 1 MiB, 1 x 63 KiB
  data region    at byte 2097152 (2 MiB), aligned to 2 MiB
"
    );
    assert_eq!(info(&mut disk).text("g.img"), want);
}

#[test]
fn the_json_report_holds_the_report_findings_and_words() {
    let (mut disk, _) = exfat_64m();
    let info = info(&mut disk);
    let v = serde_json::to_value(info.json_report("g.img", None)).expect("json");
    let keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "block_size",
            "convert_unfinished",
            "layout",
            "medium_bytes",
            "partition_table",
            "recluster_unfinished",
            "resize_unfinished",
            "sd",
            "target",
            "volumes"
        ]
    );
    assert_eq!(v["layout"], "other");
    assert!(v["sd"].is_null());
    assert_eq!(v["target"], "g.img");
    let vol = &v["volumes"][0];
    assert_eq!(vol["findings"], serde_json::json!([]));
    assert_eq!(vol["findings_dropped"], 0);
    assert_eq!(vol["cluster_size"], 4096);
    assert_eq!(vol["used_bytes"], 16384);
    // The report's own fields, unchanged.
    let report = serde_json::to_value(&info.report).expect("report");
    for k in ["medium_bytes", "block_size", "partition_table"] {
        assert_eq!(v[k], report[k], "{k}");
    }
    let with_error = serde_json::to_value(info.json_report("g.img", Some("bad".into())));
    let with_error = with_error.expect("json");
    assert_eq!(with_error["error"], "bad");
    assert_eq!(with_error["exit_code"], 1);
}

#[test]
fn a_smaller_cluster_plan_reads_as_recluster_prints_it() {
    let (mut disk, _) = exfat_64m();
    let job = recluster::plan(&mut disk, 2048).expect("plan");
    let want = "g.img: re-cluster exFAT (start)
  cluster size   4 KiB -> 2 KiB (2 new clusters per old one)
  clusters       15872 -> 31744
  FAT            at byte 1048576 (63 KiB) -> at byte 1114112 (124.5 KiB); the old FAT's 63 KiB become unused
  cluster heap   at byte 2097152 (kept: no file data moves)
  bitmap         new, 3.9 KiB at cluster 10
  directories    1 copied (the root now at cluster 12)
  clusters moved 0
  files          0 (0 B), taking 0 B -> 0 B
  free           62.0 MiB -> 62.0 MiB (gained 4 KiB)
  I/O            reads 71 KiB, writes 145 KiB
  time           about 0.4 s on a stick that reads 20 MB/s and writes 5 MB/s
";
    assert_eq!(job.plan_text("g.img"), want);
}

#[test]
fn a_larger_cluster_plan_reads_as_recluster_prints_it() {
    let (mut disk, _) = exfat_64m();
    let job = recluster::plan(&mut disk, 16384).expect("plan");
    let want = "g.img: re-cluster exFAT (start)
  cluster size   4 KiB -> 16 KiB (4 old clusters per new one)
  clusters       15872 -> 3968
  FAT            at byte 1048576 (63 KiB) -> at byte 1114112 (16 KiB); the old FAT's 63 KiB become unused
  cluster heap   at byte 2097152 (kept; aligned to the new cluster size)
  bitmap         new, 496 B at cluster 3
  directories    1 copied (the root now at cluster 4)
  data           0 files keep their place, 0 copied first: 8 KiB (2 old clusters, the up-case table's included)
  files          0 (0 B), taking 0 B -> 0 B (slack 0 B -> 0 B)
  free           62.0 MiB -> 62.0 MiB (32 KiB less)
  I/O            reads 81 KiB, writes 70.5 KiB
  time           about 0.4 s on a stick that reads 20 MB/s and writes 5 MB/s
";
    assert_eq!(job.plan_text("g.img"), want);
    // Nothing to do: the one line of the step.
    let same = recluster::plan(&mut disk, 4096).expect("plan");
    assert_eq!(same.plan_text("g.img"), "g.img: nothing to do\n");
}
