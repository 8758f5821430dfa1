//! Tool tier: every collected command line, through our link and through
//! the real dosfstools 4.2 / exfatprogs on twin targets (loop devices where
//! the caller formats devices). The rows mirror the table of
//! docs/mkfs-compat.md.

use super::{s, Links};
use mkfs_alloc_tests::checks::{fsck_exfat_clean, fsck_fat_clean};
use mkfs_alloc_tests::{sparse_file, tool, CmdOutput, LoopDevice, TempDir, MIB};
use std::collections::BTreeMap;
use std::path::Path;

/// Where ours may differ from the original on purpose (docs/mkfs-compat.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Differs {
    /// Nothing: every compared field is equal.
    No,
    /// The cluster size: mkfs.fat's count would sit within our margins.
    Cluster,
}

/// One command line.
struct Line {
    /// Who passes it, and where.
    caller: &'static str,
    /// argv[0] the caller uses.
    name: &'static str,
    /// The arguments; `DEV` is the target.
    args: &'static [&'static str],
    /// The same request in the installed original's options, where it
    /// predates one of ours (exfatprogs 1.2.0 has no `-q`).
    real_args: Option<&'static [&'static str]>,
    /// Target size in MiB (`-C` lines create it), its sector size, and
    /// whether it is a loop device (the caller formats a device).
    mib: u64,
    sector: u32,
    device: bool,
    /// blkid's VERSION, LABEL and UUID for ours.
    version: &'static str,
    label: Option<&'static str>,
    uuid: Option<&'static str>,
    differs: Differs,
}

const fn line(
    caller: &'static str,
    name: &'static str,
    args: &'static [&'static str],
    mib: u64,
    version: &'static str,
) -> Line {
    Line {
        caller,
        name,
        args,
        real_args: None,
        mib,
        sector: 512,
        device: true,
        version,
        label: None,
        uuid: None,
        differs: Differs::No,
    }
}

impl Line {
    const fn label(mut self, l: &'static str) -> Line {
        self.label = Some(l);
        self
    }
    const fn uuid(mut self, u: &'static str) -> Line {
        self.uuid = Some(u);
        self
    }
    const fn sector(mut self, s: u32) -> Line {
        self.sector = s;
        self
    }
    const fn image(mut self) -> Line {
        self.device = false;
        self
    }
    const fn real_args(mut self, a: &'static [&'static str]) -> Line {
        self.real_args = Some(a);
        self
    }
    const fn differs(mut self, d: Differs) -> Line {
        self.differs = d;
        self
    }
}

