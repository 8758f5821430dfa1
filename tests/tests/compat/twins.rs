//! Tool tier: our `mkfs.fat` / `mkfs.exfat` and the real dosfstools 4.2 /
//! exfatprogs 1.2.0 on twin image files, compared field by field from the
//! boot sectors (decoded here and by `tests/src`'s independent decoder, not
//! by mkfs-alloc) and by `fsck.fat`, `blkid` and `dump.exfat`.

use super::{s, Links};
use mkfs_alloc_tests::checks::{field_after, fsck_fat_clean};
use mkfs_alloc_tests::{read_at, require_tool, sparse_file, tool, CmdOutput, Fat32Boot, TempDir};
use std::path::{Path, PathBuf};

/// One command line run through ours and the original.
struct Twin {
    ours: PathBuf,
    real: PathBuf,
    out: CmdOutput,
    real_out: CmdOutput,
}

/// Runs `args` (`IMG` is the image) through our `name` and the real
/// `mkfs.fat`; the images are created by `-C` when `args` has it, else
/// pre-sized to `bytes` (as genimage and people do).
fn twin(links: &Links, tmp: &TempDir, name: &str, args: &[&str], bytes: u64) -> Twin {
    let (ours, real) = (tmp.join("ours.img"), tmp.join("real.img"));
    for p in [&ours, &real] {
        let _ = std::fs::remove_file(p);
        if !args.contains(&"-C") {
            sparse_file(p, bytes);
        }
    }
    let with = |img: &Path| -> Vec<String> {
        args.iter()
            .map(|a| if *a == "IMG" { s(img) } else { a.to_string() })
            .collect()
    };
    let out = links.run(name, &refs(&with(&ours)));
    let real_out = mkfs_alloc_tests::run(require_tool("mkfs.fat"), &refs(&with(&real)));
    let line = args.join(" ");
    assert!(out.success(), "ours `{name} {line}` failed:\n{out}");
    assert!(real_out.success(), "mkfs.fat `{line}` failed:\n{real_out}");
    Twin {
        ours,
        real,
        out,
        real_out,
    }
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The fields of a FAT boot sector this file compares, decoded from the
/// bytes at fatgen103's offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bpb {
    width: &'static str,
    sector: u64,
    cluster: u64,
    fats: u8,
    root_entries: u16,
    media: u8,
    sectors_per_track: u16,
    heads: u16,
    drive: u8,
    label: [u8; 11],
    clusters: u64,
}

fn bpb(image: &Path) -> Bpb {
    let raw = read_at(image, 0, 512);
    let b = Fat32Boot::from_bytes(&raw);
    let small = b.is_small_fat();
    // FAT12/16 keep the extended BPB at 36, FAT32 at 64.
    let ext = if small { 36 } else { 64 };
    let width = match (small, &raw[54..59]) {
        (false, _) => "FAT32",
        (true, b"FAT12") => "FAT12",
        (true, b"FAT16") => "FAT16",
        (true, other) => panic!("{}: file system type {other:?}", image.display()),
    };
    let mut label = [0u8; 11];
    label.copy_from_slice(&raw[ext + 7..ext + 18]);
    Bpb {
        width,
        sector: u64::from(b.bytes_per_sector),
        cluster: b.cluster_size(),
        fats: b.num_fats,
        root_entries: b.root_ent_cnt,
        media: b.media,
        sectors_per_track: u16::from_le_bytes([raw[24], raw[25]]),
        heads: u16::from_le_bytes([raw[26], raw[27]]),
        drive: raw[ext],
        label,
        clusters: b.cluster_count(),
    }
}

/// The first root directory entry's name and attribute (12 bytes).
fn first_root_entry(image: &Path) -> Vec<u8> {
    let b = Fat32Boot::read(image, 0);
    let at = if b.is_small_fat() {
        b.root_offset()
    } else {
        b.data_offset() + u64::from(b.root_cluster - 2) * b.cluster_size()
    };
    read_at(image, at, 12)
}

/// `blkid -p`'s LABEL, if any.
fn blkid_label(image: &Path) -> Option<String> {
    let out = tool("blkid", &["-p", "-o", "export", &s(image)]);
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix("LABEL="))
        .map(str::to_string)
}

const LOWERCASE_WARNING: &str =
    "mkfs.fat: Warning: lowercase labels might not work properly on some systems";

