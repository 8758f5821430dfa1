//! Re-cluster of FAT32 volumes our formatter makes and fills (one file
//! fragmented by hand afterwards): the plan's geometry, the whole job, the
//! refusals, and a power-cut sweep whose every trial, rerun, holds every
//! file byte for byte (read through the model's walk and this file's own
//! chain reader, and after the rerun through the `fatfs` crate too).

use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;

/// The partition table of a test image (`None`: the whole medium).
pub(super) type Table = Option<mkfs_alloc_partition::TableKind>;

/// A FAT32 volume of `size` bytes at `cluster`-byte clusters holding the
/// test tree with `dirs` more directories, through the facade (inside a
/// partition of `table`); `/photos/frag-1.raw` fragmented.
pub(super) fn fat32(
    size: u64,
    cluster: u64,
    dirs: usize,
    table: Table,
) -> (MemDisk, Vec<(String, usize)>) {
    let want = files_in(usize::try_from(cluster).unwrap(), dirs);
    (fat32_with(size, cluster, &want, table), want)
}

/// [`fat32`] holding the files `want`.
pub(super) fn fat32_with(
    size: u64,
    cluster: u64,
    want: &[(String, usize)],
    table: Table,
) -> MemDisk {
    fat32_on(512, size, cluster, want, table)
}

/// [`fat32_with`] on a medium of `sector`-byte sectors.
pub(super) fn fat32_on(
    sector: u32,
    size: u64,
    cluster: u64,
    want: &[(String, usize)],
    table: Table,
) -> MemDisk {
    use crate::populate::{TimePolicy as Tp, Tree as T};
    let mut opts = crate::MediumOptions::new()
        .fs(FsKind::Fat32)
        .cluster_size(cluster)
        .sector_size(sector)
        .unwrap()
        .pinned(
            7,
            mkfs_alloc_layout::Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        );
    if let Some(kind) = table {
        opts = opts.table(kind);
    }
    let mut disk = MemDisk::new(sector, size / u64::from(sector)).unwrap();
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
    fragment_fat(&mut disk, "/photos/frag-1.raw");
    disk
}

/// The bytes of a test medium at an offset.
pub(super) trait Bytes {
    /// `len` bytes from byte `offset`.
    fn bytes(&self, offset: u64, len: usize) -> Vec<u8>;
}

impl Bytes for MemDisk {
    fn bytes(&self, offset: u64, len: usize) -> Vec<u8> {
        read(self, offset, len)
    }
}

/// FAT entry `n` (FAT32) of the first FAT.
fn entry(disk: &impl Bytes, g: &mkfs_alloc_inspect::model::Geometry, n: u32) -> u32 {
    let b = disk.bytes(g.fat_offset + 4 * u64::from(n), 4);
    u32::from_le_bytes(b.try_into().unwrap()) & 0x0FFF_FFFF
}

/// Moves the second half of a file's clusters past every used cluster,
/// in both FATs: a fragmented chain.
fn fragment_fat(disk: &mut MemDisk, path: &str) {
    let (m, sets) = model_of(disk).unwrap();
    let g = m.geometry.clone();
    let s = sets.iter().find(|s| s.path == path).unwrap().clone();
    let mut chain = vec![s.first_cluster];
    while chain.len() < usize::try_from(s.clusters).unwrap() {
        chain.push(entry(disk, &g, *chain.last().unwrap()));
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
        for copy in 0..u64::from(g.fat_count) {
            patch(
                disk,
                g.fat_offset + copy * g.fat_bytes + 4 * u64::from(*c),
                &[0; 4],
            );
        }
        *c = dest;
    }
    for (i, &c) in chain.iter().enumerate() {
        let next = chain.get(i + 1).copied().unwrap_or(0x0FFF_FFFF);
        for copy in 0..u64::from(g.fat_count) {
            let off = g.fat_offset + copy * g.fat_bytes + 4 * u64::from(c);
            patch(disk, off, &next.to_le_bytes());
        }
    }
    // FSInfo's free count stays right: as many clusters freed as taken.
}