/// The lines the callers pass, collected from their sources. GParted pads
/// FAT labels to 11 characters with spaces (`sanitize_label`).
const CALLERS: &[Line] = &[
    line(
        "GParted fat16.cc (FAT16)",
        "mkfs.fat",
        &["-F16", "-v", "-I", "-n", "GPARTED16  ", "DEV"],
        64,
        "FAT16",
    )
    .label("GPARTED16"),
    line(
        "GParted fat16.cc (FAT32)",
        "mkfs.fat",
        &["-F32", "-v", "-I", "-n", "GPARTED32  ", "DEV"],
        300,
        "FAT32",
    )
    .label("GPARTED32"),
    line(
        "GParted fat16.cc (no label)",
        "mkfs.fat",
        &["-F32", "-v", "-I", "DEV"],
        300,
        "FAT32",
    ),
    line(
        "GParted exfat.cc",
        "mkfs.exfat",
        &["-L", "GPEXFAT", "DEV"],
        64,
        "1.0",
    )
    .label("GPEXFAT"),
    line(
        "GParted exfat.cc (no label)",
        "mkfs.exfat",
        &["-L", "", "DEV"],
        300,
        "1.0",
    ),
    line(
        "udisks 2.9 udiskslinuxfsinfo.c",
        "mkfs.vfat",
        &["-I", "-n", "UDISKS", "DEV"],
        64,
        "FAT16",
    )
    .label("UDISKS"),
    line(
        "udisks 2.9 udiskslinuxfsinfo.c",
        "mkfs.vfat",
        &["-I", "-n", "UDISKS", "DEV"],
        1024,
        "FAT32",
    )
    .label("UDISKS"),
    line(
        "udisks 2.9 udiskslinuxfsinfo.c (no label)",
        "mkfs.vfat",
        &["-I", "-n", "", "DEV"],
        128,
        "FAT16",
    ),
    line(
        "libblockdev 3 vfat.c (udisks 2.10)",
        "mkfs.vfat",
        &["DEV", "-n", "UDISKS", "-i", "2E24EC82", "-I", "--mbr=no"],
        300,
        "FAT16",
    )
    .label("UDISKS")
    .uuid("2E24-EC82"),
    line(
        "libblockdev 3 exfat.c (udisks 2.10)",
        "mkfs.exfat",
        &["DEV", "-n", "UDISKS"],
        300,
        "1.0",
    )
    .label("UDISKS"),
    line(
        "kpmcore fat12.cpp",
        "mkfs.fat",
        &["-F12", "-I", "-v", "DEV"],
        8,
        "FAT12",
    ),
    line(
        "kpmcore fat16.cpp",
        "mkfs.fat",
        &["-F16", "-I", "-v", "DEV"],
        64,
        "FAT16",
    ),
    line(
        "kpmcore fat32.cpp",
        "mkfs.fat",
        &["-F32", "-I", "-v", "DEV"],
        300,
        "FAT32",
    ),
    line(
        "kpmcore fat12.cpp createWithFatSize",
        "mkfs.fat",
        &["-S4096", "-s2", "-F32", "-I", "-v", "DEV"],
        1024,
        "FAT32",
    )
    .sector(4096),
    line("kpmcore exfat.cpp", "mkfs.exfat", &["DEV"], 64, "1.0"),
    line(
        "kpmcore exfat.cpp (cluster size)",
        "mkfs.exfat",
        &["-c", "32768", "DEV"],
        300,
        "1.0",
    ),
    line(
        "systemd mkfs-util.c (repart)",
        "mkfs.vfat",
        &["-i", "0A1B2C3D", "-n", "ESP", "-F", "32", "DEV"],
        300,
        "FAT32",
    )
    .label("ESP")
    .uuid("0A1B-2C3D"),
    line(
        "systemd mkfs-util.c (repart, 4096)",
        "mkfs.vfat",
        &[
            "-i", "0A1B2C3D", "-n", "ESP", "-F", "32", "-S", "4096", "DEV",
        ],
        600,
        "FAT32",
    )
    .label("ESP")
    .uuid("0A1B-2C3D")
    .sector(4096),
    line(
        "systemd mkfs-util.c (exfat)",
        "mkfs.exfat",
        &["DEV"],
        300,
        "1.0",
    )
    .sector(4096),
    line(
        "genimage image-vfat.c",
        "mkdosfs",
        &["-n", "BOOT", "DEV"],
        32,
        "FAT16",
    )
    .label("BOOT")
    .image(),
    line(
        "genimage image-vfat.c (extraargs)",
        "mkdosfs",
        &["-F", "32", "-n", "BOOT", "DEV"],
        64,
        "FAT32",
    )
    .label("BOOT")
    .image(),
];

/// What a person types.
const TYPED: &[Line] = &[
    line(
        "typed",
        "mkfs.fat",
        &[
            "-F", "32", "-s", "8", "-S", "512", "-n", "NAME", "-i", "1234abcd", "-v", "DEV",
        ],
        1024,
        "FAT32",
    )
    .label("NAME")
    .uuid("1234-ABCD")
    .image(),
    line("typed", "mkfs.fat", &["-C", "DEV", "65536"], 64, "FAT16").image(),
    line(
        "typed",
        "mkfs.fat",
        &["--invariant", "-C", "DEV", "10240"],
        10,
        "FAT16",
    )
    .uuid("1234-ABCD")
    .image(),
    line("typed", "mkfs.fat", &["-F", "12", "DEV"], 16, "FAT12").image(),
    line(
        "typed",
        "mkfs.fat",
        &["-a", "-r", "112", "DEV"],
        64,
        "FAT16",
    )
    .image(),
    line("typed", "mkfs.fat", &["-C", "DEV", "1440"], 2, "FAT12").image(),
    line("typed", "mkfs.msdos", &["-n", "photos", "DEV"], 64, "FAT16")
        .label("photos")
        .image(),
    line("typed", "mkfs.fat", &["-C", "DEV", "8230"], 9, "FAT16")
        .image()
        .differs(Differs::Cluster),
    line("typed", "mkfs.fat", &["-v", "DEV"], 600, "FAT32").sector(4096),
    line(
        "typed",
        "mkfs.exfat",
        &["-c", "128K", "-L", "DATA", "-b", "4M", "-f", "DEV"],
        300,
        "1.0",
    )
    .label("DATA")
    .image(),
    line("typed", "mkfs.exfat", &["-q", "DEV"], 1024, "1.0")
        .image()
        .real_args(&["DEV"]),
];

