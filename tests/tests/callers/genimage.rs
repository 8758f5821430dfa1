//! genimage's `vfat` image type: `mkdosfs [extraargs] -n LABEL IMAGE` on a
//! file genimage has sized, then `mcopy -sp` of each listed file.

use super::*;
use mkfs_alloc_tests::test_data;

/// Two images: a 1440 KiB floppy (FAT12) and 32 MiB (FAT16) with a pinned
/// serial, a file added under another name and a nested directory.
const CONFIG: &str = r#"
image floppy.vfat {
	vfat {
		label = "FLOPPY"
		files = { "zImage", "boot" }
	}
	size = 1440K
}
image boot.vfat {
	vfat {
		label = "BOOT"
		extraargs = "-i 1234abcd"
		files = { "zImage", "rootfs.bin", "boot" }
		file renamed.bin { image = "rootfs.bin" }
	}
	size = 32M
}
"#;

/// The input tree: the files the config names.
fn inputs(dir: &Path) {
    std::fs::create_dir_all(dir.join("boot/overlays")).expect("mkdir");
    std::fs::write(dir.join("zImage"), test_data(70_001, 1)).expect("write");
    std::fs::write(dir.join("rootfs.bin"), test_data(200_000, 2)).expect("write");
    std::fs::write(dir.join("boot/config.txt"), b"dtparam=audio=on\n").expect("write");
    std::fs::write(dir.join("boot/overlays/a.dtbo"), test_data(5000, 3)).expect("write");
}

/// Files of each image: (image, DOS path, input path relative to the input dir).
const FILES: &[(&str, &str, &str)] = &[
    ("floppy.vfat", "::/zImage", "zImage"),
    ("floppy.vfat", "::/boot/config.txt", "boot/config.txt"),
    (
        "floppy.vfat",
        "::/boot/overlays/a.dtbo",
        "boot/overlays/a.dtbo",
    ),
    ("boot.vfat", "::/zImage", "zImage"),
    ("boot.vfat", "::/rootfs.bin", "rootfs.bin"),
    ("boot.vfat", "::/renamed.bin", "rootfs.bin"),
    ("boot.vfat", "::/boot/config.txt", "boot/config.txt"),
    (
        "boot.vfat",
        "::/boot/overlays/a.dtbo",
        "boot/overlays/a.dtbo",
    ),
];

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn genimage_vfat_images_with_our_mkdosfs_equal_dosfstools() {
    let genimage = require_tool("genimage");
    require_tool("mcopy");
    let links = Links::new();
    let tmp = TempDir::new("genimage");
    let input = tmp.join("input");
    inputs(&input);
    let config = tmp.join("genimage.cfg");
    std::fs::write(&config, CONFIG).expect("write the config");
    let mut reports: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    let mut trees: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for mkfs in Mkfs::BOTH {
        let work = tmp.subdir(mkfs.tag());
        let (root, scratch, out) = (work.join("root"), work.join("tmp"), work.join("images"));
        std::fs::create_dir_all(&root).expect("mkdir root");
        let run = links.run(
            mkfs,
            &genimage,
            &[
                "--config",
                &s(&config),
                "--rootpath",
                &s(&root),
                "--tmppath",
                &s(&scratch),
                "--inputpath",
                &s(&input),
                "--outputpath",
                &s(&out),
            ],
        );
        assert!(
            run.success(),
            "genimage with the {} mkdosfs:\n{run}",
            mkfs.tag()
        );
        for image in ["floppy.vfat", "boot.vfat"] {
            let path = out.join(image);
            assert_fsck_clean(&path, false);
            for (_, dos, src) in FILES.iter().filter(|(i, ..)| *i == image) {
                assert_file(&path, dos, &input.join(src), &tmp);
            }
            let report = blkid(&path);
            let tree = tree(&path);
            match mkfs {
                Mkfs::Real => {
                    reports.insert(image, report);
                    trees.insert(image, tree);
                }
                Mkfs::Ours => {
                    let what = format!("genimage {image}");
                    assert_same_blkid(
                        &what,
                        &reports[image],
                        &report,
                        &["TYPE", "VERSION", "LABEL", "LABEL_FATBOOT", "SEC_TYPE"],
                    );
                    if image == "boot.vfat" {
                        assert_same_blkid(&what, &reports[image], &report, &["UUID"]);
                        assert_eq!(report.get("UUID").map(String::as_str), Some("1234-ABCD"));
                    }
                    assert_eq!(tree, trees[image], "{what}: the trees differ");
                }
            }
        }
    }
}
