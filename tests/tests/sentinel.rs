//! Sentinel test through the library: format a disk pre-filled with 0xD1 and
//! check that every region the layout says it writes holds exactly what it
//! should, and every byte of the regions it says it leaves alone is still
//! 0xD1. Catches regions the writer forgets and writes outside the plan.

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::{plan, write_volume, FormatOptions, FsKind, Layout, Medium, RegionKind};
use mkfs_alloc_ondisk::exfat::upcase::compressed_table;
use mkfs_alloc_tests::checks::{check_exfat_boot_region, check_fat32_boot, check_small_fat_boot};
use mkfs_alloc_tests::sizes::options;
use mkfs_alloc_tests::{smallest_valid, ExfatBoot, ExfatRootInfo, TempDir, KIB, MIB, SENTINEL};
use std::path::Path;

/// Formats a sentinel-filled in-memory disk; returns the layout and bytes.
fn format(opts: &FormatOptions, sector: u32, size: u64) -> (Layout, Vec<u8>) {
    let layout = plan(opts, &Medium::whole(size, sector).expect("medium")).expect("valid options");
    let mut disk =
        MemDisk::filled(sector, size / u64::from(sector), SENTINEL).expect("memory disk");
    write_volume(&layout, &mut disk, &mut |_, _| {}).expect("write");
    (layout, disk.into_inner())
}

fn range(r: (u64, u64)) -> std::ops::Range<usize> {
    usize::try_from(r.0).expect("fits")..usize::try_from(r.0 + r.1).expect("fits")
}

fn all(bytes: &[u8], v: u8) -> bool {
    bytes.iter().all(|&b| b == v)
}

/// Checks common to both file systems: tiling, untouched regions still
/// sentinel, no sentinel-only sector in a written region.
fn check_regions(layout: &Layout, img: &[u8]) {
    let mut at = 0;
    for r in layout.regions() {
        assert_eq!(r.offset, at, "regions do not tile the volume: {r:?}");
        at += r.len;
        let bytes = &img[range((r.offset, r.len))];
        if r.written {
            let bps = layout.sector_size().get() as usize;
            for (i, s) in bytes.chunks(bps).enumerate() {
                assert!(!all(s, SENTINEL), "{:?} sector {i} was not written", r.kind);
            }
        } else if let Some(p) = bytes.iter().position(|&b| b != SENTINEL) {
            panic!(
                "{:?} is not written by the plan, yet byte {} changed",
                r.kind,
                r.offset + p as u64
            );
        }
    }
    assert_eq!(at, layout.volume_bytes());
    // Past the volume (whole sectors only): untouched.
    assert!(all(
        &img[range((
            layout.volume_bytes(),
            img.len() as u64 - layout.volume_bytes()
        ))],
        SENTINEL
    ));
}

fn region(layout: &Layout, kind: RegionKind, index: u32) -> (u64, u64) {
    let regions = layout.regions();
    let r = regions
        .iter()
        .find(|r| r.kind == kind && r.index == index)
        .unwrap_or_else(|| panic!("no {kind:?} region"));
    (r.offset, r.len)
}

