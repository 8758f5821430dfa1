//! The one judge of `fsck.exfat -n` and `fsck.fat -n`: the exit status AND
//! the text. Used by the test suites (`tests/src/checks.rs`,
//! `tests/src/check.rs`) and by xtask (kernel, embedded, Windows and
//! package checks), so every caller calls the same output clean.
//!
//! Why the text counts: fsck.exfat 1.2 exits 0 and prints "clean" after
//! some errors. Captured on a volume whose label entry says 15 characters
//! (the `label_too_long` test below): exit 0, stdout `IMG: clean.
//! directories 2, files 2`, stderr `too long label. 15` and `failed to read
//! volume label`. So a clean run is exit 0 with nothing but the version line
//! and a clean summary; any other line, on stdout or stderr, is a finding
//! (an `ERROR: ...` line, `corrupted`, a repair question, a warning).
//! fsck.fat is judged the same way: a clean run prints its version line and
//! the `IMG: N files, N/N clusters` summary, nothing else ("Free cluster
//! summary wrong", "Dirty bit is set", a fix it would make).

use std::process::Output;

/// Which checker printed the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsckKind {
    /// exfatprogs' `fsck.exfat -n`.
    Exfat,
    /// dosfstools' `fsck.fat -n` (FAT12, FAT16, FAT32).
    Fat,
}

impl FsckKind {
    /// The program's name.
    pub fn program(self) -> &'static str {
        match self {
            FsckKind::Exfat => "fsck.exfat",
            FsckKind::Fat => "fsck.fat",
        }
    }

    /// Whether `line` is one a clean run prints.
    fn clean_line(self, line: &str) -> bool {
        match self {
            FsckKind::Exfat => {
                line.starts_with("exfatprogs version : ")
                    || line.contains(": clean. directories ") && line.contains(", files ")
            }
            FsckKind::Fat => {
                line.starts_with("fsck.fat ")
                    || line.contains(" files, ") && line.ends_with(" clusters")
            }
        }
    }

    /// Whether the summary line of a clean run is there.
    fn has_summary(self, text: &str) -> bool {
        text.lines().any(|l| match self {
            FsckKind::Exfat => l.contains(": clean. directories "),
            FsckKind::Fat => l.contains(" files, ") && l.ends_with(" clusters"),
        })
    }
}

/// What is wrong with one run's output: empty when the volume is clean.
/// `exit_ok`: whether the program exited 0.
pub fn fsck_findings(kind: FsckKind, exit_ok: bool, stdout: &str, stderr: &str) -> Vec<String> {
    let mut findings = Vec::new();
    if !exit_ok {
        findings.push(format!("{} did not exit 0", kind.program()));
    }
    if !kind.has_summary(stdout) {
        findings.push(format!("{} printed no clean summary", kind.program()));
    }
    for line in stdout.lines().chain(stderr.lines()) {
        let line = line.trim_end();
        if !line.trim().is_empty() && !kind.clean_line(line) {
            findings.push(line.to_string());
        }
    }
    findings
}

/// fsck.exfat 1.2.0 does not know the Volume GUID directory entry (exFAT
/// spec §7.5, type 0xA0, a benign primary entry) and reports the one our
/// volumes write when asked for a GUID, as the root's fourth entry (after
/// the label, bitmap and up-case entries), still exiting 0: `ERROR: /:
/// unknown entry type 0xa0 at 0000060 at 0x203060. Delete (y/N)? n`
/// (captured on `sentinel.rs`'s labelled 64 MiB volume).
fn exfat_guid_entry_line(line: &str) -> bool {
    line.starts_with("ERROR: /: unknown entry type 0xa0 at 0000060 at 0x")
        && line.ends_with(". Delete (y/N)? n")
}

/// [`fsck_findings`] of fsck.exfat on a volume that holds a Volume GUID
/// entry (the caller knows it does, and checks the entry apart): exactly
/// one line about that entry is taken as fsck.exfat 1.2.0's gap, not a
/// finding; none, or more than one, is a finding.
pub fn fsck_exfat_findings_with_volume_guid(
    exit_ok: bool,
    stdout: &str,
    stderr: &str,
) -> Vec<String> {
    let mut findings = fsck_findings(FsckKind::Exfat, exit_ok, stdout, stderr);
    let guid_lines = findings.iter().filter(|f| exfat_guid_entry_line(f)).count();
    if guid_lines == 1 {
        findings.retain(|f| !exfat_guid_entry_line(f));
    } else {
        findings.push(format!(
            "{guid_lines} lines about the Volume GUID entry, expected exactly 1"
        ));
    }
    findings
}

