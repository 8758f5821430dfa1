//! Lengths a volume cannot hold are damage, for directories as for files:
//! an exFAT directory whose DataLength runs past the cluster heap, a
//! chained directory whose chain disagrees with its DataLength, an exFAT file of 2^62 bytes with a FAT chain, a FAT file
//! larger than its volume. Each is reported as damage (the volume's error),
//! the statistics are marked incomplete and never count the impossible bytes.
//!
//! Pure tier: the volumes are written by our own planner into memory and the
//! entries patched by hand.

#![allow(clippy::unwrap_used)]

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_inspect::{inspect, FileStats, InspectOptions, Volume};
use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::{
    plan, write_volume, ClusterChoice, FormatOptions, FsChoice, FsKind, Layout, Medium,
};
use mkfs_alloc_ondisk::exfat::file_attributes::{ARCHIVE, DIRECTORY};
use mkfs_alloc_ondisk::exfat::secondary_flags::{ALLOCATION_POSSIBLE, NO_FAT_CHAIN};
use mkfs_alloc_ondisk::exfat::{
    set_checksum, FileEntry, FileNameEntry, StreamExtensionEntry, TYPE_FILE, TYPE_FILE_NAME,
    TYPE_STREAM_EXTENSION,
};
use mkfs_alloc_ondisk::fat::DirEntry;
use zerocopy::{FromZeros, IntoBytes};

const EIB: u64 = 1 << 60;

/// A freshly formatted volume of `bytes` in memory.
fn format(fs: FsKind, bytes: u64, cluster: u64) -> (Layout, Vec<u8>) {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .serial(1);
    let layout = plan(&opts, &Medium::whole(bytes, 512).expect("medium")).unwrap();
    let mut disk = MemDisk::new(512, bytes / 512).unwrap();
    write_volume(&layout, &mut disk, &mut |_, _| {}).unwrap();
    (layout, disk.into_inner())
}

/// The only volume of `img`, walked with `--files`.
fn walk(img: Vec<u8>) -> Volume {
    let mut disk = MemDisk::from_vec(512, img).unwrap();
    let opts = InspectOptions {
        files: true,
        list_files: true,
        ..InspectOptions::default()
    };
    let mut r = inspect(&mut disk, &opts).unwrap();
    assert_eq!(r.volumes.len(), 1);
    r.volumes.remove(0)
}

fn files(v: &Volume) -> &FileStats {
    v.files.as_ref().unwrap()
}

/// An exFAT entry set (File, Stream Extension, one File Name entry).
fn exfat_set(name: &str, dir: bool, first: u32, len: u64, contiguous: bool) -> Vec<u8> {
    let units: Vec<u16> = name.encode_utf16().collect();
    assert!(units.len() <= 15);
    let mut file = FileEntry::new_zeroed();
    file.entry_type = TYPE_FILE;
    file.secondary_count = 2;
    file.file_attributes = if dir { DIRECTORY } else { ARCHIVE }.into();
    let mut stream = StreamExtensionEntry::new_zeroed();
    stream.entry_type = TYPE_STREAM_EXTENSION;
    stream.general_secondary_flags =
        ALLOCATION_POSSIBLE | if contiguous { NO_FAT_CHAIN } else { 0 };
    stream.name_length = u8::try_from(units.len()).unwrap();
    stream.valid_data_length = len.into();
    stream.data_length = len.into();
    stream.first_cluster = first.into();
    let mut fname = FileNameEntry::new_zeroed();
    fname.entry_type = TYPE_FILE_NAME;
    for (d, &u) in fname.file_name.iter_mut().zip(&units) {
        *d = u.into();
    }
    let mut set = [file.as_bytes(), stream.as_bytes(), fname.as_bytes()].concat();
    file.set_checksum = set_checksum(&set).into();
    set[..32].copy_from_slice(file.as_bytes());
    set
}

/// The stream fields of an entry.
#[derive(Debug, Clone, Copy)]
struct Fields {
    first: u32,
    len: u64,
    contiguous: bool,
}

