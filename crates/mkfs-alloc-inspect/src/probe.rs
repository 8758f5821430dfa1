//! File system recognition by signature.
//!
//! Sources: exFAT specification §3.1.2 (FileSystemName); fatgen103 §3.1 (BPB)
//! and §3.5 (FAT type by cluster count); ext4 wiki "Super Block" (magic
//! 0xEF53 at 1024+56, feature flags); ECMA-119 §8.4 ("CD001" at 32 KiB + 1);
//! util-linux libblkid superblock probes for the others (NTFS "NTFS    " at 3,
//! XFS "XFSB", btrfs "_BHRfS_M" at 64 KiB + 64, swap, LUKS, SquashFS, HFS+,
//! F2FS).

use mkfs_alloc_blockio::BlockIo;

use crate::error::InspectError;
use crate::io::Reader;
use crate::report::FsKind;

/// What a first look at a volume found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Probe {
    pub(crate) fs: FsKind,
    pub(crate) label: Option<String>,
    pub(crate) serial: Option<String>,
}

/// True if `sector` (at least 512 bytes) is the boot sector of a file system
/// that lives at LBA 0 (exFAT, NTFS, FAT with a plausible BPB): such a sector
/// has `55 AA` like an MBR but is not one.
pub fn is_fs_boot_sector(sector: &[u8]) -> bool {
    let Some(s) = sector.get(..512) else {
        return false;
    };
    &s[3..11] == b"EXFAT   " || &s[3..11] == b"NTFS    " || plausible_bpb(s)
}

/// A FAT BIOS Parameter Block that a FAT driver would take: jump
/// instruction, power-of-two sector size 512..=4096 and sectors per cluster,
/// reserved sectors, 1..=4 FATs, a sector count and a FAT size.
pub fn plausible_bpb(s: &[u8]) -> bool {
    if s.len() < 512 {
        return false;
    }
    let jump_ok = (s[0] == 0xEB && s[2] == 0x90) || s[0] == 0xE9;
    let u16_at = |o: usize| u16::from_le_bytes([s[o], s[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([s[o], s[o + 1], s[o + 2], s[o + 3]]);
    let bps = u16_at(11);
    let spc = s[13];
    let rsvd = u16_at(14);
    let nfats = s[16];
    let tot = if u16_at(19) != 0 {
        u32::from(u16_at(19))
    } else {
        u32_at(32)
    };
    let fatsz = if u16_at(22) != 0 {
        u32::from(u16_at(22))
    } else {
        u32_at(36)
    };
    jump_ok
        && bps.is_power_of_two()
        && (512..=4096).contains(&bps)
        && spc.is_power_of_two()
        && rsvd != 0
        && (1..=4).contains(&nfats)
        && tot != 0
        && fatsz != 0
        && (s[21] == 0xF0 || s[21] >= 0xF8)
}

/// Recognises the file system at `start`, reading at most a few KiB inside
/// `start..start + size`.
pub(crate) fn probe<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    start: u64,
    size: u64,
) -> Result<Probe, InspectError> {
    let at =
        |r: &mut Reader<'_, D>, off: u64, len: usize| -> Result<Option<Vec<u8>>, InspectError> {
            if off.saturating_add(len as u64) > size {
                return Ok(None);
            }
            match start.checked_add(off) {
                Some(abs) => r.read_opt(abs, len),
                None => Ok(None),
            }
        };
    let none = |fs| Probe {
        fs,
        label: None,
        serial: None,
    };
    if let Some(s) = at(r, 0, 512)? {
        if &s[3..11] == b"EXFAT   " {
            return Ok(none(FsKind::Exfat));
        }
        if &s[3..11] == b"NTFS    " {
            let serial = u64::from_le_bytes(s[72..80].try_into().unwrap_or([0; 8]));
            return Ok(Probe {
                fs: FsKind::Ntfs,
                label: None,
                serial: Some(format!("{serial:016X}")),
            });
        }
        if plausible_bpb(&s) {
            // FAT12/16/32 is decided by the FAT module from the BPB.
            return Ok(none(FsKind::Fat32));
        }
        if &s[0..4] == b"XFSB" {
            let label = ascii_label(&s[108..120]);
            return Ok(Probe {
                fs: FsKind::Xfs,
                label,
                serial: Some(uuid_text(&s[32..48])),
            });
        }
        if &s[0..6] == b"LUKS\xBA\xBE" {
            return Ok(none(FsKind::Luks));
        }
        if &s[0..4] == b"hsqs" {
            return Ok(none(FsKind::Squashfs));
        }
    }
    if let Some(sb) = at(r, 1024, 1024)? {
        if sb[56..58] == [0x53, 0xEF] {
            let le32 = |o: usize| u32::from_le_bytes([sb[o], sb[o + 1], sb[o + 2], sb[o + 3]]);
            let compat = le32(92);
            let incompat = le32(96);
            let ro_compat = le32(100);
            // ext4-only features: extents, 64bit, flex_bg, inline data...
            // (incompat); huge_file, gdt_csum, dir_nlink, extra_isize,
            // metadata_csum (ro_compat).
            let ext4 = incompat & 0xFFC0 != 0 || ro_compat & 0x0478 != 0;
            let fs = if ext4 {
                FsKind::Ext4
            } else if compat & 0x4 != 0 {
                FsKind::Ext3
            } else {
                FsKind::Ext2
            };
            return Ok(Probe {
                fs,
                label: ascii_label(&sb[120..136]),
                serial: Some(uuid_text(&sb[104..120])),
            });
        }
        if &sb[0..2] == b"H+" || &sb[0..2] == b"HX" {
            return Ok(none(FsKind::HfsPlus));
        }
        if sb[0..4] == [0x10, 0x20, 0xF5, 0xF2] {
            return Ok(none(FsKind::F2fs));
        }
    }
    if let Some(p) = at(r, 4096 - 10, 10)? {
        if &p == b"SWAPSPACE2" || &p == b"SWAP-SPACE" {
            return Ok(none(FsKind::Swap));
        }
    }
    if let Some(pvd) = at(r, 32768, 2048)? {
        if &pvd[1..6] == b"CD001" {
            return Ok(Probe {
                fs: FsKind::Iso9660,
                label: ascii_label(&pvd[40..72]),
                serial: None,
            });
        }
    }
    if let Some(b) = at(r, 65536 + 64, 8)? {
        if &b == b"_BHRfS_M" {
            return Ok(none(FsKind::Btrfs));
        }
    }
    Ok(none(FsKind::Unknown))
}

/// A space- or NUL-padded ASCII label, `None` when empty.
pub(crate) fn ascii_label(bytes: &[u8]) -> Option<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let s: String = bytes[..end]
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect();
    let t = s.trim_end();
    (!t.is_empty()).then(|| t.to_string())
}

/// Big-endian (RFC 4122 byte order) UUID text.
fn uuid_text(b: &[u8]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let h = h.concat();
    if h.len() != 32 {
        return h;
    }
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
