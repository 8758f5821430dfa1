//! `mkfs-alloc resize` to a smaller size of a volume inside a partition
//! sfdisk made (MBR and GPT), as a black box (tool tier): an exFAT volume
//! by mkfs.exfat filled through exfat-fuse, a FAT32 one by mkfs.fat filled
//! by mtools, each with data past the new end. The dry run names the
//! entry's sectors before and after (text and `--json`) and writes
//! nothing; a refusal exits 2 with the image byte-identical; the shrink
//! leaves sfdisk --verify (and sgdisk -v) clean, the `sfdisk --dump` of
//! before but for partition 1's size, which ends at the 1 MiB boundary
//! after the volume's new end, the image's length, every byte outside the
//! old partition but the table's, a volume clean for its fsck with every
//! file byte-identical, and a second run with nothing to do.

use mkfs_alloc_tests::checks::{fsck_exfat_clean, fsck_fat_clean, mtools};
use mkfs_alloc_tests::cmd::{tool_ok, tool_stdin};
use mkfs_alloc_tests::fat_cuts::files_through_mcopy;
use mkfs_alloc_tests::tools::{require_fuse, require_root, require_tool};
use mkfs_alloc_tests::{mkfs_alloc, run, test_data, FuseMount, LoopDevice, LoopOptions, TempDir};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

type Files = Vec<(String, Vec<u8>)>;

/// `n` files of about `len` bytes in directory `top` (seeded by `seed`).
fn files(top: &str, n: usize, len: usize, seed: u64) -> Files {
    (0..n)
        .map(|i| {
            let path = format!("{top}/file {i:03}.bin");
            (
                path,
                test_data(len + i * 997, seed * 1000 + 2 * i as u64 + 1),
            )
        })
        .collect()
}

fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) {
    for (path, data) in files {
        let f = dir.join(path);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, data).expect("write");
    }
}

