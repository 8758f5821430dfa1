//! The FAT32 job's writes, in the order of the module docs of `fat`.

use std::collections::HashMap;

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_ondisk::fat::{attr, Fat32BootSector, FsInfo, FSINFO_LEAD_SIG, FSINFO_STRUC_SIG};
use zerocopy::little_endian::{U16, U32};
use zerocopy::FromBytes;

use super::super::disk::{self, FatReader, FatWriter};
use super::super::plan::Plan;
use super::super::state::Intent;
use super::super::{Job, ReclusterError};
use super::{FatJob, MASK};

/// FAT[1]'s clean-shutdown bit (fatgen103 §4: `ClnShutBitMask`).
pub(super) const CLEAN: u32 = 0x0800_0000;
/// End of a chain as mkfs.fat writes it.
pub(super) const EOC: u32 = 0x0FFF_FFFF;
/// Bytes of a FAT piece copied at a time.
const PIECE: u64 = 64 << 10;

/// The writes before and at the switch (steps 1..=5).
pub(super) struct Executor<'a> {
    pub(super) job: &'a Job,
    pub(super) plan: &'a Plan,
    pub(super) fat: &'a FatJob,
}

impl Executor<'_> {
    /// Steps 1..=5.
    pub(super) fn run<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), ReclusterError> {
        self.begin(dev)?;
        self.copy_covered(dev)?;
        self.new_fats(dev)?;
        self.switch(dev)
    }

    /// Steps 1 and 2: the intent record, the clean bits cleared.
    pub(super) fn begin<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), ReclusterError> {
        let (p, job) = (self.plan, self.job);
        let s = p.sector_size;
        let intent = Intent::between(s, job.serial, &p.old, &p.new, None);
        disk::write_at(dev, job.intent_offset, &intent.sector(s))?;
        dev.flush()?;
        for &at in &self.fat.fats {
            set_clean(dev, at, s, false)?;
        }
        dev.flush()?;
        Ok(())
    }

    /// The end of step 3 (FSInfo's hints "unknown", flush), steps 4 and 5.
    pub(super) fn switch<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), ReclusterError> {
        let (p, s) = (self.plan, self.plan.sector_size);
        for &at in &self.fat.fs_info {
            set_fs_info(dev, at, s, (u32::MAX, u32::MAX))?;
        }
        dev.flush()?;
        let boot = super::coarse::new_boot(self);
        if let Some(at) = self.fat.backup_boot {
            disk::write_at(dev, at, &boot)?;
            dev.flush()?;
        }
        disk::write_at(dev, p.volume_start, &boot)?;
        dev.flush()?;
        Ok(())
    }

    /// The copies of the covered file clusters, in runs of up to
    /// [`PIECE`] bytes where both the old clusters and their copies follow
    /// each other.
    pub(super) fn copy_covered<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
    ) -> Result<(), ReclusterError> {
        let p = self.plan;
        let most = usize::try_from((PIECE / p.old.cluster_size).max(1)).unwrap_or(1);
        let old_c = usize::try_from(p.old.cluster_size).unwrap_or(0);
        let mut buf = Vec::new();
        let copies = &self.fat.copies;
        let mut i = 0;
        while i < copies.len() {
            let (c, n) = copies[i];
            let mut len = 1;
            while i + len < copies.len()
                && len < most
                && copies[i + len] == {
                    let l = u32::try_from(len).unwrap_or(u32::MAX);
                    (c + l, n + l * p.ratio)
                }
            {
                len += 1;
            }
            buf.resize(len * old_c, 0);
            disk::read_at(dev, self.old_at(c), &mut buf)?;
            disk::write_at(dev, self.new_at(n), &buf)?;
            i += len;
        }
        Ok(())
    }

    /// Absolute byte offset of old cluster `c`.
    pub(super) fn old_at(&self, c: u32) -> u64 {
        let p = self.plan;
        p.volume_start + p.old.heap_offset + u64::from(c - 2) * p.old.cluster_size
    }

    /// Absolute byte offset of new cluster `n`.
    pub(super) fn new_at(&self, n: u32) -> u64 {
        let p = self.plan;
        p.volume_start + p.new.heap_offset + u64::from(n - 2) * p.new.cluster_size
    }

    /// The first new cluster of old cluster `c`: its copy's when the new
    /// reserved sectors cover it.
    pub(super) fn map(&self, c: u32) -> Option<u32> {
        let covered = self.plan.heap_shift / self.plan.ratio;
        if c < covered + 2 {
            let i = self.fat.copies.binary_search_by_key(&c, |x| x.0).ok()?;
            return Some(self.fat.copies[i].1);
        }
        Some(self.plan.translate(c))
    }

    /// The new boot sector: the old one with the new cluster size, reserved
    /// sectors, FAT size and root cluster.
    pub(super) fn new_boot(&self) -> Vec<u8> {
        let (p, s) = (self.plan, u64::from(self.plan.sector_size));
        let mut b = self.job.old_region.clone();
        if let Ok((bs, _)) = Fat32BootSector::mut_from_prefix(&mut b) {
            bs.bpb.sec_per_clus = u8::try_from(p.new.cluster_size / s).unwrap_or(0);
            bs.bpb.rsvd_sec_cnt = U16::new(u16::try_from(p.new.fat_offset / s).unwrap_or(0));
            bs.ebpb.fat_sz32 = U32::new(u32::try_from(p.new.fat_bytes / s).unwrap_or(0));
            bs.ebpb.root_clus = U32::new(p.new.root_cluster);
        }
        b
    }

    /// The new FATs (the first written entry by entry, then copied) and
    /// the directory copies whose entries name the new clusters.
    fn new_fats<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), ReclusterError> {
        let p = self.plan;
        let fats = u64::from(p.fat.as_ref().map_or(1, |f| f.fat_count));
        let base = p.volume_start + p.new.fat_offset;
        let mut old = FatReader::new(p.volume_start + p.old.fat_offset, p.old.fat_bytes);
        let mut w = new_fat(dev, p, &mut old)?;
        let dirs: HashMap<u32, u32> = p.dirs.iter().map(|d| (d.old_first, d.new_first)).collect();
        let per = p.old.cluster_size / p.new.cluster_size;
        for (d, chain) in p.dirs.iter().zip(&self.fat.chains) {
            let old_c = usize::try_from(p.old.cluster_size).unwrap_or(0);
            let mut buf = vec![0u8; chain.len() * old_c];
            for (piece, &c) in buf.chunks_exact_mut(old_c.max(1)).zip(chain) {
                disk::read_at(dev, self.old_at(c), piece)?;
            }
            let files = self.rewrite(&mut buf, &dirs, &d.path)?;
            disk::write_at(dev, self.new_at(d.new_first), &buf)?;
            let n = u32::try_from(chain.len() as u64 * per).unwrap_or(0);
            chain_of(dev, &mut w, d.new_first..d.new_first + n)?;
            for (first, size) in files {
                self.file_chain(dev, &mut old, &mut w, first, size, &d.path)?;
            }
        }
        w.write_back(dev)?;
        mirror(dev, base, p.new.fat_bytes, fats)
    }

    /// Rewrites the first clusters of a directory's entries (FAT32's
    /// `DIR_FstClusHI:LO`, fatgen103 §6) to the new clusters; returns its
    /// files' old first clusters and sizes.
    pub(super) fn rewrite(
        &self,
        buf: &mut [u8],
        dirs: &HashMap<u32, u32>,
        path: &str,
    ) -> Result<Vec<(u32, u64)>, ReclusterError> {
        let mut files = Vec::new();
        rewrite_entries(buf, path, |first, is_dir, size| {
            if is_dir {
                return Ok(dirs.get(&first).copied());
            }
            files.push((first, size));
            Ok(self.map(first))
        })?;
        Ok(files)
    }

    /// A file's new chain: its old chain's clusters, each as the new
    /// clusters it is, as many as its size needs.
    fn file_chain<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        old: &mut FatReader,
        w: &mut FatWriter,
        first: u32,
        size: u64,
        path: &str,
    ) -> Result<(), ReclusterError> {
        let p = self.plan;
        let need = size.div_ceil(p.new.cluster_size);
        let (mut c, mut done, mut prev) = (first, 0u64, None);
        let broken = || {
            ReclusterError::unsupported(format!(
                "a file of {path} whose chain changed since it was read"
            ))
        };
        while done < need {
            if !(2..=p.old.cluster_count + 1).contains(&c) {
                return Err(broken());
            }
            let b = self.map(c).ok_or_else(broken)?;
            for n in b..b + p.ratio {
                if done == need {
                    break;
                }
                if let Some(q) = prev {
                    w.set(dev, q, n)?;
                }
                prev = Some(n);
                done += 1;
            }
            if done < need {
                c = old.get(dev, c)? & MASK;
            }
        }
        if let Some(q) = prev {
            w.set(dev, q, EOC)?;
        }
        Ok(())
    }
}

