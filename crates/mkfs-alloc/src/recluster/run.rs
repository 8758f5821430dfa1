//! The executor: writes a [`Plan`] in the crash-safe order (module docs of
//! [`super`]), and finishes what a cut run left.

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_ondisk::exfat::{
    secondary_flags, set_checksum, BootSector, FileEntry, TYPE_FILE_NAME,
};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::FromBytes;

use super::bad::BAD;
use super::disk::{file_stream, for_each_entry, read_at, write_at, DirEntry, FatReader, FatWriter};
use super::plan::Plan;
use super::state::{new_region, set_dirty, Intent, Region};
use super::ReclusterError;

/// Bytes of a directory entry.
const ENTRY: usize = 32;

/// The job's writes before the switch, the switch, and the finish.
pub(super) struct Executor<'p> {
    pub(super) plan: &'p Plan,
    /// The old main boot region, as read.
    pub(super) old_region: Vec<u8>,
    /// The volume serial number.
    pub(super) serial: u32,
    /// Each directory's first old cluster, its copy's first new one and
    /// the copy's bytes.
    pub(super) dirs: std::collections::HashMap<u32, (u32, u64)>,
}

impl Executor<'_> {
    fn abs(&self, rel: u64) -> u64 {
        self.plan.volume_start + rel
    }

    fn new_cluster_at(&self, n: u32) -> u64 {
        self.abs(self.plan.new.heap_offset + u64::from(n - 2) * self.plan.new.cluster_size)
    }

    fn old_cluster_at(&self, c: u32) -> u64 {
        self.abs(self.plan.old.heap_offset + u64::from(c - 2) * self.plan.old.cluster_size)
    }

    /// The whole job from the start (or again after a cut before the
    /// switch: every step writes the same bytes to the same places).
    pub(super) fn run<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<(), ReclusterError> {
        let p = self.plan;
        let s = p.sector_size;
        // 1. The intent record, durable before anything else.
        let intent = Intent::of(p, self.serial);
        write_at(dev, self.abs(p.intent_offset), &intent.sector(s))?;
        dev.flush()?;
        // 2. VolumeDirty on the old main boot sector (outside its checksum).
        let mut sector0 = self.old_region[..s as usize].to_vec();
        if let Ok((b, _)) = BootSector::mut_from_prefix(&mut sector0) {
            set_dirty(b, true);
        }
        write_at(dev, p.volume_start, &sector0)?;
        dev.flush()?;
        // 3. The new FAT, bitmap and directory copies, all in space the old
        //    volume does not use; then flushed.
        let percent = self.write_new_metadata(dev)?;
        dev.flush()?;
        // 4. The switch: the backup boot region, flushed, then the main one.
        let backup = new_region(&self.old_region, p, false, percent);
        write_at(dev, p.volume_start + 12 * u64::from(s), &backup)?;
        dev.flush()?;
        let main = new_region(&self.old_region, p, true, percent);
        write_at(dev, p.volume_start, &main)?;
        dev.flush()?;
        finish(dev, p.volume_start, s, self.abs(p.intent_offset))
    }

    /// Writes the new FAT, the new bitmap and every directory's copy;
    /// returns the new PercentInUse.
    fn write_new_metadata<D: BlockIo + ?Sized>(&self, dev: &mut D) -> Result<u8, ReclusterError> {
        let p = self.plan;
        let cn = p.new.cluster_size;
        let mut fat = FatWriter::create(dev, self.abs(p.new.fat_offset), p.new.fat_bytes)?;
        let mut old_fat = FatReader::new(self.abs(p.old.fat_offset), p.old.fat_bytes);
        let mut bits = Bitmap::new(p.new.cluster_count);
        // The bitmap and the up-case table: contiguous, with FAT chains.
        let bm_clusters = u32::try_from(p.bitmap.1.div_ceil(cn)).unwrap_or(u32::MAX);
        run_chain(dev, &mut fat, &mut bits, p.bitmap.0, bm_clusters)?;
        self.translate_chain(
            dev,
            &mut fat,
            &mut old_fat,
            &mut bits,
            (p.upcase.0, false),
            p.upcase.1,
        )?;
        for d in &p.dirs {
            let mut buf =
                self.read_old(dev, &mut old_fat, d.old_first, d.old_contiguous, d.bytes)?;
            self.rewrite_entries(dev, &mut fat, &mut old_fat, &mut bits, &mut buf, &d.path)?;
            write_at(dev, self.new_cluster_at(d.new_first), &buf)?;
            let k = u32::try_from(d.bytes / cn).unwrap_or(u32::MAX);
            run_chain(dev, &mut fat, &mut bits, d.new_first, k)?;
        }
        // Each bad old cluster is its new clusters, bad and not available
        // for allocation (bad.rs).
        for &c in &p.bad_clusters {
            let first = p.translate(c);
            for n in first..first + p.ratio {
                fat.set(dev, n, BAD)?;
                bits.set(n);
            }
        }
        fat.write_back(dev)?;
        let mut bytes = bits.bytes;
        let padded = usize::try_from(u64::from(bm_clusters) * cn).unwrap_or(0);
        bytes.resize(padded, 0);
        write_at(dev, self.new_cluster_at(p.bitmap.0), &bytes)?;
        let percent = bits.set * 100 / u64::from(p.new.cluster_count.max(1));
        Ok(u8::try_from(percent).unwrap_or(100))
    }

    /// The first `bytes` of a directory's old bytes (from `first`, chained
    /// or contiguous; a multiple of the new cluster size).
    fn read_old<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        old_fat: &mut FatReader,
        first: u32,
        contiguous: bool,
        bytes: u64,
    ) -> Result<Vec<u8>, ReclusterError> {
        let co = self.plan.old.cluster_size;
        let n = bytes.div_ceil(co);
        let cs = usize::try_from(co).unwrap_or(0);
        let mut buf = vec![0u8; usize::try_from(bytes).unwrap_or(0)];
        let mut c = first;
        for i in 0..n {
            let at = usize::try_from(i).unwrap_or(0) * cs;
            let end = (at + cs).min(buf.len());
            read_at(dev, self.old_cluster_at(c), &mut buf[at..end])?;
            if i + 1 == n {
                break;
            }
            c = if contiguous {
                c + 1
            } else {
                old_fat.get(dev, c)?
            };
        }
        Ok(buf)
    }

    /// Rewrites the entries of one directory for the new volume: first
    /// clusters translated (directories: their copies), the bitmap entry
    /// pointed at the new bitmap, SetChecksums recomputed; every file's
    /// clusters marked and its chain written into the new FAT.
    fn rewrite_entries<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        fat: &mut FatWriter,
        old_fat: &mut FatReader,
        bits: &mut Bitmap,
        buf: &mut [u8],
        path: &str,
    ) -> Result<(), ReclusterError> {
        let p = self.plan;
        let past_end = || {
            ReclusterError::unsupported(format!(
                "{path}: an entry set that runs past the directory's end"
            ))
        };
        for_each_entry(buf, past_end, |e| match e {
            DirEntry::Bitmap(e) => {
                e.first_cluster = U32::new(p.bitmap.0);
                e.data_length = U64::new(p.bitmap.1);
                Ok(())
            }
            DirEntry::Upcase(e) => {
                e.first_cluster = U32::new(p.translate(e.first_cluster.get()));
                Ok(())
            }
            DirEntry::Set(set) => self.rewrite_set(dev, fat, old_fat, bits, set, path),
        })
    }

    /// One file entry set.
    fn rewrite_set<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        fat: &mut FatWriter,
        old_fat: &mut FatReader,
        bits: &mut Bitmap,
        set: &mut [u8],
        path: &str,
    ) -> Result<(), ReclusterError> {
        if let Some(t) = set
            .chunks_exact(ENTRY)
            .skip(2)
            .map(|e| e[0])
            .find(|&t| t & 0x80 != 0 && t != TYPE_FILE_NAME)
        {
            return Err(ReclusterError::unsupported(format!(
                "{path}: a secondary entry of type {t:#04x}"
            )));
        }
        let Some((is_dir, stream)) = file_stream(set, path)? else {
            return Ok(());
        };
        let first = stream.first_cluster.get();
        if first != 0 {
            let flags = stream.general_secondary_flags;
            let new_first = if is_dir {
                stream.general_secondary_flags = flags & !secondary_flags::NO_FAT_CHAIN;
                let (new_first, bytes) = self.dirs.get(&first).copied().ok_or_else(|| {
                    ReclusterError::unsupported(format!(
                        "{path}: a directory not seen when planning"
                    ))
                })?;
                // A directory's allocation is its copy: both lengths equal,
                // whole new clusters.
                stream.data_length = U64::new(bytes);
                stream.valid_data_length = U64::new(bytes);
                new_first
            } else {
                let contiguous = flags & secondary_flags::NO_FAT_CHAIN != 0;
                let length = stream.data_length.get();
                self.translate_chain(dev, fat, old_fat, bits, (first, contiguous), length)?
            };
            stream.first_cluster = U32::new(new_first);
        }
        let sum = set_checksum(set);
        if let Ok((file, _)) = FileEntry::mut_from_prefix(set) {
            file.set_checksum = U16::new(sum);
        }
        Ok(())
    }

    /// A file's (or the up-case table's) `length` bytes from old cluster
    /// `first`: its new clusters marked and, unless contiguous, its new
    /// chain written (each old cluster gives `ratio` consecutive new ones,
    /// only as many as the length needs). Returns the first new cluster.
    fn translate_chain<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        fat: &mut FatWriter,
        old_fat: &mut FatReader,
        bits: &mut Bitmap,
        (first, contiguous): (u32, bool),
        length: u64,
    ) -> Result<u32, ReclusterError> {
        let p = self.plan;
        let need = length.div_ceil(p.new.cluster_size);
        let new_first = p.translate(first);
        if contiguous {
            for k in 0..need {
                bits.set(new_first + u32::try_from(k).unwrap_or(0));
            }
            return Ok(new_first);
        }
        let (mut c, mut done, mut prev) = (first, 0u64, None::<u32>);
        while done < need {
            let base = p.translate(c);
            for k in 0..p.ratio {
                if done == need {
                    break;
                }
                let n = base + k;
                if let Some(q) = prev {
                    fat.set(dev, q, n)?;
                }
                bits.set(n);
                prev = Some(n);
                done += 1;
            }
            if done < need {
                c = old_fat.get(dev, c)?;
            }
        }
        if let Some(q) = prev {
            fat.set(dev, q, 0xFFFF_FFFF)?;
        }
        Ok(new_first)
    }
}

