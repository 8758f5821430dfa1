//! `cargo xtask dist --check` (root): the packages do what they say.
//!
//! - the static binary has no program interpreter and runs in a chroot that
//!   holds nothing but it (no libc, no /lib, no /dev): it formats an exFAT
//!   and a FAT32 image there, also through its `mkfs.vfat` link, and the
//!   host's fsck accepts them;
//! - the tarball and the zip hold what they should;
//! - `lintian` reports no error on either .deb (its output is printed);
//! - the .debs install with `dpkg -i`: `/usr/bin/mkfs-alloc` runs, `man
//!   mkfs-alloc` renders, the completions are in place; the links package
//!   leaves every name dosfstools and exfatprogs provide to them and its
//!   links run; both remove and purge without leaving a file.

use super::{Built, LINKS};
use mkfs_alloc_testsupport::{fsck_judge, FsckKind};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) fn check_all(b: &Built) -> Result<(), String> {
    if !crate::is_root() {
        return Err("dist --check needs root (chroot, dpkg -i)".into());
    }
    static_binary(b)?;
    archives(b)?;
    lintian(&b.debs)?;
    install_and_remove(b)?;
    Ok(())
}

/// Runs a command and returns its stdout; fails with its output unless it exits 0.
fn output(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}").replace('"', "");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if !out.status.success() {
        return Err(format!("`{shown}` failed ({}):\n{so}{se}", out.status));
    }
    Ok(format!("{so}{se}"))
}

/// True if the ELF file has a `PT_INTERP` program header (needs a dynamic loader).
fn has_interpreter(path: &Path) -> Result<bool, String> {
    let d = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let u16_at = |o: usize| d.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u64_at = |o: usize| {
        d.get(o..o + 8)
            .map(|b| b.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)))
    };
    if d.get(..5) != Some(b"\x7fELF\x02") {
        return Err(format!("{} is not a 64-bit ELF file", path.display()));
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return Err(format!("{}: truncated ELF header", path.display()));
    };
    for i in 0..usize::from(phnum) {
        let at = phoff as usize + i * usize::from(phentsize);
        let kind = d
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if kind == Some(3) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The static binary in a chroot of its own.
fn static_binary(b: &Built) -> Result<(), String> {
    if has_interpreter(&b.static_bin)? {
        return Err(format!(
            "{} asks for a dynamic loader (PT_INTERP)",
            b.static_bin.display()
        ));
    }
    let root = b.dir.join("chroot");
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    super::copy(&b.static_bin, &root.join("mkfs-alloc"))?;
    super::symlink("mkfs-alloc", &root.join("mkfs.vfat"))?;
    let chroot = crate::find_tool("chroot").ok_or("chroot is missing")?;
    let inside = |args: &[&str]| output(Command::new(&chroot).arg(&root).args(args).env_clear());
    let v = inside(&["/mkfs-alloc", "--version"])?;
    if !v.contains(&b.version) {
        return Err(format!("the static binary printed {v:?}"));
    }
    inside(&[
        "/mkfs-alloc",
        "--fs",
        "exfat",
        "--size",
        "64M",
        "-q",
        "/exfat.img",
    ])?;
    inside(&[
        "/mkfs.vfat",
        "-F",
        "32",
        "-n",
        "CHROOT",
        "-C",
        "/fat32.img",
        "307200",
    ])?;
    // Judged like every other image: the shared judge, exit status and
    // text (fsck.exfat 1.2 exits 0 after some errors).
    let mut fsck = String::new();
    for (kind, image) in [(FsckKind::Exfat, "exfat.img"), (FsckKind::Fat, "fat32.img")] {
        let out = Command::new(kind.program())
            .arg("-n")
            .arg(root.join(image))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", kind.program()))?;
        fsck += &fsck_judge(kind, &out).map_err(|e| format!("the static binary's {image}: {e}"))?;
    }
    println!(
        "xtask dist --check: the static binary ran in a chroot holding only itself; fsck:\n{}",
        fsck.trim()
    );
    Ok(())
}

/// The members of the tarball and the zip.
fn archives(b: &Built) -> Result<(), String> {
    let list = output(Command::new("tar").arg("-tvzf").arg(&b.tarball))?;
    let mut want = vec![
        "bin/mkfs-alloc".to_string(),
        "share/man/man1/mkfs-alloc.1".into(),
    ];
    want.extend(
        LINKS
            .iter()
            .map(|l| format!("lib/mkfs-alloc/{l} -> ../../bin/mkfs-alloc")),
    );
    want.extend(
        [
            "share/bash-completion/completions/mkfs-alloc",
            "share/zsh/site-functions/_mkfs-alloc",
        ]
        .map(String::from),
    );
    for w in &want {
        if !list.contains(w.as_str()) {
            return Err(format!("the tarball lacks {w}:\n{list}"));
        }
    }
    if let Some(zip) = &b.zip {
        let list = output(Command::new("unzip").arg("-l").arg(zip))?;
        if !list.contains("mkfs-alloc.exe") || !list.contains("mkfs-alloc.ps1") {
            return Err(format!("the zip lacks the exe or its completion:\n{list}"));
        }
    }
    Ok(())
}

/// lintian on each .deb: its output is printed; an error fails.
fn lintian(debs: &[PathBuf]) -> Result<(), String> {
    for deb in debs {
        let out = Command::new("lintian")
            .args([
                "--fail-on",
                "error",
                "--display-info",
                "--tag-display-limit",
                "0",
            ])
            .arg(deb)
            .output()
            .map_err(|e| format!("lintian: {e}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "xtask dist --check: lintian {}:\n{}",
            deb.display(),
            if text.trim().is_empty() {
                "  (nothing)"
            } else {
                text.trim_end()
            }
        );
        if !out.status.success() {
            return Err(format!("lintian reports errors on {}", deb.display()));
        }
    }
    Ok(())
}

/// Which package owns `path` (`dpkg -S`), if any.
fn owner(path: &str) -> Option<String> {
    let out = Command::new("dpkg").args(["-S", path]).output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .split(':')
            .next()
            .unwrap_or("")
            .to_string()
    })
}

