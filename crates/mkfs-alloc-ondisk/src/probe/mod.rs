//! The one file-system signature prober: which file system starts a volume,
//! from the volume's first bytes. Pure: callers read the bytes (at most
//! [`PROBE_LEN`]) and pass them in.
//!
//! Sources: exFAT specification §3.1.2 (FileSystemName); fatgen103 §3.1
//! (BPB) and §3.5 (FAT type by cluster count); ext4 wiki "Super Block"
//! (magic 0xEF53 at 1024+56, feature flags, UUID at +104, label at +120);
//! XFS superblock (magic `XFSB`, UUID at 32, label at 108); btrfs superblock
//! at 64 KiB (magic at +64, label at +299); ECMA-119 §8.4 ("CD001" one byte
//! into 32 KiB, volume identifier at +40); util-linux libblkid and
//! `swapheader.h` for NTFS ("NTFS    " at 3, serial at 72), swap (signature
//! at 4086, label at 1052), LUKS (magic at 0, label at 24), SquashFS
//! (`hsqs`), HFS+ (`H+` or `HX` at 1024) and F2FS (magic at 1024).

pub mod table;

use alloc::format;
use alloc::string::String;

use zerocopy::{FromBytes, Immutable, KnownLayout};

use crate::fat::{Bpb, Fat16BootSector, Fat32BootSector};
use crate::foreign::*;
use crate::kind::FsKind;

/// Bytes of a volume's start that [`probe`] may look at (68 KiB: up to the
/// btrfs superblock's label). Shorter input is fine: signatures beyond it
/// are not seen.
pub const PROBE_LEN: usize = 68 << 10;

/// A file system recognised by its signature: one of ours ([`FsKind`]) or
/// another that a format would overwrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum AnyFs {
    /// exFAT or FAT12/16/32: the one kind of the volumes we write.
    Ours(FsKind),
    /// NTFS.
    Ntfs,
    /// ext2.
    Ext2,
    /// ext3.
    Ext3,
    /// ext4.
    Ext4,
    /// ISO 9660.
    Iso9660,
    /// Btrfs.
    Btrfs,
    /// XFS.
    Xfs,
    /// Linux swap.
    Swap,
    /// LUKS encrypted volume.
    Luks,
    /// SquashFS.
    Squashfs,
    /// HFS+ / HFSX.
    HfsPlus,
    /// F2FS.
    F2fs,
}

impl From<FsKind> for AnyFs {
    fn from(kind: FsKind) -> Self {
        AnyFs::Ours(kind)
    }
}

impl AnyFs {
    /// Every kind, in the order [`probe`] tries them.
    pub const ALL: [AnyFs; 16] = [
        AnyFs::Ours(FsKind::Exfat),
        AnyFs::Ours(FsKind::Fat12),
        AnyFs::Ours(FsKind::Fat16),
        AnyFs::Ours(FsKind::Fat32),
        AnyFs::Ntfs,
        AnyFs::Ext2,
        AnyFs::Ext3,
        AnyFs::Ext4,
        AnyFs::Iso9660,
        AnyFs::Btrfs,
        AnyFs::Xfs,
        AnyFs::Swap,
        AnyFs::Luks,
        AnyFs::Squashfs,
        AnyFs::HfsPlus,
        AnyFs::F2fs,
    ];

    /// Our kind, if it is one of ours (exFAT, FAT12/16/32).
    pub fn ours(self) -> Option<FsKind> {
        match self {
            AnyFs::Ours(kind) => Some(kind),
            _ => None,
        }
    }

