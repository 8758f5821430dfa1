//! The Debian packages, built as plain trees with `dpkg-deb --build` (no
//! debhelper, no cargo-deb: two small binary packages whose every file is
//! written here, checked by lintian in `--check`).
//!
//! - `mkfs-alloc` (amd64): `/usr/bin/mkfs-alloc` (the glibc build,
//!   stripped; `Depends` from `dpkg-shlibdeps`), the man pages, the bash,
//!   zsh and fish completions, the docs.
//! - `mkfs-alloc-mkfs-links` (all, optional): `/usr/lib/mkfs-alloc/mkfs.fat`
//!   etc. and, in its postinst, an update-alternatives entry
//!   `/usr/sbin/NAME` for each name that no other package provides (with
//!   dosfstools or exfatprogs installed, theirs stay: nothing is shadowed).

use super::{chmod, copy, gzip, mkdir, symlink, write, Job, LINKS};
use crate::run;
use std::path::{Path, PathBuf};
use std::process::Command;

const MAINTAINER: &str = "mkfs-alloc developers <mkfs-alloc@users.noreply.github.com>";
const REVISION: &str = "1";

/// Builds both packages into `dir`; returns their paths.
pub(super) fn build(job: &Job, bin: &Path) -> Result<Vec<PathBuf>, String> {
    let (dir, epoch) = (&job.dir, job.epoch);
    let full = format!("{}-{REVISION}", job.version);
    let main = main_tree(&dir.join("deb/mkfs-alloc"), &full, bin, job)?;
    let links = links_tree(&dir.join("deb/mkfs-alloc-mkfs-links"), &full, epoch)?;
    let mut out = Vec::new();
    for (tree, name) in [
        (main, format!("mkfs-alloc_{full}_amd64.deb")),
        (links, format!("mkfs-alloc-mkfs-links_{full}_all.deb")),
    ] {
        let deb = dir.join(name);
        run(Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(&tree)
            .arg(&deb)
            .env("SOURCE_DATE_EPOCH", epoch.to_string()))?;
        out.push(deb);
    }
    Ok(out)
}

/// The `mkfs-alloc` package's tree.
fn main_tree(t: &Path, version: &str, bin: &Path, job: &Job) -> Result<PathBuf, String> {
    let (docs, root, epoch) = (&job.docs, &job.root, job.epoch);
    let b = t.join("usr/bin/mkfs-alloc");
    copy(bin, &b)?;
    run(Command::new("strip")
        .args([
            "--strip-unneeded",
            "--remove-section=.comment",
            "--remove-section=.note",
        ])
        .arg(&b))?;
    chmod(&b, 0o755)?;
    for m in &docs.man {
        let name = format!("{}.gz", m.file_name().unwrap_or_default().to_string_lossy());
        gzip(m, &t.join("usr/share/man/man1").join(name))?;
    }
    copy(
        &docs.bash,
        &t.join("usr/share/bash-completion/completions/mkfs-alloc"),
    )?;
    copy(
        &docs.zsh,
        &t.join("usr/share/zsh/vendor-completions/_mkfs-alloc"),
    )?;
    copy(
        &docs.fish,
        &t.join("usr/share/fish/vendor_completions.d/mkfs-alloc.fish"),
    )?;
    let doc = t.join("usr/share/doc/mkfs-alloc");
    gzip(&root.join("README.md"), &doc.join("README.md.gz"))?;
    gzip(
        &root.join("docs/mkfs-compat.md"),
        &doc.join("mkfs-compat.md.gz"),
    )?;
    doc_files(&doc, "mkfs-alloc", version, epoch)?;
    let depends = shlib_depends(&b, &t.with_extension("shlibdeps"))?;
    let control = format!(
        "Package: mkfs-alloc\n\
         Version: {version}\n\
         Architecture: amd64\n\
         Maintainer: {MAINTAINER}\n\
         Installed-Size: {size}\n\
         Depends: {depends}\n\
         Suggests: mkfs-alloc-mkfs-links\n\
         Section: admin\n\
         Priority: optional\n\
         Description: format sticks, SD cards and images as exFAT or FAT, cluster size chosen\n \
         mkfs-alloc formats USB sticks, SD cards, disks and disk images as exFAT,\n \
         FAT32, FAT16 or FAT12 with the allocation unit (cluster) size you choose,\n \
         and tells you which size fits your data (advise). It checks everything\n \
         before the first write, refuses mounted and system disks, writes MBR or\n \
         GPT tables, EFI System Partitions and the SD Association's card layout,\n \
         copies a folder into the new volume, inspects media (info) and finds\n \
         counterfeit capacity (probe).\n",
        size = installed_size_kib(t)?,
    );
    control_files(t, &control, &[])?;
    Ok(t.to_path_buf())
}