/// `(start, size)` in bytes of partition 1 of `img`, from `sfdisk -J`.
fn partition_span(img: &Path) -> (u64, u64) {
    let json = tool_ok("sfdisk", &["-J", img.to_str().expect("utf-8")]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("sfdisk -J");
    let p = &v["partitiontable"]["partitions"][0];
    match (p["start"].as_u64(), p["size"].as_u64()) {
        (Some(s), Some(z)) => (s * 512, z * 512),
        _ => panic!("no partition 1 in {json}"),
    }
}

/// A loop device over partition 1 of `img`.
fn window(img: &Path) -> LoopDevice {
    let opts = LoopOptions {
        window: Some(partition_span(img)),
        ..LoopOptions::default()
    };
    LoopDevice::attach_with(img, opts)
}

/// `sfdisk --dump`, its blanks collapsed.
fn dump(img: &Path) -> Vec<String> {
    tool_ok("sfdisk", &["--dump", img.to_str().expect("utf-8")])
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The bytes of `img` outside the table (LBA 0, and for a GPT LBA 1..=33
/// and the last 33 LBAs) and outside the partition `(start, size)`.
fn outside(img: &[u8], gpt: bool, (start, size): (u64, u64)) -> Vec<u8> {
    let head = if gpt { 34 * 512 } else { 512 };
    let tail = if gpt { 33 * 512 } else { 0 };
    let (s, e) = (start as usize, (start + size) as usize);
    let mut v = img[head..s].to_vec();
    v.extend_from_slice(&img[e..(img.len() - tail).max(e)]);
    v
}

/// A 64 MiB image whose partition 1 (48 MiB at 1 MiB, sfdisk) holds the
/// volume `make` makes on its loop window.
fn sfdisk_image(tmp: &TempDir, gpt: bool, mbr_type: &str, make: &dyn Fn(&LoopDevice)) -> PathBuf {
    let img = tmp.join("disk.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(64 * MIB))
        .expect("image");
    let (label, ty) = if gpt {
        ("gpt", "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7")
    } else {
        ("dos", mbr_type)
    };
    let script = format!("label: {label}\nstart=2048, size=48M, type={ty}\n");
    tool_stdin("sfdisk", &["-q", img.to_str().expect("utf-8")], &script);
    make(&window(&img));
    img
}

/// Shrinks the volume in partition 1 of `img` to `new` bytes through the
/// CLI and checks the table and the bytes around it (module docs);
/// `check` then judges the volume on its loop window.
fn shrink_and_check(img: &Path, gpt: bool, new: u64, check: &dyn Fn(&LoopDevice)) {
    let p = img.to_str().expect("utf-8");
    let size = new.to_string();
    let (start, old) = partition_span(img);
    let want = (start + new).next_multiple_of(MIB) - start;
    assert!(want < old, "{want} {old}");
    let before = std::fs::read(img).expect("read");
    let dump_before = dump(img);
    // Refusals: below the data, and no --yes without a terminal.
    for args in [
        &["resize", "--size", "2M", "--yes", p][..],
        &["resize", "--size", &size, p][..],
    ] {
        mkfs_alloc(args).assert_code(2);
        assert!(std::fs::read(img).expect("read") == before, "{args:?}");
    }
    let out = mkfs_alloc(&["resize", "--size", &size, "--dry-run", "--json", p]);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let part = &v["partition"];
    assert_eq!(part["sectors"][0], old / 512, "{v:#}");
    assert_eq!(part["sectors"][1], want / 512, "{v:#}");
    assert_eq!(part["written"], "last", "{v:#}");
    assert!(v["grow"].get("partition").is_none(), "{v:#}");
    // Data lies past the new end: the shrink moves it.
    assert!(v["grow"]["moved_clusters"].as_u64() > Some(0), "{v:#}");
    let text = mkfs_alloc(&["resize", "--size", &size, "--dry-run", p]);
    text.assert_success();
    let sectors = format!("{} -> {} sectors", old / 512, want / 512);
    assert!(text.stdout.contains(&sectors), "{text}");
    assert!(std::fs::read(img).expect("read") == before);

    mkfs_alloc(&["resize", "--size", &size, "--yes", "-q", p]).assert_success();
    let after = std::fs::read(img).expect("read");
    assert_eq!(after.len(), before.len(), "the image file changed length");
    tool_ok("sfdisk", &["--verify", p]);
    if gpt {
        let out = tool_ok("sgdisk", &["-v", p]);
        assert!(out.contains("No problems found"), "{out}");
    }
    assert_eq!(partition_span(img), (start, want));
    let old_size = format!("size= {},", old / 512);
    let new_size = format!("size= {},", want / 512);
    let expected: Vec<String> = dump_before
        .iter()
        .map(|l| l.replace(&old_size, &new_size))
        .collect();
    assert_eq!(dump(img), expected);
    assert!(
        outside(&after, gpt, (start, old)) == outside(&before, gpt, (start, old)),
        "bytes outside the partition and the table changed"
    );
    check(&window(img));
    // (The check's exfat-fuse mount writes.)
    let after = std::fs::read(img).expect("read");
    let again = mkfs_alloc(&["resize", "--size", &size, "--yes", p]);
    again.assert_success();
    assert!(again.stderr.contains("nothing to do"), "{again}");
    assert!(std::fs::read(img).expect("read") == after);
}

/// exFAT: 32 files of 1 MiB, every other one deleted, then 4 more: data
/// up to 32 MiB, holes below; shrunk to 28 MiB + 64 KiB.
fn exfat_shrinks(gpt: bool) {
    require_root();
    require_fuse();
    require_tool("mkfs.exfat");
    let tmp = TempDir::new(if gpt {
        "shrink-gpt-exfat"
    } else {
        "shrink-mbr-exfat"
    });
    let first = files("first", 32, 1 << 20, 1);
    let second = files("second", 4, 700_000, 2);
    let mnt = tmp.subdir("mnt");
    let img = sfdisk_image(&tmp, gpt, "7", &|lo| {
        run(require_tool("mkfs.exfat"), &["-L", "SHRINK", lo.path_str()]).assert_success();
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_files(&mnt, &first);
        for (path, _) in first.iter().step_by(2) {
            std::fs::remove_file(mnt.join(path)).expect("rm");
        }
        write_files(&mnt, &second);
        m.unmount();
    });
    let kept: Files = first
        .iter()
        .skip(1)
        .step_by(2)
        .chain(&second)
        .cloned()
        .collect();
    let check_mnt = tmp.subdir("check");
    shrink_and_check(&img, gpt, 28 * MIB + (64 << 10), &|lo| {
        fsck_exfat_clean(lo.path());
        let m = FuseMount::exfat(lo.path(), &check_mnt);
        for (path, data) in &kept {
            assert!(
                std::fs::read(check_mnt.join(path)).expect("read") == *data,
                "{path}"
            );
        }
        m.unmount();
    });
}

/// FAT32 at 512-byte clusters: 24 MiB in `first`, 14 MiB in `second`
/// after it, `first` deleted, 6 MiB in `third` (below): data up to about
/// 38 MiB; shrunk to 36 MiB + 32 KiB.
fn fat32_shrinks(gpt: bool) {
    require_root();
    require_tool("mkfs.fat");
    let tmp = TempDir::new(if gpt {
        "shrink-gpt-fat32"
    } else {
        "shrink-mbr-fat32"
    });
    let sets = [
        files("first", 24, 1 << 20, 3),
        files("second", 14, 1 << 20, 4),
        files("third", 6, 1 << 20, 5),
    ];
    let src = tmp.subdir("src");
    for set in &sets {
        write_files(&src, set);
    }
    let img = sfdisk_image(&tmp, gpt, "c", &|lo| {
        let dev = lo.path_str();
        run(
            require_tool("mkfs.fat"),
            &["-F", "32", "-s", "1", "-n", "SHRINK", dev],
        )
        .assert_success();
        // The directories first: a directory's start past the new end is
        // refused (not moved yet).
        mtools("mmd", lo.path(), &["::/first", "::/second", "::/third"]).assert_success();
        for (i, (top, set)) in ["first", "second", "third"].iter().zip(&sets).enumerate() {
            if i == 2 {
                mtools("mdeltree", lo.path(), &["::/first"]).assert_success();
            }
            let mut args: Vec<String> = set
                .iter()
                .map(|(path, _)| src.join(path).to_string_lossy().into_owned())
                .collect();
            args.push(format!("::/{top}/"));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            mtools("mcopy", lo.path(), &args).assert_success();
        }
    });
    let kept: Files = sets[1].iter().chain(&sets[2]).cloned().collect();
    shrink_and_check(&img, gpt, 36 * MIB + (32 << 10), &|lo| {
        fsck_fat_clean(lo.path());
        files_through_mcopy(&tmp, lo.path(), &kept, false).expect("every file");
    });
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, mkfs.exfat, exfat-fuse, fsck.exfat)"]
fn an_exfat_shrink_inside_an_sfdisk_mbr_partition_shrinks_its_entry() {
    exfat_shrinks(false);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, sgdisk, mkfs.exfat, exfat-fuse, fsck.exfat)"]
fn an_exfat_shrink_inside_an_sfdisk_gpt_partition_shrinks_its_entry() {
    exfat_shrinks(true);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, mkfs.fat, mtools, fsck.fat)"]
fn a_fat32_shrink_inside_an_sfdisk_mbr_partition_shrinks_its_entry() {
    fat32_shrinks(false);
}

#[test]
#[ignore = "tool tier: cargo xtask test (root, sfdisk, sgdisk, mkfs.fat, mtools, fsck.fat)"]
fn a_fat32_shrink_inside_an_sfdisk_gpt_partition_shrinks_its_entry() {
    fat32_shrinks(true);
}
