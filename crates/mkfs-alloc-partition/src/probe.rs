//! [`probe_signatures`]: find partition tables and file-system signatures,
//! old or new, the way `wipefs -n` lists them.

use std::collections::BTreeSet;

use mkfs_alloc_blockio::BlockIo;
#[cfg(feature = "serde")]
use serde::Serialize;
use zerocopy::FromBytes;

use crate::guid::Guid;
use crate::PartitionError;
use mkfs_alloc_ondisk::gpt::{GptEntry, GptHeader, GPT_SIGNATURE};
use mkfs_alloc_ondisk::mbr::{Mbr, MBR_TYPE_PROTECTIVE};
use mkfs_alloc_ondisk::{FsKind, BOOT_SIGNATURE};

/// Bytes read at the start and at the end of the medium.
const WINDOW: u64 = 128 << 10;

/// Bytes read at the start of a volume: enough for the btrfs superblock at 64 KiB.
const VOLUME_PROBE: u64 = 72 << 10;

/// At most this many partition starts are probed for file systems.
const MAX_PARTITIONS: usize = 16;

/// Sector sizes a table may have been written with, whatever the device says.
const SECTOR_SIZES: [u64; 2] = [512, 4096];

/// A signature found on the medium.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Signature {
    /// Byte offset of the structure (a boot sector, a GPT header, the start
    /// of a volume) on the medium.
    pub offset: u64,
    /// What it is: `"mbr"`, `"pmbr"` (GPT protective MBR), `"gpt"`,
    /// `"gpt-backup"`, or a file system's `FsKind::id` (`"exfat"`,
    /// `"fat32"`, `"ext4"`, …) from the one prober, `mkfs_alloc_ondisk::probe`.
    pub kind: String,
    /// Human-readable details (identifiers, sizes, checksum state).
    pub detail: String,
}

/// Lists the signatures on `dev`, like `wipefs -n` (which only reads).
///
/// Looks at: the first 128 KiB (MBR or protective MBR, primary GPT headers for
/// 512- and 4096-byte sectors, a file system at byte 0); the last 128 KiB (any
/// backup GPT header, e.g. left by a larger or differently-sectored layout)
/// and the backup a primary header points to; the start of every partition
/// the tables list (file systems). The result is sorted by offset.
///
/// # Errors
///
/// [`PartitionError::Io`] if a read fails.
pub fn probe_signatures<D: BlockIo>(dev: &mut D) -> Result<Vec<Signature>, PartitionError> {
    let bs = u64::from(dev.block_size());
    let total = dev.num_blocks().saturating_mul(bs);
    let mut found = BTreeSet::new();
    if total == 0 {
        return Ok(Vec::new());
    }
    let head = read_at(dev, 0, total.min(WINDOW))?;
    // (byte offset, where it came from) of partitions to look into.
    let mut starts: Vec<(u64, String)> = Vec::new();

    let fs_at_zero = probe_volume(&head, 0, "", &mut found);
    if !fs_at_zero {
        probe_mbr(&head, bs, &mut found, &mut starts);
    }

    // Primary GPT headers (LBA 1) for each sector size.
    let mut backups = Vec::new();
    for ss in SECTOR_SIZES {
        let Some(sector) = slice(&head, ss, ss) else {
            continue;
        };
        let Some(h) = gpt_header(sector) else {
            continue;
        };
        let crc_ok = h.crc_ok(sector);
        found.insert(Signature {
            offset: ss,
            kind: "gpt".into(),
            detail: gpt_detail(&h, ss, crc_ok),
        });
        if crc_ok {
            backups.push(h.alternate_lba.get().saturating_mul(ss));
            gpt_partitions(dev, &h, ss, total, &mut starts)?;
        }
    }

    // Backup GPT headers: every 512-byte boundary of the last 128 KiB, and where
    // the primary headers say.
    let tail_start = total.saturating_sub(WINDOW) / 512 * 512;
    let tail = read_at(dev, tail_start, total - tail_start)?;
    let mut at = 0u64;
    while let Some(sector) = slice(&tail, at, 512) {
        let offset = tail_start + at;
        if sector.starts_with(&GPT_SIGNATURE) && offset > 4096 {
            let rest = &tail[to_usize(at)..];
            probe_backup(rest, offset, &mut found);
        }
        at += 512;
    }
    for offset in backups {
        if offset > 4096 && offset < tail_start && offset < total {
            let sector = read_at(dev, offset, 4096.min(total - offset))?;
            probe_backup(&sector, offset, &mut found);
        }
    }

    // File systems at the partition starts.
    starts.sort();
    starts.dedup_by_key(|(offset, _)| *offset);
    for (offset, origin) in starts.into_iter().take(MAX_PARTITIONS) {
        if offset == 0 || offset >= total {
            continue;
        }
        let volume = read_at(dev, offset, VOLUME_PROBE.min(total - offset))?;
        probe_volume(&volume, offset, &origin, &mut found);
    }
    Ok(found.into_iter().collect())
}

