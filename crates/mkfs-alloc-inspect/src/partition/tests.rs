//! Unit tests of the parent module.

#![allow(clippy::unwrap_used)]

use super::*;
use mkfs_alloc_blockio::MemDisk;

fn mbr_with(entries: &[(u8, u8, u32, u32)]) -> Vec<u8> {
    let mut s = vec![0u8; 512];
    for (i, &(boot, ty, first, count)) in entries.iter().enumerate() {
        let o = MBR_ENTRIES_OFFSET + 16 * i;
        s[o] = boot;
        s[o + 4] = ty;
        s[o + 8..o + 12].copy_from_slice(&first.to_le_bytes());
        s[o + 12..o + 16].copy_from_slice(&count.to_le_bytes());
    }
    s[510] = 0x55;
    s[511] = 0xAA;
    s
}

#[test]
fn mbr_parsing() {
    let s = mbr_with(&[
        (0x80, 0x0C, 2048, 100_000),
        (0, 0, 0, 0),
        (0, 0x07, 200_000, 10),
    ]);
    let m = parse_mbr(&s).unwrap();
    assert_eq!(
        m.entries,
        vec![(1, 0x80, 0x0C, 2048, 100_000), (3, 0, 0x07, 200_000, 10)]
    );
    assert!(!m.is_protective());
    let mut bad = s.clone();
    bad[MBR_ENTRIES_OFFSET] = 0x12;
    assert!(parse_mbr(&bad).is_none(), "invalid boot indicator");
    let mut nosig = s.clone();
    nosig[511] = 0;
    assert!(parse_mbr(&nosig).is_none());
    assert!(parse_mbr(&mbr_with(&[])).is_none(), "no entries");
    assert!(parse_mbr(&s[..100]).is_none());
}

fn gpt_disk(corrupt_primary: bool) -> MemDisk {
    let ls = 512usize;
    let blocks = 4096u64;
    let mut d = vec![0u8; ls * blocks as usize];
    d[..512].copy_from_slice(&mbr_with(&[(0, 0xEE, 1, (blocks - 1) as u32)]));
    let mut array = vec![0u8; 128 * 128];
    array[..16].copy_from_slice(&[
        0xA2, 0xA0, 0xD0, 0xEB, 0xE5, 0xB9, 0x33, 0x44, 0x87, 0xC0, 0x68, 0xB6, 0xB7, 0x26, 0x99,
        0xC7,
    ]);
    array[16] = 1;
    array[32..40].copy_from_slice(&2048u64.to_le_bytes());
    array[40..48].copy_from_slice(&4000u64.to_le_bytes());
    for (i, c) in "data".encode_utf16().enumerate() {
        array[56 + 2 * i..58 + 2 * i].copy_from_slice(&c.to_le_bytes());
    }
    let acrc = GPT_CRC.checksum(&array);
    let header = |my: u64, alt: u64, entries: u64| {
        let mut h = vec![0u8; 92];
        h[..8].copy_from_slice(b"EFI PART");
        h[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
        h[12..16].copy_from_slice(&92u32.to_le_bytes());
        h[24..32].copy_from_slice(&my.to_le_bytes());
        h[32..40].copy_from_slice(&alt.to_le_bytes());
        h[40..48].copy_from_slice(&34u64.to_le_bytes());
        h[48..56].copy_from_slice(&(blocks - 34).to_le_bytes());
        h[56] = 0x42;
        h[72..80].copy_from_slice(&entries.to_le_bytes());
        h[80..84].copy_from_slice(&128u32.to_le_bytes());
        h[84..88].copy_from_slice(&128u32.to_le_bytes());
        h[88..92].copy_from_slice(&acrc.to_le_bytes());
        let c = GPT_CRC.checksum(&h);
        h[16..20].copy_from_slice(&c.to_le_bytes());
        h
    };
    d[512..604].copy_from_slice(&header(1, blocks - 1, 2));
    d[1024..1024 + array.len()].copy_from_slice(&array);
    let bpos = (blocks as usize - 33) * ls;
    d[bpos..bpos + array.len()].copy_from_slice(&array);
    let hpos = (blocks as usize - 1) * ls;
    d[hpos..hpos + 92].copy_from_slice(&header(blocks - 1, 1, blocks - 33));
    if corrupt_primary {
        d[512 + 60] ^= 1;
    }
    MemDisk::from_vec(512, d).unwrap()
}

#[test]
fn gpt_primary_and_backup() {
    for corrupt in [false, true] {
        let mut d = gpt_disk(corrupt);
        let t = read_partition_table(&mut d).unwrap();
        assert_eq!(t.kind, TableKind::Gpt);
        assert_eq!(t.partitions.len(), 1);
        let p = &t.partitions[0];
        assert_eq!((p.index, p.start, p.size), (1, 2048 * 512, 1953 * 512));
        assert_eq!(p.type_name.as_deref(), Some("Microsoft basic data"));
        assert_eq!(p.name.as_deref(), Some("data"));
        assert_eq!(
            t.warnings.iter().any(|w| w.contains("backup")),
            corrupt,
            "{:?}",
            t.warnings
        );
    }
}

/// sgdisk -v: "Main header: ERROR, Backup header: OK". Before, a primary
/// header without its signature hid the backup ("no valid GPT header,
/// primary or backup").
#[test]
fn a_wiped_primary_header_falls_back_to_the_backup_and_says_so() {
    let mut v = gpt_disk(false).into_inner();
    v[512..1024].fill(0);
    let mut d = MemDisk::from_vec(512, v).unwrap();
    let t = read_partition_table(&mut d).unwrap();
    assert_eq!(t.kind, TableKind::Gpt);
    assert_eq!(t.partitions.len(), 1, "{:?}", t.warnings);
    assert_eq!(t.partitions[0].name.as_deref(), Some("data"));
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("primary GPT is damaged; using the backup GPT header at LBA 4095")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn gpt_header_rejects_huge_arrays() {
    let d = gpt_disk(false).into_inner();
    let mut h = d[512..1024].to_vec();
    h[80..84].copy_from_slice(&1_000_000u32.to_le_bytes());
    h[16..20].fill(0);
    let c = GPT_CRC.checksum(&h[..92]);
    h[16..20].copy_from_slice(&c.to_le_bytes());
    let e = parse_gpt_header(&h, 1).unwrap_err();
    assert!(
        matches!(
            e,
            ParseError::Field {
                field: "NumberOfPartitionEntries",
                position: 80,
                ..
            }
        ),
        "{e}"
    );
}
