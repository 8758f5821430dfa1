//! Bad clusters carried over: old clusters marked bad in the FAT (their
//! bitmap bit set on one, clear on another, as drivers leave either) right
//! where the job's copies would go first, filled with a sentinel. After
//! the job each is its new clusters marked bad and set in the bitmap, the
//! sentinel untouched; under a power-cut sweep every trial keeps the files
//! and the sentinel; the evacuation avoids them too; one where the new FAT
//! goes is refused.

use super::*;
use mkfs_alloc_inspect::model::Finding;

/// The byte the bad clusters are filled with.
const SENTINEL: u8 = 0xBD;

/// FAT entry `n` of the volume `m` describes.
fn fat_entry(disk: &MemDisk, m: &VolumeModel, n: u32) -> u32 {
    let b = read(disk, m.geometry.fat_offset + 4 * u64::from(n), 4);
    u32::from_le_bytes(b.try_into().unwrap())
}

/// Absolute byte offset of cluster `c`.
fn cluster_at(m: &VolumeModel, c: u32) -> u64 {
    m.geometry.data_offset + u64::from(c - 2) * m.geometry.cluster_size
}

/// Whether the bitmap of `m`'s volume has cluster `c` set.
fn bit(disk: &MemDisk, m: &VolumeModel, c: u32) -> bool {
    let (first, _) = m.bitmap.unwrap();
    let i = u64::from(c - 2);
    read(disk, cluster_at(m, first) + i / 8, 1)[0] >> (i % 8) & 1 != 0
}

/// Marks the first two free old clusters and one in the middle of the free
/// space bad (the first with its bitmap bit set), fills them with the
/// sentinel; returns them, in order.
fn mark_bad(disk: &mut MemDisk) -> Vec<u32> {
    let (m, _) = model_of(disk).unwrap();
    let g = m.geometry.clone();
    let free: Vec<u32> = (2..=g.cluster_count + 1)
        .filter(|&c| !m.used.get(c))
        .collect();
    let bad = vec![free[0], free[1], free[free.len() / 2]];
    for (i, &c) in bad.iter().enumerate() {
        patch(
            disk,
            g.fat_offset + 4 * u64::from(c),
            &BAD_ENTRY.to_le_bytes(),
        );
        let fill = vec![SENTINEL; usize::try_from(g.cluster_size).unwrap()];
        patch(disk, cluster_at(&m, c), &fill);
        if i == 0 {
            let (first, _) = m.bitmap.unwrap();
            let at = cluster_at(&m, first) + u64::from(c - 2) / 8;
            let b = read(disk, at, 1)[0] | 1 << ((c - 2) % 8);
            patch(disk, at, &[b]);
        }
    }
    let (m, _) = model_of(disk).unwrap();
    assert_eq!(
        m.findings,
        vec![Finding::BadClusters {
            count: 3,
            first: bad[0]
        }]
    );
    bad
}

/// The FAT entry of a bad cluster (exFAT specification §4.1.3).
const BAD_ENTRY: u32 = 0xFFFF_FFF7;

/// The bytes of the old clusters `bad` (of `old` bytes each, the heap at
/// `heap`) are still the sentinel.
fn sentinel_kept(disk: &MemDisk, heap: u64, old: u64, bad: &[u32]) -> Result<(), String> {
    for &c in bad {
        let at = heap + u64::from(c - 2) * old;
        if read(disk, at, usize::try_from(old).unwrap())
            .iter()
            .any(|&b| b != SENTINEL)
        {
            return Err(format!("bad old cluster {c} was written"));
        }
    }
    Ok(())
}

/// The volume after the job: each bad old cluster's new clusters marked
/// bad in the FAT and set in the bitmap, the model finding just them.
fn carried(disk: &MemDisk, m: &VolumeModel, p: &Plan) -> Result<(), String> {
    let mut n_bad = 0u64;
    for &c in &p.bad_clusters {
        let first = p.translate(c);
        for n in first..first + p.ratio {
            if fat_entry(disk, m, n) != BAD_ENTRY || !bit(disk, m, n) {
                return Err(format!("new cluster {n} (of old {c}) is not bad and set"));
            }
            n_bad += 1;
        }
    }
    let want = vec![Finding::BadClusters {
        count: n_bad,
        first: p.translate(p.bad_clusters[0]),
    }];
    if m.findings != want {
        return Err(format!("findings {:?}", m.findings));
    }
    Ok(())
}

