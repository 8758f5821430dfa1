//! Re-cluster to a larger size (`coarse.rs`): files in order in whole
//! aligned groups keep their place (one fragmented across groups, one
//! NoFatChain), the others (fragmented inside groups, unaligned, sharing a
//! group) and the directories are copied into free groups; the space a
//! small file takes at the new size is counted and refused when it does
//! not fit; and power-cut sweeps (4 KiB to 32 KiB, 16 KiB to 128 KiB)
//! whose every trial, rerun, holds every file.

use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;

/// Moves contiguous file `path` to old clusters `chain` (data, FAT chain,
/// bitmap, first cluster, SetChecksum); NoFatChain is kept only when
/// `contiguous` (then `chain` must be consecutive).
fn relocate(disk: &mut MemDisk, path: &str, chain: &[u32], contiguous: bool) {
    let (m, sets) = model_of(disk).unwrap();
    let g = &m.geometry;
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    assert!(s.contiguous && s.clusters == chain.len() as u64, "{path}");
    let cs = g.cluster_size;
    let at = |c: u32| g.data_offset + u64::from(c - 2) * cs;
    let len = usize::try_from(cs).unwrap();
    let old: Vec<u32> = (0..u32::try_from(chain.len()).unwrap())
        .map(|i| s.first_cluster + i)
        .collect();
    let data: Vec<Vec<u8>> = old.iter().map(|&c| read(disk, at(c), len)).collect();
    let (bm_first, _) = m.bitmap.unwrap();
    let bit = |disk: &mut MemDisk, c: u32, on: bool| {
        let i = u64::from(c - 2);
        let byte_at = at(bm_first) + i / 8;
        let mut b = read(disk, byte_at, 1)[0];
        if on {
            b |= 1 << (i % 8);
        } else {
            b &= !(1 << (i % 8));
        }
        patch(disk, byte_at, &[b]);
    };
    for &c in &old {
        bit(disk, c, false);
        patch(disk, g.fat_offset + 4 * u64::from(c), &0u32.to_le_bytes());
    }
    for (i, &c) in chain.iter().enumerate() {
        assert!(!m.used.get(c) || old.contains(&c), "{c} is in use");
        patch(disk, at(c), &data[i]);
        bit(disk, c, true);
        let next = if contiguous {
            0
        } else {
            chain.get(i + 1).copied().unwrap_or(0xFFFF_FFFF)
        };
        patch(disk, g.fat_offset + 4 * u64::from(c), &next.to_le_bytes());
    }
    let set_len = usize::try_from(s.at.entries).unwrap() * 32;
    let mut set = read(disk, s.at.offset, set_len);
    if !contiguous {
        set[32 + 1] &= !0x02;
    }
    set[32 + 20..32 + 24].copy_from_slice(&chain[0].to_le_bytes());
    let sum = mkfs_alloc_ondisk::exfat::set_checksum(&set);
    set[2..4].copy_from_slice(&sum.to_le_bytes());
    patch(disk, s.at.offset, &set);
}

/// A volume of `size` at `cluster` holding the test tree with `dirs` more
/// directories and two files placed for a group of `k` old clusters:
/// `/kept/across.bin` in order in two groups apart (fragmented, kept) and
/// `/kept/whole.bin` contiguous in one group and a half (NoFatChain,
/// kept); the `frag-` files fragmented inside groups (copied).
fn coarse_image(size: u64, cluster: u64, dirs: usize, k: u32) -> (MemDisk, Vec<(String, usize)>) {
    let c = usize::try_from(cluster).unwrap();
    let ku = usize::try_from(k).unwrap();
    let mut want = files_in(c, dirs);
    want.push(("/kept/across.bin".into(), (ku + 3) * c + 5));
    want.push(("/kept/whole.bin".into(), (ku + ku / 2) * c));
    let mut opts = crate::MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(cluster)
        .pinned(
            7,
            mkfs_alloc_layout::Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        );
    opts = opts.sector_size(512).unwrap();
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    let mut tree = crate::populate::Tree::new();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (path, len) in &want {
        let data = std::io::Cursor::new(content(path, *len));
        tree.add_file(path, data, *len as u64, t).unwrap();
    }
    let mut plan = opts
        .plan_for(&disk)
        .unwrap()
        .populate(tree, crate::populate::TimePolicy::default())
        .unwrap();
    plan.format(&mut disk).unwrap();
    for (path, _) in &want {
        if path.contains("frag-") {
            fragment(&mut disk, path);
        }
    }
    let (m, _) = model_of(&disk).unwrap();
    let last = (2..=m.geometry.cluster_count + 1)
        .rev()
        .find(|&c| m.used.get(c))
        .unwrap();
    // The first group start two groups past every used cluster.
    let g0 = ((last - 2) / k + 3) * k + 2;
    let across: Vec<u32> = (0..k)
        .map(|i| g0 + i)
        .chain((0..3).map(|i| g0 + 3 * k + i))
        .chain([g0 + 3 * k + 3])
        .collect();
    relocate(&mut disk, "/kept/across.bin", &across, false);
    let whole: Vec<u32> = (0..k + k / 2).map(|i| g0 + 5 * k + i).collect();
    relocate(&mut disk, "/kept/whole.bin", &whole, true);
    check_tree(&disk, &want).unwrap();
    (disk, want)
}

