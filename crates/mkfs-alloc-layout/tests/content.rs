//! A populated format ([`Content`] through `write_volume_with`) against
//! the plain format of the same plan: the two images differ exactly where
//! the content's clusters are accounted, each difference computed here from
//! the specifications, not by the writer's code:
//!
//! - the FAT entries of the content's chains, packed by hand (fatgen103 §4:
//!   FAT12 entry `n` at byte `n + n/2`, the low nibble first for even `n`;
//!   FAT16 2 bytes, FAT32 and exFAT 4, little-endian), in every FAT copy;
//! - exFAT: one more bit per cluster in the allocation bitmap (exFAT
//!   specification §7.1.5: bit `n - 2` of the bitmap is cluster `n`) and
//!   PercentInUse (§3.1.16, `floor(100 * used / ClusterCount)`, excluded
//!   from the boot checksum) in the main and backup boot sectors;
//! - FAT32: FSI_Free_Count and FSI_Nxt_Free (fatgen103 §5) in the FSInfo
//!   sector and its backup;
//! - the root directory and the data clusters: what the content wrote, or
//!   zeroed, or left as it was where it says it placed the bytes itself.
//!
//! The disk starts as 0xD1, so a region written where it should not be (or
//! not written where it should) shows. The content pads to the sink's block
//! size, as a real one must.

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::plan::Geometry;
use mkfs_alloc_layout::units::{KIB, MIB};
use mkfs_alloc_layout::{
    plan, write_volume, write_volume_with, ClusterChoice, Content, ContentSink, FormatOptions,
    FsChoice, FsKind, Layout, Medium, Prior, WriteError,
};

/// Where the content's clusters are, in the volume's terms.
#[derive(Clone, Copy)]
struct Place {
    fs: FsKind,
    /// First cluster the content owns: the root's (exFAT, FAT32) or 2.
    first: u64,
    /// Of them, the root directory's clusters (FAT12/16: none, fixed root).
    root_clusters: u64,
    /// The content's clusters beyond the format's own.
    extra: u64,
    cluster: u64,
    data_offset: u64,
    /// The root directory: byte offset and length.
    root: (u64, u64),
}

impl Place {
    fn of(l: &Layout, extra: u64) -> Place {
        let (first, root_clusters, root) = match l.geometry() {
            Geometry::Exfat(g) => {
                let at = l.cluster_offset(g.root_cluster());
                let len = u64::from(g.root_clusters) * g.cluster;
                (
                    u64::from(g.root_cluster()),
                    u64::from(g.root_clusters),
                    (at, len),
                )
            }
            Geometry::Fat(g) if g.fs == FsKind::Fat32 => (2, 1, (l.data_offset(), g.cluster)),
            Geometry::Fat(g) => {
                // fatgen103 §6: the fixed root after the reserved sectors
                // and the FATs, RootEntCnt * 32 bytes in whole sectors.
                let bps = u64::from(g.bps);
                let at = (u64::from(g.rsvd) + u64::from(g.num_fats) * u64::from(g.fat_sz)) * bps;
                (
                    2,
                    0,
                    (at, (u64::from(g.root_entries) * 32).div_ceil(bps) * bps),
                )
            }
        };
        Place {
            fs: l.fs(),
            first,
            root_clusters,
            extra,
            cluster: l.cluster_size().bytes(),
            data_offset: l.data_offset(),
            root,
        }
    }

    fn eoc(&self) -> u32 {
        match self.fs {
            FsKind::Fat12 => 0xFFF,
            FsKind::Fat16 => 0xFFFF,
            FsKind::Fat32 => 0x0FFF_FFFF,
            FsKind::Exfat => 0xFFFF_FFFF,
        }
    }

    /// The content's chains: the root's clusters, then one file over all
    /// the extra clusters; 0 (free) for every other index.
    fn entry(&self, n: u64) -> u32 {
        let file = self.first + self.root_clusters;
        let end = file + self.extra;
        let last_of_chain = n + 1 == file || n + 1 == end;
        if n < self.first || n >= end {
            0
        } else if last_of_chain {
            self.eoc()
        } else {
            (n + 1) as u32
        }
    }

