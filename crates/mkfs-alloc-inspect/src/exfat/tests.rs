//! Unit tests of the parent module.

#![allow(clippy::unwrap_used)]

use super::*;

/// An entry set for `name` with the given stream fields.
pub(crate) fn file_set(name: &str, attr: u16, first: u32, len: u64, flags: u8) -> Vec<u8> {
    let units: Vec<u16> = name.encode_utf16().collect();
    let names = units.len().div_ceil(15);
    let mut set = vec![0u8; 32 * (2 + names)];
    set[0] = TYPE_FILE;
    set[1] = u8::try_from(1 + names).unwrap();
    set[4..6].copy_from_slice(&attr.to_le_bytes());
    let s = &mut set[32..64];
    s[0] = TYPE_STREAM;
    s[1] = 0x01 | flags;
    s[3] = u8::try_from(units.len()).unwrap();
    s[8..16].copy_from_slice(&len.to_le_bytes());
    s[20..24].copy_from_slice(&first.to_le_bytes());
    s[24..32].copy_from_slice(&len.to_le_bytes());
    for (i, u) in units.iter().enumerate() {
        let e = 64 + 32 * (i / 15);
        set[e] = TYPE_NAME;
        let o = e + 2 + 2 * (i % 15);
        set[o..o + 2].copy_from_slice(&u.to_le_bytes());
    }
    let c = set_checksum(&set);
    set[2..4].copy_from_slice(&c.to_le_bytes());
    set
}

#[test]
fn parses_sets_across_pieces() {
    let long = "a rather long file name, longer than fifteen units.txt";
    let mut dir = file_set(long, 0x20, 5, 100_000, 0);
    dir.extend(file_set("sub", ATTR_DIRECTORY, 9, 4096, 0x02));
    dir.extend([0u8; 64]);
    let mut p = ExfatDirParser::new();
    let mut out = Vec::new();
    for piece in dir.chunks(32) {
        p.feed(piece, &mut out);
    }
    assert_eq!(out.len(), 3, "{out:?}");
    let ExfatItem::File(f) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(
        (
            f.name.as_str(),
            f.first_cluster,
            f.data_length,
            f.no_fat_chain
        ),
        (long, 5, 100_000, false)
    );
    let ExfatItem::File(d) = &out[1] else {
        panic!()
    };
    assert!(d.is_dir() && d.no_fat_chain);
    assert_eq!(out[2], ExfatItem::End);
    assert!(p.ended());
    assert_eq!(p.entries(), u64::try_from(dir.len() / 32 - 2).unwrap());
}

#[test]
fn damaged_sets_are_reported_not_trusted() {
    let mut set = file_set("x", 0, 5, 10, 0);
    set[40] ^= 1;
    let out = parse_directory(&set);
    assert!(
        matches!(&out[0], ExfatItem::Bad(m) if m.contains("checksum")),
        "{out:?}"
    );
    // A set cut short by a primary entry: the primary still counts.
    let mut cut = file_set("abc", 0, 5, 10, 0);
    cut.truncate(64);
    cut.extend(file_set("def", 0, 6, 10, 0));
    let out = parse_directory(&cut);
    assert!(matches!(&out[0], ExfatItem::Bad(_)));
    assert!(matches!(&out[1], ExfatItem::File(f) if f.name == "def"));
    // Absurd secondary counts.
    let out = parse_directory(&[
        TYPE_FILE, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0,
    ]);
    assert!(matches!(&out[0], ExfatItem::Bad(_)));
}
