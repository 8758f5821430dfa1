//! Conversion of a FAT32 volume to exFAT in place, keeping every file,
//! directory, long name, time stamp and attribute, the label and the
//! serial, with no file data moved and every file intact whenever the
//! power goes.
//!
//! ```text
//!  medium ─► read_volume (VolumeModel), sector 0, reserved sectors, record
//!         ─► read_tree (every directory once: names checked, sizes)
//!         ─► allocate (bitmap, up-case table, directories in free clusters)
//!         ─► run: 1 intent record (reserved sector 24), flush
//!                 2 ExtFlags: FAT #2 not mirrored, in sector 0 and its
//!                   backup, flush
//!                 3 exFAT FAT over FAT #2, bitmap, up-case table, a copy
//!                   of every directory as exFAT entry sets, flush
//!                 4 exFAT backup boot region (sectors 12..=23), main
//!                   sectors 1..=11 (checksum of the coming sector 0), flush
//!                 5 sector 0: the exFAT boot sector, dirty, flush ◄─ switch
//!                 6 MBR type 0Bh/0Ch → 07h, flush; VolumeDirty cleared,
//!                   flush; intent record zeroed, flush
//! ```
//!
//! The geometry (exFAT specification §3.1): the same sector and cluster
//! size; ClusterHeapOffset is FAT32's first data sector, so FAT32 cluster
//! `n` is exFAT cluster `n` and no file data moves; the one exFAT FAT (32-bit
//! entries, §4.1) is FAT32's second FAT's sectors (FatOffset = reserved
//! sectors + FATSz32, FatLength = FATSz32, which holds `ClusterCount + 2`
//! entries because FAT32's FAT does, fatgen103 §3.5); every file keeps its
//! FAT chain (NoFatChain clear). The allocation bitmap, the up-case table
//! (the writer's, §7.2) and the directories (each FAT directory rewritten
//! as exFAT entry sets, `tree.rs`) go into clusters FAT32 has free; the old
//! directory clusters are free in the new volume. The label comes from the
//! root's volume-label entry, VolumeSerialNumber from BS_VolID.
//!
//! Kept in its own module inside the re-cluster's because it is the same
//! machine: the one reader (`read_one`), the refusals, the intent record
//! (`state.rs`, phase 3), the windows of `disk.rs`, the boot-region checksum
//! and the sweep helpers; what differs is only the plan and its writes.
//!
//! Crash safety, under "any subset of the writes since the last flush
//! survives, block by block": until step 5 the FAT32 volume reads only
//! FAT #1, its directories and its data, none of which the job writes; its
//! boot sector and backup change only in ExtFlags (bit 7: FATs not
//! mirrored, active FAT 0, fatgen103 §3.3) and their last four bytes
//! (boot code area, set to the exFAT extended boot signature 00 00 55 AA
//! so that the backup boot sector at sector 6 is a valid exFAT extended
//! boot sector). Reserved sectors 1..=5 and 7..=23 are unused by FAT32 but
//! for FSInfo (1) and its backup (7), whose last four bytes are already the
//! signature on 512-byte sectors. The exFAT checksum sector 11 is written
//! before the switch with the checksum of the coming sector 0 (VolumeFlags
//! and PercentInUse are outside it, §3.4), so the switch is one sector. A
//! cut between the switch and the type byte leaves exFAT under type 0Ch:
//! readers go by the boot sector, and the rerun writes the byte.
//!
//! Running the same command again reads the state from the medium:
//! - FAT32, no record: a fresh start;
//! - FAT32 with our record naming it: the job is redone from step 1 (the
//!   same plan, the same bytes; FAT copies that differ are accepted);
//! - exFAT with our record naming it as the new volume: step 6;
//! - exFAT, no record: nothing to do.
//!
//! Refused (nothing written): FAT12/16, a damaged volume, bad clusters,
//! one FAT, an active FAT other than the first, too little free space,
//! 24 reserved sectors or fewer (the record's sector), a backup boot
//! sector past sector 8 or FSInfo in sectors 9..=24 (they would be
//! overwritten before the switch), names exFAT does not take.

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_inspect::model::{Finding, Geometry, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_ondisk::exfat::upcase::COMPRESSED_TABLE;
use mkfs_alloc_ondisk::exfat::{sign_extended_boot_sector, UpcaseTable};
use mkfs_alloc_ondisk::fat::Fat32BootSector;
use zerocopy::FromBytes;

use super::plan::ExfatGeometry;
use super::refusal::refuse_findings;
use super::state::{Intent, Region};
use super::{disk, ReclusterError, Step};

mod alloc;
mod cluster;
mod overlay;
mod run;
mod to_fat32;
mod tree;

pub use cluster::{convert_with, plan_with, plan_with_in, run_with, ConvertJob, NewCluster};
pub use to_fat32::{plan_fat32, run_fat32, Fat32Plan};

/// The reserved sector of the intent record (as the FAT32 re-cluster's).
const INTENT_SECTOR: u64 = super::fat::INTENT_SECTOR;

/// What a conversion will do, in figures.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConvertPlan {
    /// The exFAT volume's geometry (offsets from the volume's start).
    pub exfat: ExfatGeometry,
    /// Directories, the root included.
    pub directories: u64,
    /// Files.
    pub files: u64,
    /// The label carried over.
    pub label: Option<String>,
    /// The volume serial number carried over.
    pub serial: u32,
    /// Bytes the job writes.
    pub bytes_written: u64,
    /// Bytes free in the exFAT volume.
    pub free_after: u64,
    /// The MBR partition type byte changed to 07h, if in an MBR partition.
    pub partition_type: Option<u8>,
}

