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
        let mut copy = flipped(&d, at);
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

/// A copy of `d` with the bit `0x40` of byte `at` flipped.
fn flipped(d: &MemDisk, at: u64) -> MemDisk {
    let mut copy = MemDisk::new(512, d.num_blocks()).expect("disk");
    copy.write_blocks(0, d.as_bytes()).expect("copy");
    let mut block = vec![0u8; 512];
    copy.read_blocks(at / BS, &mut block).expect("r");
    block[(at % BS) as usize] ^= 0x40;
    copy.write_blocks(at / BS, &block).expect("w");
    copy
}

/// Partial rewrites of a piece folded into its CRC (data and zeros, inside
/// one piece and across two) follow it into the CRC: nothing unverifiable,
/// every byte still checked, a flipped byte found in or beside them.
#[test]
fn a_partial_rewrite_of_a_folded_piece_stays_checkable() {
    let mut rec = disk(4);
    rec.write_blocks(0, &pattern(2 * PIECE as usize, 1))
        .expect("w");
    rec.write_blocks(3, &pattern(512, 2)).expect("w");
    rec.write_zeroes(10, 4).expect("z");
    rec.write_blocks(PIECE / BS - 2, &pattern(2048, 3))
        .expect("w");
    rec.write_blocks(0, &pattern(512, 4)).expect("w");
    assert!(matches!(rec.digest().pieces.get(&0), Some(Piece::Whole(_))));
    let (mut d, digest) = rec.into_parts();
    let r = verify(&digest, &mut d, &[]);
    assert_eq!((r.mismatches, r.unverifiable_bytes), (0, 0), "{r:?}");
    assert_eq!(r.bytes_verified, 2 * PIECE, "{r:?}");
    for at in [
        0,
        3 * BS + 7,
        10 * BS + 1,
        200_000,
        PIECE - 1,
        PIECE + 1000,
        PIECE + 5000,
    ] {
        let r = verify(&digest, &mut flipped(&d, at), &[]);
        assert_eq!(r.mismatches, 1, "byte {at}: {r:?}");
        assert_eq!(r.first_mismatch, Some(at / PIECE * PIECE), "byte {at}");
    }
}

/// A target that did not keep a folded piece before it was rewritten in
/// part: the piece read back before the rewrite differs from its CRC, a
/// mismatch (never taken as good).
#[test]
fn a_piece_lost_before_its_partial_rewrite_is_found() {
    let mut rec = disk(2);
    rec.write_blocks(0, &pattern(PIECE as usize, 1)).expect("w");
    let mut block = vec![0u8; 512];
    rec.inner_mut().read_blocks(7, &mut block).expect("r");
    block[9] ^= 1;
    rec.inner_mut().write_blocks(7, &block).expect("w"); // behind the record's back
    rec.write_blocks(3, &pattern(512, 2)).expect("w");
    let (mut d, digest) = rec.into_parts();
    let r = verify(&digest, &mut d, &[]);
    assert_eq!((r.mismatches, r.unverifiable_bytes), (1, 0), "{r:?}");
}

/// A target that reads one byte wrong (from the start, or only at the
/// read-back): a partial rewrite of a folded piece over that byte or
/// elsewhere does not hide it (the piece read back before the rewrite is
/// checked against its CRC, never used to patch it).
#[test]
fn a_byte_read_wrong_under_a_partial_rewrite_is_found() {
    struct FlipsOnRead(MemDisk, u64, bool);
    impl BlockIo for FlipsOnRead {
        fn block_size(&self) -> u32 {
            self.0.block_size()
        }
        fn num_blocks(&self) -> u64 {
            self.0.num_blocks()
        }
        fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
            self.0.read_blocks(lba, dst)?;
            let start = lba * BS;
            if self.2 && (start..start + dst.len() as u64).contains(&self.1) {
                dst[(self.1 - start) as usize] ^= 0x40;
            }
            Ok(())
        }
        fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
            self.0.write_blocks(lba, src)
        }
        fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
            self.0.write_zeroes(lba, count)
        }
        fn flush(&mut self) -> Result<(), IoError> {
            self.0.flush()
        }
    }
    for (at, from_start) in [100, 3 * BS + 5, 300_000]
        .into_iter()
        .flat_map(|a| [(a, true), (a, false)])
    {
        let disk = FlipsOnRead(
            MemDisk::new(512, 2 * PIECE / BS).expect("disk"),
            at,
            from_start,
        );
        let mut rec = Recording::new(disk);
        rec.write_zeroes(0, PIECE / BS).expect("z");
        rec.write_blocks(40, &pattern(FOLD as usize * 2, 1))
            .expect("w"); // folds piece 0
        rec.write_blocks(0, &pattern(8 * BS as usize, 2))
            .expect("w"); // over byte `at` or not
        let (mut d, digest) = rec.into_parts();
        d.2 = true;
        let r = digest.verify(&mut d, &[], &mut |_, _| {}).expect("verify");
        let what = format!("byte {at}, read wrong from the start: {from_start}");
        assert_eq!(
            (r.mismatches, r.unverifiable_bytes),
            (1, 0),
            "{what}: {r:?}"
        );
        assert_eq!(r.first_mismatch, Some(0), "{what}");
    }
}

/// A digest told of a partial rewrite of a folded piece without the bytes
/// replaced counts the piece as unverifiable, never as good.
#[test]
fn a_partial_rewrite_without_the_replaced_bytes_is_unverifiable() {
    let mut d = WriteDigest::default();
    d.record(0, &pattern(PIECE as usize, 1));
    d.record(3 * BS, &pattern(512, 2));
    let mut disk = MemDisk::new(512, PIECE / BS).expect("disk");
    let r = verify(&d, &mut disk, &[]);
    assert_eq!((r.unverifiable_bytes, r.mismatches), (PIECE, 0), "{r:?}");
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
            let mut plan = MediumOptions::new()
                .fs(fs)
                .table(table)
                .plan_for(&rec)
                .expect("plan");
            plan.format(&mut rec).expect("format");
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

/// Without a read-back only the bytes are counted: writes pass through,
/// nothing is kept (no CRC computed).
#[test]
fn counting_keeps_the_bytes_written_and_nothing_else() {
    let mut rec = Recording::counting(MemDisk::new(512, 4 * PIECE / BS).expect("disk"));
    rec.write_blocks(0, &pattern(PIECE as usize + 512, 7))
        .expect("w");
    rec.write_zeroes(4096, 8).expect("zero");
    assert_eq!(rec.digest().bytes_written(), PIECE + 512 + 8 * BS);
    assert_eq!(rec.digest().entries(), 0);
    let (mut d, _) = rec.into_parts();
    let mut back = vec![0u8; PIECE as usize + 512];
    d.read_blocks(0, &mut back).expect("read");
    assert_eq!(back, pattern(PIECE as usize + 512, 7));
}
