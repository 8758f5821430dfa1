//! A GNU `getopt_long` work-alike: what dosfstools and exfatprogs parse
//! their command lines with, so the same lines mean the same things here.
//!
//! Options and operands may be mixed in any order (libblockdev appends its
//! options after the device); `--` ends the options. Short options cluster
//! (`-vI`) and take their value attached or as the next word (`-F32`,
//! `-F 32`); long options take theirs after `=` or as the next word
//! (`--volume-label=X`, `--volume-label X`), an optional value only after
//! `=` (`--mbr`, `--mbr=n`), and may be shortened to any unambiguous prefix.

use std::ffi::{OsStr, OsString};

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// A flag.
    Nothing,
    /// A value, attached or as the next word.
    Value,
    /// A value only when attached (`--mbr=n`); long options only.
    Optional,
}

/// One option a front end knows: its short and long spelling, whether it
/// takes a value, and the key its handler matches on.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The short letter (`'F'` for `-F`).
    pub short: Option<char>,
    /// The long name without dashes (`"invariant"`).
    pub long: Option<&'static str>,
    /// What it takes.
    pub takes: Takes,
    /// The key the front end matches on.
    pub key: &'static str,
}

/// One word of the command line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// An option: its key, how it was written (`-F`, `--mbr`) and its value.
    Opt {
        /// The spec's key.
        key: &'static str,
        /// As written, for messages.
        name: String,
        /// The value, if any.
        value: Option<String>,
    },
    /// An operand (a path or a block count), in order.
    Operand(OsString),
}

/// Why a command line does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GetoptError {
    /// An option no spec names.
    Unknown(String),
    /// A long option prefix that fits several options.
    Ambiguous(String),
    /// An option that takes a value, at the end of the line.
    MissingValue(String),
    /// A flag given a value (`--invariant=1`).
    UnexpectedValue(String),
    /// An option or value that is not valid UTF-8.
    NotUtf8(String),
}

impl std::fmt::Display for GetoptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetoptError::Unknown(o) => write!(f, "unrecognized option '{o}'"),
            GetoptError::Ambiguous(o) => write!(f, "option '{o}' is ambiguous"),
            GetoptError::MissingValue(o) => write!(f, "option '{o}' requires an argument"),
            GetoptError::UnexpectedValue(o) => write!(f, "option '{o}' doesn't allow an argument"),
            GetoptError::NotUtf8(o) => write!(f, "option or value {o} is not valid UTF-8"),
        }
    }
}

impl std::error::Error for GetoptError {}

/// Parses `args` (without the program name) against `specs`.
///
/// # Errors
///
/// The first word that does not parse ([`GetoptError`]).
pub fn parse(args: &[OsString], specs: &[Spec]) -> Result<Vec<Item>, GetoptError> {
    let mut items = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let Some(text) = word.to_str() else {
            // A path may be any bytes; an option may not.
            if word.as_encoded_bytes().starts_with(b"-") && word.len() > 1 {
                return Err(GetoptError::NotUtf8(format!("{word:?}")));
            }
            items.push(Item::Operand(word.clone()));
            continue;
        };
        if text == "--" {
            items.extend(words.by_ref().map(|w| Item::Operand(w.clone())));
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            items.push(parse_long(long, specs, &mut words)?);
        } else if text.len() > 1 && text.starts_with('-') {
            parse_short(&text[1..], specs, &mut words, &mut items)?;
        } else {
            items.push(Item::Operand(word.clone()));
        }
    }
    Ok(items)
}

/// The next word as an option's value.
fn next_value<'a>(
    name: &str,
    words: &mut impl Iterator<Item = &'a OsString>,
) -> Result<String, GetoptError> {
    let w = words
        .next()
        .ok_or_else(|| GetoptError::MissingValue(name.to_string()))?;
    utf8(w)
}

fn utf8(w: &OsStr) -> Result<String, GetoptError> {
    w.to_str()
        .map(str::to_string)
        .ok_or_else(|| GetoptError::NotUtf8(format!("{w:?}")))
}

fn parse_long<'a>(
    long: &str,
    specs: &[Spec],
    words: &mut impl Iterator<Item = &'a OsString>,
) -> Result<Item, GetoptError> {
    let (name, attached) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (long, None),
    };
    let written = format!("--{name}");
    let exact = specs.iter().find(|s| s.long == Some(name));
    let spec = match exact {
        Some(s) => s,
        None => {
            let mut matches = specs
                .iter()
                .filter(|s| s.long.is_some_and(|l| l.starts_with(name)) && !name.is_empty());
            match (matches.next(), matches.next()) {
                (Some(s), None) => s,
                (Some(_), Some(_)) => return Err(GetoptError::Ambiguous(written)),
                _ => return Err(GetoptError::Unknown(written)),
            }
        }
    };
    let written = format!("--{}", spec.long.unwrap_or(name));
    let value = match (spec.takes, attached) {
        (Takes::Nothing, Some(_)) => return Err(GetoptError::UnexpectedValue(written)),
        (Takes::Nothing, None) | (Takes::Optional, None) => None,
        (_, Some(v)) => Some(v),
        (Takes::Value, None) => Some(next_value(&written, words)?),
    };
    Ok(Item::Opt {
        key: spec.key,
        name: written,
        value,
    })
}

