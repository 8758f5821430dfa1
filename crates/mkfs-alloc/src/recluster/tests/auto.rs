//! `auto`: the size the advice recommends for the files on the volume,
//! the same as the advice for those files counted from their paths; a
//! smaller or a larger one is planned and run, the current one is nothing
//! to do; a refusal names the size and its reason, nothing written.

use super::*;
use mkfs_alloc_advise::{advise_with, DirRecord, FsSelection, Policy, ScanResult};
use std::collections::BTreeMap;
use std::ffi::OsStr;

/// The advice's exFAT recommendation for the test tree on a volume of
/// `fs_bytes`, the scan counted here from the tree's paths.
fn advised(tree: &[(String, usize)], fs_bytes: u64) -> u64 {
    let mut dirs: BTreeMap<String, DirRecord> = BTreeMap::new();
    let mut data = ScanResult::default();
    for (path, len) in tree {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for i in 0..parts.len() {
            let parent = parts[..i].join("/");
            let child = parts[..=i].join("/");
            let new_dir = i + 1 < parts.len() && !dirs.contains_key(&child);
            if i + 1 == parts.len() || new_dir {
                dirs.entry(parent).or_default().add(OsStr::new(parts[i]));
            }
            if new_dir {
                dirs.insert(child, DirRecord::default());
            }
        }
        data.file_sizes.push(*len as u64);
        data.apparent_bytes += *len as u64;
    }
    data.root = dirs.remove("").unwrap();
    data.dirs = dirs.into_values().collect();
    let advice = advise_with(
        fs_bytes,
        512,
        FsSelection::Exfat,
        Some(&data),
        &Policy::default(),
    )
    .unwrap();
    advice.per_fs[0]
        .recommendation
        .as_ref()
        .unwrap()
        .cluster_size
}

#[test]
fn auto_takes_the_advice_for_the_files_on_the_volume_and_runs() {
    let mut disk = image(SIZE, OLD);
    let (m, _) = model_of(&disk).unwrap();
    let want = advised(&files(32 << 10), m.geometry.fs_bytes);
    let (choice, job) = plan_auto(&mut disk).unwrap();
    eprintln!("{choice:?}");
    assert_eq!(choice.cluster, want);
    assert!(choice.cluster < OLD, "{choice:?}");
    assert_eq!(choice.current, OLD);
    assert!(!choice.reason.is_empty());
    assert_eq!(job.step, Step::Start);
    assert_eq!(job.plan.as_ref().unwrap().new.cluster_size, choice.cluster);
    run(&mut disk, &job).unwrap();
    let m = check_files(&disk, 32 << 10).unwrap();
    assert_eq!(m.geometry.cluster_size, choice.cluster);
    // At its size now: nothing to do, the same choice.
    let (again, job) = plan_auto(&mut disk).unwrap();
    assert_eq!(again.cluster, choice.cluster);
    assert_eq!(job.step, Step::Nothing);
}

#[test]
fn auto_goes_to_a_larger_size_when_the_files_call_for_it() {
    let mut disk = image(SIZE, 512);
    let (choice, job) = plan_auto(&mut disk).unwrap();
    assert!(choice.cluster > 512, "{choice:?}");
    let (m, _) = model_of(&disk).unwrap();
    assert_eq!(choice.cluster, advised(&files(512), m.geometry.fs_bytes));
    assert!(job.plan.as_ref().unwrap().coarse.is_some());
    run(&mut disk, &job).unwrap();
    let m = check_files(&disk, 512).unwrap();
    assert_eq!(m.geometry.cluster_size, choice.cluster);
}