const K4: u64 = 4 << 10;
const K32: u64 = 32 << 10;

#[test]
fn the_plan_of_a_larger_cluster_keeps_what_is_in_order_and_copies_the_rest() {
    let (mut disk, want) = coarse_image(16 << 20, K4, 3, 8);
    let (m, sets) = model_of(&disk).unwrap();
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert!(sets.iter().filter(|s| s.fragments > 1).count() >= 3);
    let job = plan(&mut disk, K32).unwrap();
    assert_eq!(job.step, Step::Start);
    let p = job.plan.unwrap();
    let c = p.coarse.clone().unwrap();
    eprintln!("{c:?}\n{:?}", p.new);
    assert_eq!(c.group, 8);
    assert!(c.heap_aligned, "{p:?}");
    assert_eq!(p.new.heap_offset, p.old.heap_offset);
    assert_eq!(p.new.cluster_count, p.old.cluster_count / 8);
    assert!(p.new.fat_offset >= p.old.fat_offset + p.old.fat_bytes);
    assert!(p.new.fat_offset + p.new.fat_bytes <= p.intent_offset);
    // The two placed files keep their place (and a small one that starts
    // a group may); every other file with data (the empty one has none) is
    // copied.
    assert!(c.files_kept >= 2 && c.files_kept < 5, "{c:?}");
    assert_eq!(c.files_kept + c.files_moved, want.len() as u64 - 1);
    assert_eq!(p.files, want.len() as u64);
    assert_eq!(c.bytes_moved, p.clusters_moved * K4);
    let (a_old, a_new) = p.files_allocated;
    assert!(a_new > a_old);
    assert_eq!(c.slack.1, a_new - p.file_bytes);
    assert!(p.space_gained() < 0);
    assert!(p.bytes_written > c.bytes_moved && p.bytes_read > c.bytes_moved);
}

#[test]
fn a_larger_recluster_keeps_every_file_and_runs_again_as_nothing() {
    let (mut disk, want) = coarse_image(16 << 20, K4, 3, 8);
    let (m0, sets0) = model_of(&disk).unwrap();
    let job = recluster(&mut disk, K32).unwrap();
    let p = job.plan.unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, K32);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    let free = (u64::from(m.geometry.cluster_count) - m.used.count_set()) * K32;
    assert_eq!(free, p.free_after);
    assert!(read(&disk, p.intent_offset, 512).iter().all(|&b| b == 0));
    // The kept files' first clusters are their old groups.
    let (_, sets) = model_of(&disk).unwrap();
    for path in ["/kept/across.bin", "/kept/whole.bin"] {
        let old = sets0.iter().find(|s| s.path == path).unwrap();
        let new = sets.iter().find(|s| s.path == path).unwrap();
        assert_eq!(new.first_cluster, (old.first_cluster - 2) / 8 + 2, "{path}");
        assert_eq!(new.contiguous, old.contiguous, "{path}");
    }
    assert_eq!(m.geometry.data_offset, m0.geometry.data_offset);
    assert_eq!(plan(&mut disk, K32).unwrap().step, Step::Nothing);
    // Up again, then down to where it started.
    recluster(&mut disk, 128 << 10).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, 128 << 10);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    recluster(&mut disk, K4).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, K4);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
}

