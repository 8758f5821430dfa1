//! Re-cluster of FAT16 and FAT12 volumes our formatter makes and fills
//! (one file fragmented by hand afterwards): the plan's geometry, the
//! whole job, the refusals, and power-cut sweeps whose every trial, rerun,
//! holds every file byte for byte (read through the model's walk and this
//! file's own chain reader, and through the `fatfs` crate).

use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;

/// A volume of `kind` of `size` bytes at `cluster`-byte clusters holding
/// the test tree with `dirs` more directories; `/photos/frag-1.raw`
/// fragmented.
pub(super) fn small(
    kind: FsKind,
    size: u64,
    cluster: u64,
    dirs: usize,
) -> (MemDisk, Vec<(String, usize)>) {
    small_in(
        kind,
        size,
        cluster,
        dirs,
        mkfs_alloc_partition::TableKind::None,
    )
}

/// [`small`] inside a partition table of `table`.
pub(super) fn small_in(
    kind: FsKind,
    size: u64,
    cluster: u64,
    dirs: usize,
    table: mkfs_alloc_partition::TableKind,
) -> (MemDisk, Vec<(String, usize)>) {
    let want = files_in(usize::try_from(cluster).unwrap(), dirs);
    let mut disk = small_with(kind, size, cluster, &want, table);
    fragment_small(&mut disk, "/photos/frag-1.raw");
    (disk, want)
}

/// A volume of `kind` of `size` bytes at `cluster`-byte clusters holding
/// the files `want`.
pub(super) fn small_with(
    kind: FsKind,
    size: u64,
    cluster: u64,
    want: &[(String, usize)],
    table: mkfs_alloc_partition::TableKind,
) -> MemDisk {
    use crate::populate::{TimePolicy as Tp, Tree as T};
    let opts = crate::MediumOptions::new()
        .fs(kind)
        .cluster_size(cluster)
        .table(table)
        .pinned(
            7,
            mkfs_alloc_layout::Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        );
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    let mut tree = T::new();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (path, len) in want {
        let data = content(path, *len);
        tree.add_file(path, std::io::Cursor::new(data), *len as u64, t)
            .unwrap();
    }
    let mut plan = opts
        .plan_for(&disk)
        .unwrap()
        .populate(tree, Tp::default())
        .unwrap();
    plan.format(&mut disk).unwrap();
    disk
}

/// Entry bits of the volume `g` describes.
fn bits(g: &mkfs_alloc_inspect::model::Geometry) -> u64 {
    if g.kind == FsKind::Fat12 {
        12
    } else {
        16
    }
}

/// FAT entry `n` of FAT `copy`.
pub(super) fn entry(
    disk: &MemDisk,
    g: &mkfs_alloc_inspect::model::Geometry,
    copy: u64,
    n: u32,
) -> u32 {
    let base = g.fat_offset + copy * g.fat_bytes;
    let pos = u64::from(n) * bits(g) / 8;
    let b = read(disk, base + pos, 2);
    let v = u32::from(u16::from_le_bytes([b[0], b[1]]));
    match (bits(g), n & 1) {
        (12, 1) => v >> 4,
        (12, _) => v & 0xFFF,
        _ => v,
    }
}

/// Sets FAT entry `n` in every FAT.
pub(super) fn set_entry(
    disk: &mut MemDisk,
    g: &mkfs_alloc_inspect::model::Geometry,
    n: u32,
    v: u32,
) {
    for copy in 0..u64::from(g.fat_count) {
        let base = g.fat_offset + copy * g.fat_bytes;
        let pos = u64::from(n) * bits(g) / 8;
        let mut b = read(disk, base + pos, 2);
        let w = u16::try_from(v & 0xFFFF).unwrap().to_le_bytes();
        match (bits(g), n & 1) {
            (12, 1) => {
                b[0] = (b[0] & 0x0F) | (w[0] << 4);
                b[1] = u8::try_from((v >> 4) & 0xFF).unwrap();
            }
            (12, _) => {
                b[0] = w[0];
                b[1] = (b[1] & 0xF0) | (w[1] & 0x0F);
            }
            _ => b.copy_from_slice(&w),
        }
        patch(disk, base + pos, &b);
    }
}