/// Rewrites the first clusters (FAT32's `DIR_FstClusHI:LO`, fatgen103
/// §6) of a directory's entries that name one to what `to(first, is_dir,
/// size)` says (`None`: refused, the entry names no chain the reading
/// walked).
pub(super) fn rewrite_entries(
    buf: &mut [u8],
    path: &str,
    mut to: impl FnMut(u32, bool, u64) -> Result<Option<u32>, ReclusterError>,
) -> Result<(), ReclusterError> {
    for e in buf.chunks_exact_mut(32) {
        let Ok((entry, _)) = mkfs_alloc_ondisk::fat::DirEntry::mut_from_prefix(e) else {
            break;
        };
        match entry.name[0] {
            0 => break,
            0xE5 => continue,
            _ => {}
        }
        let first = entry.first_cluster();
        if entry.is_long_name() || first == 0 {
            continue;
        }
        let is_dir = entry.attr & attr::DIRECTORY != 0;
        let Some(new) = to(first, is_dir, u64::from(entry.file_size.get()))? else {
            return Err(ReclusterError::unsupported(format!(
                "an entry of {path} names cluster {first}, which no chain the reading walked holds"
            )));
        };
        entry.set_first_cluster(new);
    }
    Ok(())
}

/// The new FATs zeroed, the first opened with entries 0 and 1 the old
/// FAT's (the clean bit clear).
pub(super) fn new_fat<D: BlockIo + ?Sized>(
    dev: &mut D,
    p: &Plan,
    old: &mut FatReader,
) -> Result<FatWriter, IoError> {
    let bs = u64::from(dev.block_size());
    let fats = u64::from(p.fat.as_ref().map_or(1, |f| f.fat_count));
    let base = p.volume_start + p.new.fat_offset;
    dev.write_zeroes(base / bs, fats * p.new.fat_bytes / bs)?;
    let mut w = FatWriter::open(base, p.new.fat_bytes);
    let media = old.get(dev, 0)?;
    let one = old.get(dev, 1)?;
    w.set(dev, 0, media)?;
    w.set(dev, 1, one & MASK & !CLEAN)?;
    Ok(w)
}

