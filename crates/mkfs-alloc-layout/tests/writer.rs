//! Writer tests on memory disks: write order, sentinel coverage, bounded
//! work on a huge volume, block-size checks.

use mkfs_alloc_blockio::{zero_blocks, BlockIo, Counting, IoError, IoOp, MemDisk};
use mkfs_alloc_layout::units::{GIB, KIB, MIB, TIB};
use mkfs_alloc_layout::{
    plan, write_volume, write_volume_to, ClusterChoice, FormatOptions, FsChoice, FsKind, Layout,
    Medium, Prior, WriteError,
};

fn layout(fs: FsKind, cluster: u64, size: u64, bps: u32) -> Layout {
    let o = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(0xC0FF_EE00)
        .label("TEST");
    plan(&o, &Medium::whole(size, bps).expect("medium")).expect("valid plan")
}

fn no_progress() -> impl FnMut(u64, u64) {
    |_, _| {}
}

#[test]
fn previously_used_target_is_invalidated_first_and_sector_0_written_last() {
    for (fs, cluster, size) in [
        (FsKind::Exfat, 4 * KIB, 260 * MIB),
        (FsKind::Fat32, 4 * KIB, 260 * MIB),
        (FsKind::Fat16, 8 * KIB, 260 * MIB),
        (FsKind::Fat12, 4 * KIB, 12 * MIB),
    ] {
        let l = layout(fs, cluster, size, 512);
        let disk = MemDisk::filled(512, l.volume_bytes() / 512, 0xD1).expect("disk");
        let mut dev = Counting::new(disk, true);
        write_volume(&l, &mut dev, &mut no_progress()).expect("write");
        let log = dev.log().to_vec();
        // First: zero everything before the FAT (old boot sectors), then flush.
        assert_eq!(log[0], (IoOp::Zero, 0, l.fat_offset() / 512), "{fs}");
        assert_eq!(log[1].0, IoOp::Flush, "{fs}");
        // Last: sector 0, then a flush; a flush also precedes the boot area writes.
        let n = log.len();
        assert_eq!(log[n - 2], (IoOp::Write, 0, 1), "{fs}");
        assert_eq!(log[n - 1].0, IoOp::Flush, "{fs}");
        assert!(
            log[1..n - 2]
                .iter()
                .all(|&(op, lba, _)| op == IoOp::Flush || lba != 0),
            "{fs}: sector 0 touched early"
        );
        let boot_writes_start = log[..n - 1]
            .iter()
            .rposition(|e| e.0 == IoOp::Flush)
            .expect("flush");
        for &(op, lba, _) in &log[boot_writes_start + 1..n - 2] {
            assert_eq!(op, IoOp::Write);
            assert!(
                lba * 512 < l.fat_offset(),
                "{fs}: only boot-area writes after the metadata flush"
            );
        }
    }
}

/// Only the flushes the crash-safe order needs: two on a target that holds
/// no file system (fresh, or probed and wiped by the caller), three when it
/// may hold one. Before: three on a fresh target, four otherwise.
#[test]
fn flushes_only_where_the_order_needs_them() {
    let flushes = |dev: &Counting<MemDisk>| dev.log().iter().filter(|e| e.0 == IoOp::Flush).count();
    for fs in [FsKind::Exfat, FsKind::Fat32] {
        let l = layout(fs, 4 * KIB, 256 * MIB + 4 * MIB, 512);
        let blocks = l.volume_bytes() / 512;
        let mut fresh = Counting::new(MemDisk::new(512, blocks).expect("disk"), true);
        write_volume(&l, &mut fresh, &mut no_progress()).expect("write");
        assert_eq!(flushes(&fresh), 2, "{fs}: fresh target");
        assert_eq!(
            fresh.log()[0].0,
            IoOp::Write,
            "{fs}: no flush before the first write"
        );

        let disk = MemDisk::filled(512, blocks, 0xD1).expect("disk");
        let mut wiped = Counting::new(disk, true);
        write_volume_to(&l, &mut wiped, Prior::NoFileSystem, &mut no_progress()).expect("write");
        assert_eq!(flushes(&wiped), 2, "{fs}: no file system left");
        assert_eq!(
            wiped.log()[1].0,
            IoOp::Write,
            "{fs}: no flush before the first write"
        );

        // Wiped: the caller zeroed the volume's first MiB (the only way to
        // say so is to do it); not zeroed again.
        let mut disk = MemDisk::filled(512, blocks, 0xD1).expect("disk");
        let first_mib = zero_blocks(&mut disk, 0, MIB / 512).expect("zero");
        let mut wiped_mib = Counting::new(disk, true);
        let report = write_volume_to(
            &l,
            &mut wiped_mib,
            Prior::Wiped(first_mib),
            &mut no_progress(),
        )
        .expect("write");
        assert_eq!(flushes(&wiped_mib), 2, "{fs}: wiped");
        assert!(
            wiped_mib
                .log()
                .iter()
                .all(|&(op, lba, _)| op != IoOp::Zero || lba * 512 >= MIB),
            "{fs}: the wiped first MiB was zeroed again: {:?}",
            &wiped_mib.log()[..4]
        );
        assert!(report.bytes_skipped >= MIB.min(l.fat_offset()), "{fs}");

        // Evidence of other blocks does not stand for the volume's start:
        // the boot area is zeroed as usual.
        let mut disk = MemDisk::filled(512, blocks, 0xD1).expect("disk");
        let elsewhere = zero_blocks(&mut disk, 8, 8).expect("zero");
        let mut other = Counting::new(disk, true);
        write_volume_to(&l, &mut other, Prior::Wiped(elsewhere), &mut no_progress())
            .expect("write");
        assert!(
            other
                .log()
                .iter()
                .any(|&(op, lba, _)| op == IoOp::Zero && lba == 0),
            "{fs}: the boot area was not zeroed"
        );

        let disk = MemDisk::filled(512, blocks, 0xD1).expect("disk");
        let mut unknown = Counting::new(disk, true);
        write_volume(&l, &mut unknown, &mut no_progress()).expect("write");
        assert_eq!(flushes(&unknown), 3, "{fs}: may hold a file system");
        // Every run ends with sector 0 and a flush, and sector 0 is written once.
        for dev in [&fresh, &wiped, &wiped_mib, &unknown] {
            let log = dev.log();
            let n = log.len();
            assert_eq!(log[n - 2], (IoOp::Write, 0, 1), "{fs}");
            assert_eq!(log[n - 1].0, IoOp::Flush, "{fs}");
        }
    }
}

