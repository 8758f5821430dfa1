//! File system recognition: reads the first bytes of a volume and hands them
//! to the one signature prober, [`mkfs_alloc_ondisk::probe`].

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::{Probe, PROBE_LEN};

use crate::error::InspectError;
use crate::io::Reader;

/// Recognises the file system at `start`, reading at most
/// [`PROBE_LEN`] bytes inside `start..start + size`.
pub(crate) fn probe<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    start: u64,
    size: u64,
) -> Result<Option<Probe>, InspectError> {
    let len = usize::try_from(size.min(PROBE_LEN as u64)).unwrap_or(PROBE_LEN);
    Ok(r.read_opt(start, len)?
        .and_then(|b| mkfs_alloc_ondisk::probe(&b)))
}

/// True if `sector` (at least 512 bytes) is the boot sector of a file system
/// that lives at LBA 0 (exFAT, NTFS, FAT with a plausible BPB): such a sector
/// has `55 AA` like an MBR but is not one.
pub(crate) fn is_fs_boot_sector(sector: &[u8]) -> bool {
    mkfs_alloc_ondisk::probe::boot_sector_kind(sector).is_some()
}

/// A space- or NUL-padded ASCII label (FAT: OEM code page bytes above 0x7F
/// show as `?`), `None` when empty.
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
