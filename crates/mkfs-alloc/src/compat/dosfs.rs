//! The FAT width and cluster size mkfs.fat (dosfstools 4.2) picks when its
//! options leave them open, so that a drop-in `mkfs.fat DEVICE` gives the
//! volume people expect from it.
//!
//! Re-expressed from the rule of `establish_params()` and `setup_tables()`
//! in dosfstools 4.2's `src/mkfs.fat.c` (GPL-3.0; the rule, not its code):
//! FAT32 from 512 MiB up (its cluster size from Microsoft's table), else
//! FAT12 or FAT16 starting at 4 sectors per cluster, doubling until the
//! cluster count fits the width (FAT12 up to 4,084 clusters, FAT16 4,085 to
//! 65,524), FAT structures aligned to the cluster size and the volume cut
//! to whole tracks. The classic floppy sizes of an image file get the
//! floppy's cluster size and root directory.

/// What mkfs.fat was told and what it knows about the target.
#[derive(Debug, Clone, Copy)]
pub struct DosfsInput {
    /// Bytes the file system may use (the target, or `BLOCKS` KiB).
    pub bytes: u64,
    /// Logical sector size.
    pub sector: u32,
    /// `-F`: 12, 16 or 32.
    pub fat_bits: Option<u8>,
    /// `-s`: sectors per cluster.
    pub spc: Option<u32>,
    /// `-r`: root directory entries.
    pub root_entries: Option<u32>,
    /// Not `-a`.
    pub align: bool,
    /// An image file or a removable device (floppy sizes get floppy defaults).
    pub not_fixed: bool,
}

/// What mkfs.fat would make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DosfsChoice {
    /// 12, 16 or 32.
    pub fat_bits: u8,
    /// Sectors per cluster.
    pub spc: u32,
    /// Its cluster count.
    pub clusters: u32,
    /// Root directory entries (0 on FAT32), before mkfs.fat rounds them up.
    pub root_entries: u32,
    /// Whether mkfs.fat aligns its structures to the cluster size (not
    /// `-a`, more than 8,192 sectors).
    pub aligned: bool,
    /// A classic floppy's media descriptor and sectors per track (two
    /// heads, drive 0x00), where mkfs.fat writes a floppy's boot sector.
    pub floppy: Option<(u8, u8)>,
}

/// A classic floppy, from dosfstools 4.2's table of them.
#[derive(Debug, Clone, Copy)]
struct Floppy {
    /// Sectors per track (two heads).
    spt: u64,
    /// Sectors per cluster.
    spc: u32,
    /// Root directory entries.
    root: u32,
    /// Media descriptor.
    media: u8,
}

const MAX_CLUST_12: u64 = mkfs_alloc_layout::FsKind::Fat12.max_clusters();
const MIN_CLUST_16: u64 = mkfs_alloc_layout::FsKind::Fat16.min_clusters();
const MAX_CLUST_16: u64 = mkfs_alloc_layout::FsKind::Fat16.max_clusters();
const MIN_CLUST_32: u64 = mkfs_alloc_layout::FsKind::Fat32.min_clusters();
const MAX_CLUST_32: u64 = 268_435_446;
const NR_FATS: u64 = 2;

/// Sectors per track mkfs.fat assumes without a drive geometry.
fn sectors_per_track(total_sectors: u64) -> u64 {
    match total_sectors {
        0..=4096 => 16,
        4097..=524_288 => 32,
        _ => 63,
    }
}

/// The classic floppy of exactly `bytes` in 512-byte sectors, if any.
fn floppy(bytes: u64, sector: u32) -> Option<Floppy> {
    let f = |spt, spc, root, media| Floppy {
        spt,
        spc,
        root,
        media,
    };
    if sector != 512 || bytes % 1024 != 0 {
        return None;
    }
    match bytes / 1024 {
        360 => Some(f(9, 2, 112, 0xFD)),
        720 => Some(f(9, 2, 112, 0xF9)),
        1200 => Some(f(15, 1, 224, 0xF9)),
        1440 => Some(f(18, 1, 224, 0xF0)),
        2880 => Some(f(36, 2, 224, 0xF0)),
        _ => None,
    }
}

