//! The judgement: U-Boot's replies and the host tools' output read into
//! facts, compared with what must be. Pure functions (unit-tested below,
//! the negative controls included).

use super::cases::Expect;
use super::host::{Entry, Tree};

/// The verdict on a case: its label in the report, and whether it went
/// as it must. A limit is never a pass: it is reported as the limit, and
/// fails the run if it is gone, if no reply held the limit's text, or if
/// anything else went wrong besides U-Boot refusing commands (a wrong
/// listing, size or CRC from a command that succeeded, the console or
/// QEMU failing): the limit explains refusals, nothing more.
pub(super) fn verdict(
    expect: Expect,
    findings: &[String],
    limit_seen: bool,
) -> (&'static str, bool) {
    match expect {
        Expect::Pass if findings.is_empty() => ("pass", true),
        Expect::Pass => ("FAIL", false),
        Expect::Limit(_) if findings.is_empty() => ("LIMIT GONE", false),
        Expect::Limit(_) if !limit_seen => ("FAIL (not the limit)", false),
        Expect::Limit(_) if findings.iter().all(|f| is_refusal(f)) => ("U-Boot limit", true),
        Expect::Limit(_) => ("FAIL (the limit and more)", false),
        Expect::Fails(_, text) if findings.iter().any(|f| f.contains(text)) => {
            ("fails as it must", true)
        }
        Expect::Fails(..) => ("CONTROL PASSED", false),
    }
}

/// Whether a finding is U-Boot refusing a command: the session's
/// "`COMMAND` failed (RC): REPLY" (`Talk::must`), the only kind a limit
/// explains.
fn is_refusal(finding: &str) -> bool {
    finding.starts_with('`') && finding.contains("` failed (")
}

/// An entry `fatls` printed: a file with its size, or a directory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Listed {
    pub(super) name: String,
    /// `None` for a directory.
    pub(super) size: Option<u64>,
}

/// Reads a `fatls` reply: ` %8llu   NAME` per file, `            NAME/`
/// per directory, then `N file(s), M dir(s)`. The counts must match the
/// lines read.
pub(super) fn parse_fatls(text: &str) -> Result<Vec<Listed>, String> {
    let mut listed = Vec::new();
    let mut counts = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some((files, dirs)) = line.split_once(" file(s), ").and_then(|(f, d)| {
            Some((
                f.trim().parse::<usize>().ok()?,
                d.strip_suffix(" dir(s)")?.parse::<usize>().ok()?,
            ))
        }) {
            counts = Some((files, dirs));
        } else if let Some(name) = line
            .strip_prefix("            ")
            .and_then(|n| n.strip_suffix('/'))
        {
            listed.push(Listed {
                name: name.to_string(),
                size: None,
            });
        } else if let Some((size, name)) = line
            .trim_start()
            .split_once("   ")
            .and_then(|(s, n)| Some((s.parse::<u64>().ok()?, n)))
        {
            listed.push(Listed {
                name: name.to_string(),
                size: Some(size),
            });
        } else {
            return Err(format!("an unexpected line in fatls' reply: {line:?}"));
        }
    }
    let Some((files, dirs)) = counts else {
        return Err(format!("fatls printed no summary line: {text:?}"));
    };
    let got = (
        listed.iter().filter(|l| l.size.is_some()).count(),
        listed.iter().filter(|l| l.size.is_none()).count(),
    );
    if got != (files, dirs) {
        return Err(format!(
            "fatls says {files} file(s), {dirs} dir(s) but listed {} and {}",
            got.0, got.1
        ));
    }
    listed.sort();
    Ok(listed)
}

/// The findings of comparing one directory's listing with its expected
/// entries (names as U-Boot shows them): a subdirectory also lists `.`
/// and `..`, the root does not.
pub(super) fn compare_dir(path: &str, expected: &[Entry], listed: &[Listed]) -> Vec<String> {
    let mut want: Vec<Listed> = expected
        .iter()
        .map(|e| Listed {
            name: e.name.clone(),
            size: (!e.dir).then_some(e.size),
        })
        .collect();
    if !path.is_empty() {
        for dot in [".", ".."] {
            want.push(Listed {
                name: dot.to_string(),
                size: None,
            });
        }
    }
    want.sort();
    let missing: Vec<String> = want
        .iter()
        .filter(|w| !listed.contains(w))
        .map(show)
        .collect();
    let extra: Vec<String> = listed
        .iter()
        .filter(|l| !want.contains(l))
        .map(show)
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "fatls /{path}: missing {missing:?}, not in the source {extra:?}"
    )]
}

