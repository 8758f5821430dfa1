//! Shrink (`resize` to a smaller size) on exFAT images our formatter makes
//! and fills, then spreads over the whole heap by hand (files, a
//! NoFatChain file, directories and a fragmented file's tail moved to the
//! heap's end, so the window past the new end holds data and the space
//! below it has holes): the plan, the refusals (the medium unchanged), the
//! whole job, and power-cut sweeps whose every trial, rerun, holds every
//! file.

use super::*;

/// 4 KiB clusters on 8 MiB: about 2,000 clusters.
const CLUSTER: u64 = 4096;
const VOLUME: u64 = 8 << 20;

/// The test volume: [`files_in`] with `dirs` more directories, the `frag-`
/// files fragmented, then spread ([`spread`]).
fn spread_volume(dirs: usize) -> (MemDisk, Vec<(String, usize)>) {
    let shape = Shape {
        size: VOLUME,
        cluster: CLUSTER,
        sector: 512,
        mbr: false,
        dirs,
        align: 0,
    };
    let mut disk = shaped(shape);
    let want = shape.files();
    spread(&mut disk, &want);
    (disk, want)
}

/// Moves every third file, two directories and the tail of a fragmented
/// file to the heap's last free clusters.
pub(super) fn spread(disk: &mut MemDisk, want: &[(String, usize)]) {
    let mut paths: Vec<(String, usize)> = want
        .iter()
        .enumerate()
        .filter(|(i, (p, len))| i % 3 == 0 && *len > 0 && !p.contains("frag-"))
        .map(|(_, (p, _))| (p.clone(), 0))
        .collect();
    paths.push(("/tree/d03".into(), 0));
    paths.push(("/docs/deep".into(), 0));
    paths.push(("/photos/frag-1.raw".into(), 3));
    for (path, from) in paths {
        move_tail(disk, &path, from);
    }
}

/// Moves the clusters of `path` from its `from`-th on to the highest free
/// run of the heap: the whole file or directory (its first cluster in its
/// stream extension, NoFatChain kept) when `from` is 0, else its tail (the
/// chain in the FAT relinked).
fn move_tail(disk: &mut MemDisk, path: &str, from: usize) {
    let (m, sets) = model_of(disk).unwrap();
    let g = &m.geometry;
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    let cs = g.cluster_size;
    let at = |c: u32| g.data_offset + u64::from(c - 2) * cs;
    let fat_at = |c: u32| g.fat_offset + 4 * u64::from(c);
    let mut chain = vec![s.first_cluster];
    while (chain.len() as u64) < s.clusters {
        let c = *chain.last().unwrap();
        chain.push(if s.contiguous {
            c + 1
        } else {
            u32::from_le_bytes(read(disk, fat_at(c), 4).try_into().unwrap())
        });
    }
    let k = u32::try_from(chain.len() - from).unwrap();
    // The highest free run of k clusters.
    let mut end = g.cluster_count + 1;
    let first = loop {
        let run = end + 1 - k;
        if (run..=end).all(|c| !m.used.get(c)) {
            break run;
        }
        end -= 1;
    };
    let (bm_first, _) = m.bitmap.unwrap();
    let bit = |disk: &mut MemDisk, cl: u32, on: bool| {
        let i = u64::from(cl - 2);
        let byte_at = at(bm_first) + i / 8;
        let mut b = read(disk, byte_at, 1)[0];
        if on {
            b |= 1 << (i % 8);
        } else {
            b &= !(1 << (i % 8));
        }
        patch(disk, byte_at, &[b]);
    };
    let new: Vec<u32> = (first..first + k).collect();
    for (&o, &n) in chain[from..].iter().zip(&new) {
        let data = read(disk, at(o), usize::try_from(cs).unwrap());
        patch(disk, at(n), &data);
        bit(disk, o, false);
        bit(disk, n, true);
    }
    let contiguous = s.contiguous && from == 0;
    if !contiguous {
        let mut whole = chain[..from].to_vec();
        whole.extend(&new);
        for (i, &c) in whole.iter().enumerate() {
            let next = whole.get(i + 1).copied().unwrap_or(0xFFFF_FFFF);
            patch(disk, fat_at(c), &next.to_le_bytes());
        }
    }
    let set_len = usize::try_from(s.at.entries).unwrap() * 32;
    let mut set = read(disk, s.at.offset, set_len);
    if from == 0 {
        set[32 + 20..32 + 24].copy_from_slice(&first.to_le_bytes());
    }
    if !contiguous {
        set[32 + 1] &= !0x02;
    }
    let sum = mkfs_alloc_ondisk::exfat::set_checksum(&set);
    set[2..4].copy_from_slice(&sum.to_le_bytes());
    patch(disk, s.at.offset, &set);
}

