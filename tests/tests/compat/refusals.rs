//! Pure tier: what the front ends refuse and what they answer to callers'
//! probes, and the translation of options, read back by the test's own
//! decoders of the boot sector and the root directory.

use super::{s, Links};
use mkfs_alloc_layout::FsKind;
use mkfs_alloc_tests::geometry::width_of;
use mkfs_alloc_tests::{
    file_hash, fill_file, read_at, ExfatBoot, ExfatRootInfo, Fat32Boot, TempDir, MIB, SENTINEL,
};
use serde_json::{json, Value};
use std::path::Path;

/// What a volume declares, decoded by the test's own readers (tests/src),
/// not by `mkfs-alloc info`, whose reading of the same bytes would share
/// the program's mistakes: `fs` (the width from the cluster count), the
/// label (the root directory's volume-label entry), the serial and the
/// cluster size, as JSON for the assertions below.
fn info(image: &Path) -> Value {
    let sector0 = read_at(image, 0, 512);
    if &sector0[3..11] == b"EXFAT   " {
        let boot = ExfatBoot::read(image, 0);
        let root = ExfatRootInfo::read(image, 0, &boot);
        return json!({
            "fs": "exfat",
            // An entry with no characters is no label (§7.3.1).
            "label": root.label.filter(|l| !l.is_empty()),
            "serial": format!("{:08X}", boot.serial),
            "cluster_size": boot.cluster_size(),
        });
    }
    let boot = Fat32Boot::read(image, 0);
    let fs = match width_of(boot.cluster_count()) {
        FsKind::Fat12 => "fat12",
        FsKind::Fat16 => "fat16",
        _ => "fat32",
    };
    // The root directory: the fixed area (FAT12/16) or its first cluster.
    let (at, len) = if boot.is_small_fat() {
        (boot.root_offset(), boot.root_bytes())
    } else {
        let c = u64::from(boot.root_cluster - 2);
        (
            boot.data_offset() + c * boot.cluster_size(),
            boot.cluster_size(),
        )
    };
    let dir = read_at(image, at, usize::try_from(len).expect("root size"));
    let label = dir
        .chunks_exact(32)
        .take_while(|e| e[0] != 0)
        .find(|e| e[0] != 0xE5 && e[11] & 0x3F == 0x08)
        .map(|e| String::from_utf8_lossy(&e[..11]).trim_end().to_string());
    json!({
        "fs": fs,
        "label": label,
        "serial": format!("{:08X}", boot.serial()),
        "cluster_size": boot.cluster_size(),
    })
}

/// Every option we do not support: exit 2, the option named on stderr, the
/// target byte-identical.
#[test]
fn unsupported_options_are_refused_by_name_and_write_nothing() {
    let links = Links::new();
    let tmp = TempDir::new("compat-refuse");
    let img = tmp.join("sentinel.img");
    fill_file(&img, 4 * MIB, SENTINEL);
    let before = file_hash(&img);
    let fat: &[(&[&str], &str)] = &[
        (&["-A"], "-A"),
        (&["-c"], "-c"),
        (&["-D", "0x80"], "-D"),
        (&["-g", "255/63"], "-g"),
        (&["-h", "2048"], "-h"),
        (&["-l", "bad.txt"], "-l"),
        (&["-m", "msg.txt"], "-m"),
        (&["-M", "0xf8"], "-M"),
        (&["-R", "32"], "-R"),
        (&["--offset=2048"], "--offset"),
        (&["--mbr=y"], "--mbr"),
        (&["--mbr"], "--mbr"),
        (&["--variant=atari"], "--variant"),
        (&["-f", "3"], "-f"),
        (&["-F", "32x"], "-F"),
        (&["-F", "32 "], "-F"),
        (&["-s", "08"], "-s"),
        (&["-S", "0x"], "-S"),
        (&["-r", "0x"], "-r"),
        // mkfs.fat's limit, the planner's rule: above it, refused by name.
        (&["-r", "32769"], "-r"),
        (&["-r", "65535"], "-r"),
        (&["-b", "7"], "-b"),
        (&["-F", "24"], "-F"),
        (&["-s", "3"], "-s"),
        (&["-S", "1000"], "-S"),
        (&["-i", "xyz"], "-i"),
        (&["-x"], "-x"),
        (&["--frobnicate"], "--frobnicate"),
    ];
    let exfat: &[(&[&str], &str)] = &[
        (&["--pack-bitmap"], "--pack-bitmap"),
        (&["-U", "e7b5f2a0-5c0d-4b8e-9b7a"], "-U"),
        (
            &["--volume-guid=00000000000000000000000000000000"],
            "--volume-guid",
        ),
        (&["-c", "3000"], "-c"),
        (&["-b", "1G"], "-b"),
        (&["-C"], "-C"),
        (&["-P", "x"], "-P"),
        (&["--upcase=table.bin"], "--upcase"),
        (&["-x"], "-x"),
    ];
    let mut rows = 0;
    for (name, table) in [("mkfs.fat", fat), ("mkfs.vfat", fat), ("mkfs.exfat", exfat)] {
        for (opts, named) in table {
            let mut args: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
            args.push(s(&img));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = links.run(name, &refs);
            out.assert_code(2);
            assert!(
                out.stderr.contains(named),
                "{name} {opts:?}: the refusal does not name {named}:\n{out}"
            );
            assert_eq!(
                file_hash(&img),
                before,
                "{name} {opts:?} changed the target"
            );
            rows += 1;
        }
    }
    println!("{rows} refused command lines, the target unchanged");
}

