//! Byte reproducibility: the same `--serial` and `SOURCE_DATE_EPOCH` give
//! identical images; a different serial gives a different one.

use mkfs_alloc_tests::{file_hash, format_image, mkfs_alloc_env, FormatArgs, TempDir, MIB};

fn twice(args: FormatArgs<'_>) {
    let tmp = TempDir::new("repro");
    let (a, b) = (tmp.join("a.img"), tmp.join("b.img"));
    format_image(&a, &args); // format_image pins SOURCE_DATE_EPOCH
    format_image(&b, &args);
    assert_eq!(
        file_hash(&a),
        file_hash(&b),
        "two identical runs gave different images"
    );

    let c = tmp.join("c.img");
    format_image(
        &c,
        &FormatArgs {
            serial: args.serial ^ 0xFFFF,
            ..args
        },
    );
    assert_ne!(
        file_hash(&a),
        file_hash(&c),
        "the serial is not in the image?"
    );
}

#[test]
fn exfat_identical() {
    twice(FormatArgs {
        label: Some("Repro ü"),
        ..FormatArgs::new("exfat", 32 * 1024, 512, 64 * MIB)
    });
}

#[test]
fn exfat_4k_sectors_identical() {
    twice(FormatArgs::new("exfat", 128 * 1024, 4096, 256 * MIB));
}

#[test]
fn fat32_identical() {
    twice(FormatArgs {
        label: Some("REPRO"),
        ..FormatArgs::new("fat32", 512, 512, 64 * MIB)
    });
}

#[test]
fn fat16_identical() {
    twice(FormatArgs {
        label: Some("REPRO16"),
        ..FormatArgs::new("fat16", 4096, 512, 64 * MIB)
    });
}

#[test]
fn fat12_4k_sectors_identical() {
    twice(FormatArgs {
        label: Some("REPRO12"),
        ..FormatArgs::new("fat12", 8192, 4096, 16 * MIB)
    });
}

/// A different SOURCE_DATE_EPOCH changes the FAT32 label entry's time stamp
/// even with the same serial: the time really comes from the variable.
#[test]
fn fat32_time_from_source_date_epoch() {
    let tmp = TempDir::new("repro-epoch");
    let args = FormatArgs {
        label: Some("REPRO"),
        ..FormatArgs::new("fat32", 512, 512, 64 * MIB)
    };
    let mut hashes = Vec::new();
    for (name, epoch) in [
        ("a.img", "1700000000"),
        ("b.img", "1700000000"),
        ("c.img", "1600000000"),
    ] {
        let img = tmp.join(name);
        let mut argv = args.args();
        argv.push(img.to_string_lossy().into_owned());
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        mkfs_alloc_env(&refs, &[("SOURCE_DATE_EPOCH", epoch)]).assert_success();
        hashes.push(file_hash(&img));
    }
    assert_eq!(hashes[0], hashes[1]);
    assert_ne!(
        hashes[0], hashes[2],
        "SOURCE_DATE_EPOCH did not reach the label entry"
    );
}

/// Pinned images against recorded checksums (`cksum`: CRC and length): any
/// change of the bytes we write for these inputs fails here, so a refactor
/// that should not change the output (such as moving the on-disk structs to
/// their own crate) is proven not to. An intended format change updates the
/// table, and says why in its commit.
#[test]
fn pinned_images_match_recorded_checksums() {
    const EPOCH: &str = "1700000000";
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--fs",
                "exfat",
                "--cluster",
                "32K",
                "--sector-size",
                "512",
                "--size",
                "64M",
                "--table",
                "none",
                "--label",
                "Repro ü",
            ],
            "4047996097 67108864",
        ),
        (
            &[
                "--fs",
                "exfat",
                "--cluster",
                "4K",
                "--sector-size",
                "4096",
                "--size",
                "64M",
                "--table",
                "gpt",
                "--volume-guid",
            ],
            "386169248 67108864",
        ),
        (
            &[
                "--fs",
                "fat32",
                "--cluster",
                "512",
                "--sector-size",
                "512",
                "--size",
                "64M",
                "--table",
                "mbr",
                "--label",
                "REPRO",
            ],
            "875779493 67108864",
        ),
        (
            &[
                "--fs",
                "fat32",
                "--cluster",
                "4K",
                "--sector-size",
                "4096",
                "--size",
                "300M",
                "--table",
                "gpt",
            ],
            "3000682440 314572800",
        ),
    ];
    let tmp = TempDir::new("repro-recorded");
    for (i, (args, recorded)) in cases.iter().enumerate() {
        let img = tmp.join(&format!("{i}.img"));
        let img_s = img.to_string_lossy().into_owned();
        let mut argv = vec!["-q", "--serial", "1234ABCD"];
        argv.extend_from_slice(args);
        argv.push(&img_s);
        mkfs_alloc_env(&argv, &[("SOURCE_DATE_EPOCH", EPOCH)]).assert_success();
        assert_eq!(file_hash(&img), *recorded, "mkfs-alloc {}", argv.join(" "));
    }
}