/// The `mkfs-alloc-mkfs-links` package's tree.
fn links_tree(t: &Path, version: &str, epoch: u64) -> Result<PathBuf, String> {
    for n in LINKS {
        symlink(
            "../../bin/mkfs-alloc",
            &t.join("usr/lib/mkfs-alloc").join(n),
        )?;
    }
    doc_files(
        &t.join("usr/share/doc/mkfs-alloc-mkfs-links"),
        "mkfs-alloc-mkfs-links",
        version,
        epoch,
    )?;
    let names = LINKS.join(" ");
    let postinst = format!(
        "#!/bin/sh\n\
         # Offer mkfs-alloc under each name no other package provides: a name\n\
         # dosfstools or exfatprogs installed stays theirs.\n\
         set -e\n\
         if [ \"$1\" = configure ]; then\n\
         \tfor n in {names}; do\n\
         \t\tif [ -e \"/usr/sbin/$n\" ] || [ -e \"/sbin/$n\" ]; then\n\
         \t\t\tcase \"$(readlink \"/usr/sbin/$n\" || true)\" in\n\
         \t\t\t/etc/alternatives/*) ;;\n\
         \t\t\t*) echo \"mkfs-alloc-mkfs-links: $n is provided by another package; left alone\"; continue ;;\n\
         \t\t\tesac\n\
         \t\tfi\n\
         \t\tupdate-alternatives --install \"/usr/sbin/$n\" \"$n\" \"/usr/lib/mkfs-alloc/$n\" 10\n\
         \tdone\n\
         fi\n"
    );
    let prerm = format!(
        "#!/bin/sh\n\
         set -e\n\
         if [ \"$1\" = remove ] || [ \"$1\" = deconfigure ]; then\n\
         \tfor n in {names}; do\n\
         \t\tupdate-alternatives --remove \"$n\" \"/usr/lib/mkfs-alloc/$n\"\n\
         \tdone\n\
         fi\n"
    );
    let control = format!(
        "Package: mkfs-alloc-mkfs-links\n\
         Version: {version}\n\
         Architecture: all\n\
         Maintainer: {MAINTAINER}\n\
         Installed-Size: {size}\n\
         Depends: mkfs-alloc (= {version})\n\
         Section: admin\n\
         Priority: optional\n\
         Description: mkfs-alloc as mkfs.fat, mkfs.vfat, mkfs.msdos, mkdosfs and mkfs.exfat\n \
         Links that make mkfs-alloc answer to the names of dosfstools' and\n \
         exfatprogs' formatters, with their command lines, for the programs that\n \
         call them (GParted, udisks2, KDE Partition Manager, systemd-repart,\n \
         genimage). The links are in /usr/lib/mkfs-alloc; each is offered as\n \
         /usr/sbin/NAME through update-alternatives only where no other package\n \
         provides that name, so dosfstools and exfatprogs are never shadowed.\n",
        size = installed_size_kib(t)?,
    );
    control_files(t, &control, &[("postinst", &postinst), ("prerm", &prerm)])?;
    Ok(t.to_path_buf())
}

/// `copyright` (machine-readable) and `changelog.Debian.gz`.
fn doc_files(doc: &Path, package: &str, version: &str, epoch: u64) -> Result<(), String> {
    mkdir(doc)?;
    let copyright = COPYRIGHT.replace("YEARS", &years(epoch));
    write(&doc.join("copyright"), copyright.as_bytes())?;
    let date = Command::new("date")
        .args(["-u", "-R", "-d"])
        .arg(format!("@{epoch}"))
        .output()
        .map_err(|e| format!("date: {e}"))?;
    let date = String::from_utf8_lossy(&date.stdout).trim().to_string();
    let changelog = format!(
        "{package} ({version}) unstable; urgency=medium\n\n  \
         * Built by `cargo xtask dist` from the mkfs-alloc workspace.\n\n \
         -- {MAINTAINER}  {date}\n"
    );
    let plain = doc.join("changelog.Debian");
    write(&plain, changelog.as_bytes())?;
    gzip(&plain, &doc.join("changelog.Debian.gz"))?;
    std::fs::remove_file(&plain).map_err(|e| format!("{}: {e}", plain.display()))
}

