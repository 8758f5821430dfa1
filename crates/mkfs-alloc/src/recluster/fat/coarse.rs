//! FAT32 to a larger cluster size, `k` times the old one, in place,
//! moving the least it can.
//!
//! The data region keeps its offset, so new cluster `j` covers the `k` old
//! clusters `2 + (j - 2) * k ..` (a group, as for exFAT: `groups.rs`). The
//! new FATs, `k` times smaller, end where the data region starts: they take
//! the end of the old FAT area, over the old FATs past the first, and the
//! reserved sectors grow over the rest (FAT has no data-offset field:
//! fatgen103 §3.5):
//!
//! ```text
//!  old: | reserved | FAT 1 ......... | FAT 2 ......... | cl 2 ..
//!  new: | reserved (grows) ................ | FAT1 | FAT2 | cl 2 ..
//! ```
//!
//! A file whose old clusters are in order in whole groups keeps its place
//! (its new chain names the groups); every other file and every directory
//! (rewritten: its entries' first clusters) is copied into groups wholly
//! free in the old volume. The old volume's clusters, its first FAT and its
//! directories are never written before the switch: the old volume's
//! chains stay as they are and are read from its first FAT, the one
//! drivers read while the FATs mirror each other (`BPB_ExtFlags` bit 7
//! clear, fatgen103 §3.3; refused otherwise). The other old FATs are
//! overwritten by the new ones: until the switch a checker sees the FATs
//! differ, the first intact (fsck.fat takes the first: "FATs differ but
//! appear to be intact"), which is the old volume whole. A rerun accepts
//! that difference where the new FATs go, and the intent record, the clean
//! bits, FSInfo's hints and the switch are the smaller case's (`run.rs`).
//!
//! The plan is a pass of this module's walk that only reads and counts; the
//! run is the same walk writing, from the same old volume (unchanged
//! between them but for the marks above), so both take the same groups.

use std::collections::HashMap;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{DirtyMark, Finding, Geometry, RootDir, VolumeModel};
use mkfs_alloc_inspect::FsKind;
use mkfs_alloc_ondisk::fat::Fat32BootSector;
use zerocopy::little_endian::U32;
use zerocopy::FromBytes;

use super::super::disk::{read_at, write_at, FatReader, FatWriter};
use super::super::groups::{old_clusters, Figures, Groups, Heaps, ReadEntry, WriteEntry};
use super::super::plan::{DirCopy, ExfatGeometry, Plan, Refusal};
use super::super::refusal::refuse_findings;
use super::super::ReclusterError;
use super::plan::{FatLayout, FatRefusal, Input, INTENT_SECTOR};
use super::run::{mirror, new_fat, rewrite_entries, Executor, EOC};
use super::MASK;

