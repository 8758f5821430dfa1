//! Volume label validation and encoding.
//!
//! Sources: exFAT specification §7.3 (Volume Label directory entry);
//! fatgen103 §"FAT Directory Structure" (DIR_Name legal characters).

use core::fmt;

/// Bytes of a label kept by [`LabelText`]: as many as any valid label needs
/// (11 UTF-16 units are at most 33 bytes of UTF-8; a FAT label is 11 ASCII
/// bytes once its trailing spaces are trimmed).
pub const LABEL_TEXT_MAX: usize = 36;

/// A label as given, kept without an allocator: its first
/// [`LABEL_TEXT_MAX`] bytes (whole characters), and the lengths of the
/// whole of it that the checks need. It reads as a `str` (the kept part).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LabelText {
    bytes: [u8; LABEL_TEXT_MAX],
    len: u8,
    /// UTF-16 code units of the whole label.
    utf16_len: u32,
    /// Bytes of the whole label without its trailing spaces.
    trimmed_len: u32,
    /// Characters were left out (the label is longer than any valid one).
    truncated: bool,
}

impl LabelText {
    /// Keeps `label` (at most [`LABEL_TEXT_MAX`] bytes of it).
    pub fn new(label: &str) -> Self {
        let mut cut = label.len().min(LABEL_TEXT_MAX);
        while !label.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut bytes = [0u8; LABEL_TEXT_MAX];
        bytes[..cut].copy_from_slice(&label.as_bytes()[..cut]);
        LabelText {
            bytes,
            // At most LABEL_TEXT_MAX, 36.
            len: u8::try_from(cut).unwrap_or(u8::MAX),
            // 32 bits (the plan's error stays small) saturate only past
            // 4 GiB of label text.
            utf16_len: u32::try_from(label.encode_utf16().count()).unwrap_or(u32::MAX),
            trimmed_len: u32::try_from(trimmed_len(label.as_bytes())).unwrap_or(u32::MAX),
            truncated: cut < label.len(),
        }
    }

    /// Characters of the label were left out: it is longer than
    /// [`LABEL_TEXT_MAX`] bytes.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// UTF-16 code units of the whole label.
    pub fn utf16_len(&self) -> usize {
        crate::writer::usize_of(self.utf16_len)
    }

    /// Bytes of the whole label without its trailing spaces.
    pub fn trimmed_len(&self) -> usize {
        crate::writer::usize_of(self.trimmed_len)
    }

    /// The kept bytes (whole characters of UTF-8).
    fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The kept characters, decoded from the kept bytes (valid UTF-8: they
    /// were copied from a `str`; decoding here keeps the firmware free of
    /// `str` validation code).
    fn chars(&self) -> impl Iterator<Item = char> + '_ {
        let b = self.bytes();
        let mut i = 0;
        core::iter::from_fn(move || {
            let lead = u32::from(*b.get(i)?);
            let (n, mut c) = match lead {
                0..=0x7F => (1, lead),
                0xC0..=0xDF => (2, lead & 0x1F),
                0xE0..=0xEF => (3, lead & 0x0F),
                _ => (4, lead & 0x07),
            };
            for k in 1..n {
                c = (c << 6) | (u32::from(b.get(i + k).copied().unwrap_or(0)) & 0x3F);
            }
            i += n;
            char::from_u32(c)
        })
    }

    /// The label (its kept part).
    pub fn as_str(&self) -> &str {
        // `new` copies whole characters of a `str`.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl core::ops::Deref for LabelText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for LabelText {
    fn from(label: &str) -> Self {
        LabelText::new(label)
    }
}

#[cfg(feature = "alloc")]
impl From<alloc::string::String> for LabelText {
    fn from(label: alloc::string::String) -> Self {
        LabelText::new(&label)
    }
}

impl fmt::Debug for LabelText {
    /// As a `str` would be, with `…` for a part left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.truncated {
            write!(f, "{:?}…", self.as_str())
        } else {
            fmt::Debug::fmt(self.as_str(), f)
        }
    }
}

impl fmt::Display for LabelText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        if self.truncated {
            f.write_str("…")?;
        }
        Ok(())
    }
}