    /// Stable lower-case identifier (`exfat`, `fat32`, `hfs_plus`, …), as
    /// in JSON reports.
    pub fn id(self) -> &'static str {
        match self {
            AnyFs::Ours(kind) => kind.id(),
            AnyFs::Ntfs => "ntfs",
            AnyFs::Ext2 => "ext2",
            AnyFs::Ext3 => "ext3",
            AnyFs::Ext4 => "ext4",
            AnyFs::Iso9660 => "iso9660",
            AnyFs::Btrfs => "btrfs",
            AnyFs::Xfs => "xfs",
            AnyFs::Swap => "swap",
            AnyFs::Luks => "luks",
            AnyFs::Squashfs => "squashfs",
            AnyFs::HfsPlus => "hfs_plus",
            AnyFs::F2fs => "f2fs",
        }
    }

    /// Name for people (`exFAT`, `FAT32`, `Linux swap`, …).
    pub fn display_name(self) -> &'static str {
        match self {
            AnyFs::Ours(kind) => kind.display_name(),
            AnyFs::Ntfs => "NTFS",
            AnyFs::Ext2 => "ext2",
            AnyFs::Ext3 => "ext3",
            AnyFs::Ext4 => "ext4",
            AnyFs::Iso9660 => "ISO 9660",
            AnyFs::Btrfs => "Btrfs",
            AnyFs::Xfs => "XFS",
            AnyFs::Swap => "Linux swap",
            AnyFs::Luks => "LUKS",
            AnyFs::Squashfs => "SquashFS",
            AnyFs::HfsPlus => "HFS+",
            AnyFs::F2fs => "F2FS",
        }
    }

    /// The name `blkid` (and the Linux mount table) uses: `vfat` for the
    /// three FAT widths, `crypto_LUKS`, `hfsplus`, …
    pub fn blkid_name(self) -> &'static str {
        match self {
            AnyFs::Ours(kind) if kind.is_fat() => "vfat",
            AnyFs::Luks => "crypto_LUKS",
            AnyFs::HfsPlus => "hfsplus",
            other => other.id(),
        }
    }

    /// True when the signature is a boot sector at byte 0 (exFAT, NTFS,
    /// FAT): such a sector ends in `55 AA` like an MBR but is not one.
    pub fn has_boot_sector(self) -> bool {
        matches!(self, AnyFs::Ours(_) | AnyFs::Ntfs)
    }
}

impl core::fmt::Display for AnyFs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.display_name())
    }
}

/// What [`probe`] found at the start of a volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The file system.
    pub kind: AnyFs,
    /// Its label where the signature block holds one (FAT BPB, NTFS: none,
    /// ext, XFS, btrfs, ISO 9660, swap, LUKS); the exFAT label lives in the
    /// root directory: see `root_directory_offset` and
    /// [`crate::exfat::volume_label`].
    pub label: Option<String>,
    /// Its serial or UUID as text, where the signature block holds one.
    pub serial: Option<String>,
}

/// Recognises the file system whose volume starts with `volume` (the first
/// up to [`PROBE_LEN`] bytes). `None` when nothing is recognised.
///
/// Boot-sector file systems (exFAT, NTFS, FAT) are tried first, then the
/// superblock magics in order of their offset.
pub fn probe(volume: &[u8]) -> Option<Probe> {
    boot_sector(volume).or_else(|| superblock(volume))
}

/// The kind of the boot sector `sector` (its first 512 bytes): exFAT, NTFS
/// or a FAT BPB that holds together; `None` otherwise (an MBR, say).
pub fn boot_sector_kind(sector: &[u8]) -> Option<AnyFs> {
    let s = sector.get(..512)?;
    let (head, _) = Bpb::ref_from_prefix(s).ok()?;
    match &head.oem_name {
        name if *name == crate::exfat::FILE_SYSTEM_NAME => Some(AnyFs::Ours(FsKind::Exfat)),
        name if *name == NTFS_OEM_ID => Some(AnyFs::Ntfs),
        _ => fat_kind(s).map(AnyFs::Ours),
    }
}

fn boot_sector(v: &[u8]) -> Option<Probe> {
    let kind = boot_sector_kind(v)?;
    let s = v.get(..512)?;
    let (label, serial) = match kind {
        AnyFs::Ntfs => {
            let (ntfs, _) = NtfsBootSector::ref_from_prefix(s).ok()?;
            let serial = ntfs.volume_serial_number.get();
            (None, Some(format!("{serial:016X}")))
        }
        AnyFs::Ours(FsKind::Fat32) => {
            let (b, _) = Fat32BootSector::ref_from_prefix(s).ok()?;
            (
                fat_label(&b.ebpb.vol_lab),
                Some(fat_serial(b.ebpb.vol_id.get())),
            )
        }
        AnyFs::Ours(FsKind::Fat12 | FsKind::Fat16) => {
            let (b, _) = Fat16BootSector::ref_from_prefix(s).ok()?;
            (
                fat_label(&b.ebpb.vol_lab),
                Some(fat_serial(b.ebpb.vol_id.get())),
            )
        }
        _ => (None, None),
    };
    Some(Probe {
        kind,
        label,
        serial,
    })
}

