//! `cargo xtask embedded --fatfs [--json]`: the footprint of ChaN's FatFs
//! `f_mkfs` on the firmware's CPU class (Cortex-M3, Thumb-2), to set
//! beside the firmware's own figures.
//!
//! 1. Source: FatFs as the crate `fatfs-sys` 0.2.0 bundles it
//!    (`fatfs/source/`), from the cargo registry (`CARGO_HOME`), fetched
//!    with `cargo fetch` of a throwaway manifest when it is not there yet.
//!    The revision is read from `ff.h`.
//! 2. Configuration: the shipped `ffconf.h` with [`CONFIG`] set, the
//!    smallest build that still formats exFAT and FAT32 with and without
//!    an MBR.
//! 3. Build: `fatfs/main.c` (a disk that stores nothing and counts the
//!    sectors written; `main` calls `f_mkfs` for exFAT and for FAT32 with a
//!    512-byte static work buffer) with `ff.c` and `ffunicode.c`, by
//!    `arm-none-eabi-gcc` ([`CFLAGS`]), linked with `--gc-sections`,
//!    `-nostartfiles`, its own vector table and `fatfs/link.ld`, and
//!    newlib-nano (`--specs=nano.specs`) for any C library function FatFs
//!    needs. Twice: as is, and with `FATFS_BASELINE`, where `f_mkfs` is a
//!    stub. `flash_bytes` (text + rodata + data) and `ram_bytes` (data +
//!    bss) are the differences between the two images: `f_mkfs` and
//!    everything it pulls in, the stub added back; the work buffer is in
//!    both and reported on its own.
//! 4. Stack: `stack_bytes_static` is the frame of `f_mkfs` plus its deepest
//!    chain of callees, from GCC's `-fcallgraph-info=su` (the frames of
//!    `-fstack-usage` and the direct calls): a static estimate; it fails on
//!    a dynamic frame, an indirect call, recursion or a callee of unknown
//!    frame. The image also runs in QEMU (`lm3s6965evb`): both calls must
//!    return `FR_OK`, and the painted stack below `main`'s frame gives
//!    `stack_bytes_painted`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::elf;
use crate::{cargo, find_tool, run, target_dir};
use callgraph::CallGraph;

/// The cross compiler and its Debian package.
const GCC: &str = "arm-none-eabi-gcc";
const NM: &str = "arm-none-eabi-nm";
const GCC_PKG: &str = "gcc-arm-none-eabi";
const NEWLIB_PKG: &str = "libnewlib-arm-none-eabi";

/// The crate whose sources carry FatFs, pinned.
const CRATE: &str = "fatfs-sys";
const CRATE_VERSION: &str = "0.2.0";

/// The sectors the stub disk reports (64 MiB of 512 bytes).
const SECTORS: u64 = 131_072;

/// The `ffconf.h` options set, each with why: together the smallest build
/// that still formats exFAT and FAT32 with and without an MBR.
pub(super) const CONFIG: &[(&str, u32, &str)] = &[
    ("FF_USE_MKFS", 1, "f_mkfs itself"),
    ("FF_FS_EXFAT", 1, "exFAT"),
    (
        "FF_USE_LFN",
        1,
        "exFAT requires LFN; 1 = static buffer (no heap, no stack buffer)",
    ),
    ("FF_FS_READONLY", 0, "f_mkfs needs the write functions"),
    ("FF_FS_MINIMIZE", 3, "the fewest other API functions"),
    ("FF_USE_FASTSEEK", 0, "not needed to format"),
    (
        "FF_CODE_PAGE",
        437,
        "one SBCS code page, the smallest tables",
    ),
    ("FF_MAX_SS", 512, "512-byte sectors only, as the firmware"),
    (
        "FF_FS_NORTC",
        1,
        "fixed timestamp, no get_fattime (the firmware pins its time too)",
    ),
    ("FF_VOLUMES", 1, "one drive"),
    (
        "FF_MULTI_PARTITION",
        0,
        "f_mkfs writes a one-partition MBR, or none with FM_SFD",
    ),
];