/// Why a label was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelError {
    /// Too long for the file system.
    #[error("label {label:?} is {len} {unit} long; {fs} allows at most 11")]
    TooLong {
        /// The label as given.
        label: LabelText,
        /// Its length in the unit the file system counts.
        len: usize,
        /// "UTF-16 code units" or "bytes".
        unit: &'static str,
        /// File system name.
        fs: &'static str,
    },
    /// A character the file system does not allow.
    #[error("label {label:?} contains {ch:?} (U+{code:04X}), which {fs} labels cannot hold; not allowed: {forbidden}")]
    Forbidden {
        /// The label as given.
        label: LabelText,
        /// The offending character.
        ch: char,
        /// Its code point.
        code: u32,
        /// File system name.
        fs: &'static str,
        /// Description of the forbidden set.
        forbidden: &'static str,
    },
    /// FAT labels are stored in an OEM code page; we accept ASCII only.
    #[error("label {label:?} contains the non-ASCII character {ch:?}; {fs} labels are limited to ASCII here (the on-disk code page is not portable); use exFAT for Unicode labels")]
    NonAscii {
        /// The label as given.
        label: LabelText,
        /// The offending character.
        ch: char,
        /// File system name (FAT12, FAT16 or FAT32).
        fs: &'static str,
    },
    /// FAT labels may not start with a space.
    #[error("{fs} label {label:?} starts with a space, which FAT does not allow")]
    LeadingSpace {
        /// The label as given.
        label: LabelText,
        /// File system name (FAT12, FAT16 or FAT32).
        fs: &'static str,
    },
}

const EXFAT_FORBIDDEN: &str = "control characters U+0000..U+001F and \" * / : < > ? \\ |";
const FAT_FORBIDDEN: &str =
    "control characters and \" * + , . / : ; < = > ? [ \\ ] |, and characters outside ASCII";

/// An exFAT label's UTF-16 code units (at most 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExfatUnits {
    units: [u16; 11],
    len: u8,
}

impl ExfatUnits {
    /// The code units.
    pub fn units(&self) -> &[u16] {
        &self.units[..usize::from(self.len)]
    }
}

impl core::ops::Deref for ExfatUnits {
    type Target = [u16];
    fn deref(&self) -> &[u16] {
        self.units()
    }
}

/// A validated label in the form its file system stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodedLabel {
    /// exFAT: up to 11 UTF-16 code units.
    Exfat(ExfatUnits),
    /// FAT12, FAT16 and FAT32: 11 bytes, upper-cased and space padded.
    Fat32([u8; 11]),
}

/// Bytes of `b` without its trailing spaces.
fn trimmed_len(b: &[u8]) -> usize {
    b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1)
}

/// Validates an exFAT label and returns its UTF-16 code units (at most 11).
///
/// # Errors
///
/// [`LabelError`] for a forbidden character (control characters and
/// `" * / : < > ? \ |`) or more than 11 UTF-16 units.
pub fn exfat_label(label: &str) -> Result<ExfatUnits, LabelError> {
    exfat_units(&LabelText::new(label))
}

/// [`exfat_label`] of a kept label.
pub(crate) fn exfat_units(text: &LabelText) -> Result<ExfatUnits, LabelError> {
    let too_long = |len| LabelError::TooLong {
        label: *text,
        len,
        unit: "UTF-16 code units",
        fs: "exFAT",
    };
    let len = text.utf16_len();
    if text.is_truncated() {
        return Err(too_long(len));
    }
    for ch in text.chars() {
        if u32::from(ch) < 0x20
            || matches!(ch, '"' | '*' | '/' | ':' | '<' | '>' | '?' | '\\' | '|')
        {
            return Err(LabelError::Forbidden {
                label: *text,
                ch,
                code: u32::from(ch),
                fs: "exFAT",
                forbidden: EXFAT_FORBIDDEN,
            });
        }
    }
    if len > 11 {
        return Err(too_long(len));
    }
    let mut units = ExfatUnits {
        units: [0; 11],
        // At most 11, checked above.
        len: u8::try_from(len).unwrap_or(11),
    };
    let mut at = 0;
    for ch in text.chars() {
        for &u in ch.encode_utf16(&mut [0; 2]).iter() {
            units.units[at] = u;
            at += 1;
        }
    }
    Ok(units)
}

/// Validates the label of a FAT volume (`fs`: FAT12, FAT16 or FAT32, named
/// in the errors) and returns the 11 on-disk bytes (upper-cased, space
/// padded). Lower-case letters are upper-cased, as Windows does.
///
/// # Errors
///
/// [`LabelError`] for a character FAT labels cannot hold (non-ASCII,
/// control characters, `" * + , . / : ; < = > ? [ \ ] |`), a leading
/// space, or more than 11 bytes.
pub fn fat_label(label: &str, fs: crate::FsKind) -> Result<[u8; 11], LabelError> {
    fat_bytes(&LabelText::new(label), fs, false)
}