/// Moves the second half of a file's clusters past every used cluster.
fn fragment_small(disk: &mut MemDisk, path: &str) {
    let (m, sets) = model_of(disk).unwrap();
    let g = m.geometry.clone();
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    let mut chain = vec![s.first_cluster];
    while chain.len() < usize::try_from(s.clusters).unwrap() {
        chain.push(entry(disk, &g, 0, *chain.last().unwrap()));
    }
    let last_used = (2..=g.cluster_count + 1)
        .rev()
        .find(|&c| m.used.get(c))
        .unwrap();
    let keep = chain.len() / 2;
    let cs = usize::try_from(g.cluster_size).unwrap();
    let at = |c: u32| g.data_offset + u64::from(c - 2) * g.cluster_size;
    for (i, c) in chain.iter_mut().enumerate().skip(keep) {
        let dest = last_used + 5 + u32::try_from(i).unwrap();
        let data = read(disk, at(*c), cs);
        patch(disk, at(dest), &data);
        set_entry(disk, &g, *c, 0);
        *c = dest;
    }
    let eoc = if bits(&g) == 12 { 0xFFF } else { 0xFFFF };
    for (i, &c) in chain.iter().enumerate() {
        set_entry(disk, &g, c, chain.get(i + 1).copied().unwrap_or(eoc));
    }
}

/// Checks that `disk` holds exactly `want` through the model's entry sets
/// and the FAT's chains; returns the model.
pub(super) fn check_small(disk: &MemDisk, want: &[(String, usize)]) -> Result<VolumeModel, String> {
    let (m, sets) = model_of(disk).map_err(|e| e.to_string())?;
    let g = &m.geometry;
    let cs = usize::try_from(g.cluster_size).unwrap();
    let mut got = BTreeMap::new();
    for s in sets.iter().filter(|s| !s.is_dir) {
        let (mut data, mut c) = (Vec::new(), s.first_cluster);
        for _ in 0..s.size.div_ceil(g.cluster_size) {
            if !(2..=g.cluster_count + 1).contains(&c) {
                return Err(format!("{}: chain leaves the data region at {c}", s.path));
            }
            let off = g.data_offset + u64::from(c - 2) * g.cluster_size;
            data.extend(read(disk, off, cs));
            c = entry(disk, g, 0, c);
        }
        data.truncate(usize::try_from(s.size).unwrap());
        got.insert(s.path.clone(), data);
    }
    for (path, len) in want {
        match got.get(path) {
            Some(d) if *d == content(path, *len) => {}
            Some(_) => return Err(format!("{path}: content differs")),
            None => return Err(format!("{path}: missing")),
        }
    }
    if got.len() != want.len() {
        return Err(format!("{} files, {} expected", got.len(), want.len()));
    }
    Ok(m)
}

/// The same check through the `fatfs` crate (an independent reader).
pub(super) fn check_fatfs(disk: &MemDisk, want: &[(String, usize)]) -> Result<(), String> {
    use std::io::Read;
    let fs = fatfs::FileSystem::new(
        std::io::Cursor::new(disk.as_bytes().to_vec()),
        fatfs::FsOptions::new(),
    )
    .map_err(|e| format!("fatfs: {e}"))?;
    for (path, len) in want {
        let mut f = fs
            .root_dir()
            .open_file(path.trim_start_matches('/'))
            .map_err(|e| format!("fatfs: {path}: {e}"))?;
        let mut data = Vec::new();
        f.read_to_end(&mut data)
            .map_err(|e| format!("fatfs: {path}: {e}"))?;
        if data != content(path, *len) {
            return Err(format!("fatfs: {path}: content differs"));
        }
    }
    Ok(())
}

pub(super) fn refused(r: Result<Job, ReclusterError>) -> Refusal {
    match r {
        Err(ReclusterError::Refused(r)) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    }
}

/// 16 MiB at 2 KiB: about 8,100 clusters; 32,600 at 512 bytes (FAT16).
const F16: u64 = 16 << 20;
/// 3 MiB at 2 KiB: about 1,500 clusters; 3,000 at 1 KiB (FAT12).
const F12: u64 = 3 << 20;