/// A chain of `k` consecutive new clusters from `first`, marked in `bits`.
fn run_chain<D: BlockIo + ?Sized>(
    dev: &mut D,
    fat: &mut FatWriter,
    bits: &mut Bitmap,
    first: u32,
    k: u32,
) -> Result<(), IoError> {
    for n in first..first + k {
        bits.set(n);
    }
    fat.chain(dev, first..first + k)
}

/// The end of the job, after the switch: VolumeDirty cleared on the main
/// boot sector, flushed, then the intent record zeroed, flushed.
pub(super) fn finish<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    sector: u32,
    intent_at: u64,
) -> Result<(), ReclusterError> {
    let mut s0 = vec![0u8; sector as usize];
    read_at(dev, start, &mut s0)?;
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut s0) {
        set_dirty(b, false);
    }
    write_at(dev, start, &s0)?;
    dev.flush()?;
    write_at(dev, intent_at, &vec![0u8; sector as usize])?;
    dev.flush()?;
    Ok(())
}

/// After a cut inside the main boot region's write: the main region
/// rebuilt from the (new, valid) backup, VolumeDirty set, flushed.
pub(super) fn restore_main<D: BlockIo + ?Sized>(
    dev: &mut D,
    start: u64,
    backup: &Region,
) -> Result<(), ReclusterError> {
    let mut r = backup.bytes.clone();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut r) {
        set_dirty(b, true);
    }
    write_at(dev, start, &r)?;
    dev.flush()?;
    Ok(())
}

/// The new allocation bitmap: a bit per new cluster.
struct Bitmap {
    bytes: Vec<u8>,
    set: u64,
}

impl Bitmap {
    fn new(count: u32) -> Self {
        Bitmap {
            bytes: vec![0; usize::try_from(u64::from(count).div_ceil(8)).unwrap_or(0)],
            set: 0,
        }
    }

    fn set(&mut self, n: u32) {
        let i = (n - 2) as usize;
        if let Some(b) = self.bytes.get_mut(i / 8) {
            let bit = 1u8 << (i % 8);
            if *b & bit == 0 {
                *b |= bit;
                self.set += 1;
            }
        }
    }
}
