//! [`probe_signatures`]: find partition tables and file-system signatures,
//! old or new, the way `wipefs -n` lists them.

use std::collections::BTreeSet;

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_ondisk::zerocopy::FromBytes;
#[cfg(feature = "serde")]
use serde::Serialize;

use crate::guid::Guid;
use crate::PartitionError;
use mkfs_alloc_ondisk::fat::{Bpb, Fat16BootSector, Fat32BootSector};
use mkfs_alloc_ondisk::gpt::{GptHeader, GPT_SIGNATURE};
use mkfs_alloc_ondisk::probe::table::{self, TABLE_SECTOR_SIZES};
use mkfs_alloc_ondisk::{exfat, AnyFs, FsKind, PROBE_LEN};

/// Bytes read at the start and at the end of the medium.
const WINDOW: u64 = 128 << 10;

/// At most this many partition starts are probed for file systems.
const MAX_PARTITIONS: usize = 16;

/// What a [`Signature`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureKind {
    /// A DOS/MBR partition table.
    Mbr,
    /// A GPT's protective MBR.
    ProtectiveMbr,
    /// A primary GPT header.
    Gpt,
    /// A backup GPT header.
    GptBackup,
    /// A file system, from the one prober (`mkfs_alloc_ondisk::probe`).
    Fs(AnyFs),
}

impl SignatureKind {
    /// Stable identifier, as in JSON: `"mbr"`, `"pmbr"`, `"gpt"`,
    /// `"gpt-backup"`, or the file system's [`AnyFs::id`] (`"exfat"`,
    /// `"fat32"`, `"ext4"`, …).
    pub fn id(self) -> &'static str {
        match self {
            SignatureKind::Mbr => "mbr",
            SignatureKind::ProtectiveMbr => "pmbr",
            SignatureKind::Gpt => "gpt",
            SignatureKind::GptBackup => "gpt-backup",
            SignatureKind::Fs(fs) => fs.id(),
        }
    }

    /// The file system, for [`SignatureKind::Fs`].
    pub fn fs(self) -> Option<AnyFs> {
        match self {
            SignatureKind::Fs(fs) => Some(fs),
            _ => None,
        }
    }
}

/// Ordered by [`SignatureKind::id`].
impl Ord for SignatureKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id().cmp(other.id())
    }
}

