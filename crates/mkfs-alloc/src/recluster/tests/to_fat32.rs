//! exFAT to FAT32: the plan of a volume our formatter makes and fills (the
//! data region where the FATs end, every file counted), the refusals of
//! what FAT32 cannot hold, and the run's refusal of the write path, each
//! leaving the medium byte-identical.

use super::*;
use crate::recluster::convert;

#[test]
fn an_exfat_volume_is_planned_with_its_data_in_place() {
    let mut disk = image(48 << 20, 512);
    let (m, sets) = model_of(&disk).unwrap();
    let before = disk.as_bytes().to_vec();
    let p = convert::plan_fat32(&mut disk).unwrap();
    let g = &m.geometry;
    let heap = g.data_offset - g.start;
    assert_eq!(p.data_offset, heap + p.shift * 512);
    assert_eq!(p.cluster_count, u64::from(g.cluster_count) - p.shift);
    assert_eq!(p.fat_bytes, (4 * (p.cluster_count + 2)).div_ceil(512) * 512);
    assert_eq!(p.reserved_sectors * 512 + 2 * p.fat_bytes, p.data_offset);
    assert!(p.reserved_sectors >= 32);
    // The fewest heap clusters taken: one fewer and the FATs do not fit.
    if p.shift > 0 {
        let k = p.shift - 1;
        let fat = (4 * (u64::from(g.cluster_count) - k + 2)).div_ceil(512) * 512;
        assert!(32 * 512 + 2 * fat > heap + k * 512, "{p:?}");
    }
    assert!(p.metadata_covered + p.evacuate <= p.shift, "{p:?}");
    assert_eq!(p.files, sets.iter().filter(|s| !s.is_dir).count() as u64);
    assert_eq!(
        p.directories,
        1 + sets.iter().filter(|s| s.is_dir).count() as u64
    );
    let r = convert::run_fat32(&mut disk).unwrap_err();
    assert!(r.to_string().contains("not supported yet"), "{r}");
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn too_few_clusters_for_fat32_are_refused() {
    let mut disk = image(24 << 20, 4096);
    let before = disk.as_bytes().to_vec();
    let r = convert::plan_fat32(&mut disk).unwrap_err();
    assert!(r.to_string().contains("FAT32 takes 65525"), "{r}");
    assert!(convert::run_fat32(&mut disk).is_err());
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn a_fat_volume_is_refused_as_not_exfat() {
    let (mut disk, _) = super::fat::fat32(42 << 20, 512, 0, None);
    let r = convert::plan_fat32(&mut disk).unwrap_err();
    assert!(r.to_string().contains("exFAT only"), "{r}");
}

/// The stream extension of `path` given `len` as its DataLength, the set's
/// checksum made again: a file exFAT holds (ValidDataLength kept) that
/// FAT32 does not.
fn set_length(disk: &mut MemDisk, path: &str, len: u64) {
    let (_, sets) = model_of(disk).unwrap();
    let s = sets.iter().find(|s| s.path == path).unwrap();
    let n = 32 * s.at.entries as usize;
    let mut set = read(disk, s.at.offset, n);
    set[32 + 24..32 + 32].copy_from_slice(&len.to_le_bytes());
    let sum = mkfs_alloc_ondisk::exfat::set_checksum(&set);
    set[2..4].copy_from_slice(&sum.to_le_bytes());
    patch(disk, s.at.offset, &set);
}

#[test]
fn a_4_gib_length_past_its_chain_is_refused_by_its_path_unchanged() {
    // A real 4 GiB file needs a larger medium (the tool tier makes one
    // through exfat-fuse); here the length alone: the reader calls it
    // damage, naming the file, before any write.
    let mut disk = image(48 << 20, 512);
    set_length(&mut disk, "/docs/deep/er/note.md", 4 << 30);
    let before = disk.as_bytes().to_vec();
    let r = convert::plan_fat32(&mut disk).unwrap_err();
    assert!(
        matches!(r, ReclusterError::Refused(Refusal::Damaged { .. })),
        "{r:?}"
    );
    assert!(r.to_string().contains("/docs/deep/er/note.md"), "{r}");
    assert!(convert::run_fat32(&mut disk).is_err());
    assert!(disk.as_bytes() == &before[..]);
}
