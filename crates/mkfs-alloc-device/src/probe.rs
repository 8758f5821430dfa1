//! The I/O side of the device probe: reads a volume's first bytes (and, for
//! exFAT, its root directory) in aligned units and hands them to the one
//! signature prober, `mkfs_alloc_ondisk::probe`. Names follow blkid
//! (`vfat`, `exfat`, `ntfs`, `ext4`, `crypto_LUKS`, …:
//! `AnyFs::blkid_name`).

use std::io;

use mkfs_alloc_ondisk::exfat::{volume_label, BootSector};
use mkfs_alloc_ondisk::zerocopy::FromBytes;
use mkfs_alloc_ondisk::{AnyFs, FsKind, PROBE_LEN};

/// Reads are done in aligned units of this many bytes, which every logical
/// block size of 512..=4096 divides.
pub(crate) const PROBE_UNIT: u64 = 4096;

/// Reads `buf.len()` bytes at `offset`; both are multiples of
/// [`PROBE_UNIT`].
pub(crate) trait ProbeRead {
    /// Reads exactly `buf.len()` bytes at byte `offset`.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

impl<F: FnMut(u64, &mut [u8]) -> io::Result<()>> ProbeRead for F {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self(offset, buf)
    }
}

/// Root-directory bytes read for the exFAT label (its entries come first).
const EXFAT_ROOT_PROBE: u64 = 2 * PROBE_UNIT;

/// File system type and label of the `size` bytes at `base` (a partition's
/// start, or 0). Read errors give `(None, None)`: probing is best effort.
pub(crate) fn probe(
    r: &mut dyn ProbeRead,
    base: u64,
    size: u64,
) -> (Option<String>, Option<String>) {
    if base % PROBE_UNIT != 0 {
        return (None, None);
    }
    let start = read_units(r, base, 0, (PROBE_LEN as u64).min(size));
    let Some(found) = mkfs_alloc_ondisk::probe(&start) else {
        return (None, None);
    };
    let label = match found.kind {
        AnyFs::Ours(FsKind::Exfat) => exfat_label(r, base, size, &start),
        _ => found.label,
    };
    (
        Some(found.kind.blkid_name().to_string()),
        label.and_then(|l| super::clean(&l)),
    )
}

/// The whole [`PROBE_UNIT`]s of `base + offset .. base + offset + len`
/// that read, up to the first that does not: one read of them all (each
/// read of the probe goes to the device, past its page cache, so a unit a
/// call costs a device round trip each), and unit by unit only when that
/// read fails.
fn read_units(r: &mut dyn ProbeRead, base: u64, offset: u64, len: u64) -> Vec<u8> {
    let whole = len / PROBE_UNIT * PROBE_UNIT;
    let mut out = vec![0u8; usize::try_from(whole).unwrap_or(0)];
    if !out.is_empty() && r.read_exact_at(base + offset, &mut out).is_ok() {
        return out;
    }
    out.clear();
    let mut at = offset;
    while at + PROBE_UNIT <= offset + len {
        let mut unit = vec![0u8; PROBE_UNIT as usize];
        if r.read_exact_at(base + at, &mut unit).is_err() {
            break;
        }
        out.extend_from_slice(&unit);
        at += PROBE_UNIT;
    }
    out
}