/// Checks `disk` holds `want` at `bytes` bytes of volume, clean.
pub(super) fn shrunk(
    disk: &MemDisk,
    want: &[(String, usize)],
    bytes: u64,
) -> Result<VolumeModel, String> {
    let m = check_tree(disk, want)?;
    if m.geometry.fs_bytes != bytes || !m.findings.is_empty() {
        return Err(format!("{} bytes, {:?}", m.geometry.fs_bytes, m.findings));
    }
    Ok(m)
}

#[test]
fn the_spread_volume_has_data_past_the_half_and_holes_below_it() {
    let (disk, want) = spread_volume(20);
    let m = check_tree(&disk, &want).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    let (_, sets) = model_of(&disk).unwrap();
    let half = m.geometry.cluster_count / 2;
    let past = |s: &&EntrySet| s.first_cluster > half;
    assert!(sets.iter().filter(past).any(|s| s.is_dir));
    assert!(sets.iter().filter(past).any(|s| s.contiguous && !s.is_dir));
    assert!(sets
        .iter()
        .any(|s| s.path == "/photos/frag-1.raw" && s.fragments > 1));
    let free_below = (2..half).filter(|&c| !m.used.get(c)).count();
    assert!(free_below > 10, "{free_below}");
}

#[test]
fn a_shrink_moves_the_data_past_the_new_end_and_keeps_every_file() {
    let (mut disk, want) = spread_volume(20);
    let new = VOLUME / 2;
    let job = plan_resize(&mut disk, NewSize::Bytes(new)).unwrap();
    assert_eq!(job.step, Step::Start);
    let g = job.grow.clone().unwrap();
    assert!(g.moved_clusters > 0, "{g:?}");
    assert!(g.new.cluster_count < g.old.cluster_count);
    assert_eq!(g.new.heap_offset, g.old.heap_offset);
    assert_eq!(g.bitmap.1, u64::from(g.new.cluster_count).div_ceil(8));
    run(&mut disk, &job).unwrap();
    let m = shrunk(&disk, &want, new).unwrap();
    assert_eq!(m.geometry.cluster_count, g.new.cluster_count);
    assert_eq!(m.free_clusters * CLUSTER, g.free_after);
    assert_eq!(m.bitmap.unwrap().1, g.bitmap.1);
    // Nothing is used past the new end; both boot regions agree.
    assert_eq!(
        read(&disk, 0, 512)[..106],
        read(&disk, 12 * 512, 512)[..106]
    );
    assert!(read(&disk, g.intent_offset, 512).iter().all(|&b| b == 0));
    assert_eq!(
        plan_resize(&mut disk, NewSize::Bytes(new)).unwrap().step,
        Step::Nothing
    );
    // The shrunk volume, cut to its size, still reads.
    let cut = MemDisk::from_vec(
        512,
        disk.as_bytes()[..usize::try_from(new).unwrap()].to_vec(),
    )
    .unwrap();
    shrunk(&cut, &want, new).unwrap();
}

