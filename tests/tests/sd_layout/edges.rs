//! Refusals that leave the target byte-identical, a `--rootdir` tree and a
//! loop device in the SD layout, and the smallest cards.

use super::*;

/// What `--layout sd` refuses, with exit 2, a message naming what is
/// allowed, and the target unchanged: options the layout decides, a file
/// system the class does not take, cards above 2 TiB, 4096-byte sectors.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn refusals_leave_the_target_byte_identical() {
    let tmp = TempDir::new("sd-refuse");
    let img = tmp.join("card.img");
    fill_file(&img, 64 * MIB, 0xA5);
    let before = file_hash(&img);
    let tree = tmp.join("tree");
    std::fs::create_dir(&tree).expect("mkdir tree");
    let tree = tree.to_string_lossy().into_owned();
    let cases: &[(&[&str], &str)] = &[
        (&["--cluster", "32K"], "leave --cluster out"),
        (&["--data", &tree], "leave --data out"),
        (
            &["--rootdir", &tree, "--size", "auto"],
            "leave --size auto out",
        ),
        (&["--align", "4M"], "leave --align out"),
        (&["--table", "none"], "leave --table none out"),
        (&["--table", "gpt"], "leave --table gpt out"),
        (&["--esp"], "leave --esp out"),
        (&["--root-entries", "64"], "leave --root-entries out"),
        (&["--sector-size", "4096"], "512-byte sectors"),
        (&["--fs", "exfat"], "Valid: --fs auto, fat16 or fat"),
        (&["--fs", "fat32"], "Valid: --fs auto, fat16 or fat"),
    ];
    for (extra, says) in cases {
        let out = sd_format(&img, extra);
        out.assert_code(2);
        assert!(out.stderr.contains(says), "{extra:?}: {out}");
        assert!(
            out.stderr.contains("--layout sd"),
            "the message names the layout: {out}"
        );
        assert_eq!(file_hash(&img), before, "{extra:?} changed the target");
    }

    // Above 2 TiB: no published parameters (sparse; nothing written).
    let big = tmp.join("sduc.img");
    sparse_file(&big, 2 * TIB + SECTOR);
    let out = sd_format(&big, &[]);
    out.assert_code(2);
    assert!(out.stderr.contains("above 2 TiB"), "{out}");
    assert!(out.stderr.contains("SDUC"), "{out}");
    let blocks = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(&big).expect("stat"));
    assert_eq!(blocks, 0, "bytes were written to the sparse image");
    assert_eq!(
        std::fs::metadata(&big).map(|m| m.len()).ok(),
        Some(2 * TIB + SECTOR)
    );
    // ... and with --size on a new image, no image is left behind.
    let none = tmp.join("new.img");
    let out = sd_format(&none, &["--size", "3T"]);
    out.assert_code(2);
    assert!(!none.exists(), "a refused run left {}", none.display());

    // A 4Kn device (a loop device with 4096-byte sectors) is refused.
    let dev_img = tmp.join("4kn.img");
    fill_file(&dev_img, 64 * MIB, 0x3C);
    let before = file_hash(&dev_img);
    {
        let dev = LoopDevice::attach_sector(&dev_img, 4096);
        let out = mkfs_alloc(&["--layout", "sd", "--yes", &dev.path().to_string_lossy()]);
        out.assert_code(2);
        assert!(out.stderr.contains("512-byte sectors"), "{out}");
    }
    assert_eq!(file_hash(&dev_img), before);
}

/// `--rootdir` goes into the SD layout (the layout keeps its cluster size):
/// the files read back through mtools, fsck.fat clean.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_tree_goes_into_the_sd_layout() {
    let tmp = TempDir::new("sd-rootdir");
    let tree = tmp.join("tree");
    std::fs::create_dir_all(tree.join("DCIM")).expect("mkdir");
    std::fs::write(tree.join("DCIM").join("IMG_0001.JPG"), [0xD8; 50_000]).expect("write");
    let img = tmp.join("card.img");
    let out = sd_format(
        &img,
        &["--size", "256M", "--rootdir", &tree.to_string_lossy()],
    );
    out.assert_success();
    let j = MkfsJson::parse(&out).value;
    assert_eq!(u(&j, "cluster_size"), 16 * 1024, "the class's cluster size");
    let (_, start, sectors, _, _) = mbr_entry(&img);
    let part = format!("{}@@{}", img.display(), start * SECTOR);
    let dir = mtools("mdir", Path::new(&part), &["-b", "::/DCIM"]);
    dir.assert_success();
    assert!(dir.stdout.contains("IMG_0001.JPG"), "{dir}");
    let dev = partition(&img, start, sectors);
    fsck_fat_clean(dev.path());
}

/// On a device the card's size is the device's: a 64 MiB loop device gets
/// the 64 MiB card's layout (FAT16 by its count, partition at sector 63).
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_device_gets_the_layout_of_its_size() {
    let tmp = TempDir::new("sd-device");
    let img = tmp.join("card.img");
    fill_file(&img, 64 * MIB, 0x00);
    let want = reference::card(64 * MIB / SECTOR, false).expect("card");
    {
        let dev = LoopDevice::attach(&img);
        let out = mkfs_alloc(&[
            "--layout",
            "sd",
            "--yes",
            "--no-discard",
            "--json",
            &dev.path().to_string_lossy(),
        ]);
        out.assert_success();
        let j = MkfsJson::parse(&out).value;
        assert_eq!(j["fs"], want.fs, "{j:#}");
    }
    let (ty, start, sectors, _, _) = mbr_entry(&img);
    assert_eq!((ty, start), (want.mbr_type, want.part_start));
    let dev = partition(&img, start, sectors);
    fsck_fat_clean(dev.path());
}

/// The smallest cards: one with no room for a cluster after its file-system
/// area (32 KiB) is refused with the target unchanged; 40 KiB holds one
/// cluster and 64 KiB four (FAT12, fsck.fat clean). The 1 MiB floor of a
/// partition planned by alignment does not apply to the SD layout's.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn the_smallest_cards() {
    let tmp = TempDir::new("sd-tiny");
    let img = tmp.join("card.img");
    fill_file(&img, 32 * 1024, 0x77);
    let before = file_hash(&img);
    let out = sd_format(&img, &[]);
    out.assert_code(2);
    assert!(out.stderr.contains("too small for the SD layout"), "{out}");
    assert_eq!(file_hash(&img), before);
    for (size, clusters) in [(40 * 1024u64, 1u64), (64 * 1024, 4)] {
        let img = tmp.join(&format!("card-{size}.img"));
        let out = sd_format(&img, &["--size", &size.to_string()]);
        out.assert_success();
        let j = MkfsJson::parse(&out).value;
        assert_eq!(
            (j["fs"].as_str(), u(&j, "cluster_count")),
            (Some("fat12"), clusters)
        );
        let want = reference::card(size / SECTOR, false).expect("card");
        assert_eq!(want.clusters, clusters, "{want:?}");
        let (_, start, sectors, _, _) = mbr_entry(&img);
        assert_eq!(start, want.part_start);
        let dev = partition(&img, start, sectors);
        fsck_fat_clean(dev.path());
    }
}
