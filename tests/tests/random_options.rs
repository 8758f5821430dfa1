//! Random option sets (a property test with a fixed seed): the CLI either
//! formats — and then the independent tools accept the image and read back
//! the cluster and sector size we asked for — or rejects the set with exit
//! code 2 and writes nothing. Never anything else (exit 1, a panic).
//!
//! The CLI must accept exactly the sets the library planner accepts, and
//! the planner is not trusted for that alone: every set is also judged by
//! the limits README.md documents, written apart here ([`judge`]): a set
//! one of them forbids must be refused, and every refusal must have a
//! reason there (a limit broken, or a cluster count near or past a FAT
//! width's range once the layout's overhead is allowed for).
//!
//! Each case draws a file system (exfat, fat32, fat16, fat12, fat, auto), a cluster size (a
//! power of two, 256 B..64 MiB), a sector size (512..4096, or an invalid
//! 256 / 1000 / 8192), a volume size (1 MiB..4 GiB, sparse), an alignment
//! (default, or a power of two 512 B..128 MiB), a label (valid and invalid
//! ones), a table (none, mbr, gpt), a serial, and whether the target is a new
//! image (`--size`) or an existing sparse sentinel image.

use mkfs_alloc::layout::{ClusterChoice, FormatOptions, FsChoice, FsKind};
use mkfs_alloc::partition::{TableChoice, TableKind};
use mkfs_alloc::MediumOptions;
use mkfs_alloc_tests::check::{fsck_verdict, sparse_fingerprint, with_volume, Fsck};
use mkfs_alloc_tests::checks::{dump_exfat_cluster_size, fsck_fat_geometry};
use mkfs_alloc_tests::{
    fill_range, mkfs_alloc, require_root, size_arg, sparse_file, spec_count_range, MkfsJson,
    TempDir, MIB, SENTINEL,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// One option set.
#[derive(Debug, Clone)]
struct Opts {
    fs: &'static str,
    cluster: u64,
    sector: u32,
    size: u64,
    align: Option<u64>,
    label: Option<&'static str>,
    table: &'static str,
    serial: u32,
    /// Format an existing sentinel image instead of creating one.
    existing: bool,
}

const LABELS: &[Option<&str>] = &[
    None,
    None,
    Some("DATA"),
    Some("photos 2024"),
    Some("ELEVENCHARS"),
    Some("Größe"),        // exFAT only
    Some("TWELVE_CHARS"), // too long for both
    Some("a*b"),          // forbidden in both
    Some("a.b"),          // forbidden in FAT32 only
];

fn opts() -> impl Strategy<Value = Opts> {
    let fs = select(vec![
        "exfat", "exfat", "fat32", "fat32", "auto", "fat16", "fat12", "fat",
    ]);
    let sector = prop_oneof![
        8 => select(vec![512u32, 512, 1024, 2048, 4096]),
        1 => select(vec![256u32, 1000, 8192]),
    ];
    // Mostly 1..64 sectors, sometimes any power of two 256 B..64 MiB.
    let sector_cluster = sector.prop_flat_map(|sector| {
        let shift = sector.max(256).ilog2();
        let cluster = prop_oneof![
            3 => (shift..=shift + 6).prop_map(|e| 1u64 << e),
            1 => (8u32..=26).prop_map(|e| 1u64 << e),
        ];
        (Just(sector), cluster)
    });
    // Log-uniform 1 MiB..4 GiB, three quarters from 32 MiB on (where FAT32
    // fits).
    let size = prop_oneof![1 => 0u32..=4, 3 => 5u32..=11]
        .prop_flat_map(|e| (1u64 << e)..=(2u64 << e).min(4096))
        .prop_map(|mib| mib * MIB);
    let align = prop_oneof![3 => Just(None), 1 => (9u32..=27).prop_map(|e| Some(1u64 << e))];
    let label = prop_oneof![3 => select(LABELS[..5].to_vec()), 1 => select(LABELS[5..].to_vec())];
    let table = select(vec!["none", "none", "mbr", "gpt"]);
    let existing = prop_oneof![3 => Just(false), 1 => Just(true)];
    (
        fs,
        sector_cluster,
        size,
        align,
        label,
        table,
        any::<u32>(),
        existing,
    )
        .prop_map(
            |(fs, (sector, cluster), size, align, label, table, serial, existing)| Opts {
                fs,
                cluster,
                sector,
                size,
                align,
                label,
                table,
                serial,
                existing,
            },
        )
}

/// What the library planner says about the set: `Ok(fs)` or `Err(reason)`.
fn oracle(o: &Opts) -> Result<FsKind, String> {
    if ![512, 1024, 2048, 4096].contains(&o.sector) {
        return Err(format!("sector size {}", o.sector));
    }
    let mut format = FormatOptions::new()
        .fs(match o.fs {
            "exfat" => FsChoice::Fixed(FsKind::Exfat),
            "fat32" => FsChoice::Fixed(FsKind::Fat32),
            "fat16" => FsChoice::Fixed(FsKind::Fat16),
            "fat12" => FsChoice::Fixed(FsKind::Fat12),
            "fat" => FsChoice::Fat,
            _ => FsChoice::Auto,
        })
        .cluster(ClusterChoice::Bytes(o.cluster))
        .serial(o.serial);
    if let Some(l) = o.label {
        format = format.label(l);
    }
    if let Some(a) = o.align {
        format = format.align(a);
    }
    let opts = MediumOptions::new()
        .format(format)
        .table(TableChoice::Fixed(match o.table {
            "mbr" => TableKind::Mbr,
            "gpt" => TableKind::Gpt,
            _ => TableKind::None,
        }))
        .sector_size(o.sector)
        .map_err(|e| e.to_string())?;
    opts.plan(o.size, o.sector)
        .map(|p| p.layout().fs())
        .map_err(|e| e.to_string())
}

/// What the documented limits say of a set, without the planner.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// A documented limit forbids it: it must be refused.
    Forbidden(String),
    /// Its cluster count may fall outside its width's range, or the
    /// overhead may not fit: a refusal is explained either way.
    Borderline(String),
    /// Every limit is met with room: it must be accepted.
    Valid,
}