impl PartialOrd for SignatureKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Serialized as its [`SignatureKind::id`].
#[cfg(feature = "serde")]
impl Serialize for SignatureKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl std::fmt::Display for SignatureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A signature found on the medium.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Signature {
    /// Byte offset of the structure (a boot sector, a GPT header, the start
    /// of a volume) on the medium.
    pub offset: u64,
    /// What it is.
    pub kind: SignatureKind,
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
    for ss in TABLE_SECTOR_SIZES {
        let Some(sector) = slice(&head, ss, ss) else {
            continue;
        };
        let Some(h) = table::gpt_header(sector) else {
            continue;
        };
        let crc_ok = h.crc_ok(sector);
        found.insert(Signature {
            offset: ss,
            kind: SignatureKind::Gpt,
            detail: gpt_detail(h, ss, crc_ok),
        });
        if crc_ok {
            backups.push(h.alternate_lba.get().saturating_mul(ss));
            gpt_partitions(dev, h, ss, total, &mut starts)?;
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
        let volume = read_at(dev, offset, (PROBE_LEN as u64).min(total - offset))?;
        probe_volume(&volume, offset, &origin, &mut found);
    }
    Ok(found.into_iter().collect())
}

/// Reports a backup GPT header at the start of `bytes` (read from `offset`).
fn probe_backup(bytes: &[u8], offset: u64, found: &mut BTreeSet<Signature>) {
    let Some(h) = table::gpt_header(bytes) else {
        return;
    };
    // The sector size is the one that puts the header at its own LBA.
    let ss = TABLE_SECTOR_SIZES
        .into_iter()
        .find(|&ss| h.my_lba.get().checked_mul(ss) == Some(offset))
        .unwrap_or(512);
    let sector = slice(bytes, 0, ss).unwrap_or(bytes);
    found.insert(Signature {
        offset,
        kind: SignatureKind::GptBackup,
        detail: gpt_detail(h, ss, h.crc_ok(sector)),
    });
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
    let Some((entry_size, count)) = table::gpt_array(h) else {
        return Ok(());
    };
    let Some(offset) = h.partition_entry_lba.get().checked_mul(ss) else {
        return Ok(());
    };
    if offset >= total {
        return Ok(());
    }
    let len = (count * entry_size).min(total - offset);
    let bytes = read_at(dev, offset, len)?;
    for (slot, e) in table::gpt_used_entries(&bytes, entry_size) {
        if let Some(start) = e.starting_lba.get().checked_mul(ss) {
            starts.push((start, format!("GPT partition {slot} {:?}", e.name())));
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
    let Some(mbr) = table::mbr(head) else {
        return;
    };
    let mut parts = Vec::new();
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
        if table::holds_volume(p) {
            starts.push((
                u64::from(lba).saturating_mul(bs),
                format!("MBR partition {}", i + 1),
            ));
        }
    }
    let (kind, detail) = if table::is_protective(mbr) {
        (
            SignatureKind::ProtectiveMbr,
            format!("protective MBR for GPT; {}", parts.join("; ")),
        )
    } else {
        let sig = mbr.disk_signature.get();
        let list = if parts.is_empty() {
            "no partitions".to_string()
        } else {
            parts.join("; ")
        };
        (
            SignatureKind::Mbr,
            format!("disk signature 0x{sig:08X}; {list}"),
        )
    };
    found.insert(Signature {
        offset: 0,
        kind,
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
        kind: SignatureKind::Fs(p.kind),
        detail,
    });
    p.kind.has_boot_sector()
}

/// Human-readable details of the file system `kind` found at the start of
/// `b`.
fn describe(kind: AnyFs, b: &[u8]) -> String {
    match kind {
        AnyFs::Ours(FsKind::Exfat) => format!(
            "exFAT boot sector, bytes per sector shift {}",
            exfat::BootSector::ref_from_prefix(b).map_or(0, |(bs, _)| bs.bytes_per_sector_shift)
        ),
        AnyFs::Ours(fat) => {
            let Ok((bpb, _)) = Bpb::ref_from_prefix(b) else {
                return "FAT boot sector".into();
            };
            let sectors = match bpb.tot_sec16.get() {
                0 => bpb.tot_sec32.get(),
                n => u32::from(n),
            };
            let label: Option<[u8; 11]> = if fat == FsKind::Fat32 {
                Fat32BootSector::ref_from_prefix(b)
                    .ok()
                    .map(|(s, _)| s.ebpb.vol_lab)
            } else {
                Fat16BootSector::ref_from_prefix(b)
                    .ok()
                    .map(|(s, _)| s.ebpb.vol_lab)
            };
            let label = label
                .map(|l| String::from_utf8_lossy(&l).trim_end().to_string())
                .unwrap_or_default();
            format!(
                "FAT boot sector, {} bytes per sector, {sectors} sectors, label {label:?}",
                bpb.byts_per_sec.get()
            )
        }
        AnyFs::Ntfs => "NTFS boot sector".into(),
        AnyFs::Xfs => "XFS superblock".into(),
        AnyFs::Luks => "LUKS header".into(),
        AnyFs::Ext2 | AnyFs::Ext3 | AnyFs::Ext4 => {
            format!("{} superblock, magic 0xEF53 at +1080", kind.display_name())
        }
        AnyFs::Swap => "Linux swap signature at +4086".into(),
        AnyFs::Iso9660 => "ISO 9660 volume descriptor at +32768".into(),
        AnyFs::Btrfs => "btrfs superblock at +65536".into(),
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
