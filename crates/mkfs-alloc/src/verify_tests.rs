use super::*;
use mkfs_alloc_blockio::MemDisk;

const BS: u64 = 512;

fn disk(mib: u64) -> Recording<MemDisk> {
    Recording::new(MemDisk::new(512, mib * PIECE / BS).expect("disk"))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
        .collect()
}

fn verify(digest: &WriteDigest, d: &mut MemDisk, zeros: &[Range<u64>]) -> VerifyReport {
    digest.verify(d, zeros, &mut |_, _| {}).expect("verify")
}

/// Whole pieces, parts of pieces, zeros over data and data over zeros,
/// rewrites: what was written last reads back; every corruption is found.
#[test]
fn every_written_byte_is_checked_and_the_last_write_wins() {
    let mut rec = disk(16);
    rec.write_zeroes(0, 4 * PIECE / BS).expect("zero");
    rec.write_blocks(1, &pattern(1024, 1)).expect("w");
    rec.write_blocks(2 * PIECE / BS - 1, &pattern(PIECE as usize + 1024, 2))
        .expect("w");
    rec.write_blocks(8 * PIECE / BS + 1, &pattern(3 * PIECE as usize - 1024, 3))
        .expect("w");
    rec.write_blocks(8 * PIECE / BS + 4, &[0; 1024]).expect("w"); // zeros over data
    rec.write_blocks(9 * PIECE / BS, &pattern(PIECE as usize, 4))
        .expect("w"); // a whole piece again
    rec.write_blocks(15 * PIECE / BS, &pattern(512, 5))
        .expect("w");
    let (mut d, digest) = rec.into_parts();
    let r = verify(&digest, &mut d, &[]);
    assert_eq!((r.mismatches, r.unverifiable_bytes), (0, 0), "{r:?}");
    assert_eq!(r.bytes_verified, 7 * PIECE - 512, "{r:?}");
    assert!(digest.entries() < 16, "{}", digest.entries());
    // One flipped byte anywhere written is found, once.
    for at in [
        0,
        512,
        600,
        2 * PIECE - 1,
        8 * PIECE + 2600,
        9 * PIECE + 7,
        15 * PIECE + 511,
    ] {
        let mut copy = MemDisk::new(512, d.num_blocks()).expect("disk");
        copy.write_blocks(0, d.as_bytes()).expect("copy");
        let mut block = vec![0u8; 512];
        copy.read_blocks(at / BS, &mut block).expect("r");
        block[(at % BS) as usize] ^= 0x40;
        copy.write_blocks(at / BS, &block).expect("w");
        let r = verify(&digest, &mut copy, &[]);
        assert_eq!(r.mismatches, 1, "byte {at}: {r:?}");
        assert_eq!(r.first_mismatch, Some(at / PIECE * PIECE));
    }
    // Bytes never written are not compared.
    let mut copy = MemDisk::new(512, d.num_blocks()).expect("disk");
    copy.write_blocks(0, d.as_bytes()).expect("copy");
    copy.write_blocks(12 * PIECE / BS, &[0xFF; 512]).expect("w");
    assert_eq!(verify(&digest, &mut copy, &[]).mismatches, 0);
    // ... unless the format relies on them being zero.
    let map = [Range {
        start: 12 * PIECE,
        end: 12 * PIECE + 4096,
    }];
    let r = verify(&digest, &mut copy, &map);
    assert_eq!(r.mismatches, 1, "{r:?}");
}

/// A piece made whole by several writes (and zeros) keeps no bytes.
#[test]
fn pieces_written_in_parts_are_folded_into_their_crc() {
    let mut rec = disk(4);
    let data = pattern(PIECE as usize, 9);
    let half = PIECE as usize / 2;
    rec.write_blocks(PIECE / BS, &data[..half]).expect("w");
    rec.write_zeroes((PIECE + half as u64) / BS, 8).expect("z");
    rec.write_blocks((PIECE + half as u64 + 4096) / BS, &data[half + 4096..])
        .expect("w");
    assert!(matches!(rec.digest().pieces.get(&1), Some(Piece::Whole(_))));
    let (mut d, digest) = rec.into_parts();
    assert_eq!(verify(&digest, &mut d, &[]).mismatches, 0);
}

/// A partial rewrite of a whole piece is counted, never reported as good.
#[test]
fn a_partial_rewrite_of_a_whole_piece_is_unverifiable() {
    let mut rec = disk(2);
    rec.write_blocks(0, &pattern(PIECE as usize, 1)).expect("w");
    rec.write_blocks(3, &pattern(512, 2)).expect("w");
    let (mut d, digest) = rec.into_parts();
    let r = verify(&digest, &mut d, &[]);
    assert_eq!(r.unverifiable_bytes, PIECE);
    assert_eq!(r.mismatches, 0);
}

#[test]
fn zero_ranges_merge() {
    let mut d = WriteDigest::default();
    d.record_zeros(0, 4096);
    d.record_zeros(4096, 4096);
    d.record_zeros(10 * PIECE, PIECE);
    d.record_zeros(2048, 100 * PIECE);
    assert_eq!(d.zeros.len(), 1, "{:?}", d.zeros);
    assert_eq!(d.zeros.get(&0), Some(&(2048 + 100 * PIECE)));
}

/// Every format the facade writes reads back checkable to the last byte:
/// nothing is rewritten in part after a piece was folded.
#[test]
fn formats_are_verifiable_whole() {
    use crate::layout::FsKind;
    use crate::partition::TableKind;
    use crate::MediumOptions;
    let cases = [
        (FsKind::Exfat, TableKind::Gpt, 64),
        (FsKind::Exfat, TableKind::None, 64),
        (FsKind::Fat32, TableKind::Mbr, 64),
        (FsKind::Fat16, TableKind::Mbr, 32),
        (FsKind::Fat12, TableKind::None, 8),
    ];
    for (fs, table, mib) in cases {
        for old in [0u8, 0xEE] {
            let disk = MemDisk::filled(512, mib * PIECE / BS, old).expect("disk");
            let mut rec = Recording::new(disk);
            let plan = MediumOptions::new()
                .fs(fs)
                .table(table)
                .plan_for(&rec)
                .expect("plan");
            plan.format(&mut rec, &mut |_, _| {}).expect("format");
            let (mut d, digest) = rec.into_parts();
            let r = verify(&digest, &mut d, &[]);
            let what = format!("{fs:?} {table:?} over {old:#x}: {r:?}");
            assert_eq!((r.mismatches, r.unverifiable_bytes), (0, 0), "{what}");
            assert!(r.bytes_verified > 0, "{what}");
            // A bit flipped in the first sector written is found.
            let first = digest.pieces.keys().next().copied().unwrap_or(0) * PIECE;
            let mut block = vec![0u8; 512];
            d.read_blocks(first / BS, &mut block).expect("r");
            block[100] ^= 4;
            d.write_blocks(first / BS, &block).expect("w");
            assert_eq!(verify(&digest, &mut d, &[]).mismatches, 1, "{what}");
        }
    }
}