/// README.md's limits ("Limits"): sector sizes (GPT on 512 or 4096 only);
/// alignments from the sector size up to 64 MiB, on FAT up to 32,768
/// sectors; cluster sizes (exFAT up to
/// 32 MiB, FAT up to 128 sectors, never under a sector); labels (exFAT 11
/// UTF-16 units without `" * / : < > ? \ |`, FAT 11 ASCII characters
/// without those and `+ , . ; = [ ]`); the cluster counts of each width
/// (FAT12 1..4,068, FAT16 4,101..65,508, FAT32 65,541..268,435,445).
fn judge(o: &Opts) -> Verdict {
    use Verdict::{Borderline, Forbidden, Valid};
    if ![512, 1024, 2048, 4096].contains(&o.sector) {
        return Forbidden(format!("sector size {}", o.sector));
    }
    if o.table == "gpt" && ![512, 4096].contains(&o.sector) {
        return Forbidden(format!("GPT on {}-byte sectors", o.sector));
    }
    if let Some(a) = o.align.filter(|&a| a < u64::from(o.sector) || a > 64 * MIB) {
        return Forbidden(format!("alignment {a}"));
    }
    if o.cluster < u64::from(o.sector) {
        return Forbidden("a cluster smaller than a sector".into());
    }
    // FAT's reserved sectors (BPB_RsvdSecCnt) are 16 bits: an alignment of
    // more than 32,768 sectors cannot be padded to.
    let fat_ok = o.cluster <= 128 * u64::from(o.sector)
        && o.align.is_none_or(|a| a <= 32_768 * u64::from(o.sector));
    let exfat_ok = o.cluster <= 32 * MIB;
    let label_fat = o.label.is_none_or(|l| {
        l.len() <= 11
            && l.bytes()
                .all(|b| b.is_ascii() && b >= 0x20 && !b"\"*+,./:;<=>?[\\]|".contains(&b))
    });
    let label_exfat = o.label.is_none_or(|l| {
        l.encode_utf16().count() <= 11 && l.chars().all(|c| c >= ' ' && !"\"*/:<>?\\|".contains(c))
    });
    // The count lies between what the whole medium would give and what is
    // left after the overhead: the table (the partition starts on an
    // alignment boundary; GPT's backup at the end), three alignments (the
    // FAT's, the data region's, rounding), two FATs of the widest entries,
    // a 32 KiB root.
    let align = o.align.unwrap_or(MIB);
    let table = if o.table == "none" {
        0
    } else {
        align.max(MIB) + MIB
    };
    let hi = o.size / o.cluster;
    let overhead = table + 3 * align + 2 * (hi + 2) * 4 + 32 * 1024 + o.cluster;
    let lo = o.size.saturating_sub(overhead) / o.cluster;
    let fits = |fs: FsKind| -> Result<bool, String> {
        let (ok, label) = if fs == FsKind::Exfat {
            (exfat_ok, label_exfat)
        } else {
            (fat_ok, label_fat)
        };
        if !ok {
            return Err(format!("{fs:?} at {} B clusters", o.cluster));
        }
        if !label {
            return Err(format!("label {:?} on {fs:?}", o.label));
        }
        if lo == 0 || overhead >= o.size {
            return Ok(false);
        }
        Ok(if fs == FsKind::Exfat {
            // exFAT's heap must hold the allocation bitmap, the 5,836-byte
            // compressed up-case table and the root directory (§7.1-7.5),
            // and one cluster more.
            lo > 2 + 5836u64.div_ceil(o.cluster) + (hi / 8).div_ceil(o.cluster)
        } else {
            let (min, max) = spec_count_range(fs);
            min <= lo && hi <= max
        })
    };
    let fixed = match o.fs {
        "exfat" => Some(FsKind::Exfat),
        "fat32" => Some(FsKind::Fat32),
        "fat16" => Some(FsKind::Fat16),
        "fat12" => Some(FsKind::Fat12),
        _ => None,
    };
    match fixed {
        Some(fs) => match fits(fs) {
            Err(why) => Forbidden(why),
            Ok(true) => Valid,
            Ok(false) => Borderline(format!("{fs:?}: {lo}..{hi} clusters")),
        },
        // `fat` and `auto` choose among several: valid when one choice has
        // room (the planner takes the width the size allows), forbidden
        // when every choice breaks a limit.
        None => {
            // `auto` is exFAT above 32 GiB, else as `fat` (README.md).
            let kinds: &[FsKind] = if o.fs == "auto" && o.size > 32 << 30 {
                &[FsKind::Exfat]
            } else {
                &[FsKind::Fat32, FsKind::Fat16, FsKind::Fat12]
            };
            let results: Vec<_> = kinds.iter().map(|&k| fits(k)).collect();
            if results.iter().all(Result::is_err) {
                Forbidden(format!("{}: no file system meets the limits", o.fs))
            } else if results.iter().any(|r| r == &Ok(true)) {
                Valid
            } else {
                Borderline(format!("{}: every choice is near a limit", o.fs))
            }
        }
    }
}