fn parse_short<'a>(
    cluster: &str,
    specs: &[Spec],
    words: &mut impl Iterator<Item = &'a OsString>,
    items: &mut Vec<Item>,
) -> Result<(), GetoptError> {
    for (i, c) in cluster.char_indices() {
        let written = format!("-{c}");
        let spec = specs
            .iter()
            .find(|s| s.short == Some(c))
            .ok_or_else(|| GetoptError::Unknown(written.clone()))?;
        if spec.takes == Takes::Nothing {
            items.push(Item::Opt {
                key: spec.key,
                name: written,
                value: None,
            });
            continue;
        }
        let rest = &cluster[i + c.len_utf8()..];
        let value = if rest.is_empty() {
            next_value(&written, words)?
        } else {
            rest.to_string()
        };
        items.push(Item::Opt {
            key: spec.key,
            name: written,
            value: Some(value),
        });
        return Ok(());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[Spec] = &[
        Spec {
            short: Some('F'),
            long: None,
            takes: Takes::Value,
            key: "fat",
        },
        Spec {
            short: Some('v'),
            long: None,
            takes: Takes::Nothing,
            key: "verbose",
        },
        Spec {
            short: Some('I'),
            long: None,
            takes: Takes::Nothing,
            key: "ignore",
        },
        Spec {
            short: Some('n'),
            long: Some("volume-label"),
            takes: Takes::Value,
            key: "label",
        },
        Spec {
            short: None,
            long: Some("mbr"),
            takes: Takes::Optional,
            key: "mbr",
        },
        Spec {
            short: None,
            long: Some("invariant"),
            takes: Takes::Nothing,
            key: "invariant",
        },
        Spec {
            short: None,
            long: Some("invisible"),
            takes: Takes::Nothing,
            key: "invisible",
        },
    ];

    fn words(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
    }

    fn opt(key: &'static str, name: &str, value: Option<&str>) -> Item {
        Item::Opt {
            key,
            name: name.into(),
            value: value.map(str::to_string),
        }
    }

    #[test]
    fn clusters_attached_values_and_permutation() {
        let got = parse(
            &words(&["/dev/x", "-vIF32", "-n", "LBL", "--mbr=no", "--"]),
            SPECS,
        )
        .expect("parses");
        assert_eq!(
            got,
            vec![
                Item::Operand("/dev/x".into()),
                opt("verbose", "-v", None),
                opt("ignore", "-I", None),
                opt("fat", "-F", Some("32")),
                opt("label", "-n", Some("LBL")),
                opt("mbr", "--mbr", Some("no")),
            ]
        );
        let got = parse(
            &words(&["--volume-label", "A B", "--mbr", "--", "-x"]),
            SPECS,
        )
        .expect("parses");
        assert_eq!(
            got,
            vec![
                opt("label", "--volume-label", Some("A B")),
                opt("mbr", "--mbr", None),
                Item::Operand("-x".into())
            ]
        );
    }

    #[test]
    fn prefixes_and_errors() {
        assert_eq!(
            parse(&words(&["--invar"]), SPECS).expect("parses"),
            vec![opt("invariant", "--invariant", None)]
        );
        assert_eq!(
            parse(&words(&["--inv"]), SPECS),
            Err(GetoptError::Ambiguous("--inv".into()))
        );
        assert_eq!(
            parse(&words(&["-x"]), SPECS),
            Err(GetoptError::Unknown("-x".into()))
        );
        assert_eq!(
            parse(&words(&["--nope"]), SPECS),
            Err(GetoptError::Unknown("--nope".into()))
        );
        assert_eq!(
            parse(&words(&["-F"]), SPECS),
            Err(GetoptError::MissingValue("-F".into()))
        );
        assert_eq!(
            parse(&words(&["--invariant=1"]), SPECS),
            Err(GetoptError::UnexpectedValue("--invariant".into()))
        );
        assert_eq!(
            parse(&words(&["-"]), SPECS).expect("parses"),
            vec![Item::Operand("-".into())]
        );
        // An empty value is a value (GParted passes `-L ''`).
        assert_eq!(
            parse(&words(&["-n", ""]), SPECS).expect("parses"),
            vec![opt("label", "-n", Some(""))]
        );
    }
}