fn show(l: &Listed) -> String {
    match l.size {
        Some(s) => format!("{} ({s} B)", l.name),
        None => format!("{}/", l.name),
    }
}

/// The CRC `crc32` printed (`crc32 for A ... B ==> 1234abcd`).
pub(super) fn parse_crc(text: &str) -> Option<u32> {
    let (_, rest) = text.split_once("==> ")?;
    u32::from_str_radix(rest.get(..8)?, 16).ok()
}

/// The byte count of `N bytes read` (fatload) or `N bytes written`
/// (fatwrite).
pub(super) fn parse_bytes(text: &str, verb: &str) -> Option<u64> {
    let pattern = format!(" bytes {verb}");
    text.lines()
        .find_map(|l| l.trim().split_once(&pattern)?.0.parse().ok())
}

/// The value of `filesize=HEX` (`printenv filesize`).
pub(super) fn parse_filesize(text: &str) -> Option<u64> {
    let hex = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("filesize="))?;
    u64::from_str_radix(hex, 16).ok()
}

/// `fatinfo`'s `Filesystem: FAT32 "NO NAME    "`: the width and the label.
pub(super) fn parse_fatinfo(text: &str) -> Option<(u32, String)> {
    let rest = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Filesystem: FAT"))?;
    let (width, label) = rest.split_once(' ')?;
    let label = label.strip_prefix('"')?.strip_suffix('"')?;
    Some((width.parse().ok()?, label.to_string()))
}

/// The label `fatinfo` must print: the boot sector's 11 bytes, `NO NAME`
/// without a label.
pub(super) fn expected_label(label: Option<&str>) -> String {
    format!("{:<11}", label.unwrap_or("NO NAME"))
}

/// The findings in `fsck.fat -n`'s output (as the kernel suite's
/// `fsck_volume` returns it: `(exit status: N) ` first unless it exited 0).
/// `fsinfo` is `Some((written, counted))` on FAT32 after U-Boot wrote:
/// FSInfo's free count as we wrote it, and the free clusters counted here
/// in the FAT. U-Boot 2023.01 does not update FSInfo, so exactly one
/// message is accepted then, `Free cluster summary wrong (WRITTEN vs.
/// really COUNTED)` with both numbers as given, with exit status 1. Any
/// other message (or that one with other numbers, or on a fresh volume,
/// or on FAT12/16), or another exit status, is a finding.
pub(super) fn judge_fsck(output: &str, fsinfo: Option<(u64, u64)>) -> Vec<String> {
    let (status, text) = match output
        .strip_prefix("(exit status: ")
        .and_then(|r| r.split_once(") "))
    {
        Some((code, rest)) => (code.parse::<i32>().unwrap_or(-1), rest),
        None => (0, output),
    };
    let mut findings = Vec::new();
    let mut stale = false;
    for line in text.lines() {
        let t = line.trim();
        // "Auto-correcting." only follows a message (judged on its own).
        if t.is_empty()
            || t.starts_with("fsck.fat ")
            || t == "Leaving filesystem unchanged."
            || t == "Auto-correcting."
            || is_fsck_total(t)
        {
            continue;
        }
        if let Some(numbers) = t.strip_prefix("Free cluster summary wrong (") {
            let got = numbers
                .strip_suffix(')')
                .and_then(|n| n.split_once(" vs. really "))
                .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
            if let (Some(want), Some(got)) = (fsinfo, got) {
                if want == got {
                    stale = true;
                    continue;
                }
            }
            if let Some((written, counted)) = fsinfo {
                findings.push(format!(
                    "fsck.fat -n: {t:?}; U-Boot's stale FSInfo would be {written} vs. really {counted} (counted here)"
                ));
                continue;
            }
        }
        findings.push(format!("fsck.fat -n: {t:?}"));
    }
    let want_status = i32::from(stale);
    if findings.is_empty() && status != want_status {
        findings.push(format!(
            "fsck.fat -n exited {status} (must be {want_status}): {:?}",
            text.trim()
        ));
    }
    findings
}

