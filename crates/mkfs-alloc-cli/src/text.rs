//! How errors read: the chain of causes once each, and no path longer than a
//! terminal line.

use crate::rootdir::shorten_path;

/// Runs of non-blank characters longer than this are shortened when they
/// hold a path separator (the limit of [`shorten_path`]).
const LONG_WORD: usize = 240;

/// `e` and its causes, `: `-separated as `{:#}` prints them, but without a
/// cause whose text is already there (an error that puts its source in its
/// own message, as "cannot read X: No such file or directory" does, would
/// otherwise say it twice), and with very long paths shortened.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    shorten_long_paths(&out)
}

/// `s` with every run of non-blank characters longer than [`LONG_WORD`]
/// that contains a path separator shortened by [`shorten_path`] (a path
/// can be longer than PATH_MAX; a message never needs all of it).
pub fn shorten_long_paths(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4096));
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.chars().count() > LONG_WORD && word.contains(std::path::is_separator) {
            let short = shorten_path(word);
            if short.len() < word.len() {
                out.push_str(&short);
                word.clear();
                return;
            }
        }
        out.push_str(word);
        word.clear();
    };
    for c in s.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `path` as one word of a POSIX shell command line the user can paste:
/// as it is when it holds only characters no shell treats specially, else
/// in single quotes (a `'` in it written as `'\''`).
pub fn shell_word(path: &std::path::Path) -> String {
    let s = path.to_string_lossy();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_in_the_message_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let text = format!("cannot read x: {io}");
        let e = anyhow::Error::new(io).context(text).context("--rootdir");
        assert_eq!(error_text(&e), "--rootdir: cannot read x: entity not found");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&e), "outer: inner");
    }

    #[test]
    fn long_paths_are_shortened_short_words_kept() {
        let long = format!("/{}/{}/last.img", "d".repeat(3000), "e".repeat(2000));
        let msg = format!("cannot create {long}: No such file\n  next line");
        let short = shorten_long_paths(&msg);
        assert!(short.len() < 400, "{short}");
        assert!(short.starts_with("cannot create /ddd"), "{short}");
        assert!(short.contains("…") && short.contains("/last.img: No such file\n  next line"));
        // A long name without a separator, and short paths, stay whole.
        let name = "n".repeat(300);
        assert_eq!(shorten_long_paths(&name), name);
        assert_eq!(shorten_long_paths("a /b/c d"), "a /b/c d");
    }

    #[test]
    fn a_shell_word_reads_back_as_the_path() {
        for name in [
            "card.img",
            "my card.img",
            "it's here",
            "a$b`c`\\d",
            "-",
            "x\ny",
        ] {
            let word = shell_word(std::path::Path::new(name));
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s {word}"))
                .output()
                .expect("run /bin/sh");
            assert_eq!(String::from_utf8_lossy(&out.stdout), name, "{word}");
        }
        assert_eq!(shell_word(std::path::Path::new("/dev/sdb")), "/dev/sdb");
    }
}