/// Compiler flags of every object.
const CFLAGS: &[&str] = &[
    "-mcpu=cortex-m3",
    "-mthumb",
    "-Os",
    "-ffunction-sections",
    "-fdata-sections",
    "-fstack-usage",
    "-fcallgraph-info=su",
];

/// Flags of `main.c` besides [`CFLAGS`]: its loops stay loops (no
/// memset/memcpy calls), so a C library function in the image is FatFs's.
const MAIN_CFLAGS: &[&str] = &[
    "-ffreestanding",
    "-fno-tree-loop-distribute-patterns",
    "-Wall",
    "-Wextra",
    "-Werror",
];

const LINK_FLAGS: &[&str] = &[
    "-mcpu=cortex-m3",
    "-mthumb",
    "--specs=nano.specs",
    "-nostartfiles",
    "-Wl,--gc-sections",
];

mod callgraph;

const MAIN_C: &str = include_str!("fatfs/main.c");
const LINK_LD: &str = include_str!("fatfs/link.ld");

/// One image: its sizes and symbols.
struct Image {
    dir: PathBuf,
    sizes: elf::Sizes,
    /// Name and size of every sized symbol, from `nm`.
    symbols: Vec<(String, u64)>,
}

/// `cargo xtask embedded --fatfs [--json]`.
pub(super) fn fatfs_cmd(json_out: bool) -> Result<(), String> {
    let tools = check_tools()?;
    let gcc_version = &tools.gcc_version;
    let src = source_dir()?;
    let ff_h = read(&src.join("ff.h"))?;
    let revision = revision(&ff_h)?;
    let work = target_dir().join("embedded").join("fatfs");
    let _ = std::fs::remove_dir_all(&work);
    let input = work.join("src");
    std::fs::create_dir_all(&input).map_err(|e| format!("{}: {e}", input.display()))?;
    for name in ["ff.c", "ff.h", "ffunicode.c", "diskio.h"] {
        std::fs::copy(src.join(name), input.join(name))
            .map_err(|e| format!("{}: {e}", src.join(name).display()))?;
    }
    write(
        &input.join("ffconf.h"),
        &ffconf(&read(&src.join("ffconf.h"))?)?,
    )?;
    write(&input.join("main.c"), MAIN_C)?;
    write(&input.join("link.ld"), LINK_LD)?;

    let full = build(&tools, &input, &work.join("full"), false)?;
    let base = build(&tools, &input, &work.join("baseline"), true)?;
    let stub = symbol(&base, "mkfs_stub")?;
    let buffer = symbol(&full, "work")?;
    let flash = (full.sizes.flash() + stub)
        .checked_sub(base.sizes.flash())
        .ok_or("the baseline image is larger than the full one")?;
    let ram = full.sizes.ram().saturating_sub(base.sizes.ram());

    let ours = object_symbols(&tools, &full.dir)?;
    let libc: Vec<(String, u64)> = full
        .symbols
        .iter()
        .filter(|(n, _)| !ours.contains_key(n.as_str()))
        .cloned()
        .collect();
    let fatfs_symbols: BTreeMap<&str, u64> = full
        .symbols
        .iter()
        .filter(|(n, _)| ours.get(n.as_str()).is_some_and(|o| o != "main.o"))
        .map(|(n, s)| (n.as_str(), *s))
        .collect();

    let graph = CallGraph::read(&full.dir)?;
    let (stack_static, chain) = graph.deepest("f_mkfs")?;
    let painted = run_qemu(&tools, &full.dir.join("image.elf"))?;

    let notes = format!(
        "FatFs {revision} from crates.io {CRATE} {CRATE_VERSION}; ffconf.h: {}; \
         {GCC} {}, --gc-sections, -nostartfiles with its own vector table, \
         newlib-nano linked (--specs=nano.specs); flash/ram are the image minus a \
         baseline image whose f_mkfs is a stub (the stub's {stub} bytes added back): \
         f_mkfs with every FatFs and library function it pulls in, without the stub \
         disk driver, startup and vector table; C library functions pulled in: {}; \
         ram_bytes excludes the {buffer}-byte work buffer; stack_bytes_static is a \
         static estimate (GCC -fstack-usage frames along the deepest call chain, \
         disk stubs included); fatfs_symbols lists FatFs's named symbols in the \
         image (string literals and padding make up the rest of flash_bytes); \
         both f_mkfs calls returned FR_OK in QEMU on a stub disk of {SECTORS} \
         sectors (nothing stored, images not checked)",
        CONFIG
            .iter()
            .map(|(k, v, _)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        CFLAGS.join(" "),
        if libc.is_empty() {
            "none".to_string()
        } else {
            libc.iter()
                .map(|(n, s)| format!("{n} ({s} bytes)"))
                .collect::<Vec<_>>()
                .join(", ")
        },
    );
    let libc_json: Vec<Value> = libc
        .iter()
        .map(|(n, s)| json!({"name": n, "bytes": s}))
        .collect();
    let config_json: Vec<Value> = CONFIG
        .iter()
        .map(|(k, v, why)| json!({"option": k, "value": v, "why": why}))
        .collect();
    let report = json!({
        "fatfs_revision": revision,
        "gcc_version": gcc_version,
        "flash_bytes": flash,
        "ram_bytes": ram,
        "work_buffer_bytes": buffer,
        "stack_bytes_static": stack_static,
        "stack_bytes_painted": painted,
        "stack_chain": chain,
        "libc_functions": libc_json,
        "fatfs_symbols": fatfs_symbols,
        "images": {
            "full": {"text": full.sizes.text, "data": full.sizes.data, "bss": full.sizes.bss},
            "baseline": {"text": base.sizes.text, "data": base.sizes.data, "bss": base.sizes.bss},
        },
        "config": config_json,
        "notes": notes,
    });
    if json_out {
        println!("{report:#}");
    } else {
        println!("FatFs {revision} f_mkfs (exFAT + FAT32), {gcc_version}, cortex-m3 -Os");
        println!("  flash (text+rodata+data)       {flash:>6} bytes");
        println!("  static RAM (data+bss)          {ram:>6} bytes, besides the work buffer");
        println!("  work buffer                    {buffer:>6} bytes");
        println!(
            "  stack, static estimate         {stack_static:>6} bytes ({})",
            chain.join(" > ")
        );
        println!("  stack, painted in QEMU         {painted:>6} bytes");
        println!(
            "  C library functions            {}",
            if libc.is_empty() {
                "none".into()
            } else {
                format!("{libc:?}")
            }
        );
        println!("  build: {}", work.display());
    }
    Ok(())
}

/// The programs this command runs, found on `PATH` (or in the usual
/// directories), and the compiler's version line.
struct Tools {
    gcc: PathBuf,
    nm: PathBuf,
    qemu: PathBuf,
    gcc_version: String,
}

/// Fails unless the cross compiler, newlib-nano and QEMU are there, naming
/// the Debian packages to install.
fn check_tools() -> Result<Tools, String> {
    let missing = |what: &str, pkgs: &str| {
        format!(
            "{what} not found; install it with `apt-get install -y {pkgs}` \
             (or `cargo xtask install-tools --embedded` as root)"
        )
    };
    let gcc = find_tool(GCC).ok_or_else(|| missing(GCC, &format!("{GCC_PKG} {NEWLIB_PKG}")))?;
    let nm = find_tool(NM).ok_or_else(|| missing(NM, GCC_PKG))?;
    let qemu = find_tool("qemu-system-arm")
        .ok_or_else(|| missing("qemu-system-arm", "qemu-system-arm"))?;
    let lib = output(Command::new(&gcc).args([
        "-mcpu=cortex-m3",
        "-mthumb",
        "-print-file-name=libc_nano.a",
    ]))?;
    if !Path::new(lib.trim()).is_absolute() {
        return Err(missing("newlib-nano (libc_nano.a)", NEWLIB_PKG));
    }
    let version = output(Command::new(&gcc).arg("--version"))?;
    let gcc_version = version
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    Ok(Tools {
        gcc,
        nm,
        qemu,
        gcc_version,
    })
}

/// The directory holding `ff.c` of [`CRATE`] [`CRATE_VERSION`] in the
/// cargo registry; fetches the crate first if it is not there.
fn source_dir() -> Result<PathBuf, String> {
    if let Some(dir) = find_in_registry() {
        return Ok(dir);
    }
    let dir = target_dir().join("embedded").join("fatfs-fetch");
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"fatfs-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\n\n[dependencies]\n{CRATE} = \"={CRATE_VERSION}\"\n\n[workspace]\n"
        ),
    )?;
    write(&dir.join("src").join("lib.rs"), "")?;
    run(Command::new(cargo())
        .arg("fetch")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml")))?;
    find_in_registry().ok_or_else(|| {
        format!("{CRATE} {CRATE_VERSION} is not in the cargo registry after `cargo fetch`")
    })
}

