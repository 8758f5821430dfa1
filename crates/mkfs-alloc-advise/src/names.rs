//! How many 32-byte directory entries a file name takes on exFAT and FAT32.
//!
//! Sources: exFAT specification §6.3 (File directory entry), §7.6 (Stream
//! Extension), §7.7 (File Name: 15 UTF-16 code units per entry); fatgen103
//! §6 (short entries) and §7 (long-name entries: 13 UTF-16 code units each).

use mkfs_alloc_ondisk::name::str_fault;
use std::ffi::OsStr;

/// UTF-16 code units in one exFAT File Name directory entry.
pub const EXFAT_NAME_UNITS_PER_ENTRY: usize = 15;
/// UTF-16 code units in one FAT long-name (LFN) directory entry.
pub const FAT_LFN_UNITS_PER_ENTRY: usize = 13;
/// Bytes of one directory entry, on both file systems.
pub const DIR_ENTRY_BYTES: u64 = 32;

/// Length of a name in UTF-16 code units, as exFAT and FAT long names store it.
///
/// Names that are not valid UTF-8 are counted after lossy conversion (each
/// invalid byte becomes U+FFFD, one unit), which is what a copy tool that
/// converts names would produce at best.
pub fn utf16_len(name: &OsStr) -> usize {
    let bytes = name.as_encoded_bytes();
    if bytes.is_ascii() {
        return bytes.len();
    }
    name.to_string_lossy().encode_utf16().count()
}

/// exFAT File Name entries for a name: `ceil(units / 15)`, at least 1.
pub fn exfat_name_entries(utf16_units: usize) -> u32 {
    utf16_units.div_ceil(EXFAT_NAME_UNITS_PER_ENTRY).max(1) as u32
}

/// exFAT entries of a whole entry set: File + Stream Extension + File Name entries.
pub fn exfat_entry_set(utf16_units: usize) -> u32 {
    2 + exfat_name_entries(utf16_units)
}

/// FAT long-name entries a name needs besides its short (8.3) entry.
///
/// Model (Windows NT and later, and mtools, which `tests/reality.rs`
/// checks): a name needs no long-name entries when it is a valid 8.3 name
/// whose base and extension are each in one case ([`is_8_3_with_case_bits`]):
/// `README.TXT`, `readme.txt` and `readme.TXT` are stored with the NT case
/// bits of the short entry. Any other name takes `ceil(units / 13)`
/// long-name entries. Linux's vfat driver (default `shortname=mixed`) also
/// writes a long name for lower-case 8.3 names: one entry more per such
/// name than predicted here.
pub fn fat32_lfn_entries(name: &OsStr, utf16_units: usize) -> u32 {
    if is_8_3_with_case_bits(name.as_encoded_bytes()) {
        0
    } else {
        utf16_units.div_ceil(FAT_LFN_UNITS_PER_ENTRY).max(1) as u32
    }
}

pub use mkfs_alloc_ondisk::name::is_8_3_with_case_bits;

/// True if the name cannot be stored as is on exFAT or FAT32: it is not
/// valid Unicode, or holds a character the one name rule refuses
/// ([`mkfs_alloc_ondisk::name`]: control characters, `" * / : < > ? \ |`,
/// Unicode noncharacters, unpaired surrogates). `--rootdir` refuses exactly
/// these names; copy tools reject or rename them.
pub fn is_invalid_on_fat(name: &OsStr) -> bool {
    match name.to_str() {
        Some(s) => str_fault(s).is_some(),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exfat_entry_sets() {
        assert_eq!(exfat_entry_set(1), 3);
        assert_eq!(exfat_entry_set(15), 3);
        assert_eq!(exfat_entry_set(16), 4);
        assert_eq!(exfat_entry_set(255), 2 + 17);
        assert_eq!(exfat_entry_set(0), 3);
    }

    #[test]
    fn short_names() {
        // Checked with mtools 4.0: these get a short entry only (NT case bits).
        for n in [
            "README.TXT",
            "readme.txt",
            "readme.TXT",
            "A",
            "ABCDEFGH.ABC",
            "_x~1.y",
            "A-B_C.{}",
            "12345678.123",
        ] {
            assert!(is_8_3_with_case_bits(n.as_bytes()), "{n}");
        }
        for n in [
            "ReadMe.TXT",
            "Mixed001.Dat",
            "ABCDEFGHI",
            "A.ABCD",
            ".HIDDEN",
            "A.B.C",
            "a b.c",
            "NAME.",
            "",
            "É",
        ] {
            assert!(!is_8_3_with_case_bits(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn lfn_counts() {
        let n = |s: &str| fat32_lfn_entries(OsStr::new(s), utf16_len(OsStr::new(s)));
        assert_eq!(n("README.TXT"), 0);
        assert_eq!(n("readme.txt"), 0);
        assert_eq!(n("Readme.txt"), 1);
        assert_eq!(n("abcdefghijklm"), 1);
        assert_eq!(n("abcdefghijklmn"), 2);
        assert_eq!(n(&"x".repeat(255)), 20);
    }

    #[test]
    fn utf16_units() {
        assert_eq!(utf16_len(OsStr::new("abc")), 3);
        assert_eq!(utf16_len(OsStr::new("é")), 1);
        assert_eq!(utf16_len(OsStr::new("😀")), 2);
    }

    #[test]
    fn invalid_names() {
        assert!(is_invalid_on_fat(OsStr::new("a:b")));
        assert!(is_invalid_on_fat(OsStr::new("what?")));
        assert!(!is_invalid_on_fat(OsStr::new("ok name (1).txt")));
        // Noncharacters: readers disagree on them.
        assert!(is_invalid_on_fat(OsStr::new("nonchar\u{FFFF}.txt")));
        assert!(is_invalid_on_fat(OsStr::new("a\u{FDD0}")));
        assert!(is_invalid_on_fat(OsStr::new("a\u{10FFFE}")));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            // A surrogate in WTF-8 form, and a byte that is no UTF-8 at all.
            assert!(is_invalid_on_fat(OsStr::from_bytes(b"sur\xED\xA0\x80")));
            assert!(is_invalid_on_fat(OsStr::from_bytes(b"bad\xFF")));
        }
    }
}
