//! The firmware path (`mkfs_alloc_layout::embedded`: no std, no allocator,
//! one sector of memory) against the std path (`mkfs_alloc::MediumOptions`,
//! what the CLI runs): the same options and pinned identity give the same
//! bytes on the whole medium, for every file system, with and without an
//! MBR, one or two FATs, 512- and 4096-byte sectors; and a refused option
//! writes nothing. `cargo xtask embedded` checks the same in QEMU with the
//! firmware itself.

use mkfs_alloc::blockio::MemDisk;
use mkfs_alloc::layout::PlanError;
use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsKind, Timestamp};
use mkfs_alloc::partition::TableKind;
use mkfs_alloc::MediumOptions;
use mkfs_alloc_layout::embedded::{format, Error, SectorDevice, Table};
use mkfs_alloc_tests::{spec_count_bounds, spec_count_range};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const TIME: Timestamp = Timestamp {
    secs: 1_700_000_000,
    nanos: 0,
};

/// A zeroed RAM disk that counts its writes.
struct Ram {
    data: Vec<u8>,
    sector: u32,
    writes: u64,
}

impl Ram {
    fn new(bytes: u64, sector: u32) -> Ram {
        Ram {
            data: vec![0; bytes as usize],
            sector,
            writes: 0,
        }
    }
}

impl SectorDevice for Ram {
    type Error = std::convert::Infallible;
    fn sector_size(&self) -> u32 {
        self.sector
    }
    fn sector_count(&mut self) -> Result<u64, Self::Error> {
        Ok(self.data.len() as u64 / u64::from(self.sector))
    }
    fn write_sector(&mut self, lba: u64, data: &[u8]) -> Result<(), Self::Error> {
        assert_eq!(data.len(), self.sector as usize, "one whole sector");
        let at = (lba * u64::from(self.sector)) as usize;
        self.data[at..at + data.len()].copy_from_slice(data);
        self.writes += 1;
        Ok(())
    }
}

/// The std path's options for `opts` with or without an MBR.
fn std_options(opts: &FormatOptions, table: Table, sector: u32) -> MediumOptions {
    let o = MediumOptions::new()
        .format(opts.clone())
        .sector_size(sector)
        .expect("a valid sector size");
    if table == Table::Mbr {
        o.table(TableKind::Mbr)
    } else {
        o
    }
}

/// The std path's image of `bytes` for `opts` with or without an MBR.
fn std_image(opts: &FormatOptions, table: Table, bytes: u64, sector: u32) -> Vec<u8> {
    let mut disk = MemDisk::new(sector, bytes / u64::from(sector)).expect("memory disk");
    let mut plan = std_options(opts, table, sector)
        .plan_for(&disk)
        .expect("the std path plans");
    plan.format(&mut disk).expect("the std path formats");
    disk.into_inner()
}

/// The firmware path's image, through a buffer of exactly one sector.
fn firmware_image(opts: &FormatOptions, table: Table, bytes: u64, sector: u32) -> Vec<u8> {
    let mut ram = Ram::new(bytes, sector);
    let mut buf = vec![0u8; sector as usize];
    format(&mut ram, &mut buf, opts, table).expect("the firmware path formats");
    ram.data
}

fn options(fs: FsKind, cluster: u64, serial: u32) -> FormatOptions {
    FormatOptions::new()
        .fs(fs)
        .cluster(ClusterChoice::Bytes(cluster))
        .label("CARD")
        .pinned(serial, TIME)
}

fn assert_same(what: &str, a: &[u8], b: &[u8]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    if a == b {
        return;
    }
    if let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) {
        panic!("{what}: the firmware's image differs from the std path's at byte {at}");
    }
}

#[test]
fn every_file_system_with_and_without_a_table() {
    let cases: &[(FsKind, u64, u64, u32)] = &[
        (FsKind::Exfat, 64 * MIB, 4096, 512),
        (FsKind::Exfat, 256 * MIB, 32 << 10, 512),
        (FsKind::Exfat, 128 * MIB, 32 << 10, 4096),
        (FsKind::Fat32, 64 * MIB, 512, 512),
        (FsKind::Fat32, 300 * MIB, 4096, 512),
        (FsKind::Fat32, 300 * MIB, 4096, 4096),
        (FsKind::Fat16, 32 * MIB, 2048, 512),
        (FsKind::Fat16, 64 * MIB, 4096, 4096),
        (FsKind::Fat12, 4 * MIB, 2048, 512),
        (FsKind::Fat12, 16 * MIB, 8192, 4096),
    ];
    for &(fs, bytes, cluster, sector) in cases {
        for table in [Table::None, Table::Mbr] {
            let opts = options(fs, cluster, 0x1234_ABCD);
            let what =
                format!("{fs} {cluster} B clusters, {bytes} B, {sector} B sectors, {table:?}");
            assert_same(
                &what,
                &firmware_image(&opts, table, bytes, sector),
                &std_image(&opts, table, bytes, sector),
            );
        }
    }
}