fn find_in_registry() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(home.join("registry").join("src"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| {
            e.path()
                .join(format!("{CRATE}-{CRATE_VERSION}"))
                .join("fatfs")
                .join("source")
        })
        .filter(|d| d.join("ff.c").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter().next()
}

/// The revision named in `ff.h`'s header comment ("R0.13c") and its
/// `FF_DEFINED` id.
fn revision(ff_h: &str) -> Result<String, String> {
    let name = ff_h
        .lines()
        .take(5)
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("R0.") || w.starts_with("R1."))
        })
        .ok_or("ff.h names no FatFs revision in its header comment")?;
    let id = ff_h
        .lines()
        .find_map(|l| l.trim().strip_prefix("#define FF_DEFINED"))
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("ff.h has no FF_DEFINED")?;
    Ok(format!("{name} (FF_DEFINED {id})"))
}

/// The shipped `ffconf.h` with every option of [`CONFIG`] set; each must
/// be defined exactly once.
fn ffconf(shipped: &str) -> Result<String, String> {
    let mut out = String::with_capacity(shipped.len());
    let mut seen = vec![0u32; CONFIG.len()];
    for line in shipped.split_inclusive('\n') {
        let mut words = line.split_whitespace();
        let hit = (words.next() == Some("#define"))
            .then(|| words.next())
            .flatten()
            .and_then(|name| CONFIG.iter().position(|(k, _, _)| *k == name));
        match hit {
            Some(i) => {
                let (name, value, why) = CONFIG[i];
                seen[i] += 1;
                out.push_str(&format!(
                    "#define {name}\t{value}\t/* xtask embedded --fatfs: {why} */\n"
                ));
            }
            None => out.push_str(line),
        }
    }
    match CONFIG.iter().zip(&seen).find(|(_, n)| **n != 1) {
        Some(((name, _, _), n)) => Err(format!("ffconf.h defines {name} {n} times, not once")),
        None => Ok(out),
    }
}