#[test]
fn a_refusal_of_autos_size_names_it_and_writes_nothing() {
    let mut disk = image(SIZE, 512);
    // VolumeDirty (VolumeFlags bit 1, boot sector byte 106) with no job
    // of ours on the volume: refused as damaged, whatever the size.
    let mut bytes = disk.as_bytes().to_vec();
    bytes[106] |= 2;
    let mut disk_dirty = MemDisk::from_vec(512, bytes).unwrap();
    let before = disk_dirty.as_bytes().to_vec();
    match plan_auto(&mut disk_dirty) {
        Err(e @ ReclusterError::AutoRefused { .. }) => {
            let text = e.to_string();
            let ReclusterError::AutoRefused { choice, refusal } = e else {
                unreachable!()
            };
            assert!(matches!(refusal, Refusal::Damaged { .. }), "{refusal:?}");
            assert!(
                text.contains(&format!("{} bytes", choice.cluster)),
                "{text}"
            );
            assert!(text.contains(&choice.reason), "{text}");
        }
        other => panic!("{:?}", other.map(|(c, j)| (c, j.step))),
    }
    assert!(disk_dirty.as_bytes() == &before[..]);
    assert!(plan_auto(&mut disk).is_ok());
}

#[test]
fn the_tally_counts_names_per_directory_as_a_scan_does() {
    let mut t = crate::existing::Tally::default();
    let set = |path: &str, is_dir: bool, size: u64| EntrySet {
        path: path.into(),
        is_dir,
        size,
        first_cluster: 0,
        contiguous: false,
        clusters: 0,
        fragments: 0,
        at: mkfs_alloc_inspect::model::EntryPos {
            cluster: None,
            offset: 0,
            entries: 3,
        },
    };
    t.add(&set("/a.txt", false, 10));
    t.add(&set("/d", true, 4096));
    t.add(&set("/d/e", true, 4096));
    t.add(&set("/d/b.bin", false, 5));
    let data = t.finish();
    assert_eq!(data.file_sizes.len(), 2);
    assert_eq!(data.apparent_bytes, 15);
    assert_eq!(data.root.entries, 2);
    let mut entries: Vec<u32> = data.dirs.iter().map(|d| d.entries).collect();
    entries.sort_unstable();
    // /d holds e and b.bin; /d/e is empty.
    assert_eq!(entries, vec![0, 2]);
}

#[test]
fn advise_volume_recommends_what_auto_chooses_and_says_the_volumes_figures() {
    use crate::existing::advise_volume;
    for old in [512, OLD] {
        let mut disk = image(SIZE, old);
        let before = disk.as_bytes().to_vec();
        let tree = files(old as usize);
        let v = advise_volume(&mut disk, None, None, &Policy::default())
            .unwrap()
            .expect("files on the volume");
        let (choice, _) = plan_auto(&mut disk).unwrap();
        let on = &v.on_volume;
        assert_eq!(on.recommended_cluster_size, Some(choice.cluster), "{on:?}");
        assert_eq!(on.cluster_size, old);
        assert_eq!(on.files, tree.len() as u64);
        assert_eq!(
            on.file_bytes,
            tree.iter().map(|(_, n)| *n as u64).sum::<u64>()
        );
        assert_eq!(v.data.file_sizes.len(), tree.len());
        let want = (choice.cluster != old).then(|| format!("{}K", choice.cluster >> 10));
        assert_eq!(on.recluster_cluster, want);
        assert!(on.waste_bytes.is_some() && on.recommended_waste_bytes.is_some());
        assert!(on.refusal.is_none());
        // The advice for the volume's own file system only, at its size.
        assert_eq!(v.advice.per_fs.len(), 1);
        assert_eq!(v.advice.volume_bytes, on.volume_bytes);
        assert!(disk.as_bytes() == &before[..]);
    }
    // A dirty volume: still advised, with the re-cluster's refusal.
    let mut bytes = image(SIZE, OLD).as_bytes().to_vec();
    bytes[106] |= 2;
    let mut dirty = MemDisk::from_vec(512, bytes).unwrap();
    let v = advise_volume(&mut dirty, None, None, &Policy::default())
        .unwrap()
        .unwrap();
    assert!(v.on_volume.refusal.is_some(), "{:?}", v.on_volume);
    // No volume, or one without files: nothing to advise from.
    let mut zeros = MemDisk::new(512, SIZE / 512).unwrap();
    assert!(advise_volume(&mut zeros, None, None, &Policy::default())
        .unwrap()
        .is_none());
}