#[test]
fn fatfs_parameters_one_fat_root_entries_alignment() {
    // FatFs's n_fat = 1, n_root = 256, FM_SFD; and an align of 4 MiB.
    let one_fat = options(FsKind::Fat16, 2048, 7)
        .fats(1)
        .expect("1 FAT")
        .root_entries(256)
        .expect("256 entries");
    for table in [Table::None, Table::Mbr] {
        assert_same(
            "FAT16, one FAT, 256 root entries",
            &firmware_image(&one_fat, table, 32 * MIB, 512),
            &std_image(&one_fat, table, 32 * MIB, 512),
        );
    }
    let aligned = options(FsKind::Fat32, 2048, 9).align(4 * MIB);
    assert_same(
        "FAT32 aligned to 4 MiB",
        &firmware_image(&aligned, Table::Mbr, 256 * MIB, 512),
        &std_image(&aligned, Table::Mbr, 256 * MIB, 512),
    );
}

#[test]
fn the_sd_layout() {
    let opts = FormatOptions::new()
        .fs(FsKind::Fat16)
        .sd(true)
        .label("SDCARD")
        .pinned(0xC0FF_EE00, TIME);
    let bytes = 1024 * MIB;
    assert_same(
        "SD layout, a 1 GiB SDSC card",
        &firmware_image(&opts, Table::Mbr, bytes, 512),
        &std_image(&opts, Table::Mbr, bytes, 512),
    );
}

#[test]
fn refused_options_write_nothing() {
    // Each is refused before the first write, with the valid range.
    let cases: Vec<(&str, FormatOptions, Table, u64, u32)> = vec![
        (
            "a cluster size FAT32 cannot have on 64 MiB",
            options(FsKind::Fat32, 64 << 10, 1),
            Table::None,
            64 * MIB,
            512,
        ),
        (
            "exFAT with two FATs",
            options(FsKind::Exfat, 4096, 1).fats(2).expect("2 FATs"),
            Table::None,
            64 * MIB,
            512,
        ),
        (
            "FAT12 on 1 GiB",
            options(FsKind::Fat12, 4096, 1),
            Table::Mbr,
            1024 * MIB,
            512,
        ),
        (
            "an alignment that is not a power of two",
            options(FsKind::Fat32, 4096, 1).align(3 * MIB),
            Table::Mbr,
            256 * MIB,
            512,
        ),
        (
            "an MBR on a medium with no room after its start",
            options(FsKind::Fat12, 4096, 1),
            Table::Mbr,
            MIB,
            512,
        ),
    ];
    for (what, opts, table, bytes, sector) in cases {
        let mut ram = Ram::new(bytes, sector);
        let mut buf = vec![0u8; sector as usize];
        let e = format(&mut ram, &mut buf, &opts, table).expect_err(what);
        assert!(
            matches!(e, Error::Plan(_) | Error::Table(_)),
            "{what}: {e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("valid"),
            "{what}: the message names the valid range: {msg}"
        );
        assert_eq!(ram.writes, 0, "{what}: nothing written");
        assert!(
            ram.data.iter().all(|&b| b == 0),
            "{what}: the medium unchanged"
        );
    }
    // A buffer shorter than one sector.
    let mut ram = Ram::new(64 * MIB, 4096);
    let mut buf = [0u8; 512];
    let e = format(
        &mut ram,
        &mut buf,
        &options(FsKind::Exfat, 4096, 1),
        Table::None,
    )
    .expect_err("a 512-byte buffer for 4096-byte sectors");
    assert!(
        matches!(
            e,
            Error::Buffer {
                len: 512,
                sector: 4096
            }
        ),
        "{e:?}"
    );
    assert_eq!(ram.writes, 0);
}

