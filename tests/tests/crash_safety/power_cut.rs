//! Power loss during a format, pure tier: `PowerCutIo` loses a seeded
//! subset of the unflushed blocks at every cut point, the same format runs
//! again on what survived, and the result must be byte-identical to an
//! uncut run (pinned identifiers). Before the rerun the medium must never
//! hold a volume that a reader would mount with contents other than the
//! uncut run's: it is either not recognisable, or intact.
//!
//! "Recognisable" is decided by the independent decoders of `tests/src`
//! (boot fields by the specifications' offsets, the exFAT boot checksum,
//! the MBR entry by its offsets, GPT headers and entry arrays with their
//! CRC-32s), not by the library's own structures.

use super::*;
use mkfs_alloc::blockio::{BlockIo, MemDisk};
use mkfs_alloc::layout::Timestamp;
use mkfs_alloc_blockio::powercut::sweep::{Stage, Sweep, SweepReport, Trial};
use mkfs_alloc_tests::boot::exfat_boot_checksum;

/// The pinned time of every format here.
const WHEN: Timestamp = Timestamp {
    secs: 1_700_000_000,
    nanos: 0,
};

/// Seeds per cut point (each draws its own keep probability).
const SEEDS: u64 = 3;

/// One format under power cuts.
#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    fs: FsKind,
    cluster: u64,
    table: TableKind,
    size: u64,
    /// Write `small_tree()` with the volume.
    populated: bool,
}

fn case_options(c: &Case) -> MediumOptions {
    MediumOptions::new()
        .format(
            FormatOptions::new()
                .fs(FsChoice::Fixed(c.fs))
                .cluster(ClusterChoice::Bytes(c.cluster)),
        )
        .pinned(NEW_SERIAL, WHEN)
        .table(TableChoice::Fixed(c.table))
        .sector_size(BS)
        .expect("a valid sector size")
}