/// Reports a backup GPT header at the start of `bytes` (read from `offset`).
fn probe_backup(bytes: &[u8], offset: u64, found: &mut BTreeSet<Signature>) {
    let Some(h) = bytes.get(..512).and_then(gpt_header) else {
        return;
    };
    // The sector size is the one that puts the header at its own LBA.
    let ss = SECTOR_SIZES
        .into_iter()
        .find(|&ss| h.my_lba.get().checked_mul(ss) == Some(offset))
        .unwrap_or(512);
    let sector = slice(bytes, 0, ss).unwrap_or(bytes);
    found.insert(Signature {
        offset,
        kind: "gpt-backup".into(),
        detail: gpt_detail(&h, ss, h.crc_ok(sector)),
    });
}

pub(crate) fn gpt_header(sector: &[u8]) -> Option<GptHeader> {
    let h = GptHeader::read_from_prefix(sector).ok()?.0;
    (h.signature == GPT_SIGNATURE).then_some(h)
}

fn gpt_detail(h: &GptHeader, ss: u64, crc_ok: bool) -> String {
    format!(
        "disk GUID {}, header at LBA {} of {ss}-byte sectors, other header at LBA {}, \
         usable LBAs {}..={}, header CRC {}",
        Guid::from_mixed_endian(h.disk_guid),
        h.my_lba.get(),
        h.alternate_lba.get(),
        h.first_usable_lba.get(),
        h.last_usable_lba.get(),
        if crc_ok { "ok" } else { "bad" },
    )
}

/// Adds the used entries of the GPT `h` (sector size `ss`) to `starts`.
fn gpt_partitions<D: BlockIo>(
    dev: &mut D,
    h: &GptHeader,
    ss: u64,
    total: u64,
    starts: &mut Vec<(u64, String)>,
) -> Result<(), PartitionError> {
    let entry_size = u64::from(h.size_of_partition_entry.get());
    let count = u64::from(h.number_of_partition_entries.get()).min(256);
    let Some(offset) = h.partition_entry_lba.get().checked_mul(ss) else {
        return Ok(());
    };
    if !(128..=4096).contains(&entry_size) || offset >= total {
        return Ok(());
    }
    let len = (count * entry_size).min(total - offset);
    let bytes = read_at(dev, offset, len)?;
    for (i, chunk) in bytes.chunks_exact(to_usize(entry_size)).enumerate() {
        let Ok((e, _)) = GptEntry::read_from_prefix(chunk) else {
            continue;
        };
        if e.partition_type_guid == [0; 16] {
            continue;
        }
        if let Some(start) = e.starting_lba.get().checked_mul(ss) {
            starts.push((start, format!("GPT partition {} {:?}", i + 1, e.name())));
        }
    }
    Ok(())
}