/// Every file's bytes through the model's entry sets and the FAT's chains.
pub(super) fn fat_contents<D: BlockIo + Clone + Bytes>(
    disk: &D,
) -> Result<(VolumeModel, BTreeMap<String, Vec<u8>>), String> {
    let (m, sets) = model_of_io(disk).map_err(|e| e.to_string())?;
    let g = &m.geometry;
    let cs = usize::try_from(g.cluster_size).unwrap();
    let mut out = BTreeMap::new();
    for s in sets.iter().filter(|s| !s.is_dir) {
        let (mut data, mut c) = (Vec::new(), s.first_cluster);
        for _ in 0..s.size.div_ceil(g.cluster_size) {
            if !(2..=g.cluster_count + 1).contains(&c) {
                return Err(format!("{}: chain leaves the data region at {c}", s.path));
            }
            data.extend(disk.bytes(g.data_offset + u64::from(c - 2) * g.cluster_size, cs));
            c = entry(disk, g, c);
        }
        data.truncate(usize::try_from(s.size).unwrap());
        out.insert(s.path.clone(), data);
    }
    Ok((m, out))
}

/// Checks that `disk` holds exactly `want`; returns the model.
pub(super) fn check_fat<D: BlockIo + Clone + Bytes>(
    disk: &D,
    want: &[(String, usize)],
) -> Result<VolumeModel, String> {
    let (m, got) = fat_contents(disk)?;
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
    let (m, _) = model_of(disk).map_err(|e| e.to_string())?;
    let start = usize::try_from(m.geometry.start).unwrap();
    let len = usize::try_from(m.geometry.fs_bytes).unwrap();
    let bytes = disk.as_bytes()[start..start + len].to_vec();
    let fs = fatfs::FileSystem::new(std::io::Cursor::new(bytes), fatfs::FsOptions::new())
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

/// 72 MiB at 1 KiB clusters: about 73,000 clusters, 147,000 at 512 bytes
/// (FAT32 both).
const SIZE: u64 = 72 << 20;

#[test]
fn the_plan_puts_the_new_fats_into_free_clusters_and_covers_the_old_ones() {
    let (mut disk, want) = fat32(SIZE, 1024, 2, None);
    let (m, _) = model_of(&disk).unwrap();
    assert!(!m.refused(), "{:?}", m.findings);
    assert_eq!(m.geometry.kind, FsKind::Fat32);
    let job = plan(&mut disk, 512).unwrap();
    assert_eq!(job.step, Step::Start);
    let p = job.plan.unwrap();
    let f = p.fat.clone().unwrap();
    eprintln!("{:?}\n{:?}\n{f:?}", p.old, p.new);
    assert_eq!(p.ratio, 2);
    // The data region starts after the covered old clusters, the new FATs
    // end there, and the reserved sectors cover the old FATs.
    assert_eq!(p.new.heap_offset, p.old.heap_offset + f.covered * 1024);
    assert_eq!(p.new.fat_offset + 2 * p.new.fat_bytes, p.new.heap_offset);
    assert!(p.new.fat_offset >= p.old.heap_offset);
    assert_eq!(u64::from(f.reserved.1) * 512, p.new.fat_offset);
    assert!(p.new.fat_bytes >= (u64::from(p.new.cluster_count) + 2) * 4);
    assert!(p.new.cluster_count >= 65_525);
    // The files at the start of the data region are copied out.
    assert!(f.in_use > 0 && p.clusters_moved > 0 && p.clusters_moved <= f.in_use);
    assert_eq!(p.files, want.len() as u64);
    // The root and /docs, /docs/deep, /docs/deep/er, /many, /photos,
    // /tree and its four.
    assert_eq!(p.dirs.len(), 11);
}

#[test]
fn a_fat32_recluster_keeps_every_file_and_runs_again_as_nothing() {
    let (mut disk, want) = fat32(SIZE, 1024, 2, None);
    let job = recluster(&mut disk, 512).unwrap();
    let p = job.plan.unwrap();
    let m = check_fat(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, 512);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    check_fatfs(&disk, &want).unwrap();
    let free = u64::from(m.geometry.cluster_count) - m.used.count_set();
    assert_eq!(free * 512, p.free_after);
    // FSInfo says the free count; the boot sector and its backup agree.
    let fsinfo = read(&disk, 512 + 488, 4);
    assert_eq!(
        u64::from(u32::from_le_bytes(fsinfo.try_into().unwrap())),
        free
    );
    assert_eq!(read(&disk, 0, 512), read(&disk, 6 * 512, 512));
    assert!(read(&disk, 24 * 512, 512).iter().all(|&b| b == 0));
    assert_eq!(plan(&mut disk, 512).unwrap().step, Step::Nothing);
}

/// A volume of `kind` at `cluster`-byte clusters through the facade,
/// holding the test tree.
fn fat_of(kind: FsKind, size: u64, cluster: u64) -> MemDisk {
    let mut disk = MemDisk::new(512, size / 512).unwrap();
    let mut plan = crate::MediumOptions::new()
        .fs(kind)
        .cluster_size(cluster)
        .plan_for(&disk)
        .unwrap();
    plan.format(&mut disk).unwrap();
    disk
}

pub(super) fn refused(r: Result<Job, ReclusterError>) -> Refusal {
    match r {
        Err(ReclusterError::Refused(r)) => r,
        other => panic!("{:?}", other.map(|j| j.step)),
    }
}

#[test]
fn fat32_refusals_say_why_and_write_nothing() {
    let (mut disk, _) = fat32(SIZE, 1024, 0, None);
    let before = disk.as_bytes().to_vec();
    // 72 MiB at 4 KiB is 18,000 clusters: FAT16's count.
    assert!(matches!(
        refused(recluster(&mut disk, 4096)),
        Refusal::Fat(FatRefusal::TypeChange { .. })
    ));
    assert!(matches!(
        refused(recluster(&mut disk, 1000)),
        Refusal::InvalidSize { .. }
    ));
    assert_eq!(plan(&mut disk, 1024).unwrap().step, Step::Nothing);
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn a_fat16_volume_whose_new_count_needs_fat32_is_refused_as_a_type_change() {
    // 64 MiB at 2 KiB: about 32,700 clusters (FAT16); 131,000 at 512 bytes.
    let mut disk = fat_of(FsKind::Fat16, 64 << 20, 2048);
    let before = disk.as_bytes().to_vec();
    match refused(recluster(&mut disk, 512)) {
        Refusal::Fat(r @ FatRefusal::WidthChange { kind, .. }) => {
            assert_eq!(kind, FsKind::Fat32);
            assert!(r.to_string().contains("convert"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(disk.as_bytes() == &before[..]);
}

#[test]
fn more_clusters_than_fat32_holds_is_refused() {
    // 160 GiB at 32 KiB: 5.2 million clusters; 335 million at 512 bytes.
    use mkfs_alloc_inspect::model::{ClusterBits, Geometry};
    let count = 5_240_000u32;
    let mut used = ClusterBits::new(count + 2);
    used.set(2);
    let model = VolumeModel {
        geometry: Geometry {
            kind: FsKind::Fat32,
            start: 0,
            fs_bytes: 160 << 30,
            sector_size: 512,
            cluster_size: 32 << 10,
            cluster_count: count,
            fat_offset: 32 * 512,
            fat_bytes: 40_938 * 512,
            fat_count: 2,
            active_fat: 0,
            data_offset: (32 + 2 * 40_938) * 512,
            root: RootDir::Cluster(2),
        },
        used,
        allocated_clusters: 1,
        free_clusters: u64::from(count) - 1,
        files: 0,
        file_bytes: 0,
        dirs: 0,
        findings: Vec::new(),
        findings_dropped: 0,
        bitmap: None,
        upcase: None,
    };
    let input = super::super::fat::Input {
        dirs: &[],
        chains: &[vec![2]],
        file_sizes: &[],
        cluster: 512,
        allow_dirty: false,
    };
    match super::super::fat::plan_fat(&model, &input) {
        Err(Refusal::Fat(r @ FatRefusal::TooManyClusters { .. })) => {
            assert!(r.to_string().contains("268,435,445"), "{r}");
        }
        other => panic!("{other:?}"),
    }
}

/// A sweep over a FAT32 volume at 1 KiB clusters to 512 bytes.
fn sweep_fat(disk: &MemDisk, want: &[(String, usize)], seeds: u64) -> SweepReport {
    let job = |dev: &mut dyn BlockIo| recluster(dev, 512).map(|_| ());
    Sweep::new()
        .seeds(seeds)
        .run(disk, job, |t| {
            let m = check_fat(t.medium, want)?;
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != 512 || !m.findings.is_empty() {
                    return Err(format!("after the rerun: {:?}", m.findings));
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
fn fat32_power_cuts_at_every_write_leave_every_file_intact() {
    let (disk, want) = fat32(SIZE, 1024, 3, None);
    let report = sweep_fat(&disk, &want, 2);
    eprintln!("FAT32 recluster sweep: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert!(report.cut_points > 20, "{report}");
}

#[test]
fn fat32_power_cuts_inside_an_mbr_partition() {
    let (disk, want) = fat32(
        SIZE + (1 << 20),
        1024,
        12,
        Some(mkfs_alloc_partition::TableKind::Mbr),
    );
    let report = sweep_fat(&disk, &want, 1);
    eprintln!("FAT32 recluster sweep, MBR: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    // And the result reads through fatfs.
    let mut d = disk.clone();
    recluster(&mut d, 512).unwrap();
    check_fatfs(&d, &want).unwrap();
}

/// [`super::super::unfinished_fat`] on the volume `g` describes.
pub(super) fn unfinished_fat_of(
    d: &mut MemDisk,
    g: &mkfs_alloc_inspect::model::Geometry,
) -> Option<u64> {
    super::super::unfinished_fat(d, g.start, g.fat_offset, g.sector_size).unwrap()
}

#[test]
fn a_cut_fat32_job_is_redone_before_its_switch_and_finished_after_it() {
    use mkfs_alloc_blockio::PowerCutIo;
    let (disk, want) = fat32(SIZE, 1024, 0, None);
    let ops = {
        let mut count = PowerCutIo::counting(disk.clone());
        recluster(&mut count, 512).unwrap();
        count.ops_seen()
    };
    let mut seen = std::collections::BTreeSet::new();
    for k in 0..ops {
        let mut cut = PowerCutIo::new(disk.clone(), k, 0);
        assert!(recluster(&mut cut, 512).is_err());
        let mut d = cut.into_surviving().unwrap();
        let step = plan(&mut d, 512).unwrap().step;
        // What `info` reads: the record names the size the job goes to
        // until the job is done.
        let (m, _) = fat_contents(&d).unwrap();
        let named = unfinished_fat_of(&mut d, &m.geometry);
        assert_eq!(named.is_some(), step != Step::Start, "cut at {k}: {step:?}");
        if let Some(c) = named {
            assert_eq!(c, 512, "cut at {k}");
        }
        // Another size is refused while a job is unfinished: the size it
        // goes to is named.
        if matches!(step, Step::Redo | Step::Finish) {
            assert!(
                matches!(
                    plan(&mut d, 2048),
                    Err(ReclusterError::OtherJob { cluster: 512 })
                ),
                "cut at {k}: {step:?}"
            );
        }
        seen.insert(step.to_string());
        recluster(&mut d, 512).unwrap();
        let m = check_fat(&d, &want).unwrap();
        assert!(m.findings.is_empty(), "cut at {k}: {:?}", m.findings);
        let g = &m.geometry;
        assert_eq!(unfinished_fat_of(&mut d, g), None, "cut at {k}: done");
    }
    for s in [Step::Start, Step::Redo, Step::Finish] {
        assert!(seen.contains(&s.to_string()), "{seen:?}");
    }
}

#[test]
fn a_fat32_volume_in_a_gpt_partition_reclusters() {
    let gpt = Some(mkfs_alloc_partition::TableKind::Gpt);
    let (mut disk, want) = fat32(SIZE + (2 << 20), 1024, 2, gpt);
    let (m, _) = model_of(&disk).unwrap();
    assert!(m.geometry.start > 0);
    let table = read(&disk, 0, 2 * 512);
    recluster(&mut disk, 512).unwrap();
    let m = check_fat(&disk, &want).unwrap();
    assert_eq!(m.geometry.cluster_size, 512);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    check_fatfs(&disk, &want).unwrap();
    // The protective MBR and the GPT header are not touched.
    assert_eq!(read(&disk, 0, 2 * 512), table);
}