    /// The file's `k`-th cluster: its byte offset from the volume start.
    fn file_cluster(&self, k: u64) -> u64 {
        self.data_offset + (self.first + self.root_clusters + k - 2) * self.cluster
    }

    /// The file's bytes in its `k`-th cluster.
    fn data(&self, k: u64) -> Vec<u8> {
        (0..self.cluster)
            .map(|i| (k * 31 + i * 7) as u8 | 1)
            .collect()
    }
}

/// The file's cluster the content zeroes, and the one it says it placed.
const ZEROED: u64 = 1;
const PLACED: u64 = 2;
/// The entry the content adds after the system entries (bytes a test can
/// find; the writer does not read directory entries it is handed).
const MARKER: [u8; 32] = *b"CONTENT MARKER ENTRY, 32 BYTES.\xEE";

struct Tree(Place);

impl Content for Tree {
    fn clusters(&self) -> u64 {
        self.0.extra
    }
    fn fat_entry(&self, index: u64) -> u32 {
        self.0.entry(index)
    }
    fn write(&mut self, system: &[u8], out: &mut dyn ContentSink) -> Result<(), WriteError> {
        let p = self.0;
        let bs = out.block_size();
        let (root_at, root_len) = p.root;
        let mut head = system.to_vec();
        head.extend_from_slice(&MARKER);
        head.resize(head.len().div_ceil(bs as usize) * bs as usize, 0);
        out.write_at(root_at, &head)?;
        out.zero_at(root_at + head.len() as u64, root_len - head.len() as u64)?;
        for k in 0..p.extra {
            match k {
                ZEROED => out.zero_at(p.file_cluster(k), p.cluster)?,
                PLACED => out.placed(p.file_cluster(k), p.cluster),
                _ => out.write_at(p.file_cluster(k), &p.data(k))?,
            }
        }
        Ok(())
    }
}