fn exfat_contents(layout: &Layout, img: &[u8], file: &Path) {
    std::fs::write(file, img).expect("write image file");
    let boot = check_exfat_boot_region(file);
    let bps = boot.bytes_per_sector();
    let c = boot.cluster_size();
    assert_eq!(u64::from(boot.fat_offset) * bps, layout.fat_offset());
    assert_eq!(u64::from(boot.fat_length) * bps, layout.fat_bytes());
    assert_eq!(
        u64::from(boot.cluster_heap_offset) * bps,
        layout.data_offset()
    );
    assert_eq!(boot.cluster_count, layout.cluster_count().get());
    assert_eq!(boot.volume_length * bps, layout.volume_bytes());
    let sector0 = &img[..bps as usize];
    assert!(all(&sector0[120..510], 0xF4), "boot code is not F4 filled");
    assert!(all(&sector0[512..], 0), "excess space of sector 0");
    for s in [9u64, 10] {
        assert!(all(&img[range((s * bps, bps))], 0), "sector {s}");
    }
    for kind in [RegionKind::Padding, RegionKind::HeapPadding] {
        if let Some(r) = layout.regions().iter().find(|r| r.kind == kind) {
            assert!(
                all(&img[range((r.offset, r.len))], 0),
                "{kind:?} is not zero"
            );
        }
    }
    let root = ExfatRootInfo::read(file, 0, &boot);
    assert!(root.clean_end);
    let (bm_cluster, bm_len) = root.bitmap.expect("bitmap entry");
    let (up_cluster, up_len, up_sum) = root.upcase.expect("up-case entry");
    assert_eq!(
        bm_len,
        u64::from(boot.cluster_count).div_ceil(8),
        "bitmap DataLength"
    );
    let clusters_of = |len: u64| u32::try_from(len.div_ceil(c)).expect("fits");
    let chains = [
        (bm_cluster, clusters_of(bm_len)),
        (up_cluster, clusters_of(up_len)),
        (boot.root_cluster, 1),
    ];
    // Contiguous, in this order, from cluster 2.
    assert_eq!(chains[0].0, 2);
    assert_eq!(chains[1].0, chains[0].0 + chains[0].1);
    assert_eq!(chains[2].0, chains[1].0 + chains[1].1);
    let used = chains.iter().map(|c| c.1).sum::<u32>();
    assert_eq!(
        u64::from(boot.percent_in_use),
        u64::from(used) * 100 / u64::from(boot.cluster_count)
    );

    // FAT: media entries, one real chain each, then free.
    let fat = &img[range((layout.fat_offset(), layout.fat_bytes()))];
    let entry =
        |i: usize| u32::from_le_bytes([fat[4 * i], fat[4 * i + 1], fat[4 * i + 2], fat[4 * i + 3]]);
    assert_eq!((entry(0), entry(1)), (0xFFFF_FFF8, 0xFFFF_FFFF));
    for &(first, n) in &chains {
        for k in first..first + n {
            let want = if k == first + n - 1 {
                0xFFFF_FFFF
            } else {
                k + 1
            };
            assert_eq!(entry(k as usize), want, "FAT entry {k}");
        }
    }
    let after = 4 * (2 + used as usize);
    assert!(
        all(&fat[after..], 0),
        "FAT entries past the system chains are not free"
    );

    // Bitmap: exactly the system clusters are marked.
    let bitmap = &img[range((boot.cluster_offset(bm_cluster), u64::from(chains[0].1) * c))];
    for k in 0..used as usize + 16 {
        let bit = bitmap[k / 8] >> (k % 8) & 1;
        assert_eq!(
            bit == 1,
            k < used as usize,
            "bitmap bit of cluster {}",
            k + 2
        );
    }
    assert!(
        all(&bitmap[(used as usize).div_ceil(8)..], 0),
        "bitmap bytes past the used clusters"
    );

    // Up-case table, then zeros to the end of its clusters.
    let table = compressed_table();
    let up = &img[range((boot.cluster_offset(up_cluster), u64::from(chains[1].1) * c))];
    assert!(up[..table.len()] == table[..], "up-case table bytes");
    assert!(all(&up[table.len()..], 0));
    assert_eq!(up_sum, mkfs_alloc_tests::exfat_checksum(&table));

    // Root: label, bitmap, up-case (and GUID) entries, then zeros.
    let mut types = vec![0x83, 0x81, 0x82];
    if layout.volume_guid().is_some() {
        types.push(0xA0);
    }
    assert_eq!(root.entry_types, types);
    assert_eq!(
        root.label.as_deref().unwrap_or(""),
        layout.label().unwrap_or("")
    );
    let root_bytes = &img[range((boot.cluster_offset(boot.root_cluster), c))];
    assert!(
        all(&root_bytes[32 * types.len()..], 0),
        "root directory after the entries"
    );
}

