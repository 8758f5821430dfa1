//! The CLI on block devices (loop devices, as root): formatting with and
//! without a table at 512- and 4096-byte sectors, the `device` report,
//! discard, `--full`, `list`, and the refusals (mounted device, no terminal
//! without `--yes`, a sector size below the device's) that must leave the
//! device byte-for-byte unchanged.

use mkfs_alloc_tests::blk::{
    allocated_bytes, blockdev_sizes, fill_random, nonzero_offsets, sfdisk_json, Window,
};
use mkfs_alloc_tests::{
    file_hash, fill_file, json_str, json_u64, matrix_cases, mkfs_alloc, read_at, require_root,
    sparse_file, test_data, CmdOutput, FuseMount, LoopDevice, MkfsJson, TempDir, MIB, SENTINEL,
};
use serde_json::Value;
use std::path::Path;

const SERIAL: &str = "1234ABCD";

/// Runs `mkfs-alloc ARGS DEV` (stdin is /dev/null: no terminal).
#[track_caller]
fn mkfs_dev(args: &[&str], dev: &Path) -> CmdOutput {
    let dev = dev.to_string_lossy();
    let mut all = args.to_vec();
    all.push(&dev);
    mkfs_alloc(&all)
}

/// `notes` of a JSON report, joined.
fn notes(json: &MkfsJson) -> String {
    json.value["notes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

/// Formats a loop device (`sector`-byte sectors) with `table` ("none" or
/// "auto"), then checks the result with fsck and a FUSE round trip.
fn format_device_case(fs: &str, sector: u32, table: &str, seed: u64) {
    require_root();
    let name = format!("{fs}-{sector}-{table}");
    let tmp = TempDir::new(&format!("dev-{name}"));
    let img = tmp.join("disk.img");
    // FAT32 with 4 KiB clusters needs > 256 MiB; exFAT is happy with 64.
    let (size, cluster) = if fs == "fat32" {
        (320 * MIB, "4K")
    } else {
        (64 * MIB, "4K")
    };
    sparse_file(&img, size);
    let lo = LoopDevice::attach_sector(&img, sector);
    let out = mkfs_dev(
        &[
            "--fs",
            fs,
            "--cluster",
            cluster,
            "--table",
            table,
            "--serial",
            SERIAL,
            "--yes",
            "--json",
        ],
        lo.path(),
    );
    out.assert_success();
    let json = MkfsJson::parse(&out);
    assert_eq!(json.u64("sector_size"), u64::from(sector), "{name}: {out}");
    let dev = &json.value["device"];
    assert_eq!(
        json_u64(dev, "logical_block_size"),
        u64::from(sector),
        "{name}: {out}"
    );
    let t = &json.value["table"];
    let (offset, len) = if table == "none" {
        assert_eq!(json_str(t, "kind"), "none", "{name}: {out}");
        assert_eq!(json.u64("partition_offset"), 0, "{name}: {out}");
        // The formatted device itself reads as a clean file system.
        Window {
            image: &img,
            fs,
            sector,
            offset: 0,
            len: size,
        }
        .fsck_dev(lo.path());
        (0, size)
    } else {
        // auto on a whole disk below 2 TiB: MBR.
        assert_eq!(json_str(t, "kind"), "mbr", "{name}: {out}");
        let (start, plen) = (json_u64(t, "partition_start"), json_u64(t, "partition_len"));
        let sf = sfdisk_json(lo.path());
        assert_eq!(sf.label, "dos", "{name}");
        assert_eq!(sf.sector_size, u64::from(sector), "{name}");
        assert_eq!(sf.partitions.len(), 1, "{name}: {sf:?}");
        let p = &sf.partitions[0];
        assert_eq!(
            (p.start * u64::from(sector), p.size * u64::from(sector)),
            (start, plen),
            "{name}: sfdisk {sf:?}"
        );
        assert_eq!(p.type_, if fs == "exfat" { "7" } else { "c" }, "{name}");
        (start, plen)
    };
    // The window is opened on the backing file once the device is gone.
    drop(lo);
    let data = test_data(200 * 1024 + 3, seed);
    Window {
        image: &img,
        fs,
        sector,
        offset,
        len,
    }
    .round_trip(&tmp.subdir("scratch"), &data);
}

matrix_cases! { format_device_case;
    format_loop_device_512_no_table_exfat: "exfat", 512, "none", 1;
    format_loop_device_512_auto_table_fat32: "fat32", 512, "auto", 2;
    format_loop_device_4096_no_table_fat32: "fat32", 4096, "none", 3;
    format_loop_device_4096_auto_table_exfat: "exfat", 4096, "auto", 4;
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn json_device_reports_what_blockdev_reports() {
    require_root();
    let tmp = TempDir::new("dev-json");
    for (sector, size) in [(512u32, 48 * MIB + 512 * 3), (4096, 80 * MIB)] {
        let img = tmp.join(&format!("d{sector}.img"));
        sparse_file(&img, size);
        let lo = LoopDevice::attach_sector(&img, sector);
        let (ss, pbsz, bytes) = blockdev_sizes(lo.path());
        assert_eq!(ss, u64::from(sector), "blockdev --getss");
        let hash = file_hash(&img);
        let out = mkfs_dev(&["--fs", "exfat", "--dry-run", "--json"], lo.path());
        out.assert_success();
        assert_eq!(file_hash(&img), hash, "the dry run changed the device");
        let json = MkfsJson::parse(&out);
        let dev = &json.value["device"];
        assert_eq!(json_str(dev, "path"), lo.path().to_string_lossy(), "{out}");
        assert_eq!(
            (
                json_u64(dev, "logical_block_size"),
                json_u64(dev, "physical_block_size"),
                json_u64(dev, "size_bytes"),
            ),
            (ss, pbsz, bytes),
            "device in --json vs blockdev --getss --getpbsz --getsize64\n{out}"
        );
        assert_eq!(json.u64("sector_size"), ss, "default sector size: {out}");
        assert_eq!(
            json_u64(&json.value["table"], "medium_bytes"),
            bytes,
            "{out}"
        );
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn list_json_includes_the_loop_device_with_its_size() {
    require_root();
    let tmp = TempDir::new("dev-list");
    let img = tmp.join("list.img");
    let size = 72 * MIB + 4096;
    sparse_file(&img, size);
    let lo = LoopDevice::attach_sector(&img, 4096);
    let out = mkfs_alloc(&["list", "--json"]);
    out.assert_success();
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("list --json is not JSON ({e}):\n{out}"));
    let devices = v
        .as_array()
        .unwrap_or_else(|| panic!("list --json is not an array:\n{out}"));
    let path = lo.path().to_string_lossy();
    let d = devices
        .iter()
        .find(|d| d["path"].as_str() == Some(path.as_ref()))
        .unwrap_or_else(|| panic!("list --json does not include {path}:\n{out}"));
    assert_eq!(json_u64(d, "size_bytes"), size, "{d}");
    assert_eq!(json_u64(d, "logical_block_size"), 4096, "{d}");
}

/// Formats a loop device of `img` with `--fs fs --cluster cluster --table
/// none --yes --json` and `extra`; asserts success, detaches the device.
#[track_caller]
fn format_no_table(img: &Path, fs: &str, cluster: &str, extra: &[&str]) -> CmdOutput {
    let lo = LoopDevice::attach(img);
    let mut args = vec![
        "--fs",
        fs,
        "--cluster",
        cluster,
        "--table",
        "none",
        "--yes",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = mkfs_dev(&args, lo.path());
    out.assert_success();
    out
}

/// Allocated bytes of a 64 MiB random-filled backing file after formatting
/// its loop device with `extra` options.
fn allocated_after_format(tmp: &TempDir, name: &str, extra: &[&str]) -> (u64, u64, MkfsJson) {
    let img = tmp.join(name);
    fill_random(&img, 64 * MIB, 0xD15C);
    let before = allocated_bytes(&img);
    assert!(
        before >= 64 * MIB,
        "the random fill is not allocated: {before}"
    );
    let out = format_no_table(&img, "exfat", "4K", extra);
    (before, allocated_bytes(&img), MkfsJson::parse(&out))
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn discard_releases_the_backing_files_blocks_and_no_discard_does_not() {
    require_root();
    let tmp = TempDir::new("dev-discard");
    let (before, after, json) = allocated_after_format(&tmp, "discard.img", &[]);
    assert!(
        after < before / 4,
        "default (discard) run: {after} bytes still allocated of {before}; notes: {}",
        notes(&json)
    );
    assert!(
        notes(&json).contains("discard"),
        "no discard note: {}",
        json.value
    );
    let (before_nd, after_nd, json_nd) =
        allocated_after_format(&tmp, "no-discard.img", &["--no-discard"]);
    assert!(
        after_nd > before_nd * 9 / 10,
        "--no-discard run released blocks: {after_nd} of {before_nd} allocated; notes: {}",
        notes(&json_nd)
    );
    assert!(
        after_nd > after + 32 * MIB,
        "--no-discard ({after_nd}) vs discard ({after})"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mounted_device_is_refused_and_left_unchanged() {
    require_root();
    let tmp = TempDir::new("dev-mounted");
    let img = tmp.join("mounted.img");
    sparse_file(&img, 64 * MIB);
    let lo = LoopDevice::attach(&img);
    mkfs_dev(
        &["--fs", "exfat", "--table", "none", "--yes", "-q"],
        lo.path(),
    )
    .assert_success();
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    // Let the driver settle (it marks the volume dirty when mounting).
    std::thread::sleep(std::time::Duration::from_millis(200));
    let hash = file_hash(&img);
    for extra in [&["--table", "none"][..], &[][..], &["--json"][..]] {
        let mut args = vec!["--fs", "exfat", "--yes"];
        args.extend_from_slice(extra);
        let out = mkfs_dev(&args, lo.path());
        out.assert_code(2);
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(
            text.contains(&*mnt.to_string_lossy()),
            "the refusal does not name the mount point {}:\n{out}",
            mnt.display()
        );
        assert_eq!(file_hash(&img), hash, "the refused run changed the device");
    }
    std::fs::read_dir(&mnt).expect("the mount still works after the refusals");
    m.unmount();
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn no_terminal_without_yes_is_refused_and_left_unchanged() {
    require_root();
    let tmp = TempDir::new("dev-noyes");
    let img = tmp.join("noyes.img");
    fill_file(&img, 48 * MIB, SENTINEL);
    let hash = file_hash(&img);
    let lo = LoopDevice::attach(&img);
    for extra in [&[][..], &["--table", "none"][..], &["--json"][..]] {
        let mut args = vec!["--fs", "exfat"];
        args.extend_from_slice(extra);
        // mkfs_alloc runs with stdin = /dev/null.
        let out = mkfs_dev(&args, lo.path());
        out.assert_code(2);
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(
            text.contains("--yes"),
            "the refusal does not mention --yes:\n{out}"
        );
        assert_eq!(file_hash(&img), hash, "the refused run changed the device");
    }
    drop(lo);
    assert_eq!(file_hash(&img), hash);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sector_size_below_the_devices_is_refused() {
    require_root();
    let tmp = TempDir::new("dev-sector");
    let img = tmp.join("4k.img");
    fill_file(&img, 64 * MIB, SENTINEL);
    let hash = file_hash(&img);
    let lo = LoopDevice::attach_sector(&img, 4096);
    for s in ["512", "1024", "2048"] {
        let out = mkfs_dev(&["--fs", "exfat", "--sector-size", s, "--yes"], lo.path());
        out.assert_code(2);
        assert!(
            out.stderr.contains("4096"),
            "the refusal does not name the device's sector size:\n{out}"
        );
        assert_eq!(file_hash(&img), hash, "the refused run changed the device");
    }
    // The device's own sector size is accepted (plan only).
    mkfs_dev(
        &["--fs", "exfat", "--sector-size", "4096", "--dry-run"],
        lo.path(),
    )
    .assert_success();
    assert_eq!(file_hash(&img), hash, "the dry run changed the device");
}

/// Fills a 64 MiB backing file with 0xAA, formats its loop device with
/// `extra` and `--table none`, and returns the non-zero offsets found in the
/// free-cluster area (and the tail), read from the backing file.
fn nonzero_free_area(tmp: &TempDir, fs: &str, cluster: &str, extra: &[&str]) -> Vec<u64> {
    let img = tmp.join(&format!("{fs}-{}.img", extra.join("")));
    fill_file(&img, 64 * MIB, 0xAA);
    let out = format_no_table(&img, fs, cluster, extra);
    let json = MkfsJson::parse(&out);
    let regions = json.value["regions"]
        .as_array()
        .unwrap_or_else(|| panic!("no regions:\n{out}"));
    let mut bad = Vec::new();
    let mut checked = 0u64;
    for r in regions {
        let kind = json_str(r, "kind");
        if kind != "free_clusters" && kind != "tail" {
            continue;
        }
        let (off, len) = (json_u64(r, "offset"), json_u64(r, "len"));
        let mut at = off;
        while at < off + len {
            let n = (off + len - at).min(MIB);
            let chunk = read_at(&img, at, usize::try_from(n).expect("fits"));
            bad.extend(nonzero_offsets(&chunk, at, 4));
            at += n;
            checked += n;
        }
    }
    assert!(checked > 48 * MIB, "free area only {checked} bytes:\n{out}");
    bad
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn full_zeroes_the_free_cluster_area() {
    require_root();
    let tmp = TempDir::new("dev-full");
    // Control: a quick format without discard leaves the old bytes, so the
    // check below can see them.
    let quick = nonzero_free_area(&tmp, "exfat", "4K", &["--no-discard"]);
    assert!(
        !quick.is_empty(),
        "a quick --no-discard format left no old bytes: the check is blind"
    );
    for (fs, cluster, extra) in [
        ("exfat", "4K", &["--full"][..]),
        ("fat32", "512", &["--full", "--no-discard"][..]),
    ] {
        let bad = nonzero_free_area(&tmp, fs, cluster, extra);
        assert!(
            bad.is_empty(),
            "{fs} {extra:?}: non-zero bytes left in the free area at {:?}",
            &bad[..bad.len().min(16)]
        );
    }
}