/// `-n` as mkfs.fat writes it: the case given (cloud-init looks for
/// `cidata`), its warning for lower case, no label entry for a blank label
/// or `NO NAME`; the boot sector's label and the root's label entry byte for
/// byte, on FAT12, FAT16 and FAT32.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn labels_as_mkfs_fat_writes_them() {
    let links = Links::new();
    let tmp = TempDir::new("compat-labels");
    let mut rows = 0;
    // Every difference, so that one run shows each rule that fails.
    let mut wrong = Vec::new();
    for (extra, kib) in [(&[][..], 1440u64), (&[], 65536), (&["-F", "32"], 307_200)] {
        for label in ["cidata", "  ", "NO NAME", "no name", "Data 1", "ESP"] {
            let mut args = vec!["-C", "IMG", "--invariant", "-n", label];
            args.extend_from_slice(extra);
            let blocks = kib.to_string();
            args.push(&blocks);
            let t = twin(&links, &tmp, "mkfs.vfat", &args, 0);
            let what = format!("mkfs.vfat -n {label:?} {extra:?} {kib} KiB");
            let (a, b) = (bpb(&t.ours), bpb(&t.real));
            let mut differs = |field: &str, ours: String, theirs: String| {
                if ours != theirs {
                    wrong.push(format!("{what}: {field}: ours {ours}, mkfs.fat {theirs}"));
                }
            };
            let text = |l: &[u8]| format!("{:?}", String::from_utf8_lossy(l));
            differs("boot sector label", text(&a.label), text(&b.label));
            differs(
                "the root's first entry (label entry or none)",
                format!("{:?}", first_root_entry(&t.ours)),
                format!("{:?}", first_root_entry(&t.real)),
            );
            differs(
                "blkid LABEL",
                format!("{:?}", blkid_label(&t.ours)),
                format!("{:?}", blkid_label(&t.real)),
            );
            let warned = |o: &CmdOutput| o.stderr.lines().any(|l| l == LOWERCASE_WARNING);
            differs(
                "the lower-case warning",
                warned(&t.out).to_string(),
                warned(&t.real_out).to_string(),
            );
            let fsck = tool("fsck.fat", &["-n", &s(&t.ours)]);
            if !fsck.success() {
                wrong.push(format!("{what}: fsck.fat -n fails ours:\n{fsck}"));
            }
            rows += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    println!("{rows} labels: boot sector, label entry, blkid and warning as mkfs.fat's");
}

/// The classic floppy sizes of an image file get the floppy's boot sector
/// (media, 2 heads and its sectors per track, drive 0x00) and FAT entry 0,
/// byte for byte as mkfs.fat writes them (the OEM name aside); a 1440 KiB
/// image genimage sized, and the 720 KiB one's 112 root entries, too.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn floppy_boot_sectors_as_mkfs_fat() {
    let links = Links::new();
    let tmp = TempDir::new("compat-floppy");
    for kib in [360u64, 720, 1200, 1440, 2880] {
        let blocks = kib.to_string();
        let t = twin(
            &links,
            &tmp,
            "mkfs.fat",
            &["--invariant", "-C", "IMG", &blocks],
            0,
        );
        compare_floppy(&t, &format!("mkfs.fat -C IMG {kib}"));
    }
    let t = twin(&links, &tmp, "mkdosfs", &["-n", "BOOT", "IMG"], 1440 << 10);
    compare_floppy(&t, "genimage: mkdosfs -n BOOT on a 1440 KiB image");
    let t = twin(&links, &tmp, "mkfs.fat", &["-v", "-C", "IMG", "720"], 0);
    assert_eq!(bpb(&t.ours).root_entries, 112, "720 KiB: root entries");
    assert!(
        t.out.stderr.contains("--root-entries 112"),
        "720 KiB: the as: line names 112:\n{}",
        t.out
    );
}