/// Plans the re-cluster of the FAT32 volume `model` describes to a larger
/// size; reads its FAT and directories, writes nothing.
///
/// # Errors
///
/// A refusal (nothing written) or the read error.
pub(in super::super) fn plan<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    input: &Input<'_>,
) -> Result<Plan, ReclusterError> {
    let refused = ReclusterError::Refused;
    let unsupported = |what: String| refused(Refusal::Unsupported { what });
    let g = &model.geometry;
    let (s, cluster, old_c) = (u64::from(g.sector_size), input.cluster, g.cluster_size);
    let (reserved, fat_sectors) = ((g.fat_offset - g.start) / s, g.fat_bytes / s);
    let fats = u64::from(g.fat_count);
    let data = (g.data_offset - g.start) / s;
    let total = g.fs_bytes / s;
    let spc = cluster / s;
    let full = (total - data) / spc.max(1);
    // The new FATs end where the data region starts, in the old FATs past
    // the first: where they cannot index every cluster (mkfs.fat sizes its
    // FATs tightly, and twice the size needs a sector or two more), the
    // volume ends earlier (`BPB_TotSec32`).
    let room = (data - reserved).saturating_sub(fat_sectors);
    let fits = (room / fats.max(1) * s / 4).saturating_sub(2);
    let count = full.min(fits);
    let new_fat = ((count + 2) * 4).div_ceil(s);
    let new_reserved = data.saturating_sub(fats * new_fat);
    let ours = |f: &Finding| match f {
        Finding::Dirty { mark } => *mark == DirtyMark::FatCleanBit,
        // In entry 1 only (a cut between the FATs' clean bits), or where
        // the new FATs go over an old copy (entry 0, the media byte, stays).
        Finding::FatCopiesDiffer {
            copy,
            first_offset,
            bytes,
        } => {
            let at = reserved + u64::from(*copy) * fat_sectors;
            (*first_offset >= 4 && first_offset + bytes <= 8)
                || *first_offset >= (new_reserved.saturating_sub(at) * s).max(4)
        }
        _ => false,
    };
    refuse_findings(model, |f| input.allow_dirty && ours(f)).map_err(refused)?;
    if !cluster.is_power_of_two() || spc > 128 {
        return Err(refused(Refusal::InvalidSize {
            cluster,
            sector: g.sector_size,
        }));
    }
    if g.active_fat != 0 {
        return Err(unsupported(
            "a FAT32 volume with FAT mirroring off (BPB_ExtFlags)".into(),
        ));
    }
    let RootDir::Cluster(root_first) = g.root else {
        return Err(refused(Refusal::NotExfat { kind: g.kind }));
    };
    if reserved <= INTENT_SECTOR {
        return Err(unsupported(format!(
            "a FAT32 volume with {reserved} reserved sectors (the intent record needs sector {INTENT_SECTOR})"
        )));
    }
    if full < FsKind::Fat32.min_clusters() {
        return Err(refused(Refusal::Fat(FatRefusal::TypeChange {
            clusters: full,
            kind: FsKind::fat_width(full),
        })));
    }
    if count < FsKind::Fat32.min_clusters() {
        return Err(unsupported(format!(
            "a larger cluster whose {fats} new FATs, in the {room} sectors of the old FATs past the first, index only {count} clusters, fewer than FAT32's 65,525 (the data region cannot move)"
        )));
    }
    if fats < 2 {
        return Err(unsupported(
            "a larger cluster size on a FAT32 volume with one FAT (the new FAT goes over the second while the first is read)".into(),
        ));
    }
    if new_reserved > u64::from(u16::MAX) {
        return Err(unsupported(format!(
            "a larger cluster whose new FATs would start {new_reserved} sectors into the volume, past FAT32's 65,535 reserved sectors (the data region cannot move): a smaller new size, or a smaller old FAT"
        )));
    }
    let new_count = u32::try_from(count).map_err(|_| unsupported("too many clusters".into()))?;
    let geometry = |cs: u64, cc: u32, rsv: u64, fat: u64| ExfatGeometry {
        cluster_size: cs,
        cluster_count: cc,
        fat_offset: rsv * s,
        fat_bytes: fat * s,
        heap_offset: data * s,
        root_cluster: root_first,
    };
    let paths = std::iter::once("/".to_string()).chain(input.dirs.iter().map(|d| d.path.clone()));
    let dirs = paths
        .zip(input.chains)
        .map(|(path, chain)| DirCopy {
            path,
            old_first: chain.first().copied().unwrap_or(0),
            old_contiguous: false,
            bytes: chain.len() as u64 * old_c,
            new_first: 0,
        })
        .collect();
    let layout = FatLayout {
        kind: FsKind::Fat32,
        fat_count: g.fat_count,
        reserved: (
            u32::try_from(reserved).unwrap_or(u32::MAX),
            u32::try_from(new_reserved).unwrap_or(u32::MAX),
        ),
        covered: 0,
        in_use: 0,
        evacuated: 0,
    };
    let mut p = bare_plan(
        g,
        (
            geometry(old_c, g.cluster_count, reserved, fat_sectors),
            geometry(cluster, new_count, new_reserved, new_fat),
        ),
        dirs,
        layout,
    );
    // The old FATs' sectors before the new ones.
    p.gap = (reserved * s, (new_reserved - reserved) * s);
    p.intent_offset = INTENT_SECTOR * s;
    let old = FatReader::new(g.fat_offset, g.fat_bytes);
    let groups = Groups::new(&model.used, k_of(&p), p.new.cluster_count);
    let out = Walk::<_, FatWriter>::new(&p, groups, input.chains, old).execute(dev)?;
    if out.short > 0 {
        return Err(refused(Refusal::TooLittleSpace {
            need: out.taken * cluster,
            free: out.free_groups * cluster,
        }));
    }
    p.new.root_cluster = out.dirs.first().copied().unwrap_or(0);
    for (d, &first) in p.dirs.iter_mut().zip(&out.dirs) {
        d.new_first = first;
    }
    let f = &out.fig;
    let used_old = model.used.count_set().min(u64::from(g.cluster_count));
    // Besides the FATs, copies and directories: the intent record and its
    // clearing, the clean bits of every old and new FAT and their
    // clearing, FSInfo and its backup twice, the two boot sectors.
    let small = (2 + 3 * fats + 4 + 2) * s;
    p.files = input.file_sizes.len() as u64;
    p.file_bytes = input.file_sizes.iter().sum();
    p.clusters_moved = f.moved;
    p.bytes_read = s + g.fat_bytes + f.bytes_read;
    p.bytes_written = 2 * fats * new_fat * s + f.bytes_written + small;
    p.free_before = (u64::from(g.cluster_count) - used_old) * old_c;
    p.free_after = (count - out.set.min(count)) * cluster;
    p.files_allocated = f.allocated;
    p.coarse = Some(f.coarse(
        (k_of(&p), old_c, cluster),
        g.data_offset % cluster == 0,
        out.free_groups,
        (full - count) * cluster,
    ));
    Ok(p)
}