fn cdiv(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// The cluster counts of FAT12, FAT16 and FAT32 at `cs` sectors per
/// cluster (0 where the width does not fit), as mkfs.fat counts them.
fn trial(
    n: u64,
    reserved: u64,
    root_sectors: u64,
    cs: u64,
    ss: u64,
    align: bool,
    forced32: bool,
) -> [u64; 3] {
    let al = |s: u64| if align { s.div_ceil(cs) * cs } else { s };
    let fatdata32 = n.saturating_sub(al(reserved));
    let fatdata1216 = fatdata32.saturating_sub(al(root_sectors));
    // The count that remains once both FATs of `len` sectors are taken.
    let left = |fatdata: u64, len: u64| fatdata.checked_sub(NR_FATS * len).map_or(0, |d| d / cs);
    // FAT12: 1.5 bytes per entry, two reserved entries.
    let guess12 = 2 * (fatdata1216 * ss + NR_FATS * 3) / (2 * cs * ss + NR_FATS * 3);
    let len12 = al(cdiv(((guess12 + 2) * 3 + 1) >> 1, ss));
    let c12 = left(fatdata1216, len12);
    let c12 = if c12 > (len12 * 2 * ss / 3).min(MAX_CLUST_12) {
        0
    } else {
        c12
    };
    let guess16 = (fatdata1216 * ss + NR_FATS * 4) / (cs * ss + NR_FATS * 2);
    let len16 = al(cdiv((guess16 + 2) * 2, ss));
    let c16 = left(fatdata1216, len16);
    let c16 = if c16 > (len16 * ss / 2).min(MAX_CLUST_16) || c16 < MIN_CLUST_16 {
        0
    } else {
        c16
    };
    let guess32 = (fatdata32 * ss + NR_FATS * 8) / (cs * ss + NR_FATS * 4);
    let len32 = al(cdiv((guess32 + 2) * 4, ss));
    let c32 = left(fatdata32, len32);
    let too_few = c32 < MIN_CLUST_32 && !forced32;
    let c32 = if c32 > (len32 * ss / 4).min(MAX_CLUST_32) || too_few {
        0
    } else {
        c32
    };
    [c12, c16, c32]
}

/// The root directory entries mkfs.fat writes for `root` asked: whole
/// sectors, and whole clusters of `spc` sectors where it aligns.
pub fn root_entries_written(root: u32, sector: u32, spc: u64, aligned: bool) -> u32 {
    let per_sector = u64::from(sector) / 32;
    let sectors = u64::from(root).div_ceil(per_sector);
    let sectors = if aligned {
        sectors.div_ceil(spc) * spc
    } else {
        sectors
    };
    u32::try_from(sectors * per_sector).unwrap_or(u32::MAX)
}

/// mkfs.fat's width and cluster size for `input`; `None` where mkfs.fat
/// itself would give up (no cluster size fits).
pub fn choose(input: &DosfsInput) -> Option<DosfsChoice> {
    let ss = u64::from(input.sector);
    let mut num_sectors = (input.bytes / ss).min(u64::from(u32::MAX));
    let floppy = input
        .not_fixed
        .then(|| floppy(input.bytes, input.sector))
        .flatten();
    let mut spt = sectors_per_track(num_sectors);
    let mut cluster = 4u64;
    let mut root = input.root_entries.unwrap_or(512);
    if let Some(f) = floppy {
        spt = f.spt;
        cluster = u64::from(f.spc);
        root = input.root_entries.unwrap_or(f.root);
    }
    let mut bits = input.fat_bits.unwrap_or(0);
    if bits == 0 && input.bytes >= 512 << 20 {
        bits = 32;
    }
    if bits == 32 {
        cluster = match num_sectors {
            n if n > 32 * 1024 * 1024 * 2 => 64,
            n if n > 16 * 1024 * 1024 * 2 => 32,
            n if n > 8 * 1024 * 1024 * 2 => 16,
            n if n > 260 * 1024 * 2 => 8,
            _ => 1,
        };
        root = 0;
    }
    let mut align = input.align;
    if align {
        num_sectors = num_sectors / spt * spt;
    }
    if num_sectors <= 8192 {
        align = false;
    }
    let reserved = if bits == 32 { 32 } else { 1 };
    let root_sectors = cdiv(u64::from(root) * 32, ss);
    let max_cluster = match input.spc {
        Some(s) => {
            cluster = u64::from(s);
            cluster
        }
        None => 128,
    };
    let forced32 = input.fat_bits == Some(32);
    let wants = |w: u8| bits == 0 || bits == w;
    while cluster <= max_cluster {
        let [c12, c16, c32] = trial(
            num_sectors,
            reserved,
            root_sectors,
            cluster,
            ss,
            align,
            forced32,
        );
        if (c12 > 0 && wants(12)) || (c16 > 0 && wants(16)) || (c32 > 0 && bits == 32) {
            let fat_bits = match bits {
                0 if c16 > c12 => 16,
                0 => 12,
                b => b,
            };
            let clusters = match fat_bits {
                12 => c12,
                16 => c16,
                _ => c32,
            };
            return Some(DosfsChoice {
                fat_bits,
                spc: cluster as u32,
                clusters: clusters as u32,
                root_entries: root,
                aligned: align,
                floppy: floppy.map(|f| (f.media, f.spt as u8)),
            });
        }
        cluster <<= 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(bytes: u64, sector: u32, fat_bits: Option<u8>) -> (u8, u32) {
        let c = choose(&DosfsInput {
            bytes,
            sector,
            fat_bits,
            spc: None,
            root_entries: None,
            align: true,
            not_fixed: true,
        })
        .expect("mkfs.fat makes it");
        (c.fat_bits, c.spc)
    }

    /// Figures dosfstools 4.2's mkfs.fat printed with -v (tests/tests/
    /// compat_fat.rs compares many more against the real program).
    #[test]
    fn known_choices() {
        assert_eq!(pick(10 << 20, 512, None), (16, 4)); // "5101 clusters"
        assert_eq!(pick(1440 << 10, 512, None), (12, 1)); // the 1.44 MB floppy
        assert_eq!(pick(300 << 20, 512, Some(32)), (32, 8));
        assert_eq!(pick(200 << 20, 512, Some(32)), (32, 1));
        assert_eq!(pick(600 << 20, 512, None), (32, 8));
        assert_eq!(pick(64 << 30, 512, None), (32, 64));
        assert_eq!(pick(4 << 20, 512, None), (12, 4));
    }

    /// mkfs.fat's root directory: whole clusters where it aligns (`-s 128`
    /// on 300 MiB: 2,048 entries; `-F 12` on 64 MiB at 64 sectors: 1,024),
    /// whole sectors where it does not (a 720 KiB floppy's 112).
    #[test]
    fn root_entries_as_written() {
        assert_eq!(root_entries_written(512, 512, 128, true), 2048);
        assert_eq!(root_entries_written(512, 512, 64, true), 1024);
        assert_eq!(root_entries_written(512, 512, 4, true), 512);
        assert_eq!(root_entries_written(112, 512, 2, false), 112);
        assert_eq!(root_entries_written(100, 512, 4, true), 128);
        assert_eq!(root_entries_written(100, 512, 4, false), 112);
    }
}