/// kpmcore runs `mkfs.fat` and `mkfs.exfat` without arguments and takes
/// exit 0 or 1 as "installed"; libblockdev reads `mkfs.fat X.Y` from
/// `mkfs.vfat --help` and adds `--mbr=no` from 4.2.
#[test]
fn probes_callers_make() {
    let links = Links::new();
    for name in mkfs_alloc_tests::FRONT_ENDS {
        let out = links.run(name, &[]);
        out.assert_code(1);
        assert!(
            out.stderr.contains("Usage:"),
            "{name} without arguments:\n{out}"
        );
    }
    let help = links.run("mkfs.vfat", &["--help"]);
    help.assert_success();
    let first = help.stdout.lines().next().unwrap_or("");
    let rest = first
        .strip_prefix("mkfs.fat ")
        .expect("--help starts with `mkfs.fat `");
    let (version, after) = rest.split_once(' ').expect("something after the version");
    assert_eq!(version, "4.2", "{first}");
    assert!(!after.is_empty(), "{first}");
    for (name, arg) in [
        ("mkfs.fat", "--version"),
        ("mkfs.exfat", "-V"),
        ("mkfs.exfat", "--version"),
    ] {
        let out = links.run(name, &[arg]);
        out.assert_success();
        assert!(out.stdout.contains("mkfs-alloc"), "{name} {arg}:\n{out}");
    }
    // GParted 1.3 enables exFAT only when `mkfs.exfat -V` starts so.
    for arg in ["-V", "--version"] {
        let out = links.run("mkfs.exfat", &[arg]);
        let first = out.stdout.lines().next().unwrap_or("");
        assert_eq!(
            first, "exfatprogs version : 1.2.0",
            "mkfs.exfat {arg}:\n{out}"
        );
    }
}

/// `-C` creates (and only creates), a missing target without `-C` is
/// refused, `--invariant` pins the volume ID, and the options may follow the
/// target (as libblockdev passes them).
#[test]
fn create_invariant_and_permuted_options() {
    let links = Links::new();
    let tmp = TempDir::new("compat-create");
    let img = tmp.join("new.img");
    let out = links.run(
        "mkfs.fat",
        &["-C", &s(&img), "10240", "--invariant", "-n", "INV"],
    );
    out.assert_success();
    assert_eq!(
        std::fs::metadata(&img).map(|m| m.len()).ok(),
        Some(10240 * 1024)
    );
    let v = info(&img);
    assert_eq!(
        (v["fs"].as_str(), v["label"].as_str()),
        (Some("fat16"), Some("INV")),
        "{v}"
    );
    assert_eq!(v["serial"].as_str(), Some("1234ABCD"), "{v}");
    assert_eq!(
        v["cluster_size"].as_u64(),
        Some(2048),
        "mkfs.fat's 4 sectors: {v}"
    );
    let before = file_hash(&img);
    links
        .run("mkfs.fat", &["-C", &s(&img), "10240"])
        .assert_code(2);
    assert_eq!(
        file_hash(&img),
        before,
        "-C over an existing file changed it"
    );
    let missing = tmp.join("missing.img");
    links.run("mkfs.fat", &[&s(&missing)]).assert_code(2);
    links.run("mkfs.exfat", &[&s(&missing)]).assert_code(2);
    assert!(!missing.exists(), "a missing target was created without -C");
    // libblockdev: `mkfs.vfat DEVICE -n LABEL -i VOLID -I --mbr=no`.
    let out = links.run(
        "mkfs.vfat",
        &[&s(&img), "-n", "UDISKS", "-i", "2E24EC82", "-I", "--mbr=no"],
    );
    out.assert_success();
    let v = info(&img);
    assert_eq!(
        (v["label"].as_str(), v["serial"].as_str()),
        (Some("UDISKS"), Some("2E24EC82")),
        "{v}"
    );
    // libblockdev: `mkfs.exfat DEVICE -n LABEL`; GParted: `-L ''`.
    links
        .run("mkfs.exfat", &[&s(&img), "-n", "STICK"])
        .assert_success();
    let v = info(&img);
    assert_eq!(
        (v["fs"].as_str(), v["label"].as_str()),
        (Some("exfat"), Some("STICK")),
        "{v}"
    );
    links
        .run("mkfs.exfat", &["-L", "", &s(&img)])
        .assert_success();
    assert!(info(&img)["label"].is_null(), "-L '' gives no label");
    // mkfs.exfat's default cluster size, and -c with a suffix.
    assert_eq!(info(&img)["cluster_size"].as_u64(), Some(4096));
    links
        .run("mkfs.exfat", &["-c", "64k", "-q", &s(&img)])
        .assert_success();
    assert_eq!(info(&img)["cluster_size"].as_u64(), Some(65536));
}
