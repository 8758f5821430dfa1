//! The checks of one run: images formatted under Wine and on Linux, compared
//! byte for byte, partition tables and fsck.

use super::*;
use mkfs_alloc_testsupport::{fsck_judge, FsckKind};

pub(super) struct Ctx<'a> {
    pub(super) wine: &'a Wine,
    pub(super) linux_bin: &'a Path,
    pub(super) win_dir: &'a Path,
    pub(super) linux_dir: &'a Path,
    pub(super) logs: &'a Path,
}

impl Ctx<'_> {
    /// Formats with both builds, compares, checks; returns a summary line.
    pub(super) fn format_case(&self, case: &Case) -> Result<String, String> {
        let img = format!("{}.img", case.name);
        if let Some(from) = case.from {
            let src = format!("{from}.img");
            for dir in [self.win_dir, self.linux_dir] {
                std::fs::copy(dir.join(&src), dir.join(&img))
                    .map_err(|e| format!("copying {src} to {img}: {e}"))?;
            }
        }
        let mut args = vec!["-q", "--serial", SERIAL];
        args.extend_from_slice(case.args);
        args.push(&img);

        let t = Instant::now();
        let win = self
            .wine
            .exe(self.win_dir, &args, &self.logs.join(case.name))?;
        let win_secs = t.elapsed().as_secs_f64();
        if !win.status.success() {
            return Err(format!(
                "case {}: {}",
                case.name,
                describe("mkfs-alloc.exe under Wine failed", &win)
            ));
        }
        let linux = output_in(self.linux_bin, self.linux_dir, &args)?;
        if !linux.status.success() {
            return Err(format!(
                "case {}: {}",
                case.name,
                describe("the Linux mkfs-alloc failed", &linux)
            ));
        }

        let win_img = self.win_dir.join(&img);
        let linux_img = self.linux_dir.join(&img);
        let (win_sum, linux_sum) = (cksum(&win_img)?, cksum(&linux_img)?);
        if let Some(diff) = first_difference(&win_img, &linux_img)? {
            return Err(format!(
                "case {}: the Windows and Linux images differ ({diff}); cksum {win_sum} (Windows) vs {linux_sum} (Linux); images in {} and {}",
                case.name,
                win_img.display(),
                linux_img.display()
            ));
        }
        if win_sum != linux_sum {
            return Err(format!(
                "case {}: cksum {win_sum} (Windows) vs {linux_sum} (Linux), yet the bytes compare equal",
                case.name
            ));
        }

        let volume = if case.table {
            let (offset, len) = partition(&win_img)?;
            let part = self.logs.join(format!("{}.part", case.name));
            extract(&win_img, offset, len, &part)?;
            part
        } else {
            win_img.clone()
        };
        let fsck_result = fsck(case.fs, &volume);
        if case.table {
            let _ = std::fs::remove_file(&volume);
        }
        fsck_result.map_err(|e| format!("case {}: {e}", case.name))?;
        Ok(format!(
            "{:<18} cksum {win_sum:<22} fsck ok   wine {win_secs:.1} s",
            case.name
        ))
    }

    /// `--help` prints the usage and exits 0.
    pub(super) fn help(&self) -> Result<(), String> {
        let out = self
            .wine
            .exe(self.win_dir, &["--help"], &self.logs.join("help"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("Usage:") || !text.contains("--cluster") {
            return Err(describe(
                "`mkfs-alloc.exe --help` did not exit 0 with the usage",
                &out,
            ));
        }
        Ok(())
    }

    /// Rejected input exits with 2, creates nothing, changes nothing.
    pub(super) fn rejected(&self) -> Result<(), String> {
        let out = self.wine.exe(
            self.win_dir,
            &[
                "--fs",
                "fat32",
                "--cluster",
                "32K",
                "--size",
                "1G",
                "rejected.img",
            ],
            &self.logs.join("rejected-new"),
        )?;
        if out.status.code() != Some(2)
            || !String::from_utf8_lossy(&out.stderr).contains("too small")
        {
            return Err(describe(
                "FAT32 at 32K on 1 GiB: expected exit code 2 and \"too small\"",
                &out,
            ));
        }
        if self.win_dir.join("rejected.img").exists() {
            return Err("rejected input created rejected.img".to_string());
        }

        let sentinel = self.win_dir.join("sentinel.img");
        let original = self.win_dir.join("exfat-none.img");
        std::fs::copy(&original, &sentinel).map_err(|e| format!("sentinel.img: {e}"))?;
        let out = self.wine.exe(
            self.win_dir,
            &["--fs", "exfat", "--cluster", "64M", "sentinel.img"],
            &self.logs.join("rejected-existing"),
        )?;
        if out.status.code() != Some(2) {
            return Err(describe(
                "exFAT at 64M clusters on an existing image: expected exit code 2",
                &out,
            ));
        }
        if let Some(diff) = first_difference(&sentinel, &original)? {
            return Err(format!("rejected input changed sentinel.img ({diff})"));
        }
        let _ = std::fs::remove_file(&sentinel);
        Ok(())
    }

    /// Both builds print the same stdout and exit 0.
    pub(super) fn same_output(&self, name: &str, args: &[&str]) -> Result<(), String> {
        let win = self.wine.exe(self.win_dir, args, &self.logs.join(name))?;
        let linux = output_in(self.linux_bin, self.linux_dir, args)?;
        if !win.status.success() || !linux.status.success() {
            return Err(format!(
                "{name}: {}\n{}",
                describe("Windows", &win),
                describe("Linux", &linux)
            ));
        }
        if win.stdout != linux.stdout {
            let path = self.logs.join(format!("{name}.linux.out"));
            let _ = std::fs::write(&path, &linux.stdout);
            return Err(format!(
                "{name}: `mkfs-alloc {}` prints different output on Windows ({}) and Linux ({})",
                args.join(" "),
                self.logs.join(format!("{name}.out")).display(),
                path.display()
            ));
        }
        Ok(())
    }
}

/// `cksum FILE` as "CRC SIZE".
pub(super) fn cksum(path: &Path) -> Result<String, String> {
    let out = Command::new("cksum")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run cksum: {e}"))?;
    if !out.status.success() {
        return Err(describe(&format!("cksum {}", path.display()), &out));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.split_whitespace().take(2).collect();
    Ok(fields.join(" "))
}

/// `None` if the files are equal, else where they first differ.
fn first_difference(a: &Path, b: &Path) -> Result<Option<String>, String> {
    let open = |p: &Path| File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let len = |f: &File, p: &Path| {
        f.metadata()
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let (la, lb) = (len(&fa, a)?, len(&fb, b)?);
    if la != lb {
        return Ok(Some(format!("sizes {la} and {lb}")));
    }
    let mut ba = vec![0u8; 1 << 20];
    let mut bb = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < la {
        let n = usize::try_from((la - pos).min(1 << 20)).unwrap_or(1 << 20);
        fa.read_exact(&mut ba[..n])
            .map_err(|e| format!("{}: {e}", a.display()))?;
        fb.read_exact(&mut bb[..n])
            .map_err(|e| format!("{}: {e}", b.display()))?;
        if let Some(i) = ba[..n].iter().zip(&bb[..n]).position(|(x, y)| x != y) {
            return Ok(Some(format!("first at byte {}", pos + i as u64)));
        }
        pos += n as u64;
    }
    Ok(None)
}

/// Offset and length in bytes of the only partition, from `sfdisk --dump`.
pub(super) fn partition(img: &Path) -> Result<(u64, u64), String> {
    let out = Command::new("sfdisk")
        .arg("--dump")
        .arg(img)
        .output()
        .map_err(|e| format!("cannot run sfdisk: {e}"))?;
    if !out.status.success() {
        return Err(describe(&format!("sfdisk --dump {}", img.display()), &out));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut sector = 512u64;
    let mut parts = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("sector-size:") {
            sector = v.trim().parse().map_err(|_| format!("sfdisk: {line:?}"))?;
        }
        if line.contains("start=") {
            let field = |name: &str| -> Option<u64> {
                line.split(',')
                    .flat_map(|f| f.split(':'))
                    .find_map(|f| f.trim().strip_prefix(name))
                    .and_then(|v| v.trim().parse().ok())
            };
            match (field("start="), field("size=")) {
                (Some(s), Some(n)) => parts.push((s * sector, n * sector)),
                _ => return Err(format!("sfdisk --dump: cannot parse {line:?}")),
            }
        }
    }
    match parts.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!(
            "{}: expected one partition, sfdisk --dump says:\n{text}",
            img.display()
        )),
    }
}

/// Copies `len` bytes at `offset` of `img` into `dest` (like `dd`).
fn extract(img: &Path, offset: u64, len: u64, dest: &Path) -> Result<(), String> {
    let mut src = File::open(img).map_err(|e| format!("{}: {e}", img.display()))?;
    src.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("{}: {e}", img.display()))?;
    let mut out = File::create(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let copied = std::io::copy(&mut src.take(len), &mut out)
        .map_err(|e| format!("{} -> {}: {e}", img.display(), dest.display()))?;
    out.flush()
        .map_err(|e| format!("{}: {e}", dest.display()))?;
    if copied != len {
        return Err(format!(
            "{}: partition at {offset} + {len} runs past the end of the image",
            img.display()
        ));
    }
    Ok(())
}

/// `fsck.exfat -n` / `fsck.fat -n` (the shared judge: exit status and
/// text) + `mdir` on a volume. mtools' own boot sector checks stay on (no
/// `MTOOLS_SKIP_CHECK`), as in the test suites: our volumes must pass them.
pub(super) fn fsck(fs: Fs, volume: &Path) -> Result<(), String> {
    let kind = match fs {
        Fs::Exfat => FsckKind::Exfat,
        Fs::Fat32 => FsckKind::Fat,
    };
    let mut c = Command::new(kind.program());
    c.arg("-n").arg(volume);
    eprintln!("+ {}", format!("{c:?}").replace('"', ""));
    let out = c
        .output()
        .map_err(|e| format!("cannot run {}: {e}", kind.program()))?;
    fsck_judge(kind, &out)?;
    if fs == Fs::Fat32 {
        let mut c = Command::new("mdir");
        c.arg("-i").arg(volume).arg("::");
        let shown = format!("{c:?}").replace('"', "");
        eprintln!("+ {shown}");
        let out = c
            .output()
            .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
        if !out.status.success() {
            return Err(describe(&format!("`{shown}` failed"), &out));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_finds_the_byte() -> Result<(), String> {
        let dir = std::env::temp_dir().join(format!("xtask-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let (a, b) = (dir.join("a"), dir.join("b"));
        let mut data = vec![7u8; (1 << 20) + 100];
        std::fs::write(&a, &data).map_err(|e| e.to_string())?;
        std::fs::write(&b, &data).map_err(|e| e.to_string())?;
        assert_eq!(first_difference(&a, &b)?, None);
        data[(1 << 20) + 5] = 8;
        std::fs::write(&b, &data).map_err(|e| e.to_string())?;
        assert_eq!(
            first_difference(&a, &b)?.as_deref(),
            Some("first at byte 1048581")
        );
        std::fs::write(&b, &data[..10]).map_err(|e| e.to_string())?;
        assert!(first_difference(&a, &b)?.is_some_and(|d| d.starts_with("sizes")));
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
