//! Partition tables written by the CLI (`--table mbr|gpt`), checked by the
//! independent partitioning tools and file system checkers:
//!
//! - sfdisk, fdisk and sgdisk read back the type, start, size, name and
//!   identifiers the JSON report announces, with 512- and 4096-byte sectors
//!   (4096: through a loop device with 4096-byte sectors);
//! - the partition's file system passes fsck, mounts through FUSE on a loop
//!   window and keeps a file;
//! - the boot sector records the partition offset (exFAT PartitionOffset,
//!   FAT32 HiddSec) and the FAT and data region sit on 1 MiB boundaries of
//!   the medium;
//! - reformatting over an old GPT and file system leaves no trace of them;
//! - alignment holds for seeded random sizes, alignments and tables;
//! - MBR is refused above 2 TiB, GPT is not.

use mkfs_alloc_tests::blk::{
    blkid_probe, blkid_value, fdisk_list, sfdisk_json, sgdisk_verify, wipefs_signatures, Window,
};
use mkfs_alloc_tests::{
    file_hash, fill_file, json_str, json_u64, mkfs_alloc, read_at, require_tool, run, size_arg,
    sparse_file, test_data, ExfatBoot, Fat32Boot, LoopDevice, MkfsJson, TempDir, KIB, MIB,
    SENTINEL, TIB,
};
use std::path::Path;

mod reformat;

/// The GPT type GUID of a Microsoft Basic Data partition.
const BASIC_DATA: &str = "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7";

/// A medium size that is a multiple of 4096 but not of 1 MiB (a tail).
const SIZE: u64 = 320 * MIB + 12 * KIB;

const LABEL: &str = "PARTTEST";
const SERIAL: &str = "1234ABCD";

/// One cell of the table x file system x sector size matrix.
#[derive(Debug, Clone, Copy)]
struct Case {
    table: &'static str,
    fs: &'static str,
    sector: u32,
}

impl Case {
    fn cluster(&self) -> u64 {
        match self.fs {
            "exfat" => 32 * KIB,
            _ => 4 * KIB,
        }
    }

    fn name(&self) -> String {
        format!("{}-{}-{}", self.table, self.fs, self.sector)
    }

    fn mbr_type(&self) -> &'static str {
        match self.fs {
            "exfat" => "7",
            _ => "c",
        }
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for table in ["mbr", "gpt"] {
        for fs in ["exfat", "fat32"] {
            for sector in [512, 4096] {
                v.push(Case { table, fs, sector });
            }
        }
    }
    v
}

/// Formats a new sparse image for `case`; returns the JSON report after
/// checking that it announces the table asked for.
#[track_caller]
fn format_case(img: &Path, case: Case) -> MkfsJson {
    let cluster = size_arg(case.cluster());
    let sector = case.sector.to_string();
    let size = size_arg(SIZE);
    let target = img.to_string_lossy();
    let out = mkfs_alloc(&[
        "--fs",
        case.fs,
        "--cluster",
        &cluster,
        "--sector-size",
        &sector,
        "--size",
        &size,
        "--table",
        case.table,
        "--label",
        LABEL,
        "--serial",
        SERIAL,
        "--json",
        "-q",
        &target,
    ]);
    out.assert_success();
    let json = MkfsJson::parse(&out);
    let t = &json.value["table"];
    assert_eq!(json_str(t, "kind"), case.table, "{}: {out}", case.name());
    assert_eq!(
        json_u64(t, "block_size"),
        u64::from(case.sector),
        "{}: table block size\n{out}",
        case.name()
    );
    assert_eq!(
        json_u64(t, "partition_start"),
        json.u64("partition_offset"),
        "{}: {out}",
        case.name()
    );
    assert_eq!(json_u64(t, "medium_bytes"), SIZE, "{}: {out}", case.name());
    json
}

/// Runs `f` on the whole medium as the partitioning tools should see it:
/// the image file itself (512) or a loop device with 4096-byte sectors.
fn with_medium(img: &Path, sector: u32, f: impl FnOnce(&Path)) {
    if sector == 512 {
        f(img);
    } else {
        let lo = LoopDevice::attach_sector(img, sector);
        f(lo.path());
    }
}

