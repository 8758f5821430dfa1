//! Checks shared by several test files: what a formatted image must look
//! like to the independent tools.

use crate::boot::{exfat_boot_checksum, ExfatBoot, Fat32Boot, FsInfo};
use crate::cmd::{run, run_env, CmdOutput};
use crate::image::read_at;
use crate::tools::require_tool;
use mkfs_alloc_testsupport::{fsck_exfat_findings_with_volume_guid, fsck_findings, FsckKind};
use std::path::Path;

/// `fsck.exfat -n IMG`: panics unless the shared judge calls it clean
/// (exit 0, the clean summary and nothing else: `mkfs_alloc_testsupport::fsck`).
#[track_caller]
pub fn fsck_exfat_clean(image: &Path) -> CmdOutput {
    let out = run(require_tool("fsck.exfat"), &[Path::new("-n"), image]);
    let findings = fsck_findings(FsckKind::Exfat, out.success(), &out.stdout, &out.stderr);
    assert!(
        findings.is_empty(),
        "fsck.exfat rejects the image: {findings:?}\n{out}"
    );
    out
}

/// [`fsck_exfat_clean`] of a volume that holds a Volume GUID entry, which
/// fsck.exfat 1.2.0 does not know: exactly one line about it, as the root's
/// fourth entry, is allowed (`mkfs_alloc_testsupport::fsck`); the caller
/// checks the entry itself.
#[track_caller]
pub fn fsck_exfat_clean_with_volume_guid(image: &Path) -> CmdOutput {
    let out = run(require_tool("fsck.exfat"), &[Path::new("-n"), image]);
    let findings = fsck_exfat_findings_with_volume_guid(out.success(), &out.stdout, &out.stderr);
    assert!(
        findings.is_empty(),
        "fsck.exfat rejects the image: {findings:?}\n{out}"
    );
    out
}

/// `dump.exfat IMG`: the value of the `Cluster size:` line.
#[track_caller]
pub fn dump_exfat_cluster_size(image: &Path) -> u64 {
    let out = run(require_tool("dump.exfat"), &[image]);
    out.assert_success();
    field_after(&out, "Cluster size:")
}

/// The number after `key` on the first line that contains it.
#[track_caller]
pub fn field_after(out: &CmdOutput, key: &str) -> u64 {
    out.lines()
        .find_map(|l| l.split_once(key).map(|(_, rest)| rest.trim().to_string()))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or_else(|| panic!("no `{key} N` in the output:\n{out}"))
}

/// Checks the exFAT boot region of `image` with the spec's rules that
/// fsck.exfat does not check (reference D): name, MustBeZero, signatures,
/// checksum sector, backup region identical.
#[track_caller]
pub fn check_exfat_boot_region(image: &Path) -> ExfatBoot {
    let boot = ExfatBoot::read(image, 0);
    let bps = usize::try_from(boot.bytes_per_sector()).expect("sector size fits usize");
    assert_eq!(&boot.jump_boot, &[0xEB, 0x76, 0x90]);
    assert_eq!(&boot.file_system_name, b"EXFAT   ");
    assert!(boot.must_be_zero_ok, "MustBeZero bytes are not zero");
    assert_eq!(boot.boot_signature, 0xAA55);
    assert_eq!(boot.revision, 0x0100);
    assert_eq!(boot.number_of_fats, 1);
    let region = read_at(image, 0, 24 * bps);
    let (main, backup) = region.split_at(12 * bps);
    assert!(
        main == backup,
        "backup boot region differs from the main one"
    );
    for s in 1..=8 {
        let sector = &main[s * bps..(s + 1) * bps];
        assert_eq!(
            &sector[bps - 4..],
            &[0, 0, 0x55, 0xAA],
            "extended boot sector {s} signature"
        );
    }
    let sum = exfat_boot_checksum(&main[..11 * bps]);
    for w in main[11 * bps..12 * bps].chunks_exact(4) {
        assert_eq!(
            u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
            sum,
            "boot checksum sector"
        );
    }
    boot
}

