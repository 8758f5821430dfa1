//! `cargo xtask tidy [--no-std]`: the invariants of ARCHITECTURE.md that
//! are a matter of the source text, checked in well under a second (the
//! before-stop hook and CI run it):
//!
//! - **file length**: no `.rs` file of the workspace over [`MAX_LINES`];
//! - **module tree = file tree**: no `#[path]` attribute outside build
//!   scripts (which include source files of their crate by path);
//! - **tracker numbers**: no `.rs` file cites an issue number of this
//!   project's tracker, which the repository does not contain (other
//!   projects' issues, public sources, may be cited);
//! - **byte offsets**: outside `mkfs-alloc-ondisk`, library and binary code
//!   (`crates/*/src`, test code excepted) neither calls
//!   `from_le_bytes`/`to_le_bytes` nor slices or indexes a buffer with integer
//!   literal bounds (`b[3..11]`, `b[..8]`, `b.get(24..28)`): on-disk bytes
//!   go through the zerocopy structs of `mkfs-alloc-ondisk` (allow-list with
//!   reasons: [`allow::BYTE_OFFSETS`]);
//! - **CLI flags**: no string literal of a library crate names a command-line
//!   flag (`"--fs"`): libraries return structured errors, the CLI says which
//!   flag ([`allow::CLI_FLAGS`]);
//! - **printing**: only the CLI (and the test support) prints (`println!`,
//!   `eprintln!`, `dbg!` in library code);
//! - **no I/O**: `mkfs-alloc-ondisk` and `mkfs-alloc-layout` name no file,
//!   socket or standard stream (`std::fs`, `std::net`, `File::`, …);
//! - **docs**: every crate inherits the workspace lints, which warn on
//!   missing docs (`missing_docs`); CI's clippy and rustdoc steps run with
//!   `-D warnings`, so an undocumented public item fails there (not
//!   re-checked here);
//! - **no_std, no allocator**: `mkfs-alloc-ondisk` and `mkfs-alloc-layout`
//!   declare `no_std`, and their `extern crate alloc` sits behind the
//!   `alloc` feature (`#[cfg(...feature = "alloc"...)]` on the line
//!   before), so that a build without default features has no `alloc` to
//!   use; `--no-std` also builds them so for each of [`NO_STD_TARGETS`] (a
//!   full build, so a separate CI step). The firmware example
//!   (`cargo xtask embedded`) links them with no global allocator at all.
//!
//! Test code is: files named `tests.rs` or `*_tests.rs`, directories named
//! `tests`, and everything from a file's first `#[cfg(test)]` at column 0
//! (the test module at its end). Comments are skipped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod allow;
mod scan;

use scan::{cites_own_tracker, code_lines, flag_literals, offset_uses};

/// Longest source file, in lines.
pub const MAX_LINES: usize = 600;

/// The targets the `no_std` crates must build for, without an allocator:
/// a Cortex-M4F and a RISC-V microcontroller.
pub const NO_STD_TARGETS: &[&str] = &["thumbv7em-none-eabihf", "riscv32imac-unknown-none-elf"];

/// Crates that must build without `std`.
const NO_STD_CRATES: &[&str] = &["mkfs-alloc-ondisk", "mkfs-alloc-layout"];

/// Crates whose string literals may name command-line flags: the CLI, and
/// the test and tooling crates that run it.
const FLAG_CRATES: &[&str] = &["mkfs-alloc-cli", "mkfs-alloc-testsupport"];

/// Crates that may print: the CLI, and the test support that reports tools.
const PRINT_CRATES: &[&str] = &["mkfs-alloc-cli", "mkfs-alloc-testsupport"];

/// Crates that do no I/O: bytes leave them only through `BlockIo` or as
/// values.
const NO_IO_CRATES: &[&str] = &["mkfs-alloc-ondisk", "mkfs-alloc-layout"];

/// Macros that print.
const PRINT_MACROS: &[&str] = &["println!", "eprintln!", "print!(", "eprint!(", "dbg!("];

/// Paths that do I/O.
const IO_PATHS: &[&str] = &[
    "std::fs",
    "std::net",
    "std::io::stdout",
    "std::io::stderr",
    "File::",
];

/// One finding: where and what.
struct Finding {
    file: PathBuf,
    line: usize,
    what: String,
}

