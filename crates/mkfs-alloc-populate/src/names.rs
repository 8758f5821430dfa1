//! Names: comparisons through the up-case table, Windows-style 8.3 aliases
//! for VFAT long names, and why a host name is not Unicode. Which
//! characters a name may hold is the one rule of
//! [`mkfs_alloc_ondisk::name`], shared with `advise`.
//!
//! Sources: exFAT specification §7.4
//! (up-case table), fatgen103 §7 ("Basis-Name Generation Algorithm",
//! "Numeric-Tail Generation Algorithm"); the NT case bits 0x08 (base in
//! lower case) and 0x10 (extension in lower case) of DIR_NTRes as Windows NT
//! and mtools use them.

use std::sync::OnceLock;

use mkfs_alloc_ondisk::exfat::UpcaseTable;
use mkfs_alloc_ondisk::name::{
    is_8_3_with_case_bits, short_char_ok as short_ok, split_8_3 as split_shape,
};
#[cfg(windows)]
use mkfs_alloc_ondisk::name::{name_fault, NameFault};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;

/// The longest name FAT long names and exFAT store, in UTF-16 code units.
pub const MAX_NAME_UNITS: usize = 255;

/// NT case bit: the 8.3 base is lower case.
pub const NT_LOWER_BASE: u8 = 0x08;
/// NT case bit: the 8.3 extension is lower case.
pub const NT_LOWER_EXT: u8 = 0x10;

/// The unpaired surrogate in a host name that is not valid Unicode, if
/// that is why: a Windows name is UTF-16 whose surrogates need not pair; a
/// Linux name may hold one in its WTF-8 (or CESU-8) form, the bytes
/// `ED A0..BF 80..BF`. Such names are refused, as is any other name that is
/// not valid UTF-8: a lossy conversion would store another name than the
/// host's (and could make two names equal).
pub fn lone_surrogate(name: &OsStr) -> Option<u16> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        name.as_bytes().windows(3).find_map(|w| {
            (w[0] == 0xED && (0xA0..=0xBF).contains(&w[1]) && (0x80..=0xBF).contains(&w[2]))
                .then(|| 0xD000 | (u16::from(w[1] & 0x3F) << 6) | u16::from(w[2] & 0x3F))
        })
    }
    #[cfg(windows)]
    {
        use std::os::windows::ffi::OsStrExt;
        match name_fault(name.encode_wide()) {
            Some(NameFault::UnpairedSurrogate(u)) => Some(u),
            _ => None,
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = name;
        None
    }
}

/// The name's UTF-16 code units up-cased through the exFAT up-case table
/// (the comparison both file systems make between names of one directory).
pub fn upcased_units(name: &str) -> Vec<u16> {
    name.encode_utf16().map(upcase).collect()
}

/// How a name is stored on FAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortForm {
    /// A short entry alone, with NT case bits: `README.TXT`, `readme.txt`.
    Only {
        /// The 11-byte 8.3 name.
        name: [u8; 11],
        /// NT case bits.
        case: u8,
    },
    /// Long-name entries plus this short name (the name differs from it in
    /// case only: `ReadMe.txt` → `README.TXT`).
    CaseOnly([u8; 11]),
    /// Long-name entries plus a generated alias with a numeric tail.
    Tail,
}

/// Splits at the single dot of an 8.3-shaped name; `None` if the name is
/// not 8.3-shaped (ignoring case).
fn split_8_3(name: &str) -> Option<(&[u8], &[u8])> {
    split_shape(name.as_bytes())
}

fn pack(base: &[u8], ext: &[u8]) -> [u8; 11] {
    mkfs_alloc_ondisk::fat::pack_short_name(base, ext)
}