fn compare_floppy(t: &Twin, what: &str) {
    let (a, b) = (read_at(&t.ours, 0, 512), read_at(&t.real, 0, 512));
    // The BPB and the extended BPB after the OEM name, up to the label
    // (the volume ID differs unless --invariant pins it on both).
    let span = if what.contains("genimage") {
        11..39
    } else {
        11..62
    };
    assert_eq!(a[span.clone()], b[span], "{what}: boot sector fields");
    let (ba, bb) = (bpb(&t.ours), bpb(&t.real));
    assert_ne!(
        bb.media, 0xF8,
        "{what}: mkfs.fat wrote a fixed disk's media byte"
    );
    assert_eq!((ba.media, ba.drive, ba.heads), (bb.media, 0, 2), "{what}");
    let fat0 = |p: &Path| {
        let g = Fat32Boot::read(p, 0);
        read_at(p, g.fat_offset(), 3)
    };
    assert_eq!(fat0(&t.ours), fat0(&t.real), "{what}: FAT entry 0 and 1");
    fsck_fat_clean(&t.ours);
}

/// Numbers as dosfstools reads them (`strtol`, base 0): hexadecimal, octal,
/// for `-F`, `-s`, `-S`, `-f` and BLOCKS; and `-f 1`, one FAT.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn numbers_and_one_fat_as_mkfs_fat_reads_them() {
    let links = Links::new();
    let tmp = TempDir::new("compat-numbers");
    let lines: &[&[&str]] = &[
        &["-C", "IMG", "-F", "0x10", "-s", "010", "0x8000"],
        &["-C", "IMG", "-F", "0x20", "-S", "0x1000", "0x48000"],
        &["-C", "IMG", "-F", "0X0c", "-s", "04", "-f", "01", "020000"],
        &["-C", "IMG", "-f", "1", "65536"],
        &["-C", "IMG", "-f", "1", "-F", "32", "307200"],
        &["-C", "IMG", "-r", "0x70", "1440"],
    ];
    for args in lines {
        let t = twin(&links, &tmp, "mkfs.fat", args, 0);
        let what = format!("mkfs.fat {}", args.join(" "));
        let (a, b) = (bpb(&t.ours), bpb(&t.real));
        assert_eq!(
            (a.width, a.sector, a.cluster, a.fats, a.root_entries),
            (b.width, b.sector, b.cluster, b.fats, b.root_entries),
            "{what}: ours {a:?}\ntheirs {b:?}"
        );
        assert_eq!(
            std::fs::metadata(&t.ours).map(|m| m.len()).ok(),
            std::fs::metadata(&t.real).map(|m| m.len()).ok(),
            "{what}: image size"
        );
        fsck_fat_clean(&t.ours);
    }
}

/// Across sizes and `-F`/`-s`/`-r`/`-f`/`-a`: the same width, cluster
/// size and root directory entries as mkfs.fat, and a cluster count within
/// 3 % of its (the front end scales the alignment to the volume).
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn geometry_close_to_mkfs_fat_across_sizes() {
    let links = Links::new();
    let tmp = TempDir::new("compat-sweep");
    let sizes = [
        128u64, 720, 1440, 2048, 4096, 8192, 16384, 32768, 65536, 262_144, 307_200, 1_048_576,
    ];
    let opts: &[&[&str]] = &[
        &[],
        &["-F", "12"],
        &["-F", "16"],
        &["-F", "32"],
        &["-s", "1"],
    ];
    let mut rows = 0;
    let mut worst = 0.0f64;
    let mut noted = 0;
    // Every option set at every size, and the root directories the
    // cluster rounding makes large (2,048 entries at 64 KiB clusters).
    let mut cases: Vec<(&[&str], u64)> = Vec::new();
    for extra in opts {
        cases.extend(sizes.iter().map(|&k| (*extra, k)));
    }
    cases.extend([
        (&["-s", "128"][..], 307_200u64),
        (&["-s", "128", "-F", "16"], 1_048_576),
        (&["-s", "64", "-F", "16"], 262_144),
    ]);
    for (extra, kib) in cases {
        let blocks = kib.to_string();
        let mut args = vec!["-C", "IMG"];
        args.extend_from_slice(extra);
        args.push(&blocks);
        let what = format!("mkfs.fat {}", args.join(" "));
        // Only what mkfs.fat makes.
        let probe = tmp.join("probe.img");
        let _ = std::fs::remove_file(&probe);
        let mut pa: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        pa[1] = s(&probe);
        if !mkfs_alloc_tests::run(require_tool("mkfs.fat"), &refs(&pa)).success() {
            continue;
        }
        let t = twin(&links, &tmp, "mkfs.fat", &args, 0);
        let (a, b) = (bpb(&t.ours), bpb(&t.real));
        if t.out.stderr.contains("note:") {
            // A documented difference (docs/mkfs-compat.md: the cluster
            // count near a width's limit), named in a note.
            println!("{what}: {a:?} (mkfs.fat {b:?}), noted");
            fsck_fat_clean(&t.ours);
            noted += 1;
            continue;
        }
        assert_eq!(
            (a.width, a.cluster, a.root_entries),
            (b.width, b.cluster, b.root_entries),
            "{what}: ours {a:?}\ntheirs {b:?}"
        );
        let off = (a.clusters as f64 - b.clusters as f64).abs() / b.clusters as f64;
        worst = worst.max(off);
        assert!(
            off <= 0.03,
            "{what}: {} clusters, mkfs.fat {} ({:.1} %)",
            a.clusters,
            b.clusters,
            off * 100.0
        );
        println!(
            "{what}: {} {} B clusters: ours {}, mkfs.fat {}",
            a.width, a.cluster, a.clusters, b.clusters
        );
        fsck_fat_clean(&t.ours);
        rows += 1;
    }
    assert!(rows >= 40, "only {rows} comparisons ran");
    println!(
        "{rows} geometries within {:.2} % of mkfs.fat's cluster count; {noted} noted differences",
        worst * 100.0
    );
}