/// (partition start, partition length) in bytes from the JSON report.
fn partition(json: &MkfsJson) -> (u64, u64) {
    let t = &json.value["table"];
    (json_u64(t, "partition_start"), json_u64(t, "partition_len"))
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn tables_read_back_by_sfdisk_fdisk_and_sgdisk() {
    let tmp = TempDir::new("part-tables");
    for case in cases() {
        let name = case.name();
        let img = tmp.join(&format!("{name}.img"));
        let json = format_case(&img, case);
        let t = json.value["table"].clone();
        let (start, len) = partition(&json);
        let ss = u64::from(case.sector);
        assert_eq!(start % MIB, 0, "{name}: partition start {start}");
        assert!(start + len <= SIZE, "{name}: partition past the end");
        with_medium(&img, case.sector, |medium| {
            let sf = sfdisk_json(medium);
            let label = if case.table == "mbr" { "dos" } else { "gpt" };
            assert_eq!(sf.label, label, "{name}: sfdisk label");
            assert_eq!(sf.sector_size, ss, "{name}: sfdisk sector size");
            assert_eq!(sf.partitions.len(), 1, "{name}: {sf:?}");
            let p = &sf.partitions[0];
            assert_eq!(p.start * ss, start, "{name}: sfdisk start {sf:?}");
            assert_eq!(p.size * ss, len, "{name}: sfdisk size {sf:?}");
            if case.table == "mbr" {
                assert_eq!(p.type_, case.mbr_type(), "{name}: MBR type {sf:?}");
                assert_eq!(
                    json_u64(&t, "mbr_type"),
                    u64::from_str_radix(case.mbr_type(), 16).expect("hex"),
                    "{name}: JSON mbr_type"
                );
                let sig = json_u64(&t, "disk_signature");
                assert_eq!(sf.id, format!("0x{sig:08x}"), "{name}: disk signature");
            } else {
                assert_eq!(p.type_, BASIC_DATA, "{name}: GPT type {sf:?}");
                assert_eq!(p.name.as_deref(), Some(LABEL), "{name}: GPT name {sf:?}");
                assert_eq!(
                    json_str(&t, "partition_name"),
                    LABEL,
                    "{name}: JSON partition_name"
                );
                assert_eq!(
                    p.uuid.as_deref(),
                    Some(json_str(&t, "partition_guid")),
                    "{name}: partition GUID"
                );
                assert_eq!(sf.id, json_str(&t, "disk_guid"), "{name}: disk GUID");
                assert_eq!(sf.first_lba, Some(json_u64(&t, "first_usable_lba")));
                assert_eq!(sf.last_lba, Some(json_u64(&t, "last_usable_lba")));
                let last = sf.last_lba.expect("GPT has a last usable LBA");
                assert!(
                    p.start + p.size - 1 <= last,
                    "{name}: partition ends after the last usable LBA {last}: {sf:?}"
                );
            }

            let fd = fdisk_list(medium);
            assert_eq!(fd.label, label, "{name}: fdisk\n{}", fd.out);
            assert_eq!(fd.unit, ss, "{name}: fdisk unit\n{}", fd.out);
            assert_eq!(fd.rows.len(), 1, "{name}: fdisk rows\n{}", fd.out);
            let row = &fd.rows[0];
            assert_eq!(
                (row.start, row.end, row.sectors),
                (p.start, p.start + p.size - 1, p.size),
                "{name}: fdisk disagrees with sfdisk\n{}",
                fd.out
            );
            let type_name = match (case.table, case.fs) {
                ("gpt", _) => "Microsoft basic data",
                (_, "exfat") => "HPFS/NTFS/exFAT",
                _ => "W95 FAT32 (LBA)",
            };
            assert!(
                row.rest.contains(type_name),
                "{name}: fdisk type is not {type_name:?}\n{}",
                fd.out
            );
            assert!(
                fd.id.eq_ignore_ascii_case(&sf.id),
                "{name}: fdisk id {} vs sfdisk {}",
                fd.id,
                sf.id
            );

            let sg = sgdisk_verify(medium);
            if case.table == "gpt" {
                assert!(
                    sg.success()
                        && sg.stdout.contains("No problems found")
                        && !sg.stdout.contains("Identified"),
                    "{name}: sgdisk -v is not clean:\n{sg}"
                );
            } else {
                // An MBR disk: sgdisk must find no GPT (it converts in memory).
                assert!(
                    sg.stdout.contains("Found invalid GPT and valid MBR"),
                    "{name}: sgdisk -v sees a GPT on an MBR disk:\n{sg}"
                );
            }
        });
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn partitioned_volume_passes_fsck_mounts_and_keeps_a_file() {
    let tmp = TempDir::new("part-fs");
    for (i, case) in cases().into_iter().enumerate() {
        let name = case.name();
        let img = tmp.join(&format!("{name}.img"));
        let json = format_case(&img, case);
        let (start, len) = partition(&json);
        let scratch = tmp.subdir(&name);
        let data = test_data(300 * 1024 + 77, 0xC0FFEE + i as u64);
        Window {
            image: &img,
            fs: case.fs,
            sector: case.sector,
            offset: start,
            len,
        }
        .round_trip(&scratch, &data);
    }
}

#[test]
fn file_system_records_its_partition_offset_and_is_aligned_on_the_medium() {
    let tmp = TempDir::new("part-offset");
    for case in cases() {
        let name = case.name();
        let img = tmp.join(&format!("{name}.img"));
        let json = format_case(&img, case);
        let (start, len) = partition(&json);
        let ss = u64::from(case.sector);
        let (fat_abs, data_abs, hidden, vol_bytes) = if case.fs == "exfat" {
            let b = ExfatBoot::read(&img, start);
            assert_eq!(
                &b.file_system_name, b"EXFAT   ",
                "{name}: no exFAT at {start}"
            );
            assert_eq!(b.bytes_per_sector(), ss, "{name}");
            (
                start + u64::from(b.fat_offset) * ss,
                start + u64::from(b.cluster_heap_offset) * ss,
                b.partition_offset,
                b.volume_length * ss,
            )
        } else {
            let b = Fat32Boot::read(&img, start);
            assert_eq!(&b.fs_type, b"FAT32   ", "{name}: no FAT32 at {start}");
            assert_eq!(u64::from(b.bytes_per_sector), ss, "{name}");
            (
                start + b.fat_offset(),
                start + b.data_offset(),
                u64::from(b.hidden_sectors),
                u64::from(b.tot_sec32) * ss,
            )
        };
        assert_eq!(
            hidden,
            start / ss,
            "{name}: PartitionOffset/HiddSec is not the partition start LBA"
        );
        assert!(vol_bytes <= len, "{name}: volume larger than its partition");
        assert_eq!(fat_abs, json.u64("fat_offset_on_medium"), "{name}: FAT");
        assert_eq!(data_abs, json.u64("data_offset_on_medium"), "{name}: data");
        assert_eq!(fat_abs % MIB, 0, "{name}: FAT at {fat_abs}");
        assert_eq!(data_abs % MIB, 0, "{name}: data region at {data_abs}");
    }
}

/// `mkfs-alloc info --json` on the image finds the partition, the file
/// system and the absolute FAT and data offsets its boot sector declares.
/// Every case is checked before the test fails, so the message lists them all.
#[test]
fn info_reads_back_partition_and_offsets() {
    let tmp = TempDir::new("part-info");
    let mut wrong = Vec::new();
    for case in cases() {
        let name = case.name();
        let img = tmp.join(&format!("{name}.img"));
        let json = format_case(&img, case);
        let (start, len) = partition(&json);
        // The offsets from the boot sector, decoded by the test's own
        // decoders (the format run's report is checked against sfdisk and
        // those decoders above): `info` must agree with the medium, not
        // with the other half of the same program.
        let ss = u64::from(case.sector);
        let (fat, data) = if case.fs == "exfat" {
            let b = ExfatBoot::read(&img, start);
            (
                start + u64::from(b.fat_offset) * ss,
                start + u64::from(b.cluster_heap_offset) * ss,
            )
        } else {
            let b = Fat32Boot::read(&img, start);
            (start + b.fat_offset(), start + b.data_offset())
        };
        let want = (start, len, case.fs.to_string(), fat, data, 0usize);
        let out = mkfs_alloc(&["info", "--json", &img.to_string_lossy()]);
        out.assert_success();
        let info = MkfsJson::parse(&out);
        let vols = info.value["volumes"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no volumes in info:\n{out}"));
        assert_eq!(vols.len(), 1, "{name}: {out}");
        let v = &vols[0];
        let got = (
            v["start"].as_u64().unwrap_or(0),
            v["size"].as_u64().unwrap_or(0),
            v["fs"].as_str().unwrap_or_default().to_string(),
            v["fat_offset"].as_u64().unwrap_or(0),
            v["data_offset"].as_u64().unwrap_or(0),
            v["misaligned"].as_array().map_or(usize::MAX, Vec::len),
        );
        if got != want {
            wrong.push(format!(
                "{name}: info says (start, size, fs, fat, data, misaligned) = {got:?}, \
                 the format run said {want:?}\n{out}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