/// `cargo xtask tidy [--no-std]`.
pub fn tidy_cmd(args: &[String]) -> Result<(), String> {
    let no_std = match args {
        [] => false,
        [a] if a == "--no-std" => true,
        _ => return Err("usage: cargo xtask tidy [--no-std]".into()),
    };
    let root = crate::workspace_root();
    let start = std::time::Instant::now();
    let mut findings = Vec::new();
    let files = rust_files(&root)?;
    for file in &files {
        check_file(&root, file, &mut findings)?;
    }
    check_lints(&root, &mut findings)?;
    check_no_std_attrs(&root, &mut findings)?;
    stale_allows(&root, &mut findings);
    for f in &findings {
        let rel = f.file.strip_prefix(&root).unwrap_or(&f.file);
        eprintln!("tidy: {}:{}: {}", rel.display(), f.line, f.what);
    }
    eprintln!(
        "tidy: {} files, {} findings, {} ms",
        files.len(),
        findings.len(),
        start.elapsed().as_millis()
    );
    if !findings.is_empty() {
        return Err(format!("tidy: {} findings", findings.len()));
    }
    if no_std {
        build_no_std(&root)?;
    }
    Ok(())
}

/// Every `.rs` file under `crates/`, `tests/`, `xtask/` and `fuzz/`
/// (build output left out).
fn rust_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["crates", "tests", "xtask", "fuzz"]
        .iter()
        .map(|d| root.join(d))
        .filter(|d| d.is_dir())
        .collect();
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for e in entries {
            let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = e.path();
            let name = e.file_name();
            if path.is_dir() {
                if !matches!(name.to_str(), Some("target" | "corpus" | "artifacts")) {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The crate directory name of a file under `crates/<name>/src/`, if any.
fn src_crate(rel: &Path) -> Option<&str> {
    let mut parts = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap_or(""));
    (parts.next() == Some("crates")).then_some(())?;
    let name = parts.next()?;
    (parts.next() == Some("src")).then_some(name)
}

/// True for a test file: `tests.rs`, `*_tests.rs`, or under a `tests` directory.
fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

fn check_file(root: &Path, file: &Path, out: &mut Vec<Finding>) -> Result<(), String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let rel = file.strip_prefix(root).unwrap_or(file);
    let rel_str = rel.to_string_lossy().replace('\\', "/");
    let lines = text.lines().count();
    if lines > MAX_LINES {
        out.push(Finding {
            file: file.into(),
            line: lines,
            what: format!(
                "{lines} lines, over the {MAX_LINES}-line limit: split it (a directory module)"
            ),
        });
    }
    let build_script = rel.file_name().is_some_and(|n| n == "build.rs");
    // Test modules too: `#[path = "x_tests.rs"] mod tests;` is the case.
    for (n, line) in text.lines().enumerate() {
        if !build_script && line.trim_start().starts_with("#[path") {
            out.push(Finding {
                file: file.into(),
                line: n + 1,
                what: "a #[path] attribute: the module tree follows the file tree (a \
                       directory module, `mod x;` in `x/` or `use x as y;` for a platform)"
                    .into(),
            });
        }
    }
    for (n, line) in text.lines().enumerate() {
        if cites_own_tracker(line) {
            out.push(Finding {
                file: file.into(),
                line: n + 1,
                what: "a tracker number of this project: say what the code or test guards \
                       (the repository does not contain the tracker)"
                    .into(),
            });
        }
    }
    let Some(krate) = src_crate(rel) else {
        return Ok(());
    };
    if is_test_file(rel) {
        return Ok(());
    }
    let code = code_lines(&text);
    if krate != "mkfs-alloc-ondisk" && !allow::BYTE_OFFSETS.iter().any(|(f, _)| *f == rel_str) {
        for (n, line) in &code {
            for what in offset_uses(line) {
                out.push(Finding {
                    file: file.into(),
                    line: *n,
                    what: format!(
                        "{what} outside mkfs-alloc-ondisk: read and write on-disk bytes \
                         through its zerocopy structs"
                    ),
                });
            }
        }
    }
    let uses = |needles: &[&str], line: &str| needles.iter().any(|n| line.contains(n));
    for (n, line) in &code {
        if !PRINT_CRATES.contains(&krate) && uses(PRINT_MACROS, line) {
            out.push(Finding {
                file: file.into(),
                line: *n,
                what: "prints: only the CLI prints; return the value or an error".into(),
            });
        }
        if NO_IO_CRATES.contains(&krate) && uses(IO_PATHS, line) {
            out.push(Finding {
                file: file.into(),
                line: *n,
                what: format!("I/O in {krate}: bytes leave it through BlockIo or as values"),
            });
        }
    }
    if !FLAG_CRATES.contains(&krate) && !allow::CLI_FLAGS.iter().any(|(f, _)| *f == rel_str) {
        for (n, line) in &code {
            for flag in flag_literals(line) {
                out.push(Finding {
                    file: file.into(),
                    line: *n,
                    what: format!(
                        "the flag {flag} in a library string: return a structured error, \
                         the CLI names the flag"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Every crate's manifest inherits the workspace lints, and those warn on
/// missing docs (CI denies warnings).
fn check_lints(root: &Path, out: &mut Vec<Finding>) -> Result<(), String> {
    let ws = root.join("Cargo.toml");
    let text = fs::read_to_string(&ws).map_err(|e| format!("{}: {e}", ws.display()))?;
    if !text.contains("missing_docs = \"warn\"") && !text.contains("missing_docs = \"deny\"") {
        out.push(Finding {
            file: ws,
            line: 1,
            what: "[workspace.lints.rust] must set missing_docs".into(),
        });
    }
    let crates = root.join("crates");
    let entries = fs::read_dir(&crates).map_err(|e| format!("{}: {e}", crates.display()))?;
    for e in entries.flatten() {
        let manifest = e.path().join("Cargo.toml");
        let Ok(text) = fs::read_to_string(&manifest) else {
            continue;
        };
        let inherits = text
            .split("[lints]")
            .nth(1)
            .is_some_and(|rest| rest.trim_start().starts_with("workspace = true"));
        if !inherits {
            out.push(Finding {
                file: manifest,
                line: 1,
                what: "no `[lints] workspace = true`: missing docs would pass".into(),
            });
        }
    }
    Ok(())
}

/// The `no_std` crates say so at the top of their `lib.rs`.
fn check_no_std_attrs(root: &Path, out: &mut Vec<Finding>) -> Result<(), String> {
    for krate in NO_STD_CRATES {
        if let Some((_, why)) = allow::NO_STD_PENDING.iter().find(|(k, _)| k == krate) {
            eprintln!("tidy: note: {krate} is not no_std yet ({why})");
            continue;
        }
        let lib = root.join("crates").join(krate).join("src/lib.rs");
        let text = fs::read_to_string(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
        let declared = text.lines().any(|l| {
            let l = l.trim();
            l == "#![no_std]" || (l.starts_with("#![cfg_attr(") && l.ends_with("no_std)]"))
        });
        if !declared {
            out.push(Finding {
                file: lib.clone(),
                line: 1,
                what: format!("{krate} must be no_std (`#![no_std]`, std behind a feature)"),
            });
        }
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let gated = i > 0
                && lines[i - 1].starts_with("#[cfg(")
                && lines[i - 1].contains("feature = \"alloc\"");
            if line.starts_with("extern crate alloc") && !gated {
                out.push(Finding {
                    file: lib.clone(),
                    line: i + 1,
                    what: format!(
                        "{krate}: `extern crate alloc` outside `#[cfg(feature = \"alloc\")]`: \
                         the crate must build without an allocator"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// An allow-list entry whose file is gone or clean is itself a finding:
/// the list only shrinks.
fn stale_allows(root: &Path, out: &mut Vec<Finding>) {
    type Rule = fn(&str) -> Vec<String>;
    let lists: [(&[(&str, &str)], Rule); 2] = [
        (allow::BYTE_OFFSETS, offset_uses),
        (allow::CLI_FLAGS, flag_literals),
    ];
    for (list, check) in lists {
        for (file, _) in list {
            let path = root.join(file);
            let hits = fs::read_to_string(&path)
                .map(|t| code_lines(&t).iter().any(|(_, l)| !check(l).is_empty()))
                .unwrap_or(false);
            if !hits {
                out.push(Finding {
                    file: path,
                    line: 1,
                    what: "allow-listed in xtask/src/tidy/allow.rs but clean or gone: \
                           remove the entry"
                        .into(),
                });
            }
        }
    }
}

/// `cargo build` of [`NO_STD_CRATES`] (less the pending ones) for each of
/// [`NO_STD_TARGETS`], without default features (so without `alloc`).
fn build_no_std(root: &Path) -> Result<(), String> {
    crate::ensure_rust_targets(NO_STD_TARGETS)?;
    for target in NO_STD_TARGETS {
        let mut cmd = Command::new(crate::cargo());
        cmd.current_dir(root)
            .args(["build", "--target", target, "--no-default-features"]);
        for krate in NO_STD_CRATES {
            if !allow::NO_STD_PENDING.iter().any(|(k, _)| k == krate) {
                cmd.args(["-p", krate]);
            }
        }
        crate::run(&mut cmd)?;
    }
    Ok(())
}