/// A conversion ready to run.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// What is left ([`Step::Start`], [`Step::Redo`], [`Step::Finish`],
    /// [`Step::Nothing`]).
    pub step: Step,
    /// The plan (`None` once past the switch).
    pub plan: Option<ConvertPlan>,
    volume_start: u64,
    sector: u32,
    intent_offset: u64,
    /// The MBR's block and the byte of the partition's type in it.
    mbr: Option<(u64, usize)>,
    /// Past the switch: the exFAT boot sector on the medium.
    exfat_sector0: Vec<u8>,
    work: Option<Box<Work>>,
}

/// What the run writes, planned.
#[derive(Debug, Clone)]
struct Work {
    g: Geometry,
    exfat: ExfatGeometry,
    serial: u32,
    percent: u8,
    intent: Intent,
    tree: tree::Tree,
    /// Sectors 0..12 of the FAT32 volume as read.
    reserved: Vec<u8>,
    /// FAT32's sector 0 with FAT #2 not mirrored, signed.
    fat32_sector0: Vec<u8>,
    /// The backup boot sector's sector, when there is one.
    backup_boot: Option<u64>,
    /// First clusters of the bitmap and the up-case table.
    bitmap: u32,
    upcase: u32,
    /// The new allocation bitmap.
    bitmap_bytes: Vec<u8>,
    /// The new FAT's entries for the clusters the job takes: (cluster,
    /// next), sorted.
    links: Vec<(u32, u32)>,
    /// The old directories' clusters, sorted (free in the new volume).
    old_dirs: Vec<u32>,
}

/// Reads the medium's one volume and plans its conversion to exFAT from the
/// state the medium is in. Reads only.
///
/// # Errors
///
/// [`ReclusterError::Refused`] with the reason, [`ReclusterError::NoVolume`],
/// or the read error.
pub fn plan<D: BlockIo + ?Sized>(dev: &mut D) -> Result<Conversion, ReclusterError> {
    plan_in(dev, None)
}