/// mkfs.exfat's default cluster size at and around its boundaries (256 MiB,
/// 32 GiB: up to and including), read by `dump.exfat` from both images.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_default_cluster_at_its_boundaries() {
    let links = Links::new();
    let tmp = TempDir::new("compat-exfat-sizes");
    const MIB: u64 = 1 << 20;
    let sizes = [
        4 * MIB,
        256 * MIB - 4096,
        256 * MIB,
        256 * MIB + 4096,
        257 * MIB,
        (32 << 30) - MIB,
        32 << 30,
        (32 << 30) + 4096,
        (32 << 30) + MIB,
    ];
    let cluster = |p: &Path| {
        let out = tool("dump.exfat", &[&s(p)]);
        out.assert_success();
        let bits = |k| field_after(&out, k);
        (1u64 << bits("Sector Size Bits:")) << bits("Sector per Cluster bits:")
    };
    for bytes in sizes {
        let (ours, real) = (tmp.join("ours.img"), tmp.join("real.img"));
        for p in [&ours, &real] {
            let _ = std::fs::remove_file(p);
            sparse_file(p, bytes);
        }
        links.run("mkfs.exfat", &["-q", &s(&ours)]).assert_success();
        tool("mkfs.exfat", &[&s(&real)]).assert_success();
        let (a, b) = (cluster(&ours), cluster(&real));
        assert_eq!(a, b, "{bytes} bytes: cluster size ours {a}, mkfs.exfat {b}");
        println!("{bytes} bytes: {a}-byte clusters, as mkfs.exfat");
    }
    for p in [tmp.join("ours.img"), tmp.join("real.img")] {
        let _ = std::fs::remove_file(p);
    }
}

/// cloud-localds' seed: a 128 KiB image, `mkfs.vfat -n cidata`, then the
/// files copied in with mtools. A 100,000-byte user-data fits ours as it
/// fits mkfs.fat's, and both have the same space left (`mdir`).
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_cloud_localds_seed_holds_what_mkfs_fat_holds() {
    let links = Links::new();
    let tmp = TempDir::new("compat-seed");
    let t = twin(
        &links,
        &tmp,
        "mkfs.vfat",
        &["-n", "cidata", "IMG"],
        128 << 10,
    );
    let data = tmp.join("user-data");
    std::fs::write(&data, vec![b'x'; 100_000]).expect("write user-data");
    let free = |img: &Path| {
        let copy = tool("mcopy", &["-i", &s(img), &s(&data), "::user-data"]);
        assert!(copy.success(), "mcopy into {}:\n{copy}", img.display());
        let dir = tool("mdir", &["-i", &s(img), "::"]);
        dir.assert_success();
        let line = dir
            .lines()
            .find(|l| l.ends_with("bytes free"))
            .map(str::to_string);
        let line = line.unwrap_or_else(|| panic!("no `bytes free` in mdir:\n{dir}"));
        line.chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
    };
    assert_eq!(free(&t.ours), free(&t.real), "bytes free after user-data");
    assert_eq!(blkid_label(&t.ours).as_deref(), Some("cidata"));
    fsck_fat_clean(&t.ours);
}