/// Compiles and links one image into `out` (`image.elf`, the `.su` and
/// `.ci` files, the map).
fn build(tools: &Tools, input: &Path, out: &Path, baseline: bool) -> Result<Image, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut objects = Vec::new();
    for name in ["ff", "ffunicode", "main"] {
        let obj = out.join(format!("{name}.o"));
        let mut cmd = Command::new(&tools.gcc);
        cmd.args(CFLAGS).arg("-I").arg(input);
        if name == "main" {
            cmd.args(MAIN_CFLAGS);
            if baseline {
                cmd.arg("-DFATFS_BASELINE");
            }
        } else {
            cmd.arg("-w"); // FatFs's own warnings are not ours to fix
        }
        cmd.arg("-c")
            .arg(input.join(format!("{name}.c")))
            .arg("-o")
            .arg(&obj)
            .arg("-dumpdir")
            .arg(format!("{}/", out.display()));
        run(&mut cmd)?;
        objects.push(obj);
    }
    let elf_path = out.join("image.elf");
    run(Command::new(&tools.gcc)
        .args(LINK_FLAGS)
        .arg("-T")
        .arg(input.join("link.ld"))
        .arg(format!("-Wl,-Map={}", out.join("image.map").display()))
        .args(&objects)
        .arg("-o")
        .arg(&elf_path))?;
    let bytes = std::fs::read(&elf_path).map_err(|e| format!("{}: {e}", elf_path.display()))?;
    Ok(Image {
        dir: out.to_path_buf(),
        sizes: elf::sizes(&bytes)?,
        symbols: sized_symbols(tools, &elf_path)?,
    })
}