/// Why the firmware path refusing `fs` at `cluster` on `bytes` is right, by
/// the spec's arithmetic (`spec_count_bounds`, apart from the planner): the
/// cluster count the error names lies within the bounds and outside the
/// width's range. `Err` when it is not justified.
fn refusal_justified(
    e: &Error<core::convert::Infallible>,
    fs: FsKind,
    cluster: u64,
    bytes: u64,
    mbr: bool,
) -> Result<(), String> {
    let (lo, hi) = spec_count_range(fs);
    // The volume: the medium, less the MBR's 1 MiB alignment when there is one.
    let volume = if mbr { bytes - MIB } else { bytes };
    let (lb, ub) = spec_count_bounds(fs, cluster, 512, volume, MIB);
    let ok = match e {
        Error::Plan(PlanError::TooFewClusters {
            clusters,
            min_clusters,
            ..
        }) => {
            let need = *min_clusters == lo || fs == FsKind::Exfat && *min_clusters >= 4;
            need && clusters < min_clusters && (lb..=ub).contains(clusters)
        }
        Error::Plan(PlanError::TooManyClusters {
            clusters,
            max_clusters,
            ..
        }) => *max_clusters == hi && *clusters > hi && (lb..=ub).contains(clusters),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{fs} at {cluster} B on {bytes} B (mbr {mbr}) refused, unjustified (count between {lb} and {ub}): {e}"))
    }
}

/// Random media, drawn log-uniformly per file system where the width can
/// exist (2..160 MiB of RAM: FAT32 only at 512 B..2 KiB clusters), from half
/// the width's smallest count at that cluster size to twice its largest:
/// accepted media must give the std path's bytes; a refusal must write
/// nothing, be refused by the std path too and be justified by the spec's
/// arithmetic; and at least 30% of the cases must be accepted (a suite of
/// refusals would prove nothing about the bytes).
#[test]
fn random_media_give_the_std_paths_bytes() {
    use proptest::test_runner::{Config, TestRunner};
    use std::cell::Cell;
    const CASES: u32 = 24;
    let (accepted, refused) = (Cell::new(0u32), Cell::new(0u32));
    let mut runner = TestRunner::new(Config::with_cases(CASES));
    let strategy = (
        0usize..4,
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<bool>(),
        any::<u32>(),
    );
    runner
        .run(&strategy, |(fs_i, c_draw, e_draw, low, mbr, serial)| {
            let fs = [FsKind::Exfat, FsKind::Fat32, FsKind::Fat16, FsKind::Fat12][fs_i];
            let c_max = if fs == FsKind::Fat32 { 11 } else { 15 };
            let cluster_shift = 9 + c_draw % (c_max - 9 + 1);
            let cluster = 1u64 << cluster_shift;
            let (lo, hi) = spec_count_range(fs);
            let min = (lo * cluster / 2).max(2 * MIB);
            let max = (hi.saturating_mul(cluster).saturating_mul(2))
                .min(160 * MIB)
                .max(min);
            let (e_lo, e_hi) = (63 - min.leading_zeros(), 63 - max.leading_zeros());
            let e = e_lo + e_draw % (e_hi - e_lo + 1);
            let bytes = ((1u64 << e) | (low & ((1u64 << e) - 1))).clamp(min, max) / 512 * 512;
            let opts = options(fs, cluster, serial);
            let table = if mbr { Table::Mbr } else { Table::None };
            let mut ram = Ram::new(bytes, 512);
            let mut buf = [0u8; 512];
            match format(&mut ram, &mut buf, &opts, table) {
                Ok(_) => {
                    accepted.set(accepted.get() + 1);
                    let want = std_image(&opts, table, bytes, 512);
                    prop_assert!(
                        ram.data == want,
                        "{fs} {cluster} B clusters, {bytes} B, {table:?}: bytes differ"
                    );
                }
                Err(err) => {
                    refused.set(refused.get() + 1);
                    // Refused: nothing written, and the std path refuses too.
                    prop_assert_eq!(ram.writes, 0);
                    let disk = MemDisk::new(512, bytes / 512).expect("memory disk");
                    prop_assert!(
                        std_options(&opts, table, 512).plan_for(&disk).is_err(),
                        "the std path takes what firmware refused"
                    );
                    if let Err(why) = refusal_justified(&err, fs, cluster, bytes, mbr) {
                        prop_assert!(false, "{}", why);
                    }
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let (ok, no) = (accepted.get(), refused.get());
    println!("{ok} accepted, {no} refused");
    assert!(ok * 10 >= (ok + no) * 3, "{ok} accepted, {no} refused");
}
