//! Where the conversion's new structures go: the allocation bitmap and the
//! up-case table each in one run of clusters FAT32 has free (readers load
//! both as contiguous sectors), then every directory copy, first fit; and
//! the new allocation bitmap (exFAT specification §7.1.5) that results.

use mkfs_alloc_inspect::model::VolumeModel;
use mkfs_alloc_ondisk::exfat::upcase::COMPRESSED_TABLE;

use super::super::{ReclusterError, Refusal};
use super::tree::Tree;

/// What [`allocate`] decided.
#[derive(Debug, Clone)]
pub(super) struct Allocation {
    /// First cluster of the bitmap.
    pub(super) bitmap: u32,
    /// First cluster of the up-case table.
    pub(super) upcase: u32,
    /// The new bitmap, ceil(ClusterCount / 8) bytes.
    pub(super) bitmap_bytes: Vec<u8>,
    /// The new FAT's entries of the clusters taken: (cluster, next), sorted.
    pub(super) links: Vec<(u32, u32)>,
    /// The old directories' clusters, sorted.
    pub(super) old_dirs: Vec<u32>,
    /// PercentInUse of the new volume.
    pub(super) percent: u8,
}

/// The first run of `n` clusters free in `taken`.
fn first_run(taken: &mkfs_alloc_inspect::model::ClusterBits, count: u32, n: u64) -> Option<u32> {
    let mut run = 0u64;
    for c in 2..=count + 1 {
        if taken.get(c) {
            run = 0;
            continue;
        }
        run += 1;
        if run == n {
            return u32::try_from(u64::from(c) + 1 - n).ok();
        }
    }
    None
}

/// The chain's links over `clusters`, ending with end-of-chain.
fn link(clusters: &[u32], out: &mut Vec<(u32, u32)>) {
    for (i, &c) in clusters.iter().enumerate() {
        out.push((c, clusters.get(i + 1).copied().unwrap_or(0xFFFF_FFFF)));
    }
}

/// Gives the bitmap, the up-case table and every directory of `tree` their
/// clusters (in `tree`'s `new`), from the clusters `model` has free.
///
/// # Errors
///
/// [`Refusal::TooLittleSpace`] with the bytes needed and free, or no run
/// free that holds the bitmap or the up-case table.
pub(super) fn allocate(model: &VolumeModel, tree: &mut Tree) -> Result<Allocation, ReclusterError> {
    let g = &model.geometry;
    let (cs, count) = (g.cluster_size, g.cluster_count);
    let bitmap_len = u64::from(count).div_ceil(8);
    let nb = bitmap_len.div_ceil(cs);
    let nu = (COMPRESSED_TABLE.len() as u64).div_ceil(cs);
    let dirs: u64 = tree.dirs.iter().map(|d| d.bytes.div_ceil(cs).max(1)).sum();
    let need = nb + nu + dirs;
    let free = u64::from(count).saturating_sub(model.used.count_set());
    if need > free {
        return Err(ReclusterError::Refused(Refusal::TooLittleSpace {
            need: need * cs,
            free: free * cs,
        }));
    }
    let mut taken = model.used.clone();
    let mut links = Vec::new();
    let mut runs = [0u32; 2];
    for (slot, (n, what)) in runs
        .iter_mut()
        .zip([(nb, "allocation bitmap"), (nu, "up-case table")])
    {
        let Some(first) = first_run(&taken, count, n) else {
            return Err(ReclusterError::unsupported(format!(
                "no run of {n} free clusters for the exFAT {what} (free space is too fragmented)"
            )));
        };
        let run: Vec<u32> = (first..first + u32::try_from(n).unwrap_or(0)).collect();
        for &c in &run {
            taken.set(c);
        }
        link(&run, &mut links);
        *slot = first;
    }
    let mut next = 2u32;
    for d in &mut tree.dirs {
        let n = d.bytes.div_ceil(cs).max(1);
        d.new.clear();
        while (d.new.len() as u64) < n && next <= count + 1 {
            if !taken.set(next) {
                d.new.push(next);
            }
            next += 1;
        }
        link(&d.new, &mut links);
    }
    links.sort_unstable();
    let mut old_dirs: Vec<u32> = tree
        .dirs
        .iter()
        .flat_map(|d| d.old.iter().copied())
        .collect();
    old_dirs.sort_unstable();
    let mut bitmap_bytes = vec![0u8; usize::try_from(bitmap_len).unwrap_or(0)];
    let mut used = 0u64;
    for c in 2..=count + 1 {
        if taken.get(c) && old_dirs.binary_search(&c).is_err() {
            let i = usize::try_from(c - 2).unwrap_or(usize::MAX);
            if let Some(b) = bitmap_bytes.get_mut(i / 8) {
                *b |= 1 << (i % 8);
                used += 1;
            }
        }
    }
    let percent = u8::try_from(used * 100 / u64::from(count.max(1))).unwrap_or(100);
    Ok(Allocation {
        bitmap: runs[0],
        upcase: runs[1],
        bitmap_bytes,
        links,
        old_dirs,
        percent,
    })
}
