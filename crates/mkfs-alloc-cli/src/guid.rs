//! The exFAT volume GUID as text: mkfs-alloc's form (the GUID structure's
//! mixed-endian text, as Windows and our reports show GUIDs) and
//! exfatprogs' form (`mkfs.exfat -U`: the sixteen bytes in the order they
//! are written), both to the entry's bytes.

use mkfs_alloc::partition::Guid;

/// The entry's bytes as mkfs-alloc shows them: a GUID structure's text
/// (its first three groups stored little-endian, as GPT's).
pub fn text(g: &[u8; 16]) -> String {
    Guid::from_mixed_endian(*g).to_string()
}

/// What a GUID's text must look like, for error messages.
pub const FORMS: &str =
    "32 hexadecimal digits, or 8-4-4-4-12 digits with dashes (e.g. 6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b)";

/// The sixteen values of `s` in text order: 32 hexadecimal digits, or 36
/// characters with dashes after the 8th, 12th, 16th and 20th digit.
fn digits(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    let hex: Vec<u8> = match b.len() {
        32 => b.to_vec(),
        36 if [8, 13, 18, 23].iter().all(|&i| b[i] == b'-') => b
            .iter()
            .enumerate()
            .filter(|(i, _)| ![8, 13, 18, 23].contains(i))
            .map(|(_, &c)| c)
            .collect(),
        _ => return None,
    };
    if !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut out = [0u8; 16];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *o = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// mkfs-alloc's form (as [`text`] prints it) to the entry's bytes.
pub fn parse(s: &str) -> Option<[u8; 16]> {
    Some(Guid::from_bytes(digits(s.trim())?).to_mixed_endian())
}

/// exfatprogs' form (`mkfs.exfat -U`): the bytes in text order.
pub fn parse_exfatprogs(s: &str) -> Option<[u8; 16]> {
    digits(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_byte_orders() {
        let s = "00112233-4455-6677-8899-AABBCCDDEEFF";
        let g = parse(s).expect("ours");
        assert_eq!(
            g,
            [
                0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD,
                0xEE, 0xFF
            ]
        );
        assert_eq!(text(&g), s);
        assert_eq!(parse(&s.to_lowercase()), Some(g));
        assert_eq!(parse(&s.replace('-', "")), Some(g));
        let e = parse_exfatprogs(s).expect("exfatprogs'");
        assert_eq!(e[0], 0x00);
        assert_eq!(e[15], 0xFF);
        assert_eq!(text(&e), "33221100-5544-7766-8899-AABBCCDDEEFF");
    }

    #[test]
    fn malformed() {
        for s in [
            "",
            "0x1",
            "00112233-4455-6677-8899-AABBCCDDEEF",
            "00112233-4455-6677-8899-AABBCCDDEEFFF",
            "0011223344-55-6677-8899-AABBCCDDEEFF",
            "00112233-4455-6677-8899-AABBCCDDEEFG",
            "+0112233-4455-6677-8899-AABBCCDDEEFF",
            "001122334455667788-99AABBCCDDEEFF",
        ] {
            assert_eq!(parse(s), None, "{s:?}");
            assert_eq!(parse_exfatprogs(s), None, "{s:?}");
        }
    }
}