/// How `name` is stored on FAT (before aliases are made unique).
pub fn short_form(name: &str) -> ShortForm {
    let Some((base, ext)) = split_8_3(name) else {
        return ShortForm::Tail;
    };
    let packed = pack(base, ext);
    if is_8_3_with_case_bits(name.as_bytes()) {
        let lower = |p: &[u8]| p.iter().any(u8::is_ascii_lowercase);
        let mut case = 0;
        if lower(base) {
            case |= NT_LOWER_BASE;
        }
        if lower(ext) {
            case |= NT_LOWER_EXT;
        }
        ShortForm::Only { name: packed, case }
    } else {
        ShortForm::CaseOnly(packed)
    }
}

/// The basis name of fatgen103's algorithm for a name that needs a tail:
/// upper case, characters a short name cannot hold replaced by `_`, spaces
/// and embedded dots removed, leading dots stripped, base up to 8 and
/// extension (after the last dot) up to 3 characters.
fn basis(name: &str) -> (Vec<u8>, Vec<u8>) {
    let conv = |c: char| -> Option<u8> {
        if c == ' ' || c == '.' {
            None
        } else if c.is_ascii() && short_ok(c as u8) {
            Some((c as u8).to_ascii_uppercase())
        } else {
            Some(b'_')
        }
    };
    let trimmed = name.trim_start_matches(['.', ' ']);
    let (base_part, ext_part) = match trimmed.rfind('.') {
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => (trimmed, ""),
    };
    let mut base: Vec<u8> = base_part.chars().filter_map(conv).take(8).collect();
    let ext: Vec<u8> = ext_part.chars().filter_map(conv).take(3).collect();
    if base.is_empty() {
        base.push(b'_');
    }
    (base, ext)
}

/// Assigns unique short names within one directory, in the order names are
/// given (the sorted order), as Windows does: names whose short form needs
/// no tail keep it; the others get `BASE~N.EXT` with the smallest N not yet
/// used in the directory.
#[derive(Debug, Default)]
pub struct AliasSet {
    used: HashSet<[u8; 11]>,
    next: HashMap<[u8; 11], u32>,
}

impl AliasSet {
    /// A set that already holds the short names of every name that keeps
    /// its own (call with all names of the directory first).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> AliasSet {
        let mut s = AliasSet::default();
        for n in names {
            match short_form(n) {
                ShortForm::Only { name, .. } | ShortForm::CaseOnly(name) => {
                    s.used.insert(name);
                }
                ShortForm::Tail => {}
            }
        }
        s
    }

    /// The short name and NT case bits of `name`, and whether it needs
    /// long-name entries.
    pub fn alias(&mut self, name: &str) -> ([u8; 11], u8, bool) {
        match short_form(name) {
            ShortForm::Only { name, case } => (name, case, false),
            ShortForm::CaseOnly(n) => (n, 0, true),
            ShortForm::Tail => {
                let (base, ext) = basis(name);
                let key = pack(&base, &ext);
                let mut n = self.next.get(&key).copied().unwrap_or(1);
                loop {
                    let tail = format!("~{n}");
                    let keep = 8usize.saturating_sub(tail.len()).min(base.len());
                    let mut b = base[..keep].to_vec();
                    b.extend_from_slice(tail.as_bytes());
                    let cand = pack(&b, &ext);
                    n += 1;
                    if self.used.insert(cand) {
                        self.next.insert(key, n);
                        return (cand, 0, true);
                    }
                }
            }
        }
    }
}

/// Checksum of an 11-byte short name, stored in each of its long-name entries.
pub use mkfs_alloc_ondisk::fat::short_name_checksum;