/// [`plan`] of the volume in partition `partition` (1-based, as `fdisk`
/// counts; `None`: the medium's one FAT/exFAT volume). Reads only.
///
/// # Errors
///
/// As [`plan`]; [`ReclusterError::NoVolume`] when that partition holds no
/// FAT/exFAT volume.
pub fn plan_in<D: BlockIo + ?Sized>(
    dev: &mut D,
    partition: Option<u32>,
) -> Result<Conversion, ReclusterError> {
    let (model, _, _) = super::table::read_chosen(dev, partition)?;
    let g = model.geometry.clone();
    let s = g.sector_size;
    let su = u64::from(s);
    let mut job = Conversion {
        step: Step::Nothing,
        plan: None,
        volume_start: g.start,
        sector: s,
        intent_offset: g.start + INTENT_SECTOR * su,
        mbr: mbr_entry(dev, g.start)?,
        exfat_sector0: Vec::new(),
        work: None,
    };
    let mut rec = vec![0u8; s as usize];
    if g.fat_offset > job.intent_offset {
        disk::read_at(dev, job.intent_offset, &mut rec)?;
    }
    let intent = Intent::read(&rec);
    match g.kind {
        FsKind::Exfat => {
            let mut main = vec![0u8; 12 * s as usize];
            disk::read_at(dev, g.start, &mut main)?;
            let main = Region::new(main, s);
            let ours = main.valid
                && intent
                    .as_ref()
                    .zip(main.boot())
                    .is_some_and(|(i, b)| i.conversion() && i.is_new(b));
            if ours {
                job.step = Step::Finish;
                job.exfat_sector0 = main.bytes[..s as usize].to_vec();
            }
            return Ok(job);
        }
        FsKind::Fat32 => {}
        kind => {
            return Err(ReclusterError::unsupported(format!(
                "converting a {kind:?} volume to exFAT (FAT32 only for now)"
            )))
        }
    }
    let RootDir::Cluster(root) = g.root else {
        return Err(ReclusterError::unsupported(
            "a FAT32 volume without a root cluster".into(),
        ));
    };
    let old = ExfatGeometry::of(&g, root);
    let mut reserved = vec![0u8; 12 * s as usize];
    disk::read_at(dev, g.start, &mut reserved)?;
    let serial =
        Fat32BootSector::ref_from_prefix(&reserved).map_or(0, |(b, _)| b.ebpb.vol_id.get());
    let ours = intent
        .as_ref()
        .filter(|i| i.conversion() && i.names(s, serial, &old, false));
    check(&model, &rec, intent.as_ref(), ours.is_some())?;
    let table = UpcaseTable::recommended();
    let mut tree = tree::read_tree(dev, &g, root, &table)?;
    let a = alloc::allocate(&model, &mut tree)?;
    let w = work(&g, old, serial, tree, reserved, a)?;
    job.plan = Some(figures(&w, job.mbr.is_some()));
    job.step = if ours.is_some() {
        Step::Redo
    } else {
        Step::Start
    };
    job.work = Some(Box::new(w));
    Ok(job)
}

/// The refusals before the tree is read (module docs).
fn check(
    model: &VolumeModel,
    rec: &[u8],
    intent: Option<&Intent>,
    ours: bool,
) -> Result<(), ReclusterError> {
    let g = &model.geometry;
    let su = u64::from(g.sector_size);
    refuse_findings(model, |f| {
        ours && matches!(f, Finding::FatCopiesDiffer { .. })
    })
    .map_err(ReclusterError::Refused)?;
    let unsupported = |what: &str| Err(ReclusterError::unsupported(what.into()));
    if g.fat_count < 2 {
        return unsupported(
            "a FAT32 volume with one FAT (the exFAT FAT goes where the second one is)",
        );
    }
    if g.active_fat != 0 {
        return unsupported("a FAT32 volume whose active FAT is not the first");
    }
    if g.fat_bytes < (u64::from(g.cluster_count) + 2) * 4 {
        return unsupported("a FAT32 volume whose second FAT is shorter than its clusters need");
    }
    if (g.fat_offset - g.start) / su <= INTENT_SECTOR {
        return unsupported(
            "24 or fewer reserved sectors (the intent record goes into reserved sector 24)",
        );
    }
    let data = g.fs_bytes.saturating_sub(g.data_offset - g.start);
    if u64::from(g.cluster_count) != data / g.cluster_size {
        return unsupported("a FAT32 volume with fewer clusters than its size holds (exFAT's ClusterCount is exactly that)");
    }
    if let Some(i) = intent.filter(|_| !ours) {
        if !i.conversion() {
            return Err(ReclusterError::OtherJob {
                cluster: su << i.target_shift(),
            });
        }
    }
    if intent.is_none() && rec.iter().any(|&b| b != 0) {
        return unsupported(
            "reserved sector 24, where the intent record goes, holds data (boot code?)",
        );
    }
    Ok(())
}

