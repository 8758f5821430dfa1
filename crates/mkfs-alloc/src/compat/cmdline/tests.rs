use super::*;
use crate::compat::Note;
use mkfs_alloc_layout::{ClusterChoice, FsChoice, FsKind};

fn words(s: &[&str]) -> Vec<OsString> {
    s.iter().map(OsString::from).collect()
}

fn fat(s: &[&str]) -> Result<Request, Early> {
    parse(FrontEnd::Fat("mkfs.fat"), &words(s))
}

fn refused(r: Result<Request, Early>) -> String {
    match r {
        Err(Early::Refuse(r)) => r.to_string(),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn names() {
    for (n, f) in [
        ("/usr/sbin/mkfs.vfat", Some(FrontEnd::Fat("mkfs.vfat"))),
        ("mkfs.fat", Some(FrontEnd::Fat("mkfs.fat"))),
        ("mkfs.msdos", Some(FrontEnd::Fat("mkfs.msdos"))),
        ("mkdosfs", Some(FrontEnd::Fat("mkdosfs"))),
        ("mkfs.exfat.exe", Some(FrontEnd::Exfat)),
        ("./mkfs.exfat", Some(FrontEnd::Exfat)),
        ("mkfs-alloc", None),
        ("mkfs.ext4", None),
    ] {
        assert_eq!(FrontEnd::from_argv0(OsStr::new(n)), f, "{n}");
    }
    assert_eq!(FrontEnd::Fat("mkdosfs").name(), "mkdosfs");
    assert_eq!(FrontEnd::Exfat.name(), "mkfs.exfat");
}

#[test]
fn values() {
    assert_eq!(parse_bytes("32768"), Some(32768));
    assert_eq!(parse_bytes("32k"), Some(32768));
    assert_eq!(parse_bytes("1M"), Some(1 << 20));
    assert_eq!(parse_bytes("1G"), None);
    assert_eq!(parse_bytes(""), None);
    assert_eq!(strtol("0x20"), Some(32));
    assert_eq!(strtol("010"), Some(8));
    assert_eq!(strtol(" 0X1000"), Some(4096));
    assert_eq!(strtol("-5"), Some(-5));
    assert_eq!(strtol("+7"), Some(7));
    assert_eq!(strtol("0"), Some(0));
    for bad in ["08", "0x", "12 ", "1e3", "", "-", "+-1", "0xg", "32k"] {
        assert_eq!(strtol(bad), None, "{bad:?}");
    }
}

#[test]
fn mkfs_fat_lines_callers_pass() {
    // udisks/libblockdev: options after the device, `--mbr=no` from 4.2 on.
    let r = fat(&["/dev/sdb1", "-n", "stick", "--mbr=no", "-I"]).expect("libblockdev's line");
    assert_eq!(r.target, PathBuf::from("/dev/sdb1"));
    assert_eq!(r.label.as_deref(), Some("stick"));
    assert!(r.lowercase_label() && r.keep_label_case && !r.refuse_partitioned_disk);
    assert!(r.quiet, "mkfs.fat prints little without -v");
    let r = fat(&[
        "-C",
        "-F32",
        "-s",
        "0x8",
        "-i",
        "2E24-EC82",
        "x.img",
        "65536",
    ])
    .expect("-C");
    assert_eq!(
        (r.create, r.size, r.fat_bits, r.spc, r.serial),
        (true, Some(64 << 20), Some(32), Some(8), Some(0x2E24_EC82))
    );
    let r = fat(&["--invariant", "-a", "-v", "x.img"]).expect("--invariant");
    assert_eq!(
        (r.serial, r.epoch),
        (Some(0x1234_ABCD), Some(1_426_325_213))
    );
    assert_eq!((r.align_for(4096), r.quiet), (Some(4096), false));
    // A blank label and "NO NAME" write no label entry.
    for blank in ["   ", "NO NAME    "] {
        let r = fat(&["-n", blank, "x.img"]).expect("blank label");
        assert_eq!(r.label.as_deref(), Some(""));
    }
}

#[test]
fn mkfs_fat_refusals_and_early_ends() {
    assert_eq!(
        refused(fat(&["-c", "x"])),
        "option -c (a bad-block scan) is not supported"
    );
    assert_eq!(
        refused(fat(&["--mbr=y", "x"])),
        "option --mbr=y (a fake MBR inside the boot sector) is not supported"
    );
    assert_eq!(
        refused(fat(&["--variant", "atari", "x"])),
        "option --variant=atari (the Atari variant) is not supported"
    );
    assert_eq!(
        refused(fat(&["-F", "13", "x"])),
        "invalid value \"13\" for -F: valid: 12, 16, 32"
    );
    assert_eq!(
        refused(fat(&["-s", "3", "x"])),
        "invalid value \"3\" for -s: valid: 1, 2, 4, ... 128"
    );
    assert_eq!(refused(fat(&["-x"])), "unrecognized option '-x'");
    assert_eq!(fat(&[]), Err(Early::Usage(UsageError::NoTarget)));
    assert_eq!(fat(&["-C", "x"]), Err(Early::Usage(UsageError::NeedSize)));
    assert_eq!(
        fat(&["x", "1", "y"]),
        Err(Early::Usage(UsageError::Excess("y".into())))
    );
    assert_eq!(fat(&["--help", "x"]), Err(Early::Help));
    assert_eq!(fat(&["--vers"]), Err(Early::Version));
}

#[test]
fn a_request_decides_as_its_tool() {
    let medium = Medium {
        bytes: 10 << 20,
        block: 512,
        sector: 512,
        not_fixed: true,
        align: None,
    };
    let r = fat(&["x.img"]).expect("mkfs.fat");
    let d = r.decide(&medium);
    assert_eq!(d.fs, FsChoice::Fixed(FsKind::Fat16));
    assert_eq!(d.cluster, ClusterChoice::Bytes(2048));
    let large = Medium {
        bytes: 600 << 20,
        ..medium
    };
    let r = fat(&["-F", "32", "-r", "112", "x.img"]).expect("mkfs.fat");
    assert_eq!(r.decide(&large).notes, [Note::RootEntriesOnFat32]);
    let r = parse(FrontEnd::Exfat, &words(&["x.img"])).expect("mkfs.exfat");
    let d = r.decide(&medium);
    assert_eq!(d.fs, FsChoice::Fixed(FsKind::Exfat));
    assert_eq!(d.cluster, ClusterChoice::Bytes(4096));
}