static ACCEPTED: AtomicUsize = AtomicUsize::new(0);
static REJECTED: AtomicUsize = AtomicUsize::new(0);

fn check(o: &Opts) -> Result<(), TestCaseError> {
    let tmp = TempDir::new("random");
    let img = tmp.join("target.img");
    let img_s = img.to_string_lossy().into_owned();
    // The existing image: sparse, sentinel in its first and last MiB.
    let ranges = [
        (0, MIB.min(o.size)),
        (o.size.saturating_sub(MIB), MIB.min(o.size)),
    ];
    let before = o.existing.then(|| {
        sparse_file(&img, o.size);
        for (off, len) in ranges {
            fill_range(&img, off, len, SENTINEL);
        }
        sparse_fingerprint(&img, &ranges)
    });
    let size_s = size_arg(o.size);
    let cluster_s = size_arg(o.cluster);
    let sector_s = o.sector.to_string();
    let serial_s = format!("{:08X}", o.serial);
    let mut args: Vec<String> = vec![
        "--fs".into(),
        o.fs.into(),
        "--cluster".into(),
        cluster_s,
        "--sector-size".into(),
        sector_s,
        "--serial".into(),
        serial_s,
        "--table".into(),
        o.table.into(),
        "--json".into(),
        "-q".into(),
    ];
    if !o.existing {
        args.extend(["--size".into(), size_s]);
    }
    if let Some(a) = o.align {
        args.extend(["--align".into(), size_arg(a)]);
    }
    if let Some(l) = o.label {
        args.extend(["--label".into(), l.into()]);
    }
    args.push(img_s);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = mkfs_alloc(&refs);
    let expected = oracle(o);
    eprintln!(
        "case: {} {} B clusters, {} B sectors, {} {}, align {:?}, label {:?}, table {} -> exit {:?}",
        o.fs,
        o.cluster,
        o.sector,
        size_arg(o.size),
        if o.existing { "existing" } else { "new" },
        o.align,
        o.label,
        o.table,
        out.code
    );
    let verdict = judge(o);
    match out.code {
        Some(0) => {
            ACCEPTED.fetch_add(1, Ordering::Relaxed);
            if let Verdict::Forbidden(why) = &verdict {
                return Err(TestCaseError::fail(format!(
                    "the CLI accepted a set the documented limits forbid ({why}):\n{out}"
                )));
            }
            let fs = expected.map_err(|why| {
                TestCaseError::fail(format!(
                    "the CLI accepted a set the planner rejects ({why}):\n{out}"
                ))
            })?;
            let json = MkfsJson::parse(&out);
            prop_assert_eq!(json.u64("cluster_size"), o.cluster, "{}", out);
            prop_assert_eq!(json.u64("sector_size"), u64::from(o.sector), "{}", out);
            let off = json.u64("partition_offset");
            let len = json.u64("volume_bytes");
            let kind = Fsck::from(fs);
            prop_assert_eq!(json.str("fs"), fs.id());
            let size_now = std::fs::metadata(&img).map(|m| m.len()).unwrap_or(0);
            prop_assert_eq!(size_now, o.size, "image size");
            let (clean, fsck, cluster, sector) = with_volume(&img, off, len, |v| {
                let (clean, fsck) = fsck_verdict(kind, v);
                if !clean {
                    return (false, fsck, 0, 0);
                }
                let (cluster, sector) = match kind {
                    Fsck::Exfat => (dump_exfat_cluster_size(v), 0),
                    Fsck::Fat => fsck_fat_geometry(v),
                };
                (true, fsck, cluster, sector)
            });
            prop_assert!(clean, "fsck rejects the image:\n{}\n{}", fsck, out);
            prop_assert_eq!(cluster, o.cluster, "cluster size read back\n{}", out);
            if kind == Fsck::Fat {
                prop_assert_eq!(sector, u64::from(o.sector), "sector size read back");
            }
        }
        Some(2) => {
            REJECTED.fetch_add(1, Ordering::Relaxed);
            if verdict == Verdict::Valid {
                return Err(TestCaseError::fail(format!(
                    "the CLI refused a set every documented limit allows with room:\n{out}"
                )));
            }
            if let Ok(fs) = expected {
                return Err(TestCaseError::fail(format!(
                    "the CLI rejected a set the planner accepts (as {fs:?}):\n{out}"
                )));
            }
            prop_assert!(out.stderr.contains("error"), "no error message:\n{}", out);
            match &before {
                None => prop_assert!(!img.exists(), "a rejected set created the image:\n{}", out),
                Some(b) => prop_assert_eq!(
                    &sparse_fingerprint(&img, &ranges),
                    b,
                    "a rejected set changed the image:\n{}",
                    out
                ),
            }
        }
        _ => {
            return Err(TestCaseError::fail(format!(
                "exit code {:?} (expected 0 or 2):\n{out}",
                out.code
            )))
        }
    }
    Ok(())
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn random_option_sets_format_cleanly_or_write_nothing() {
    require_root();
    let started = Instant::now();
    let config = Config {
        cases: 40,
        failure_persistence: None,
        max_shrink_iters: 32,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[0x6D; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&opts(), |o| check(&o));
    let (acc, rej) = (
        ACCEPTED.load(Ordering::Relaxed),
        REJECTED.load(Ordering::Relaxed),
    );
    eprintln!(
        "random options: {acc} accepted and checked, {rej} rejected, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    // Not vacuous: both outcomes were exercised.
    assert!(acc >= 8 && rej >= 8, "{acc} accepted, {rej} rejected");
}

/// The planner against the documented limits on many more sets than the
/// CLI run can afford (no I/O): it accepts no set they forbid and refuses
/// none they allow with room, and both kinds of set occur.
#[test]
fn the_planner_keeps_the_documented_limits() {
    let config = Config {
        cases: 4000,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[0x2A; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let counts = std::cell::RefCell::new([0usize; 3]);
    let result = runner.run(&opts(), |o| {
        let verdict = judge(&o);
        let planned = oracle(&o);
        let mut c = counts.borrow_mut();
        match (&verdict, &planned) {
            (Verdict::Forbidden(why), Ok(fs)) => {
                return Err(TestCaseError::fail(format!(
                    "planned as {fs:?} though forbidden ({why}): {o:?}"
                )))
            }
            (Verdict::Valid, Err(e)) => {
                return Err(TestCaseError::fail(format!(
                    "refused ({e}) though every limit is met with room: {o:?}"
                )))
            }
            (Verdict::Forbidden(_), Err(_)) => c[0] += 1,
            (Verdict::Valid, Ok(_)) => c[1] += 1,
            (Verdict::Borderline(_), _) => c[2] += 1,
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let [forbidden, valid, borderline] = *counts.borrow();
    eprintln!("{forbidden} forbidden, {valid} valid, {borderline} borderline");
    assert!(
        forbidden >= 400 && valid >= 800,
        "{forbidden} forbidden, {valid} valid, {borderline} borderline"
    );
}
