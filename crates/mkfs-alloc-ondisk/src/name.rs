//! Which names a FAT long name or an exFAT file name may hold: the one rule
//! of the workspace (the `--rootdir` writer refuses what it finds, `advise`
//! counts it), so that a name passes both or neither.
//!
//! A name is a sequence of UTF-16 code units. Refused:
//! - control characters U+0000..U+001F and `" * / : < > ? \ |` (exFAT
//!   specification §7.7.3, "FileName Field", the invalid characters;
//!   fatgen103 §7 leaves the same set out of long names);
//! - Unicode noncharacters: U+FDD0..U+FDEF and the last two code points of
//!   every plane, U+xFFFE and U+xFFFF (The Unicode Standard, §23.7
//!   "Noncharacters"). UTF-16 stores them, but readers disagree on them:
//!   0xFFFF is also the padding unit after a FAT long name (fatgen103 §7),
//!   so 7-Zip shows `nonchar\u{FFFF}.txt` as its 8.3 alias `NONCHA~1.TXT`
//!   while mtools shows the long name;
//! - unpaired surrogates (a high surrogate 0xD800..0xDBFF not followed by a
//!   low one 0xDC00..0xDFFF, or a low one alone): not Unicode at all, so a
//!   reader that converts names to UTF-8 must replace or reject them.

use core::char::decode_utf16;

/// What makes a name unusable. Exhaustive on purpose: a new fault must be
/// handled (worded) by every caller, not fall into a catch-all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameFault {
    /// A control character or one of `" * / : < > ? \ |`.
    Forbidden(char),
    /// A Unicode noncharacter (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF).
    Noncharacter(char),
    /// A UTF-16 surrogate code unit without its partner.
    UnpairedSurrogate(u16),
}

/// Whether `c` is one of the 66 Unicode noncharacters.
pub const fn is_noncharacter(c: char) -> bool {
    let u = c as u32;
    (u >= 0xFDD0 && u <= 0xFDEF) || u & 0xFFFE == 0xFFFE
}

/// What is wrong with the character `c` in a name, if anything.
pub const fn char_fault(c: char) -> Option<NameFault> {
    if (c as u32) < 0x20 || matches!(c, '"' | '*' | '/' | ':' | '<' | '>' | '?' | '\\' | '|') {
        Some(NameFault::Forbidden(c))
    } else if is_noncharacter(c) {
        Some(NameFault::Noncharacter(c))
    } else {
        None
    }
}

/// The first fault of the name whose UTF-16 code units are `units`, if any.
///
/// ```
/// use mkfs_alloc_ondisk::name::{name_fault, NameFault};
///
/// assert_eq!(name_fault("fine (1).txt".encode_utf16()), None);
/// assert_eq!(name_fault("a:b".encode_utf16()), Some(NameFault::Forbidden(':')));
/// assert_eq!(
///     name_fault("nonchar\u{FFFF}.txt".encode_utf16()),
///     Some(NameFault::Noncharacter('\u{FFFF}'))
/// );
/// assert_eq!(name_fault([0x61, 0xD800, 0x62]), Some(NameFault::UnpairedSurrogate(0xD800)));
/// ```
pub fn name_fault(units: impl IntoIterator<Item = u16>) -> Option<NameFault> {
    decode_utf16(units).find_map(|r| match r {
        Ok(c) => char_fault(c),
        Err(e) => Some(NameFault::UnpairedSurrogate(e.unpaired_surrogate())),
    })
}

/// [`name_fault`] of a name given as a string (which holds no surrogates).
pub fn str_fault(name: &str) -> Option<NameFault> {
    name.chars().find_map(char_fault)
}

/// True for a byte an 8.3 short name may hold besides letters and digits:
/// ``! # $ % & ' ( ) - @ ^ _ ` { } ~`` (fatgen103 §6.1; anything else needs
/// a long name).
pub fn short_char_ok(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'()-@^_`{}~".contains(&c)
}

/// The base and extension of an 8.3-shaped name, in any case: a base of 1-8
/// and an optional extension of 1-3 [`short_char_ok`] characters after at
/// most one dot, which does not lead. `None` otherwise. The one shape rule:
/// `advise` counts with it and `--rootdir` writes with it, cluster for
/// cluster.
pub fn split_8_3(name: &[u8]) -> Option<(&[u8], &[u8])> {
    let (base, ext) = match name.iter().position(|&c| c == b'.') {
        Some(i) => (&name[..i], &name[i + 1..]),
        None => (name, &name[name.len()..]),
    };
    let dot_ok = !name.contains(&b'.') || !ext.is_empty();
    ((1..=8).contains(&base.len())
        && ext.len() <= 3
        && dot_ok
        && base.iter().all(|&c| short_char_ok(c))
        && ext.iter().all(|&c| short_char_ok(c)))
    .then_some((base, ext))
}