/// fsck.fat's closing line: `/dev/loop0: 6 files, 26/3584 clusters`.
fn is_fsck_total(line: &str) -> bool {
    line.split_once(": ").is_some_and(|(dev, rest)| {
        dev.starts_with("/dev/") && rest.ends_with(" clusters") && rest.contains(" files, ")
    })
}

/// The findings of comparing mtools' copy of the volume with the tree
/// that must be on it (names as mtools shows them).
pub(super) fn compare_trees(what: &str, want: &Tree, got: &Tree) -> Vec<String> {
    let mut findings = Vec::new();
    for (path, (size, crc)) in &want.files {
        match got.files.get(path) {
            None => findings.push(format!("{what}: {path} is missing")),
            Some((s, c)) if (s, c) != (size, crc) => findings.push(format!(
                "{what}: {path}: {s} B, CRC-32 {c:08x}; must be {size} B, {crc:08x}"
            )),
            Some(_) => {}
        }
    }
    for path in got.files.keys().filter(|p| !want.files.contains_key(*p)) {
        findings.push(format!("{what}: {path} is not in the tree"));
    }
    for path in want.dirs.keys().filter(|p| !got.dirs.contains_key(*p)) {
        findings.push(format!("{what}: directory /{path} is missing"));
    }
    for path in got.dirs.keys().filter(|p| !want.dirs.contains_key(*p)) {
        findings.push(format!("{what}: directory /{path} is not in the tree"));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fatls of a subdirectory, as U-Boot 2023.01 prints it.
    const FATLS_SUB: &str = "            ./
            ../
            Deep/
     3000   Urlaub am Meer.jpeg
        0   empty

2 file(s), 3 dir(s)

";

    fn entry(name: &str, size: u64, dir: bool) -> Entry {
        Entry {
            name: name.into(),
            size,
            dir,
        }
    }

    #[test]
    fn verdicts() {
        use super::super::cases::Fault;
        let none: &[String] = &[];
        let some = [
            "fatload + crc32 /a: Some(3) B, CRC-32 00000001; the file: 3 B, 00000002".to_string(),
        ];
        assert_eq!(verdict(Expect::Pass, none, false), ("pass", true));
        assert!(!verdict(Expect::Pass, &some, false).1);
        let limit = Expect::Limit("Can't set block device");
        // Captured from a run: U-Boot refusing every command.
        let refused = [
            "`fatinfo virtio 0:1` failed (1): ** Unable to use virtio 0:1 for fatinfo **"
                .to_string(),
            "`fatls virtio 0:1 \"/\"` failed (1): ".to_string(),
        ];
        assert_eq!(verdict(limit, &refused, true), ("U-Boot limit", true));
        assert!(
            !verdict(limit, &refused, false).1,
            "failed, but not as the limit"
        );
        assert!(
            !verdict(limit, none, true).1,
            "a limit that is gone fails the run"
        );
        // The limit's text was seen, but a command that succeeded gave a
        // wrong answer, or the console failed: not explained by the limit.
        assert_eq!(
            verdict(limit, &some, true),
            ("FAIL (the limit and more)", false)
        );
        let mut more = refused.to_vec();
        more.push("console: QEMU exited".into());
        assert!(!verdict(limit, &more, true).1, "{more:?}");
        let control = Expect::Fails(Fault::SourceByteChanged, "crc32");
        assert_eq!(verdict(control, &some, false), ("fails as it must", true));
        assert_eq!(verdict(control, none, false), ("CONTROL PASSED", false));
    }

    #[test]
    fn fatls_is_read_and_compared() {
        let listed = parse_fatls(FATLS_SUB).expect("a listing");
        assert_eq!(listed.len(), 5);
        let source = [
            entry("Deep", 0, true),
            entry("Urlaub am Meer.jpeg", 3000, false),
            entry("empty", 0, false),
        ];
        assert!(compare_dir("Sub", &source, &listed).is_empty());
        // The root lists no dot entries: the same listing fails there.
        assert!(!compare_dir("", &source, &listed).is_empty());
        // A size that differs, a name that differs: findings.
        let wrong = [
            entry("Deep", 0, true),
            entry("Urlaub am Meer.jpeg", 3001, false),
            entry("Empty", 0, false),
        ];
        let f = compare_dir("Sub", &wrong, &listed);
        assert!(f[0].contains("3001") && f[0].contains("Empty"), "{f:?}");
    }

    #[test]
    fn fatls_counts_must_match_its_lines() {
        let short = FATLS_SUB.replace("2 file(s)", "3 file(s)");
        assert!(parse_fatls(&short).is_err());
        assert!(parse_fatls("").is_err(), "no summary, no listing");
        assert!(parse_fatls("** Unable to read file **\n0 file(s), 0 dir(s)\n").is_err());
    }

    #[test]
    fn replies_are_read() {
        let load =
            "3000 bytes read in 2 ms (1.4 MiB/s)\ncrc32 for 40200000 ... 40200bb7 ==> ef6e060f\n";
        assert_eq!(parse_bytes(load, "read"), Some(3000));
        assert_eq!(parse_crc(load), Some(0xef6e_060f));
        assert_eq!(parse_bytes("0 bytes read in 0 ms\n", "read"), Some(0));
        assert_eq!(
            parse_bytes("69649 bytes written in 4 ms (16.6 MiB/s)\n", "written"),
            Some(69649)
        );
        assert_eq!(parse_crc("Can't set block device\n"), None);
        assert_eq!(parse_filesize("filesize=bb8\n"), Some(3000));
        let info = "Interface:  virtio\n  Device 0: QEMU VirtIO Block Device\nFilesystem: FAT16 \"SMALL      \"\n";
        assert_eq!(parse_fatinfo(info), Some((16, "SMALL      ".into())));
        assert_eq!(expected_label(Some("SMALL")), "SMALL      ");
        assert_eq!(expected_label(None), "NO NAME    ");
    }

    const FSCK_STALE: &str = "fsck.fat 4.2 (2021-01-31)
Free cluster summary wrong (261105 vs. really 261088)
  Auto-correcting.

Leaving filesystem unchanged.
/dev/loop0: 6 files, 27/261115 clusters
";

    #[test]
    fn fsck_stale_fsinfo_alone_is_accepted_with_its_numbers() {
        let text = format!("(exit status: 1) {FSCK_STALE}");
        assert!(judge_fsck(&text, Some((261_105, 261_088))).is_empty());
        // Other numbers: not the stale count U-Boot left.
        assert_eq!(judge_fsck(&text, Some((261_105, 261_089))).len(), 1);
        assert_eq!(judge_fsck(&text, Some((261_000, 261_088))).len(), 1);
        // On a fresh volume or FAT12/16 nothing is accepted.
        assert!(!judge_fsck(&text, None).is_empty());
        let clean = "fsck.fat 4.2 (2021-01-31)\n/dev/loop0: 6 files, 26/3584 clusters\n";
        assert!(judge_fsck(clean, None).is_empty());
    }

    #[test]
    fn fsck_real_damage_is_a_finding_even_beside_the_stale_count() {
        let lost = FSCK_STALE.replace(
            "Leaving",
            "Orphaned long file name part \"x\"\n  Auto-correcting.\nLeaving",
        );
        let f = judge_fsck(&lost, Some((261_105, 261_088)));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("Orphaned"), "{f:?}");
        let chain = "fsck.fat 4.2 (2021-01-31)\n/U-Boot dir/x.bin\n  File size is 70000 bytes, cluster chain length is 65536 bytes.\n  Truncating file to 65536 bytes.\n/dev/loop0: 6 files, 26/3584 clusters\n";
        assert_eq!(judge_fsck(chain, Some((1, 1))).len(), 3);
    }

    #[test]
    fn trees_are_compared_file_by_file() {
        let mut want = Tree::default();
        want.dirs.insert(String::new(), Vec::new());
        want.files.insert("a".into(), (3, 0x1234));
        let mut got = want.clone();
        assert!(compare_trees("mtools", &want, &got).is_empty());
        got.files.insert("a".into(), (3, 0x1235));
        got.dirs.insert("x".into(), Vec::new());
        let f = compare_trees("mtools", &want, &got);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].contains("CRC-32 00001235"));
    }
}