#[test]
fn shrink_refusals_name_the_smallest_size_and_leave_the_medium_unchanged() {
    let (mut disk, want) = spread_volume(20);
    let before = disk.as_bytes().to_vec();
    let refused = |r: Result<Job, ReclusterError>| match r {
        Err(ReclusterError::Refused(Refusal::Resize(r))) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    };
    let r = refused(resize(&mut disk, NewSize::Bytes(VOLUME / 16)));
    let ResizeRefusal::BelowData { least, .. } = r else {
        panic!("{r}")
    };
    assert!(r.to_string().contains("smallest size"), "{r}");
    assert!(least > VOLUME / 16 && least < VOLUME, "{least}");
    assert!(disk.as_bytes() == &before[..]);
    // The size named is accepted, one sector less is not.
    let r = refused(plan_resize(&mut disk, NewSize::Bytes(least - CLUSTER)));
    assert!(matches!(r, ResizeRefusal::BelowData { .. }), "{r}");
    resize(&mut disk, NewSize::Bytes(least)).unwrap();
    shrunk(&disk, &want, least).unwrap();
}

#[test]
fn a_bad_cluster_past_the_new_end_is_refused_unchanged() {
    let (mut disk, _) = spread_volume(20);
    let (m, _) = model_of(&disk).unwrap();
    let g = m.geometry.clone();
    let c = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| !m.used.get(c))
        .unwrap();
    patch(
        &mut disk,
        g.fat_offset + 4 * u64::from(c),
        &0xFFFF_FFF7u32.to_le_bytes(),
    );
    let before = disk.as_bytes().to_vec();
    match resize(&mut disk, NewSize::Bytes(VOLUME / 2)) {
        Err(ReclusterError::Refused(Refusal::Resize(r @ ResizeRefusal::BadPastEnd { .. }))) => {
            assert!(r.to_string().contains("bad"), "{r}");
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(disk.as_bytes() == &before[..]);
}

/// A sweep of the shrink of `disk` to `new` bytes.
fn sweep(
    disk: &MemDisk,
    want: &[(String, usize)],
    new: u64,
    seeds: u64,
) -> mkfs_alloc_blockio::powercut::sweep::SweepReport {
    let job = |dev: &mut dyn BlockIo| resize(dev, NewSize::Bytes(new)).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = check_tree(t.medium, want)?;
            if t.stage == Stage::AfterRerun {
                shrunk(t.medium, want, new)?;
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            } else if m.geometry.fs_bytes != new && m.geometry.fs_bytes != VOLUME {
                return Err(format!("{} bytes of volume", m.geometry.fs_bytes));
            }
            Ok(true)
        })
        .unwrap()
}

#[test]
fn power_cuts_in_a_shrink_leave_every_file_intact() {
    let (disk, want) = spread_volume(40);
    let report = sweep(&disk, &want, VOLUME / 2, 3);
    eprintln!("shrink sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points >= report.ops as usize);
}

#[test]
fn a_bad_cluster_below_the_new_end_stays_bad_and_unused() {
    let (mut disk, want) = spread_volume(20);
    let (m, _) = model_of(&disk).unwrap();
    let g = m.geometry.clone();
    let c = (2..=g.cluster_count + 1).find(|&c| !m.used.get(c)).unwrap();
    let entry = g.fat_offset + 4 * u64::from(c);
    patch(&mut disk, entry, &0xFFFF_FFF7u32.to_le_bytes());
    resize(&mut disk, NewSize::Bytes(VOLUME / 2)).unwrap();
    let (m, _) = model_of(&disk).unwrap();
    // Set in the new bitmap, so nothing is ever written there.
    let (first, _) = m.bitmap.unwrap();
    let i = u64::from(c - 2);
    let bm = m.geometry.data_offset + u64::from(first - 2) * CLUSTER;
    assert!(
        read(&disk, bm + i / 8, 1)[0] >> (i % 8) & 1 != 0,
        "cluster {c}"
    );
    assert_eq!(read(&disk, entry, 4), 0xFFFF_FFF7u32.to_le_bytes());
    check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.fs_bytes, VOLUME / 2);
}