/// True if `name` can be stored as a short (8.3) name alone: 8.3-shaped
/// ([`split_8_3`]) with the letters of the base, and those of the
/// extension, each in one case (what the NT case bits of a short entry can
/// express).
pub fn is_8_3_with_case_bits(name: &[u8]) -> bool {
    let one_case = |part: &[u8]| {
        !(part.iter().any(u8::is_ascii_uppercase) && part.iter().any(u8::is_ascii_lowercase))
    };
    split_8_3(name).is_some_and(|(base, ext)| one_case(base) && one_case(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_66_noncharacters() {
        let all: usize = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_noncharacter(c))
            .count();
        assert_eq!(all, 66);
        for c in [
            '\u{FDD0}',
            '\u{FDEF}',
            '\u{FFFE}',
            '\u{FFFF}',
            '\u{1FFFE}',
            '\u{10FFFF}',
        ] {
            assert_eq!(char_fault(c), Some(NameFault::Noncharacter(c)), "{c:?}");
        }
        for c in [
            '\u{FDCF}',
            '\u{FDF0}',
            '\u{FFFD}',
            '\u{1FFFD}',
            '\u{20000}',
            'é',
        ] {
            assert_eq!(char_fault(c), None, "{c:?}");
        }
    }

    #[test]
    fn forbidden_and_surrogates() {
        for c in [
            '\0', '\t', '\u{1F}', '"', '*', '/', ':', '<', '>', '?', '\\', '|',
        ] {
            assert_eq!(char_fault(c), Some(NameFault::Forbidden(c)));
        }
        assert_eq!(char_fault(' '), None);
        assert_eq!(char_fault('\u{7F}'), None);
        // A pair is one astral character; either half alone is a fault.
        assert_eq!(name_fault([0xD83D, 0xDE00]), None);
        assert_eq!(
            name_fault([0xDE00, 0xD83D]),
            Some(NameFault::UnpairedSurrogate(0xDE00))
        );
        assert_eq!(
            name_fault([0x41, 0xD83D]),
            Some(NameFault::UnpairedSurrogate(0xD83D))
        );
        assert_eq!(str_fault("😀 ok"), None);
        assert_eq!(
            str_fault("a\u{10FFFF}"),
            Some(NameFault::Noncharacter('\u{10FFFF}'))
        );
    }

    #[test]
    fn short_names_as_fatgen103_allows_them() {
        // fatgen103 §6.1: letters, digits and these, nothing else.
        let mut want: alloc::vec::Vec<u8> = (b'0'..=b'9')
            .chain(b'A'..=b'Z')
            .chain(b'a'..=b'z')
            .chain(*b"!#$%&'()-@^_`{}~")
            .collect();
        want.sort_unstable();
        let got: alloc::vec::Vec<u8> = (0..=255u8).filter(|&c| short_char_ok(c)).collect();
        assert_eq!(got, want);
        let parts = |b: &'static [u8], e: &'static [u8]| Some((b, e));
        assert_eq!(split_8_3(b"README.TXT"), parts(b"README", b"TXT"));
        assert_eq!(split_8_3(b"KERNEL"), parts(b"KERNEL", b""));
        assert_eq!(split_8_3(b"12345678.123"), parts(b"12345678", b"123"));
        assert_eq!(split_8_3(b"a~1.c"), parts(b"a~1", b"c"));
        for long in [
            &b""[..],
            b".",
            b".profile",
            b"NAME.",
            b"123456789",
            b"A.1234",
            b"A.B.C",
            b"A B",
            b"A+B",
            b"A.B+",
        ] {
            assert_eq!(split_8_3(long), None, "{long:?}");
        }
        // One case per part: what the NT case bits can record.
        for (name, alone) in [
            (&b"readme.txt"[..], true),
            (b"README.txt", true),
            (b"readme.TXT", true),
            (b"1234.56", true),
            (b"ReadMe.txt", false),
            (b"readme.Txt", false),
            (b"readme.text", false),
        ] {
            assert_eq!(is_8_3_with_case_bits(name), alone, "{name:?}");
        }
    }
}