/// Sets FAT entry `n` of the FAT at `fat` to `v` (fatgen103 §4).
fn put_entry(fs: FsKind, fat: &mut [u8], n: u64, v: u32) {
    let n = n as usize;
    match fs {
        FsKind::Fat12 => {
            let at = n + n / 2;
            let v = v & 0xFFF;
            if n % 2 == 0 {
                fat[at] = v as u8;
                fat[at + 1] = (fat[at + 1] & 0xF0) | (v >> 8) as u8;
            } else {
                fat[at] = (fat[at] & 0x0F) | ((v & 0xF) << 4) as u8;
                fat[at + 1] = (v >> 4) as u8;
            }
        }
        FsKind::Fat16 => fat[2 * n..2 * n + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        FsKind::Fat32 | FsKind::Exfat => fat[4 * n..4 * n + 4].copy_from_slice(&v.to_le_bytes()),
    }
}

/// The populated image as it must be: the plain image with the content's
/// clusters accounted and its bytes in place.
fn expected(l: &Layout, p: Place, plain: &[u8]) -> Vec<u8> {
    let mut img = plain.to_vec();
    let bps = u64::from(l.sector_size()) as usize;
    for copy in 0..u64::from(l.fat_count()) {
        let at = (l.fat_offset() + copy * l.fat_bytes()) as usize;
        let fat = &mut img[at..at + l.fat_bytes() as usize];
        for n in p.first..p.first + p.root_clusters + p.extra + 1 {
            put_entry(p.fs, fat, n, p.entry(n));
        }
    }
    match l.geometry() {
        Geometry::Exfat(g) => {
            // The format's own clusters: bitmap, up-case table, root.
            let own = u64::from(g.bitmap_clusters + g.upcase_clusters + g.root_clusters);
            let bitmap = l.cluster_offset(g.bitmap_cluster()) as usize;
            for bit in own..own + p.extra {
                img[bitmap + (bit / 8) as usize] |= 1 << (bit % 8);
            }
            let percent = ((own + p.extra) * 100 / u64::from(g.cluster_count)) as u8;
            img[112] = percent;
            img[12 * bps + 112] = percent;
        }
        Geometry::Fat(g) if g.fs == FsKind::Fat32 => {
            let free = g.cluster_count - 1 - p.extra as u32;
            let next = (p.first + p.root_clusters + p.extra) as u32;
            for sector in [1, 7] {
                let at = sector * bps;
                img[at + 488..at + 492].copy_from_slice(&free.to_le_bytes());
                img[at + 492..at + 496].copy_from_slice(&next.to_le_bytes());
            }
        }
        Geometry::Fat(_) => {}
    }
    let (root_at, root_len) = (p.root.0 as usize, p.root.1 as usize);
    let root = &mut img[root_at..root_at + root_len];
    // The root as the plain format wrote it (system entries, zeros), with
    // the marker after the system entries.
    let used = root.chunks(32).take_while(|e| e[0] != 0).count() * 32;
    root[used..used + 32].copy_from_slice(&MARKER);
    for k in 0..p.extra {
        let at = p.file_cluster(k) as usize;
        let c = &mut img[at..at + p.cluster as usize];
        match k {
            ZEROED => c.fill(0),
            PLACED => {}
            _ => c.copy_from_slice(&p.data(k)),
        }
    }
    img
}

/// The first byte where two images differ, as a message.
fn first_difference(got: &[u8], want: &[u8]) -> Option<String> {
    let i = got.iter().zip(want).position(|(a, b)| a != b)?;
    Some(format!(
        "byte {i:#x}: {:#04x}, want {:#04x}",
        got[i], want[i]
    ))
}

fn check(fs: FsKind, cluster: u64, bytes: u64, sector: u32, label: &str, extra: u64) {
    let o = FormatOptions::new()
        .fs(FsChoice::Fixed(fs))
        .cluster(ClusterChoice::Bytes(cluster))
        .label(label)
        .serial(0x5EED_0001);
    let l = plan(&o, &Medium::whole(bytes, sector).expect("medium")).expect("a valid plan");
    let blocks = bytes / u64::from(sector);
    let mut plain = MemDisk::filled(sector, blocks, 0xD1).expect("a memory disk");
    write_volume(&l, &mut plain, &mut |_, _| {}).expect("the plain format");
    let p = Place::of(&l, extra);
    let want = expected(&l, p, plain.as_bytes());
    let mut disk = MemDisk::filled(sector, blocks, 0xD1).expect("a memory disk");
    let report = write_volume_with(
        &l,
        Some(&mut Tree(p)),
        &mut disk,
        Prior::Unknown,
        &mut |_, _| {},
    )
    .expect("the populated format");
    let what = format!("{fs} {cluster} in {bytes} ({sector}-byte sectors, label {label:?})");
    if let Some(d) = first_difference(disk.as_bytes(), &want) {
        panic!("{what}: {d}");
    }
    assert_eq!(report.bytes_placed, cluster, "{what}: the placed cluster");
}

// Enough extra clusters that their FAT entries fill more than one sector
// (a head of entries rounded to one sector would hide a short count).

#[test]
fn exfat_content_clusters_are_chained_marked_and_counted() {
    check(FsKind::Exfat, 512, 8 * MIB, 512, "CONTENT", 300);
    check(FsKind::Exfat, 4 * KIB, 16 * MIB, 4096, "", 1100);
}

#[test]
fn fat32_content_clusters_are_chained_and_counted_in_fsinfo() {
    check(FsKind::Fat32, 512, 40 * MIB, 512, "CONTENT", 300);
}

#[test]
fn fat16_and_fat12_content_clusters_are_chained_in_every_fat() {
    check(FsKind::Fat16, 2 * KIB, 16 * MIB, 512, "CONTENT", 300);
    check(FsKind::Fat12, KIB, 4 * MIB, 512, "", 700);
}