/// The size of the symbol `name` of `image`.
fn symbol(image: &Image, name: &str) -> Result<u64, String> {
    image
        .symbols
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| *s)
        .ok_or_else(|| format!("{}: no symbol {name}", image.dir.display()))
}

/// `nm -S` of `file`: every symbol with a size, as (name, size).
fn sized_symbols(tools: &Tools, file: &Path) -> Result<Vec<(String, u64)>, String> {
    let text = output(Command::new(&tools.nm).arg("-S").arg(file))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [_, size, kind, name] if !kind.eq_ignore_ascii_case("u") => {
                    Some(((*name).to_string(), u64::from_str_radix(size, 16).ok()?))
                }
                _ => None,
            }
        })
        .collect())
}

/// The symbols the three objects define, each with its object's name.
fn object_symbols(tools: &Tools, dir: &Path) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for obj in ["ff.o", "ffunicode.o", "main.o"] {
        for (name, _) in sized_symbols(tools, &dir.join(obj))? {
            out.insert(name, obj.to_string());
        }
    }
    Ok(out)
}

/// Runs the image in QEMU; both calls must return `FR_OK`. Returns the
/// painted stack peak.
fn run_qemu(tools: &Tools, elf_path: &Path) -> Result<u64, String> {
    let dir = elf_path.parent().unwrap_or(Path::new("."));
    let (status, text) = super::qemu_semihosting(&tools.qemu, elf_path, dir)?;
    let Some(status) = status else {
        return Err(format!("QEMU ran over {:?}", super::QEMU_TIMEOUT));
    };
    let ok = text.matches("fatfs: f_mkfs ").count() == 2
        && text
            .lines()
            .filter(|l| l.starts_with("fatfs: f_mkfs "))
            .all(|l| l.contains(" result=0 "));
    let peak = text
        .lines()
        .find_map(|l| l.strip_prefix("fatfs: stack_peak_bytes="))
        .and_then(|v| v.trim().parse().ok());
    match (status.success() && ok, peak) {
        (true, Some(peak)) => Ok(peak),
        _ => Err(format!(
            "f_mkfs did not format both volumes in QEMU ({}): {}",
            status,
            text.trim()
        )),
    }
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}").replace('"', "");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{shown}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_every_option_once() {
        let shipped = "#define FFCONF_DEF\t86604\n#define FF_USE_MKFS\t\t0\n/* FF_FS_EXFAT */\n";
        assert!(ffconf(shipped).is_err(), "options missing");
        let all: String = CONFIG
            .iter()
            .map(|(k, _, _)| format!("#define {k}\t9\t/* x */\n"))
            .collect();
        let out = ffconf(&format!("#define FFCONF_DEF\t86604\n{all}")).expect("all there");
        assert!(out.starts_with("#define FFCONF_DEF\t86604\n"));
        assert!(out.contains("#define FF_USE_MKFS\t1\t/*"));
        assert!(out.contains("#define FF_CODE_PAGE\t437\t/*"));
        assert!(!out.contains("\t9\t"));
        assert!(ffconf(&format!("{all}{all}")).is_err(), "defined twice");
    }

    #[test]
    fn reads_the_revision() {
        let h = "/*---\n/  FatFs - Generic FAT Filesystem module  R0.13c   /\n*/\n\
                 #ifndef FF_DEFINED\n#define FF_DEFINED\t86604\t/* Revision ID */\n";
        assert_eq!(revision(h).expect("named"), "R0.13c (FF_DEFINED 86604)");
        assert!(revision("#define FF_DEFINED 1\n").is_err());
    }
}
