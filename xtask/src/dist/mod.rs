//! `cargo xtask dist [--check] [--no-windows]`: the packages people install.
//!
//! ```text
//!  cargo build --release  ┬─ x86_64-unknown-linux-musl ─► static binary ─► tarball (.tar.gz)
//!                         ├─ host (glibc)               ─► .deb: mkfs-alloc, mkfs-alloc-mkfs-links
//!                         └─ x86_64-pc-windows-gnu      ─► .zip
//!  man pages and completions: written by the host binary (`man DIR`, `completions SHELL`)
//! ```
//!
//! Everything lands in `target/dist/`. The `mkfs.fat`, `mkfs.vfat`,
//! `mkfs.msdos`, `mkdosfs` and `mkfs.exfat` links live in
//! `lib/mkfs-alloc/` (tarball) and `/usr/lib/mkfs-alloc/` (the optional
//! `mkfs-alloc-mkfs-links` package, which offers them through
//! update-alternatives only where no other package has the name), never on
//! the default `PATH` unasked. `--check` (root) then tests the result:
//! see `check.rs`.

mod check;
mod deb;

use crate::{ensure_rust_targets, install_packages, run, target_dir, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The front-end names (docs/mkfs-compat.md).
pub(crate) const LINKS: &[&str] = &[
    "mkfs.fat",
    "mkfs.vfat",
    "mkfs.msdos",
    "mkdosfs",
    "mkfs.exfat",
];

/// The static Linux target.
const MUSL: &str = "x86_64-unknown-linux-musl";
/// The Windows target.
const WINDOWS: &str = "x86_64-pc-windows-gnu";

/// Tools `dist` runs (with their Debian packages).
pub const TOOLS: &[(&str, &str)] = &[
    ("musl-gcc", "musl-tools"),
    ("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"),
    ("x86_64-w64-mingw32-strip", "binutils-mingw-w64-x86-64"),
    ("strip", "binutils"),
    ("tar", "tar"),
    ("gzip", "gzip"),
    ("zip", "zip"),
    ("unzip", "unzip"),
    ("dpkg-deb", "dpkg"),
    ("dpkg-shlibdeps", "dpkg-dev"),
    ("lintian", "lintian"),
    ("man", "man-db"),
    ("chroot", "coreutils"),
    ("fsck.exfat", "exfatprogs"),
    ("fsck.fat", "dosfstools"),
];

/// What every package is made from.
pub(crate) struct Job {
    /// `target/dist`.
    pub dir: PathBuf,
    /// The workspace's version.
    pub version: String,
    /// Man pages and completions.
    pub docs: Docs,
    /// The workspace root (README.md, docs/).
    pub root: PathBuf,
    /// The time every archive member gets.
    pub epoch: u64,
}

/// What `dist` built, for `--check`.
pub(crate) struct Built {
    pub version: String,
    pub dir: PathBuf,
    pub tarball: PathBuf,
    pub static_bin: PathBuf,
    pub debs: Vec<PathBuf>,
    pub zip: Option<PathBuf>,
}

pub(crate) fn dist_cmd(args: &[String]) -> Result<(), String> {
    let (mut check, mut windows) = (false, true);
    for a in args {
        match a.as_str() {
            "--check" => check = true,
            "--no-windows" => windows = false,
            other => {
                return Err(format!(
                    "unknown option {other:?}; valid: --check, --no-windows"
                ))
            }
        }
    }
    let start = Instant::now();
    install_packages(TOOLS)?;
    let mut targets = vec![MUSL];
    if windows {
        targets.push(WINDOWS);
    }
    ensure_rust_targets(&targets)?;
    let built = build_all(windows)?;
    println!(
        "xtask dist: {} in {:.0?}",
        built.dir.display(),
        start.elapsed()
    );
    for p in std::iter::once(&built.tarball)
        .chain(&built.debs)
        .chain(&built.zip)
    {
        let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        println!("  {:>10} bytes  {}", len, p.display());
    }
    if check {
        check::check_all(&built)?;
        println!(
            "xtask dist --check: all checks passed ({:.0?} in all)",
            start.elapsed()
        );
    }
    Ok(())
}

/// Builds the three binaries, generates the docs and writes every package.
fn build_all(windows: bool) -> Result<Built, String> {
    let root = workspace_root();
    let cargo_build = |target: Option<&str>| {
        let mut c = Command::new(crate::cargo());
        c.current_dir(&root)
            .args(["build", "--release", "-p", "mkfs-alloc-cli"]);
        if let Some(t) = target {
            c.args(["--target", t]);
        }
        run(&mut c)
    };
    cargo_build(Some(MUSL))?;
    cargo_build(None)?;
    if windows {
        cargo_build(Some(WINDOWS))?;
    }
    let target = target_dir();
    let host_bin = target.join("release").join("mkfs-alloc");
    let version = version_of(&host_bin)?;
    let dir = target.join("dist");
    fresh_dir(&dir)?;
    let docs = Docs::generate(&host_bin, &dir.join("generated"))?;
    let epoch = source_date_epoch(&root);
    let job = Job {
        dir,
        version,
        docs,
        root,
        epoch,
    };
    let static_bin = target.join(MUSL).join("release").join("mkfs-alloc");
    let tarball = tarball(&job, &static_bin)?;
    let debs = deb::build(&job, &host_bin)?;
    let zip = if windows {
        let exe = target.join(WINDOWS).join("release").join("mkfs-alloc.exe");
        Some(windows_zip(&job, &exe)?)
    } else {
        None
    };
    let Job { dir, version, .. } = job;
    Ok(Built {
        version,
        dir,
        tarball,
        static_bin,
        debs,
        zip,
    })
}

/// `mkfs-alloc X.Y.Z` from `--version`.
fn version_of(bin: &Path) -> Result<String, String> {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| format!("{} --version printed {text:?}", bin.display()))
}