#[test]
fn small_files_that_do_not_fit_at_the_larger_size_are_refused_unchanged() {
    // 2,000 files of 100 bytes: 8 MB at 4 KiB, 64 MB at 32 KiB.
    let size = 24u64 << 20;
    let opts = FormatOptions::new()
        .fs(FsKind::Exfat)
        .cluster(ClusterChoice::Bytes(K4))
        .serial(1);
    let layout = layout_plan(&opts, &Medium::whole(size, 512).unwrap()).unwrap();
    let mut tree = Tree::new();
    for i in 0..2000 {
        let path = format!("/d{}/f{i}", i / 400);
        let data = std::io::Cursor::new(vec![u8::try_from(i % 251).unwrap(); 100]);
        tree.add_file(&path, data, 100, SystemTime::UNIX_EPOCH)
            .unwrap();
    }
    let mut populated = plan_tree(tree, &layout, TimePolicy::default()).unwrap();
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    populated
        .write_to(&mut disk, Prior::Unknown, &mut |_, _| {})
        .unwrap();
    let before = disk.as_bytes().to_vec();
    match recluster(&mut disk, K32) {
        Err(ReclusterError::Refused(r @ Refusal::TooLittleSpace { need, free })) => {
            // A small file that happens to start a group keeps its place.
            assert!(need > 1500 * K32 && need > free, "{need} {free}");
            assert!(r.to_string().contains("free at least"), "{r}");
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(disk.as_bytes() == &before[..]);
}

/// A sweep from `cluster` to `k` times it; every trial's rerun holds every
/// file, at the new size with no finding, byte for byte as an uncut run.
fn sweep(size: u64, cluster: u64, k: u32, dirs: usize, seeds: u64) -> SweepReport {
    let (disk, want) = coarse_image(size, cluster, dirs, k);
    let to = cluster * u64::from(k);
    let c = plan(&mut disk.clone(), to).unwrap().plan.unwrap().coarse;
    eprintln!("{} files: {c:?}", want.len());
    let job = |dev: &mut dyn BlockIo| recluster(dev, to).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(&disk, job, |t| {
            let m = match check_tree(t.medium, &want) {
                Ok(m) => m,
                Err(_) if t.stage == Stage::BeforeRerun => return Ok(false),
                Err(e) => return Err(e),
            };
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != to || !m.findings.is_empty() {
                    return Err(format!(
                        "cluster {} findings {:?}",
                        m.geometry.cluster_size, m.findings
                    ));
                }
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            }
            Ok(true)
        })
        .unwrap()
}

#[test]
fn power_cuts_from_4k_to_32k_leave_every_file_intact() {
    let report = sweep(16 << 20, K4, 8, 6, 6);
    eprintln!("recluster sweep, 4 KiB to 32 KiB: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points >= report.ops as usize && report.ops > 50);
    assert_eq!(report.intact_before_rerun, report.trials, "{report}");
}

#[test]
fn power_cuts_from_16k_to_128k_leave_every_file_intact() {
    let report = sweep(48 << 20, 16 << 10, 8, 2, 4);
    eprintln!("recluster sweep, 16 KiB to 128 KiB: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points >= report.ops as usize && report.ops > 30);
    assert_eq!(report.intact_before_rerun, report.trials, "{report}");
}

/// A volume whose FAT ends right at the heap (aligned to 16 KiB), at 4 KiB.
fn no_gap(dirs: usize) -> (MemDisk, Vec<(String, usize)>) {
    let shape = Shape {
        size: 32 << 20,
        cluster: K4,
        sector: 512,
        mbr: false,
        dirs,
        align: 16 << 10,
    };
    (shaped(shape), shape.files())
}

#[test]
fn without_a_gap_the_new_fat_takes_the_old_fats_entries_of_free_clusters() {
    let (mut disk, want) = no_gap(2);
    let (m, _) = model_of(&disk).unwrap();
    let g = &m.geometry;
    assert!(g.data_offset - g.fat_offset - g.fat_bytes < 4096, "{g:?}");
    let p = plan(&mut disk, K32).unwrap().plan.unwrap();
    let last = (2..=g.cluster_count + 1).rev().find(|&c| m.used.get(c));
    let unread = p.old.fat_offset + (u64::from(last.unwrap()) + 1) * 4;
    assert!(p.new.fat_offset >= unread, "{p:?}");
    assert!(p.new.fat_offset < p.old.fat_offset + p.old.fat_bytes);
    assert!(p.new.fat_offset + p.new.fat_bytes <= p.intent_offset);
    recluster(&mut disk, K32).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, K32);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
}

#[test]
fn without_a_gap_and_the_last_cluster_in_use_it_is_refused_unchanged() {
    let (mut disk, _) = no_gap(0);
    let (m, _) = model_of(&disk).unwrap();
    let last = m.geometry.cluster_count + 1;
    relocate(&mut disk, "/one-cluster.bin", &[last], false);
    let before = disk.as_bytes().to_vec();
    match recluster(&mut disk, K32) {
        Err(ReclusterError::Refused(Refusal::Unsupported { what })) => {
            assert!(what.contains("new FAT"), "{what}");
        }
        other => panic!("{:?}", other.map(|j| j.step)),
    }
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn power_cuts_without_a_gap_leave_every_file_intact() {
    let (disk, want) = no_gap(4);
    let job = |dev: &mut dyn BlockIo| recluster(dev, K32).map(|_| ());
    let report = Sweep::new()
        .seeds(3)
        .run(&disk, job, |t| {
            let m = check_tree(t.medium, &want)?;
            if t.stage == Stage::AfterRerun
                && (m.geometry.cluster_size != K32 || !m.findings.is_empty())
            {
                return Err(format!("after the rerun: {:?}", m.findings));
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("recluster sweep, 4 KiB to 32 KiB, no gap: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials, "{report}");
}

#[test]
fn a_cut_larger_job_is_found_unfinished_until_it_is_run_again() {
    use mkfs_alloc_blockio::PowerCutIo;
    let (disk, want) = coarse_image(16 << 20, K4, 0, 8);
    let (m, _) = model_of(&disk).unwrap();
    let h = m.geometry.data_offset;
    // Cut after the intent record and VolumeDirty are flushed, inside the
    // copies.
    let mut cut = PowerCutIo::new(disk, 8, 1);
    assert!(recluster(&mut cut, K32).is_err());
    let mut d = cut.into_surviving().unwrap();
    check_tree(&d, &want).unwrap();
    assert_eq!(unfinished(&mut d, h, 512).unwrap(), Some(K32));
    assert!(matches!(
        plan(&mut d, 64 << 10),
        Err(ReclusterError::OtherJob { cluster: K32 })
    ));
    assert_eq!(plan(&mut d, K32).unwrap().step, Step::Redo);
    recluster(&mut d, K32).unwrap();
    assert_eq!(unfinished(&mut d, h, 512).unwrap(), None);
    let m = check_tree(&d, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, K32);
}

#[test]
fn power_cuts_with_4096_byte_sectors_inside_an_mbr_partition() {
    let shape = Shape {
        size: 24 << 20,
        cluster: 16 << 10,
        sector: 4096,
        mbr: true,
        dirs: 3,
        align: 0,
    };
    let (disk, want) = (shaped(shape), shape.files());
    let to = 128 << 10;
    let p = plan(&mut disk.clone(), to).unwrap().plan.unwrap();
    let c = p.coarse.unwrap();
    assert!(c.files_moved > 0 && p.volume_start > 0, "{c:?}");
    let job = |dev: &mut dyn BlockIo| recluster(dev, to).map(|_| ());
    let report = Sweep::new()
        .seeds(2)
        .run(&disk, job, |t| {
            let m = check_tree(t.medium, &want)?;
            if t.stage == Stage::AfterRerun
                && (m.geometry.cluster_size != to || !m.findings.is_empty())
            {
                return Err(format!("after the rerun: {:?}", m.findings));
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("recluster sweep, 16 KiB to 128 KiB, 4 KiB sectors, MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials, "{report}");
}