fn fat32_contents(layout: &Layout, img: &[u8], file: &Path) {
    std::fs::write(file, img).expect("write image file");
    let b = check_fat32_boot(file);
    let bps = u64::from(b.bytes_per_sector);
    assert_eq!(b.fat_offset(), layout.fat_offset());
    assert_eq!(b.fat_bytes(), layout.fat_bytes());
    assert_eq!(b.data_offset(), layout.data_offset());
    assert_eq!(b.cluster_count(), u64::from(layout.cluster_count()));
    assert_eq!(u64::from(b.tot_sec32) * bps, layout.volume_bytes());
    // Reserved sectors other than boot, FSInfo and their backups are zero;
    // so is everything in those sectors past their 512-byte structure.
    for s in 0..u64::from(b.reserved_sectors) {
        let sector = &img[range((s * bps, bps))];
        match s {
            0 | 1 | 6 | 7 => assert!(all(&sector[512..], 0), "sector {s} past 512 bytes"),
            _ => assert!(all(sector, 0), "reserved sector {s} is not zero"),
        }
    }
    // Both FATs identical; entries past the root's are free.
    let f0 = &img[range((b.fat_offset(), b.fat_bytes()))];
    let f1 = &img[range((b.fat_offset() + b.fat_bytes(), b.fat_bytes()))];
    assert!(f0 == f1, "the two FATs differ");
    assert!(
        all(&f0[12..], 0),
        "FAT entries past the root cluster are not free"
    );
    // Root directory cluster: the label entry if any, then zeros.
    let root = &img[range(region(layout, RegionKind::RootDirectory, 0))];
    let skip = match &layout.label() {
        Some(_) => {
            assert_eq!(
                &root[..11],
                &b.volume_label,
                "label entry name equals the BPB label"
            );
            assert_eq!(root[11], 0x08, "label entry attribute");
            32
        }
        None => 0,
    };
    assert!(all(&root[skip..], 0), "root directory after its entries");
}

fn small_fat_contents(layout: &Layout, img: &[u8], file: &Path) {
    std::fs::write(file, img).expect("write image file");
    let b = check_small_fat_boot(file);
    let bps = u64::from(b.bytes_per_sector);
    assert_eq!(b.fat_offset(), layout.fat_offset());
    assert_eq!(b.fat_bytes(), layout.fat_bytes());
    assert_eq!(b.data_offset(), layout.data_offset());
    assert_eq!(b.cluster_count(), u64::from(layout.cluster_count()));
    assert_eq!(b.total_sectors() * bps, layout.volume_bytes());
    assert!(
        all(&img[512..bps as usize], 0),
        "boot sector past 512 bytes"
    );
    // Both FATs identical; entries past 0 and 1 are free.
    let f0 = &img[range((b.fat_offset(), b.fat_bytes()))];
    let f1 = &img[range((b.fat_offset() + b.fat_bytes(), b.fat_bytes()))];
    assert!(f0 == f1, "the two FATs differ");
    let head = if layout.fs() == FsKind::Fat12 { 3 } else { 4 };
    assert!(all(&f0[head..], 0), "FAT entries past 1 are not free");
    // The fixed root directory: where the BPB says, the label entry, zeros.
    let (off, len) = region(layout, RegionKind::RootDirectory, 0);
    assert_eq!((off, len), (b.root_offset(), b.root_bytes()));
    let root = &img[range((off, len))];
    let skip = match &layout.label() {
        Some(_) => {
            assert_eq!(&root[..11], &img[43..54], "label entry = BPB label");
            assert_eq!(root[11], 0x08, "label entry attribute");
            32
        }
        None => {
            assert_eq!(&img[43..54], b"NO NAME    ");
            0
        }
    };
    assert!(all(&root[skip..], 0), "root directory after its entries");
}

