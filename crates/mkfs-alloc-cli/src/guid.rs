//! `--volume-guid`: the exFAT volume GUID read as mkfs-alloc shows it, the
//! GUID structure's mixed-endian text (its first three groups stored
//! little-endian, as GPT's), as Windows and our reports show GUIDs.

use mkfs_alloc::partition::Guid;

/// What a GUID's text must look like, for error messages.
pub const FORMS: &str =
    "32 hexadecimal digits, or 8-4-4-4-12 digits with dashes (e.g. 6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b)";

/// mkfs-alloc's form (as `mkfs_alloc::report::guid_text` prints it) to
/// the entry's bytes.
pub fn parse(s: &str) -> Option<[u8; 16]> {
    Some(Guid::parse(s.trim())?.to_mixed_endian())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_the_entrys_byte_order() {
        let s = "00112233-4455-6677-8899-AABBCCDDEEFF";
        let g = parse(s).expect("ours");
        assert_eq!(
            g,
            [
                0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD,
                0xEE, 0xFF
            ]
        );
        assert_eq!(mkfs_alloc::report::guid_text(&g), s);
        assert_eq!(parse(&format!(" {s}\n")), Some(g));
        assert_eq!(parse("0x1"), None);
    }
}
