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
/// system and its absolute FAT and data offsets that the format run reported.
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
        let want = (
            start,
            len,
            case.fs.to_string(),
            json.u64("fat_offset_on_medium"),
            json.u64("data_offset_on_medium"),
            0usize,
        );
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

/// An image with a GPT (one Linux partition at `old_lba`) and an old file
/// system (`old_fs`, made by mkfs.fat / mkfs.exfat) in it. Returns the old
/// volume's byte offset.
fn image_with_old_gpt(img: &Path, old_lba: u64, old_fs: &str) -> u64 {
    sparse_file(img, SIZE);
    run(
        require_tool("sgdisk"),
        &[
            "-n",
            &format!("1:{old_lba}:0"),
            "-t",
            "1:8300",
            &img.to_string_lossy(),
        ],
    )
    .assert_success();
    let sf = sfdisk_json(img);
    assert_eq!(sf.label, "gpt");
    let p = &sf.partitions[0];
    let (off, len) = (p.start * 512, p.size * 512);
    match old_fs {
        "fat32" => {
            run(
                require_tool("mkfs.fat"),
                &[
                    "-F".to_string(),
                    "32".into(),
                    "--offset".into(),
                    p.start.to_string(),
                    img.to_string_lossy().into_owned(),
                    (len / 1024).to_string(),
                ],
            )
            .assert_success();
        }
        _ => {
            let lo = LoopDevice::attach_with(
                img,
                mkfs_alloc_tests::LoopOptions {
                    window: Some((off, len)),
                    ..Default::default()
                },
            );
            run(require_tool("mkfs.exfat"), &[lo.path()]).assert_success();
        }
    }
    off
}

/// True when a boot sector of `fs` starts at byte `at` of `img`.
fn boot_sector_at(img: &Path, at: u64, fs: &str) -> bool {
    let b = read_at(img, at, 512);
    let sig = b[510..512] == [0x55, 0xAA];
    match fs {
        "fat32" => sig && &b[82..90] == b"FAT32   ",
        _ => sig && &b[3..11] == b"EXFAT   ",
    }
}