/// [`fat_label`] of a kept label; `keep_case` stores lower-case letters as
/// given (mkfs.fat's way) instead of upper-casing them.
pub(crate) fn fat_bytes(
    text: &LabelText,
    fs: crate::FsKind,
    keep_case: bool,
) -> Result<[u8; 11], LabelError> {
    let fs = fs.display_name();
    let len = text.trimmed_len();
    let too_long = LabelError::TooLong {
        label: *text,
        len,
        unit: "bytes",
        fs,
    };
    // A longer label is kept whole up to its trailing spaces, or too long.
    if text.is_truncated() && len > 11 {
        return Err(too_long);
    }
    for ch in text.chars() {
        if !ch.is_ascii() {
            return Err(LabelError::NonAscii {
                label: *text,
                ch,
                fs,
            });
        }
        let forbidden = matches!(
            ch,
            '"' | '*'
                | '+'
                | ','
                | '.'
                | '/'
                | ':'
                | ';'
                | '<'
                | '='
                | '>'
                | '?'
                | '['
                | '\\'
                | ']'
                | '|'
        );
        if u32::from(ch) < 0x20 || ch == '\x7f' || forbidden {
            return Err(LabelError::Forbidden {
                label: *text,
                ch,
                code: u32::from(ch),
                fs,
                forbidden: FAT_FORBIDDEN,
            });
        }
    }
    if len > 11 {
        return Err(too_long);
    }
    let trimmed = &text.bytes()[..len];
    if trimmed.first() == Some(&b' ') {
        return Err(LabelError::LeadingSpace { label: *text, fs });
    }
    let mut out = [b' '; 11];
    for (dst, b) in out.iter_mut().zip(trimmed) {
        *dst = if keep_case {
            *b
        } else {
            b.to_ascii_uppercase()
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FsKind;
    #[allow(unused_imports)]
    use std::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };

    #[test]
    fn exfat_labels() {
        assert_eq!(exfat_label("STICK").map(|u| u.len()), Ok(5));
        assert_eq!(exfat_label("Größe Daten").map(|u| u.len()), Ok(11));
        assert!(matches!(
            exfat_label("twelve chars"),
            Err(LabelError::TooLong { len: 12, .. })
        ));
        // A surrogate pair counts as two units: 6 emoji = 12 units.
        assert!(matches!(
            exfat_label("😀😀😀😀😀😀"),
            Err(LabelError::TooLong { len: 12, .. })
        ));
        assert!(exfat_label("😀😀😀😀😀").is_ok());
        for bad in [
            "a/b", "a:b", "a*b", "a?b", "a\"b", "a<b", "a>b", "a\\b", "a|b", "a\tb",
        ] {
            assert!(
                matches!(exfat_label(bad), Err(LabelError::Forbidden { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn fat_labels_name_their_width() {
        let e = fat_label("a.b", FsKind::Fat16).expect_err("dot");
        assert!(e.to_string().contains("FAT16 labels"), "{e}");
        let e = fat_label(" x", FsKind::Fat12).expect_err("space");
        assert!(e.to_string().starts_with("FAT12 label"), "{e}");
        let e = fat_label("Größe", FsKind::Fat12).expect_err("ASCII");
        assert!(e.to_string().contains("FAT12 labels are limited"), "{e}");
        let e = fat_label("TWELVE CHARS", FsKind::Fat16).expect_err("long");
        assert!(e.to_string().contains("FAT16 allows"), "{e}");
    }

    #[test]
    fn fat32_labels() {
        assert_eq!(
            &fat_label("stick", FsKind::Fat32).unwrap_or([0; 11]),
            b"STICK      "
        );
        assert_eq!(
            &fat_label("MY DISK 01", FsKind::Fat32).unwrap_or([0; 11]),
            b"MY DISK 01 "
        );
        assert!(matches!(
            fat_label("TWELVE CHARS", FsKind::Fat32),
            Err(LabelError::TooLong { .. })
        ));
        assert!(matches!(
            fat_label("Größe", FsKind::Fat32),
            Err(LabelError::NonAscii { .. })
        ));
        assert!(matches!(
            fat_label(" X", FsKind::Fat32),
            Err(LabelError::LeadingSpace { .. })
        ));
        for bad in ["A.B", "A+B", "A,B", "A;B", "A=B", "A[B", "A]B", "A/B"] {
            assert!(
                matches!(
                    fat_label(bad, FsKind::Fat32),
                    Err(LabelError::Forbidden { .. })
                ),
                "{bad}"
            );
        }
    }
}