/// The run's bytes from the plan's pieces.
fn work(
    g: &Geometry,
    old: ExfatGeometry,
    serial: u32,
    tree: tree::Tree,
    reserved: Vec<u8>,
    a: alloc::Allocation,
) -> Result<Work, ReclusterError> {
    let s = usize::try_from(g.sector_size).unwrap_or(512);
    let mut fat32_sector0 = reserved[..s].to_vec();
    if let Ok((b, _)) = Fat32BootSector::mut_from_prefix(&mut fat32_sector0) {
        b.ebpb.ext_flags = 0x0080.into();
    }
    sign_extended_boot_sector(&mut fat32_sector0);
    let bk =
        Fat32BootSector::ref_from_prefix(&reserved).map_or(0, |(b, _)| b.ebpb.bk_boot_sec.get());
    let info = Fat32BootSector::ref_from_prefix(&reserved).map_or(1, |(b, _)| b.ebpb.fs_info.get());
    if (9..=INTENT_SECTOR as u16).contains(&info) {
        return Err(ReclusterError::unsupported(format!(
            "FSInfo at sector {info} (sectors 9..=24 become exFAT's boot regions and the record)"
        )));
    }
    if bk == 1 || bk > 8 {
        // Sectors 9..=23 become exFAT's OEM, reserved, checksum and backup
        // boot sectors; sector 1 is FSInfo.
        return Err(ReclusterError::unsupported(format!(
            "a FAT32 backup boot sector at sector {bk} (2..=8 are kept as exFAT extended boot sectors)"
        )));
    }
    let root_cluster = tree.dirs[0].new.first().copied().unwrap_or(2);
    let exfat = ExfatGeometry {
        fat_offset: old.fat_offset + g.fat_bytes,
        root_cluster,
        ..old
    };
    let intent = Intent::converting(g.sector_size, serial, &old, &exfat);
    Ok(Work {
        g: g.clone(),
        exfat,
        serial,
        percent: a.percent,
        intent,
        tree,
        reserved,
        fat32_sector0,
        backup_boot: (bk > 0).then_some(u64::from(bk)),
        bitmap: a.bitmap,
        upcase: a.upcase,
        bitmap_bytes: a.bitmap_bytes,
        links: a.links,
        old_dirs: a.old_dirs,
    })
}

/// The plan's figures.
fn figures(w: &Work, mbr: bool) -> ConvertPlan {
    let g = &w.g;
    let clusters = |b: u64| b.div_ceil(g.cluster_size) * g.cluster_size;
    let dirs: u64 = w
        .tree
        .dirs
        .iter()
        .map(|d| d.new.len() as u64 * g.cluster_size)
        .sum();
    let used: u64 = w
        .bitmap_bytes
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    ConvertPlan {
        exfat: w.exfat,
        directories: w.tree.dirs.len() as u64,
        files: w.tree.files,
        label: w.tree.label.as_ref().map(|l| String::from_utf16_lossy(l)),
        serial: w.serial,
        bytes_written: g.fat_bytes
            + clusters(w.bitmap_bytes.len() as u64)
            + clusters(COMPRESSED_TABLE.len() as u64)
            + dirs
            + 28 * u64::from(g.sector_size),
        free_after: (u64::from(g.cluster_count) - used) * g.cluster_size,
        partition_type: mbr.then_some(mkfs_alloc_ondisk::mbr::MBR_TYPE_EXFAT),
    }
}