/// `blkid -p -o export` as a map (the probed target's own fields only).
fn blkid(target: &Path) -> BTreeMap<String, String> {
    let out = tool("blkid", &["-p", "-o", "export", &s(target)]);
    out.assert_success();
    out.stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !matches!(*k, "DEVNAME" | "PTTYPE" | "PART_ENTRY_SCHEME"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Sector size, cluster size and FAT width as `fsck.fat -n -v` reads them;
/// the cluster size from `dump.exfat` for exFAT.
fn geometry(target: &Path, exfat: bool) -> (u64, u64) {
    if exfat {
        let out = tool("dump.exfat", &[&s(target)]);
        out.assert_success();
        let bits = |key| mkfs_alloc_tests::checks::field_after(&out, key);
        let sector = 1u64 << bits("Sector Size Bits:");
        return (sector, sector << bits("Sector per Cluster bits:"));
    }
    let out = tool("fsck.fat", &["-n", "-v", &s(target)]);
    out.assert_success();
    let num = |suffix: &str| {
        out.lines()
            .find(|l| l.ends_with(suffix))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no `{suffix}` in fsck.fat -v:\n{out}"))
    };
    (num("bytes per logical sector"), num("bytes per cluster"))
}

/// The target of one side: a sparse image, on a loop device if the line says.
struct Side {
    image: std::path::PathBuf,
    dev: Option<LoopDevice>,
}

impl Side {
    fn new(tmp: &TempDir, tag: &str, l: &Line, create: bool) -> Side {
        let image = tmp.join(&format!("{tag}.img"));
        if create {
            return Side { image, dev: None };
        }
        sparse_file(&image, l.mib * MIB);
        let dev = l
            .device
            .then(|| LoopDevice::attach_sector(&image, l.sector));
        Side { image, dev }
    }

    fn target(&self) -> &Path {
        self.dev.as_ref().map_or(&self.image, |d| d.path())
    }

    fn run(&self, program: &Path, args: &[&str]) -> CmdOutput {
        let t = s(self.target());
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "DEV" { t.as_str() } else { a })
            .collect();
        mkfs_alloc_tests::run(program, &args)
    }
}

/// Runs `l` through ours and the original and compares.
fn check(links: &Links, l: &Line) {
    let what = format!("{} `{} {}`", l.caller, l.name, l.args.join(" "));
    let tmp = TempDir::new("compat-line");
    let create = l.args.contains(&"-C");
    let exfat = l.name == "mkfs.exfat";
    let real_name = if exfat { "mkfs.exfat" } else { "mkfs.fat" };
    let (ours, real) = (
        Side::new(&tmp, "ours", l, create),
        Side::new(&tmp, "real", l, create),
    );
    let out = ours.run(&links.path(l.name), l.args);
    assert!(out.success(), "{what}: ours failed:\n{out}");
    let theirs = real.run(
        &mkfs_alloc_tests::require_tool(real_name),
        l.real_args.unwrap_or(l.args),
    );
    assert!(theirs.success(), "{what}: {real_name} failed:\n{theirs}");
    if exfat {
        fsck_exfat_clean(ours.target());
    } else {
        fsck_fat_clean(ours.target());
    }
    let (a, b) = (blkid(ours.target()), blkid(real.target()));
    let field = |m: &BTreeMap<String, String>, k: &str| m.get(k).cloned();
    assert_eq!(
        field(&a, "VERSION").as_deref(),
        Some(l.version),
        "{what}: ours {a:?}"
    );
    assert_eq!(
        field(&a, "LABEL").as_deref(),
        l.label,
        "{what}: our label {a:?}"
    );
    if let Some(u) = l.uuid {
        assert_eq!(
            field(&a, "UUID").as_deref(),
            Some(u),
            "{what}: our UUID {a:?}"
        );
        assert_eq!(
            field(&b, "UUID").as_deref(),
            Some(u),
            "{what}: their UUID {b:?}"
        );
    }
    for k in ["TYPE", "VERSION", "BLOCK_SIZE", "SEC_TYPE", "USAGE"] {
        assert_eq!(
            field(&a, k),
            field(&b, k),
            "{what}: blkid {k}: ours {a:?}, theirs {b:?}"
        );
    }
    assert_eq!(field(&a, "LABEL"), field(&b, "LABEL"), "{what}: label");
    let (ga, gb) = (
        geometry(ours.target(), exfat),
        geometry(real.target(), exfat),
    );
    assert_eq!(ga.0, u64::from(l.sector), "{what}: our sector size");
    assert_eq!(ga.0, gb.0, "{what}: sector size");
    if l.differs == Differs::Cluster {
        assert_ne!(
            ga.1, gb.1,
            "{what}: the documented cluster difference is gone"
        );
        assert!(
            out.stderr.contains("note:"),
            "{what}: no note on the difference:\n{out}"
        );
    } else {
        assert_eq!(ga.1, gb.1, "{what}: cluster size (ours, theirs)");
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn caller_lines_match_the_originals() {
    let links = Links::new();
    for l in CALLERS {
        check(&links, l);
    }
    println!(
        "{} caller lines: ours and the original agree",
        CALLERS.len()
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn typed_lines_match_the_originals() {
    let links = Links::new();
    for l in TYPED {
        check(&links, l);
    }
    println!("{} typed lines: ours and the original agree", TYPED.len());
}
