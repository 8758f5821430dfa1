//! Shrink of FAT32 volumes our formatter makes and fills, then spreads by
//! hand (whole files and a fragmented file's tail moved to the highest
//! free clusters, so the clusters past the new end hold data): the plan,
//! the refusals (the medium unchanged), the whole job, and a power-cut
//! sweep whose every trial, rerun, holds every file byte for byte (read
//! through the model's walk and the FAT's chains, and through `fatfs`).

use super::fat::{check_fat, check_fatfs, fat32_with, Bytes};
use super::*;

/// 40 MiB at 512-byte clusters: about 81,000 clusters.
const VOLUME: u64 = 40 << 20;
/// The new size: about 73,000 clusters (FAT32 still).
const SMALLER: u64 = 36 << 20;

/// The test tree (with `extra` more files) on [`VOLUME`], spread: every
/// third file and the tail of a fragmented one moved to the top.
fn spread_volume(extra: &[(String, usize)]) -> (MemDisk, Vec<(String, usize)>) {
    spread_volume_in(extra, None)
}

/// [`spread_volume`] on a medium of [`VOLUME`] bytes with a table of
/// `table`.
pub(super) fn spread_volume_in(
    extra: &[(String, usize)],
    table: super::fat::Table,
) -> (MemDisk, Vec<(String, usize)>) {
    let mut want = files_in(512, 6);
    want.extend_from_slice(extra);
    let mut disk = fat32_with(VOLUME, 512, &want, table);
    for (i, (path, len)) in want.iter().enumerate() {
        if i % 3 == 0 && *len > 0 && !path.contains("frag-") {
            move_to_top(&mut disk, path, 0);
        }
    }
    move_to_top(&mut disk, "/docs/frag-2.pdf", 2);
    (disk, want)
}

/// FAT32 entry `n` of the first FAT.
fn entry(disk: &MemDisk, g: &mkfs_alloc_inspect::model::Geometry, n: u32) -> u32 {
    let b = disk.bytes(g.fat_offset + 4 * u64::from(n), 4);
    u32::from_le_bytes(b.try_into().unwrap()) & 0x0FFF_FFFF
}

/// Sets FAT32 entry `n` to `v` in every FAT.
fn set_entry(disk: &mut MemDisk, g: &mkfs_alloc_inspect::model::Geometry, n: u32, v: u32) {
    for copy in 0..u64::from(g.fat_count) {
        let off = g.fat_offset + copy * g.fat_bytes + 4 * u64::from(n);
        patch(disk, off, &v.to_le_bytes());
    }
}

/// Moves the clusters of the file `path` from its `from`-th on to the
/// highest free run of the volume: the whole file (its short entry's first
/// cluster rewritten) when `from` is 0, else its tail (relinked in the
/// FAT). FSInfo's free count stays right: as many freed as taken.
fn move_to_top(disk: &mut MemDisk, path: &str, from: usize) {
    let (m, sets) = model_of(disk).unwrap();
    let g = m.geometry.clone();
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    let mut chain = vec![s.first_cluster];
    while chain.len() < usize::try_from(s.clusters).unwrap() {
        chain.push(entry(disk, &g, *chain.last().unwrap()));
    }
    let k = u32::try_from(chain.len() - from).unwrap();
    let mut end = g.cluster_count + 1;
    let first = loop {
        let run = end + 1 - k;
        if (run..=end).all(|c| entry(disk, &g, c) == 0) {
            break run;
        }
        end -= 1;
    };
    let cs = usize::try_from(g.cluster_size).unwrap();
    let at = |c: u32| g.data_offset + u64::from(c - 2) * g.cluster_size;
    for (i, &c) in chain[from..].iter().enumerate() {
        let data = read(disk, at(c), cs);
        patch(disk, at(first + u32::try_from(i).unwrap()), &data);
        set_entry(disk, &g, c, 0);
    }
    let mut whole = chain[..from].to_vec();
    whole.extend(first..first + k);
    for (i, &c) in whole.iter().enumerate() {
        let next = whole.get(i + 1).copied().unwrap_or(0x0FFF_FFFF);
        set_entry(disk, &g, c, next);
    }
    if from == 0 {
        // The short entry: the set's last, in the directory's clusters.
        let mut c = s.at.cluster.unwrap();
        let mut pos = s.at.offset - at(c) + u64::from(s.at.entries - 1) * 32;
        while pos >= g.cluster_size {
            c = entry(disk, &g, c);
            pos -= g.cluster_size;
        }
        let off = at(c) + pos;
        let [lo0, lo1, hi0, hi1] = first.to_le_bytes();
        patch(disk, off + 20, &[hi0, hi1]);
        patch(disk, off + 26, &[lo0, lo1]);
    }
}