#[test]
fn bad_clusters_are_carried_over_and_never_written() {
    let mut disk = image(SIZE, OLD);
    let bad = mark_bad(&mut disk);
    let (m0, _) = model_of(&disk).unwrap();
    let heap = m0.geometry.data_offset;
    let p = plan(&mut disk, 4096).unwrap().plan.unwrap();
    assert_eq!(p.bad_clusters, bad);
    // Their new clusters count as taken after the switch.
    let job = recluster(&mut disk, 4096).unwrap();
    let m = check_files(&disk, 32 << 10).unwrap();
    assert_eq!(m.geometry.cluster_size, 4096);
    carried(&disk, &m, &p).unwrap();
    sentinel_kept(&disk, heap, OLD, &bad).unwrap();
    let taken = m.used.count_set() + 3 * 8;
    let free = (u64::from(m.geometry.cluster_count) - taken) * 4096;
    assert_eq!(Some(free), job.plan.map(|p| p.free_after));
    assert_eq!(plan(&mut disk, 4096).unwrap().step, Step::Nothing);
    // And down again: the 4 KiB volume's bad clusters carried to 512 bytes.
    let p = recluster(&mut disk, 512).unwrap().plan.unwrap();
    assert_eq!(p.bad_clusters.len(), 3 * 8);
    let m = check_files(&disk, 32 << 10).unwrap();
    carried(&disk, &m, &p).unwrap();
    sentinel_kept(&disk, heap, OLD, &bad).unwrap();
}

#[test]
fn power_cuts_with_bad_clusters_keep_the_files_and_never_write_them() {
    let mut disk = image(SIZE, OLD);
    let bad = mark_bad(&mut disk);
    let heap = model_of(&disk).unwrap().0.geometry.data_offset;
    let p = plan(&mut disk.clone(), 4096).unwrap().plan.unwrap();
    let job = |dev: &mut dyn BlockIo| recluster(dev, 4096).map(|_| ());
    let report = Sweep::new()
        .seeds(6)
        .run(&disk, job, |t| {
            sentinel_kept(t.medium, heap, OLD, &bad)?;
            let m = match check_files(t.medium, 32 << 10) {
                Ok(m) => m,
                Err(e) if t.stage == Stage::BeforeRerun && e.contains("exFAT") => return Ok(false),
                Err(e) => return Err(e),
            };
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != 4096 {
                    return Err(format!("cluster {}", m.geometry.cluster_size));
                }
                carried(t.medium, &m, &p)?;
            }
            Ok(true)
        })
        .unwrap();
    eprintln!("recluster sweep with bad clusters: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
}

#[test]
fn an_evacuation_avoids_bad_clusters() {
    let shape = Shape {
        size: 32 << 20,
        cluster: 32 << 10,
        sector: 512,
        mbr: false,
        dirs: 2,
        align: 16 << 10,
    };
    let (mut disk, want) = (shaped(shape), shape.files());
    let bad = mark_bad(&mut disk);
    let (m0, _) = model_of(&disk).unwrap();
    let p = plan(&mut disk, 512).unwrap().plan.unwrap();
    let e = p.evacuate.clone().unwrap();
    assert!(
        e.moved > 0 && bad.iter().all(|&c| c >= 2 + e.clusters),
        "{e:?}"
    );
    recluster(&mut disk, 512).unwrap();
    let m = check_tree(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, 512);
    sentinel_kept(&disk, m0.geometry.data_offset, 32 << 10, &bad).unwrap();
    // The second phase's plan, from the intermediate volume, carried them.
    let bad_new: u64 = bad.len() as u64 * 64;
    assert!(
        matches!(m.findings[..], [Finding::BadClusters { count, .. }] if count == bad_new),
        "{:?}",
        m.findings
    );
    for &c in &bad {
        let at = m0.geometry.data_offset + u64::from(c - 2) * (32 << 10);
        let n = u32::try_from((at - m.geometry.data_offset) / 512).unwrap() + 2;
        assert!((n..n + 64).all(|n| fat_entry(&disk, &m, n) == BAD_ENTRY && bit(&disk, &m, n)));
    }
}

#[test]
fn a_bad_cluster_where_the_new_fat_goes_is_refused() {
    let shape = Shape {
        size: 32 << 20,
        cluster: 32 << 10,
        sector: 512,
        mbr: false,
        dirs: 0,
        align: 16 << 10,
    };
    let mut disk = shaped(shape);
    let mut p = plan(&mut disk, 512).unwrap().plan.unwrap();
    assert!(p.evacuate.is_some());
    match super::super::bad::carry(&mut p, vec![3]) {
        Err(Refusal::Unsupported { what }) => assert!(what.contains("new FAT"), "{what}"),
        other => panic!("{other:?}"),
    }
}
