//! SD cards of 2 GiB and more (SDHC: FAT32, SDXC: exFAT), too large for
//! the golden images: their layouts pinned to numbers worked out apart from
//! the code, by the SD Specifications Part 2 (File System Specification)
//! procedure as SD Card Formatter and sdFormatLinux apply it:
//!
//! - FAT32 (SDHC, BU 8,192 sectors, 64 sectors per cluster): the partition
//!   at 1 BU; SF = ceil(TS / SC * 4 / 512); RSC = BU - (2 * SF) mod BU
//!   (+ BU if under 9); MAX = (TS - NOM - RSC - 2 * SF) / SC; SF' =
//!   ceil((2 + MAX) * 4 / 512): SF' > SF moves RSC on by a BU, SF' < SF
//!   retries with SF - 1, SF' = SF is the layout. The numbers below were
//!   computed by a separate transcription of these steps (Python);
//! - FAT12/16 (SDSC, under 2 GiB; the golden images hold two whole
//!   cards): RSC 1, 512 root entries (32 sectors); SF = ceil(TS / SC *
//!   bits / 4096); the partition start NOM so that NOM + 1 + 2 * SF + 32
//!   is a BU multiple (more than 1 BU); MAX = (TS - NOM - 1 - 2 * SF - 32)
//!   / SC; SF' = ceil((2 + MAX) * bits / 4096): SF' > SF moves NOM on by a
//!   BU, SF' < SF retries with SF = SF', SF' = SF is the layout (computed
//!   by the same separate transcription);
//! - exFAT (SDXC): the partition at 1 BU, the FAT at BU/2 for BU/2, the
//!   heap at BU, (TS - 2 * BU) / SC clusters, EraseBlockSize BU/2.

use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::sd::{card_layout, SD_SECTOR};
use mkfs_alloc_layout::{plan, FormatOptions, FsChoice, FsKind, Medium, Timestamp};

fn sd_opts(fs: FsChoice) -> FormatOptions {
    FormatOptions::new().sd(true).fs(fs).pinned(
        0x5D5D_0001,
        Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
    )
}

/// (card sectors, file system, sectors per cluster, partition start,
/// reserved sectors / FatOffset, sectors per FAT, data region from the
/// partition start, clusters).
type Pinned = (u64, FsKind, u64, u64, u64, u64, u64, u64);

#[rustfmt::skip]
const CARDS: &[Pinned] = &[
    // 8 GiB exactly.
    (16_777_216, FsKind::Fat32, 64, 8192, 4098, 2047, 8192, 261_888),
    // A card of 15,523,840 sectors (7.4 GiB).
    (15_523_840, FsKind::Fat32, 64, 8192, 4404, 1894, 8192, 242_304),
    // A card of 62,333,952 sectors (29.7 GiB): the padding passes a BU.
    (62_333_952, FsKind::Fat32, 64, 8192, 1170, 7607, 16_384, 973_584),
    // 128 GiB exactly (2^28 sectors): BU 32,768, 256 sectors per cluster.
    (1 << 28, FsKind::Exfat, 256, 32_768, 16_384, 16_384, 32_768, 1_048_320),
    // 256 GiB: BU 65,536, 512 sectors per cluster.
    (1 << 29, FsKind::Exfat, 512, 65_536, 32_768, 32_768, 65_536, 1_048_320),
];

