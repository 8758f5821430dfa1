//! How much of each directory is in use: the bytes up to the end of its
//! last entry in use (a file entry set, the bitmap, up-case, label or GUID
//! entry), read once when planning, up to the end-of-directory entry, in
//! windows of at most 64 KiB (one window and one entry set held at a
//! time). The same pass checks that every entry in use is one the job
//! rewrites or may copy as it is, so that a volume with another is refused
//! before the first write. A directory's copy is then these bytes rounded
//! up to the new cluster size ([`super::plan_from`]).

use std::collections::HashMap;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, RootDir, VolumeModel};
use mkfs_alloc_ondisk::exfat::{
    TYPE_BITMAP, TYPE_FILE, TYPE_FILE_NAME, TYPE_GUID, TYPE_LABEL, TYPE_STREAM_EXTENSION,
    TYPE_UPCASE,
};

use super::disk::{read_at, FatReader};
use super::ReclusterError;

/// Bytes of a directory entry.
const ENTRY: usize = 32;
/// The most read at once.
const WINDOW: u64 = 64 << 10;

/// Each directory's bytes in use, by its first cluster (the root's too).
pub(super) type DirsInUse = HashMap<u32, u64>;

/// Reads every directory of the exFAT volume `model` describes (`dirs`:
/// the entry sets its reading handed out; `root_clusters`: the root's
/// chain) up to its end-of-directory entry and returns the bytes each has
/// in use.
///
/// # Errors
///
/// [`ReclusterError::Refused`] for an entry this job does not know, or an
/// entry set past the directory's end; the read error.
pub(super) fn measure<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    dirs: &[EntrySet],
    root_clusters: u64,
) -> Result<DirsInUse, ReclusterError> {
    let g = &model.geometry;
    let mut fat = FatReader::new(g.fat_offset, g.fat_bytes);
    let mut out = DirsInUse::new();
    if let RootDir::Cluster(root) = g.root {
        let bytes = root_clusters * g.cluster_size;
        let used = dir_in_use(dev, model, &mut fat, (root, false, bytes), "/")?;
        out.insert(root, used);
    }
    for s in dirs.iter().filter(|s| s.is_dir && s.first_cluster != 0) {
        let bytes = s.size.div_ceil(g.cluster_size) * g.cluster_size;
        let d = (s.first_cluster, s.contiguous, bytes);
        let used = dir_in_use(dev, model, &mut fat, d, &s.path)?;
        out.insert(s.first_cluster, used);
    }
    Ok(out)
}

/// One directory (`first` cluster, contiguous, `bytes` long).
fn dir_in_use<D: BlockIo + ?Sized>(
    dev: &mut D,
    model: &VolumeModel,
    fat: &mut FatReader,
    (first, contiguous, bytes): (u32, bool, u64),
    path: &str,
) -> Result<u64, ReclusterError> {
    let g = &model.geometry;
    let co = g.cluster_size;
    let mut scan = Scan::default();
    let (mut pos, mut c) = (0u64, first);
    while pos < bytes {
        if !(2..=g.cluster_count + 1).contains(&c) {
            break;
        }
        let within = pos % co;
        let n = WINDOW.min(co - within).min(bytes - pos);
        let mut chunk = vec![0u8; usize::try_from(n).unwrap_or(0)];
        let at = g.data_offset + u64::from(c - 2) * co + within;
        read_at(dev, at, &mut chunk)?;
        if scan.feed(&chunk, path)? {
            return Ok(scan.end);
        }
        pos += n;
        if pos % co == 0 && pos < bytes {
            c = if contiguous { c + 1 } else { fat.get(dev, c)? };
        }
    }
    if !scan.pending.is_empty() {
        return Err(past_end(path));
    }
    Ok(scan.end)
}

/// The walk of one directory's entries across windows.
#[derive(Default)]
struct Scan {
    /// Bytes of the directory before `pending`.
    base: u64,
    /// Read, not yet walked (an entry set that continues in the next window).
    pending: Vec<u8>,
    /// The end of the last entry in use.
    end: u64,
}

impl Scan {
    /// Walks `chunk`, the next bytes of the directory; true at its end marker.
    fn feed(&mut self, chunk: &[u8], path: &str) -> Result<bool, ReclusterError> {
        self.pending.extend_from_slice(chunk);
        let buf = &self.pending;
        let mut i = 0;
        let mut done = false;
        while i + ENTRY <= buf.len() {
            match buf[i] {
                0 => {
                    done = true;
                    break;
                }
                TYPE_FILE => {
                    let len = (usize::from(buf[i + 1]) + 1) * ENTRY;
                    let Some(set) = buf.get(i..i + len) else {
                        break;
                    };
                    check_set(set, path)?;
                    i += len;
                    self.end = self.base + i as u64;
                }
                TYPE_BITMAP | TYPE_UPCASE | TYPE_LABEL | TYPE_GUID => {
                    i += ENTRY;
                    self.end = self.base + i as u64;
                }
                t if t & 0x80 == 0 => i += ENTRY,
                t => {
                    return Err(ReclusterError::unsupported(format!(
                        "{path}: a directory entry of type {t:#04x}"
                    )))
                }
            }
        }
        self.pending.drain(..i);
        self.base += i as u64;
        if done {
            self.pending.clear();
        }
        Ok(done)
    }
}

/// A file entry set's secondaries: its stream extension, then names.
fn check_set(set: &[u8], path: &str) -> Result<(), ReclusterError> {
    let mut types = set.chunks_exact(ENTRY).map(|e| e[0]).skip(1);
    if types.next() != Some(TYPE_STREAM_EXTENSION) {
        return Err(ReclusterError::unsupported(format!(
            "{path}: a file entry without its stream extension"
        )));
    }
    if let Some(t) = types.find(|&t| t != TYPE_FILE_NAME) {
        return Err(ReclusterError::unsupported(format!(
            "{path}: a secondary entry of type {t:#04x}"
        )));
    }
    Ok(())
}

fn past_end(path: &str) -> ReclusterError {
    ReclusterError::unsupported(format!(
        "{path}: an entry set that runs past the directory's end"
    ))
}
