//! Power cuts on a block device, the black box: the CLI formats a loop
//! device (`losetup --direct-io=on`) over `powercut.py`'s FUSE file, whose
//! writes stay in a volatile cache until an fsync (the loop device's flush)
//! writes them through. At a cut point the power goes: a seeded subset of
//! the unflushed 512-byte blocks reaches the image, every later I/O fails.
//! The same command then runs again on the surviving image, served uncut;
//! the result must be fsck-clean and byte-identical to an uncut run
//! (pinned: `--serial` and `SOURCE_DATE_EPOCH`). Before the rerun, a volume
//! that blkid finds where a reader looks must be fsck-clean.
//!
//! Tool tier: root, FUSE, fusepy, losetup, blkid, fsck.

use mkfs_alloc_blockio::powercut::sweep::cut_points;
use mkfs_alloc_tests::check::{blkid_probe, fsck_verdict, with_volume, Fsck};
use mkfs_alloc_tests::powercut::{CutStats, PowerCutDisk};
use mkfs_alloc_tests::{mkfs_alloc, require_root, require_tool, CmdOutput, MkfsJson, TempDir, MIB};
use mkfs_alloc_testsupport::sparse_file;
use std::path::Path;
use std::time::Instant;

/// One pinned command under power cuts.
struct Case {
    name: &'static str,
    fs: &'static str,
    cluster: &'static str,
    table: &'static str,
    size: u64,
    kind: Fsck,
}

/// Evenly spread cut points before those around the fsyncs are added.
const SPREAD: usize = 12;

/// The command of every run (the same each time).
fn format(c: &Case, dev: &Path) -> CmdOutput {
    let dev = dev.to_string_lossy().into_owned();
    mkfs_alloc(&[
        "--fs",
        c.fs,
        "--cluster",
        c.cluster,
        "--table",
        c.table,
        "--serial",
        "5AFE-0001",
        "--yes",
        "--json",
        "-q",
        &dev,
    ])
}

/// Where readers look for the volume: blkid finds it there, and with a
/// table, the table is there to point at it.
fn reachable(c: &Case, img: &Path, offset: u64) -> bool {
    let at_volume = blkid_probe(img, offset);
    let table_ok = c.table == "none" || blkid_probe(img, 0).pttype.is_some();
    at_volume.fs_type.is_some() && table_ok
}

fn sweep(c: &Case) {
    require_root();
    let fsck = match c.kind {
        Fsck::Exfat => "fsck.exfat",
        Fsck::Fat => "fsck.fat",
    };
    for tool in ["losetup", "blkid", fsck] {
        require_tool(tool);
    }
    let started = Instant::now();
    let tmp = TempDir::new(&format!("powercut-{}", c.name));
    let mnt = tmp.subdir("mnt");
    let reference = tmp.join("reference.img");

    // The uncut run: the reference image, the operation count, and proof
    // that the loop device's flushes reach the FUSE process.
    sparse_file(&reference, c.size);
    let disk = PowerCutDisk::serve(&mnt, &reference, None, 0);
    let out = format(c, disk.path());
    out.assert_success();
    let json = MkfsJson::parse(&out);
    let (offset, len) = (json.u64("partition_offset"), json.u64("volume_bytes"));
    let uncut: CutStats = disk.remove();
    assert!(
        uncut.fsyncs > 0,
        "{}: no fsync reached the FUSE process: {uncut:?}",
        c.name
    );
    assert!(uncut.writes > 0 && !uncut.cut, "{}: {uncut:?}", c.name);
    let (clean, fsck) = with_volume(&reference, offset, len, |v| fsck_verdict(c.kind, v));
    assert!(clean, "{}: the uncut run is not clean:\n{fsck}", c.name);
    let reference_bytes = std::fs::read(&reference).expect("read the reference");

    let points = cut_points(uncut.ops, &uncut.fsync_ops, SPREAD);
    let (mut failed_runs, mut intact_before, mut kept, mut dropped) = (0, 0, 0, 0);
    for &k in &points {
        let ctx = format!("{}: cut at op {k} of {}", c.name, uncut.ops);
        let img = tmp.join("cut.img");
        let _ = std::fs::remove_file(&img);
        sparse_file(&img, c.size);

        let disk = PowerCutDisk::serve(&mnt, &img, Some(k), k);
        let out = format(c, disk.path());
        let at_exit = disk.stats();
        assert!(
            !(at_exit.cut && out.success()),
            "{ctx}: the CLI reports success although the power went during its run:\n{out}"
        );
        if !out.success() {
            failed_runs += 1;
        }
        let cut = disk.remove();
        kept += cut.kept;
        dropped += cut.dropped;

        if reachable(c, &img, offset) {
            let (clean, fsck) = with_volume(&img, offset, len, |v| fsck_verdict(c.kind, v));
            assert!(
                clean,
                "{ctx}: MOUNTABLE BUT DAMAGED before the rerun:\n{fsck}"
            );
            intact_before += 1;
        }

        let disk = PowerCutDisk::serve(&mnt, &img, None, 0);
        let out = format(c, disk.path());
        assert!(out.success(), "{ctx}: the rerun fails:\n{out}");
        let rerun = disk.remove();
        assert!(!rerun.cut, "{ctx}");
        let (clean, fsck) = with_volume(&img, offset, len, |v| fsck_verdict(c.kind, v));
        assert!(clean, "{ctx}: not clean after the rerun:\n{fsck}");
        let bytes = std::fs::read(&img).expect("read the image");
        if bytes != reference_bytes {
            let diff = bytes.iter().zip(&reference_bytes).position(|(a, b)| a != b);
            panic!(
                "{ctx}: the rerun differs from the uncut run at byte {diff:?} ({} vs {} bytes)",
                bytes.len(),
                reference_bytes.len()
            );
        }
    }
    eprintln!(
        "{}: {} ops ({} writes, {} fsyncs at {:?}); {} cut points (one seed each): the cut run \
         failed in {}, {} already mountable and clean before the rerun, all {} identical to \
         the uncut run after it; {kept} unflushed blocks kept, {dropped} lost; {:.1} s",
        c.name,
        uncut.ops,
        uncut.writes,
        uncut.fsyncs,
        uncut.fsync_ops,
        points.len(),
        failed_runs,
        intact_before,
        points.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn cli_exfat_survives_power_cuts_on_a_device() {
    sweep(&Case {
        name: "exfat-none",
        fs: "exfat",
        cluster: "4K",
        table: "none",
        size: 64 * MIB,
        kind: Fsck::Exfat,
    });
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn cli_fat32_mbr_survives_power_cuts_on_a_device() {
    sweep(&Case {
        name: "fat32-mbr",
        fs: "fat32",
        cluster: "1K",
        table: "mbr",
        size: 96 * MIB,
        kind: Fsck::Fat,
    });
}