/// The format of `c` on `dev`, plain or populated: the job of the sweep.
fn format_job(c: &Case, dev: &mut dyn BlockIo) -> Result<(), FormatError> {
    let mut plan = case_options(c).plan_for(&dev)?;
    if c.populated {
        let mut populated = plan
            .populate(small_tree(), TimePolicy::default())
            .unwrap_or_else(|e| panic!("{}: the tree does not fit: {e}", c.name));
        populated.format(&mut &mut *dev)?;
    } else {
        plan.format(&mut &mut *dev)?;
    }
    Ok(())
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Where a reader finds the volume on `m`, if anywhere: with an MBR, the
/// first entry's start (signature 0x55AA, a type, a start); with GPT, the
/// first entry's start in the primary table or, if that one is not valid,
/// the backup (as GPT readers fall back); else 0.
fn volume_start(c: &Case, m: &[u8]) -> Option<usize> {
    let bs = BS as usize;
    match c.table {
        TableKind::Mbr => {
            let e = 446;
            let valid = m[510..512] == [0x55, 0xAA] && m[e + 4] != 0;
            valid.then(|| u32_at(m, e + 8) as usize * bs)
        }
        TableKind::Gpt => {
            let last = m.len() / bs - 1;
            gpt_header_start(m, bs).or_else(|| gpt_header_start(m, last * bs))
        }
        _ => Some(0),
    }
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// The GPT CRC-32 (IEEE, reflected), as UEFI 2.10 §5.3.2 uses.
fn gpt_crc(bytes: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(bytes)
}

/// The first partition's start in bytes per the GPT header at byte `h` of
/// `m` (UEFI 2.10 §5.3.2: signature, header CRC over HeaderSize bytes with
/// its own field zeroed, entry array CRC), if the header is valid.
fn gpt_header_start(m: &[u8], h: usize) -> Option<usize> {
    let bs = BS as usize;
    let hdr = &m[h..h + bs];
    if &hdr[..8] != b"EFI PART" {
        return None;
    }
    let size = u32_at(hdr, 12) as usize;
    if !(92..=bs).contains(&size) {
        return None;
    }
    let mut copy = hdr[..size].to_vec();
    copy[16..20].fill(0);
    if gpt_crc(&copy) != u32_at(hdr, 16) {
        return None;
    }
    let entries = u64_at(hdr, 72) as usize * bs;
    let count = u32_at(hdr, 80) as usize;
    let entry_size = u32_at(hdr, 84) as usize;
    let array = m.get(entries..entries + count * entry_size)?;
    if gpt_crc(array) != u32_at(hdr, 88) || entry_size < 128 {
        return None;
    }
    Some(u64_at(array, 32) as usize * bs)
}

/// True when the boot sector at `v` is one a driver accepts: for exFAT
/// the name, the signature and the boot checksum of sectors 0..=10 (the
/// Linux driver verifies it); for FAT32 the signature, the type string and
/// sane BPB counts.
fn boot_valid(fs: FsKind, m: &[u8], v: usize) -> bool {
    let sector = &m[v..v + 512];
    match fs {
        FsKind::Exfat => {
            let b = ExfatBoot::from_bytes(sector);
            let sum = exfat_boot_checksum(&m[v..v + 11 * 512]);
            b.file_system_name == *b"EXFAT   "
                && b.boot_signature == 0xAA55
                && u32_at(m, v + 11 * 512) == sum
        }
        _ => {
            let b = Fat32Boot::from_bytes(sector);
            b.signature == 0xAA55
                && b.fs_type == *b"FAT32   "
                && b.bytes_per_sector.is_power_of_two()
                && b.sectors_per_cluster.is_power_of_two()
                && b.num_fats > 0
                && b.fat_sz32 > 0
        }
    }
}

/// The first byte where `a` and `b` differ outside `skip`.
fn first_difference(a: &[u8], b: &[u8], skip: Option<std::ops::Range<usize>>) -> Option<usize> {
    const CHUNK: usize = 1 << 16;
    let skipped = |i: usize| skip.as_ref().is_some_and(|s| s.contains(&i));
    (0..a.len()).step_by(CHUNK).find_map(|start| {
        let end = (start + CHUNK).min(a.len());
        if a[start..end] == b[start..end] {
            return None;
        }
        (start..end).find(|&i| a[i] != b[i] && !skipped(i))
    })
}

/// The sweep's check: after the rerun, byte-identical to the uncut run;
/// before it, not recognisable, or recognisable where the table (if any)
/// points, at the planned place, and the volume identical except, for
/// exFAT, the backup boot region (sectors 12..=23; written with sector 0
/// in one flush interval, so a cut may keep sector 0 without it: neither
/// fsck.exfat nor the driver reads the backup while sector 0 is valid).
fn check(c: &Case, t: &Trial<'_, MemDisk>) -> Result<bool, String> {
    let m = t.medium.as_bytes();
    let r = t.reference.as_bytes();
    if t.stage == Stage::AfterRerun {
        return match first_difference(m, r, None) {
            None => Ok(true),
            Some(at) => Err(format!("differs from the uncut run at byte {at}")),
        };
    }
    let Some(v) = volume_start(c, m) else {
        return Ok(false);
    };
    if v + 12 * 512 > m.len() || !boot_valid(c.fs, m, v) {
        return Ok(false);
    }
    // A reader mounts the volume the table points at: it must be the
    // planned one, holding the uncut run's bytes. (Outside it, a table
    // may still be incomplete: a GPT reader falls back to the backup.)
    let plan = case_options(c)
        .plan(c.size, BS)
        .map_err(|e| e.to_string())?;
    let start = plan.table().partition_start() as usize;
    let end = start + plan.layout().volume_bytes() as usize;
    if v != start {
        return Err(format!(
            "MOUNTABLE WITH WRONG CONTENTS: the table points at byte {v}, not at the              volume at {start} ({:?})",
            t.cut
        ));
    }
    let skip = (c.fs == FsKind::Exfat).then_some(12 * 512..24 * 512);
    match first_difference(&m[start..end], &r[start..end], skip) {
        None => Ok(true),
        Some(at) => Err(format!(
            "MOUNTABLE WITH WRONG CONTENTS: the volume at byte {v} is recognisable, but \
             its byte {at} is {:#04x}, not the uncut run's {:#04x} ({:?})",
            m[start + at],
            r[start + at],
            t.cut
        )),
    }
}

fn sweep(c: Case) -> SweepReport {
    let started = Instant::now();
    let medium = MemDisk::new(BS, c.size / u64::from(BS)).expect("disk");
    let report = Sweep::new()
        .seeds(SEEDS)
        .run(&medium, |dev| format_job(&c, dev), |t| check(&c, t))
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    eprintln!(
        "{}: {report}; {:.1} s",
        c.name,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.trials >= 8 * SEEDS as usize, "{}: {report}", c.name);
    assert!(
        report.blocks_dropped > 0 && report.blocks_kept > 0,
        "{}: the cuts never lost (or never kept) a block: {report}",
        c.name
    );
    report
}

#[test]
fn exfat_no_table_survives_power_cuts() {
    sweep(Case {
        name: "exfat-none",
        fs: FsKind::Exfat,
        cluster: 4 * KIB,
        table: TableKind::None,
        size: 32 * MIB,
        populated: false,
    });
}

#[test]
fn exfat_mbr_populated_survives_power_cuts() {
    sweep(Case {
        name: "exfat-mbr-populated",
        fs: FsKind::Exfat,
        cluster: 4 * KIB,
        table: TableKind::Mbr,
        size: 32 * MIB,
        populated: true,
    });
}

#[test]
fn fat32_no_table_populated_survives_power_cuts() {
    sweep(Case {
        name: "fat32-none-populated",
        fs: FsKind::Fat32,
        cluster: 512,
        table: TableKind::None,
        size: 40 * MIB,
        populated: true,
    });
}

#[test]
fn exfat_gpt_survives_power_cuts() {
    sweep(Case {
        name: "exfat-gpt",
        fs: FsKind::Exfat,
        cluster: 4 * KIB,
        table: TableKind::Gpt,
        size: 32 * MIB,
        populated: false,
    });
}

#[test]
fn fat32_mbr_survives_power_cuts() {
    sweep(Case {
        name: "fat32-mbr",
        fs: FsKind::Fat32,
        cluster: 512,
        table: TableKind::Mbr,
        size: 40 * MIB,
        populated: false,
    });
}

/// The check can fail: a volume whose boot sector is valid and whose FAT
/// is not the uncut run's is called mountable with wrong contents.
#[test]
fn the_power_cut_check_rejects_a_recognisable_damaged_volume() {
    let c = Case {
        name: "control",
        fs: FsKind::Fat32,
        cluster: 512,
        table: TableKind::None,
        size: 40 * MIB,
        populated: false,
    };
    let mut good = MemDisk::new(BS, c.size / u64::from(BS)).expect("disk");
    format_job(&c, &mut good).expect("format");
    let b = Fat32Boot::from_bytes(&good.as_bytes()[..512]);
    let mut bad = good.clone().into_inner();
    bad[usize::from(b.reserved_sectors) * BS as usize + 8] ^= 0xFF;
    let bad = MemDisk::from_vec(BS, bad).expect("disk");
    let trial = |stage, medium| Trial {
        cut_at: 0,
        seed: 0,
        stage,
        medium,
        reference: &good,
        prepared: &good,
        cut: Default::default(),
    };
    let err = check(&c, &trial(Stage::BeforeRerun, &bad)).expect_err("the damaged FAT is seen");
    assert!(err.contains("MOUNTABLE WITH WRONG CONTENTS"), "{err}");
    assert!(check(&c, &trial(Stage::AfterRerun, &bad)).is_err());
    assert_eq!(check(&c, &trial(Stage::BeforeRerun, &good)), Ok(true));
}

/// A format over an old FAT32 volume holding files: before the rerun the
/// medium holds the complete new exFAT, nothing recognisable, or the old
/// FAT32 exactly as it was — never the old boot sector over zeroed FATs.
#[test]
fn exfat_over_fat32_never_leaves_the_old_volume_damaged() {
    let old = Case {
        name: "old-fat32",
        fs: FsKind::Fat32,
        cluster: 512,
        table: TableKind::None,
        size: 40 * MIB,
        populated: true,
    };
    let mut prepared = MemDisk::new(BS, old.size / u64::from(BS)).expect("disk");
    let plan = MediumOptions::new()
        .format(
            FormatOptions::new()
                .fs(FsChoice::Fixed(FsKind::Fat32))
                .cluster(ClusterChoice::Bytes(512)),
        )
        .pinned(0x0DD5_E41A, WHEN)
        .table(TableChoice::Fixed(TableKind::None))
        .plan_for(&prepared)
        .expect("plan the old volume");
    plan.populate(small_tree(), TimePolicy::default())
        .expect("the tree fits")
        .format(&mut prepared)
        .expect("format the old volume");
    let new = Case {
        name: "exfat-over-fat32",
        fs: FsKind::Exfat,
        ..old
    };
    let report = Sweep::new()
        .seeds(SEEDS)
        .run(
            &prepared,
            |dev| format_job(&new, dev),
            |t| {
                let m = t.medium.as_bytes();
                if t.stage == Stage::BeforeRerun && boot_valid(FsKind::Fat32, m, 0) {
                    return match first_difference(m, t.prepared.as_bytes(), None) {
                        None => Ok(false),
                        Some(at) => Err(format!(
                            "MOUNTABLE WITH WRONG CONTENTS: the old FAT32 is recognisable, \
                             but its byte {at} changed ({:?})",
                            t.cut
                        )),
                    };
                }
                check(&new, t)
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e}", new.name));
    eprintln!("{}: {report}", new.name);
    assert_eq!(report.intact_after_rerun, report.trials);
}
