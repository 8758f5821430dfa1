//! The medium a plan is made for: a volume size that is not a whole number
//! of sectors is planned as the whole sectors it holds (the bytes after the
//! last sector belong to no sector, so no file system can use them), for a
//! whole medium, a partition and an SD card alike; the plan then writes on
//! a target of exactly those sectors. The firmware path's MBR takes any
//! power-of-two partition alignment from the sector size up.

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::embedded::{plan_medium, Table};
use mkfs_alloc_layout::sd::{card_layout, SD_SECTOR};
use mkfs_alloc_layout::units::{GIB, KIB, MIB};
use mkfs_alloc_layout::{
    plan, write_volume, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium, Timestamp,
};

fn opts(fs: FsKind, cluster: u64) -> FormatOptions {
    FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .label("WHOLE")
        .pinned(
            0x0BAD_F00D,
            Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        )
}

#[test]
fn a_partial_sector_at_the_end_is_not_planned() {
    for (fs, cluster, sectors, bps) in [
        (FsKind::Exfat, 4 * KIB, 16 * 2048, 512),
        (FsKind::Fat32, 512, 80 * 2048, 512),
        (FsKind::Fat16, 4 * KIB, 8192, 4096),
        (FsKind::Fat12, KIB, 4 * 2048, 512),
    ] {
        let whole = sectors * u64::from(bps);
        for medium in [
            |b, s| Medium::whole(b, s).expect("medium"),
            |b, s| Medium::partition(b, s, MIB).expect("medium"),
        ] {
            let exact = plan(&opts(fs, cluster), &medium(whole, bps)).expect("a valid plan");
            for extra in [1, u64::from(bps) - 1] {
                let what = format!("{fs}: {whole} + {extra} bytes in {bps}-byte sectors");
                let l = plan(&opts(fs, cluster), &medium(whole + extra, bps)).expect(&what);
                assert_eq!(l.volume_bytes(), whole, "{what}");
                assert_eq!(l, exact, "{what}");
            }
        }
        // The rounded plan fits a target of exactly its sectors.
        let l = plan(
            &opts(fs, cluster),
            &Medium::whole(whole + 7, bps).expect("medium"),
        )
        .expect("a valid plan");
        let mut disk = MemDisk::new(bps, sectors).expect("a memory disk");
        write_volume(&l, &mut disk, &mut |_, _| {}).expect("fits its sectors");
    }
}

#[test]
fn an_sd_card_volume_is_its_layouts_sectors() {
    // A 4 GiB card (SDHC, FAT32) and a 64 GiB one (SDXC, exFAT): the
    // partition from the layout's start to the card's end, plus a few
    // bytes of no sector.
    for card in [4 * GIB, 64 * GIB] {
        let total = card / SD_SECTOR;
        let o = FormatOptions::new().sd(true).pinned(
            1,
            Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        );
        let (sd, _) = card_layout(&o, total).expect("a card's layout");
        let (start, bytes) = (sd.part_start * SD_SECTOR, sd.part_sectors * SD_SECTOR);
        let exact = plan(&o, &Medium::partition(bytes, 512, start).expect("medium"))
            .expect("the card's plan");
        let l = plan(
            &o,
            &Medium::partition(bytes + 100, 512, start).expect("medium"),
        )
        .expect("the card's plan");
        assert_eq!(l.volume_bytes(), bytes, "{card}");
        assert_eq!(l, exact, "{card}");
    }
}

#[test]
fn a_firmware_mbr_partition_may_start_at_any_aligned_sector() {
    for align in [512, 4 * KIB, MIB] {
        let o = opts(FsKind::Fat16, 2 * KIB).align(align);
        let m = plan_medium::<()>(&o, Table::Mbr, 512, 32 * 2048)
            .unwrap_or_else(|e| panic!("aligned to {align}: {e}"));
        assert_eq!(m.layout().partition_offset(), align);
    }
    let o = opts(FsKind::Fat16, 2 * KIB).align(256);
    assert!(plan_medium::<()>(&o, Table::Mbr, 512, 32 * 2048).is_err());
}
