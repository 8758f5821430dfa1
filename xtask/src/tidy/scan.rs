//! The line scanners of `tidy`: which lines are code, and what in a line of
//! code breaks a rule. A small lexer, not a parser: it knows string and
//! character literals and `//` comments, which is all the rules need.

/// The code lines of `text` with their 1-based numbers: comment-only lines
/// dropped, trailing comments cut, and nothing from the first `#[cfg(test)]`
/// at column 0 on (a file's test module).
pub fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = cut_comment(line);
        if !code.trim().is_empty() {
            out.push((i + 1, code.to_string()));
        }
    }
    out
}

/// One piece of a line: code, or a string literal's contents.
enum Piece<'a> {
    Code(&'a str),
    Str(&'a str),
}

/// Splits a line into code and string literals (`"…"`, with `\"` escapes;
/// character literals stay code) up to a `//` comment, and says where the
/// code ends (the comment's start, or the line's length). A string left
/// open at the end of the line runs to its end.
fn pieces(line: &str) -> (Vec<Piece<'_>>, usize) {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        match b[i] {
            // A character literal ('"', '\\', '\''): skipped whole; else a lifetime.
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i = line
                    .get(i + 3..)
                    .and_then(|r| r.find('\''))
                    .map_or(b.len(), |p| i + 3 + p + 1);
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            b'"' => {
                out.push(Piece::Code(&line[start..i]));
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(b.len());
                out.push(Piece::Str(&line[i + 1..end]));
                i = (end + 1).min(b.len());
                start = i;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                out.push(Piece::Code(&line[start..i]));
                return (out, i);
            }
            _ => i += 1,
        }
    }
    out.push(Piece::Code(&line[start.min(b.len())..]));
    (out, b.len())
}

/// `line` without its trailing `//` comment (strings kept).
fn cut_comment(line: &str) -> &str {
    line[..pieces(line).1].trim_end()
}

/// The code of `line` with string literals blanked out.
fn code_only(line: &str) -> String {
    pieces(line)
        .0
        .into_iter()
        .map(|p| match p {
            Piece::Code(s) => s.to_string(),
            Piece::Str(s) => format!("\"{}\"", " ".repeat(s.len())),
        })
        .collect()
}

/// Why `line` decodes bytes by position: `from_le_bytes`, `to_le_bytes`, or
/// a slice or index with integer-literal bounds (`[3..11]`, `[..8]`,
/// `[24..]`, `.get(4..8)`).
pub fn offset_uses(line: &str) -> Vec<String> {
    let code = code_only(line);
    let mut out = Vec::new();
    for f in ["from_le_bytes", "to_le_bytes"] {
        if code.contains(f) {
            out.push(f.to_string());
        }
    }
    let b = code.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let open = match c {
            b'[' => true,
            b'(' => code[..i].ends_with(".get") || code[..i].ends_with(".get_mut"),
            _ => false,
        };
        if open {
            if let Some(range) = literal_range(&code[i + 1..]) {
                out.push(format!("the byte range [{range}]"));
            }
        }
    }
    out
}

/// A range with integer-literal bounds at the start of `s` (up to its
/// closing `]` or `)`): `3..11`, `..8`, `24..`, `0..=4`; not `..`, `1..`
/// (a string's tail) or `0..n`.
fn literal_range(s: &str) -> Option<&str> {
    let end = s.find([']', ')'])?;
    let inner = s[..end].trim();
    let (a, b) = inner.split_once("..")?;
    let b = b.strip_prefix('=').unwrap_or(b);
    let lit = |t: &str| {
        let t = t.trim();
        !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit() || c == b'_')
    };
    let (a_lit, b_lit) = (lit(a), lit(b));
    let a_empty = a.trim().is_empty();
    let b_empty = b.trim().is_empty();
    let ok = (b_lit && (a_lit || a_empty))
        || (a_lit && b_empty && a.trim().parse::<u64>().is_ok_and(|v| v >= 2));
    ok.then_some(inner)
}