/// [`fsck_findings`] of a finished run: `Ok` with its text when clean, else
/// `Err` naming the exit status, every finding and the whole text.
pub fn fsck_judge(kind: FsckKind, out: &Output) -> Result<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = format!("{stdout}{stderr}");
    let findings = fsck_findings(kind, out.status.success(), &stdout, &stderr);
    if findings.is_empty() {
        Ok(text)
    } else {
        Err(format!(
            "{} -n ({}): {}\n{}",
            kind.program(),
            out.status,
            findings.join(" | "),
            text.trim_end()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// exfatprogs 1.2.0 on a 64 MiB volume (mkfs.exfat, then a file and a
    /// directory written through exfat-fuse) whose volume label entry's
    /// character count was set to 15: exit 0 and "clean", but two lines on
    /// stderr.
    #[test]
    fn label_too_long_exits_0_and_is_still_a_finding() {
        let stdout = "exfatprogs version : 1.2.0\nlabellen.img: clean. directories 2, files 2\n";
        let stderr = "too long label. 15\nfailed to read volume label\n";
        let f = fsck_findings(FsckKind::Exfat, true, stdout, stderr);
        assert_eq!(f, ["too long label. 15", "failed to read volume label"]);
    }

    /// The same volume with the bitmap bits of clusters 6 and 9 (the file's
    /// and the directory's first) cleared: exit 4.
    #[test]
    fn exfat_error_lines_and_exit_status() {
        let stdout = "exfatprogs version : 1.2.0\n\
            ERROR: /file.bin: cluster 0x6 is marked as free at 0x203060. Truncate (y/N)? n\n\
            ERROR: /dir: cluster 0x9 is marked as free at 0x2030c0. Truncate (y/N)? n\n\
            bmclear.img: corrupted. directories 1, files 0\n\
            bmclear.img: files corrupted 2, files fixed 0\n";
        let f = fsck_findings(FsckKind::Exfat, false, stdout, "");
        assert_eq!(f.len(), 6, "{f:?}");
        assert_eq!(f[0], "fsck.exfat did not exit 0");
        assert_eq!(f[1], "fsck.exfat printed no clean summary");
        assert!(f[2].starts_with("ERROR: /file.bin"), "{f:?}");
        assert!(f[4].contains(": corrupted. "), "{f:?}");
        // Even with exit 0 the text alone decides.
        assert_eq!(fsck_findings(FsckKind::Exfat, true, stdout, "").len(), 5);
    }

    /// A volume with a Volume GUID entry (sentinel.rs, exfat_4k_64mib_labelled):
    /// exit 0, "clean", one line about the entry fsck.exfat 1.2.0 does not know.
    #[test]
    fn the_volume_guid_entry_is_allowed_only_where_asked_and_only_once() {
        let line = "ERROR: /: unknown entry type 0xa0 at 0000060 at 0x203060. Delete (y/N)? n";
        let stdout =
            format!("exfatprogs version : 1.2.0\n{line}\nimg: clean. directories 1, files 0\n");
        assert_eq!(fsck_findings(FsckKind::Exfat, true, &stdout, ""), [line]);
        assert!(fsck_exfat_findings_with_volume_guid(true, &stdout, "").is_empty());
        // Without the line (no GUID written), or twice, or elsewhere: findings.
        let clean = "exfatprogs version : 1.2.0\nimg: clean. directories 1, files 0\n";
        assert_eq!(
            fsck_exfat_findings_with_volume_guid(true, clean, "").len(),
            1
        );
        let twice = stdout.replace(line, &format!("{line}\n{line}"));
        assert!(!fsck_exfat_findings_with_volume_guid(true, &twice, "").is_empty());
        let elsewhere = stdout.replace("0000060", "0000080");
        assert!(!fsck_exfat_findings_with_volume_guid(true, &elsewhere, "").is_empty());
        // Nor does it excuse an exit status other than 0.
        assert!(!fsck_exfat_findings_with_volume_guid(false, &stdout, "").is_empty());
    }

    #[test]
    fn clean_runs_have_no_findings() {
        let exfat = "exfatprogs version : 1.2.0\na.img: clean. directories 1, files 0\n";
        assert!(fsck_findings(FsckKind::Exfat, true, exfat, "").is_empty());
        let fat = "fsck.fat 4.2 (2021-01-31)\n/tmp/x/fat.img: 0 files, 1/65515 clusters\n";
        assert!(fsck_findings(FsckKind::Fat, true, fat, "").is_empty());
        // Nothing printed at all is not clean.
        assert_eq!(fsck_findings(FsckKind::Exfat, true, "", "").len(), 1);
    }

    /// dosfstools 4.2 on a 128 MiB FAT32 image (mkfs.fat) whose FSInfo
    /// free count was changed: exit 1, and the lines of the repair it would
    /// have made.
    #[test]
    fn fat_warnings_are_findings() {
        let stdout = "fsck.fat 4.2 (2021-01-31)\n\
            Free cluster summary wrong (458768 vs. really 516189)\n  Auto-correcting.\n\n\
            Leaving filesystem unchanged.\n\
            fat.img: 0 files, 1/516190 clusters\n";
        let want = [
            "Free cluster summary wrong (458768 vs. really 516189)",
            "  Auto-correcting.",
            "Leaving filesystem unchanged.",
        ];
        let f = fsck_findings(FsckKind::Fat, false, stdout, "");
        assert_eq!(f[0], "fsck.fat did not exit 0");
        assert_eq!(f[1..], want);
        // The text alone decides, too.
        assert_eq!(fsck_findings(FsckKind::Fat, true, stdout, ""), want);
    }
}