/// Copies the first of `fats` FATs of `bytes` bytes at absolute byte
/// `base` over the others, a piece at a time.
pub(super) fn mirror<D: BlockIo + ?Sized>(
    dev: &mut D,
    base: u64,
    bytes: u64,
    fats: u64,
) -> Result<(), ReclusterError> {
    let mut piece = vec![0u8; usize::try_from(PIECE).unwrap_or(0)];
    let mut pos = 0u64;
    while pos < bytes {
        let n = usize::try_from(PIECE.min(bytes - pos)).unwrap_or(0);
        disk::read_at(dev, base + pos, &mut piece[..n])?;
        for copy in 1..fats {
            disk::write_at(dev, base + copy * bytes + pos, &piece[..n])?;
        }
        pos += n as u64;
    }
    Ok(())
}

/// A chain over `clusters`, in order.
fn chain_of<D: BlockIo + ?Sized>(
    dev: &mut D,
    w: &mut FatWriter,
    clusters: std::ops::Range<u32>,
) -> Result<(), IoError> {
    let last = clusters.end.saturating_sub(1);
    for n in clusters {
        w.set(dev, n, if n == last { EOC } else { n + 1 })?;
    }
    Ok(())
}

/// Sets (or clears) the clean bit of entry 1 of the FAT whose first
/// sector is at absolute byte `at`.
pub(in crate::recluster) fn set_clean<D: BlockIo + ?Sized>(
    dev: &mut D,
    at: u64,
    sector: u32,
    clean: bool,
) -> Result<(), IoError> {
    let mut b = vec![0u8; sector as usize];
    disk::read_at(dev, at, &mut b)?;
    if let Ok((e, _)) = <[U32]>::mut_from_prefix_with_elems(&mut b, 2) {
        let v = e[1].get();
        e[1] = U32::new(if clean { v | CLEAN } else { v & !CLEAN });
    }
    disk::write_at(dev, at, &b)
}

/// Sets FSInfo's free count and next free cluster, if the sector at
/// absolute byte `at` is an FSInfo sector (fatgen103 §5).
pub(in crate::recluster) fn set_fs_info<D: BlockIo + ?Sized>(
    dev: &mut D,
    at: u64,
    sector: u32,
    (free, next): (u32, u32),
) -> Result<(), IoError> {
    let mut b = vec![0u8; sector as usize];
    disk::read_at(dev, at, &mut b)?;
    let Ok((fi, _)) = FsInfo::mut_from_prefix(&mut b) else {
        return Ok(());
    };
    if fi.lead_sig.get() != FSINFO_LEAD_SIG || fi.struc_sig.get() != FSINFO_STRUC_SIG {
        return Ok(());
    }
    fi.free_count = U32::new(free);
    fi.nxt_free = U32::new(next);
    disk::write_at(dev, at, &b)
}

/// Copies the first FAT over the others (`fats`: their absolute byte
/// offsets), a piece at a time.
pub(super) fn copy_first_fat<D: BlockIo + ?Sized>(
    dev: &mut D,
    fats: &[u64],
    bytes: u64,
) -> Result<(), IoError> {
    let Some((&first, others)) = fats.split_first() else {
        return Ok(());
    };
    let mut piece = vec![0u8; usize::try_from(PIECE).unwrap_or(0)];
    let mut pos = 0u64;
    while pos < bytes {
        let n = usize::try_from(PIECE.min(bytes - pos)).unwrap_or(0);
        disk::read_at(dev, first + pos, &mut piece[..n])?;
        for &at in others {
            disk::write_at(dev, at + pos, &piece[..n])?;
        }
        pos += n as u64;
    }
    Ok(())
}

/// Step 6: the clean bit set in every FAT, FSInfo's figures, flush; the
/// intent record zeroed, flush.
pub(super) fn finish<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Job,
    fat: &FatJob,
) -> Result<(), ReclusterError> {
    for &at in &fat.fats {
        set_clean(dev, at, job.sector, true)?;
    }
    for &at in &fat.fs_info {
        set_fs_info(dev, at, job.sector, fat.free)?;
    }
    dev.flush()?;
    disk::write_at(dev, job.intent_offset, &vec![0u8; job.sector as usize])?;
    dev.flush()?;
    Ok(())
}