/// Steps 1..=5 of a planned job to a larger size: `run.rs`'s, step 3 being
/// this module's walk, from the old volume read again.
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    e: &Executor<'_>,
) -> Result<(), ReclusterError> {
    let (model, _, _) = super::super::read_one(dev)?;
    e.begin(dev)?;
    let p = e.plan;
    let mut old = FatReader::new(p.volume_start + p.old.fat_offset, p.old.fat_bytes);
    let w = new_fat(dev, p, &mut old)?;
    let groups = Groups::new(&model.used, k_of(p), p.new.cluster_count);
    let out = Walk::new(p, groups, &e.fat.chains, old)
        .with_writer(w)
        .execute(dev)?;
    out.as_planned(p)?;
    e.switch(dev)
}

/// A larger size's plan of the volume `g` describes before its walk: the
/// old and new geometries, the directories, the FAT layout (no gap, no
/// record, every figure zero).
pub(super) fn bare_plan(
    g: &Geometry,
    (old, new): (ExfatGeometry, ExfatGeometry),
    dirs: Vec<DirCopy>,
    fat: FatLayout,
) -> Plan {
    Plan {
        dirs,
        fat: Some(fat),
        ..Plan::bare(g.start, g.sector_size, g.fs_bytes, old, new)
    }
}

/// Old clusters per new cluster of `p`.
pub(super) fn k_of(p: &Plan) -> u32 {
    u32::try_from(p.new.cluster_size / p.old.cluster_size).unwrap_or(1)
}

/// The new boot sector: [`Executor::new_boot`]'s, ending the volume after
/// its last new cluster when the new FATs index fewer than it holds.
pub(super) fn new_boot(e: &Executor<'_>) -> Vec<u8> {
    let mut b = e.new_boot();
    let p = e.plan;
    if p.coarse.as_ref().is_some_and(|c| c.shortened > 0) {
        let s = u64::from(p.sector_size);
        let end = (p.new.heap_offset + u64::from(p.new.cluster_count) * p.new.cluster_size) / s;
        if let Ok((bs, _)) = Fat32BootSector::mut_from_prefix(&mut b) {
            bs.bpb.tot_sec32 = U32::new(u32::try_from(end).unwrap_or(u32::MAX));
        }
    }
    b
}