/// The command-line flags (`--fs`, `--cluster`) named in the string
/// literals of `line`.
pub fn flag_literals(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for p in pieces(line).0 {
        let Piece::Str(s) = p else { continue };
        let b = s.as_bytes();
        let mut i = 0;
        while let Some(p) = s[i..].find("--") {
            let at = i + p;
            let before_ok = at == 0 || !b[at - 1].is_ascii_alphanumeric() && b[at - 1] != b'-';
            let name: String = s[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            if before_ok && name.len() >= 2 && name.as_bytes()[0].is_ascii_lowercase() {
                out.push(format!("--{name}"));
            }
            i = at + 2;
        }
    }
    out
}

/// Projects whose own trackers a line may cite (`exfatprogs #318`,
/// `dosfstools issue #91`): public sources, unlike this repository's
/// tracker, which the repository does not contain.
const OTHER_TRACKERS: &[&str] = &[
    "exfatprogs",
    "dosfstools",
    "fatresize",
    "genimage",
    "relan",
    "libblockdev",
    "libstorage",
    "systemd",
    "parted",
    "veracrypt",
    "fatfs",
    "util-linux",
    "eos-meta",
    "huven",
    "PR #",
];

/// True when `line` cites a tracker number of this project's own
/// (the word issue, then `#` and a number): tests and comments name the behaviour
/// they guard instead. A line that names another project's tracker
/// ([`OTHER_TRACKERS`], or `owner/repo#N`) is left alone.
pub fn cites_own_tracker(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let mut rest = lower.as_str();
    let mut found = false;
    while let Some(at) = rest.find("issue") {
        let after = rest[at + "issue".len()..]
            .trim_start_matches('s')
            .trim_start();
        if after
            .strip_prefix('#')
            .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
        {
            found = true;
        }
        rest = &rest[at + "issue".len()..];
    }
    found
        && !OTHER_TRACKERS
            .iter()
            .any(|p| lower.contains(&p.to_ascii_lowercase()))
        && !names_a_repository(line)
}

/// True when `line` has an `owner/repo` word: a `/` between two
/// alphanumerics (comment markers and paths like `/dev` do not count).
fn names_a_repository(line: &str) -> bool {
    let b = line.as_bytes();
    (1..b.len().saturating_sub(1)).any(|i| {
        b[i] == b'/' && b[i - 1].is_ascii_alphanumeric() && b[i + 1].is_ascii_alphanumeric()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(
            offset_uses("let x = s[72..80];"),
            ["the byte range [72..80]"]
        );
        assert_eq!(offset_uses("b.get(24..28)").len(), 1);
        assert_eq!(offset_uses("buf[..8] != MAGIC").len(), 1);
        assert_eq!(offset_uses("v.to_le_bytes()"), ["to_le_bytes"]);
        assert!(offset_uses("s[1..]").is_empty());
        assert!(offset_uses("s[i..i + 2]").is_empty());
        assert!(offset_uses("&v[..n]").is_empty());
        assert!(offset_uses(r#"format!("[3..11]")"#).is_empty());
    }

    #[test]
    fn flags() {
        assert_eq!(flag_literals(r#"f("use --fs fat")"#), ["--fs"]);
        assert!(flag_literals("x -- y").is_empty());
        assert!(flag_literals(r#""a-- b""#).is_empty());
        assert_eq!(flag_literals(r#""(see --cluster)" // --fs"#), ["--cluster"]);
    }

    #[test]
    fn comments_and_tests_are_not_code() {
        let text = "let a = 1; // s[3..11]\n/// doc s[3..11]\n#[cfg(test)]\nmod tests;";
        let code = code_lines(text);
        assert_eq!(code.len(), 1);
        assert!(offset_uses(&code[0].1).is_empty());
        assert_eq!(
            code_lines("let u = \"https://x\"; // y")[0].1,
            "let u = \"https://x\";"
        );
    }

    #[test]
    fn own_tracker_numbers_are_found() {
        let own = concat!("/// Is", "sue #18 item 8: the limit was wrong.");
        assert!(cites_own_tracker(own));
        assert!(cites_own_tracker(concat!(
            "//! Many targets (is",
            "sue #22): "
        )));
        assert!(cites_own_tracker(concat!("see is", "sues #3 and #4")));
        assert!(!cites_own_tracker(concat!(
            "exfatprogs is",
            "sue #134, open since 2020"
        )));
        assert!(!cites_own_tracker(concat!(
            "pengutronix/genimage is",
            "sue #84"
        )));
        assert!(!cites_own_tracker("an issue with #[derive]"));
        assert!(!cites_own_tracker("the issue: 18 sectors"));
    }
}
