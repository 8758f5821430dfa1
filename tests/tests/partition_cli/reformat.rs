//! Reformatting with an MBR over an old GPT and old file systems leaves no
//! trace of them; seeded random sizes keep their alignment; MBR stops at
//! 2 TiB.

use super::*;

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
#[ignore = "tool tier: cargo xtask test"]
fn reformat_with_mbr_over_gpt_and_fat32_at_the_same_start() {
    reformat_over_leftovers(2048, "fat32", "exfat");
}

/// The old exFAT starts at 2 MiB, where the new FAT32's FAT goes.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn reformat_with_mbr_over_gpt_and_exfat_at_2_mib() {
    reformat_over_leftovers(4096, "exfat", "fat32");
}

/// The old FAT32 starts at 8 MiB, inside the new volume's free clusters: the
/// run lists it under "found before (will be wiped or overwritten)", so it
/// must not survive.
#[test]
#[ignore = "tool tier: cargo xtask test"]
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
