//! What the planner chooses or reports besides the bytes of a volume: the
//! cluster size Windows would pick (the comparison `info` and `advise`
//! print), labels too long for the file system, and fresh serials. The
//! expectations are written from their sources, not from the code.

use mkfs_alloc_layout::label::LabelError;
use mkfs_alloc_layout::rules::windows_default;
use mkfs_alloc_layout::{
    plan, random_serial, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium, PlanError,
};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const MB: u64 = 1_000_000;
const GB: u64 = 1_000_000_000;

/// Microsoft's default cluster sizes (KB140365, "Default cluster size for
/// NTFS, FAT, and exFAT"), each row the largest volume it covers and the
/// size; `None` where Windows' format refuses. Each bound is checked at the
/// bound and one byte above.
#[test]
fn the_windows_default_follows_kb140365_at_every_bound() {
    // (file system, last volume size of the row, the row's size, the next row's size)
    let rows: &[(FsKind, u64, Option<u64>, Option<u64>)] = &[
        (FsKind::Fat16, 7 * MIB - 1, None, Some(2 * KIB)),
        (FsKind::Fat16, 16 * MIB, Some(2 * KIB), Some(512)),
        (FsKind::Fat16, 32 * MIB, Some(512), Some(KIB)),
        (FsKind::Fat16, 64 * MIB, Some(KIB), Some(2 * KIB)),
        (FsKind::Fat16, 128 * MIB, Some(2 * KIB), Some(4 * KIB)),
        (FsKind::Fat16, 256 * MIB, Some(4 * KIB), Some(8 * KIB)),
        (FsKind::Fat16, 512 * MIB, Some(8 * KIB), Some(16 * KIB)),
        (FsKind::Fat16, GIB, Some(16 * KIB), Some(32 * KIB)),
        (FsKind::Fat16, 2 * GIB, Some(32 * KIB), Some(64 * KIB)),
        (FsKind::Fat16, 4 * GIB - 1, Some(64 * KIB), None),
        (FsKind::Fat32, 32 * MIB, None, Some(512)),
        (FsKind::Fat32, 64 * MIB, Some(512), Some(KIB)),
        (FsKind::Fat32, 128 * MIB, Some(KIB), Some(2 * KIB)),
        (FsKind::Fat32, 256 * MIB, Some(2 * KIB), Some(4 * KIB)),
        (FsKind::Fat32, 8 * GB - 1, Some(4 * KIB), Some(8 * KIB)),
        (FsKind::Fat32, 16 * GB - 1, Some(8 * KIB), Some(16 * KIB)),
        (FsKind::Fat32, 32 * GB, Some(16 * KIB), None),
        (FsKind::Exfat, 7 * MB - 1, None, Some(4 * KIB)),
        (FsKind::Exfat, 256 * MB, Some(4 * KIB), Some(32 * KIB)),
        (FsKind::Exfat, 32 * GB, Some(32 * KIB), Some(128 * KIB)),
    ];
    for &(fs, last, at, above) in rows {
        assert_eq!(windows_default(fs, last), at, "{fs} at {last} bytes");
        assert_eq!(
            windows_default(fs, last + 1),
            above,
            "{fs} at {} bytes",
            last + 1
        );
    }
    // Well inside each row, too (a bound moved by a factor shows here).
    assert_eq!(windows_default(FsKind::Fat16, 100 * MIB), Some(2 * KIB));
    assert_eq!(windows_default(FsKind::Fat32, 12 * GB), Some(8 * KIB));
    assert_eq!(windows_default(FsKind::Fat32, 2 * GB), Some(4 * KIB));
    assert_eq!(windows_default(FsKind::Exfat, 2 * GB), Some(32 * KIB));
    assert_eq!(windows_default(FsKind::Exfat, 2048 * GB), Some(128 * KIB));
    assert_eq!(windows_default(FsKind::Fat12, 4 * MIB), None);
}

fn plan_label(fs: FsKind, label: &str) -> Result<(), PlanError> {
    let (size, cluster) = match fs {
        FsKind::Fat32 => (64 * MIB, 512),
        FsKind::Fat16 => (16 * MIB, 2048),
        _ => (16 * MIB, 4096),
    };
    let o = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .label(label);
    plan(&o, &Medium::whole(size, 512).expect("medium")).map(|_| ())
}

/// FAT's label is 11 bytes (the boot sector's BS_VolLab, the root's volume
/// entry), exFAT's 11 UTF-16 units (the Volume Label entry's 22 bytes).
#[test]
fn a_label_longer_than_the_file_system_holds_is_refused() {
    let long = "A".repeat(50);
    for fs in [FsKind::Fat12, FsKind::Fat16, FsKind::Fat32, FsKind::Exfat] {
        match plan_label(fs, &long) {
            Err(PlanError::Label(LabelError::TooLong { len, .. })) => {
                assert_eq!(len, 50, "{fs}: the whole label's length is reported");
            }
            other => panic!("{fs}: a 50-character label gave {other:?}"),
        }
        let fits = plan_label(fs, "ABCDEFGHIJK");
        assert!(fits.is_ok(), "{fs}: 11 characters: {fits:?}");
        assert!(
            matches!(
                plan_label(fs, "ABCDEFGHIJKL"),
                Err(PlanError::Label(LabelError::TooLong { len: 12, .. }))
            ),
            "{fs}: 12 characters do not fit"
        );
    }
    // Trailing spaces do not count.
    assert!(plan_label(FsKind::Fat32, &format!("ABCDEFGHIJK{}", " ".repeat(40))).is_ok());
}

/// Every bit of a fresh serial is 0 about as often as 1: over 4,096 serials
/// each bit's count of ones is 2,048 ± 300 (nine standard deviations; a
/// serial mixed with OR instead of XOR has three ones in four).
#[test]
fn fresh_serials_have_every_bit_balanced() {
    let mut ones = [0u32; 32];
    for _ in 0..4096 {
        let s = random_serial();
        for (bit, n) in ones.iter_mut().enumerate() {
            *n += (s >> bit) & 1;
        }
    }
    for (bit, n) in ones.iter().enumerate() {
        assert!(
            (1748..=2348).contains(n),
            "bit {bit}: {n} ones in 4,096 serials"
        );
    }
}

/// The serial a clock time gives (the CLI's serial without `--serial`,
/// pinned by `SOURCE_DATE_EPOCH`): Vigna's splitmix64 finaliser of the
/// seconds XOR the nanoseconds shifted into the high half, folded to 32
/// bits by XOR. The finaliser is written out here from its published
/// constants, not taken from the code.
#[test]
fn a_serial_from_the_clock_is_splitmix64_folded() {
    fn splitmix64(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    for (secs, nanos) in [
        (0i64, 0u32),
        (1_700_000_000, 0),
        (315_532_800, 999_999_999),
        (1, 1),
    ] {
        let x = splitmix64((secs as u64) ^ (u64::from(nanos) << 32));
        let want = (x ^ (x >> 32)) as u32;
        let t = mkfs_alloc_layout::Timestamp { secs, nanos };
        let got = mkfs_alloc_layout::plan::serial_from_time(t);
        assert_eq!(got, want, "{secs} s {nanos} ns");
        assert_eq!(t.serial(), want, "Timestamp::serial, {secs} s {nanos} ns");
    }
}