/// The years of the copyright notice: from the first commit's to `epoch`'s.
fn years(epoch: u64) -> String {
    let year = |args: &[&str]| -> Option<String> {
        let out = Command::new(args[0]).args(&args[1..]).output().ok()?;
        let y = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()?
            .trim()
            .to_string();
        (y.len() == 4).then_some(y)
    };
    let last = year(&["date", "-u", "-d", &format!("@{epoch}"), "+%Y"]).unwrap_or_default();
    let root = crate::workspace_root();
    let root = root.to_string_lossy();
    let first = year(&[
        "git",
        "-C",
        &root,
        "log",
        "--reverse",
        "--format=%ad",
        "--date=format:%Y",
    ]);
    match first {
        Some(f) if f != last && !last.is_empty() => format!("{f}-{last}"),
        _ => last,
    }
}

/// `DEBIAN/control`, the maintainer scripts and `DEBIAN/md5sums`.
fn control_files(t: &Path, control: &str, scripts: &[(&str, &str)]) -> Result<(), String> {
    let d = t.join("DEBIAN");
    write(&d.join("control"), control.as_bytes())?;
    for (name, text) in scripts {
        write(&d.join(name), text.as_bytes())?;
        chmod(&d.join(name), 0o755)?;
    }
    let out = Command::new("sh")
        .current_dir(t)
        .args(["-c", "find usr -type f | LC_ALL=C sort | xargs -r md5sum"])
        .output()
        .map_err(|e| format!("md5sum: {e}"))?;
    if !out.status.success() {
        return Err("md5sum of the package tree failed".into());
    }
    write(&d.join("md5sums"), &out.stdout)
}

/// The package's `Depends` from the binary's shared libraries
/// (`dpkg-shlibdeps`, which wants a `debian/control` to read).
fn shlib_depends(bin: &Path, work: &Path) -> Result<String, String> {
    write(
        &work.join("debian/control"),
        b"Source: mkfs-alloc\n\nPackage: mkfs-alloc\nArchitecture: amd64\n",
    )?;
    let out = Command::new("dpkg-shlibdeps")
        .current_dir(work)
        .arg("-O")
        .arg(format!("-e{}", bin.display()))
        .output()
        .map_err(|e| format!("dpkg-shlibdeps: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let deps = text
        .lines()
        .find_map(|l| l.strip_prefix("shlibs:Depends="))
        .map(str::to_string);
    match (out.status.success(), deps) {
        (true, Some(d)) => Ok(d),
        _ => Err(format!(
            "dpkg-shlibdeps failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// `Installed-Size`: the tree's apparent size in KiB (as `du -k -s --apparent-size`).
fn installed_size_kib(t: &Path) -> Result<u64, String> {
    fn walk(p: &Path, sum: &mut u64) -> Result<(), String> {
        let meta = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            for e in std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))? {
                walk(&e.map_err(|e| e.to_string())?.path(), sum)?;
            }
        } else {
            *sum += meta.len().div_ceil(1024);
        }
        Ok(())
    }
    let mut sum = 0;
    walk(&t.join("usr"), &mut sum)?;
    Ok(sum)
}

/// The machine-readable copyright file: the license fields of Cargo.toml
/// (MIT OR Apache-2.0), the MIT text in full, Apache-2.0 from common-licenses.
const COPYRIGHT: &str = "\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: mkfs-alloc
Comment: Built from the mkfs-alloc Cargo workspace by `cargo xtask dist`.

Files: *
Copyright: 2026 the mkfs-alloc developers
License: MIT or Apache-2.0

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the \"Software\"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
 THE SOFTWARE.

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the \"License\"); you may not
 use this file except in compliance with the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0 can
 be found in \"/usr/share/common-licenses/Apache-2.0\".
";