/// `fsck.fat -n IMG`: panics unless the shared judge calls it clean (exit
/// 0, its version line and the one-line summary, nothing else: anything
/// else is a warning or a repair it would have made).
#[track_caller]
pub fn fsck_fat_clean(image: &Path) -> CmdOutput {
    let out = run(require_tool("fsck.fat"), &[Path::new("-n"), image]);
    let findings = fsck_findings(FsckKind::Fat, out.success(), &out.stdout, &out.stderr);
    assert!(
        findings.is_empty(),
        "fsck.fat rejects the image: {findings:?}\n{out}"
    );
    out
}

/// `fsck.fat -n -v IMG`: the `N bytes per cluster` and `N bytes per logical
/// sector` values.
#[track_caller]
pub fn fsck_fat_geometry(image: &Path) -> (u64, u64) {
    let out = run(
        require_tool("fsck.fat"),
        &[Path::new("-n"), Path::new("-v"), image],
    );
    out.assert_success();
    let num_before = |key: &str| {
        out.lines()
            .find_map(|l| {
                l.strip_suffix(key)
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
            .unwrap_or_else(|| panic!("no `N {key}` in fsck.fat -v output:\n{out}"))
    };
    (
        num_before("bytes per cluster"),
        num_before("bytes per logical sector"),
    )
}

/// Checks the FAT32 reserved area with fatgen103's rules: BPB constants,
/// signatures, FSInfo and backups, FAT[0..3], both FATs' first sector equal.
#[track_caller]
pub fn check_fat32_boot(image: &Path) -> Fat32Boot {
    let b = Fat32Boot::read(image, 0);
    assert_eq!(&b.jmp_boot, &[0xEB, 0x58, 0x90]);
    assert_eq!(b.signature, 0xAA55);
    assert_eq!((b.root_ent_cnt, b.tot_sec16, b.fat_sz16), (0, 0, 0));
    assert_eq!(b.num_fats, 2);
    assert_eq!(b.media, 0xF8);
    assert_eq!((b.root_cluster, b.fs_info, b.backup_boot), (2, 1, 6));
    assert_eq!(b.boot_sig, 0x29);
    assert_eq!(&b.fs_type, b"FAT32   ");
    let bps = u64::from(b.bytes_per_sector);
    let sector = |n: u64| read_at(image, n * bps, b.bytes_per_sector.into());
    assert!(sector(0) == sector(6), "backup boot sector differs");
    assert!(sector(1) == sector(7), "backup FSInfo differs");
    let info = FsInfo::read(image, 0, &b, b.fs_info);
    assert!(info.signatures_ok(), "FSInfo signatures: {info:?}");
    let clusters = b.cluster_count();
    assert!(
        (65_525..=0x0FFF_FFF5).contains(&clusters),
        "FAT32 cluster count {clusters}"
    );
    assert!(
        b.fat_bytes() / 4 >= clusters + 2,
        "FAT too small for {clusters} clusters"
    );
    assert_eq!(
        u64::from(info.free_count),
        clusters - 1,
        "FSInfo free count"
    );
    for which in 0..2 {
        let fat = b.fat_entries(image, 0, which, 4);
        assert_eq!(
            &fat[..3],
            &[0x0FFF_FFF8, 0x0FFF_FFFF, 0x0FFF_FFFF],
            "FAT #{which} head"
        );
        assert_eq!(fat[3], 0, "FAT #{which} entry 3");
    }
    b
}

/// Checks the FAT12/16 boot sector with fatgen103's rules: BPB constants,
/// extended BPB, the width its cluster count gives, FAT[0..2] in both FATs,
/// and every other reserved sector zero. Returns the decoded BPB.
#[track_caller]
pub fn check_small_fat_boot(image: &Path) -> Fat32Boot {
    let b = Fat32Boot::read(image, 0);
    let raw = read_at(image, 0, 512);
    assert_eq!(&b.jmp_boot, &[0xEB, 0x3C, 0x90]);
    assert_eq!(b.signature, 0xAA55);
    assert!(b.is_small_fat(), "FATSz16 is 0");
    assert_eq!(b.num_fats, 2);
    assert_eq!(b.media, 0xF8);
    assert!(b.root_ent_cnt > 0, "RootEntCnt 0");
    let bps = u64::from(b.bytes_per_sector);
    assert_eq!(
        u64::from(b.root_ent_cnt) * 32 % bps,
        0,
        "root fills whole sectors"
    );
    // TotSec16 if it fits, else TotSec32; never both.
    assert!((b.tot_sec16 == 0) != (b.tot_sec32 == 0), "TotSec16/32");
    assert_eq!((raw[36], raw[38]), (0x80, 0x29), "DrvNum, BootSig");
    let clusters = b.cluster_count();
    let (width, bits): (&[u8; 8], u64) = if clusters < 4085 {
        (b"FAT12   ", 12)
    } else {
        (b"FAT16   ", 16)
    };
    assert!(clusters < 65_525, "{clusters} clusters is FAT32");
    assert_eq!(&raw[54..62], width, "FilSysType for {clusters} clusters");
    assert!(
        b.fat_bytes() * 8 / bits >= clusters + 2,
        "FAT too small for {clusters} clusters"
    );
    for which in 0..2u64 {
        let head = read_at(image, b.fat_offset() + which * b.fat_bytes(), 4);
        let want: &[u8] = if bits == 12 {
            &[0xF8, 0xFF, 0xFF, 0]
        } else {
            &[0xF8, 0xFF, 0xFF, 0xFF]
        };
        assert_eq!(&head[..], want, "FAT #{which} head");
    }
    for s in 1..u64::from(b.reserved_sectors) {
        assert!(
            read_at(image, s * bps, bps as usize)
                .iter()
                .all(|&x| x == 0),
            "reserved sector {s} is not zero"
        );
    }
    b
}

/// The environment of mtools runs: none. mtools' own sanity checks of the
/// boot sector stay on (no `MTOOLS_SKIP_CHECK`): our images must pass them.
pub const MTOOLS_ENV: &[(&str, &str)] = &[];

/// Runs an mtools command (`mcopy`, `mdir`, `mtype`) against `image`.
#[track_caller]
pub fn mtools(tool: &str, image: &Path, args: &[&str]) -> CmdOutput {
    let mut all: Vec<String> = vec!["-i".into(), image.to_string_lossy().into_owned()];
    all.extend(args.iter().map(|s| s.to_string()));
    run_env(require_tool(tool), &all, MTOOLS_ENV)
}

/// The mtools round trip the FAT suites share: `DATA.BIN` (`test_data` of
/// two clusters, at most 2 MiB, plus 4321 bytes, seeded by `seed`: more
/// than one cluster, so a chain) is copied in from `scratch/in.bin` with
/// mcopy, listed by mdir next to the volume `label`, and read back by
/// mtype. Returns the data and the input file.
#[track_caller]
pub fn mtools_copy_in(
    image: &Path,
    scratch: &Path,
    cluster: u64,
    seed: u64,
    label: &str,
) -> (Vec<u8>, std::path::PathBuf) {
    let len = usize::try_from(cluster.min(crate::MIB)).expect("fits") * 2 + 4321;
    let data = crate::image::test_data(len, seed);
    let input = scratch.join("in.bin");
    std::fs::write(&input, &data).expect("write input file");
    mtools("mcopy", image, &[&input.to_string_lossy(), "::/DATA.BIN"]).assert_success();
    let dir = mtools("mdir", image, &["::/"]);
    dir.assert_success();
    assert!(
        dir.stdout.contains("DATA") && dir.stdout.contains(label),
        "mdir output:\n{dir}"
    );
    let typed = mtools("mtype", image, &["::/DATA.BIN"]);
    typed.assert_success();
    assert!(typed.stdout_bytes == data, "mtype returned other bytes");
    (data, input)
}