/// Reports an MBR or protective MBR in `head` (LBA 0 on), and adds the
/// partitions it lists to `starts`.
fn probe_mbr(
    head: &[u8],
    bs: u64,
    found: &mut BTreeSet<Signature>,
    starts: &mut Vec<(u64, String)>,
) {
    let Ok((mbr, _)) = Mbr::read_from_prefix(head) else {
        return;
    };
    if mbr.signature != BOOT_SIGNATURE
        || mbr
            .partitions
            .iter()
            .any(|p| p.boot_indicator != 0 && p.boot_indicator != 0x80)
    {
        return;
    }
    let mut parts = Vec::new();
    let mut protective = false;
    for (i, p) in mbr.partitions.iter().enumerate() {
        if p.os_type == 0 {
            continue;
        }
        let (lba, len) = (p.starting_lba.get(), p.size_in_lba.get());
        parts.push(format!(
            "partition {}: type 0x{:02X}, LBA {lba} + {len} sectors",
            i + 1,
            p.os_type
        ));
        protective |= p.os_type == MBR_TYPE_PROTECTIVE;
        // Extended partitions hold EBRs, not volumes.
        if !matches!(p.os_type, MBR_TYPE_PROTECTIVE | 0x05 | 0x0F | 0x85) {
            starts.push((
                u64::from(lba).saturating_mul(bs),
                format!("MBR partition {}", i + 1),
            ));
        }
    }
    let (kind, detail) = if protective {
        (
            "pmbr",
            format!("protective MBR for GPT; {}", parts.join("; ")),
        )
    } else {
        let sig = mbr.disk_signature.get();
        let list = if parts.is_empty() {
            "no partitions".to_string()
        } else {
            parts.join("; ")
        };
        ("mbr", format!("disk signature 0x{sig:08X}; {list}"))
    };
    found.insert(Signature {
        offset: 0,
        kind: kind.into(),
        detail,
    });
}

/// Looks for a file system at the start of `b` (read from `offset`) with
/// the one signature prober; `origin` names the partition, if any. Returns
/// true if `b` starts with a file-system boot sector (so it is not an MBR).
fn probe_volume(b: &[u8], offset: u64, origin: &str, found: &mut BTreeSet<Signature>) -> bool {
    let Some(p) = mkfs_alloc_ondisk::probe(b) else {
        return false;
    };
    let mut detail = describe(p.kind, b);
    if !origin.is_empty() {
        detail.push_str(&format!(" (in {origin})"));
    }
    found.insert(Signature {
        offset,
        kind: p.kind.id().into(),
        detail,
    });
    p.kind.has_boot_sector()
}

/// Human-readable details of the file system `kind` found at the start of
/// `b`.
fn describe(kind: FsKind, b: &[u8]) -> String {
    let u16_at = |o: usize| {
        b.get(o..o + 2)
            .map_or(0, |x| u64::from(u16::from_le_bytes([x[0], x[1]])))
    };
    let u32_at = |o: usize| {
        b.get(o..o + 4).map_or(0, |x| {
            u64::from(u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        })
    };
    match kind {
        FsKind::Exfat => format!(
            "exFAT boot sector, bytes per sector shift {}",
            b.get(108).copied().unwrap_or(0)
        ),
        FsKind::Fat12 | FsKind::Fat16 | FsKind::Fat32 => {
            let sectors = match u16_at(19) {
                0 => u32_at(32),
                n => n,
            };
            let label_at = if kind == FsKind::Fat32 { 71 } else { 43 };
            let label = b
                .get(label_at..label_at + 11)
                .map(|l| String::from_utf8_lossy(l).trim_end().to_string())
                .unwrap_or_default();
            format!(
                "FAT boot sector, {} bytes per sector, {sectors} sectors, label {label:?}",
                u16_at(11)
            )
        }
        FsKind::Ntfs => "NTFS boot sector".into(),
        FsKind::Xfs => "XFS superblock".into(),
        FsKind::Luks => "LUKS header".into(),
        FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
            format!("{} superblock, magic 0xEF53 at +1080", kind.display_name())
        }
        FsKind::Swap => "Linux swap signature at +4086".into(),
        FsKind::Iso9660 => "ISO 9660 volume descriptor at +32768".into(),
        FsKind::Btrfs => "btrfs superblock at +65536".into(),
        other => format!("{} superblock", other.display_name()),
    }
}

/// The `len` bytes of `b` at `off`, if all there.
fn slice(b: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    b.get(start..end)
}

/// Reads `len` bytes at byte `offset`, which need not be block-aligned.
pub(crate) fn read_at<D: BlockIo>(
    dev: &mut D,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, PartitionError> {
    let bs = u64::from(dev.block_size());
    let lba = offset / bs;
    let head = offset % bs;
    let span = (head + len).next_multiple_of(bs);
    let mut buf = vec![0u8; to_usize(span)];
    dev.read_blocks(lba, &mut buf)?;
    buf.drain(..to_usize(head));
    buf.truncate(to_usize(len));
    Ok(buf)
}

/// `u64` to `usize` for buffer sizes and indices, all bounded by about
/// 1 MiB here (saturates, so an impossible overflow fails the allocation).
fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}