#[test]
fn sdhc_and_sdxc_cards_get_the_specified_layout() {
    for &(total, fs, spc, start, fat_offset, fat_sectors, data, clusters) in CARDS {
        let (l, _) = card_layout(&sd_opts(FsChoice::Auto), total).expect("a card's layout");
        let what = format!("{total} sectors: {l:?}");
        assert_eq!((l.fs, l.sec_per_clus), (fs, spc), "{what}");
        assert_eq!(
            (l.part_start, l.part_sectors),
            (start, total - start),
            "{what}"
        );
        assert_eq!(
            (l.fat_offset, l.fat_sectors),
            (fat_offset, fat_sectors),
            "{what}"
        );
        assert_eq!((l.data_offset, l.cluster_count), (data, clusters), "{what}");
        let (mbr_type, erase) = match fs {
            // Within the CHS limit of 1024 x 255 x 63 sectors: 0x0B.
            FsKind::Fat32 if total <= 16_450_560 => (0x0B, 0),
            FsKind::Fat32 => (0x0C, 0),
            _ => (0x07, fat_sectors * SD_SECTOR),
        };
        assert_eq!(
            (l.mbr_type, l.erase_block_bytes),
            (mbr_type, erase),
            "{what}"
        );
        assert_eq!((l.heads, l.sectors_per_track), (255, 63), "{what}");

        // The plan of the card's partition: the same numbers in bytes.
        let medium = Medium::partition(
            (total - start) * SD_SECTOR,
            SD_SECTOR as u32,
            start * SD_SECTOR,
        )
        .expect("medium");
        let p = plan(&sd_opts(FsChoice::Auto), &medium).expect("the card's plan");
        assert_eq!(p.fs(), fs, "{what}");
        assert_eq!(p.cluster_size().bytes(), spc * SD_SECTOR, "{what}");
        assert_eq!(p.fat_offset(), fat_offset * SD_SECTOR, "{what}");
        assert_eq!(p.fat_bytes(), fat_sectors * SD_SECTOR, "{what}");
        assert_eq!(p.data_offset(), data * SD_SECTOR, "{what}");
        assert_eq!(u64::from(p.cluster_count().get()), clusters, "{what}");
        let cluster = spc * SD_SECTOR;
        match p.geometry() {
            Geometry::Fat(g) => {
                assert_eq!(
                    (g.cluster, u64::from(g.rsvd)),
                    (cluster, fat_offset),
                    "{what}"
                );
            }
            Geometry::Exfat(g) => {
                assert_eq!(u64::from(g.heap_offset), data, "{what}");
                assert_eq!(g.volume_sectors, total - start, "{what}");
                // exFAT §7.1: a bit per cluster, in whole clusters; the
                // up-case table's 5,836 bytes (§7.2) in whole clusters.
                let bitmap = clusters.div_ceil(8);
                assert_eq!((g.cluster, g.bitmap_bytes), (cluster, bitmap), "{what}");
                let system = (g.bitmap_clusters, g.upcase_clusters, g.root_clusters);
                let want = (bitmap.div_ceil(cluster), 5836u64.div_ceil(cluster), 1);
                assert_eq!(system, (want.0 as u32, want.1 as u32, want.2), "{what}");
            }
        }
    }
}

/// (card sectors, file system, sectors per cluster, partition start,
/// sectors per FAT, clusters, MBR type, CHS heads and sectors per track).
type Sdsc = (u64, FsKind, u64, u64, u64, u64, u8, (u8, u8));

/// SDSC cards where the FAT's first estimate is not its size: the steps
/// above from another estimate end elsewhere (a smaller FAT, a later
/// partition start).
#[rustfmt::skip]
const SDSC: &[Sdsc] = &[
    (10_968, FsKind::Fat12, 16, 25, 3, 681, 0x01, (2, 32)),
    (155_998, FsKind::Fat16, 32, 119, 20, 4868, 0x06, (8, 32)),
    (2_092_570, FsKind::Fat16, 32, 223, 256, 65_368, 0x06, (64, 63)),
    (4_181_880, FsKind::Fat16, 64, 223, 256, 65_329, 0x06, (128, 63)),
];

#[test]
fn sdsc_cards_get_the_specified_layout() {
    for &(total, fs, spc, start, fat, clusters, mbr_type, chs) in SDSC {
        let (l, _) = card_layout(&sd_opts(FsChoice::Auto), total).expect("a card's layout");
        let what = format!("{total} sectors: {l:?}");
        assert_eq!(
            (l.fs, l.sec_per_clus, l.part_start),
            (fs, spc, start),
            "{what}"
        );
        assert_eq!(
            (l.rsvd, l.fat_sectors, l.root_sectors),
            (1, fat, 32),
            "{what}"
        );
        assert_eq!(
            (l.data_offset, l.cluster_count),
            (1 + 2 * fat + 32, clusters),
            "{what}"
        );
        assert_eq!(
            (l.mbr_type, (l.heads, l.sectors_per_track)),
            (mbr_type, chs),
            "{what}"
        );
    }
}

#[test]
fn fat32_on_an_sdxc_card_when_asked() {
    // 64 GiB (BU 32,768): FAT32 with 64 KiB clusters, by the FAT32 steps
    // above with SC 128: RSC 16,390, SF 8,189, 1,048,064 clusters.
    for asked in [FsChoice::Fixed(FsKind::Fat32), FsChoice::Fat] {
        let (l, _) = card_layout(&sd_opts(asked), 1 << 27).expect("FAT32 on SDXC");
        let got = (l.fs, l.sec_per_clus, l.part_start, l.rsvd, l.fat_sectors);
        assert_eq!(got, (FsKind::Fat32, 128, 32_768, 16_390, 8189), "{asked:?}");
        assert_eq!(
            (l.cluster_count, l.mbr_type),
            (1_048_064, 0x0C),
            "{asked:?}"
        );
    }
    // exFAT asked of an SDHC card: refused.
    assert!(card_layout(&sd_opts(FsChoice::Fixed(FsKind::Exfat)), 1 << 24).is_err());
}