/// Reformats an image holding an old GPT and `old_fs` at `old_lba` as
/// `new_fs` with `--table mbr`, and checks that only the new MBR and volume
/// remain.
fn reformat_over_leftovers(old_lba: u64, old_fs: &str, new_fs: &str) {
    let tmp = TempDir::new(&format!("leftovers-{old_fs}-{old_lba}"));
    let img = tmp.join("old.img");
    let old_off = image_with_old_gpt(&img, old_lba, old_fs);
    let old_blkid = if old_fs == "fat32" { "vfat" } else { "exfat" };
    let target = img.to_string_lossy().into_owned();

    // Before: the tools see the GPT and the old file system.
    let before = blkid_probe(&img, None);
    assert_eq!(blkid_value(&before, "PTTYPE"), Some("gpt"), "{before:?}");
    assert_eq!(
        blkid_value(&blkid_probe(&img, Some(old_off)), "TYPE"),
        Some(old_blkid)
    );
    assert!(boot_sector_at(&img, old_off, old_fs));
    let backup_gpt = SIZE - 512;
    assert_eq!(&read_at(&img, backup_gpt, 8), b"EFI PART");

    // The dry run lists what it found and writes nothing.
    let hash = file_hash(&img);
    let cluster = if new_fs == "exfat" { "32K" } else { "4K" };
    let args = [
        "--fs",
        new_fs,
        "--cluster",
        cluster,
        "--table",
        "mbr",
        "--serial",
        SERIAL,
        "--json",
    ];
    let mut dry: Vec<&str> = args.to_vec();
    dry.extend(["--dry-run", &target]);
    let out = mkfs_alloc(&dry);
    out.assert_success();
    assert_eq!(file_hash(&img), hash, "the dry run changed the image");
    let json = MkfsJson::parse(&out);
    let found: Vec<(String, u64)> = json.value["signatures_found"]
        .as_array()
        .unwrap_or_else(|| panic!("no signatures_found:\n{out}"))
        .iter()
        .map(|s| (json_str(s, "kind").to_string(), json_u64(s, "offset")))
        .collect();
    for want in [
        ("pmbr", 0),
        ("gpt", 512),
        ("gpt-backup", backup_gpt),
        (old_fs, old_off),
    ] {
        assert!(
            found.iter().any(|(k, o)| k == want.0 && *o == want.1),
            "the dry run does not list {want:?}; found {found:?}"
        );
    }

    // The real run.
    let mut real: Vec<&str> = args.to_vec();
    real.extend(["-q", &target]);
    let out = mkfs_alloc(&real);
    out.assert_success();
    let json = MkfsJson::parse(&out);
    let (start, _) = partition(&json);

    let after = blkid_probe(&img, None);
    assert_eq!(
        blkid_value(&after, "PTTYPE"),
        Some("dos"),
        "blkid -p after the reformat: {after:?}"
    );
    assert_eq!(
        blkid_value(&after, "TYPE"),
        None,
        "blkid -p sees a file system on the whole disk: {after:?}"
    );
    let sigs = wipefs_signatures(&img);
    assert_eq!(
        sigs,
        vec![(0x1FE, "dos".to_string())],
        "wipefs -n lists more than the new MBR"
    );
    let sg = sgdisk_verify(&img);
    assert!(
        sg.stdout.contains("Found invalid GPT and valid MBR")
            && !sg.stdout.contains("valid backup")
            && !sg.stdout.contains("Found valid GPT"),
        "sgdisk -v still finds the old GPT:\n{sg}"
    );
    assert_ne!(
        &read_at(&img, 512, 8),
        b"EFI PART",
        "primary GPT header left"
    );
    assert_ne!(
        &read_at(&img, backup_gpt, 8),
        b"EFI PART",
        "backup GPT header left"
    );

    let new_blkid = if new_fs == "fat32" { "vfat" } else { "exfat" };
    let at_old = blkid_probe(&img, Some(old_off));
    if old_off == start {
        assert_eq!(blkid_value(&at_old, "TYPE"), Some(new_blkid), "{at_old:?}");
    } else {
        assert_eq!(
            blkid_value(&at_old, "TYPE"),
            None,
            "the old {old_fs} at byte {old_off} survives the reformat \
             (new volume at {start}): blkid -p -O {old_off}: {at_old:?}"
        );
        assert!(
            !boot_sector_at(&img, old_off, old_fs),
            "the old {old_fs} boot sector at byte {old_off} survives"
        );
        // The old backup boot sector (FAT32: sector 6; exFAT: sector 12).
        let backup = old_off + if old_fs == "fat32" { 6 * 512 } else { 12 * 512 };
        assert!(
            !boot_sector_at(&img, backup, old_fs),
            "the old {old_fs} backup boot sector at byte {backup} survives"
        );
    }
    let at_new = blkid_probe(&img, Some(start));
    assert_eq!(blkid_value(&at_new, "TYPE"), Some(new_blkid), "{at_new:?}");
}

/// The old FAT32 starts where the new volume starts (the common case:
/// partition at 1 MiB).
#[test]
fn reformat_with_mbr_over_gpt_and_fat32_at_the_same_start() {
    reformat_over_leftovers(2048, "fat32", "exfat");
}

/// The old exFAT starts at 2 MiB, where the new FAT32's FAT goes.
#[test]
fn reformat_with_mbr_over_gpt_and_exfat_at_2_mib() {
    reformat_over_leftovers(4096, "exfat", "fat32");
}

/// The old FAT32 starts at 8 MiB, inside the new volume's free clusters: the
/// run lists it under "found before (will be wiped or overwritten)", so it
/// must not survive.
#[test]
fn reformat_with_mbr_wipes_an_old_fat32_inside_the_new_volume() {
    reformat_over_leftovers(16384, "fat32", "exfat");
}

/// xorshift64*, seeded: the same "random" cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