fn case(fs: FsKind, cluster: u64, sector: u32, size: u64, label: Option<&str>, guid: bool) {
    let mut opts = options(fs, cluster).volume_guid(guid);
    if let Some(l) = label {
        opts = opts.label(l);
    }
    let (layout, img) = format(&opts, sector, size);
    check_regions(&layout, &img);
    let tmp = TempDir::new("sentinel");
    let file = tmp.join("img");
    assert_eq!(layout.fs(), fs);
    match fs {
        FsKind::Exfat => exfat_contents(&layout, &img, &file),
        FsKind::Fat32 => fat32_contents(&layout, &img, &file),
        FsKind::Fat16 | FsKind::Fat12 => small_fat_contents(&layout, &img, &file),
    }
    // The independent checker agrees on the result.
    match fs {
        // exfat_contents checked the GUID entry; fsck.exfat 1.2.0 does not
        // know it.
        FsKind::Exfat if guid => {
            mkfs_alloc_tests::checks::fsck_exfat_clean_with_volume_guid(&file);
        }
        FsKind::Exfat => {
            mkfs_alloc_tests::checks::fsck_exfat_clean(&file);
        }
        _ => {
            mkfs_alloc_tests::checks::fsck_fat_clean(&file);
        }
    }
    let _ = ExfatBoot::read; // keep the decoder in use for both branches
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_4k_64mib_labelled() {
    case(
        FsKind::Exfat,
        4 * KIB,
        512,
        64 * MIB + 3 * 512,
        Some("Sentinel ü"),
        true,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_512_smallest() {
    case(
        FsKind::Exfat,
        512,
        512,
        smallest_valid(FsKind::Exfat, 512, 512),
        None,
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_512_clusters_multi_cluster_bitmap() {
    // 100 MiB at 512 B: a 25 KiB bitmap over 50 clusters, up-case over 12.
    case(FsKind::Exfat, 512, 512, 100 * MIB, None, false);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_32k_4k_sectors() {
    case(
        FsKind::Exfat,
        32 * KIB,
        4096,
        96 * MIB + 4096,
        Some("X"),
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_1m_clusters() {
    case(FsKind::Exfat, MIB, 512, 200 * MIB, None, true);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_512_labelled() {
    case(
        FsKind::Fat32,
        512,
        512,
        64 * MIB + 512,
        Some("SENTINEL"),
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_512_smallest_unlabelled() {
    case(
        FsKind::Fat32,
        512,
        512,
        smallest_valid(FsKind::Fat32, 512, 512),
        None,
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat32_4k_4k_sectors() {
    case(
        FsKind::Fat32,
        4 * KIB,
        4096,
        smallest_valid(FsKind::Fat32, 4 * KIB, 4096) + 4096,
        Some("FOUR K"),
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat16_4k_labelled() {
    case(
        FsKind::Fat16,
        4 * KIB,
        512,
        64 * MIB + 512,
        Some("SMALL FAT"),
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat16_512_smallest() {
    case(
        FsKind::Fat16,
        512,
        512,
        smallest_valid(FsKind::Fat16, 512, 512),
        None,
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat16_4k_sectors_odd_root() {
    // 4096-byte sectors: 128 root entries per sector; the alignment gap is odd,
    // so the root directory grows by one sector.
    let opts = options(FsKind::Fat16, 8 * KIB)
        .root_entries(100)
        .expect("root entries")
        .label("ODD");
    let (layout, img) = format(&opts, 4096, 100 * MIB);
    check_regions(&layout, &img);
    let tmp = TempDir::new("sentinel");
    let file = tmp.join("img");
    small_fat_contents(&layout, &img, &file);
    mkfs_alloc_tests::checks::fsck_fat_clean(&file);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat12_smallest_and_largest_cluster_count() {
    case(
        FsKind::Fat12,
        512,
        512,
        smallest_valid(FsKind::Fat12, 512, 512),
        None,
        false,
    );
    // 4,068 clusters of 4 KiB (FAT12's last count) with a label.
    case(
        FsKind::Fat12,
        4 * KIB,
        512,
        18_320 * KIB,
        Some("TWELVE"),
        false,
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat12_floppy_sized_and_odd_fat_chunk() {
    // 2880 sectors: the FAT12 FAT is 9 sectors, 4,608 bytes (not a multiple of 3).
    let opts = options(FsKind::Fat12, 512)
        .root_entries(224)
        .expect("root entries")
        .align(512);
    let (layout, img) = format(&opts, 512, 2880 * 512);
    check_regions(&layout, &img);
    let tmp = TempDir::new("sentinel");
    let file = tmp.join("img");
    small_fat_contents(&layout, &img, &file);
    mkfs_alloc_tests::checks::fsck_fat_clean(&file);
}