/// A FAT BPB that a FAT driver would take: jump instruction, power-of-two
/// sector size 512..=4096 and sectors per cluster, reserved sectors, 1..=4
/// FATs, a sector count, a FAT size and a media byte; and its width: FAT32
/// when `BPB_FATSz16` is 0 (as Linux and fsck.fat decide), else FAT12 or
/// FAT16 by the cluster count (fatgen103 §3.5).
pub fn fat_kind(sector: &[u8]) -> Option<FsKind> {
    let s = sector.get(..512)?;
    let (boot, _) = Fat32BootSector::ref_from_prefix(s).ok()?;
    let b = &boot.bpb;
    let jump_ok = (b.jmp_boot[0] == 0xEB && b.jmp_boot[2] == 0x90) || b.jmp_boot[0] == 0xE9;
    let bps = u64::from(b.byts_per_sec.get());
    let spc = u64::from(b.sec_per_clus);
    let rsvd = u64::from(b.rsvd_sec_cnt.get());
    let nfats = u64::from(b.num_fats);
    let tot = match b.tot_sec16.get() {
        0 => u64::from(b.tot_sec32.get()),
        n => u64::from(n),
    };
    let fat16_size = b.fat_sz16.get();
    let fat_size = match fat16_size {
        0 => u64::from(boot.ebpb.fat_sz32.get()),
        n => u64::from(n),
    };
    let ok = jump_ok
        && crate::valid_sector_size(u32::from(b.byts_per_sec.get()))
        && spc.is_power_of_two()
        && rsvd != 0
        && (1..=4).contains(&nfats)
        && tot != 0
        && fat_size != 0
        && (b.media == 0xF0 || b.media >= 0xF8);
    if !ok {
        return None;
    }
    if fat16_size == 0 {
        return Some(FsKind::Fat32);
    }
    let root_sectors = (u64::from(b.root_ent_cnt.get()) * 32).div_ceil(bps);
    let data = tot.saturating_sub(rsvd + nfats * fat_size + root_sectors);
    // BPB_FATSz16 set: FAT12 or FAT16, never FAT32 (past 65,524 clusters too).
    Some(match FsKind::fat_width(data / spc) {
        FsKind::Fat12 => FsKind::Fat12,
        _ => FsKind::Fat16,
    })
}

fn fat_label(bytes: &[u8]) -> Option<String> {
    text(bytes).filter(|l| l != "NO NAME")
}

fn fat_serial(v: u32) -> String {
    format!("{:04X}-{:04X}", v >> 16, v & 0xFFFF)
}

/// The `T` at byte `offset` of `v`, if all there.
fn at<T: FromBytes + KnownLayout + Immutable>(v: &[u8], offset: usize) -> Option<&T> {
    T::ref_from_prefix(v.get(offset..)?).ok().map(|(t, _)| t)
}

fn superblock(v: &[u8]) -> Option<Probe> {
    let found = |kind, label: Option<String>, serial: Option<String>| {
        Some(Probe {
            kind,
            label,
            serial,
        })
    };
    if let Some(sb) = at::<XfsSuperblock>(v, 0).filter(|sb| sb.magic == XFS_MAGIC) {
        return found(AnyFs::Xfs, text(&sb.fname), Some(uuid_text(&sb.uuid)));
    }
    if let Some(h) = at::<LuksHeader>(v, 0).filter(|h| h.magic == LUKS_MAGIC) {
        return found(AnyFs::Luks, text(&h.label), None);
    }
    if at::<[u8; 4]>(v, 0) == Some(&SQUASHFS_MAGIC) {
        return found(AnyFs::Squashfs, None, None);
    }
    if let Some(sb) = at::<ExtSuperblock>(v, EXT_SUPERBLOCK_OFFSET)
        .filter(|sb| sb.magic.get() == EXT_MAGIC && sb.log_block_size.get() <= 6)
    {
        return Some(ext(sb));
    }
    if at::<[u8; 2]>(v, HFS_F2FS_OFFSET).is_some_and(|s| HFS_PLUS_SIGNATURES.contains(s)) {
        return found(AnyFs::HfsPlus, None, None);
    }
    if at::<[u8; 4]>(v, HFS_F2FS_OFFSET) == Some(&F2FS_MAGIC) {
        return found(AnyFs::F2fs, None, None);
    }
    if let Some(h) = at::<SwapHeader>(v, 0).filter(|h| SWAP_SIGNATURES.contains(&h.magic)) {
        return found(AnyFs::Swap, text(&h.volume_name), None);
    }
    if let Some(d) = at::<Iso9660Descriptor>(v, ISO9660_PVD_OFFSET).filter(|d| d.id == ISO9660_ID) {
        return found(AnyFs::Iso9660, text(&d.volume_id), None);
    }
    if let Some(sb) =
        at::<BtrfsSuperblock>(v, BTRFS_SUPERBLOCK_OFFSET).filter(|sb| sb.magic == BTRFS_MAGIC)
    {
        return found(AnyFs::Btrfs, text(&sb.label), Some(uuid_text(&sb.fsid)));
    }
    None
}