#[test]
fn alignment_holds_for_seeded_random_sizes_alignments_and_tables() {
    let tmp = TempDir::new("part-align");
    let mut rng = Rng(0x005E_EDA1_1C0F_F5E7);
    for i in 0..36 {
        let fs = rng.pick(&["exfat", "fat32"]);
        let table = rng.pick(&["none", "mbr", "gpt"]);
        let align = rng.pick(&[MIB, 4 * MIB, 16 * MIB]);
        let sector = rng.pick(&[512u64, 4096]);
        // 1 GiB .. 80 GiB, a whole number of sectors, rarely round.
        let size = (1 << 30) + (rng.next() % (79 << 30)) / sector * sector;
        let img = tmp.join(&format!("a{i}.img"));
        let (a, s, ss) = (size_arg(align), size.to_string(), sector.to_string());
        let target = img.to_string_lossy();
        let args = [
            "--fs",
            fs,
            "--table",
            table,
            "--align",
            &a,
            "--sector-size",
            &ss,
            "--size",
            &s,
            "--dry-run",
            "--json",
            &target,
        ];
        let out = mkfs_alloc(&args);
        let what = format!("case {i}: {fs} {table} align {a} sector {sector} size {size}");
        assert!(out.success(), "{what}:\n{out}");
        assert!(!img.exists(), "{what}: the dry run created the image");
        let json = MkfsJson::parse(&out);
        assert_eq!(json.u64("align"), align, "{what}");
        for key in [
            "partition_offset",
            "fat_offset_on_medium",
            "data_offset_on_medium",
        ] {
            let v = json.u64(key);
            assert_eq!(v % align, 0, "{what}: {key} = {v} is not aligned\n{out}");
        }
        assert!(json.u64("fat_alignment") >= align, "{what}");
        assert!(json.u64("data_alignment") >= align, "{what}");
        let po = json.u64("partition_offset");
        let t = &json.value["table"];
        assert_eq!(json_str(t, "kind"), table, "{what}");
        if table == "none" {
            assert_eq!(po, 0, "{what}");
        } else {
            assert!(po > 0, "{what}: a table needs room before the partition");
            assert_eq!(json_u64(t, "partition_start"), po, "{what}");
            assert!(
                po + json_u64(t, "partition_len") <= size,
                "{what}: partition past the end"
            );
        }
        assert_eq!(
            json.u64("fat_offset_on_medium"),
            po + json.u64("fat_offset"),
            "{what}"
        );
        assert_eq!(
            json.u64("data_offset_on_medium"),
            po + json.u64("data_offset"),
            "{what}"
        );
    }
}

#[test]
fn mbr_is_refused_above_2_tib_and_gpt_is_not() {
    let tmp = TempDir::new("part-3t");
    let img = tmp.join("big.img");
    let target = img.to_string_lossy().into_owned();
    let big = size_arg(3 * TIB);
    // `mkfs-alloc --fs exfat --cluster 32K --table TABLE --size 3T EXTRA.. IMG`
    let run_3t = |table: &str, extra: &[&str]| {
        let mut args = vec![
            "--fs",
            "exfat",
            "--cluster",
            "32K",
            "--table",
            table,
            "--size",
            &big,
        ];
        args.extend_from_slice(extra);
        args.push(&target);
        mkfs_alloc(&args)
    };

    // A new image: refused, nothing created.
    for json in [false, true] {
        let out = run_3t("mbr", if json { &["--json"] } else { &[] });
        out.assert_code(2);
        let msg = if json {
            let j = MkfsJson::parse(&out);
            assert_eq!(j.u64("exit_code"), 2, "{out}");
            j.str("error").to_string()
        } else {
            out.stderr.clone()
        };
        assert!(
            msg.contains("GPT"),
            "the refusal does not point to GPT:\n{out}"
        );
        assert!(!img.exists(), "the refused run created {target}");
    }

    // An existing image: refused, unchanged (not grown).
    fill_file(&img, MIB, SENTINEL);
    let hash = file_hash(&img);
    let out = run_3t("mbr", &[]);
    out.assert_code(2);
    assert!(out.stderr.contains("GPT"), "{out}");
    assert_eq!(file_hash(&img), hash, "the refused run changed the image");
    std::fs::remove_file(&img).expect("remove the sentinel image");

    // GPT is fine there (plan only).
    let out = run_3t("gpt", &["--dry-run", "--json"]);
    out.assert_success();
    assert!(!img.exists(), "the dry run created {target}");
    let json = MkfsJson::parse(&out);
    let t = &json.value["table"];
    assert_eq!(json_str(t, "kind"), "gpt", "{out}");
    assert_eq!(json_u64(t, "medium_bytes"), 3 * TIB, "{out}");
    let (start, len) = (json_u64(t, "partition_start"), json_u64(t, "partition_len"));
    assert_eq!(start % MIB, 0, "{out}");
    // The backup GPT (header + 32 sectors of entries) follows the partition.
    assert!(start + len <= 3 * TIB - 33 * 512, "{out}");
    assert!(
        len > 3 * TIB - 2 * MIB,
        "partition much smaller than the disk: {out}"
    );
    assert!(json.u64("volume_bytes") <= len, "{out}");
}