/// Checks `disk` holds `want` at `bytes` bytes of volume, clean.
pub(super) fn check_shrunk(
    disk: &MemDisk,
    want: &[(String, usize)],
    bytes: u64,
) -> Result<(), String> {
    let m = check_fat(disk, want)?;
    if m.geometry.fs_bytes != bytes || !m.findings.is_empty() {
        return Err(format!("{} bytes, {:?}", m.geometry.fs_bytes, m.findings));
    }
    check_fatfs(disk, want)
}

/// The least size a refusal names.
fn least_of(r: Result<Job, ReclusterError>) -> (ResizeRefusal, u64) {
    let r = match r {
        Err(ReclusterError::Refused(Refusal::Resize(r))) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    let least = match &r {
        ResizeRefusal::BelowData { least, .. }
        | ResizeRefusal::BadPastEnd { least, .. }
        | ResizeRefusal::FatTooFew { least, .. }
        | ResizeRefusal::DirectoryPastEnd { least, .. } => *least,
        other => panic!("{other}"),
    };
    (r, least)
}

#[test]
fn a_fat32_shrink_moves_the_data_past_the_end_and_keeps_every_file() {
    let (mut disk, want) = spread_volume(&[]);
    let (m, _) = model_of(&disk).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    let n = u32::try_from((SMALLER - (m.geometry.data_offset - m.geometry.start)) / 512).unwrap();
    let past = (n + 2..=m.geometry.cluster_count + 1)
        .filter(|&c| m.used.get(c))
        .count() as u64;
    assert!(past > 20, "{past} clusters past the new end");
    let before = disk.as_bytes().to_vec();
    let job = plan_resize(&mut disk, NewSize::Bytes(SMALLER)).unwrap();
    assert!(disk.as_bytes() == &before[..], "the plan wrote");
    assert_eq!(job.step, Step::Start);
    let g = job.grow.clone().unwrap();
    assert_eq!(g.fs, FsKind::Fat32);
    assert_eq!((g.old_bytes, g.new_bytes), (VOLUME, SMALLER));
    assert_eq!(g.new.cluster_count, n);
    assert_eq!(g.moved_clusters, past);
    resize(&mut disk, NewSize::Bytes(SMALLER)).unwrap();
    check_shrunk(&disk, &want, SMALLER).unwrap();
    let (m, _) = model_of(&disk).unwrap();
    assert_eq!(m.free_clusters * 512, g.free_after);
    // Boot sector and its backup agree; the record is gone; FATSz32 kept.
    assert_eq!(read(&disk, 0, 512), read(&disk, 6 * 512, 512));
    assert!(read(&disk, 24 * 512, 512).iter().all(|&b| b == 0));
    assert_eq!(m.geometry.fat_bytes, g.old.fat_bytes);
    assert_eq!(
        plan_resize(&mut disk, NewSize::Bytes(SMALLER))
            .unwrap()
            .step,
        Step::Nothing
    );
    // The volume alone, cut to its size, still reads.
    let cut = MemDisk::from_vec(512, disk.as_bytes()[..SMALLER as usize].to_vec()).unwrap();
    check_shrunk(&cut, &want, SMALLER).unwrap();
}

#[test]
fn fat32_shrink_refusals_name_the_least_size_and_write_nothing() {
    // 33 MiB more data: the least size is above FAT32's least count.
    let big = vec![("/zz/big.bin".to_string(), 33 << 20)];
    let (mut disk, want) = spread_volume(&big);
    let before = disk.as_bytes().to_vec();
    let (r, least) = least_of(plan_resize(&mut disk, NewSize::Bytes(35 << 20)));
    assert!(matches!(r, ResizeRefusal::BelowData { .. }), "{r}");
    assert!(least > 35 << 20 && least < SMALLER, "{least}");
    assert!(r.to_string().contains(&least.to_string()), "{r}");
    // One cluster less than the least is refused, the least is done.
    let (r, _) = least_of(resize(&mut disk, NewSize::Bytes(least - 512)));
    assert!(matches!(r, ResizeRefusal::BelowData { .. }), "{r}");
    assert!(disk.as_bytes() == &before[..]);
    resize(&mut disk, NewSize::Bytes(least)).unwrap();
    check_shrunk(&disk, &want, least).unwrap();

    // Fewer clusters than FAT32 has: refused with the least FAT32 size.
    let (mut disk, _) = spread_volume(&[]);
    let before = disk.as_bytes().to_vec();
    let (r, least) = least_of(resize(&mut disk, NewSize::Bytes(20 << 20)));
    assert!(matches!(r, ResizeRefusal::FatTooFew { .. }), "{r}");
    assert!(disk.as_bytes() == &before[..]);
    let (m, _) = model_of(&disk).unwrap();
    let data_start = m.geometry.data_offset - m.geometry.start;
    assert_eq!(least, data_start + 65_525 * 512);
    let (r, _) = least_of(resize(&mut disk, NewSize::Bytes(least - 512)));
    assert!(matches!(r, ResizeRefusal::FatTooFew { .. }), "{r}");
    assert!(disk.as_bytes() == &before[..]);

    // A bad cluster past the new end cannot move.
    let (mut disk, want) = spread_volume(&[]);
    let g = model_of(&disk).unwrap().0.geometry;
    let bad = g.cluster_count - 100;
    let low_bad = 70_000;
    assert_eq!(entry(&disk, &g, bad), 0);
    assert_eq!(entry(&disk, &g, low_bad), 0);
    set_entry(&mut disk, &g, bad, 0x0FFF_FFF7);
    set_entry(&mut disk, &g, low_bad, 0x0FFF_FFF7);
    let before = disk.as_bytes().to_vec();
    let (r, least) = least_of(resize(&mut disk, NewSize::Bytes(SMALLER)));
    assert!(
        matches!(r, ResizeRefusal::BadPastEnd { cluster, .. } if cluster == bad),
        "{r}"
    );
    assert!(disk.as_bytes() == &before[..]);
    assert_eq!(least, g.data_offset - g.start + u64::from(bad - 1) * 512);
    // Above it the shrink runs; the bad cluster below the end stays bad.
    resize(&mut disk, NewSize::Bytes(least)).unwrap();
    let m = check_fat(&disk, &want).unwrap();
    assert_eq!(m.geometry.fs_bytes, least);
    assert_eq!(entry(&disk, &m.geometry, low_bad), 0x0FFF_FFF7);
    assert_eq!(entry(&disk, &m.geometry, bad), 0x0FFF_FFF7);
}

#[test]
fn power_cuts_in_a_fat32_shrink_leave_every_file_intact() {
    let (disk, want) = spread_volume(&[]);
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Bytes(SMALLER)).map(|_| ());
    // One seed: each trial reads the 40 MiB volume through two readers.
    let report = Sweep::new()
        .seeds(1)
        .run(&disk, job, |t| {
            check_fat(t.medium, &want)?;
            if t.stage == Stage::AfterRerun {
                check_shrunk(t.medium, &want, SMALLER)?;
                if read(t.medium, 24 * 512, 512).iter().any(|&b| b != 0) {
                    return Err("the record is still there after the rerun".into());
                }
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("shrink sweep, FAT32: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 30, "{report}");
}