/// What the walk gives: every directory copy's first new cluster (the root
/// first; 0 for a fixed root region), the new clusters in use, the figures.
pub(super) struct Outcome {
    pub(super) dirs: Vec<u32>,
    pub(super) set: u64,
    pub(super) taken: u64,
    pub(super) short: u64,
    pub(super) free_groups: u64,
    pub(super) fig: Figures,
}

impl Outcome {
    /// Refuses a writing walk that took other groups than the plan's.
    pub(super) fn as_planned(&self, p: &Plan) -> Result<(), ReclusterError> {
        let firsts: Vec<u32> = p.dirs.iter().map(|d| d.new_first).collect();
        if self.short > 0 || self.dirs != firsts {
            // Only space the old volume does not read was written.
            return Err(ReclusterError::unsupported(
                "the volume changed between the plan and the run".into(),
            ));
        }
        Ok(())
    }
}

/// A fixed root region (FAT12/16): the old one's and the new one's
/// absolute byte offsets and their bytes.
#[derive(Clone, Copy)]
pub(super) struct FixedRoot {
    pub(super) old: u64,
    pub(super) new: u64,
    pub(super) bytes: u64,
}

/// One walk over the old volume's directories, writing or only counting;
/// the old chains read through `R`, the new FAT written through `W`.
pub(super) struct Walk<'a, R, W> {
    p: &'a Plan,
    chains: &'a [Vec<u32>],
    write: bool,
    g: Groups<'a>,
    heaps: Heaps,
    fig: Figures,
    fat: Option<W>,
    old_fat: R,
    /// The root as a fixed region, not a chain (the plan's first directory).
    root: Option<FixedRoot>,
    /// Each directory's first old cluster and its copy's new clusters.
    dir_new: HashMap<u32, Vec<u32>>,
}

impl<'a, R: ReadEntry, W: WriteEntry> Walk<'a, R, W> {
    /// A counting walk of `p` over `groups`, the old directories' `chains`
    /// (the plan's order), the old chains read through `old_fat`.
    pub(super) fn new(p: &'a Plan, groups: Groups<'a>, chains: &'a [Vec<u32>], old_fat: R) -> Self {
        Walk {
            p,
            chains,
            write: false,
            g: groups,
            heaps: Heaps::of(p),
            fig: Figures::default(),
            fat: None,
            old_fat,
            root: None,
            dir_new: HashMap::new(),
        }
    }

    /// The walk writing, its new FAT through `fat` (opened, zeroed).
    pub(super) fn with_writer(mut self, fat: W) -> Self {
        self.write = true;
        self.fat = Some(fat);
        self
    }

    /// The walk with the root as the fixed region `root`.
    pub(super) fn with_root(mut self, root: FixedRoot) -> Self {
        self.root = Some(root);
        self
    }

    /// Whether writes go to the medium (none once a group was short).
    fn writing(&self) -> bool {
        self.write && self.g.short == 0
    }

    /// Whether `d` is the fixed root region.
    fn fixed(&self, d: &DirCopy) -> Option<FixedRoot> {
        self.root.filter(|_| d.old_first == 0)
    }

