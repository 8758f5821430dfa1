//! exFAT timestamps keep the odd second: the DOS time
//! field counts 2-second units, the 10-millisecond increment beside it
//! carries the odd second. Source files with odd seconds (23:59:59 of an
//! ordinary day, of 2099-12-31 and of 2107-12-31, the last second exFAT
//! stores) are formatted into an exFAT image with `--rootdir` and read back
//! through exfat-fuse, which adds the increment's whole seconds to the time
//! field (`libexfat/time.c`, `exfat_exfat2unix`: `centisec / 100`).
//!
//! exfat-fuse counts every fourth year from 1980 as a leap year, 2100
//! included ("every 4th year between 1904 and 2096 is leap", same file), so
//! it reads dates after 2100-02-28 one day late: the expected value adds
//! that day; the time of day is what is tested.

use mkfs_alloc_tests::fuse::FuseMount;
use mkfs_alloc_tests::loopdev::LoopDevice;
use mkfs_alloc_tests::mkfs_alloc_env;
use mkfs_alloc_tests::tempdir::TempDir;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime};

/// 2100-03-01T00:00:00Z: exfat-fuse reads dates from here on a day late.
const FUSE_LEAP_2100: i64 = 4_107_542_400;

/// (name, seconds since 1970 UTC, nanoseconds).
const TIMES: &[(&str, i64, u32)] = &[
    ("day-end", 1_715_039_999, 0),                // 2024-05-06 23:59:59
    ("day-end-frac", 1_715_039_999, 750_000_000), // 23:59:59.75
    ("one", 1_715_040_001, 0),                    // 2024-05-07 00:00:01
    ("odd-frac", 1_715_085_297, 250_000_000),     // 12:34:57.25
    ("even", 1_715_039_998, 0),                   // 23:59:58
    ("first-odd", 315_532_801, 0),                // 1980-01-01 00:00:01
    ("century", 4_102_444_799, 0),                // 2099-12-31 23:59:59
    ("last", 4_354_819_199, 0),                   // 2107-12-31 23:59:59
    ("last-frac", 4_354_819_199, 990_000_000),    // 2107-12-31 23:59:59.99
];

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_keeps_the_odd_second() {
    let tmp = TempDir::new("odd-seconds");
    let src = tmp.subdir("src");
    for &(name, secs, nanos) in TIMES {
        let p = src.join(name);
        fs::write(&p, name).expect("write");
        let t = SystemTime::UNIX_EPOCH + Duration::new(secs as u64, nanos);
        fs::File::options()
            .write(true)
            .open(&p)
            .and_then(|f| f.set_modified(t))
            .expect("mtime");
    }
    let img = tmp.join("t.img");
    let (src_s, img_s) = (src.to_string_lossy(), img.to_string_lossy());
    // No SOURCE_DATE_EPOCH: it would clamp the later times.
    let out = mkfs_alloc_env(
        &[
            "--fs",
            "exfat",
            "--size",
            "64M",
            "--rootdir",
            &src_s,
            &img_s,
        ],
        &[("TZ", "UTC")],
    );
    out.assert_success();
    let lo = LoopDevice::attach(&img);
    let mnt = tmp.subdir("mnt");
    let m = FuseMount::exfat(lo.path(), &mnt);
    let got: Vec<(&str, i64)> = TIMES
        .iter()
        .map(|&(name, _, _)| (name, fs::metadata(mnt.join(name)).expect("stat").mtime()))
        .collect();
    m.unmount();
    let want: Vec<(&str, i64)> = TIMES
        .iter()
        .map(|&(name, secs, _)| {
            let late = if secs >= FUSE_LEAP_2100 { 86_400 } else { 0 };
            (name, secs + late)
        })
        .collect();
    assert_eq!(got, want, "exfat-fuse's mtimes (seconds since 1970)");
}