/// dpkg -i, use, dpkg -r, dpkg -P, nothing left.
fn install_and_remove(b: &Built) -> Result<(), String> {
    let [main, links] = b.debs.as_slice() else {
        return Err("expected two .deb files".into());
    };
    let others: Vec<(&str, Option<String>)> = LINKS
        .iter()
        .map(|n| {
            (
                *n,
                owner(&format!("/sbin/{n}")).or_else(|| owner(&format!("/usr/sbin/{n}"))),
            )
        })
        .collect();
    output(Command::new("dpkg").arg("-i").arg(main))?;
    let files = output(Command::new("dpkg").args(["-L", "mkfs-alloc"]))?;
    let v = output(Command::new("/usr/bin/mkfs-alloc").arg("--version"))?;
    if !v.contains(&b.version) {
        return Err(format!("/usr/bin/mkfs-alloc --version printed {v:?}"));
    }
    let page = output(
        Command::new("man")
            .arg("mkfs-alloc")
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80"),
    )?;
    if !page.contains("mkfs-alloc") || !page.to_ascii_lowercase().contains("cluster") {
        return Err(format!("`man mkfs-alloc` rendered something else:\n{page}"));
    }
    for f in [
        "/usr/share/bash-completion/completions/mkfs-alloc",
        "/usr/share/zsh/vendor-completions/_mkfs-alloc",
        "/usr/share/fish/vendor_completions.d/mkfs-alloc.fish",
    ] {
        if !Path::new(f).is_file() {
            return Err(format!("{f} is not installed"));
        }
    }
    println!(
        "xtask dist --check: installed; `man mkfs-alloc` renders {} lines",
        page.lines().count()
    );
    let post = output(Command::new("dpkg").arg("-i").arg(links))?;
    for (n, pkg) in &others {
        let now = owner(&format!("/sbin/{n}")).or_else(|| owner(&format!("/usr/sbin/{n}")));
        if pkg.is_some() && &now != pkg {
            return Err(format!("{n} was {pkg:?}'s and is now {now:?}'s"));
        }
        if pkg.is_some() && !post.contains(&format!("{n} is provided by another package")) {
            return Err(format!(
                "the links package did not leave {n} alone:\n{post}"
            ));
        }
        let help = output(Command::new(format!("/usr/lib/mkfs-alloc/{n}")).arg("--help"))?;
        if !help.contains("mkfs-alloc") {
            return Err(format!("/usr/lib/mkfs-alloc/{n} --help printed {help:?}"));
        }
    }
    println!(
        "xtask dist --check: links package installed; names kept by their packages: {:?}",
        others
            .iter()
            .filter(|(_, p)| p.is_some())
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
    );
    output(Command::new("dpkg").args(["-r", "mkfs-alloc-mkfs-links", "mkfs-alloc"]))?;
    output(Command::new("dpkg").args(["-P", "mkfs-alloc-mkfs-links", "mkfs-alloc"]))?;
    if let Some(f) = files
        .lines()
        .find(|f| f.starts_with("/usr/") && Path::new(f).is_file())
    {
        return Err(format!("{f} is still there after dpkg -P"));
    }
    for n in LINKS {
        if Path::new(&format!("/usr/lib/mkfs-alloc/{n}")).exists()
            || Path::new(&format!("/etc/alternatives/{n}")).exists()
        {
            return Err(format!("{n}: a link or alternative is left after dpkg -P"));
        }
    }
    println!("xtask dist --check: removed and purged, nothing left");
    Ok(())
}