#[test]
fn quick_format_touches_metadata_only() {
    for (fs, cluster, bps) in [
        (FsKind::Exfat, 32 * KIB, 512),
        (FsKind::Exfat, 4 * KIB, 4096),
        (FsKind::Fat32, 4 * KIB, 512),
        (FsKind::Fat32, 4 * KIB, 4096),
        (FsKind::Fat16, 8 * KIB, 512),
        (FsKind::Fat16, 8 * KIB, 4096),
        (FsKind::Fat12, 128 * KIB, 4096),
    ] {
        let l = layout(fs, cluster, 300 * MIB, bps);
        let mut disk = MemDisk::filled(bps, l.volume_bytes() / u64::from(bps), 0xD1).expect("disk");
        write_volume(&l, &mut disk, &mut no_progress()).expect("write");
        let bytes = disk.as_bytes();
        for r in l.regions() {
            let area = &bytes[r.offset as usize..(r.offset + r.len) as usize];
            if r.written {
                // Every sector of a written region was written (no sentinel sector left).
                for (i, s) in area.chunks(bps as usize).enumerate() {
                    assert!(
                        s.iter().any(|&b| b != 0xD1),
                        "{fs} {r:?}: sector {i} still sentinel"
                    );
                }
            } else {
                assert!(area.iter().all(|&b| b == 0xD1), "{fs} {r:?} was touched");
            }
        }
    }
}

#[test]
fn fresh_target_gets_only_nonzero_sectors() {
    let l = layout(FsKind::Exfat, 32 * KIB, GIB, 512);
    let mut dev = Counting::new(MemDisk::new(512, GIB / 512).expect("disk"), false);
    let report = write_volume(&l, &mut dev, &mut no_progress()).expect("write");
    let s = dev.stats();
    assert_eq!(s.bytes_zeroed, 0);
    // Boot regions 2 x 12 sectors, FAT 1 sector, bitmap 1, up-case 12, root 1.
    assert_eq!(s.bytes_written, (24 + 1 + 1 + 12 + 1) * 512);
    assert_eq!(report.bytes_written, s.bytes_written);
}

/// A device that accepts everything and stores nothing: for huge volumes.
struct Null {
    blocks: u64,
    written: u64,
    max_write: usize,
}

impl BlockIo for Null {
    fn block_size(&self) -> u32 {
        512
    }
    fn num_blocks(&self) -> u64 {
        self.blocks
    }
    fn read_blocks(&mut self, _lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        dst.fill(0);
        Ok(())
    }
    fn write_blocks(&mut self, _lba: u64, src: &[u8]) -> Result<(), IoError> {
        self.written += src.len() as u64;
        self.max_write = self.max_write.max(src.len());
        Ok(())
    }
    fn write_zeroes(&mut self, _lba: u64, _count: u64) -> Result<(), IoError> {
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

#[test]
fn one_tib_fat32_at_4k_streams_in_bounded_chunks() {
    // Two 1 GiB FATs: written as generated 1 MiB chunks, never held whole.
    let l = layout(FsKind::Fat32, 4 * KIB, TIB, 512);
    assert!(l.fat_bytes() >= 1000 * MIB, "{}", l.fat_bytes());
    let mut dev = Null {
        blocks: l.volume_bytes() / 512,
        written: 0,
        max_write: 0,
    };
    let mut calls = 0u64;
    let mut last = (0, 0);
    write_volume(&l, &mut dev, &mut |d, t| {
        calls += 1;
        last = (d, t);
    })
    .expect("write");
    assert!(dev.max_write <= 1 << 20, "largest write {}", dev.max_write);
    assert_eq!(last.0, last.1, "progress reaches the total");
    assert!(calls > 10);
}

#[test]
fn block_size_larger_than_sector_is_refused() {
    let l = layout(FsKind::Exfat, 32 * KIB, 64 * MIB, 512);
    let mut disk = MemDisk::new(4096, 64 * MIB / 4096).expect("disk");
    let e = write_volume(&l, &mut disk, &mut no_progress()).expect_err("refused");
    assert!(matches!(
        e,
        WriteError::BlockSize {
            device: 4096,
            sector: 512
        }
    ));
    assert!(disk.as_bytes().iter().all(|&b| b == 0));
    let mut small = MemDisk::new(512, 1024).expect("disk");
    assert!(matches!(
        write_volume(&l, &mut small, &mut no_progress()),
        Err(WriteError::TooSmall { .. })
    ));
}