    fn chain<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        clusters: &[u32],
    ) -> Result<(), ReclusterError> {
        if let Some(fat) = self.fat.as_mut() {
            for (i, &n) in clusters.iter().enumerate() {
                fat.set_entry(dev, n, clusters.get(i + 1).copied().unwrap_or(EOC))?;
            }
        }
        Ok(())
    }

    /// The walk: every directory's copy, every file placed.
    pub(super) fn execute<D: BlockIo + ?Sized>(
        mut self,
        dev: &mut D,
    ) -> Result<Outcome, ReclusterError> {
        let p = self.p;
        let free_groups = self.g.free_groups();
        let mut firsts = Vec::new();
        for d in &p.dirs {
            if self.fixed(d).is_some() {
                firsts.push(0);
                continue;
            }
            let new = self.g.take_n(d.bytes, p.new.cluster_size);
            self.chain(dev, &new)?;
            firsts.push(new[0]);
            self.dir_new.insert(d.old_first, new);
        }
        for (d, chain) in p.dirs.iter().zip(self.chains) {
            self.copy_dir(dev, d, chain)?;
        }
        if let Some(mut fat) = self.fat.take() {
            fat.write_held(dev)?;
            let fats = u64::from(p.fat.as_ref().map_or(1, |f| f.fat_count));
            if self.writing() {
                mirror(
                    dev,
                    p.volume_start + p.new.fat_offset,
                    p.new.fat_bytes,
                    fats,
                )?;
            }
        }
        Ok(Outcome {
            dirs: firsts,
            set: self.g.set,
            taken: self.g.taken,
            short: self.g.short,
            free_groups,
            fig: self.fig,
        })
    }

    /// Reads a directory, rewrites its entries (placing every file's data)
    /// and writes its copy, its length rounded up to whole new clusters
    /// (the bytes past its end zero: no more entries); a fixed root region
    /// goes to the new one.
    fn copy_dir<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        d: &DirCopy,
        chain: &[u32],
    ) -> Result<(), ReclusterError> {
        let co = usize::try_from(self.p.old.cluster_size).unwrap_or(0);
        let cn = usize::try_from(self.p.new.cluster_size).unwrap_or(0);
        let fixed = self.fixed(d);
        let new = self.dir_new.get(&d.old_first).cloned().unwrap_or_default();
        let len = match fixed {
            Some(r) => usize::try_from(r.bytes).unwrap_or(0),
            None if new.len() * cn < chain.len() * co => {
                return Err(ReclusterError::unsupported(format!(
                    "{}: two directories at one cluster",
                    d.path
                )))
            }
            None => new.len() * cn,
        };
        let mut buf = vec![0u8; len];
        match fixed {
            Some(r) => read_at(dev, r.old, &mut buf)?,
            None => {
                for (piece, &c) in buf.chunks_exact_mut(co.max(1)).zip(chain) {
                    read_at(dev, self.heaps.old_at(c), piece)?;
                }
            }
        }
        self.fig.bytes_read += d.bytes;
        rewrite_entries(&mut buf, &d.path, |first, is_dir, size| {
            if is_dir {
                return Ok(self.dir_new.get(&first).map(|n| n[0]));
            }
            self.place(dev, first, size).map(Some)
        })?;
        self.fig.bytes_written += buf.len() as u64;
        if self.writing() {
            match fixed {
                Some(r) => write_at(dev, r.new, &buf)?,
                None => {
                    for (piece, &n) in buf.chunks_exact(cn.max(1)).zip(&new) {
                        write_at(dev, self.heaps.new_at(n), piece)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A file's `size` bytes from old cluster `first` at the new size: kept
    /// in place when in order in whole groups no other data starts, else
    /// copied to free groups. Returns its first new cluster (0: no data).
    fn place<D: BlockIo + ?Sized>(
        &mut self,
        dev: &mut D,
        first: u32,
        size: u64,
    ) -> Result<u32, ReclusterError> {
        let (co, cn) = (self.p.old.cluster_size, self.p.new.cluster_size);
        self.fig.files += 1;
        self.fig.file_bytes += size;
        self.fig.allocated.0 += size.div_ceil(co) * co;
        self.fig.allocated.1 += size.div_ceil(cn) * cn;
        let n_old = size.div_ceil(co);
        if n_old == 0 {
            // No data, no allocation (fatgen103 §6: first cluster 0).
            return Ok(0);
        }
        let last = self.p.old.cluster_count + 1;
        let old = old_clusters(dev, &mut self.old_fat, (first, false), n_old, last, MASK)?;
        if let Some(groups) = self.g.keep(&old) {
            self.fig.kept += 1;
            self.chain(dev, &groups)?;
            return Ok(groups[0]);
        }
        let new = self.g.take_n(size, cn);
        let write = self.writing();
        let bytes = self.heaps.copy(dev, (&old, &new), self.g.k, write)?;
        self.fig.bytes_read += bytes;
        self.fig.bytes_written += bytes;
        self.chain(dev, &new)?;
        self.fig.moved += n_old;
        self.fig.files_moved += 1;
        Ok(new[0])
    }
}
