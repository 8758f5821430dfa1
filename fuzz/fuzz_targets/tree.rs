//! The directory walk over whole trees of well-formed entries whose numbers
//! come from the input: first clusters, lengths (any u64: 2^62 is one
//! mutation away), NoFatChain, FAT chains. exFAT entry sets get a valid
//! checksum, so the fuzzer reaches the walk's length rules instead of
//! stopping at the checksum (a directory's DataLength of 2^62 must not be
//! counted as 4 EiB).
//!
//! The first input byte picks exFAT (1 MiB, 512-byte clusters) or FAT16
//! (3 MiB, 512-byte clusters, a fixed root directory), both made by our own
//! planner. The rest is records of 16 bytes, one entry each:
//!
//! | byte | meaning |
//! |---|---|
//! | 0 | parent: the n-th directory made so far (0 = root), modulo their count |
//! | 1 | bit 0 directory, bit 1 NoFatChain (exFAT), bits 4-7 FAT chain links |
//! | 2 | name letter |
//! | 3 | bit 0: the chain ends in a free cluster instead of an end mark |
//! | 4..8 | first cluster |
//! | 8..16 | length (exFAT DataLength; FAT: the low 32 bits, files only) |
//!
//! A directory's entries go into its first cluster (when it is one). The
//! report must keep `common::inspect_checked`'s invariants.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::{
    plan, write_volume, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium,
};
use mkfs_alloc_ondisk::exfat::set_checksum;

mod common;
use common::inspect_checked;

/// A formatted volume and where its structures are (bytes).
struct Volume {
    img: Vec<u8>,
    exfat: bool,
    fat: usize,
    fat_len: usize,
    /// Bytes per FAT entry.
    width: usize,
    /// Offset of cluster 2.
    heap: usize,
    cluster: usize,
    cluster_count: u32,
    /// The root directory's free entries: `start..end`.
    root: (usize, usize),
}

fn volume(fs: FsKind, bytes: u64) -> Volume {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(512))
        .serial(1);
    let layout = plan(&opts, &Medium::whole(bytes, 512).expect("medium")).expect("plan");
    let mut disk = MemDisk::new(512, bytes / 512).expect("disk");
    write_volume(&layout, &mut disk, &mut |_, _| {}).expect("write");
    let img = disk.into_inner();
    let heap = layout.cluster_offset(mkfs_alloc_layout::ClusterIndex::FIRST) as usize;
    let cluster = layout.cluster_size().bytes() as usize;
    let (exfat, width, root) = match layout.geometry() {
        Geometry::Exfat(g) => {
            let at = layout.cluster_offset(g.root_cluster()) as usize;
            let free = (at..at + cluster)
                .step_by(32)
                .find(|&o| img[o] == 0)
                .expect("a free root entry");
            (true, 4, (free, at + cluster))
        }
        Geometry::Fat(g) => {
            let at = (g.root_sector() * u64::from(g.bps)) as usize;
            (false, 2, (at, at + 32 * usize::from(g.root_entries)))
        }
    };
    Volume {
        img,
        exfat,
        fat: layout.fat_offset() as usize,
        fat_len: layout.fat_bytes() as usize,
        width,
        heap,
        cluster,
        cluster_count: layout.cluster_count().get(),
        root,
    }
}

static VOLUMES: OnceLock<[Volume; 2]> = OnceLock::new();

/// An exFAT entry set: File, Stream Extension, one File Name entry.
fn exfat_set(name: u8, dir: bool, contiguous: bool, first: u32, len: u64) -> [u8; 96] {
    let mut set = [0u8; 96];
    set[0] = 0x85;
    set[1] = 2;
    set[4..6].copy_from_slice(&(if dir { 0x10u16 } else { 0x20 }).to_le_bytes());
    set[32] = 0xC0;
    set[33] = 0x01 | if contiguous { 0x02 } else { 0 };
    set[35] = 1;
    set[40..48].copy_from_slice(&len.to_le_bytes());
    set[52..56].copy_from_slice(&first.to_le_bytes());
    set[56..64].copy_from_slice(&len.to_le_bytes());
    set[64] = 0xC1;
    set[66] = name;
    let c = set_checksum(&set);
    set[2..4].copy_from_slice(&c.to_le_bytes());
    set
}

/// A FAT short entry `N       BIN` (or a directory `N`).
fn fat_entry(name: u8, dir: bool, first: u32, len: u64) -> [u8; 32] {
    let mut e = [b' '; 32];
    e[0] = name;
    if !dir {
        e[8..11].copy_from_slice(b"BIN");
    }
    e[11..].fill(0);
    e[11] = if dir { 0x10 } else { 0x20 };
    e[20..22].copy_from_slice(&((first >> 16) as u16).to_le_bytes());
    e[26..28].copy_from_slice(&(first as u16).to_le_bytes());
    if !dir {
        e[28..32].copy_from_slice(&(len as u32).to_le_bytes());
    }
    e
}

impl Volume {
    /// Offset of cluster `n`'s first byte, when it lies in the image.
    fn cluster_at(&self, n: u32) -> Option<usize> {
        if n < 2 || n > self.cluster_count + 1 {
            return None;
        }
        let at = self.heap + (n as usize - 2) * self.cluster;
        (at + self.cluster <= self.img.len()).then_some(at)
    }

    /// Sets FAT entry `n` to `value` (when it lies in the FAT).
    fn set_fat(&self, img: &mut [u8], n: u32, value: u32) {
        let pos = self.width * n as usize;
        if n >= 2 && pos + self.width <= self.fat_len {
            let at = self.fat + pos;
            img[at..at + self.width].copy_from_slice(&value.to_le_bytes()[..self.width]);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let vols = VOLUMES.get_or_init(|| {
        [
            volume(FsKind::Exfat, 1 << 20),
            volume(FsKind::Fat16, 3 << 20),
        ]
    });
    let v = &vols[usize::from(mode % 2)];
    let mut img = v.img.clone();
    // Where each directory's next entry goes, and its end.
    let mut dirs: Vec<(usize, usize)> = vec![v.root];
    let end_mark = if v.exfat { u32::MAX } else { 0xFFFF };
    for r in rest.chunks_exact(16).take(64) {
        let parent = usize::from(r[0]) % dirs.len();
        let (dir, contiguous, links) = (r[1] & 1 != 0, r[1] & 2 != 0, u32::from(r[1] >> 4));
        let name = b'A' + r[2] % 26;
        let first = u32::from_le_bytes([r[4], r[5], r[6], r[7]]);
        let len = u64::from_le_bytes([r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]]);
        let (at, end) = dirs[parent];
        let entry: &[u8] = if v.exfat {
            &exfat_set(name, dir, contiguous, first, len)
        } else {
            &fat_entry(name, dir, first, len)
        };
        if at + entry.len() > end {
            continue;
        }
        img[at..at + entry.len()].copy_from_slice(entry);
        dirs[parent].0 += entry.len();
        // The chain: `links` more clusters, then an end mark (or nothing).
        for i in 0..links {
            let n = first.wrapping_add(i);
            v.set_fat(&mut img, n, n.wrapping_add(1));
        }
        if r[3] & 1 == 0 {
            v.set_fat(&mut img, first.wrapping_add(links), end_mark);
        }
        if dir {
            let at = v.cluster_at(first).unwrap_or(0);
            // A cluster shared with an earlier directory is written over.
            let end = if at == 0 { 0 } else { at + v.cluster };
            dirs.push((at, end));
        }
    }
    inspect_checked(img);
});