#[test]
fn the_plan_puts_the_new_fats_and_root_into_free_clusters() {
    for (kind, size, to) in [(FsKind::Fat16, F16, 512), (FsKind::Fat12, F12, 1024)] {
        let (mut disk, want) = small(kind, size, 2048, 2);
        let (m, _) = model_of(&disk).unwrap();
        assert!(!m.refused(), "{:?}", m.findings);
        assert_eq!(m.geometry.kind, kind);
        let job = plan(&mut disk, to).unwrap();
        assert_eq!(job.step, Step::Start);
        let p = job.plan.unwrap();
        let f = p.fat.clone().unwrap();
        assert_eq!(f.kind, kind);
        assert_eq!(p.new.heap_offset, p.old.heap_offset + f.covered * 2048);
        // The FATs and the root region (512 entries) end where data starts.
        assert_eq!(
            p.new.fat_offset + 2 * p.new.fat_bytes + 32 * 512,
            p.new.heap_offset
        );
        assert!(p.new.fat_offset > p.old.heap_offset);
        assert_eq!(u64::from(f.reserved.1) * 512, p.new.fat_offset);
        assert_eq!(
            FsKind::fat_width(u64::from(p.new.cluster_count)),
            kind,
            "{p:?}"
        );
        assert!(f.in_use > 0 && p.clusters_moved > 0);
        assert_eq!(p.files, want.len() as u64);
    }
}

/// Runs the whole job on a FAT volume of `kind` at `from`-byte clusters to
/// `to` and checks its result.
pub(super) fn whole_job(kind: FsKind, size: u64, (from, to): (u64, u64)) {
    let (mut disk, want) = small(kind, size, from, 3);
    let job = recluster(&mut disk, to).unwrap();
    let p = job.plan.unwrap();
    let m = check_small(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, to);
    assert_eq!(m.geometry.kind, kind);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    check_fatfs(&disk, &want).unwrap();
    let free = u64::from(m.geometry.cluster_count) - m.used.count_set();
    assert_eq!(free * to, p.free_after);
    // Both records are zeroed; running again is nothing to do.
    let rsvd = (m.geometry.fat_offset - m.geometry.start) / 512;
    assert!(read(&disk, (rsvd - 1) * 512, 512).iter().all(|&b| b == 0));
    assert_eq!(plan(&mut disk, to).unwrap().step, Step::Nothing);
}

#[test]
fn a_fat16_recluster_keeps_every_file_and_runs_again_as_nothing() {
    whole_job(FsKind::Fat16, F16, (2048, 512));
    whole_job(FsKind::Fat16, F16, (2048, 1024));
}

#[test]
fn a_fat12_recluster_keeps_every_file_and_runs_again_as_nothing() {
    whole_job(FsKind::Fat12, F12, (2048, 1024));
}

#[test]
fn a_fat16_in_an_mbr_partition_reclusters_and_its_table_stays() {
    let mbr = mkfs_alloc_partition::TableKind::Mbr;
    let (mut disk, want) = small_in(FsKind::Fat16, F16 + (1 << 20), 2048, 2, mbr);
    let (m, _) = model_of(&disk).unwrap();
    assert!(m.geometry.start > 0);
    let table = read(&disk, 0, 512);
    recluster(&mut disk, 1024).unwrap();
    let m = check_small(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, 1024);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    assert_eq!(read(&disk, 0, 512), table);
    let g = &m.geometry;
    let part = disk.as_bytes()[usize::try_from(g.start).unwrap()..].to_vec();
    let inner = MemDisk::from_vec(512, part).unwrap();
    check_fatfs(&inner, &want).unwrap();
}