/// An exFAT volume of 4 MiB with 4 KiB clusters holding `/sub` (one
/// cluster, a FAT chain) with `/sub/inner.txt`, and `/a.txt` (one cluster,
/// a FAT chain); `sub` and `a` may change their stream fields. Returns the
/// image and the cluster count.
fn exfat_volume(sub: impl FnOnce(&mut Fields), a: impl FnOnce(&mut Fields)) -> (Vec<u8>, u32) {
    let (layout, mut img) = format(FsKind::Exfat, 4 << 20, 4096);
    let Geometry::Exfat(g) = *layout.geometry() else {
        unreachable!()
    };
    let fat = usize::try_from(layout.fat_offset()).unwrap();
    let heap = |n: u32| {
        let c = mkfs_alloc_layout::ClusterIndex::new(n).unwrap();
        usize::try_from(layout.cluster_offset(c)).unwrap()
    };
    let free = g.root_cluster().get() + g.root_clusters;
    let (sub_at, a_at, inner_at) = (free, free + 1, free + 2);
    for c in [sub_at, a_at, inner_at] {
        let e = fat + 4 * c as usize;
        assert_eq!(img[e..e + 4], [0; 4], "cluster {c} is free");
        img[e..e + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    }
    let root = heap(g.root_cluster().get());
    let end = (root..root + 4096)
        .step_by(32)
        .find(|&o| img[o] == 0)
        .unwrap();
    let mut s = Fields {
        first: sub_at,
        len: 4096,
        contiguous: false,
    };
    sub(&mut s);
    let mut f = Fields {
        first: a_at,
        len: 4,
        contiguous: false,
    };
    a(&mut f);
    let mut entries = exfat_set("sub", true, s.first, s.len, s.contiguous);
    entries.extend(exfat_set("a.txt", false, f.first, f.len, f.contiguous));
    img[end..end + entries.len()].copy_from_slice(&entries);
    let inner = exfat_set("inner.txt", false, inner_at, 6, false);
    img[heap(sub_at)..heap(sub_at) + 96].copy_from_slice(&inner);
    img[heap(a_at)..heap(a_at) + 4].copy_from_slice(b"top\n");
    img[heap(inner_at)..heap(inner_at) + 6].copy_from_slice(b"hello\n");
    (img, g.cluster_count)
}

/// The volume's error (there must be one).
fn error_of(v: &Volume) -> &str {
    v.error
        .as_deref()
        .unwrap_or_else(|| panic!("no error reported: {v:#?}"))
}

#[test]
fn the_unpatched_volumes_are_clean() {
    let (img, _) = exfat_volume(|_| {}, |_| {});
    let v = walk(img);
    assert!(v.error.is_none(), "{v:#?}");
    let f = files(&v);
    assert!(f.complete, "{f:#?}");
    assert_eq!((f.count, f.dirs, f.total_bytes), (2, 1, 10));
    // The root and /sub: one cluster each.
    assert_eq!(f.dir_bytes, 2 * 4096);

    let v = walk(fat16_volume(4));
    assert!(v.error.is_none(), "{v:#?}");
    let f = files(&v);
    assert!(f.complete, "{f:#?}");
    assert_eq!((f.count, f.dirs, f.total_bytes), (2, 1, 10));
}

/// The case: `/sub` with DataLength 2^62 gave "directories 4.0 EiB",
/// no error and `complete: true`.
#[test]
fn exfat_directory_longer_than_the_heap_is_damage() {
    for contiguous in [false, true] {
        let (img, cc) = exfat_volume(
            |s| {
                s.len = 1 << 62;
                s.contiguous = contiguous;
            },
            |_| {},
        );
        let v = walk(img);
        let err = error_of(&v);
        assert!(
            err.contains("/sub") && err.contains(&format!("{}", 1u64 << 62)),
            "{err}"
        );
        let f = files(&v);
        assert!(!f.complete, "{f:#?}");
        let heap = u64::from(cc) * 4096;
        assert!(f.dir_bytes <= heap && f.waste_bytes <= heap, "{f:#?}");
        for a in &f.at_cluster_sizes {
            assert!(a.dir_bytes < EIB && a.waste_bytes < EIB, "{a:?}");
        }
        // /a.txt is counted; /sub/inner.txt too when /sub's chain leads to
        // it (not with NoFatChain: its clusters would run past the heap).
        let expected = if contiguous { (1, 4) } else { (2, 10) };
        assert_eq!((f.count, f.total_bytes), expected, "{f:#?}");
    }
}

#[test]
fn exfat_directory_running_past_the_last_cluster_is_damage() {
    // NoFatChain, two clusters from the last one.
    let (img, cc) = exfat_volume(
        |s| {
            s.first = cc_last();
            s.len = 2 * 4096;
            s.contiguous = true;
        },
        |_| {},
    );
    let v = walk(img);
    let err = error_of(&v);
    assert!(
        err.contains("/sub") && err.contains("the first cluster"),
        "{err}"
    );
    assert_eq!(cc + 1, cc_last());
    assert!(!files(&v).complete);
}

/// The last cluster number of [`exfat_volume`]'s heap.
fn cc_last() -> u32 {
    let (layout, _) = format(FsKind::Exfat, 4 << 20, 4096);
    layout.cluster_count().get() + 1
}

#[test]
fn exfat_directory_chain_must_match_its_length() {
    // DataLength says three clusters, the FAT chain holds one.
    let (img, _) = exfat_volume(|s| s.len = 3 * 4096, |_| {});
    let v = walk(img);
    let err = error_of(&v);
    assert!(
        err.contains("/sub") && err.contains("chain length is 4096 bytes"),
        "{err}"
    );
    // What is counted is what the chain holds.
    assert_eq!(files(&v).dir_bytes, 2 * 4096, "{v:#?}");
}

/// The rule for files, with a FAT chain: 2^62 bytes only warned that the
/// chain checks stopped, and counted 4 EiB.
#[test]
fn exfat_file_longer_than_the_heap_is_damage() {
    for contiguous in [false, true] {
        let (img, _) = exfat_volume(
            |_| {},
            |a| {
                a.len = 1 << 62;
                a.contiguous = contiguous;
            },
        );
        let v = walk(img);
        let err = error_of(&v);
        assert!(
            err.contains("/a.txt") && err.contains(&format!("{}", 1u64 << 62)),
            "{err}"
        );
        let f = files(&v);
        assert!(!f.complete, "{f:#?}");
        assert!(f.total_bytes < EIB && f.allocated_bytes < EIB, "{f:#?}");
        for a in &f.at_cluster_sizes {
            assert!(a.allocated_bytes < EIB, "{a:?}");
        }
        // The file is still counted and listed; its bytes are not.
        assert_eq!((f.count, f.total_bytes), (2, 6), "{f:#?}");
        let listed = f.entries.as_ref().unwrap();
        assert!(
            listed
                .iter()
                .any(|e| e.path == "/a.txt" && e.allocated_bytes == 0 && e.fragments.is_none()),
            "{listed:?}"
        );
    }
}

/// A FAT16 volume of 32 MiB with 4 KiB clusters holding `/SUB` (one
/// cluster) with `/SUB/INNER.TXT`, and `/A.TXT` of `a_size` bytes in one
/// cluster.
fn fat16_volume(a_size: u32) -> Vec<u8> {
    let (layout, mut img) = format(FsKind::Fat16, 32 << 20, 4096);
    let Geometry::Fat(g) = *layout.geometry() else {
        unreachable!()
    };
    let bps = u64::from(g.bps);
    let fat_at = usize::try_from(u64::from(g.rsvd) * bps).unwrap();
    let fat_len = usize::try_from(u64::from(g.fat_sz) * bps).unwrap();
    let root = usize::try_from(g.root_sector() * bps).unwrap();
    let data = usize::try_from(g.data_sector() * bps).unwrap();
    let at = |n: u16| data + (usize::from(n) - 2) * 4096;
    let (sub, a, inner) = (2u16, 3u16, 4u16);
    for f in 0..2 {
        for c in [sub, a, inner] {
            let e = fat_at + f * fat_len + 2 * usize::from(c);
            img[e..e + 2].copy_from_slice(&0xFFFFu16.to_le_bytes());
        }
    }
    let short = |name: &[u8; 11], attr: u8, first: u16, size: u32| {
        let mut e = DirEntry::new_zeroed();
        e.name = *name;
        e.attr = attr;
        e.set_first_cluster(u32::from(first));
        e.file_size = size.into();
        e
    };
    let end = (root..root + 512 * 32)
        .step_by(32)
        .find(|&o| img[o] == 0)
        .unwrap();
    let root_entries = [
        short(b"SUB        ", 0x10, sub, 0),
        short(b"A       TXT", 0x20, a, a_size),
    ];
    img[end..end + 64].copy_from_slice(root_entries.as_bytes());
    let d = at(sub);
    let sub_entries = [
        short(b".          ", 0x10, sub, 0),
        short(b"..         ", 0x10, 0, 0),
        short(b"INNER   TXT", 0x20, inner, 6),
    ];
    img[d..d + 96].copy_from_slice(sub_entries.as_bytes());
    img[at(a)..at(a) + 4].copy_from_slice(b"top\n");
    img[at(inner)..at(inner) + 6].copy_from_slice(b"hello\n");
    img
}

/// FAT's analogue: a size larger than the volume was damage already (a short
/// chain) but counted its 4 GiB in a 32 MiB volume.
#[test]
fn fat_file_larger_than_the_volume_is_damage() {
    let v = walk(fat16_volume(u32::MAX));
    let err = error_of(&v);
    assert!(
        err.contains("/A.TXT") && err.contains(&u32::MAX.to_string()),
        "{err}"
    );
    let f = files(&v);
    assert!(!f.complete, "{f:#?}");
    assert_eq!((f.count, f.total_bytes), (2, 6), "{f:#?}");
    assert!(f.allocated_bytes <= 32 << 20, "{f:#?}");
}