/// The exFAT label from the root directory's first entries.
fn exfat_label(r: &mut dyn ProbeRead, base: u64, size: u64, boot: &[u8]) -> Option<String> {
    let (bs, _) = BootSector::read_from_prefix(boot).ok()?;
    let root = bs.root_directory_offset()?;
    let aligned = root - root % PROBE_UNIT;
    let len = EXFAT_ROOT_PROBE.min(size.checked_sub(aligned)?);
    let dir = read_units(r, base, aligned, len);
    volume_label(dir.get(usize::try_from(root - aligned).ok()?..)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn probe_buf(img: &[u8], base: u64) -> (Option<String>, Option<String>) {
        let mut r = |off: u64, buf: &mut [u8]| {
            let off = off as usize;
            buf.copy_from_slice(&img[off..off + buf.len()]);
            Ok(())
        };
        probe(&mut r, base, img.len() as u64 - base)
    }

    #[test]
    fn exfat_with_label() {
        let mut img = vec![0u8; 64 * 1024];
        img[3..11].copy_from_slice(b"EXFAT   ");
        img[88..92].copy_from_slice(&16u32.to_le_bytes()); // heap at sector 16
        img[96..100].copy_from_slice(&4u32.to_le_bytes()); // root = cluster 4
        img[108] = 9; // 512-byte sectors
        img[109] = 3; // 4 KiB clusters
        let root = 16 * 512 + 2 * 4096;
        img[root] = 0x81; // allocation bitmap entry first
        let e = root + 32;
        img[e] = 0x83;
        img[e + 1] = 4;
        for (i, c) in "DATA".encode_utf16().enumerate() {
            img[e + 2 + 2 * i..e + 4 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        assert_eq!(
            probe_buf(&img, 0),
            (Some("exfat".into()), Some("DATA".into()))
        );
    }

    #[test]
    fn fat32_and_partition_base() {
        let mut img = vec![0u8; 8192 + 4096];
        let s = 8192;
        img[s + 510] = 0x55;
        img[s + 511] = 0xAA;
        img[s + 82..s + 90].copy_from_slice(b"FAT32   ");
        // A BPB that holds together (the one prober's rule, not just the
        // informational type string).
        img[s..s + 3].copy_from_slice(&[0xEB, 0x58, 0x90]);
        img[s + 11..s + 13].copy_from_slice(&512u16.to_le_bytes());
        img[s + 13] = 8;
        img[s + 14] = 32;
        img[s + 16] = 2;
        img[s + 21] = 0xF8;
        img[s + 32..s + 36].copy_from_slice(&2_000_000u32.to_le_bytes());
        img[s + 36..s + 40].copy_from_slice(&2_000u32.to_le_bytes());
        img[s + 71..s + 82].copy_from_slice(b"MYSTICK    ");
        assert_eq!(
            probe_buf(&img, 8192),
            (Some("vfat".into()), Some("MYSTICK".into()))
        );
        img[s + 71..s + 82].copy_from_slice(b"NO NAME    ");
        assert_eq!(probe_buf(&img, 8192), (Some("vfat".into()), None));
        // Nothing at 0: no signature.
        img.truncate(8192);
        assert_eq!(probe_buf(&img, 0), (None, None));
    }

    #[test]
    fn one_read_per_range_and_unit_by_unit_past_a_failure() {
        let mut img = vec![0u8; 64 * 1024];
        img[3..11].copy_from_slice(b"EXFAT   ");
        img[88..92].copy_from_slice(&16u32.to_le_bytes());
        img[96..100].copy_from_slice(&4u32.to_le_bytes());
        img[108] = 9;
        img[109] = 3;
        let mut calls = 0;
        let mut r = |off: u64, buf: &mut [u8]| {
            calls += 1;
            let off = off as usize;
            buf.copy_from_slice(&img[off..off + buf.len()]);
            Ok(())
        };
        assert_eq!(probe(&mut r, 0, 64 * 1024).0, Some("exfat".into()));
        // The start, then the root directory's first units.
        assert_eq!(calls, 2);
        // A unit that does not read: the units before it still do.
        let mut r = |off: u64, buf: &mut [u8]| {
            if off + buf.len() as u64 > 2 * PROBE_UNIT {
                return Err(io::Error::other("unreadable"));
            }
            buf.fill(7);
            Ok(())
        };
        let got = read_units(&mut r, 0, 0, 4 * PROBE_UNIT);
        assert_eq!(got, vec![7u8; 2 * PROBE_UNIT as usize]);
    }

    #[test]
    fn ext4_and_short_devices() {
        let mut img = vec![0u8; 4096];
        img[1024 + 0x38] = 0x53;
        img[1024 + 0x39] = 0xEF;
        img[1024 + 0x60] = 0x40;
        img[1024 + 0x78..1024 + 0x7C].copy_from_slice(b"root");
        assert_eq!(
            probe_buf(&img, 0),
            (Some("ext4".into()), Some("root".into()))
        );
        assert_eq!(probe_buf(&[0u8; 1024], 0), (None, None));
    }
}