#[test]
fn a_count_of_another_width_is_refused_naming_convert_and_writes_nothing() {
    // 64 MiB at 2 KiB: about 32,700 clusters (FAT16); 131,000 at 512 bytes.
    let (mut disk, _) = small(FsKind::Fat16, 64 << 20, 2048, 0);
    let before = disk.as_bytes().to_vec();
    match refused(recluster(&mut disk, 512)) {
        Refusal::Fat(r @ FatRefusal::WidthChange { kind, from, .. }) => {
            assert_eq!((from, kind), (FsKind::Fat16, FsKind::Fat32));
            assert!(r.to_string().contains("convert"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(disk.as_bytes() == &before[..]);
    // 3 MiB at 2 KiB to 512 bytes: about 6,000 clusters, FAT16's.
    let (mut disk, _) = small(FsKind::Fat12, F12, 2048, 0);
    let before = disk.as_bytes().to_vec();
    match refused(recluster(&mut disk, 512)) {
        Refusal::Fat(r @ FatRefusal::WidthChange { kind, .. }) => {
            assert_eq!(kind, FsKind::Fat16);
            assert!(r.to_string().contains("convert"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        refused(recluster(&mut disk, 1000)),
        Refusal::InvalidSize { .. }
    ));
    assert!(disk.as_bytes() == &before[..]);
}

/// A sweep over a volume to `to`-byte clusters.
pub(super) fn sweep_small(
    disk: &MemDisk,
    want: &[(String, usize)],
    to: u64,
    seeds: u64,
) -> SweepReport {
    let job = |dev: &mut dyn BlockIo| recluster(dev, to).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = check_small(t.medium, want)?;
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != to || !m.findings.is_empty() {
                    return Err(format!("after the rerun: {:?}", m.findings));
                }
                if t.medium.as_bytes() != t.reference.as_bytes() {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
                check_fatfs(t.medium, want)?;
            }
            Ok(true)
        })
        .unwrap()
}

#[test]
fn fat16_power_cuts_at_every_write_leave_every_file_intact() {
    let (disk, want) = small(FsKind::Fat16, F16, 2048, 150);
    let report = sweep_small(&disk, &want, 512, 2);
    eprintln!("FAT16 recluster sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 100, "{report}");
}

#[test]
fn fat12_power_cuts_at_every_write_leave_every_file_intact() {
    let (disk, want) = small(FsKind::Fat12, F12, 2048, 60);
    let report = sweep_small(&disk, &want, 1024, 2);
    eprintln!("FAT12 recluster sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 100, "{report}");
}

#[test]
fn a_cut_small_fat_job_is_redone_before_its_switch_and_finished_after_it() {
    for (kind, size) in [(FsKind::Fat16, F16), (FsKind::Fat12, F12)] {
        cut_everywhere(kind, size, (2048, 1024), 512);
    }
}

/// Cuts the job on a volume of `kind` from `from` to `to` at every write:
/// the cut medium names the job (`info`'s reader) until the rerun finishes
/// it, refuses a job to `other`, and holds every file after the rerun.
pub(super) fn cut_everywhere(kind: FsKind, size: u64, (from, to): (u64, u64), other: u64) {
    use mkfs_alloc_blockio::PowerCutIo;
    {
        let (disk, want) = small(kind, size, from, 0);
        let ops = {
            let mut count = PowerCutIo::counting(disk.clone());
            recluster(&mut count, to).unwrap();
            count.ops_seen()
        };
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..ops {
            let mut cut = PowerCutIo::new(disk.clone(), k, 0);
            assert!(recluster(&mut cut, to).is_err());
            let mut d = cut.into_surviving().unwrap();
            let step = plan(&mut d, to).unwrap().step;
            let (m, _) = model_of(&d).unwrap();
            let named = super::super::unfinished_small_fat(&mut d, &m.geometry).unwrap();
            // Nothing: a cut at the last flush that kept its write (done).
            let unfinished = matches!(step, Step::Redo | Step::Finish);
            assert_eq!(named.is_some(), unfinished, "{kind:?} cut at {k}: {step:?}");
            if let Some(c) = named {
                assert_eq!(c, to, "cut at {k}");
            }
            if matches!(step, Step::Redo | Step::Finish) {
                assert!(
                    matches!(
                        plan(&mut d, other),
                        Err(ReclusterError::OtherJob { cluster }) if cluster == to
                    ),
                    "cut at {k}: {step:?}"
                );
            }
            seen.insert(step.to_string());
            recluster(&mut d, to).unwrap();
            let m = check_small(&d, &want).unwrap();
            assert!(m.findings.is_empty(), "cut at {k}: {:?}", m.findings);
            assert_eq!(
                super::super::unfinished_small_fat(&mut d, &m.geometry).unwrap(),
                None,
                "cut at {k}: done"
            );
        }
        for s in [Step::Start, Step::Redo, Step::Finish] {
            assert!(seen.contains(&s.to_string()), "{kind:?} {seen:?}");
        }
    }
}