/// The up-case mapping of one code unit through the recommended up-case
/// table (built once).
pub fn upcase(unit: u16) -> u16 {
    static TABLE: OnceLock<UpcaseTable> = OnceLock::new();
    TABLE.get_or_init(UpcaseTable::recommended).upcase(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: &[u8; 11]) -> String {
        String::from_utf8_lossy(n).into_owned()
    }

    #[test]
    fn short_forms() {
        assert_eq!(
            short_form("README.TXT"),
            ShortForm::Only {
                name: *b"README  TXT",
                case: 0
            }
        );
        assert_eq!(
            short_form("readme.txt"),
            ShortForm::Only {
                name: *b"README  TXT",
                case: NT_LOWER_BASE | NT_LOWER_EXT
            }
        );
        assert_eq!(
            short_form("readme.TXT"),
            ShortForm::Only {
                name: *b"README  TXT",
                case: NT_LOWER_BASE
            }
        );
        assert_eq!(
            short_form("ReadMe.txt"),
            ShortForm::CaseOnly(*b"README  TXT")
        );
        assert_eq!(short_form("long name.txt"), ShortForm::Tail);
        assert_eq!(short_form("a.b.c"), ShortForm::Tail);
        assert_eq!(short_form("NAME."), ShortForm::Tail);
        assert_eq!(short_form("é"), ShortForm::Tail);
        assert_eq!(short_form("abcdefghi"), ShortForm::Tail);
    }

    #[test]
    fn aliases_like_windows() {
        let names = [
            "Long File Name.txt",
            "Long File Name 2.txt",
            "LONGFI~1.TXT",
            "ReadMe.txt",
            "a.b.c.txt",
            ".bashrc",
            "Ünïcode.dat",
        ];
        let mut set = AliasSet::new(names);
        let got: Vec<(String, u8, bool)> = names
            .iter()
            .map(|n| {
                let (a, c, l) = set.alias(n);
                (s(&a), c, l)
            })
            .collect();
        assert_eq!(got[0], ("LONGFI~2TXT".to_string(), 0, true));
        assert_eq!(got[1], ("LONGFI~3TXT".to_string(), 0, true));
        assert_eq!(got[2], ("LONGFI~1TXT".to_string(), 0, false));
        assert_eq!(got[3], ("README  TXT".to_string(), 0, true));
        assert_eq!(got[4], ("ABC~1   TXT".to_string(), 0, true));
        assert_eq!(got[5], ("BASHRC~1   ".to_string(), 0, true));
        assert_eq!(got[6], ("_N_COD~1DAT".to_string(), 0, true));
    }

    #[test]
    fn tails_grow_past_nine() {
        let names: Vec<String> = (0..12)
            .map(|i| format!("very long name {i:02}.txt"))
            .collect();
        let mut set = AliasSet::new(names.iter().map(String::as_str));
        let aliases: Vec<String> = names.iter().map(|n| s(&set.alias(n).0)).collect();
        assert_eq!(aliases[0], "VERYLO~1TXT");
        assert_eq!(aliases[8], "VERYLO~9TXT");
        assert_eq!(aliases[9], "VERYL~10TXT");
        let unique: HashSet<&String> = aliases.iter().collect();
        assert_eq!(unique.len(), 12);
    }

    #[test]
    fn checksum() {
        // fatgen103 ChkSum of "README  TXT", computed by hand with the
        // rotate-right-and-add loop.
        let mut sum = 0u8;
        for &b in b"README  TXT" {
            sum = (if sum & 1 != 0 { 0x80u8 } else { 0 })
                .wrapping_add(sum >> 1)
                .wrapping_add(b);
        }
        assert_eq!(short_name_checksum(b"README  TXT"), sum);
    }

    #[test]
    fn surrogates_and_upcase() {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let name = |b: &[u8]| lone_surrogate(OsStr::from_bytes(b));
            assert_eq!(name(b"sur\xED\xA0\x80"), Some(0xD800));
            assert_eq!(name(b"x\xED\xBF\xBFy"), Some(0xDFFF));
            assert_eq!(name(b"bad\xFF"), None);
            // U+D7FF is the last code point before the surrogates: valid.
            assert_eq!(name("\u{D7FF}".as_bytes()), None);
        }
        assert_eq!(upcased_units("straße"), upcased_units("STRAßE"));
        assert_eq!(upcased_units("é"), upcased_units("É"));
    }
}
