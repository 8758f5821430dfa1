//! Unit tests of the parent module.

#![allow(clippy::unwrap_used)]

use super::*;

fn lfn_entries(long: &str, short: &[u8; 11]) -> Vec<u8> {
    let mut units: Vec<u16> = long.encode_utf16().collect();
    units.push(0);
    while units.len() % 13 != 0 {
        units.push(0xFFFF);
    }
    let n = units.len() / 13;
    let sum = lfn_checksum(short);
    let mut out = Vec::new();
    for seq in (1..=n).rev() {
        let mut e = [0u8; 32];
        e[0] = u8::try_from(seq).unwrap() | if seq == n { 0x40 } else { 0 };
        e[11] = ATTR_LONG_NAME;
        e[13] = sum;
        let part = &units[(seq - 1) * 13..seq * 13];
        let offs = [1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30];
        for (u, o) in part.iter().zip(offs) {
            e[o..o + 2].copy_from_slice(&u.to_le_bytes());
        }
        out.extend(e);
    }
    let mut s = [0u8; 32];
    s[..11].copy_from_slice(short);
    s[11] = 0x20;
    s[26] = 7;
    s[28..32].copy_from_slice(&1234u32.to_le_bytes());
    out.extend(s);
    out
}

#[test]
fn long_names() {
    let long = "Ünïcode and a long name that spans two entries.txt";
    let mut dir = lfn_entries(long, b"UNICOD~1TXT");
    let mut plain = [0u8; 32];
    plain[..11].copy_from_slice(b"README  MD ");
    plain[12] = 0x18;
    dir.extend(plain);
    dir.extend([0u8; 32]);
    let out = parse_directory(&dir, true);
    assert_eq!(out.len(), 3, "{out:?}");
    let FatItem::Entry(e) = &out[0] else { panic!() };
    assert_eq!((e.name.as_str(), e.first_cluster, e.size), (long, 7, 1234));
    let FatItem::Entry(e) = &out[1] else { panic!() };
    assert_eq!(e.name, "readme.md");
    assert_eq!(out[2], FatItem::End);
}

#[test]
fn broken_long_names_fall_back_to_short() {
    let mut dir = lfn_entries("some long name.txt", b"SOMELO~1TXT");
    dir[13] ^= 0xFF; // checksum of the first LFN entry
    let out = parse_directory(&dir, false);
    let FatItem::Entry(e) = &out[0] else { panic!() };
    assert_eq!(e.name, "SOMELO~1.TXT");
}

#[test]
fn bpb_checks() {
    let mut s = vec![0u8; 512];
    s[0] = 0xEB;
    s[2] = 0x90;
    s[11..13].copy_from_slice(&512u16.to_le_bytes());
    s[13] = 4;
    s[14] = 1;
    s[16] = 2;
    s[17..19].copy_from_slice(&512u16.to_le_bytes());
    s[19..21].copy_from_slice(&20480u16.to_le_bytes());
    s[21] = 0xF8;
    s[22..24].copy_from_slice(&20u16.to_le_bytes());
    s[38] = 0x29;
    s[39..43].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    s[43..54].copy_from_slice(b"MYDISK     ");
    s[510] = 0x55;
    s[511] = 0xAA;
    let b = parse_boot_sector(&s).unwrap();
    assert_eq!(b.kind, FsKind::Fat16);
    assert_eq!(b.serial, Some(0x1234_5678));
    assert_eq!(b.label.as_deref(), Some("MYDISK"));
    assert_eq!(b.data_sector, 1 + 40 + 32);
    let mut t = s.clone();
    t[13] = 3;
    assert!(parse_boot_sector(&t).is_err());
    let mut t = s.clone();
    t[22] = 1; // 1-sector FAT cannot hold the clusters
    assert!(parse_boot_sector(&t)
        .unwrap_err()
        .to_string()
        .contains("entries"));
    // FAT16 (and FAT12) without a root directory: RootEntCnt 0 is refused,
    // as fsck.fat does ("Root directory has zero size").
    for (kind, tot) in [(FsKind::Fat16, 20480u16), (FsKind::Fat12, 8000)] {
        let mut t = s.clone();
        t[19..21].copy_from_slice(&tot.to_le_bytes());
        assert_eq!(parse_boot_sector(&t).unwrap().kind, kind);
        t[17..19].copy_from_slice(&0u16.to_le_bytes());
        let e = parse_boot_sector(&t).unwrap_err().to_string();
        assert!(e.contains("RootEntCnt 0"), "{kind:?}: {e}");
    }
}