/// The MBR block and type byte of the FAT32 partition starting at absolute
/// byte `start` (`None` on a whole medium, in a GPT, or when no primary
/// entry starts there).
fn mbr_entry<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
) -> Result<Option<(u64, usize)>, IoError> {
    use mkfs_alloc_ondisk::mbr::{
        Mbr, MbrEntry, MBR_TYPE_EXFAT, MBR_TYPE_FAT32_CHS, MBR_TYPE_FAT32_LBA,
    };
    let bs = u64::from(dev.block_size());
    if start == 0 || bs < 512 {
        return Ok(None);
    }
    let mut b = vec![0u8; usize::try_from(bs).unwrap_or(512)];
    dev.read_blocks(0, &mut b)?;
    let Ok((mbr, _)) = Mbr::ref_from_prefix(&b) else {
        return Ok(None);
    };
    if mbr.signature != [0x55, 0xAA] {
        return Ok(None);
    }
    let types = [MBR_TYPE_FAT32_CHS, MBR_TYPE_FAT32_LBA, MBR_TYPE_EXFAT];
    Ok(mbr.partitions.iter().enumerate().find_map(|(i, p)| {
        (types.contains(&p.os_type) && u64::from(p.starting_lba.get()) * bs == start).then(|| {
            (
                0,
                core::mem::offset_of!(Mbr, partitions)
                    + i * 16
                    + core::mem::offset_of!(MbrEntry, os_type),
            )
        })
    }))
}

/// Runs `job` on `dev` (the medium [`plan`] read).
///
/// # Errors
///
/// The first write or flush that fails; the medium is then in a state the
/// same job, planned and run again, finishes.
pub fn run<D: BlockIo + ?Sized>(dev: &mut D, job: &Conversion) -> Result<(), ReclusterError> {
    match (&job.step, &job.work) {
        (Step::Finish, _) => run::finish(dev, job, &job.exfat_sector0),
        (Step::Start | Step::Redo, Some(w)) => run::run(dev, job, w),
        _ => Ok(()),
    }
}

/// [`plan`] then [`run`]: the whole conversion, or what is left of it.
///
/// # Errors
///
/// As [`plan`] and [`run`].
pub fn convert<D: BlockIo + ?Sized>(dev: &mut D) -> Result<Conversion, ReclusterError> {
    let job = plan(dev)?;
    run(dev, &job)?;
    Ok(job)
}

/// Whether a conversion is unfinished on the FAT32 or exFAT volume starting
/// at absolute byte `start` whose (first) FAT starts at absolute byte `fat`
/// (sectors of `sector` bytes): its intent record at sector 24. What `info`
/// asks to say "a conversion is unfinished".
///
/// # Errors
///
/// The read error.
pub fn unfinished<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    fat: u64,
    sector: u32,
) -> Result<bool, IoError> {
    let at = start + INTENT_SECTOR * u64::from(sector);
    if sector < 512 || fat < at + u64::from(sector) {
        return Ok(false);
    }
    let mut s = vec![0u8; sector as usize];
    disk::read_at(dev, at, &mut s)?;
    Ok(Intent::read(&s).is_some_and(|i| i.conversion()))
}

/// The volumes of an inspector's report (their index) with an unfinished
/// conversion on them ([`unfinished`]).
pub fn unfinished_in<D: BlockIo + ?Sized>(
    dev: &mut D,
    report: &mkfs_alloc_inspect::Report,
) -> Vec<usize> {
    report
        .volumes
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let sector = v.sector_size?;
            matches!(v.ours()?, FsKind::Exfat | FsKind::Fat32).then_some(())?;
            let found = unfinished(dev, v.start, v.fat_offset?, sector).ok()?;
            found.then_some(i)
        })
        .collect()
}