/// The time every archive member gets: `SOURCE_DATE_EPOCH`, else the last
/// commit's time, else now.
fn source_date_epoch(root: &Path) -> u64 {
    if let Some(e) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return e;
    }
    let git = Command::new("git")
        .current_dir(root)
        .args(["log", "-1", "--format=%ct"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
    git.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    })
}

fn fresh_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    mkdir(dir)
}

pub(crate) fn mkdir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

pub(crate) fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(p) = to.parent() {
        mkdir(p)?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

pub(crate) fn write(to: &Path, data: &[u8]) -> Result<(), String> {
    if let Some(p) = to.parent() {
        mkdir(p)?;
    }
    std::fs::write(to, data).map_err(|e| format!("{}: {e}", to.display()))
}

/// A relative symbolic link `at` -> `target`.
pub(crate) fn symlink(target: &str, at: &Path) -> Result<(), String> {
    if let Some(p) = at.parent() {
        mkdir(p)?;
    }
    std::os::unix::fs::symlink(target, at).map_err(|e| format!("{}: {e}", at.display()))
}

/// Sets the mode of `path`.
pub(crate) fn chmod(path: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The man pages and completion scripts, generated once by the host binary.
pub(crate) struct Docs {
    /// `*.1` files.
    pub man: Vec<PathBuf>,
    /// Completion scripts: bash, zsh, fish, powershell.
    pub bash: PathBuf,
    pub zsh: PathBuf,
    pub fish: PathBuf,
    pub powershell: PathBuf,
}

impl Docs {
    fn generate(bin: &Path, dir: &Path) -> Result<Docs, String> {
        let man_dir = dir.join("man");
        run(Command::new(bin).arg("man").arg(&man_dir))?;
        let mut man: Vec<PathBuf> = std::fs::read_dir(&man_dir)
            .map_err(|e| format!("{}: {e}", man_dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "1"))
            .collect();
        man.sort();
        if man.is_empty() {
            return Err("the binary wrote no man pages".into());
        }
        let completion = |shell: &str, name: &str| -> Result<PathBuf, String> {
            let out = Command::new(bin)
                .args(["completions", shell])
                .output()
                .map_err(|e| format!("{}: {e}", bin.display()))?;
            if !out.status.success() || out.stdout.is_empty() {
                return Err(format!("`mkfs-alloc completions {shell}` failed"));
            }
            let p = dir.join("completions").join(name);
            write(&p, &out.stdout)?;
            Ok(p)
        };
        Ok(Docs {
            man,
            bash: completion("bash", "mkfs-alloc")?,
            zsh: completion("zsh", "_mkfs-alloc")?,
            fish: completion("fish", "mkfs-alloc.fish")?,
            powershell: completion("powershell", "mkfs-alloc.ps1")?,
        })
    }
}

/// `gzip -9n` of `from` into `to`.
pub(crate) fn gzip(from: &Path, to: &Path) -> Result<(), String> {
    let out = Command::new("gzip")
        .args(["-9n", "-c"])
        .arg(from)
        .output()
        .map_err(|e| format!("gzip: {e}"))?;
    if !out.status.success() {
        return Err(format!("gzip {} failed", from.display()));
    }
    write(to, &out.stdout)
}

/// The static binary, the links, man pages, completions and docs in
/// `mkfs-alloc-VERSION-x86_64-unknown-linux-musl.tar.gz`.
fn tarball(job: &Job, bin: &Path) -> Result<PathBuf, String> {
    let Job {
        dir,
        version,
        docs,
        root,
        epoch,
    } = job;
    let name = format!("mkfs-alloc-{version}-{MUSL}");
    let top = dir.join("tar").join(&name);
    let b = top.join("bin").join("mkfs-alloc");
    copy(bin, &b)?;
    run(Command::new("strip").arg(&b))?;
    for link in LINKS {
        symlink(
            "../../bin/mkfs-alloc",
            &top.join("lib").join("mkfs-alloc").join(link),
        )?;
    }
    for m in &docs.man {
        let file = m.file_name().unwrap_or_default();
        copy(m, &top.join("share/man/man1").join(file))?;
    }
    copy(
        &docs.bash,
        &top.join("share/bash-completion/completions/mkfs-alloc"),
    )?;
    copy(&docs.zsh, &top.join("share/zsh/site-functions/_mkfs-alloc"))?;
    copy(
        &docs.fish,
        &top.join("share/fish/vendor_completions.d/mkfs-alloc.fish"),
    )?;
    copy(
        &root.join("README.md"),
        &top.join("share/doc/mkfs-alloc/README.md"),
    )?;
    copy(
        &root.join("docs/mkfs-compat.md"),
        &top.join("share/doc/mkfs-alloc/mkfs-compat.md"),
    )?;
    for license in LICENSES {
        copy(
            &root.join(license),
            &top.join("share/doc/mkfs-alloc").join(license),
        )?;
    }
    let out = dir.join(format!("{name}.tar.gz"));
    run(Command::new("tar")
        .current_dir(dir.join("tar"))
        .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"])
        .arg(format!("--mtime=@{epoch}"))
        .arg("--use-compress-program=gzip -9n")
        .arg("-cf")
        .arg(&out)
        .arg(&name))?;
    Ok(out)
}

/// The license texts (MIT OR Apache-2.0) every archive carries.
const LICENSES: [&str; 2] = ["LICENSE-MIT", "LICENSE-APACHE"];

/// The Windows exe (stripped), its PowerShell completion and the docs in a zip.
fn windows_zip(job: &Job, exe: &Path) -> Result<PathBuf, String> {
    let Job {
        dir,
        version,
        docs,
        root,
        ..
    } = job;
    let name = format!("mkfs-alloc-{version}-{WINDOWS}");
    let top = dir.join("zip").join(&name);
    let e = top.join("mkfs-alloc.exe");
    copy(exe, &e)?;
    run(Command::new("x86_64-w64-mingw32-strip").arg(&e))?;
    copy(&docs.powershell, &top.join("mkfs-alloc.ps1"))?;
    copy(&root.join("README.md"), &top.join("README.md"))?;
    copy(
        &root.join("docs/mkfs-compat.md"),
        &top.join("mkfs-compat.md"),
    )?;
    for license in LICENSES {
        copy(&root.join(license), &top.join(license))?;
    }
    let out = dir.join(format!("{name}.zip"));
    run(Command::new("zip")
        .current_dir(dir.join("zip"))
        .args(["-q", "-X", "-r", "-9"])
        .arg(&out)
        .arg(&name))?;
    Ok(out)
}