/// ext2/3/4 from the superblock at 1024: ext4-only features (extents,
/// 64bit, flex_bg, inline data… in incompat; huge_file, gdt_csum,
/// dir_nlink, extra_isize, metadata_csum in ro_compat), else a journal
/// makes ext3.
fn ext(sb: &ExtSuperblock) -> Probe {
    let (compat, incompat, ro_compat) = (
        sb.feature_compat.get(),
        sb.feature_incompat.get(),
        sb.feature_ro_compat.get(),
    );
    let kind = if incompat & 0xFFC0 != 0 || ro_compat & 0x0478 != 0 {
        AnyFs::Ext4
    } else if compat & 0x4 != 0 {
        AnyFs::Ext3
    } else {
        AnyFs::Ext2
    };
    Probe {
        kind,
        label: text(&sb.volume_name),
        serial: Some(uuid_text(&sb.uuid)),
    }
}

/// A NUL-terminated, space-padded text field: UTF-8 (lossy), control
/// characters shown as `?`, trailing spaces dropped; `None` when empty.
pub fn text(bytes: &[u8]) -> Option<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let s: String = String::from_utf8_lossy(&bytes[..end])
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let t = s.trim_end();
    (!t.is_empty()).then(|| String::from(t))
}

/// Big-endian (RFC 4122 byte order) UUID text of 16 bytes.
fn uuid_text(b: &[u8]) -> String {
    let mut s = String::with_capacity(36);
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{x:02x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn fat32_sector(label: &[u8; 11]) -> Vec<u8> {
        let mut s = vec![0u8; 512];
        s[..3].copy_from_slice(&[0xEB, 0x58, 0x90]);
        s[11..13].copy_from_slice(&512u16.to_le_bytes());
        s[13] = 8;
        s[14..16].copy_from_slice(&32u16.to_le_bytes());
        s[16] = 2;
        s[21] = 0xF8;
        s[32..36].copy_from_slice(&2_000_000u32.to_le_bytes());
        s[36..40].copy_from_slice(&2000u32.to_le_bytes());
        s[67..71].copy_from_slice(&0x1234_ABCDu32.to_le_bytes());
        s[71..82].copy_from_slice(label);
        s[82..90].copy_from_slice(b"FAT32   ");
        s[510] = 0x55;
        s[511] = 0xAA;
        s
    }

    #[test]
    fn fat32_label_and_serial() {
        let p = probe(&fat32_sector(b"MYSTICK    ")).expect("FAT32");
        assert_eq!(p.kind, AnyFs::Ours(FsKind::Fat32));
        assert_eq!(p.label.as_deref(), Some("MYSTICK"));
        assert_eq!(p.serial.as_deref(), Some("1234-ABCD"));
        let p = probe(&fat32_sector(b"NO NAME    ")).expect("FAT32");
        assert_eq!(p.label, None);
    }

    #[test]
    fn a_fat_boot_sector_starts_with_a_jump() {
        // fatgen103 §3.1 BS_jmpBoot: EB xx 90 or E9 xx xx.
        let mut s = fat32_sector(b"NO NAME    ");
        s[..3].copy_from_slice(&[0xE9, 0x12, 0x34]);
        assert_eq!(fat_kind(&s), Some(FsKind::Fat32));
        s[..3].copy_from_slice(&[0xEB, 0x58, 0x00]);
        assert_eq!(fat_kind(&s), None);
        s[..3].copy_from_slice(&[0x00, 0x00, 0x00]);
        assert_eq!(fat_kind(&s), None);
    }

    #[test]
    fn fat_width_by_cluster_count() {
        let mut s = fat32_sector(b"NO NAME    ");
        s[17..19].copy_from_slice(&512u16.to_le_bytes()); // root entries
        s[22..24].copy_from_slice(&16u16.to_le_bytes()); // FATSz16
        s[13] = 1;
        // rsvd 32 + 2 FATs x 16 + 32 root sectors = 96; + 4084 clusters.
        s[19..21].copy_from_slice(&(96 + 4084u16).to_le_bytes());
        assert_eq!(fat_kind(&s), Some(FsKind::Fat12));
        s[19..21].copy_from_slice(&(96 + 4085u16).to_le_bytes());
        assert_eq!(fat_kind(&s), Some(FsKind::Fat16));
    }

    #[test]
    fn an_mbr_is_not_a_boot_sector() {
        let mut s = vec![0u8; 512];
        s[510] = 0x55;
        s[511] = 0xAA;
        s[446 + 4] = 0x0C;
        assert_eq!(boot_sector_kind(&s), None);
        assert_eq!(probe(&s), None);
        // A GRUB-like jump with a zero BPB is not FAT either.
        s[..3].copy_from_slice(&[0xEB, 0x63, 0x90]);
        assert_eq!(probe(&s), None);
    }

    #[test]
    fn exfat_and_ntfs() {
        let mut s = vec![0u8; 512];
        s[3..11].copy_from_slice(b"EXFAT   ");
        assert_eq!(probe(&s).map(|p| p.kind), Some(AnyFs::Ours(FsKind::Exfat)));
        s[3..11].copy_from_slice(b"NTFS    ");
        s[72..80].copy_from_slice(&0x0123_4567_89AB_CDEFu64.to_le_bytes());
        let p = probe(&s).expect("NTFS");
        assert_eq!(p.kind, AnyFs::Ntfs);
        assert_eq!(p.serial.as_deref(), Some("0123456789ABCDEF"));
    }

    #[test]
    fn ext_versions() {
        let mut v = vec![0u8; 4096];
        v[1024 + 56] = 0x53;
        v[1024 + 57] = 0xEF;
        v[1024 + 120..1024 + 124].copy_from_slice(b"root");
        assert_eq!(probe(&v).map(|p| p.kind), Some(AnyFs::Ext2));
        v[1024 + 92] = 0x4;
        assert_eq!(probe(&v).map(|p| p.kind), Some(AnyFs::Ext3));
        v[1024 + 96] = 0x40;
        let p = probe(&v).expect("ext4");
        assert_eq!(p.kind, AnyFs::Ext4);
        assert_eq!(p.label.as_deref(), Some("root"));
        assert_eq!(
            p.serial.as_deref(),
            Some("00000000-0000-0000-0000-000000000000")
        );
        // Too short for the superblock: nothing.
        assert_eq!(probe(&v[..1024]), None);
    }

    #[test]
    fn far_signatures() {
        let mut v = vec![0u8; PROBE_LEN];
        v[4086..4096].copy_from_slice(b"SWAPSPACE2");
        v[1052..1056].copy_from_slice(b"swp1");
        let p = probe(&v).expect("swap");
        assert_eq!((p.kind, p.label.as_deref()), (AnyFs::Swap, Some("swp1")));
        v[4086..4096].fill(0);
        v[32769..32774].copy_from_slice(b"CD001");
        v[32768 + 40..32768 + 46].copy_from_slice(b"CDROM ");
        let p = probe(&v).expect("iso");
        assert_eq!(
            (p.kind, p.label.as_deref()),
            (AnyFs::Iso9660, Some("CDROM"))
        );
        v[32769..32774].fill(0);
        v[65600..65608].copy_from_slice(b"_BHRfS_M");
        v[65536 + 0x12B..65536 + 0x12B + 4].copy_from_slice(b"data");
        let p = probe(&v).expect("btrfs");
        assert_eq!((p.kind, p.label.as_deref()), (AnyFs::Btrfs, Some("data")));
        assert_eq!(probe(&v[..65600]), None);
    }

    #[test]
    fn names() {
        assert_eq!(AnyFs::Ours(FsKind::Fat16).blkid_name(), "vfat");
        assert_eq!(AnyFs::HfsPlus.id(), "hfs_plus");
        assert_eq!(AnyFs::Luks.blkid_name(), "crypto_LUKS");
        assert!(AnyFs::ALL.iter().filter(|k| k.has_boot_sector()).count() == 5);
    }
}
